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


def walk_items(a, fams, view, state: int, data: bytes) -> int:
    """The state of automaton ``a`` after ``data`` from ``state`` (negative when it dies), as
    :meth:`~dotjson.automaton.Automaton.walk_bytes` walks it, except where the walk needs the
    body of a state of one of the rule families ``fams`` inside an item it has begun: the family
    steps that item's bytes itself (``token_step``, with ``view`` over ``a``). Such a family's
    state names a successor per byte (a body of ~100 rules, ~1.4 ms to build), so a text walked
    through the items of an array of distinct values nested in another's item cost that per
    byte: the outer array's relaxed state walked over its item so far at every mask inside it
    (:func:`dotjson.jsonschema.unique_strings.relaxed_walk`), and its item automaton over the
    same text at every token (``JsonSchemaStore---tson`` in any order). Call with ``a``'s lock
    held."""
    s, i = a._follow(state, data)
    if s < 0 or i == len(data):
        return s
    if not fams:
        return a.walk_bytes(s, data[i:])
    buf = np.frombuffer(bytes(data), dtype=np.uint8)
    ret = a._ret
    while True:
        r = int(_K.walk_bytes(a.store, s, buf[i:], ret))
        if r != _K.FAIL:
            return r
        s, i = int(ret[1]), i + int(ret[0])
        ctl = a._a["ctl"]
        if int(ctl[_K.C_STATUS]) == _K.NEED_RULE:
            got = _item_ref(a, a.term_of(s), int(ctl[_K.C_ARG]), fams)
            took = None if got is None else got[0].token_step(view, got[1], got[2], data[i:])
            if took is not None and (took[0] < 0 or took[1] > 0):
                ctl[_K.C_STATUS] = 0
                s, n = took
                if s < 0 or i + n == len(data):
                    return s
                i += n
                continue
        a.handle_exit()


def _item_ref(a, t: int, rid: int, fams):
    """``(family, rule name, rest)`` where term ``t`` of automaton ``a`` is ``F rest``, or ``(F r1
    | F r2 | ...) rest2`` (``rest`` then ``(r1 | r2 | ...) rest2``), ``F`` rule ``rid`` of one of
    ``fams``; else ``None``."""
    ti = a.store[_K.S_TI]
    first, rest = _seq_head(ti, t)
    if ti[first, 0] == _K_REF:
        if int(ti[first, 1]) != rid:
            return None
        afters = None
    elif ti[first, 0] == _K.K_ALT:
        off, n = int(ti[first, 1]), int(ti[first, 2])
        afters = []
        for b in a.store[_K.S_POOL][off:off + n].tolist():
            h, r = _seq_head(ti, b)
            if ti[h, 0] != _K_REF or int(ti[h, 1]) != rid:
                return None
            afters.append(r)
    else:
        return None
    name = a.rules.names[rid]
    fam = next((f for f in fams if f.owns(name)), None)
    if fam is None:
        return None
    if afters is not None:
        after = a._run(_K.alt, np.asarray(afters, dtype=np.int32), len(afters))
        rest = a._run(_K.seq, after, rest)
    return fam, name, rest


class AutomatonView:
    """What a rule family's ``token_step`` uses of an automaton that has no masker (an array's
    item automaton, :class:`dotjson.jsonschema.unique.UniqueValues`): terms and their states."""

    def __init__(self, auto) -> None:
        self._auto = auto
        self.EPS, self.EMPTY = _K.EPS, _K.EMPTY

    def ref(self, name: str) -> int:
        return self._auto.ref_term(name)

    def seq(self, a: int, b: int) -> int:
        return self._auto._run(_K.seq, a, b)

    def state(self, t: int) -> int:
        return self._auto.state(t)
