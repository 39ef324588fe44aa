"""Finite ``patternProperties`` patterns as explicit keys: many patterns without 2**k key classes.

An object's extra keys are split by *which* ``patternProperties`` patterns they match (a key
matching several must satisfy every matching schema), which is ``2**k`` classes for ``k``
patterns. Real schemas with many patterns mostly use anchored, finite ones
(``^name:(en|nl|pt)$``, ``^SHA-256$``). A finite pattern's strings can be listed: for each, the
translator knows exactly which patterns it matches and builds it as one fixed key; the classes
then only range over the infinite patterns, and every listed string is excluded from them.
This stays exact; it only changes how the key language is cut up.
"""

from __future__ import annotations

from dotjson import ir

__all__ = ["finite_strings", "split_patterns", "fixed_key_members", "same_pattern_schemas"]

#: Most strings listed for one pattern.
MAX_STRINGS = 256
#: Most strings listed for all the patterns of one object together.
MAX_TOTAL_STRINGS = 4096


def finite_strings(node: ir.Node, limit: int = MAX_STRINGS):
    """Every string of a ref-free IR language, or ``None`` if it is infinite or has over ``limit``."""
    memo: dict = {}

    def go(n):
        key = id(n)
        if key in memo:
            return memo[key][1]
        t = type(n)
        if t is ir.Lit:
            out = {n.text}
        elif t is ir.Chars:
            size = sum(hi - lo + 1 for lo, hi in n.ranges)
            out = None if size > limit else {chr(c) for lo, hi in n.ranges for c in range(lo, hi + 1)}
        elif t is ir.Seq:
            out = {""}
            for x in n.items:
                sub = go(x)
                if sub is None:
                    out = None
                    break
                out = {a + b for a in out for b in sub}
                if len(out) > limit:
                    out = None
                    break
        elif t is ir.Alt:
            out = set()
            for x in n.items:
                sub = go(x)
                if sub is None or len(out | sub) > limit:
                    out = None
                    break
                out |= sub
        elif t is ir.Repeat:
            sub = go(n.item)
            if n.max is None and sub and sub != {""}:
                out = None
            elif sub is None:
                out = None
            else:
                hi = 0 if n.max is None else n.max
                acc, cur = ({""} if n.min == 0 else set()), {""}
                out = acc
                for k in range(1, hi + 1):
                    cur = {a + b for a in cur for b in sub}
                    if len(cur) > limit:
                        out = None
                        break
                    if k >= n.min:
                        acc = acc | cur
                        if len(acc) > limit:
                            out = None
                            break
                        out = acc
        else:  # And, Diff, Ref: not listed
            out = None
        memo[key] = (n, out)
        return out

    # memo values are (node, result): the node is kept so that its id cannot be reused
    try:
        return go(node)
    finally:
        go = None  # (it refers to itself through its closure: a reference cycle left to the collector)


def split_patterns(patterns, regex_of, max_classes: int):
    """Split ``patterns`` into finite ones (listed) and the rest, when that makes few classes.

    Parameters
    ----------
    patterns : list of str
    regex_of : callable
        The decoded-string IR language of a pattern (search semantics).
    max_classes : int
        Most key classes (``2**len(infinite)``) allowed.

    Returns
    -------
    (dict of str to list of str, list of str) or None
        ``{finite pattern: its strings}`` and the infinite patterns; ``None`` when the infinite
        ones are still too many, or the listed strings too many in all.
    """
    finite: dict = {}
    rest = []
    total = 0
    for p in patterns:
        strs = finite_strings(regex_of(p))
        if strs is None:
            rest.append(p)
        else:
            finite[p] = sorted(strs)
            total += len(strs)
    if 2 ** len(rest) > max_classes or total > MAX_TOTAL_STRINGS or not finite:
        return None
    return finite, rest


def same_pattern_schemas(o) -> bool:
    """Every pattern has the same schema and no ``additionalProperties`` names patterns (the
    translator's union mode, which needs no split)."""
    groups: dict = {}
    for p, e in o.patterns:
        groups.setdefault(p, []).append(e)
    return len({tuple(v) for v in groups.values()}) == 1 and not any(qs for _, _, qs in o.additional)


def fixed_key_members(tr, fixed: dict, o, declared: set, pn) -> tuple[list, list]:
    """The members of the listed keys, from the key's first character on (their opening quote
    is the extra-member rule's), and their encoded names (to exclude from the classes).

    Each listed key gets the schemas of every pattern it matches, and of every
    ``additionalProperties`` that covers it; declared property names are left to the declared
    members, keys ``propertyNames`` rejects are dropped.
    """
    from dotjson.ir import lit, seq

    keys = sorted({s for strs in fixed.values() for s in strs} - set(declared))
    members, names = [], []
    for s in keys:
        names.append(tr.enc_text(s))
        if pn is not None and not tr.validate(s, pn):
            continue
        es = [e for p, e in o.patterns if tr.key_matches(s, p)]
        es += [e for e, nm, qs in o.additional if s not in nm and not any(tr.key_matches(s, q) for q in qs)]
        ve = tr.and_expr(es)
        if ve == ("false",):
            continue
        members.append(seq(tr.lit_text(s), lit('"'), tr.colon, tr.node_of(ve)))
    return members, names
