"""Figures and tables for the notebooks in ``perf/notebooks`` (matplotlib; no computation here
beyond reshaping the results the scripts return)."""

from __future__ import annotations

import math

import numpy as np

#: One colour per engine, the same in every figure.
COLORS = {"dotjson": "#1f77b4", "dotjson (memoized)": "#17becf", "dotjson-guide": "#9467bd",
          "dotjson-compact": "#aec7e8",
          "llguidance": "#ff7f0e", "llguidance.torch": "#8c564b", "xgrammar": "#2ca02c", "xgrammar-strict": "#98df8a",
          "outlines": "#d62728", "dotjson-schema-bounds": "#7f7f7f"}


def _plt():
    import matplotlib.pyplot as plt

    return plt


def _cdf(ax, xs, label):
    xs = np.sort(np.asarray(xs, dtype=float))
    if xs.size == 0:
        return
    ys = np.arange(1, xs.size + 1) / xs.size
    ax.step(xs, ys, where="post", label=f"{label} (n={xs.size:,})", color=COLORS.get(label))


# ------------------------------------------------------------------------------------------
# speed
# ------------------------------------------------------------------------------------------


def latency_samples(results, engines):
    """``{label: {"ttfm": [...], "mask": [...]}}`` in µs from ``bench_maskbench.run_sample``:
    TTFM per compiled schema; every cold mask; dotjson's warm (memoized) masks as their own
    label."""
    out = {}
    for e in engines:
        ttfm, cold, warm = [], [], []
        for r in results:
            x = r["engines"].get(e) or {}
            if x.get("ttfm_us") is not None:
                ttfm.append(x["ttfm_us"])
            for v in x.get("cold", {}).values():
                cold += v.get("times", [])
            for v in x.get("warm", {}).values():
                warm += v.get("times", [])
        out[e] = {"ttfm": ttfm, "mask": cold}
        if e.startswith("dotjson"):
            out[f"{e} (memoized)"] = {"ttfm": [], "mask": warm}
    return out


def plot_latency(results, engines):
    """Two CDFs on log axes: time to first mask per schema, and per-token mask time."""
    plt = _plt()
    s = latency_samples(results, engines)
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    for label, d in s.items():
        _cdf(a, np.asarray(d["ttfm"]) / 1e3, label)
        _cdf(b, d["mask"], label)
    a.set(xscale="log", xlabel="compile + first mask (ms)", ylabel="share of schemas",
          title="Time to first mask, per schema")
    b.set(xscale="log", xlabel="advance + mask (µs)", ylabel="share of tokens",
          title="Mask latency per token (fresh; dotjson also memoized)")
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def plot_throughput(rows):
    """Masking time over a memory copy of the same logits, per vocabulary and batch."""
    plt = _plt()
    vocabs = sorted({r["vocab"] for r in rows})
    fig, axes = plt.subplots(1, len(vocabs), figsize=(4.5 * len(vocabs), 4), squeeze=False)
    for ax, v in zip(axes[0], vocabs):
        rs = [r for r in rows if r["vocab"] == v]
        labels = [f"b{r['batch']}\n{r['frac']:.0%}" for r in rs]
        series = {"dotjson": [r["ours_s"] / r["memcpy_s"] for r in rs]}
        for name in rs[0]["peers"]:
            series[name] = [r["peers"][name] / r["memcpy_s"]
                            if not isinstance(r["peers"][name], str) else math.nan for r in rs]
        w = 0.8 / len(series)
        for i, (name, ys) in enumerate(series.items()):
            ax.bar(np.arange(len(rs)) + i * w, ys, w, label=name,
                   color=COLORS.get(name, COLORS.get(name.split(".")[0])),
                   alpha=1.0 if name == "dotjson" else 0.6)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_xticks(np.arange(len(rs)) + 0.4 - w / 2, labels)
        ax.set(yscale="log", title=f"{v:,} ids", ylabel="time / memcpy of the logits")
        ax.legend(fontsize=7)
    fig.suptitle("Applying a mask to float32 logits (batch, allowed share)")
    fig.tight_layout()
    return fig


def plot_sizes(sweep):
    """TTFM against the size of the schema (or of the forced nesting), one panel per family."""
    plt = _plt()
    fams = list(sweep["settings"]["sizes"])
    fig, axes = plt.subplots(1, len(fams), figsize=(4.2 * len(fams), 3.8), squeeze=False)
    for ax, f in zip(axes[0], fams):
        for e in sweep["settings"]["engines"]:
            rs = [r for r in sweep["rows"] if r["family"] == f and r["engine"] == e]
            xs = [r["size"] for r in rs if "ttfm_s" in r]
            ys = [r["ttfm_s"] * 1e3 for r in rs if "ttfm_s" in r]
            ax.plot(xs, ys, "o-", label=e, color=COLORS.get(e))
            for r in rs:
                if "ttfm_s" not in r:
                    ax.annotate(r.get("status", "?"), (r["size"], 1), fontsize=7,
                                color=COLORS.get(e))
        ns = sweep["settings"]["sizes"][f]
        ax.set(xscale="log", yscale="log", xlabel=f"{f} (N)", ylabel="time to first mask (ms)",
               title=f)
        ax.set_xticks(ns, [f"{n:,}" for n in ns])
        ax.minorticks_off()
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Cost against schema size: flat lines are lazy engines")
    fig.tight_layout()
    return fig


