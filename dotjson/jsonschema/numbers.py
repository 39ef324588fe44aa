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
from dotjson.jsonschema.values import EXACT, MAX_DFA_STATES

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
        mag = c.copy_abs()  # (exact: abs() rounds to the context's 28 digits)
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

    def cuts(self, ts, ph2) -> int:
        """Where the digits' steps may differ (see :func:`_number_dfa`): bit ``d`` (1-9) set when
        digits ``d - 1`` and ``d`` may lead ``ts`` to different states in phase ``ph2``."""
        neg, zero, stage, a, j, st = ts
        if ph2 == "I":
            if a < len(self.CI) and st == 0:
                return _AROUND[int(self.CI[a])]
            return 0
        if ph2 == "F":
            zcut = 2 if zero else 0  # the zero flag tells 0 from 1-9
            if a != 0 or st != 0:
                return zcut
            return zcut | _AROUND[int(self.CF[j]) if j < len(self.CF) else 0]
        return 0

    def hopeless(self, ts) -> bool:
        """No continuation of the digits read can satisfy the comparison (the integer part
        already has more digits than the constant's, or the integer or fraction comparison is
        decided, and the sign is known): prunes the lazily built automaton's searches."""
        neg, zero, stage, a, j, st = ts
        if zero or self.op == "ne":
            return False
        sv = -1 if neg else 1
        if self.csign != sv:
            r = sv
        else:
            if stage == "i":
                if a <= len(self.CI):
                    return False
                m = 1
            elif a != 0:
                m = a
            elif st != 0:
                m = st
            else:
                return False
            r = m * sv
        op = self.op
        return not (r >= 0 if op == "ge" else r > 0 if op == "gt" else r <= 0 if op == "le"
                    else r < 0 if op == "lt" else r == 0)

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

    def cuts(self, ts, ph2) -> int:
        if self.syntactic or ph2 != "F":
            return 0
        return 2  # a nonzero fraction digit

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

    def cuts(self, ts, ph2) -> int:
        r, j, dead = ts
        if dead or ph2 not in ("Z", "I", "F"):
            return 0
        if ph2 != "F" or j < self.s:
            return 0 if self.a == 1 else _ALL_CUTS  # every digit its own remainder
        return 2  # past the scale: a nonzero digit

    def accept(self, ts) -> bool:
        r, j, dead = ts
        ok = (r * pow(10, self.s - j, self.a)) % self.a == 0
        if self.negate:
            return dead or not ok
        return ok


class _ZerosModTracker:
    """Multiple of ``b · 10^k`` (``k >= 1``, ``b`` not a multiple of 10; ``negate``: not a
    multiple), in plain notation: an integer whose last ``k`` digits are zeros and whose digits
    before them are a multiple of ``b``. A multiple of ``10^30`` is 31 states, not ``10^30``
    remainders. State ``(r, z, dead)``: ``z`` trailing zeros of the integer part read (at most
    ``k``), ``r`` the integer part without them modulo ``b`` (past ``k`` zeros, without ``k``)."""

    def __init__(self, b: int, k: int, negate: bool):
        self.b, self.k, self.negate = b, k, negate
        self.init = (0, k, False)  # the integer part 0: a multiple

    def step(self, ts, ph, ch, ph2):
        r, z, dead = ts
        if ph2 in _EXP_PHASES:
            return None
        if dead or not ch.isdigit() or ph2 == "Z":
            return ts
        d = ord(ch) - 48
        if ph2 == "I":
            if d == 0:
                return (r, z + 1, False) if z < self.k else (r * 10 % self.b, z, False)
            return ((r * pow(10, z + 1, self.b) + d) % self.b, 0, False)
        if d != 0:  # a nonzero fraction digit: not an integer, so not a multiple
            return None if not self.negate else (0, 0, True)
        return ts

    def cuts(self, ts, ph2) -> int:
        r, z, dead = ts
        if dead or ph2 not in ("I", "F"):
            return 0
        if ph2 == "I" and self.b != 1:
            return _ALL_CUTS
        return 2  # zero or not

    def accept(self, ts) -> bool:
        r, z, dead = ts
        ok = z == self.k and r == 0
        if self.negate:
            return dead or not ok
        return ok


