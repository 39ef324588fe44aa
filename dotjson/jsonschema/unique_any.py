"""Token masks inside arrays of distinct values of any kind (``uniqueItems`` over objects,
arrays, numbers or mixed items; issue 29).

:class:`~dotjson.jsonschema.unique.UniqueValues` reads such an array a byte at a time (a state
is the values read and the current item's bytes), so the generic mask walk makes a rule per token
prefix an item may hold. The strings' construction (:mod:`.unique_strings`) carries over, with
one question answered for any JSON value instead of a string's content:

* **A relaxed state** (the same position with distinctness and counts dropped) allows a superset
  of the tokens; its mask is an ordinary, memoized one.
* **Which item texts can still become a dangerous value** (a value read, or one of the few values
  a later position owed by ``minItems`` may have to take). :func:`may_become` matches the bytes of
  an item begun against each dangerous value: an object's keys must be the value's (each at most
  once), a member, an array's items and a string's content must match it as far as they go, a
  number's significant digits must begin the value's. The answer over-approximates: ``False`` is
  proof that no completion of the text is dangerous (then the item can always be completed to a
  new value and the relaxed verdict is exact, given the array can go on after a new value), and it
  stays ``False`` as bytes are added. Where an item's objects may repeat a key (an open object:
  the last member of a name wins), a member that differs does not rule a value out, and a string
  under such a member does not narrow what may follow: those states keep the generic walk.

So a token needs deciding one by one only where it can leave the item (the special tokens inside a
string, the tokens holding a closing bracket inside a container, any token after a complete
scalar), or where the item so far can still become a dangerous value (then the special tokens and
the plain tokens that spell a dangerous string's next bytes inside a string, every token the
relaxed state allows elsewhere). Each such token is walked as the family reads it: the items it
completes checked against the values read and the counts, the one it ends in by
:func:`may_become`, else by the family's exact search.
"""

from __future__ import annotations

import json

import numpy as np

from dotjson.jsonschema.jsonbase import JSON_WS_BYTES
from dotjson.jsonschema.unique_search import QUICK_DIVE, _lex_of
from dotjson.jsonschema.unique_strings import ArrayMask, _ids, _set_eos, _skip, relaxed_of, spelling, string_content

__all__ = ["item_end", "item_scan", "may_become", "parse_canonical", "token_mask"]

_WS = frozenset(JSON_WS_BYTES)
_NUM = frozenset(b"-+.eE0123456789")
_LETTERS = frozenset(b"abcdefghijklmnopqrstuvwxyz")
_LITS = {"true": b"true", "false": b"false", "null": b"null"}
_STARTS = frozenset(b'{["-0123456789tfn')
#: what an item text matched against a value may still become (:func:`_match`): ran out of bytes
OPEN = -1
#: a target of an open string that cannot narrow it (a member of a name the object may repeat)
ANY = object()
#: a target ``(NEXT, parts)``: ``b`` ends where a value or key may start, which may become one of
#: ``parts`` (a key as a string part)
NEXT = "next"
#: a target ``(NUMBER, text, value)``: ``b`` ends inside a number begun ``text`` that may still be
#: the number ``value``
NUMBER = "number"


# ----------------------------------------------------------------------------- canonical values

def parse_canonical(ct: str):
    """A dangerous value as :func:`_match` reads it, from its canonical text
    (:func:`~dotjson.jsonschema.unique.canonical_text`): ``("o", ct, {key bytes: part})``,
    ``("a", ct, [parts])``, ``("s", ct, content bytes)``, ``("n", ct, (negative, digits))``,
    ``("l", ct, spelling)``; ``ct`` each part's own canonical text."""
    part, i = _parse(ct, 0)
    if i != len(ct):
        raise ValueError(f"not a canonical text: {ct!r}")
    return part


