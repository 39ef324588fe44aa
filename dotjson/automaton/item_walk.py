"""Walking a text through the items of rule families that step their own items.

A rule family over the bytes of an item (``uniqueItems``: :class:`dotjson.jsonschema.unique.UniqueValues`)
names a state per item prefix, whose body names a successor per byte: walked byte by byte, a
text pays a body of ~100 rules per byte of such an item. :func:`walk_items` walks with the
kernel and hands an item the walk has entered to its family (``token_step``), which steps its
bytes without those bodies. Generic: a family is anything with ``owns`` and ``token_step``.
"""

from __future__ import annotations

import numpy as np

from . import kernels as _K
from .store import K_REF as _K_REF


def _seq_head(ti, t: int) -> tuple[int, int]:
    """``(first item, rest)`` of term ``t`` (``rest`` is EPS for a term that is no sequence)."""
    return (int(ti[t, 1]), int(ti[t, 2])) if ti[t, 0] == _K.K_SEQ else (t, _K.EPS)


def walk_items(a, fams, view, state: int, data: bytes, cache: dict | None = None) -> int:
    """The state of automaton ``a`` after ``data`` from ``state`` (negative when it dies), as
    :meth:`~dotjson.automaton.Automaton.walk_bytes` walks it, except where the walk needs the
    body of a state of one of the rule families ``fams`` inside an item it has begun: the family
    steps that item's bytes itself (``token_step``, with ``view`` over ``a``). Such a family's
    state names a successor per byte (a body of ~100 rules, ~1.4 ms to build), so a text walked
    through the items of an array of distinct values nested in another's item cost that per
    byte: the outer array's relaxed state walked over its item so far at every mask inside it
    (:func:`dotjson.jsonschema.unique_strings.relaxed_walk`), and its item automaton over the
    same text at every token (``JsonSchemaStore---tson`` in any order). ``cache``: see
    :func:`family_ref`. Call with ``a``'s lock held."""
    s, i = a._follow(state, data)
    if s < 0 or i == len(data):
        return s
    if not fams:
        return a.walk_bytes(s, data[i:])
    if cache is None:
        cache = {}
    buf = np.frombuffer(bytearray(data), dtype=np.uint8)  # (writable: the unit's declared type)
    ret = a._ret
    while True:
        r = int(_K.walk_bytes_packed(a.packed_store, s, buf[i:], ret))
        if r != _K.FAIL:
            return r
        s, i = int(ret[1]), i + int(ret[0])
        ctl = a._a["ctl"]
        if int(ctl[_K.C_STATUS]) == _K.NEED_RULE:
            got = family_at(a, a.term_of(s), fams, cache)
            took = None
            if got is not None and got[1] == a.rules.names[int(ctl[_K.C_ARG])]:
                took = got[0].token_step(view, got[1], got[2], data[i:])
            if took is not None and (took[0] < 0 or took[1] > 0):
                ctl[_K.C_STATUS] = 0
                s, n = took
                if s < 0 or i + n == len(data):
                    return s
                i += n
                continue
        a.handle_exit()


def family_ref(a, t: int, fams, cache: dict):
    """``(family, rule name, prefix, rest)`` where term ``t`` of automaton ``a`` is ``prefix F
    rest`` with ``F`` a rule of one of ``fams`` among its first four items, else ``None``.
    ``cache``: rule id -> ``(family, name)`` or ``None``, kept by the caller per automaton and
    ``fams``."""
    ti = a.store[_K.S_TI]
    before = []
    cur = t
    for _ in range(4):
        first, rest = _seq_head(ti, cur)
        if ti[first, 0] == _K_REF:
            rid = int(ti[first, 1])
            hit = cache.get(rid, False)
            if hit is False:
                name = a.rules.names[rid]
                fam = next((f for f in fams if f.owns(name)), None)
                hit = cache[rid] = (fam, name) if fam is not None else None
            if hit is not None:
                prefix = _K.EPS
                for x in reversed(before):
                    prefix = a._run(_K.seq, x, prefix)
                return hit[0], hit[1], prefix, rest
        if rest == _K.EPS or ti[cur, 0] != _K.K_SEQ:
            return None
        before.append(first)
        cur = rest
    return None


def family_branches(a, t: int, fams, cache: dict):
    """For an alternation ``t``: ``(family, rule name, prefix, after, others)`` for the first of
    its branches that starts with a rule of one of ``fams`` (see :func:`family_ref`), ``after``
    the alternation of what follows that rule in every branch that starts with it after the same
    prefix (``F r1 | F r2`` is ``F (r1 | r2)``: an array of distinct items whose continuation the
    schema split into branches), ``others`` the other branches' terms; ``None`` where no branch
    starts with such a rule."""
    ti = a.store[_K.S_TI]
    off, n = int(ti[t, 1]), int(ti[t, 2])
    key, afters, others = None, [], []
    for b in a.store[_K.S_POOL][off:off + n].tolist():
        got = family_ref(a, b, fams, cache)
        if got is not None and key is None:
            key = got[:3]
        if got is None or got[:3] != key:
            others.append(b)
            continue
        afters.append(got[3])
    if key is None:
        return None
    after = afters[0] if len(afters) == 1 else a._run(_K.alt, np.asarray(afters, dtype=np.int32), len(afters))
    return key[0], key[1], key[2], after, others


def family_at(a, t: int, fams, cache: dict):
    """``(family, rule name, rest)`` where term ``t`` of automaton ``a`` is ``F rest``, or ``(F r1
    | F r2 | ...) rest2`` (``rest`` then ``(r1 | r2 | ...) rest2``: every branch starts with the
    same rule), ``F`` a rule of one of ``fams``: a state at a family's rule, nothing before it;
    else ``None``."""
    ti = a.store[_K.S_TI]
    first, rest = _seq_head(ti, t)
    if ti[first, 0] == _K.K_ALT:
        h, _ = _seq_head(ti, int(a.store[_K.S_POOL][int(ti[first, 1])]))
        if ti[h, 0] != _K_REF:  # (a quick no: every branch must start with the rule)
            return None
        got = family_branches(a, first, fams, cache)
        if got is None or got[4] or got[2] != _K.EPS:
            return None
        return got[0], got[1], a._run(_K.seq, got[3], rest)
    if ti[first, 0] != _K_REF:
        return None
    got = family_ref(a, t, fams, cache)
    return None if got is None or got[2] != _K.EPS else (got[0], got[1], got[3])


class AutomatonView:
    """What a rule family's ``token_step`` uses of an automaton: terms and their states. Over a
    bare automaton here (an array's item automaton, which has no masker:
    :class:`dotjson.jsonschema.unique.UniqueValues`); :class:`dotjson.masks.MaskView` adds an
    index's masks."""

    EPS, EMPTY = _K.EPS, _K.EMPTY

    def __init__(self, auto) -> None:
        self._auto = auto

    def ref(self, name: str) -> int:
        """The term of a reference to rule ``name``."""
        return self._auto.ref_term(name)

    def seq(self, a: int, b: int) -> int:
        """The term ``a b``."""
        return self._auto._run(_K.seq, a, b)

    def alt(self, a: int, b: int) -> int:
        """The term ``a | b``."""
        return self._auto._run(_K.alt, np.asarray([a, b], dtype=np.int32), 2)

    def is_empty(self, t: int) -> bool:
        return self._auto.is_empty(t)

    def state(self, t: int) -> int:
        """The state of live term ``t``."""
        return self._auto.state(t)

    def accepting(self, state: int) -> bool:
        return bool(self._auto.accepting[state])
