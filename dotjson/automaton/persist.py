"""Saving and loading an automaton's store: its arrays as JSON-able values and arrays, and
everything read back validated (ids, shapes, flags, key set tables) before it is used.

Used by :mod:`dotjson.serialization` (an :class:`~dotjson.Index` saved to disk); never
pickles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ir
from . import kernels as K
from .keysets import N_SY, SY_NSHORT, syntax_problem
from .store import K_ALT, K_AND, K_BYTES, K_DIFF, K_EMPTY, K_EPS, K_REF, K_REP, K_SEQ

if TYPE_CHECKING:
    from . import Automaton

INF = K.INF

#: Store arrays saved by :func:`export_state` (the memo tables are rebuilt on demand).
_SAVED = ("ti", "tf", "bw", "pool", "rule_body", "term_of", "trans", "accepting", "plain_inv",
          "row_ready")


def load(cls, grammar: ir.Grammar, meta: dict, arrays: dict):
    """An automaton of class ``cls`` rebuilt from :func:`export_state`'s output (see
    :meth:`dotjson.automaton.Automaton.from_arrays`)."""
    from . import DEAD, MAX_STORE_BYTES, _pow2

    self = cls.__new__(cls)
    self._init(grammar, int(meta["max_states"]), int(meta["fuel"]),
               int(meta.get("max_store_bytes", MAX_STORE_BYTES)))
    names = [str(x) for x in meta["rules"]]
    src = self.rules.src
    if len(set(names)) != len(names) or not all(n in src for n in names):
        raise ValueError("rule names do not match the saved grammar")
    n_rules = len(names)
    nullable = meta["rule_nullable"]
    if len(nullable) != n_rules or not all(isinstance(x, bool) for x in nullable):
        raise ValueError("rule table sizes differ")
    known_null, known_prod = meta["analysis"]
    known_null, known_prod = dict(known_null), dict(known_prod)
    if not all(isinstance(v, bool) for v in (*known_null.values(), *known_prod.values())):
        raise ValueError("analysis answers are not booleans")
    if any(known_prod.get(n) is not True for n in names):
        raise ValueError("a rule with an id is not known to be productive")
    if any(known_null.get(n, v) is not v for n, v in zip(names, nullable)):
        raise ValueError("rule nullability disagrees with the analysis")
    self.rules.restore(names, nullable, known_null, known_prod)
    got = {}
    for name, dt, nd in (("ti", np.int32, 2), ("tf", np.uint8, 1), ("bw", np.uint64, 2),
                         ("pool", np.int32, 1), ("rule_body", np.int32, 1),
                         ("term_of", np.int32, 1), ("trans", np.int32, 2),
                         ("accepting", np.bool_, 1), ("plain_inv", np.int8, 1),
                         ("row_ready", np.bool_, 1)):
        x = np.asarray(arrays[name])
        if x.dtype != dt or x.ndim != nd:
            raise ValueError(f"{name} has the wrong type or shape")
        got[name] = x
    ti, tf, bw, pool = got["ti"], got["tf"], got["bw"], got["pool"]
    n_terms = ti.shape[0]
    if ti.shape[1:] != (4,) or tf.shape != (n_terms,) or bw.shape[1:] != (4,):
        raise ValueError("term store has the wrong shape")
    if got["rule_body"].shape != (n_rules,):
        raise ValueError("rule bodies have the wrong shape")
    contexts = _check_keysets(meta.get("keysets", []), pool, n_terms)
    flags = _check_terms(ti, bw, pool, got["rule_body"], nullable, contexts)
    if not np.array_equal(flags, tf):
        raise ValueError("term flags disagree with the terms")
    n = got["term_of"].shape[0]
    if got["trans"].shape != (n, 256) or any(
        got[k].shape != (n,) for k in ("accepting", "plain_inv", "row_ready")
    ):
        raise ValueError("state tables have the wrong shape")
    terms = got["term_of"]
    if n and (terms.min() < 0 or terms.max() >= n_terms or len(np.unique(terms)) != n):
        raise ValueError("state terms out of range")
    if n and (got["trans"].min() < DEAD or got["trans"].max() >= n):
        raise ValueError("transition table refers to unknown states")
    if n and (got["plain_inv"].min() < -1 or got["plain_inv"].max() > K.INV_NO_RUN):
        raise ValueError("plain-invariance flags out of range")
    if not np.array_equal(got["accepting"], (tf[terms] & K.F_NULL) != 0):
        raise ValueError("accepting flags disagree with the terms")
    # the store, with room to grow
    self._new_store(terms=max(1024, _pow2(n_terms + 1)), states=max(64, _pow2(n + 1)))
    a = self._a
    a["ti"][:n_terms] = ti
    a["tf"][:n_terms] = tf
    a["tm"][:] = -1
    a["tm"][:2, K.M_ROW_OFF] = 0
    a["tm"][:2, K.M_ROW_LEN] = 0
    if bw.shape[0] > a["bw"].shape[0]:
        a["bw"] = np.zeros((_pow2(bw.shape[0] + 1), 4), dtype=np.uint64)
    a["bw"][: bw.shape[0]] = bw
    if pool.shape[0] > a["pool"].shape[0]:
        a["pool"] = np.zeros(_pow2(pool.shape[0] + 1), dtype=np.int32)
    a["pool"][: pool.shape[0]] = pool
    a["ht"][:] = -1
    if K.rehash_terms(a["ti"], a["bw"], a["pool"], a["tm"], n_terms, a["ht"]):
        raise ValueError("the term store holds duplicate terms")
    a["rule_body"][:] = got["rule_body"]
    self.rules.mark_compiled(got["rule_body"] >= 0)
    a["term_of"][:n] = terms
    a["trans"][:n] = got["trans"]
    a["accepting"][:n] = got["accepting"]
    a["plain_inv"][:n] = got["plain_inv"]
    a["row_ready"][:n] = got["row_ready"]
    a["tm"][terms, K.M_STATE] = np.arange(n, dtype=np.int32)
    ctl = a["ctl"]
    ctl[K.C_TERMS] = n_terms
    ctl[K.C_BSETS] = bw.shape[0]
    ctl[K.C_POOL] = pool.shape[0]
    ctl[K.C_STATES] = n
    self._publish()
    self.start_term = int(meta["start_term"])
    if not 0 <= self.start_term < n_terms or a["tm"][self.start_term, K.M_STATE] < 0:
        raise ValueError("start state missing")
    self.start = int(a["tm"][self.start_term, K.M_STATE])
    for C in sorted(contexts):  # (the memo that interns them is not saved)
        self._run(K.keys_register, C)
    return self


def _check_keysets(keysets, pool, n_terms) -> dict:
    """Validate the key set tables of a saved pool (every offset and size in bounds, names
    sorted and distinct, members a permutation, every member settled, a string syntax the
    kernels can read and short escapes that are its own); returns ``{context: name lengths}``
    for :func:`_check_terms`."""
    if not isinstance(keysets, list):
        raise ValueError("key sets are not a list")
    P = pool.shape[0]
    out: dict = {}
    syntaxes: dict = {}  # syntax block offset -> its short escapes' (code points, bytes)

    def region(o, size, what):
        if not (K.N_KT <= o and size >= 0 and o + size <= P):
            raise ValueError(f"key set {what} out of range")
        return pool[o : o + size]

    def syntax(o):
        hit = syntaxes.get(o)
        if hit is None:
            n_short = int(region(o, N_SY, "string syntax")[SY_NSHORT])
            block = region(o, N_SY + 2 * max(n_short, 0), "string syntax")
            problem = syntax_problem(block, ir.MAX_CODEPOINT)
            if problem:
                raise ValueError(f"key set string syntax: {problem}")
            pairs = block[N_SY:].astype(np.int64).reshape(-1, 2)
            hit = syntaxes[o] = (pairs[:, 0], pairs[:, 1])
        return hit

    for item in keysets:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], list)):
            raise ValueError("key set entry malformed")
        T, cs = int(item[0]), [int(c) for c in item[1]]
        if not 0 <= T <= P - K.N_KT:
            raise ValueError("key set table out of range")
        n, o_start, o_blob, o_member, o_alive, o_tail, o_cp, ncp, o_esc, o_raw, full, o_short, o_syn = (
            int(x) for x in pool[T : T + K.N_KT])
        if n < 1 or ncp < 0:
            raise ValueError("key set sizes out of range")
        starts = region(o_start, n + 1, "name offsets").astype(np.int64)
        if starts[0] != 0 or np.any(np.diff(starts) < 0):
            raise ValueError("key set name offsets not ascending")
        blob = region(o_blob, int(starts[-1]), "names")
        if len(blob) and (blob.min() < 0 or blob.max() > 255):
            raise ValueError("key set name bytes out of range")
        raw_names = blob.astype(np.uint8).tobytes()
        names = [raw_names[starts[i] : starts[i + 1]] for i in range(n)]
        if any(names[i] >= names[i + 1] for i in range(n - 1)):
            raise ValueError("key set names not sorted and distinct")
        member = region(o_member, n, "members")
        if not np.array_equal(np.sort(member), np.arange(n)):
            raise ValueError("key set members not a permutation")
        alive = region(o_alive, n, "liveness")
        tail = region(o_tail, n, "tails")
        if not np.all((alive == 0) | (alive == 1)):
            raise ValueError("key set members not settled")
        # (a tail is a term: ε where the name ends the key set's language, never ∅)
        if np.any(alive == 1) and (tail[alive == 1].min() < K.EPS or tail[alive == 1].max() >= n_terms):
            raise ValueError("key set tails out of range")
        cps = region(o_cp, ncp, "characters")
        if ncp and (np.any(np.diff(cps) <= 0) or cps[0] < 0 or cps[-1] > ir.MAX_CODEPOINT):
            raise ValueError("key set characters not sorted")
        esc = region(o_esc, ncp, "escapes")
        raw = region(o_raw, ncp, "raw flags")
        short = region(o_short, ncp, "short escapes")
        # a character's short escape is -1 or the one its syntax gives it
        syn_cps, syn_bytes = syntax(o_syn)
        own = np.full(ncp, -1, dtype=np.int64)
        if len(syn_cps):
            at = np.minimum(np.searchsorted(syn_cps, cps), len(syn_cps) - 1)
            hit = syn_cps[at] == cps
            own[hit] = syn_bytes[at[hit]]
        if ncp and (esc.min() < 0 or esc.max() >= n_terms or not np.all((raw == 0) | (raw == 1))
                    or not np.all((short == -1) | (short == own))):
            raise ValueError("key set escapes out of range")
        lens = np.diff(starts)
        for C in cs + [full]:
            if not 0 <= C <= P - 3 or int(pool[C]) != T or not 0 <= pool[C + 1] <= pool[C + 2] <= n:
                raise ValueError("key set context out of range")
            out[C] = lens
        if tuple(int(x) for x in pool[full : full + 3]) != (T, 0, n):
            raise ValueError("key set's full context malformed")
    return out


def _check_terms(ti, bw, pool, rule_body, rule_nullable, contexts=None) -> np.ndarray:
    """Validate a saved term store (children before parents, ids and ranges in bounds, sorted
    distinct list children; a key set term's context, name and depth, ``contexts`` from
    :func:`_check_keysets`); returns the recomputed flags."""
    n = ti.shape[0]
    if n < 2 or tuple(ti[0]) != (K_EMPTY, 0, 0, 0) or tuple(ti[1]) != (K_EPS, 0, 0, 0):
        raise ValueError("term store does not start with ∅ and ε")
    if len(rule_body) and (rule_body.min() < -1 or rule_body.max() >= n):
        raise ValueError("rule bodies out of range")
    flags = np.zeros(n, dtype=np.uint8)
    flags[1] = K.F_NULL
    n_rules = len(rule_nullable)
    for i in range(2, n):
        k, p, q, r = (int(v) for v in ti[i])

        def child(x):
            if not 0 <= x < i:
                raise ValueError(f"term {i} refers to term {x}")
            return int(flags[x])

        if k == K_BYTES:
            if not 0 <= p < bw.shape[0] or not bw[p].any() or q or r:
                raise ValueError(f"byte set of term {i} out of range")
            f = 0
        elif k == K_SEQ:
            fa, fb = child(p), child(q)
            f = ((fa & fb) & K.F_NULL) | ((fa | fb) & (K.F_BOOL | K.F_REP | K.F_FAR))
        elif k in (K_ALT, K_AND):
            if not (0 <= p and 2 <= q and p + q <= pool.shape[0]) or r:
                raise ValueError(f"children of term {i} out of range")
            kids = pool[p : p + q]
            if np.any(np.diff(kids) <= 0):
                raise ValueError(f"children of term {i} are not sorted")
            fs = [child(int(x)) for x in kids]
            if k == K_ALT:
                f = 0
                for x in fs:
                    f |= x
            else:
                f = K.F_BOOL | (K.F_NULL if all(x & K.F_NULL for x in fs) else 0)
                for x in fs:
                    f |= x & (K.F_REP | K.F_FAR)
        elif k == K_REP:
            fi = child(p)
            if q < 0 or r < INF or (r != INF and r < q):
                raise ValueError("repeat bounds out of range")
            far = K.F_FAR if q > K.FAR_MIN or (r != INF and r > K.FAR_MIN) else 0
            f = K.F_REP | far | (fi & (K.F_BOOL | K.F_FAR)) | (K.F_NULL if (q == 0 or fi & K.F_NULL) else 0)
        elif k == K_REF:
            if not 0 <= p < n_rules or q or r:
                raise ValueError("rule index out of range")
            f = K.F_NULL if rule_nullable[p] else 0
        elif k == K_DIFF:
            fa, fb = child(p), child(q)
            f = K.F_BOOL | (K.F_NULL if (fa & K.F_NULL and not fb & K.F_NULL) else 0)
        elif k == K.K_KEYS:
            lens = (contexts or {}).get(p)
            # just after a backslash: a character starts at r - KD_ESC; after the closing quote of
            # name q: r is KD_END
            end = r >= K.KD_END
            esc = not end and r >= K.KD_ESC
            d = r - (K.KD_END if end else K.KD_ESC if esc else 0)
            if lens is None or not 0 <= q < len(lens) or not 0 <= d <= lens[q] - esc or (end and d):
                raise ValueError(f"key set term {i} out of range")
            f = 0
        else:
            raise ValueError(f"unknown term kind {k}")
        flags[i] = f
    return flags


# ------------------------------------------------------------------------------ persistence


def _keysets_meta(a: Automaton, ti, pool) -> list:
    """``[[table, [context, ...]], ...]``: every key set table, with the contexts its terms
    use (made by the kernels: see ``kernels._k_intern``). The tables are those of this
    automaton's key sets and those its terms use (a loaded store's: saved again, it keeps them)."""
    used = np.unique(ti[ti[:, 0] == K.K_KEYS, 1])
    tables = pool[used] if len(used) else used
    every = sorted(set(a._ktab.values()) | {int(T) for T in tables})
    return [[T, [int(C) for C in used[tables == T]]] for T in every]


def export_state(a: Automaton) -> dict:
    """The automaton's term store and tables, as JSON-able values and arrays."""
    with a.lock:
        a._complete_keys()  # a loaded store has no builder to ask about a member
        st = a._a
        ctl = st["ctl"]
        n_terms, n_b, n_p, n = (int(ctl[i]) for i in (K.C_TERMS, K.C_BSETS, K.C_POOL, K.C_STATES))
        size = {"ti": n_terms, "tf": n_terms, "bw": n_b, "pool": n_p, "term_of": n, "trans": n,
                "accepting": n, "plain_inv": n, "row_ready": n, "rule_body": len(a.rules.names)}
        arrays = {k: st[k][: size[k]].copy() if k in size else st[k].copy() for k in _SAVED}
        return {
            "meta": {
                "rules": list(a.rules.names),
                "rule_nullable": list(a.rules.nullable),
                "analysis": [sorted(d.items()) for d in a.rules.known()],
                "start_term": a.start_term,
                # key set tables in the pool, each with the contexts its terms use (see
                # kernels.K_KEYS)
                "keysets": _keysets_meta(a, arrays["ti"], arrays["pool"]),
                "max_states": a.max_states,
                "fuel": a.fuel,
                "max_store_bytes": a.max_store_bytes,
            },
            "arrays": arrays,
        }


def import_state(grammar: ir.Grammar, meta: dict, arrays: dict) -> "Automaton":
    """Rebuild an automaton saved by :func:`export_state`; validates everything it reads."""
    from . import Automaton

    return Automaton.from_arrays(grammar, meta, arrays)