def _parse(s: str, i: int):
    c = s[i]
    if c == "{":
        j, out = i + 1, {}
        while s[j] != "}":
            key, j = json.decoder.scanstring(s, j + 1)
            part, j = _parse(s, j + 1)  # (past the colon)
            out[key.encode("utf-8", "surrogatepass")] = part
            if s[j] == ",":
                j += 1
        return ("o", s[i:j + 1], out), j + 1
    if c == "[":
        j, out = i + 1, []
        while s[j] != "]":
            part, j = _parse(s, j)
            out.append(part)
            if s[j] == ",":
                j += 1
        return ("a", s[i:j + 1], out), j + 1
    if c == '"':
        text, j = json.decoder.scanstring(s, i + 1)
        return ("s", s[i:j], text.encode("utf-8", "surrogatepass")), j
    if c == "#":
        j = i + 1
        while j < len(s) and s[j] in "-0123456789e":
            j += 1
        body = s[i + 1:j]
        neg = body.startswith("-")
        digits = "" if body == "0" else body.lstrip("-").split("e")[0]
        return ("n", s[i:j], (neg, digits)), j
    for word in ("true", "false", "null"):
        if s.startswith(word, i):
            return ("l", word, _LITS[word]), i + len(word)
    raise ValueError(f"not a canonical text: {s!r}")


# ----------------------------------------------------------------------------- item texts

def item_end(b: bytes) -> int:
    """The index just past the JSON value that ``b`` begins (its first byte the value's), when
    it ends inside ``b`` — a number or literal only once a byte that cannot continue it follows
    — else ``-1``. ``b`` is a prefix of valid JSON (the relaxed state allowed it)."""
    return item_scan(b)[0]


def item_scan(b: bytes, at: tuple | None = None) -> tuple:
    """:func:`item_end` of ``b``, resumable: ``(end, at)``, where ``at`` (when the item has not
    ended) is where the scan stopped, for ``item_scan(b + more, at)`` to go on from there rather
    than from the item's first byte (a mask asks it of every token after the same item bytes:
    reading those again for each was quadratic in the item's length)."""
    if not b:
        return -1, None
    c = b[0]
    flat = c in _NUM or c in _LETTERS or c == 0x22
    if at is None:
        return _scan_flat(b, 1) if flat else _scan_container(b, 0, 0, False)
    j, depth, in_str = at
    return _scan_flat(b, j) if flat else _scan_container(b, j, depth, in_str)


def _scan_flat(b: bytes, j: int) -> tuple:
    """:func:`item_scan` of a number, literal or string item from index ``j``."""
    n = len(b)
    c = b[0]
    if c == 0x22:
        while j < n:
            x = b[j]
            if x == 0x5C:
                j += 2
                continue
            if x == 0x22:
                return j + 1, None
            j += 1
        return -1, (j, 0, True)
    cls = _NUM if c in _NUM else _LETTERS
    while j < n and b[j] in cls:
        j += 1
    return (j, None) if j < n else (-1, (j, 0, False))


def _scan_container(b: bytes, j: int, depth: int, in_str: bool) -> tuple:
    """:func:`item_scan` of an object or array item from index ``j`` (brackets ``depth`` open,
    ``in_str``: inside a string)."""
    n = len(b)
    while j < n:
        x = b[j]
        if in_str:
            if x == 0x5C:
                j += 1
            elif x == 0x22:
                in_str = False
        elif x == 0x22:
            in_str = True
        elif x in b"[{":
            depth += 1
        elif x in b"]}":
            depth -= 1
            if depth == 0:
                return j + 1, None
        j += 1
    return -1, (j, depth, in_str)


def lex_context(b: bytes) -> tuple[int, bool, bool, int]:
    """``(depth, in a string, inside an escape, start)`` at the end of the item bytes ``b``: the
    brackets open outside strings, whether the last byte leaves a string open, whether an
    escape in it is unfinished (a backslash, or ``\\u`` and fewer than four hex digits), and
    where the open string's content starts."""
    depth, in_str, j, n = 0, False, 0, len(b)
    start = 0
    while j < n:
        x = b[j]
        if in_str:
            if x == 0x22:
                in_str = False
            elif x == 0x5C:
                j += 1
        elif x == 0x22:
            in_str, start = True, j + 1
        elif x in b"[{":
            depth += 1
        elif x in b"]}":
            depth -= 1
        j += 1
    esc = in_str and not string_content(b[start:])[1]
    return depth, in_str, esc, start


# ----------------------------------------------------------------------------- matching

