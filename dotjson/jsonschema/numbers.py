"""Numbers: JSON Schema numeric keywords as a DFA over the characters of a JSON number.

The DFA is the product of a syntax automaton and *trackers* (comparison with a constant,
integrality, remainder modulo a ``multipleOf``), minimised and converted to a regular IR node (or to
right-linear rules when it has cycles). :class:`NumberBuilder` is the compiler's part that turns the
merged numeric constraints of a branch into that node.
"""

from __future__ import annotations

from decimal import Decimal

from dotjson import ir
from dotjson.ir import EMPTY, EPS, Ref, alt, repeat, seq
from dotjson.jsonschema.nodes import NumberNode
from dotjson.jsonschema.values import MAX_DFA_STATES

# ----------------------------------------------------------------------------- numbers
# A DFA over the characters of a JSON number, product of a syntax automaton and "trackers"
# (comparison with a constant, integrality, remainder modulo a multipleOf).

_NUM_ALPHABET = "-+.eE0123456789"
_SYNTAX = {
    "S": {"-": "M", "0": "Z", **{d: "I" for d in "123456789"}},
    "M": {"0": "Z", **{d: "I" for d in "123456789"}},
    "Z": {".": "D", "e": "X", "E": "X"},
    "I": {".": "D", "e": "X", "E": "X", **{d: "I" for d in "0123456789"}},
    "D": {d: "F" for d in "0123456789"},
    "F": {"e": "X", "E": "X", **{d: "F" for d in "0123456789"}},
    "X": {"+": "Y", "-": "Y", **{d: "P" for d in "0123456789"}},
    "Y": {d: "P" for d in "0123456789"},
    "P": {d: "P" for d in "0123456789"},
}
_SYNTAX_ACCEPT = frozenset("ZIFP")
_EXP_PHASES = frozenset("XYP")


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


class _CmpTracker:
    """Compares the number read with the constant ``c``; accepts per ``op``."""

    def __init__(self, c: Decimal, op: str):
        self.c, self.op = c, op
        mag = abs(c)
        t = format(mag, "f")
        ip, _, fp = t.partition(".")
        ip = ip.lstrip("0")
        fp = fp.rstrip("0")
        self.CI, self.CF = ip, fp
        self.csign = _cmp(c, 0)
        self.init = (False, True, "i", 0, 0, 0)

    def step(self, ts, ph, ch, ph2):
        neg, zero, stage, a, j, st = ts
        if ch == "-" and ph2 in ("M",):
            return (True, zero, stage, a, j, st)
        if ph2 in _EXP_PHASES:
            return ts
        if ph2 == "Z":
            return ts
        if ph2 == "I":
            L = len(self.CI)
            n = a
            if n < L and st == 0:
                st = _cmp(ch, self.CI[n])
            n = min(n + 1, L + 1)
            if n > L:
                st = 0
            return (neg, False, "i", n, 0, st)
        if ch == ".":
            return (neg, zero, "f", self._final_int(a, st), 0, 0)
        if ph2 == "F":
            icmp = a
            if icmp != 0:
                return (neg, zero and ch == "0", "f", icmp, 0, 0)
            if st == 0:
                cd = self.CF[j] if j < len(self.CF) else "0"
                st = _cmp(ch, cd)
            j = min(j + 1, len(self.CF))
            if st != 0:
                j = 0
            return (neg, zero and ch == "0", "f", 0, j, st)
        return ts

    def _final_int(self, n, st):
        L = len(self.CI)
        if n < L:
            return -1
        if n > L:
            return 1
        return st

    def accept(self, ts) -> bool:
        neg, zero, stage, a, j, st = ts
        if stage == "i":
            mag = self._final_int(a, st)
            if mag == 0 and self.CF:
                mag = -1  # equal integer parts, no fraction digits: below c
        elif a != 0:
            mag = a
        elif st != 0:
            mag = st
        else:
            mag = -1 if j < len(self.CF) else 0
        if zero:
            r = -self.csign
        elif not neg:
            r = 1 if self.csign <= 0 else mag
        else:
            r = -1 if self.csign >= 0 else -mag
        op = self.op
        if op == "ge":
            return r >= 0
        if op == "gt":
            return r > 0
        if op == "le":
            return r <= 0
        if op == "lt":
            return r < 0
        if op == "eq":
            return r == 0
        return r != 0


class _IntTracker:
    """Integral values only (fraction digits all zero); ``negate``: some nonzero fraction digit.

    ``syntactic`` (draft 4, where an integer is a number written without fraction or exponent):
    no ``.`` at all; ``negate``: a ``.`` or an exponent.
    """

    def __init__(self, negate: bool, syntactic: bool = False):
        self.negate = negate
        self.syntactic = syntactic
        self.init = False

    def step(self, ts, ph, ch, ph2):
        if self.syntactic:
            if ph2 == "D" or ph2 in _EXP_PHASES:
                return True if self.negate else None
            return ts
        if ph2 in _EXP_PHASES:
            return None
        if ph2 == "F" and ch != "0":
            return None if not self.negate else True
        return ts

    def accept(self, ts) -> bool:
        return ts if self.negate else True


