"""The texts of an array's items, for :class:`~dotjson.jsonschema.unique.UniqueValues`: their values'
canonical texts (:func:`value_key`), and the searches over the item automaton (an automaton of
the item languages alone) for what continues an item: its live successors, a few completions
quickly (:meth:`CompletionSearch._dive`, :meth:`CompletionSearch._suffixes`), every value where
few exist (:meth:`CompletionSearch._all_completions`).
"""

from __future__ import annotations

import functools
import heapq
import json
from decimal import Decimal

import numpy as np

from dotjson.ir.families import not_a_token_walk
from dotjson.jsonschema.jsonbase import JSON_WS_BYTES
from dotjson.jsonschema.numarith import sci

#: texts the search for a completion of an item may visit before it gives up (LimitExceededError)
MAX_VALUE_SEARCH = 20_000
#: completions of an item remembered per state of the item automaton, and the states searched
#: for them (:meth:`UniqueValues._suffixes`)
N_SUFFIXES = 16
MAX_SUFFIX_STATES = 2_000
#: the order the depth-first search for completions (:meth:`UniqueValues._dive`) tries bytes in:
#: what closes a string, an object or an array first, then what ends a member or starts a short
#: value, then printable ASCII, a space, and last a backslash (an escape spells a character
#: another way: every spelling of a key is a state of its own), other bytes
_DIVE_FIRST = b'}]",:0a'
_DIVE_RANK = tuple(_DIVE_FIRST.index(b) if b in _DIVE_FIRST else 8 + b if 0x21 <= b < 0x7F and b != 0x5C
                   else 200 if b == 0x20 else 201 if b == 0x5C else 256 + b for b in range(256))
_DIVE_RANK_STR = tuple(-1 if b == 0x22 else r for b, r in enumerate(_DIVE_RANK))
#: brackets the depth-first search may open below where it starts (at most), and the states it
#: may enter in all
MAX_DIVE_DEPTH = 5
MAX_DIVE_STATES = 4_000
#: the states a first, quick search for one new completion may enter (a witness that an item
#: can still become a new value, before the searches above)
QUICK_DIVE = 64