# Character classes: a transition is labelled with a bit set over the number alphabet (bit k:
# _NUM_ALPHABET[k]); the ten digits are bits 5-14.
_BIT = {c: 1 << k for k, c in enumerate(_NUM_ALPHABET)}
_ALL_CUTS = 0b1111111110  # digits 1-9 each start a class
# cuts that put digit c in a class of its own (with those below and those above it)
_AROUND = [((1 << c) | (1 << (c + 1))) & _ALL_CUTS for c in range(10)]


def _syntax_groups():
    """Per syntax phase: its moves ``(ph2, char, lo, hi)``, a non-digit ``char`` alone
    (``lo = hi = -1``) or the digits ``lo``-``hi`` that all lead to ``ph2``."""
    out = {}
    for ph, row in _SYNTAX.items():
        moves = [(ph2, ch, -1, -1) for ch, ph2 in row.items() if not ch.isdigit()]
        d = 0
        while d < 10:
            ph2 = row.get(str(d))
            if ph2 is None:
                d += 1
                continue
            e = d
            while e + 1 < 10 and row.get(str(e + 1)) == ph2:
                e += 1
            moves.append((ph2, None, d, e))
            d = e + 1
        out[ph] = moves
    return out


_MOVES = _syntax_groups()
_DIGIT_CHARS = "0123456789"


def _number_dfa(trackers, allow_exp: bool):
    """The product of the syntax automaton and ``trackers``: ``(trans, accept)``, ``trans[s]`` a
    dict ``target -> character bits`` (see ``_BIT``), or ``None`` past ``MAX_DFA_STATES``.

    The digits of one syntax move are split only where some tracker tells them apart (its
    ``cuts``: a comparison with a constant's digit, the zero flag, a remainder), and one
    representative digit is stepped per class: a bound's automaton takes ~3 steps per state
    where stepping each of the ten digits took ten (``tests/naive_numbers.py`` is the
    per-character construction this one is tested against).
    """
    init = ("S", tuple(t.init for t in trackers))
    index = {init: 0}
    states = [init]
    trans: list[dict[int, int]] = []
    k = 0
    while k < len(states):
        ph, tss = states[k]
        row: dict[int, int] = {}
        for ph2, ch, lo, hi in _MOVES[ph]:
            if ph2 in _EXP_PHASES and not allow_exp:
                continue
            if ch is not None:
                classes = ((ch, _BIT[ch]),)
            else:
                cut = 0
                for t, ts in zip(trackers, tss):
                    cut |= t.cuts(ts, ph2)
                classes = []
                start = lo
                for d in range(lo + 1, hi + 2):
                    if d > hi or (cut >> d) & 1:
                        classes.append((_DIGIT_CHARS[start], ((1 << (d - start)) - 1) << (5 + start)))
                        start = d
            for c, bits in classes:
                new = []
                for t, ts in zip(trackers, tss):
                    ns = t.step(ts, ph, c, ph2)
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
                    row[idx] = row.get(idx, 0) | bits
        trans.append(row)
        k += 1
    accept = [ph in _SYNTAX_ACCEPT and all(t.accept(ts) for t, ts in zip(trackers, tss)) for ph, tss in states]
    return trans, accept


def _minimize(trans, accept):
    """The minimal DFA of ``(trans, accept)`` (rows ``target -> bits``, start 0), its start
    renumbered 0; ``None`` when the language is empty."""
    n = len(trans)
    # keep only states that can reach an accepting state
    rev: list[list[int]] = [[] for _ in range(n)]
    for s, row in enumerate(trans):
        for t in row:
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
    order_live = sorted(live)
    rows = [{t: b for t, b in trans[i].items() if t in live} for i in range(n)]
    block = [1 if accept[i] else 0 for i in range(n)]
    nblocks = len(set(block[i] for i in live))
    while True:
        sigs = {}
        newblock = [0] * n
        for i in order_live:
            by: dict[int, int] = {}
            for t, b in rows[i].items():
                bt = block[t]
                by[bt] = by.get(bt, 0) | b
            sig = (block[i], tuple(sorted(by.items())))
            newblock[i] = sigs.setdefault(sig, len(sigs))
        block = newblock
        if len(sigs) == nblocks:
            break
        nblocks = len(sigs)
    # renumber so the start state is 0
    order = {block[0]: 0}
    for i in order_live:
        order.setdefault(block[i], len(order))
    m = len(order)
    mtrans: list[dict[int, int]] = [dict() for _ in range(m)]
    macc = [False] * m
    done = [False] * m
    for i in order_live:
        b = order[block[i]]
        if done[b]:
            continue
        done[b] = True
        macc[b] = accept[i]
        row = mtrans[b]
        for t, bits in rows[i].items():
            bt = order[block[t]]
            row[bt] = row.get(bt, 0) | bits
    return mtrans, macc


