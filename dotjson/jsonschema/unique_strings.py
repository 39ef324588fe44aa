"""Token masks inside arrays of distinct strings (``uniqueItems`` over string items, issue 29).

:class:`~dotjson.jsonschema.unique.UniqueValues` reads an array of distinct values a byte at a
time: a state is the values read and the current item's bytes, so the generic mask walk makes a
rule per token prefix an item may hold (~40,000 from inside a free string on Llama 3). When
every item is a JSON string, a state's mask is computed here instead, from two facts:

* **A relaxed state.** The same position with the distinctness and the item counts dropped
  (the family's *relaxed* rules: ``("*", k)`` is item ``k`` then ``("+", k)``, the array going
  on with any items or ending) allows a superset of the tokens. It is an ordinary state of the
  automaton, and inside a free string it is the same state at every position of every array
  with the same item schema and what follows it: its mask is memoized (and its string head
  shared by the process, :mod:`dotjson.automaton.heads`).
* **Few tokens can tell the difference.** A token that ends inside the current item, after
  content that is no prefix of any *dangerous* value (a value read, or one of the few values a
  later position owed by ``minItems`` may have to take), can be completed to a new value, and
  the array stays feasible: the relaxed verdict is exact. Only the tokens that hold a quote or a
  backslash (the special tokens the relaxed state allows: ~1,200 on Llama 3), and the plain
  tokens that spell the next bytes of a dangerous value (found in the plain trie, one per
  length per value), are decided one by one: each item the token completes against the values
  read, the counts owed (``minItems``/``maxItems``) for what the token does after it (ends the
  array, starts the next item), and the next item's content likewise.

Verdicts are kept across the states that share what they depend on (:class:`_Verdicts`). The
family also steps a token inside an item itself (:meth:`UniqueValues.token_step`). Nothing here
is JSON-Schema-specific beyond JSON strings; the family answers ``live``, ``value_of`` and the
dangerous values (:meth:`UniqueValues.danger`, :meth:`UniqueValues.next_danger`).
"""

from __future__ import annotations

import json

import numpy as np

from dotjson.jsonschema.jsonbase import JSON_WS_BYTES
from dotjson.masks import bit_ids

__all__ = ["string_content", "token_mask"]

_WS = frozenset(JSON_WS_BYTES)
_SEP = _WS | {0x2C}
_SHORT = {0x22: b'"', 0x5C: b"\\", 0x2F: b"/", 0x62: b"\b", 0x66: b"\f", 0x6E: b"\n", 0x72: b"\r",
          0x74: b"\t"}
_HEX = frozenset(b"0123456789abcdefABCDEF")


def string_content(body: bytes) -> tuple[bytes, bool, int]:
    """``(content, clean, closed)`` of the bytes ``body`` after a JSON string's opening quote:
    the content decoded so far as UTF-8 (escapes resolved; a surrogate pair as one character),
    whether it ends outside an escape (``False``: inside one, or after a high surrogate's escape
    whose pair may follow), and the index of the closing quote in ``body`` (``-1``: none yet).
    ``content`` stops at the closing quote; an unfinished escape is left out of it."""
    out = bytearray()
    i, n = 0, len(body)
    high = -1  # a high surrogate's escape just read (its pair may follow)
    while i < n:
        b = body[i]
        if b == 0x22:
            if high >= 0:
                out += chr(high).encode("utf-8", "surrogatepass")
            return bytes(out), True, i
        if b != 0x5C:
            if high >= 0:
                out += chr(high).encode("utf-8", "surrogatepass")
                high = -1
            out.append(b)
            i += 1
            continue
        if i + 1 >= n:
            return bytes(out), False, -1
        e = body[i + 1]
        if e != 0x75:
            if high >= 0:
                out += chr(high).encode("utf-8", "surrogatepass")
                high = -1
            out += _SHORT.get(e, bytes([e]))
            i += 2
            continue
        hx = body[i + 2 : i + 6]
        if len(hx) < 4 or not all(c in _HEX for c in hx):
            return bytes(out), False, -1
        cp = int(hx, 16)
        i += 6
        if high >= 0 and 0xDC00 <= cp < 0xE000:
            out += chr(0x10000 + ((high - 0xD800) << 10) + (cp - 0xDC00)).encode("utf-8")
            high = -1
            continue
        if high >= 0:
            out += chr(high).encode("utf-8", "surrogatepass")
            high = -1
        if 0xD800 <= cp < 0xDC00:
            high = cp
        else:
            out += chr(cp).encode("utf-8", "surrogatepass")
    return bytes(out), high < 0, -1