def may_become(b: bytes, parts, repeats: bool, targets: list | None = None) -> bool:
    """Whether the item bytes ``b`` (a prefix of the item's text, its first byte the value's) may
    still become one of the values ``parts`` (:func:`parse_canonical`), as far as can be told
    without the grammar: ``False`` is a proof that none of its completions is one (see the
    module docstring). ``repeats``: the item's objects may repeat a key (a later member of a name
    replaces the earlier). ``targets``, if given, receives the contents the string open at the
    end of ``b`` may still become, ``(NEXT, parts)`` where ``b`` ends before a value or key may
    start, ``(NUMBER, text, value)`` inside a number, one entry per value it may become (``ANY``:
    nothing narrows the next bytes)."""
    hit = False
    strings: dict = {}  # (each string of ``b`` decoded once for all the values)
    for p in parts:
        n0 = len(targets) if targets is not None else 0
        if _match(b, 0, p, repeats, targets, strings) is not None:
            hit = True
            if targets is None:
                return True
            if len(targets) == n0:
                targets.append(ANY)  # (it ends where nothing narrows the next bytes: a literal, a colon)
    return hit


def _between(b: bytes, i: int, want: bool) -> tuple[int, bool]:
    """Past the whitespace and commas from ``b[i]`` in a container: the index of the next
    byte, and whether a member or item may start there (``want``: one may already; a comma)."""
    n = len(b)
    while i < n and (b[i] in _WS or b[i] == 0x2C):
        want = want or b[i] == 0x2C
        i += 1
    return i, want


def _string_at(b: bytes, i: int, strings: dict):
    """:func:`string_content` of the string whose opening quote is ``b[i]`` (remembered in
    ``strings``)."""
    hit = strings.get(i)
    if hit is None:
        hit = strings[i] = string_content(b[i + 1:])
    return hit


def _match(b: bytes, i: int, p, repeats: bool, tg, strings: dict):
    """Match the value that starts at ``b[i:]`` (after whitespace) against part ``p``: the
    index past it if it is complete and equal to ``p``, :data:`OPEN` if ``b`` ends inside it
    and it may still become ``p``, ``None`` if it cannot."""
    n = len(b)
    while i < n and b[i] in _WS:
        i += 1
    if i >= n:
        if tg is not None:  # (a value may start here: the value it may be)
            tg.append((NEXT, [p]))
        return OPEN
    c = b[i]
    kind = p[0]
    if c == 0x7B:  # {
        if kind != "o":
            return None
        members = p[2]
        got: dict = {}  # key -> whether its (last) value equals the part's
        i += 1
        want = True  # (a key may start: after the brace or a comma)
        while True:
            i, want = _between(b, i, want)
            if i >= n:
                if tg is not None and want:
                    tg.append((NEXT, [("s", None, k) for k in members if repeats or k not in got]))
                return OPEN
            want = False
            if b[i] == 0x7D:
                return i + 1 if len(got) == len(members) and all(got.values()) else None
            # a key
            content, _, closed = _string_at(b, i, strings)
            if closed < 0:
                hit = False
                for k in members:
                    if k.startswith(content) and (repeats or k not in got):
                        hit = True
                        if tg is not None:
                            tg.append(k)
                return OPEN if hit else None
            if content not in members or (content in got and not repeats):
                return None
            i = i + 2 + closed
            while i < n and b[i] in _WS:
                i += 1
            if i >= n:
                return OPEN
            i += 1  # (the colon)
            if repeats:
                # (the member's own targets count only if it may still match)
                sub = None if tg is None else []
                r = _match(b, i, members[content], True, sub, strings)
                if r is None:
                    # a value that differs: a later member of the name may replace it
                    r = _skip_value(b, i)
                    got[content] = False
                    if r == OPEN:
                        if tg is not None:
                            tg.append(ANY)
                        return OPEN
                    i = r
                    continue
                if r == OPEN:
                    if tg is not None:
                        tg.extend(sub)
                    return OPEN
                got[content] = True
                i = r
                continue
            r = _match(b, i, members[content], False, tg, strings)
            if r is None or r == OPEN:
                return r
            got[content] = True
            i = r
    if c == 0x5B:  # [
        if kind != "a":
            return None
        items = p[2]
        k = 0
        i += 1
        want = True
        while True:
            i, want = _between(b, i, want)
            if i >= n:
                if tg is not None and want:
                    tg.append((NEXT, [items[k]] if k < len(items) else []))
                return OPEN
            want = False
            if b[i] == 0x5D:
                return i + 1 if k == len(items) else None
            if k >= len(items):
                return None
            r = _match(b, i, items[k], repeats, tg, strings)
            if r is None or r == OPEN:
                return r
            i = r
            k += 1
    if c == 0x22:
        if kind != "s":
            return None
        content, clean, closed = _string_at(b, i, strings)
        if closed < 0:
            if not p[2].startswith(content):
                return None
            if tg is not None:
                tg.append(p[2])
            return OPEN
        return i + 2 + closed if content == p[2] else None
    if c in _NUM:
        if kind != "n":
            return None
        j = i + 1
        while j < n and b[j] in _NUM:
            j += 1
        text = b[i:j]
        if j >= n:
            if not _number_may_be(text, p[2]):
                return None
            if tg is not None:
                tg.append((NUMBER, text, p[2]))
            return OPEN
        from dotjson.jsonschema.unique import value_key

        return j if value_key(text.decode("latin-1")) == p[1] else None
    if c in _LETTERS:
        if kind != "l":
            return None
        j = i + 1
        while j < n and b[j] in _LETTERS:
            j += 1
        if j >= n:
            return OPEN if p[2].startswith(b[i:j]) else None
        return j if b[i:j] == p[2] else None
    return None