# character bits -> their Chars node (shared by every number automaton of the process)
_CHARS_OF_BITS: dict[int, ir.Node] = {}


def _chars_of(bits: int) -> ir.Node:
    node = _CHARS_OF_BITS.get(bits)
    if node is None:
        node = _CHARS_OF_BITS[bits] = ir.chars(
            *((ord(c), ord(c)) for k, c in enumerate(_NUM_ALPHABET) if (bits >> k) & 1))
    return node


def _dfa_to_ir(trans, accept, rule_prefix, rules: dict) -> ir.Node:
    """A regular node when the DFA's only cycles are self-loops; right-linear rules otherwise,
    named ``rule_prefix`` (a string, or a function returning one, called only then)."""
    n = len(trans)
    # cycle detection ignoring self-loops
    color = [0] * n
    cyclic = False
    stack = [(0, iter(trans[0]))]
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
                stack.append((t, iter(trans[t])))
                break
        else:
            color[s] = 2
            stack.pop()

    if not cyclic:
        memo: dict[int, ir.Node] = {}

        def expr(s):
            hit = memo.get(s)
            if hit is not None:
                return hit
            loop = None
            outs = []
            for t, bits in sorted(trans[s].items()):
                if t == s:
                    loop = _chars_of(bits)
                else:
                    outs.append(seq(_chars_of(bits), expr(t)))
            body = alt(*(([EPS] if accept[s] else []) + outs))
            if loop is not None:
                body = seq(repeat(loop, 0, None), body)
            memo[s] = body
            return body

        try:
            return expr(0)
        finally:
            expr = None  # (it refers to itself through its closure: a reference cycle left to the collector)
    if callable(rule_prefix):  # (a name is taken only where rules are made)
        rule_prefix = rule_prefix()
    names = [f"{rule_prefix}_{i}" for i in range(n)]
    for s in range(n):
        outs = [seq(_chars_of(bits), Ref(names[t])) for t, bits in sorted(trans[s].items())]
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