def _prefixes(values) -> frozenset:
    """Every prefix of every byte string of ``values`` (the empty one included)."""
    return frozenset(d[:i] for d in values for i in range(len(d) + 1))


def _ids(bits: np.ndarray) -> np.ndarray:
    return bit_ids(bits)


def _split(whole: bytes):
    """``(content, end)`` of an item's bytes ``whole`` (its opening quote first): its content so
    far and the index just past its closing quote (``-1``: not closed)."""
    if 0x5C not in whole:
        c = whole.find(b'"', 1)
        return (whole[1:], -1) if c < 0 else (whole[1:c], c + 1)
    content, _, c = string_content(whole[1:])
    return content, (c + 2 if c >= 0 else -1)


#: a value no item has: the stand-in for "a new value outside every small language" (see
#: :meth:`_Mask.fresh_live`)
FRESH = "<fresh>"


class ArrayMask:
    """What one state's mask knows of the array around the item (shared with
    :mod:`.unique_any`): the family ``fam`` at the values ``seen``, followed by the term
    ``rest``; ``state`` the automaton state of it all."""

    def __init__(self, fam, view, state: int, seen: tuple, rest: int):
        self.fam, self.view, self.state, self.seen, self.rest = fam, view, state, seen, rest
        self.k = fam._pos(seen)
        self.n = len(seen)
        self._rest_state = None
        self._sep_states: dict = {}
        self.other_state = None
        self._r: dict = {}

    def _state_of(self, t: int) -> int:
        return -1 if self.view.is_empty(t) else self.view.state(t)

    def after(self, r: bytes, k: int):
        """``(end ok, separator ok, next item's bytes)`` for bytes ``r`` after a complete item at
        position ``k``: ``r`` continues what follows the array (when it may end), or the
        separator and the relaxed next item (its bytes, ``None`` if it is not begun)."""
        hit = self._r.get((r, k))
        if hit is None:
            v = self.view
            if self._rest_state is None:
                self._rest_state = self._state_of(self.rest)
            end_ok = not r or (self._rest_state >= 0 and v.walk_items(self._rest_state, r) >= 0)
            if r:
                sep = self._sep_states.get(k)
                if sep is None:
                    sep = self._sep_states[k] = self._state_of(
                        v.seq(v.ref(self.fam.name(("+s", k))), self.rest))
                sep_ok = sep >= 0 and v.walk_items(sep, r) >= 0
            else:
                sep_ok = True
            hit = self._r[(r, k)] = (end_ok, sep_ok, r[_skip(r):] or None)
        return hit