def sizes_table(sweep) -> str:
    """Markdown: TTFM and mean mask time per family, size and engine (and how the forced
    instance ended, when not at EOS)."""
    engines = sweep["settings"]["engines"]
    lines = ["| family | N | " + " | ".join(f"{e} TTFM / mask" for e in engines) + " |",
             "|---|---:|" + "---:|" * len(engines)]
    for f, ns in sweep["settings"]["sizes"].items():
        for n in ns:
            cells = []
            for e in engines:
                r = next((r for r in sweep["rows"]
                          if (r["family"], r["size"], r["engine"]) == (f, n, e)), None)
                if r is None or "ttfm_s" not in r:
                    cells.append(r.get("status", "-") if r else "-")
                    continue
                mm = r.get("mask_mean_s")
                forced = r.get("forced")
                cells.append(f"{r['ttfm_s'] * 1e3:.1f} ms / "
                             + (f"{mm * 1e6:.0f} µs" if mm is not None else "-")
                             + ("" if forced == "ok" else f" ({forced or r.get('status')})"))
            lines.append(f"| {f} | {n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# coverage
# ------------------------------------------------------------------------------------------


def plot_coverage(out):
    """Per category: compiled % and valid-output % for every engine (``engine_coverage.run``).

    A run in several whitespace modes labels an engine's other modes ``ENGINE/MODE``: they share
    the engine's colour, hatched. The title names the engines that let the model end on an
    invalid document."""
    plt = _plt()
    engines = out["settings"]["engines"]
    summ = out["summary"]
    cats = list(summ)
    fig, axes = plt.subplots(2, 1, figsize=(min(16, max(8, 0.1 * len(cats) * len(engines))), 7.5),
                             sharex=True)
    w = 0.8 / len(engines)
    x = np.arange(len(cats))
    for ax, metric, title in ((axes[0], "compiled_pct", "compiled %"),
                              (axes[1], "valid_pct", "valid output % (SmolLM2-135M, greedy)")):
        for i, e in enumerate(engines):
            base, _, mode = e.partition("/")
            ax.bar(x + i * w, [summ[c][e][metric] for c in cats], w, label=e,
                   color=COLORS.get(base, f"C{i % 10}"), hatch="///" if mode else None,
                   edgecolor="white" if mode else None, linewidth=0)
        ax.set(ylim=(0, 105), ylabel="%", title=title)
        ax.grid(True, axis="y", alpha=0.3)
    axes[1].set_xticks(x + 0.4 - w / 2, cats, fontsize=8, rotation=30, ha="right")
    bad = {e: summ["ALL"][e]["invalid"] for e in engines}
    worse = ", ".join(f"{e} {n}" for e, n in bad.items() if n)
    fig.suptitle("MaskBench end to end; invalid outputs: "
                 + (f"{worse}; every other configuration 0" if worse else "0 for every engine"))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.07 if len(engines) > 5 else 0.04, 1, 1))
    fig.legend(handles, labels, fontsize=8, ncol=min(len(engines), 5), loc="lower center",
               framealpha=0.9)
    return fig


def plot_masklevel(out):
    """Per engine, over all categories: shares of valid instances accepted and invalid rejected.

    A run without the mask-level check (``--no-masklevel``) has nothing to plot: a one-line
    note is printed instead and ``None`` returned."""
    engines = out["settings"]["engines"]
    a = out["summary"]["ALL"]
    if not out["settings"].get("masklevel", True):
        print("No mask-level data: this run skipped the mask-level check (--no-masklevel).")
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = np.arange(len(engines))
    nv, ni = a[engines[0]]["n_valid"], a[engines[0]]["n_invalid"]
    va = [100 * a[e]["valid_accepted"] / max(nv, 1) for e in engines]
    ir = [100 * a[e]["invalid_rejected"] / max(ni, 1) for e in engines]
    ax.bar(x - 0.2, va, 0.4, label=f"valid accepted (of {nv})", color="#4c72b0")
    ax.bar(x + 0.2, ir, 0.4, label=f"invalid rejected (of {ni})", color="#dd8452")
    ax.set_xticks(x, engines)
    ax.set(ylim=(0, 105), ylabel="%", title="Mask level: MaskBench test instances, teacher-forced")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_suite(suite):
    """Share of JSON-Schema-Test-Suite cases passed, per keyword file and engine (horizontal
    bars, one row per file)."""
    plt = _plt()
    engines = suite["settings"]["engines"]
    files = list(suite["files"])
    fig, ax = plt.subplots(figsize=(8, max(3.0, 0.32 * len(files) + 1.2)))
    h = 0.8 / len(engines)
    y = np.arange(len(files))
    for i, e in enumerate(engines):
        xs = []
        for f in files:
            c = suite["files"][f]["counts"][e]
            xs.append(100 * c["pass"] / max(sum(c.values()), 1))
        ax.barh(y + i * h, xs, h, label=e, color=COLORS.get(e))
    ax.set_yticks(y + 0.4 - h / 2, [f.removesuffix(".json") for f in files], fontsize=7)
    ax.invert_yaxis()
    ax.set(xlim=(0, 100), xlabel="% of cases passed")
    ax.set_title("JSON-Schema-Test-Suite, draft 2020-12", pad=28)  # the legend sits above the axes
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, ncol=len(engines), loc="lower center", bbox_to_anchor=(0.5, 1.02))
    fig.tight_layout()
    return fig