def _equal_node(c: Decimal, digits: int | None = None) -> ir.Node:
    """The JSON spellings of numbers equal to ``c`` that the comparison DFA of ``eq c`` with
    integers and non-integers allowed accepts (an exponent only when ``c`` is 0, as
    :meth:`NumberBuilder.number_node` allows it), written directly: its integer part without
    leading zeros, its fraction digits, any number of trailing zeros after them. The DFA
    construction takes ~0.3 ms per constant; this is a few nodes (``enum``/``const`` numbers).
    ``digits``: at most that many fraction digits (the generation bound: ``1.1000…`` without
    end was a loop), the value's own always."""
    if digits is not None:
        ip, _, fp = format(c.copy_abs(), "f").partition(".")
        ip = ip.lstrip("0") or "0"
        fp = fp.rstrip("0")
        sign = ir.lit("-") if c < 0 else EPS
        zeros = repeat(_ZERO_DIGIT, 0, max(0, digits - len(fp)))
        if fp:
            return seq(sign, ir.lit(f"{ip}.{fp}"), zeros)
        if c == 0:
            sign = ir.opt(ir.lit("-"))
        return seq(sign, ir.lit(ip), ir.opt(seq(ir.lit("."), repeat(_ZERO_DIGIT, 1, max(1, digits)))))
    if c == 0:
        return _ZERO
    ip, _, fp = format(c.copy_abs(), "f").partition(".")
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
    """The compiler's part for numbers (``type: number/integer``, bounds, ``multipleOf``),
    remembered per constraint.

    It reads of the compiler ``tr``: the dialect's integers (``syntactic_int``), the number
    spelling policy (``exponents``), the generation bounds (``gen_bounds``, ``free_number``),
    the base rules' prefix (``bp``); and writes its rule names (``ns``, ``counter``), right-linear
    rules (``rules``) and lazy number automata (``families``).
    """

    def __init__(self, tr):
        self.tr = tr
        self.number_cache: dict = {}  # constraint -> its numbers (an IR node)

    def build_number(self, n: NumberNode, not_enum, allow_int, allow_nonint, where) -> ir.Node:
        """The numbers of node ``n`` (integers, others, or both) but the values ``not_enum``
        excludes."""
        ne = tuple(sorted(c[1] for c in not_enum if c[0] == "x"))
        return self.number_node(n.lo, n.lo_excl, n.hi, n.hi_excl, tuple(n.multiples), tuple(n.not_multiples), ne,
                                allow_int, allow_nonint, where)

    def number_node(self, lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint, where) -> ir.Node:
        """The numbers within the bounds, (not) multiples of ``mults`` (``notmults``), other than
        ``ne``, integers and/or not. Under ``spellings="any"`` every spelling: the plain-notation
        automaton and, where it does not write exponents itself, :class:`ExponentNumbers`
        (``numbers="any"``, the compiler's ``exponents``)."""
        tr = self.tr
        gb = tr.gen_bounds
        if gb is not None and (lo is None or hi is None) and (mults or notmults or not allow_nonint):
            # the generation bound on digits (an integer or a multipleOf number written digit after
            # digit until the budget ends: Handwritten---allany4): |x| < 10**D, where the schema's
            # own bounds and multiples leave room for it
            big = Decimal(10) ** gb["number_digits"]
            room = all(abs(m) < big / 10 ** 3 for m in tuple(mults) + tuple(notmults))
            if room and hi is None and (lo is None or lo < big / 10):
                hi, hix = big, True
            if room and lo is None and (hi is None or hi > -big / 10):
                lo, lox = -big, True
        plain = self.plain_number_node(lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint, where)
        if not tr.exponents or plain is EMPTY:
            return plain
        consts = [c for c in (lo, hi) + tuple(ne) if c is not None]
        if allow_int and allow_nonint and not mults and not notmults and all(c == 0 for c in consts):
            return plain  # exponents are written by the plain automaton already (sign checks)
        if tr.syntactic_int:
            if not allow_nonint:
                return plain  # draft 4: an integer has no exponent
            integer = None  # draft 4: every exponent form is a non-integer
        else:
            integer = None if allow_int and allow_nonint else bool(allow_int)
        key = ("exp", lo, lox, hi, hix, mults, notmults, ne, integer)
        hit = self.number_cache.get(key)
        if hit is None:
            from dotjson.jsonschema.numfamily import ExponentNumbers

            fam = ExponentNumbers(tr.fresh_prefix("xnum"), lo, lox, hi, hix, mults, notmults, ne, integer)
            tr.families.append(fam)
            hit = self.number_cache[key] = alt(plain, Ref(fam.start))
        return hit

    def plain_number_node(self, lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint, where) -> ir.Node:
        """The numbers of :meth:`number_node` in plain notation (exponents only where every
        bound is 0 and every value may be: the sign checks stay exact)."""
        tr = self.tr
        if lo is None and hi is None and not mults and not notmults and not ne:
            if allow_int and allow_nonint:
                if tr.gen_bounds is not None:
                    return tr.free_number()  # digits bounded (integer, fraction, exponent)
                return Ref(tr.bp + "json_number")
        key = (lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint)
        hit = self.number_cache.get(key)
        if hit is not None:
            return hit
        shared_key = key + (tr.syntactic_int,)
        hit = _NUMBER_LANGUAGES.get(shared_key)
        if hit is not None:
            # (a regular language: its build took no name, so rule names, and index.grammar,
            # do not depend on what this process compiled before)
            self.number_cache[key] = hit
            return hit
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lox or hix))):
            self.number_cache[key] = EMPTY
            return EMPTY
        if lo is not None and lo == hi and allow_int and allow_nonint and not mults and not notmults \
                and not ne and _digits(lo) <= _LONG_LITERAL:
            # one value, any spelling (an enum or const number): no automaton to build
            gb = tr.gen_bounds
            node = self.number_cache[key] = _equal_node(lo, None if gb is None else gb["number_digits"])
            return node
        contradict = _multiples_contradict(mults, notmults)
        witness = False if contradict else _range_witness(lo, lox, hi, hix, mults, notmults, ne, allow_int,
                                                          allow_nonint)
        if contradict or witness is None:
            self.number_cache[key] = EMPTY  # every multiple of the mults is one of a notmult (0 too)
            return EMPTY
        trackers = _trackers(lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint, tr.syntactic_int)
        consts = [c for c in (lo, hi) + tuple(ne) if c is not None]
        allow_exp = allow_int and allow_nonint and not mults and not notmults and all(c == 0 for c in consts)
        # a remainder past MAX_DFA_STATES fills the eager build's limit before anything else
        big = any(getattr(t, "a", getattr(t, "b", 0)) > MAX_DFA_STATES for t in trackers)
        dfa = None if big else _number_dfa(trackers, allow_exp)
        if dfa is None:
            # too many states to build eagerly: the same automaton, a state at a time
            from dotjson.jsonschema.numfamily import LazyNumberDFA

            name = tr.fresh_prefix("lnum")
            params = {"lo": None if lo is None else str(lo), "lox": lox, "hi": None if hi is None else str(hi),
                      "hix": hix, "mults": [str(m) for m in mults], "notmults": [str(m) for m in notmults],
                      "ne": [str(c) for c in ne], "allow_int": allow_int, "allow_nonint": allow_nonint,
                      "syntactic_int": tr.syntactic_int, "allow_exp": allow_exp}
            fam = LazyNumberDFA(name, trackers, allow_exp, params)
            tr.families.append(fam)
            # (whether it has a number at all is the family's answer when the analysis asks:
            # a union of such branches is then searched only until one has; a witness found
            # among the candidate multiples answers it at once)
            if witness is not False:
                fam.assume_path(_plain_text(witness))
            node = Ref(fam.start)
        else:
            mn = _minimize(*dfa)
            if mn is None:
                node = EMPTY
            else:
                n_rules = len(tr.rules)
                # the rules' names are taken only if the automaton has cycles (a regular one is
                # shared with later schemas through _NUMBER_LANGUAGES, and a hit takes none)
                node = _dfa_to_ir(mn[0], mn[1], lambda: tr.fresh_prefix("num"), tr.rules)
                if len(tr.rules) == n_rules:  # a regular node
                    if len(_NUMBER_LANGUAGES) >= _MAX_SHARED_NUMBERS:
                        ir.unshare(_NUMBER_LANGUAGES.values())
                        _NUMBER_LANGUAGES.clear()
                    _NUMBER_LANGUAGES[shared_key] = ir.share(node)
        self.number_cache[key] = node
        return node