class _Mask(ArrayMask):
    """One state's mask (see :func:`token_mask`): the family ``fam`` at state ``(seen, text)``,
    followed by the term ``rest``; ``state`` the automaton state of it all."""

    def __init__(self, fam, view, state: int, seen: tuple, text: str, rest: int):
        super().__init__(fam, view, state, seen, rest)
        self.seen_set = frozenset(value_contents(seen))
        self.danger = fam.danger(seen)
        self.danger_prefixes = _prefixes(self.danger)
        # the next position's values, where they are few: the one case where the next item's
        # fate depends on which new value this one takes
        self.sep_danger = frozenset(fam.next_danger(seen))
        self.body = text.encode("latin-1")
        self.content, self.done = _split(self.body) if self.body else (b"", -1)
        self.done = self.done >= 0
        self._fresh = None
        #: the tokens whose verdict compares a later item of theirs with the current item's
        #: content (they are decided again at every position that shares a kept mask)
        self.volatile: list = []

    def fresh_live(self) -> bool:
        """Whether the array can go on after the current item takes a value outside every
        dangerous value and the next position's few: the same for every such value."""
        if self._fresh is None:
            self._fresh = self.fam.live((tuple(sorted(self.seen + (FRESH,))), ""))
        return self._fresh

    def verdict(self, tb: bytes, body: bytes, start: int) -> bool:
        """Whether token ``tb``, allowed by the relaxed state, is allowed: the current item's
        bytes were ``body`` before it, and the token's own item bytes start at ``start``. The
        items the token completes are checked in turn (a value new, the counts, the array able
        to go on), then the one it ends in (its content no dangerous value's prefix, or the
        family's own answer)."""
        fam = self.fam
        if self.done and start == 0:
            full, content, r = body, self.content, tb  # (the item was complete before the token)
        else:
            whole = body + tb[start:]
            content, end = _split(whole)
            if end < 0:
                if content not in self.danger_prefixes:
                    return True
                return fam.live((self.seen, whole.decode("latin-1")))
            full, r = whole[:end], tb[start + end - len(body):]
        done = []  # (content, bytes) of the items the token completes
        if r[_skip(r):][:1] == b'"':
            self.volatile.append(tb)  # (its next item is compared with this one's content)
        while True:
            if content in self.seen_set or any(content == c for c, _ in done):
                return False
            done.append((content, full))
            count = self.n + len(done)
            end_ok, sep_ok, nb = self.after(r, min(count - 1, len(fam.items) - 1))
            if count >= fam.lo and end_ok:
                return True
            if (fam.hi is not None and count >= fam.hi) or not sep_ok:
                return False
            nxt = None
            if len(done) == 1 and content not in self.sep_danger and content not in self.danger:
                if not self.fresh_live():
                    return False
            else:
                nxt = tuple(sorted(self.seen + tuple(fam.value_of(f) for _, f in done)))
                if not fam.live((nxt, "")):
                    return False
            if nb is None:
                return True
            if nb[:1] != b'"':
                return False
            content, end = _split(nb)
            if end < 0:
                if content not in self.danger_prefixes and \
                        not any(c.startswith(content) for c, _ in done):
                    return True
                if nxt is None:
                    nxt = tuple(sorted(self.seen + tuple(fam.value_of(f) for _, f in done)))
                return fam.live((nxt, nb.decode("latin-1")))
            full, r = nb[:end], nb[end:]


def relaxed_of(fam, view, prefix: int, st, rest: int, other: int):
    """``(relaxed state, other, extra)`` for a family state's mask (:func:`token_mask`, and
    :mod:`.unique_any`'s): the relaxed state at the same position (the item's bytes walked from
    the relaxed item rule), the branch beside it still to walk per token (``EMPTY`` once the item
    has begun) and the mask to OR in for it then (``None``: none); ``None`` where the family does
    not mask the state (a prefix other than whitespace, a dead item)."""
    seen, text = st
    body = text.encode("latin-1")
    if prefix != view.EPS and (body or not view.only_bytes(prefix, _SEP)):
        return None
    k = fam._pos(seen)
    if fam._q(k, text) < 0:
        return None
    return relaxed_walk(view, prefix, fam.name(("*", k)), rest, other, body)


def relaxed_walk(view, prefix: int, rel_name: str, rest: int, other: int, body: bytes):
    """``(relaxed state, other, extra)`` of :func:`relaxed_of` once the family has its relaxed
    item rule ``rel_name``: ``prefix``, that rule, then ``rest``, walked over the item's bytes
    ``body`` so far (the branch ``other`` then masked apart), or, before the item, beside
    ``other``; ``None`` where that state is dead."""
    rel_term = view.seq(prefix, view.seq(view.ref(rel_name), rest))
    extra = None
    if body:
        if view.is_empty(rel_term):
            return None
        rel = view.walk_items(view.state(rel_term), body)  # (an array of distinct values inside: by item)
        if other != view.EMPTY:
            # (an item begun beside another branch, an open object's extra member beside a
            # declared one: that branch's tokens are its own mask's)
            extra = None if view.is_empty(other) else view.mask(view.state(other))
            other = view.EMPTY
    else:
        rel_term = view.alt(rel_term, other)
        rel = -1 if view.is_empty(rel_term) else view.state(rel_term)
    return None if rel < 0 else (rel, other, extra)