def canonical_text(v) -> str:
    """A text equal for equal JSON values (JSON Schema equality: ``1`` = ``1.0`` = ``10e-1``,
    ``true`` ≠ ``1``, object key order irrelevant), different for different ones; ``v`` as
    :func:`json.loads` gives it with ``parse_float`` and ``parse_int`` :class:`~decimal.Decimal`.
    Numbers are never expanded (``1e999999999`` is a short key)."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, (_Number, Decimal)):
        neg, sig, E = sci(str(v))
        return "#0" if sig == "0" else f"#{'-' if neg else ''}{sig}e{E}"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ",".join(canonical_text(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k) + ":" + canonical_text(x) for k, x in sorted(v.items())) + "}"


@functools.lru_cache(maxsize=4096)
def value_key(raw: str) -> str:
    """The :func:`canonical_text` of the JSON text ``raw`` (bytes as a latin-1 string)."""
    text = raw.encode("latin-1").decode("utf-8")
    return canonical_text(json.loads(text, parse_float=_Number, parse_int=_Number))


class _Number(str):
    """A JSON number's text as :func:`json.loads` reads it for :func:`value_key` (a
    ``Decimal`` refuses exponents past 10^18; :func:`~.numarith.sci` reads any)."""


_JSON_WS = frozenset(JSON_WS_BYTES)


def _zero_tail(t: str) -> bool:
    """Whether appending a zero to the text ``t`` keeps its value: it ends inside a number's
    fraction (digits after a point, no exponent), or in an exponent whose digits are all zeros."""
    i = len(t)
    while i > 0 and t[i - 1] in "0123456789":
        i -= 1
    if i == len(t) or i == 0:
        return False
    c = t[i - 1]
    if c == ".":
        return i >= 2 and t[i - 2] in "0123456789"
    return (c in "eE" or (c in "+-" and i >= 2 and t[i - 2] in "eE")) and set(t[i:]) == {"0"}


def _lex(state: int, b: int) -> int:
    """Where byte ``b`` leaves a JSON text: 0 between tokens, 1 in a string, 2 after a
    backslash in a string."""
    if state == 0:
        return 1 if b == 0x22 else 0
    if state == 1:
        return 2 if b == 0x5C else 0 if b == 0x22 else 1
    return 1


def _lex_of(text: str) -> int:
    """Where ``text`` (bytes as latin-1) leaves a JSON text that starts between tokens
    (:func:`_lex`)."""
    lex = 0
    for ch in text:
        lex = _lex(lex, ord(ch))
    return lex


class CompletionSearch:
    """The searches over an array's item automaton, a part of
    :class:`~dotjson.jsonschema.unique.UniqueValues` (which holds the automaton ``_auto``, the
    families inside its items ``_item_fams``, the caches these fill, and ``_q``)."""

    def walk(self, q: int, text: str) -> int:
        """The item automaton's state after ``text`` (bytes as latin-1) from its state ``q``
        (negative: dead); the items of an array of distinct values inside the item stepped by
        that array's family, not a rule per byte (:func:`~dotjson.automaton.item_walk.walk_items`)."""
        from dotjson.automaton.item_walk import walk_items

        auto = self._auto
        with not_a_token_walk(), auto.lock:  # (the item automaton reads: see _successors)
            return walk_items(auto, self._item_fams, self._item_view, q, text.encode("latin-1"),
                              self._item_rule_fam)

    def _successors(self, q: int):
        """``(byte, state)`` for every live successor of the item automaton's state ``q``
        (remembered: the searches ask the same states again and again)."""
        hit = self._succ.get(q)
        if hit is None:
            auto = self._auto
            # (the item automaton reads texts: a uniqueItems array inside the items, reached by a
            # search inside a token mask, counts nothing against that mask's walk)
            with not_a_token_walk():
                auto.fill_row(q)
            row = np.asarray(auto.trans[q])
            bs = np.flatnonzero(row >= 0)
            hit = list(zip(bs.tolist(), row[bs].tolist()))
            if len(self._succ) > 200_000:
                self._succ.clear()
            self._succ[q] = hit
        return hit

    def _jumps(self, r: int):
        """Where state ``r`` of the item automaton is inside an item begun of an array of
        distinct values nested in this array's items (a family that steps its own items:
        :mod:`dotjson.automaton.item_walk`): ``[(text, state)]``, a few texts that complete that
        inner item to a value new there (:meth:`completions`, its family's) and the states they
        lead to, stepped by that family; ``None`` elsewhere, or where none was found. A search
        that went byte by byte there built the inner family's body at every byte (a rule per
        successor byte, ~1.4 ms each): ~100 a mask inside an inner array of a root array of
        distinct objects. Remembered per state."""
        hit = self._jump.get(r, False)
        if hit is not False:
            return hit
        from dotjson.automaton.item_walk import family_at

        auto = self._auto
        with auto.lock:
            at = family_at(auto, auto.term_of(r), self._item_fams, self._item_rule_fam)
        got = None
        if at is not None and hasattr(at[0], "completions"):
            with not_a_token_walk():
                texts = at[0].completions(at[1])
            got = [(u, r2) for u, r2 in ((u, self.walk(r, u)) for u in texts or ()) if r2 >= 0] or None
        if len(self._jump) > 100_000:
            self._jump.clear()
        self._jump[r] = got
        return got

    def completions(self, name: str, n: int = 3):
        """Up to ``n`` texts that complete the item begun in this family's state ``name`` to a
        value none of the items read holds, from a quick depth-first search (:meth:`_dive`);
        ``None`` where no item is begun, or where it could end where it is (a number: the byte
        after it decides, the automaton walks it). For a search in an outer array's items that
        meets this array inside one (:meth:`_jumps`)."""
        seen, text = self._state(name)
        if isinstance(seen, str) or not text:
            return None
        q = self._q(self._pos(seen), text)
        if q < 0 or self._auto.accepting[q]:
            return None
        lex = _lex_of(text)
        out = []
        for u, _ in zip(self._dive(q, lex, QUICK_DIVE, True), range(4 * n)):
            if value_key(text + u) not in seen:
                out.append(u)
                if len(out) == n:
                    break
        return out

    def _ranked(self, q: int, in_string: bool = False):
        """:meth:`_successors` in :data:`_DIVE_RANK` order, a quote first inside a string (its
        content is done soonest by closing it: a ``}`` there is a character); remembered."""
        hit = self._rank.get((q, in_string))
        if hit is None:
            rank = _DIVE_RANK_STR if in_string else _DIVE_RANK
            hit = sorted(self._successors(q), key=lambda br: rank[br[0]])
            if len(self._rank) > 200_000:
                self._rank.clear()
            self._rank[(q, in_string)] = hit
        return hit

    #: the bytes each search for completions tries, in turn: enough to close any JSON value and
    #: to make it differ from another (a member or item more, another digit or character); then
    #: printable ASCII (required keys, patterns); then every byte
    _PASSES = (frozenset(b'}]",:0a'), frozenset(range(0x21, 0x7F)), None)

    def _suffixes(self, q: int, text: str = ""):
        """Texts that complete an item from state ``q`` of the item automaton (reached by
        ``text``), shortest first, each state expanded once (over the bytes of each of
        :data:`_PASSES` in turn, and a depth-first search, :meth:`_dive`; at most
        :data:`N_SUFFIXES`): many different completions quickly, not all of them. Made as they
        are asked for, and remembered per state."""
        hit = self._sufs.get(q)
        if hit is None:
            if len(self._sufs) > 100_000:
                self._sufs.clear()
            lex = _lex_of(text)
            hit = self._sufs[q] = ([], self._search_suffixes(q, lex))
        done, more = hit
        yield from done
        k = len(done)
        while True:
            if k < len(done):  # (another reader extended the list)
                yield done[k]
                k += 1
                continue
            u = next(more, None)
            if u is None:
                return
            if u not in done:
                done.append(u)
                k += 1
                yield u

    def _search_suffixes(self, q: int, lex: int):
        auto = self._auto
        n = 0
        if auto.accepting[q]:
            n += 1
            yield ""
        for k, only in enumerate(self._PASSES):
            if k == 1:
                # the shortest completions over a few bytes were not enough: before the wider
                # best-first passes (which visit every short text of the free values beside a
                # required member, JsonSchemaStore---tson's items, and meet the budget first),
                # a depth-first search that closes what it opens
                for u in self._dive(q, lex):
                    n += 1
                    if n > N_SUFFIXES:
                        return
                    yield u
            # best first: the texts that leave fewest brackets open (each needs a byte to close)
            seen = {q}
            todo = [(0, 0, q, "", 0)]
            k = 0
            while todo and len(seen) <= MAX_SUFFIX_STATES:
                _, _, s, t, depth = heapq.heappop(todo)
                for b, r in self._successors(s):
                    if only is not None and b not in only:
                        continue
                    u = t + chr(b)
                    if auto.accepting[r]:
                        n += 1
                        if n > N_SUFFIXES:
                            return
                        yield u
                    if r not in seen:
                        seen.add(r)
                        d = depth + (b in b"[{") - (b in b"]}")
                        k += 1
                        heapq.heappush(todo, (len(u) + max(d, 0), k, r, u, d))

    def _dive(self, q: int, lex: int, budget: int = MAX_DIVE_STATES, ends: bool = False):
        """Completions of an item from state ``q`` of the item automaton (``lex``: where its text
        leaves a JSON text, :func:`_lex`), depth first, its successors in ``_DIVE_RANK`` order
        (close, end a member, a short value, then any byte), never whitespace between tokens (no
        JSON text needs it), and with brackets opened at most ``cap`` levels below ``q``'s, for
        ``cap`` = 1, 2, ... :data:`MAX_DIVE_DEPTH` in turn (each state entered once per ``cap``;
        :data:`MAX_DIVE_STATES` in all). Every successor of a state is live, so a text that
        closes what it opens reaches an accepting state in about as many states as it has bytes,
        where a search by length visits every shorter text first; the cap keeps the search out
        of the free values beside the members it needs (JsonSchemaStore---tson's items: a
        required array of objects with required members, ~45 bytes past free members)."""
        auto = self._auto
        fams = () if self.strings else self._item_fams  # (a string holds no array)
        for cap in range(1, MAX_DIVE_DEPTH + 1):

            def succ(r, lx, depth):
                if fams:  # (inside a nested family's item: its completions, not its bytes)
                    jumps = self._jumps(r)
                    if jumps is not None:
                        return iter(jumps)
                ranked = self._ranked(r, lx == 1)
                if lx:
                    return iter(ranked)
                return iter([(b, r2) for b, r2 in ranked if not (b in _JSON_WS or (b in b"[{" and depth >= cap))])

            seen = {q}
            stack = [("", lex, 0, succ(q, lex, 0))]
            while stack and budget > 0:
                t, lx, depth, todo = stack[-1]
                for b, r in todo:  # (a byte, or a text: a nested family's item completed)
                    if r in seen:
                        if ends and auto.accepting[r]:
                            # (``ends``: every text into an accepting state, not only the first
                            # one: ``[1]`` and ``[1,0]`` end in one state with different values)
                            budget -= 1
                            yield t + (chr(b) if type(b) is int else b)
                        continue
                    seen.add(r)
                    budget -= 1
                    if type(b) is int:
                        u = t + chr(b)
                        d = depth + ((b in b"[{") - (b in b"]}") if lx == 0 else 0)
                        lx2 = _lex(lx, b)
                    else:
                        u, d, lx2 = t + b, depth, lx
                        for ch in b:
                            c = ord(ch)
                            if lx2 == 0:
                                d += (c in b"[{") - (c in b"]}")
                            lx2 = _lex(lx2, c)
                    if auto.accepting[r]:
                        yield u
                    stack.append((u, lx2, d, succ(r, lx2, d)))
                    break
                else:
                    stack.pop()

    def _all_completions(self, q: int, text: str):
        """Every value of an item completed from ``q`` (reached by ``text``), as texts, shortest
        first (``None`` once the search passes :data:`MAX_VALUE_SEARCH` texts: the language may
        be infinite). Whitespace between JSON tokens is skipped: it changes no value, and the
        item languages are JSON texts, where it is optional."""
        auto = self._auto
        if auto.accepting[q]:
            yield text
        lex = _lex_of(text)
        order = [(q, text, lex)]
        for s, t, lx in order:
            if len(order) > MAX_VALUE_SEARCH:
                yield None
                return
            succ = self._successors(s)
            # (a zero that keeps the number's value and its state, where no other digit may
            # follow: its completions are the values of those without it, 1.0 = 1.00 = 1.000)
            zeros = lx == 0 and not any(0x31 <= b <= 0x39 for b, _ in succ) and _zero_tail(t)
            for b, r in succ:
                if zeros and b == 0x30 and r == s:
                    continue
                if lx == 0 and b in _JSON_WS:
                    continue
                u = t + chr(b)
                if auto.accepting[r]:
                    yield u
                order.append((r, u, _lex(lx, b)))