def _number_may_be(text: bytes, value) -> bool:
    """Whether the number begun ``text`` may still equal the value ``(negative, significant
    digits)`` (an over-approximation: whatever digits, point and exponent may follow)."""
    neg, digits = value
    t = text.decode("latin-1")
    if t.startswith("-") != neg and digits:
        return False
    mant = t.lstrip("-").split("e")[0].split("E")[0]
    sig = mant.replace(".", "").lstrip("0")
    if "e" in t or "E" in t or not sig:
        return True  # (an exponent begun, or only zeros so far: any magnitude may follow)
    if not digits:
        return False  # (a nonzero digit read: the value cannot be 0)
    # the significant digits read must begin the value's (which a point and an exponent may
    # place anywhere), trailing zeros included
    k = len(digits)
    return sig[:k] == digits[:len(sig)] and set(sig[k:]) <= {"0"}


def _skip_value(b: bytes, i: int):
    """The index past the value starting at ``b[i:]`` (after whitespace), :data:`OPEN` if
    ``b`` ends inside it."""
    n = len(b)
    while i < n and b[i] in _WS:
        i += 1
    if i >= n:
        return OPEN
    e = item_end(b[i:])
    return OPEN if e < 0 else i + e


# ----------------------------------------------------------------------------- masks

class _AnyMask(ArrayMask):
    """One state's mask for items of any kind (see :func:`token_mask`)."""

    def __init__(self, fam, view, state: int, seen: tuple, body: bytes, rest: int):
        super().__init__(fam, view, state, seen, rest)
        self.seen_set = frozenset(seen)
        self.danger = fam.danger_values(seen)  # canonical texts
        self.body = body
        self._parts = None  # the dangerous values' parts (may_become's), after ``seen``
        self._reachable = None  # ... those the item bytes may still become
        self._goes = None
        #: completions that made an item begun here a new value (:meth:`inside`)
        self.witnesses: list = []

    def goes_on(self) -> bool:
        """Whether the positions still owed can be filled after the current item takes a value
        outside the dangerous ones (the same for every such value:
        :meth:`~dotjson.jsonschema.unique.UniqueValues._goes_on`)."""
        if self._goes is None:
            self._goes = self.fam._goes_on(self.seen)
        return self._goes

    def parts(self) -> list:
        """The dangerous values' parts (:func:`parse_canonical`, what :func:`may_become` matches)."""
        if self._parts is None:
            self._parts = [self.fam.danger_part(v) for v in self.danger]
        return self._parts

    def inside(self, seen: tuple, whole: bytes, fresh: bool) -> bool:
        """Whether the item bytes ``whole`` (not complete) after the values ``seen`` leave the
        array live: surely where it can become no dangerous value; else where a completion
        that made another item a new value completes this one to a new value too (a token of
        whitespace, of another spelling: most of them), else the family's search."""
        fam = self.fam
        if fresh and seen == self.seen:
            if self._reachable is None:
                # the dangerous values the item bytes so far may still become: no completion
                # of them is any other (a proof, may_become's), so neither is one of theirs
                # with a token's bytes after them: each token matched against these few
                self._reachable = [p for p in self.parts()
                                   if _match(self.body, 0, p, fam.repeats, None, {}) is not None]
            if not may_become(whole, self._reachable if whole.startswith(self.body) else self.parts(),
                              fam.repeats):
                return True
        elif fresh and not fam.may_become(seen, whole):
            return True
        text = whole.decode("latin-1")
        if fresh and seen == self.seen and not fam.grows_new(seen, text):
            # (an object that can take a member of a name no value holds is live without a
            # search, one of ``live``'s proofs: a quick search from inside an object with a
            # required member still to come spends its states on other members' values first)
            q = fam._q(self.k, text)
            if q >= 0:
                auto = fam._auto
                danger = set(self.danger)
                for u in self.witnesses:
                    r = fam.walk(q, u)
                    if r >= 0 and auto.accepting[r] and fam.value_of((text + u).encode("latin-1")) not in danger:
                        return True
                lex = _lex_of(text)
                for u, _ in zip(fam._dive(q, lex, QUICK_DIVE, True), range(3)):
                    if fam.value_of((text + u).encode("latin-1")) not in danger:
                        self.witnesses.insert(0, u)
                        del self.witnesses[8:]
                        return True
        return fam.live((seen, text))

    def verdict(self, tb: bytes, body: bytes, start: int) -> bool:
        """Whether token ``tb``, allowed by the relaxed state, is allowed (the current item's
        bytes ``body`` before it, the token's own item bytes from ``start``)."""
        fam = self.fam
        whole = body + tb[start:]
        if body:  # (the item bytes scanned once, each token's bytes after them)
            end, at = fam.item_scan(body)
            if end < 0:
                end = item_scan(whole, at)[0]
        else:
            end = item_end(whole)
        if end < 0:
            return self.inside(self.seen, whole, self.goes_on())
        full, r = whole[:end], whole[end:]
        done = []
        while True:
            v = fam.value_of(full)
            if v in self.seen_set or v in done:
                return False
            done.append(v)
            count = self.n + len(done)
            end_ok, sep_ok, nb = self.after(r, min(count - 1, len(fam.items) - 1))
            if count >= fam.lo and end_ok:
                return True
            if (fam.hi is not None and count >= fam.hi) or not sep_ok:
                return False
            # (the next item's existence, asked per set of values: the few values a token can
            # complete share it; the next position's values are not searched for up front, as
            # the strings' are: an object's are too many texts apart)
            nxt = tuple(sorted(self.seen + tuple(done)))
            if not fam.live((nxt, "")):
                return False
            if nb is None:
                return True
            end = item_end(nb)
            if end < 0:
                return self.inside(nxt, nb, fam._goes_on(nxt))
            full, r = nb[:end], nb[end:]