def token_mask(fam, view, state: int, prefix: int, st, rest: int, other: int):
    """The mask of ``state``, whose term is ``prefix F rest | other`` with ``F`` the rule of
    family ``fam``'s state ``st = (seen, text)``, ``prefix`` whitespace (``EPS`` once the item has
    begun) and ``other`` a term without ``F`` (``EMPTY``: none), or ``None`` where this does not
    apply (see the module docstring). Call with the automaton's lock held."""
    seen, text = st
    body = text.encode("latin-1")
    got = relaxed_of(fam, view, prefix, st, rest, other)
    if got is None:
        return None
    rel, other, extra = got
    m = _Mask(fam, view, state, seen, text, rest)
    # every token is decided after the item, and inside an escape whose item content so far
    # begins a dangerous value; inside another escape only the special tokens (what follows the
    # escape begins no dangerous value either), and nothing kept (a token's part of the content
    # is not its own there)
    dirty = bool(body) and not m.done and not string_content(body[1:])[1]
    every = m.done or (dirty and (m.content in m.danger_prefixes or _begins(m.content, m.sep_danger)))
    # A state's verdicts depend on the values read only through the counts, the array's going on
    # after a new value, and the contents of the items its tokens hold: verdicts are kept per
    # (inside an item or before it, continuation, position, counts, going on), as bitsets of the
    # tokens decided and refused, and a state that shares them decides again only the tokens
    # whose verdict may depend on the values read: those whose item content begins a dangerous
    # value there or did where they were decided (found by the token's own part of the
    # content), and those that reach a later item ("volatile"). (Not the relaxed state: inside a
    # bounded string it differs at every length.)
    relaxed = view.mask(rel)
    out = relaxed.copy()
    cand = relaxed if every else relaxed & view.special_bits
    eos = set(view.eos_token_ids)
    entry = None
    if not every and not dirty:
        n1 = m.n + 1
        key = (bool(body), rest, other, m.k, n1 >= fam.lo, fam.hi is None or n1 < fam.hi, m.fresh_live())
        kept = view.cache_for(fam)  # (the index's: token ids and terms are its own)
        entry = kept.get(key)
        if entry is None:
            if len(kept) > 256:
                kept.clear()
            entry = kept[key] = _Verdicts(view.n_words)
        now = _parts(m.content, m.danger_prefixes | _prefixes(m.sep_danger))
        again = dict(entry.volatile)
        for p in (entry.by_part.keys() & (now | entry.then)):
            again.update(entry.by_part[p])
        for t in _spelling(m, view, relaxed):
            again[t] = view.token_bytes(t)
        out &= ~(entry.refused & cand)
        todo = _ids(cand & ~entry.decided).tolist()
    else:
        again, todo = {}, _ids(cand).tolist()
    for t in todo:
        if t in eos:
            continue
        tb = view.token_bytes(t)
        n_vol = len(m.volatile)
        ok = _decide(m, view, tb, body, other)
        if entry is not None:
            entry.add(t, tb, ok, len(m.volatile) > n_vol, body)
        if not ok:
            out[t >> 5] &= ~np.uint32(1 << (t & 31))
    for t, tb in again.items():
        if t in eos or not relaxed[t >> 5] >> np.uint32(t & 31) & 1:
            continue  # (the relaxed state refuses it here)
        if _decide(m, view, tb, body, other):
            out[t >> 5] |= np.uint32(1 << (t & 31))
        else:
            out[t >> 5] &= ~np.uint32(1 << (t & 31))
    if entry is not None:
        entry.then |= _parts(m.content, m.danger_prefixes | _prefixes(m.sep_danger))
    if extra is not None:
        out |= extra
    _set_eos(view, state, out)
    return out