def _trackers(lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint, syntactic_int):
    """The trackers of the plain-notation automaton of these constraints (a remainder of any
    size: past ``MAX_DFA_STATES`` the automaton is built lazily, and whether a state can still
    be completed is decided in rationals, ``numarith._Arith``)."""
    trackers = []
    if lo is not None and hi is not None and lo == hi:
        trackers.append(_CmpTracker(lo, "eq"))
    else:
        if lo is not None:
            trackers.append(_CmpTracker(lo, "gt" if lox else "ge"))
        if hi is not None:
            trackers.append(_CmpTracker(hi, "lt" if hix else "le"))
    for c in ne:
        trackers.append(_CmpTracker(c, "ne"))
    if not allow_nonint:
        trackers.append(_IntTracker(False, syntactic_int))
    elif not allow_int:
        trackers.append(_IntTracker(True, syntactic_int))
    for mm, neg in [(x, False) for x in mults] + [(x, True) for x in notmults]:
        # mm = a · 10^-s with a not a multiple of 10: a multiple of 10^30 is "ends in 30 zeros"
        from dotjson.jsonschema.numarith import _mult_parts

        a, s = _mult_parts(EXACT.normalize(mm))
        trackers.append(_ModTracker(a, s, neg) if s >= 0 else _ZerosModTracker(a, -s, neg))
    return trackers