class _ModTracker:
    """Multiple of ``a · 10^-s`` (``negate``: not a multiple)."""

    def __init__(self, a: int, s: int, negate: bool):
        self.a, self.s, self.negate = a, s, negate
        self.init = (0, 0, False)

    def step(self, ts, ph, ch, ph2):
        r, j, dead = ts
        if ph2 in _EXP_PHASES:
            return None
        if dead or not ch.isdigit():
            return ts
        d = ord(ch) - 48
        if ph2 in ("Z", "I"):
            return ((r * 10 + d) % self.a, 0, False)
        if j < self.s:
            return ((r * 10 + d) % self.a, j + 1, False)
        if d != 0:
            return None if not self.negate else (0, 0, True)
        return ts

    def accept(self, ts) -> bool:
        r, j, dead = ts
        ok = (r * pow(10, self.s - j, self.a)) % self.a == 0
        if self.negate:
            return dead or not ok
        return ok


def _number_dfa(trackers, allow_exp: bool):
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


def _minimize(trans, accept):
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


def _chars_of(cs) -> ir.Node:
    return ir.chars(*((ord(c), ord(c)) for c in cs))


def _dfa_to_ir(trans, accept, rule_prefix: str, rules: dict) -> ir.Node:
    """A regular node when the DFA's only cycles are self-loops; right-linear rules otherwise."""
    n = len(trans)
    # cycle detection ignoring self-loops
    color = [0] * n
    cyclic = False
    stack = [(0, iter(trans[0].values()))]
    color[0] = 1
    while stack and not cyclic:
        s, it = stack[-1]
        for t in it:
            if t == s:
                continue
            if color[t] == 1:
                cyclic = True
                break
            if color[t] == 0:
                color[t] = 1
                stack.append((t, iter(trans[t].values())))
                break
        else:
            color[s] = 2
            stack.pop()

    def grouped(s):
        by: dict[int, list[str]] = {}
        for c, t in trans[s].items():
            by.setdefault(t, []).append(c)
        return sorted(by.items())

    if not cyclic:
        memo: dict[int, ir.Node] = {}

        def expr(s):
            hit = memo.get(s)
            if hit is not None:
                return hit
            loop = None
            outs = []
            for t, cs in grouped(s):
                if t == s:
                    loop = _chars_of(cs)
                else:
                    outs.append(seq(_chars_of(cs), expr(t)))
            body = alt(*(([EPS] if accept[s] else []) + outs))
            if loop is not None:
                body = seq(repeat(loop, 0, None), body)
            memo[s] = body
            return body

        return expr(0)
    names = [f"{rule_prefix}_{i}" for i in range(n)]
    for s in range(n):
        outs = [seq(_chars_of(cs), Ref(names[t])) for t, cs in grouped(s)]
        rules[names[s]] = alt(*(([EPS] if accept[s] else []) + outs))
    return Ref(names[0])



_DIGIT = ir.chars((0x30, 0x39))
_ZERO_DIGIT = ir.chars((0x30, 0x30))
_ZEROS = repeat(_ZERO_DIGIT, 1, None)
# `.0`, `.00`, ... : fraction digits that leave a number's value unchanged
_ZERO_FRACTION = ir.opt(seq(ir.lit("."), _ZEROS))
# every JSON spelling of zero: a sign, zero fraction digits and any exponent change nothing
_ZERO = seq(ir.opt(ir.lit("-")), ir.lit("0"), _ZERO_FRACTION,
            ir.opt(seq(ir.chars((0x45, 0x45), (0x65, 0x65)), ir.opt(ir.chars((0x2B, 0x2B), (0x2D, 0x2D))),
                       repeat(_DIGIT, 1, None))))


# Digits of a constant below which its DFA certainly fits MAX_DFA_STATES (~6 states a digit):
# longer ones take the DFA's path, and its limit, as before.
_LONG_LITERAL = 100


def _digits(c: Decimal) -> int:
    """Digits of ``c`` written out in full (``format(c, "f")``), without the point."""
    sign, digits, exp = c.as_tuple()
    if not isinstance(exp, int):
        return 1 << 30  # not finite (never a schema's value): the DFA's path decides
    return max(len(digits), -exp) + max(exp, 0) + 1