class _Verdicts:
    """Verdicts kept for the states that share a key (see :func:`token_mask`): the tokens decided
    and those refused (bitsets), the ones to decide again at each state (``volatile``: they reach
    a later item; ``by_part``: by their own part of an item's content), and the parts that were
    dangerous where they were decided (``then``)."""

    def __init__(self, n_words: int):
        self.decided = np.zeros(n_words, dtype=np.uint32)
        self.refused = np.zeros(n_words, dtype=np.uint32)
        self.volatile: dict = {}
        self.by_part: dict = {}
        self.then: set = set()

    def add(self, t: int, tb: bytes, ok: bool, volatile: bool, body: bytes) -> None:
        bit = np.uint32(1 << (t & 31))
        self.decided[t >> 5] |= bit
        if not ok:
            self.refused[t >> 5] |= bit
        if volatile:
            self.volatile[t] = tb
            return
        if body:
            part = string_content(tb)[0]
        else:
            i = _skip(tb)
            if i >= len(tb) or tb[i] != 0x22:
                return
            part = _split(tb[i:])[0]
        self.by_part.setdefault(part, {})[t] = tb


def _begins(content: bytes, values) -> bool:
    return any(d.startswith(content) for d in values)


def _parts(content: bytes, prefixes) -> set:
    """The continuations of ``content`` that make a member of ``prefixes`` (what a token's own
    part of an item's content must be for the item to begin a dangerous value)."""
    n = len(content)
    return {x[n:] for x in prefixes if x.startswith(content)}


def _spelling(m: "_Mask", view, out: np.ndarray) -> list:
    """The plain tokens allowed in ``out`` that spell the next bytes of a dangerous value the
    current item's content begins (inside an item)."""
    if not m.body or m.done:
        return []
    return spelling(view, m.content, m.danger, out)


def spelling(view, content: bytes, targets, allowed: np.ndarray) -> list:
    """The plain tokens allowed in ``allowed`` that spell the next bytes of a string whose
    content so far is ``content`` towards one of the contents ``targets``."""
    got = []
    for d in set(targets):
        if d.startswith(content):
            rem = d[len(content):]
            for L in range(1, min(len(rem), view.max_token_len) + 1):
                t = view.plain_token_id(rem[:L])
                if t >= 0 and allowed[t >> 5] >> np.uint32(t & 31) & 1:
                    got.append(t)
    return got


def _skip(tb: bytes, skipped: frozenset = _SEP) -> int:
    """The index of the first byte of ``tb`` not in ``skipped`` (whitespace and commas)."""
    i = 0
    while i < len(tb) and tb[i] in skipped:
        i += 1
    return i


def _decide(m: _Mask, view, tb: bytes, body: bytes, other: int) -> bool:
    """Token ``tb``'s verdict at ``m``'s state (the relaxed state allowing it): from inside the
    item (``body``), or before it (whitespace or a separator, then the item's opening quote, or
    the ``other`` branch's walk)."""
    if body:
        return m.verdict(tb, body, 0)
    i = _skip(tb)
    if i == len(tb) or (tb[i] == 0x22 and m.verdict(tb, tb[i:i + 1], i + 1)):
        return True
    if other == view.EMPTY:
        return False
    if m.other_state is None:
        m.other_state = -1 if view.is_empty(other) else view.state(other)
    return m.other_state >= 0 and view.walk_items(m.other_state, tb) >= 0


def _set_eos(view, state: int, out: np.ndarray) -> None:
    """EOS allowed in ``out`` exactly where ``state`` accepts (the relaxed state's may differ)."""
    for t in view.eos_token_ids:
        if t < out.shape[0] * 32:
            out[t >> 5] &= ~np.uint32(1 << (t & 31))
    if view.accepting(state):
        view.set_eos(out)


def value_contents(values) -> tuple:
    """The UTF-8 contents of the string values among canonical texts ``values``."""
    return tuple(json.loads(v).encode("utf-8", "surrogatepass") for v in values if v.startswith('"'))
