"""The number automaton built one character at a time: the reference for
:func:`dotjson.jsonschema.numbers._number_dfa`, which steps one digit per class of digits that its
trackers tell apart. ``trans[s]`` here is a dict ``character -> target``.

This is the construction dotjson used until the digit classes replaced it; the tests compare the
two minimal automata on random constraints.
"""

from __future__ import annotations

from dotjson.jsonschema.numbers import _EXP_PHASES, _SYNTAX, _SYNTAX_ACCEPT
from dotjson.jsonschema.values import MAX_DFA_STATES


def number_dfa(trackers, allow_exp: bool):
    init = ("S", tuple(t.init for t in trackers))
    index = {init: 0}
    states = [init]
    trans: list[dict[str, int]] = []
    k = 0
    while k < len(states):
        ph, tss = states[k]
        row: dict[str, int] = {}
        for ch, ph2 in _SYNTAX[ph].items():
            if ph2 in _EXP_PHASES and not allow_exp:
                continue
            new = []
            for t, ts in zip(trackers, tss):
                ns = t.step(ts, ph, ch, ph2)
                if ns is None:
                    break
                new.append(ns)
            else:
                key = (ph2, tuple(new))
                idx = index.get(key)
                if idx is None:
                    idx = index[key] = len(states)
                    states.append(key)
                    if len(states) > MAX_DFA_STATES:
                        return None
                row[ch] = idx
        trans.append(row)
        k += 1
    accept = [ph in _SYNTAX_ACCEPT and all(t.accept(ts) for t, ts in zip(trackers, tss)) for ph, tss in states]
    return trans, accept


def minimize(trans, accept):
    n = len(trans)
    # keep only states that can reach an accepting state
    rev: list[list[int]] = [[] for _ in range(n)]
    for s, row in enumerate(trans):
        for t in row.values():
            rev[t].append(s)
    live = set(i for i in range(n) if accept[i])
    stack = list(live)
    while stack:
        t = stack.pop()
        for s in rev[t]:
            if s not in live:
                live.add(s)
                stack.append(s)
    if 0 not in live:
        return None
    trans = [{c: t for c, t in row.items() if t in live} for row in trans]
    block = [1 if accept[i] else 0 for i in range(n)]
    nblocks = len(set(block[i] for i in live))
    while True:
        sigs = {}
        newblock = [0] * n
        for i in sorted(live):
            sig = (block[i], tuple(sorted((c, block[t]) for c, t in trans[i].items())))
            newblock[i] = sigs.setdefault(sig, len(sigs))
        if len(sigs) == nblocks:
            block = newblock
            break
        nblocks = len(sigs)
        block = newblock
    # renumber so the start state is 0
    order = {block[0]: 0}
    for i in sorted(live):
        order.setdefault(block[i], len(order))
    m = len(order)
    mtrans: list[dict[str, int]] = [dict() for _ in range(m)]
    macc = [False] * m
    for i in live:
        b = order[block[i]]
        macc[b] = accept[i]
        for c, t in trans[i].items():
            mtrans[b][c] = order[block[t]]
    return mtrans, macc