def lazy_number_family(prefix: str, p: dict):
    """The :class:`~dotjson.jsonschema.numfamily.LazyNumberDFA` that ``params`` describe (a
    saved index's)."""
    from dotjson.jsonschema.numfamily import LazyNumberDFA

    D = Decimal
    trackers = _trackers(None if p["lo"] is None else D(p["lo"]), bool(p["lox"]),
                         None if p["hi"] is None else D(p["hi"]), bool(p["hix"]),
                         tuple(D(x) for x in p["mults"]), tuple(D(x) for x in p["notmults"]),
                         tuple(D(x) for x in p["ne"]), bool(p["allow_int"]), bool(p["allow_nonint"]),
                         bool(p["syntactic_int"]))
    return LazyNumberDFA(prefix, trackers, bool(p["allow_exp"]), p)


def _multiples_contradict(mults, notmults) -> bool:
    """Every common multiple of ``mults`` is a multiple of some ``notmults`` divisor (exact, in
    integers: each divisor is ``a · 10^-s``), so no number (0 included) satisfies both."""
    if not notmults:
        return False
    from math import gcd

    from dotjson.jsonschema.numarith import _mult_parts

    parts = [_mult_parts(EXACT.normalize(m)) for m in mults] or [(1, 0)]
    scale = max(s for _, s in parts)
    lcm = 1
    for a, s in parts:
        x = a * 10 ** (scale - s)
        lcm = lcm * x // gcd(lcm, x)
    for m in notmults:
        b, t = _mult_parts(EXACT.normalize(m))
        # lcm / 10^scale is a multiple of b / 10^t  iff  b * 10^scale divides lcm * 10^t
        num, den = lcm * 10 ** max(t, 0), b * 10 ** scale * 10 ** max(-t, 0)
        if num % den == 0:
            return True
    return False


def _range_witness(lo, lox, hi, hix, mults, notmults, ne, allow_int, allow_nonint, limit=100_000):
    """Between two bounds with at most ``limit`` common multiples of ``mults``: the first that
    satisfies every constraint (each candidate checked exactly, in fractions), or ``None`` when
    none does (the language is empty; the automaton would find that out by searching all its
    states). ``False``: not decided here."""
    if lo is None or hi is None or not mults:
        return False
    from fractions import Fraction
    from math import ceil, floor, gcd

    fr = [Fraction(EXACT.normalize(m)) for m in mults]
    num, den = fr[0].numerator, fr[0].denominator
    for f in fr[1:]:
        num = num * f.numerator // gcd(num, f.numerator)
        den = gcd(den, f.denominator)
    step = Fraction(num, den)  # the least common multiple of the divisors
    flo, fhi = Fraction(lo), Fraction(hi)
    k0, k1 = ceil(flo / step), floor(fhi / step)
    if k1 - k0 + 1 > limit:
        return False
    nots = [Fraction(EXACT.normalize(m)) for m in notmults]
    excluded = {Fraction(c) for c in ne}
    for k in range(k0, k1 + 1):
        v = k * step
        if (lox and v == flo) or (hix and v == fhi) or v in excluded:
            continue
        if (v.denominator == 1 and not allow_int) or (v.denominator != 1 and not allow_nonint):
            continue
        if any((v / n).denominator == 1 for n in nots):
            continue
        return v
    return None


def _plain_text(v) -> str:
    """A fraction with a finite decimal expansion, in plain notation (``-26163``, ``0.125``)."""
    from fractions import Fraction

    v = Fraction(v)
    sign = "-" if v < 0 else ""
    v = abs(v)
    k = 0
    while (v * 10 ** k).denominator != 1:
        k += 1
    n = str((v * 10 ** k).numerator).rjust(k + 1, "0")
    return sign + (n if k == 0 else n[:-k] + "." + n[-k:])