def token_mask(fam, view, state: int, prefix: int, st, rest: int, other: int):
    """The mask of ``state`` (``prefix F rest | other``, ``F`` the rule of family ``fam``'s state
    ``st``), for items of any kind; ``None`` where the generic walk must decide (see the module
    docstring). Call with the automaton's lock held."""
    seen, text = st
    body = text.encode("latin-1")
    got = relaxed_of(fam, view, prefix, st, rest, other)
    if got is None:
        return None
    rel, other, extra = got
    m = _AnyMask(fam, view, state, seen, body, rest)
    relaxed = view.mask(rel)
    out = relaxed.copy()
    spell = []
    nexts = None  # (where a string may start next: the contents it may become)
    # (inside a string the item bytes may still become a dangerous value through: the contents
    # it may become there, and where its content starts)
    open_str = None
    if not body:
        cand = relaxed
        if m.goes_on():  # (a token that begins a string or number it cannot make a value read)
            nexts = [(NEXT, m.parts())]
    else:
        depth, in_str, esc, start = lex_context(body)
        complete = fam.item_scan(body)[0] >= 0  # (a string, object or array closed: any token leaves it)
        targets: list = []
        danger = m.parts()
        maybe = may_become(body, danger, fam.repeats, targets)
        if maybe and in_str and m.goes_on() and all(type(t) is bytes for t in targets):
            open_str = (body[start:], tuple(targets))
        if not m.goes_on() or esc or complete:
            cand = relaxed
        elif fam.grows_new(m.seen, text, depth):
            # an object begun that can always take a member no value holds (grows_new): after
            # any token that does not close it the item can still become a new value, so only
            # the tokens holding a closing brace are decided (from inside a string, those holding
            # a quote too: it must close first)
            cand = relaxed & view.tokens_holding(frozenset(b"}"))
            if in_str:
                cand &= view.tokens_holding(frozenset(b'"'))
        elif maybe:
            if not in_str:
                cand = relaxed
                if all(type(t) is tuple for t in targets):
                    nexts = targets
            elif any(t is ANY for t in targets):
                return None  # (a string that cannot narrow what the item becomes: the generic walk)
            else:
                cand = relaxed & view.special_bits
                content = string_content(body[start:])[0]
                spell = spelling(view, content, [t for t in targets if type(t) is bytes], relaxed)
        elif depth >= 1:
            # inside a container (in a string of it or not): a token leaves the item only by
            # its closing bracket; every other one ends inside it, where it cannot become a
            # dangerous value either (the answer only narrows as bytes are added)
            cand = relaxed & view.tokens_holding(frozenset(b"]}"))
        elif in_str:
            cand = relaxed & view.tokens_holding(frozenset(b'"'))  # (a string item: its closing quote)
        else:
            # a number or literal begun at the item's top: the tokens holding a byte that
            # cannot continue it
            cand = relaxed & view.tokens_holding(frozenset(range(256)) - _NUM - _LETTERS)
    eos = set(view.eos_token_ids)
    todo = _ids(cand).tolist()
    if spell:
        todo = sorted(set(todo) | set(spell))
    for t in todo:
        if t in eos:
            continue
        tb = view.token_bytes(t)
        if nexts is not None and _stays_new(tb[_skip(tb):] if not body else tb, nexts):
            continue
        if open_str is not None and _leaves_danger(open_str[0] + tb, open_str[1]):
            continue
        if not _decide(m, view, tb, body, other):
            out[t >> 5] &= ~np.uint32(1 << (t & 31))
    if extra is not None:
        out |= extra
    _set_eos(view, state, out)
    return out