def _equal_node(c: Decimal) -> ir.Node:
    """The JSON spellings of numbers equal to ``c`` that the comparison DFA of ``eq c`` with
    integers and non-integers allowed accepts (an exponent only when ``c`` is 0, as
    :meth:`NumberBuilder.number_node` allows it), written directly: its integer part without
    leading zeros, its fraction digits, any number of trailing zeros after them. The DFA
    construction takes ~0.3 ms per constant; this is a few nodes (``enum``/``const`` numbers)."""
    if c == 0:
        return _ZERO
    ip, _, fp = format(abs(c), "f").partition(".")
    ip = ip.lstrip("0") or "0"
    fp = fp.rstrip("0")
    sign = ir.lit("-") if c < 0 else EPS
    if fp:
        return seq(sign, ir.lit(f"{ip}.{fp}"), repeat(_ZERO_DIGIT, 0, None))
    return seq(sign, ir.lit(ip), _ZERO_FRACTION)


# The languages of numeric constraints already built in this process, by their constraints:
# bounds recur across schemas (of the 3,405 bounded numbers of MaskBench's development split,
# 473 distinct constraints), and a bound's digit automaton costs 0.5-2 ms to build. Only regular
# nodes (IR is immutable) are shared; an automaton with cycles (multipleOf) is rules of one
# compiler and stays there.
_NUMBER_LANGUAGES: dict = {}
_MAX_SHARED_NUMBERS = 4096


class NumberBuilder:
    """Mixin of the compiler: numbers (``type: number/integer``, bounds, ``multipleOf``)."""

    def build_number(self, n: NumberNode, not_enum, allow_int, allow_nonint, where) -> ir.Node:
        """The numbers of node ``n`` (integers, others, or both) but the values ``not_enum``
        excludes."""
        ne = tuple(sorted(c[1] for c in not_enum if c[0] == "x"))
        return self.number_node(n.lo, n.lo_excl, n.hi, n.hi_excl, tuple(n.multiples), tuple(n.not_multiples), ne,
                                allow_int, allow_nonint, where)

    def number_node(self, lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint, where) -> ir.Node:
        if lo is None and hi is None and not mults and not notmults and not ne:
            if allow_int and allow_nonint:
                return Ref("json_number")
        key = (lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint)
        hit = self.number_cache.get(key)
        if hit is not None:
            return hit
        shared_key = key + (self.syntactic_int,)
        hit = _NUMBER_LANGUAGES.get(shared_key)
        if hit is not None:
            self.number_cache[key] = hit
            return hit
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lox or hix))):
            self.number_cache[key] = EMPTY
            return EMPTY
        if lo is not None and lo == hi and allow_int and allow_nonint and not mults and not notmults \
                and not ne and _digits(lo) <= _LONG_LITERAL:
            # one value, any spelling (an enum or const number): no automaton to build
            node = self.number_cache[key] = _equal_node(lo)
            return node
        trackers = []
        consts = []
        if lo is not None and hi is not None and lo == hi:
            trackers.append(_CmpTracker(lo, "eq"))
            consts.append(lo)
        else:
            if lo is not None:
                trackers.append(_CmpTracker(lo, "gt" if lox else "ge"))
                consts.append(lo)
            if hi is not None:
                trackers.append(_CmpTracker(hi, "lt" if hix else "le"))
                consts.append(hi)
        for c in ne:
            trackers.append(_CmpTracker(c, "ne"))
            consts.append(c)
        if not allow_nonint:
            trackers.append(_IntTracker(False, self.syntactic_int))
        elif not allow_int:
            trackers.append(_IntTracker(True, self.syntactic_int))
        dropped = False
        for mm, neg in [(x, False) for x in mults] + [(x, True) for x in notmults]:
            sign, digits, exp = mm.normalize().as_tuple()
            a = int("".join(map(str, digits)) or "0")
            s = -exp if exp < 0 else 0
            if exp > 0:
                a *= 10 ** exp
            if a > 10000:
                r = self.unsupported(f"multipleOf {mm} needs a remainder automaton with more than 10000 states",
                                     where, "multipleOf")
                if r is None:
                    dropped = True  # (lenient: this language over-approximates; not shared)
                    continue
            trackers.append(_ModTracker(a, s, neg))
        allow_exp = allow_int and allow_nonint and not mults and not notmults and all(c == 0 for c in consts)
        dfa = _number_dfa(trackers, allow_exp)
        if dfa is None:
            self.unsupported("numeric bounds too large to compile", where, "maximum")
            node = Ref("json_number") if allow_int and allow_nonint else Ref("json_integer")
        else:
            mn = _minimize(*dfa)
            if mn is None:
                node = EMPTY
            else:
                self.counter += 1
                n_rules = len(self.rules)
                node = _dfa_to_ir(mn[0], mn[1], f"num{self.counter}", self.rules)
                if len(self.rules) == n_rules and not dropped:  # a regular node, exact
                    if len(_NUMBER_LANGUAGES) >= _MAX_SHARED_NUMBERS:
                        _NUMBER_LANGUAGES.clear()
                    _NUMBER_LANGUAGES[shared_key] = node
        self.number_cache[key] = node
        return node