def _stays_new(tb: bytes, targets: list) -> bool:
    """Whether token ``tb`` ends, where the item bytes end at ``targets`` (:func:`may_become`'s
    ``NEXT`` and ``NUMBER`` entries: a value or key may start, a number is open), inside a string
    or number that can become none of the values there (then the item can become no dangerous
    value: its relaxed verdict stands)."""
    for t in targets:
        if t[0] == NUMBER:
            if not all(x in _NUM for x in tb) or _number_may_be(t[1] + tb, t[2]):
                return False
            continue
        i = _skip(tb, _WS)
        if i >= len(tb):
            return False
        if tb[i] == 0x22:
            content, clean, closed = string_content(tb[i + 1:])
            if closed >= 0 or not clean or any(p[0] == "s" and p[2].startswith(content) for p in t[1]):
                return False
        elif tb[i] in _NUM:
            if not all(x in _NUM for x in tb[i:]) or \
                    any(p[0] == "n" and _number_may_be(tb[i:], p[2]) for p in t[1]):
                return False
        else:
            return False
    return True


def _leaves_danger(s: bytes, targets: tuple) -> bool:
    """Whether a token whose bytes end the open string's bytes ``s`` (after its opening quote)
    leaves that string open with a content that begins none of ``targets`` (the contents
    :func:`may_become` found the string may still become on the way to a dangerous value). Then
    the item can become no dangerous value: where the positions owed can still be filled
    (``goes_on``) the relaxed verdict stands, as :meth:`_AnyMask.inside` finds first, without
    matching the whole item again for each token (~0.7 ms a token for a 1,000-byte item; an
    unfinished escape at the item's end put every token the relaxed state allows through that:
    MaskBench JsonSchemaStore---micro-syntax, 0.9-2.5 s a mask). An escape still unfinished
    after the token is left out of the content, which only widens what it may become."""
    content, _, closed = string_content(s)
    return closed < 0 and not any(t.startswith(content) for t in targets)


def _decide(m: _AnyMask, view, tb: bytes, body: bytes, other: int) -> bool:
    if body:
        return m.verdict(tb, body, 0)
    i = _skip(tb)
    if i == len(tb) or (tb[i] in _STARTS and m.verdict(tb, b"", i)):
        return True
    if other == view.EMPTY:
        return False
    if m.other_state is None:
        m.other_state = -1 if view.is_empty(other) else view.state(other)
    return m.other_state >= 0 and view.walk_items(m.other_state, tb) >= 0
