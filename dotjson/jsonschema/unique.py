"""``uniqueItems`` over values of any kind: arrays of distinct values, as a rule family (issue 29).

An array whose items must differ is not a context-free language: the state after some items is
the set of values read. :class:`UniqueValues` reads such an array a byte at a time (a state is the
canonical texts of the values read and the current item's bytes), deciding from an automaton of
the item languages alone which bytes continue an item and whether a complete one is new. Token
masks inside the array are the family's own: :mod:`.unique_strings` (strings),
:mod:`.unique_any` (objects, arrays, mixed values). Numbers alone: :mod:`.unique_numbers`
(re-exported here).
"""

from __future__ import annotations

import json

from dotjson import ir
from dotjson.ir import Ref, seq
from dotjson.ir.families import not_a_token_walk, register_family, token_walk_id
from dotjson.jsonschema.item_rules import ItemRules
from dotjson.jsonschema.jsonbase import JSON_WS_BYTES
from dotjson.jsonschema.statefamily import _Family
from dotjson.jsonschema.unique_numbers import UniqueNumbers, item_params  # noqa: F401 (re-exported)
from dotjson.jsonschema.unique_search import (  # noqa: F401 (canonical_text re-exported)
    MAX_VALUE_SEARCH, QUICK_DIVE, CompletionSearch, _lex_of, canonical_text, value_key)
from dotjson.jsonschema.unique_strings import FRESH, string_content, token_mask, value_contents

__all__ = ["UniqueNumbers", "UniqueValues", "canonical_text", "item_params"]

# ----------------------------------------------------------------------------- any values
#: rules (item texts) one token mask may make. Reading a document makes one rule per byte of an
#: item, with no limit (a byte at a time: ``index.check``, ``accepts``, ``next_state``); a mask's
#: walk makes one per token prefix an item may hold, at ~2-4 ms each (a body of up to ~100
#: alternatives, each successor asked whether it can still differ): from inside a free string or
#: key that is nearly every token (~40,000 rules, minutes, on Llama 3); inside a narrow one (a
#: pattern such as ``^\d+(\.\d+)?x$``, JsonSchemaStore---drupal-breakpoints) ~110; at the start
#: of an item of any value (``{"uniqueItems": true}`` after ``[``, every token that starts a
#: string or a number) ~460; before the array a few (``[{"``). Past this many in one mask it is
#: refused (``LimitExceededError``: 1.2-1.4 s from inside the first item of JsonSchemaStore---tson
#: or asmdef, where 256 texts of one length took 3.2-4.0 s before); the rules it made stay (exact,
#: reused), nothing else is kept of it, and the index stays usable
MAX_MASK_ITEM_TEXTS = 512
#: :meth:`UniqueValues._declared_key`: the transitions its walk over a key's live bytes may take,
#: and the longest key it reads
MEMBER_KEY_STEPS = 4_096
MEMBER_KEY_LEN = 64
#: Key texts :meth:`UniqueValues._fresh_key` tries, the first no dangerous value holds (letters
#: and digits: spelled as themselves in every canonical text)
FRESH_KEYS = ("zQ7vX", "qJ3wK", "xZ9kP", "kV2mQ", "jX8zW", "wQ5jZ", "vK4xJ", "pZ6qV")


@register_family
class UniqueValues(CompletionSearch, _Family):
    """Arrays of ``lo`` to ``hi`` distinct JSON values, from the first item to the last (the
    brackets are the compiler's), the ``k``-th item from ``items[min(k, len(items) - 1)]``
    (``prefixItems`` positions, then the items after them; ∅ when the array is closed there).

    A state is ``(values, text)``: the canonical texts of the items read (:func:`value_key`:
    ``"\\u0061"`` = ``"a"``, ``1`` = ``1.0``, objects in any key order) and the bytes of the
    current item so far. The rules are over **bytes** (a byte 0x80-0xFF is the lone surrogate
    U+DC80-U+DCFF of a ``Lit``, as for :mod:`dotjson.embed`'s markers): a state has at most 256
    successors, where one per character would be a body of ~1.1M alternatives. Which bytes
    continue an item, and when it is complete, is read from an automaton of the item languages
    alone (the same grammar's rules, its own store); a complete item may end unless its value is
    one read before, and the array then goes on with the values plus its own. Exact; its cost
    is a new rule per byte of an item (a mask inside an item is fresh at every position)."""

    kind = "unique_values"
    why_no_text = "arrays of distinct values (uniqueItems) are not a context-free language"

    def __init__(self, prefix: str, lo: int, hi, items: list, sep: ir.Node, grammar_of=None,
                 strings: bool = False, keys_once: bool = False, members_grow: bool = False):
        self.lo, self.hi, self.items, self.sep = lo, hi, list(items), sep
        #: every object the items' languages allow stays allowed with one member more of a name
        #: no schema speaks of (the compiler's ``ArrayBuilder.members_grow``): an item begun as an
        #: object can always become a value no other item is (:meth:`live`)
        self.members_grow = bool(members_grow)
        #: every item is a JSON string: token masks come from :mod:`.unique_strings` (a relaxed
        #: state's mask, and the few tokens that can tell the difference decided one by one);
        #: else from :mod:`.unique_any`
        self.strings = bool(strings)
        #: no object of the items' languages holds a key twice (the compiler's
        #: ``ArrayBuilder.keys_once``): a member that differs from a value's rules the value out
        #: (:func:`.unique_any.may_become`); else a later member of the name may replace it
        self.keys_once = bool(keys_once)
        self.repeats = not self.keys_once
        self._dangers: dict = {}
        self._dvals: dict = {}
        self._parts: dict = {}
        self._fresh_ok: dict = {}
        self._seen_hex: dict = {}  # values read -> the hex of their part of a state name (name)
        self._grammar_of = grammar_of  # () -> the grammar the item nodes belong to
        self._auto = None
        self._busy = False
        self._qs: dict = {}      # (position, text) -> state of the item automaton
        self._scans: dict = {}   # item bytes -> unique_any.item_scan of them (where it goes on)
        self._cands: dict = {}   # position -> (distinct values found, exhausted)
        self._sufs: dict = {}    # state of the item automaton -> completions (_suffixes)
        self._succ: dict = {}    # state of the item automaton -> its live successors
        self._rank: dict = {}    # ... in the order the depth-first search tries them
        self._jump: dict = {}    # ... inside a nested family's item: completions of it (_jumps)
        self._item_fams = ()     # the item automaton's families that step their own items
        self._item_view = None   # ... what their token_step uses of it (item_walk.AutomatonView)
        self._item_rule_fam: dict = {}  # its rule ids -> (family, name) or None (item_walk)
        self._walk = (0, 0)      # (token walk id, rules made in it): MAX_MASK_ITEM_TEXTS
        self._node_prod = None   # the automaton's analysis (bind): an item position's emptiness
        self._asking = False
        super().__init__(prefix)

    def bind(self, node_productive) -> None:
        """Whether an item position's language is empty is the automaton's analysis's answer
        (``node_productive``, exact), asked at the array's start (:meth:`live`) instead of
        building the item automaton; the family's other states stay self-contained."""
        self._node_prod = node_productive

    def attach(self, grammar: ir.Grammar) -> None:
        """The grammar whose rules the item nodes refer to (a loaded index's)."""
        self._grammar_of = lambda: grammar

    def _starts(self) -> list:
        return [f"{self.prefix}_item{k}" for k in range(len(self.items))]

    def _automaton(self):
        if self._auto is None:
            from dotjson.automaton import Automaton
            from dotjson.errors import UnsupportedSchemaError

            g = self._grammar_of() if self._grammar_of is not None else None
            if g is None:
                raise UnsupportedSchemaError("uniqueItems over these items: the grammar is not attached",
                                             keyword="uniqueItems")
            if self._busy:  # (the items reach this array again: a recursive schema)
                raise UnsupportedSchemaError("uniqueItems over items that contain the same array (a recursive "
                                             "schema) is not supported", keyword="uniqueItems")
            self._busy = True
            try:
                starts = dict(zip(self._starts(), self.items))
                # the view's start: any item or none, never empty (an item position whose
                # language is empty, drupal-info's, is a dead state below, not an error of the
                # automaton's constructor when decoding first reaches the array)
                view_start = f"{self.prefix}_items"
                starts[view_start] = ir.alt(ir.EPS, *(Ref(n) for n in self._starts()))
                view = ir.Grammar(ItemRules(g.rules, starts), view_start, families=g.families, shared=g.shared)
                auto = Automaton(view)
                self._q0 = []
                with not_a_token_walk():
                    for n in self._starts():
                        t = auto.ref_term(n)
                        self._q0.append(-2 if auto.is_empty(t) else auto.state(t))
                from dotjson.automaton.item_walk import AutomatonView

                self._item_fams = tuple(f for f in getattr(view, "families", ()) if hasattr(f, "token_step"))
                self._item_view = AutomatonView(auto)
                self._auto = auto
            finally:
                self._busy = False
        return self._auto

    def init_state(self):
        return ((), "")

    def _pos(self, seen) -> int:
        return min(len(seen), len(self.items) - 1)

    def _q(self, k: int, text: str) -> int:
        """The item automaton's state after ``text`` at position ``k`` (negative: dead)."""
        q = self._qs.get((k, text))
        if q is not None:
            return q
        self._automaton()
        i = max(len(text) - 1, 0)
        while i > 0 and (k, text[:i]) not in self._qs:
            i -= 1
        q = self._qs.get((k, text[:i]), self._q0[k]) if i > 0 else self._q0[k]
        if len(self._qs) > 200_000:
            self._qs.clear()
        if q >= 0 and i < len(text):
            q = self.walk(q, text[i:])
        q = q if q >= 0 else -2
        self._qs[(k, text)] = q
        return q

    def _values(self, k: int, need: int):
        """``(values, exhausted)``: at least ``need`` distinct values of position ``k``'s
        language, or all of them (``exhausted``)."""
        hit = self._cands.get(k)
        if hit is not None and (hit[1] or len(hit[0]) >= need):
            return hit
        q = self._q(k, "")
        vals: dict = {}
        exhausted = False
        if q >= 0:
            # first a quick search that yields every text into an accepting state (``ends``):
            # a value per state with a way out, where the searches of _suffixes expand a state
            # once and so find one value per accepting state (JsonSchemaStore---vsix-publish's
            # categories, any string or one of 41 names: 2,355 states for 4 values, ~55 ms)
            for u in self._dive(q, 0, QUICK_DIVE, True):
                vals.setdefault(value_key(u), None)
                if len(vals) >= need:
                    break
            for u in self._suffixes(q) if len(vals) < need else ():
                vals.setdefault(value_key(u), None)
                if len(vals) >= need:
                    break
            if len(vals) < need:
                for u in self._all_completions(q, ""):
                    if u is None:
                        self._undecided(k)
                    vals.setdefault(value_key(u), None)
                    if len(vals) >= need:
                        break
                else:
                    exhausted = True
        else:
            exhausted = True
        out = self._cands[k] = (list(vals), exhausted)
        return out

    def _undecided(self, k: int):
        from dotjson.errors import LimitExceededError

        raise LimitExceededError(
            f"uniqueItems: deciding whether item {k} of an array of distinct values can still differ from "
            f"the items before it visited more than {MAX_VALUE_SEARCH} texts (its language has few values "
            "written in many ways)")

    def _feasible(self, used: frozenset, n: int) -> bool:
        """Positions ``n`` to ``lo - 1`` can hold distinct values none of which is ``used``."""
        if n >= self.lo:
            return True
        if self.hi is not None and self.lo > self.hi:
            return False
        rest = self.lo - n
        need = len(used) + rest
        small = []
        for j in range(n, self.lo):
            k = min(j, len(self.items) - 1)
            vals, exhausted = self._values(k, need)
            if len(vals) < need:
                small.append([v for v in vals if v not in used])
        # (a position with at least `need` values always has one left for it: match the others)
        match: dict = {}

        def assign(i, tried):
            for v in small[i]:
                if v in tried:
                    continue
                tried.add(v)
                if v not in match or assign(match[v], tried):
                    match[v] = i
                    return True
            return False

        try:
            return all(assign(i, set()) for i in range(len(small)))
        finally:
            assign = None  # (it refers to itself through its closure: a reference cycle left to the collector)

    def live(self, st) -> bool:
        hit = self._prod.get(st)
        if hit is not None:
            return hit
        seen, text = st
        if not seen and not text and self.lo <= 1 and (self.hi is None or self.hi > 0) \
                and self._node_prod is not None and not self._asking:
            # the array's start, nothing owed after one item: live exactly when the first item's
            # language is not empty (as the item automaton's start state below tells), which the
            # grammar's analysis answers without that automaton (a required array of distinct
            # objects in a branch the document may never take: JsonSchemaStore---tson's first
            # mask built two item automata, ~10 ms)
            self._asking = True
            try:
                got = self._node_prod(self.items[0])
            finally:
                self._asking = False
            if got is True or got is False:
                self._prod[st] = got
                return got
        if isinstance(seen, str):  # a relaxed state: its item's language is not empty
            k = text if seen == "*" else min(text + 1, len(self.items) - 1)
            return seen == "+" or self._q(k, "") >= 0
        ok = False
        if self.hi is None or len(seen) < self.hi:
            k = self._pos(seen)
            q = self._q(k, text)
            if q >= 0 and text and self._fresh_item(seen, text):
                # an item that can become no dangerous value: every completion is a new value
                # that leaves the owed positions theirs (:meth:`danger_values`); one exists
                ok = True
            elif q >= 0 and self.grows_new(seen, text):
                # an object begun whose language takes one member more of a name no value read
                # or owed holds: any completion with that member is a new value
                ok = self._goes_on(seen)
            elif q >= 0 and self._fresh_key(seen, text, q):
                # the item's own object can take a member whose key holds text no value read
                # or owed holds: every completion through it is a new value, and one exists
                ok = self._goes_on(seen)
            elif q >= 0 and not seen and self.lo <= 1:
                # nothing read to differ from, nothing owed after it: any completion will do, and
                # the item automaton's states are live (its successors are DEAD where the
                # language is empty), so one exists; no search (JsonSchemaStore---tson's items
                # have completions ~45 bytes long past free members, beyond a search's budget)
                ok = True
            elif q >= 0:
                used = frozenset(seen)
                tried: set = set()

                def good(u):
                    if not used and len(seen) + 1 >= self.lo:
                        return True  # (nothing read to differ from, nothing owed after it)
                    v = value_key(u)
                    if v in used or v in tried:
                        return False
                    tried.add(v)
                    return self._feasible(used | {v}, len(seen) + 1)

                # a first completion depth first (a few, closing what is open: a witness in about
                # as many states as it has bytes), then the shortest ones
                lex = _lex_of(text)
                ok = any(good(text + u) for u, _ in zip(self._dive(q, lex, QUICK_DIVE, True), range(3))) or \
                    any(good(text + u) for u in self._suffixes(q, text))
                if not ok:
                    for u in self._all_completions(q, text):
                        if u is None:
                            self._undecided(k)
                        if good(u):
                            ok = True
                            break
        if len(self._prod) > 200_000:
            self._prod.clear()
        self._prod[st] = ok
        return ok

    def fresh_name(self, seen):
        """A key text (:data:`FRESH_KEYS`) that no dangerous value after the values ``seen``
        holds anywhere in its canonical text (:meth:`danger_values`), or ``None``."""
        dangers = self.danger_values(seen)
        return next((k for k in FRESH_KEYS if not any(k in v for v in dangers)), None)

    def grows_new(self, seen, text: str, depth: int | None = None) -> bool:
        """Whether the item bytes ``text`` begin an object not closed yet in an array whose items'
        objects all take one member more of a name no schema speaks of (:attr:`members_grow`),
        and a name no dangerous value holds is at hand: then any completion of the item, given
        that member before its closing brace, is still an item and a value none of them is (its
        key is in the value whatever the other members are). ``depth``: the brackets ``text``
        leaves open (:func:`.unique_any.lex_context`), where the caller has it."""
        if not self.members_grow or self.strings:
            return False
        body = text.encode("latin-1")
        if body.lstrip(JSON_WS_BYTES)[:1] != b"{":
            return False
        if depth is None:
            from dotjson.jsonschema.unique_any import lex_context

            depth = lex_context(body)[0]
        return depth >= 1 and self.fresh_name(seen) is not None

    def _fresh_key(self, seen, text: str, q: int) -> bool:
        """Whether the item begun with ``text`` (the item automaton in state ``q``) can go on
        by a member of its own (top-level) object whose key starts with text no dangerous value's
        canonical text holds (:meth:`danger_values`; an open object's undeclared key), or by a
        string of its own (top-level) array starting so; inside such a key or string, by that
        text next. Every completion through it is a value none of them is — the key stays in the
        value whatever follows, since a later member of the same name holds the same text, and
        the item's own object is the value (no member above it to be written again; a string in
        a member's value, or deeper, could be replaced by a later member of that name) — and one
        exists (the item automaton's live states have completions). Asked before the search for
        a completion, which an item with long required members can exhaust (JsonSchemaStore---tson:
        ~45 bytes past free members, past ``MAX_VALUE_SEARCH`` texts). Where no such key of its own
        fits (a closed object), a declared one no dangerous value holds (:meth:`_declared_key`).
        ``False`` where unsure: a member's value begun, a nested value, an escape begun, a key
        read so far that is not plain printable ASCII, ``propertyNames`` that refuse the text."""
        if self.strings:
            return False
        body = text.encode("latin-1")
        read = b""  # (inside a key: its text so far)
        if text:
            from dotjson.jsonschema.unique_any import lex_context

            depth, in_str, esc, start = lex_context(body)
            if depth != 1 or esc:
                return False
            if in_str:  # a key of the item's object, or a string of its array: the key text there
                if body[:start - 1].rstrip(JSON_WS_BYTES)[-1:] not in (b"{", b",", b"["):
                    return False  # (a member's value: a later member of its name may replace it)
                probe = ""
                read = body[start:]  # (the key's text so far)
            else:
                last = body.rstrip(JSON_WS_BYTES)[-1:]
                probe = '"' if last in (b"{", b",", b"[") else ',"' if last in (b'"', b"}", b"]") or \
                    last.isalnum() else None
                if probe is None:  # (after a colon: a value is owed first)
                    return False
        else:
            probe = None  # (an object's first key, or an array's first string)
        auto = self._auto
        probes = (probe,) if probe is not None else ('{"', '["')
        key = self.fresh_name(seen)
        with not_a_token_walk():  # (the item automaton reads: see _successors)
            for p in probes if key is not None else ():
                if auto.walk_bytes(q, (p + key).encode("ascii")) >= 0:
                    return True
            # a closed object: a declared member's key instead, where no dangerous value has it
            if b"\\" in read or b'"' in read or not read.isascii():
                return False
            for p in probes:
                r = auto.walk_bytes(q, p.encode("ascii"))
                if r >= 0 and self._declared_key(seen, r, read.decode("ascii")):
                    return True
        return False

    def _declared_key(self, seen, r: int, read: str) -> bool:
        """Whether from state ``r`` of the item automaton, inside a key of the item's own object
        whose text so far is ``read``, the key can end as a name (printable ASCII, no escape)
        followed by a colon that no dangerous value's canonical text holds as a key
        (:meth:`danger_values`): every completion through it is then a value none of them is (an
        object with that key; theirs have none) — :meth:`_fresh_key` for a closed object, whose
        keys are its declared names (JsonSchemaStore---webextension's content scripts: an
        optional member the items read lack, where a search for a whole completion goes into a
        required ``uniqueItems`` array of ``pattern`` strings, meets a new state at every byte
        and gives up). The key's live bytes walked depth first, at most
        :data:`MEMBER_KEY_STEPS` transitions and keys of :data:`MEMBER_KEY_LEN` bytes."""
        auto = self._auto
        dangers = None
        stack, steps = [(r, read)], 0
        while stack and steps < MEMBER_KEY_STEPS:
            s, key = stack.pop()
            for b, s2 in self._successors(s):
                steps += 1
                if b == 0x22:  # the key's closing quote
                    if not key or auto.step(s2, 0x3A) < 0:  # (a colon next: a member's key)
                        continue
                    if dangers is None:
                        dangers = self.danger_values(seen)
                    if not any(f'"{key}":' in v for v in dangers):
                        return True
                elif 0x20 <= b < 0x7F and b != 0x5C and len(key) < MEMBER_KEY_LEN:
                    stack.append((s2, key + chr(b)))
        return False

    def _done(self, st):
        """``(count, next state)`` when the current item is complete and new, else ``None``."""
        seen, text = st
        if isinstance(seen, str):
            return None
        if not text or not self._auto.accepting[self._q(self._pos(seen), text)]:
            return None
        v = value_key(text)
        if v in seen:
            return None
        nxt = tuple(sorted(seen + (v,)))
        return len(nxt), (nxt, "")

    def accepts_empty(self, st) -> bool:
        if st[0] == "+":
            return True
        done = self._done(st)
        return done is not None and done[0] >= self.lo

    can_end = accepts_empty

    # ------------------------------------------------------------------ token masks (strings)
    # The relaxed rules (:mod:`.unique_strings`): ``("*", k)`` is item ``k`` then ``("+", k)``,
    # which ends the array or goes on (``("+s", k)``: the separator, then item ``k + 1``'s
    # relaxed rule, the last position repeating), with no distinctness and no counts: a
    # superset of the array's language from that item on.

    def _relaxed_body(self, st) -> ir.Node:
        kind, k = st
        last = len(self.items) - 1
        if kind == "*":
            return seq(self.items[k], Ref(self.name(("+", k)))) if self._q(k, "") >= 0 else ir.EMPTY
        if kind == "+":
            return ir.alt(ir.EPS, Ref(self.name(("+s", k))))
        k2 = min(k + 1, last)
        return seq(self.sep, Ref(self.name(("*", k2)))) if self._q(k2, "") >= 0 else ir.EMPTY

    def value_of(self, text: bytes) -> str:
        """The canonical value of a complete item's bytes."""
        return value_key(text.decode("latin-1"))

    def danger_values(self, seen) -> tuple:
        """The canonical texts of the values an item after the values ``seen`` must not take, or
        may have to leave to the positions ``minItems`` still owes: ``seen``, and the values of
        each owed position whose language has fewer than ``lo`` values (a position with more
        always has one left, :meth:`_feasible`)."""
        hit = self._dvals.get(seen)
        if hit is None:
            vals = set(seen)
            for j in range(len(seen) + 1, self.lo):
                got, _ = self._values(min(j, len(self.items) - 1), self.lo)
                if len(got) < self.lo:
                    vals.update(got)
            if len(self._dvals) > 4096:
                self._dvals.clear()
            hit = self._dvals[seen] = tuple(sorted(vals))
        return hit

    def danger(self, seen) -> tuple:
        """The UTF-8 contents of the string values among :meth:`danger_values`."""
        hit = self._dangers.get(seen)
        if hit is None:
            if len(self._dangers) > 4096:
                self._dangers.clear()
            hit = self._dangers[seen] = value_contents(self.danger_values(seen))
        return hit

    def danger_part(self, ct: str):
        """A canonical text as :func:`.unique_any.may_become` reads it (remembered)."""
        hit = self._parts.get(ct)
        if hit is None:
            from dotjson.jsonschema.unique_any import parse_canonical

            if len(self._parts) > 4096:
                self._parts.clear()
            hit = self._parts[ct] = parse_canonical(ct)
        return hit

    def item_scan(self, body: bytes) -> tuple:
        """:func:`.unique_any.item_scan` of the item bytes ``body``, remembered: the next token's
        bytes go on from where the scan of the item stopped (each token of a long item read the
        item's bytes again from its first: quadratic)."""
        hit = self._scans.get(body)
        if hit is None:
            from dotjson.jsonschema.unique_any import item_scan

            hit = item_scan(body)
            self._remember_scan(body, hit)
        return hit

    def _remember_scan(self, body: bytes, scan: tuple) -> None:
        if len(self._scans) > 4096:
            self._scans.clear()
        self._scans[body] = scan

    def may_become(self, seen, body: bytes) -> bool:
        """Whether the item bytes ``body`` may still become a dangerous value after ``seen``
        (``False``: none of its completions is one; :func:`.unique_any.may_become`)."""
        from dotjson.jsonschema.unique_any import may_become

        return may_become(body, [self.danger_part(v) for v in self.danger_values(seen)], self.repeats)

    def _fresh_item(self, seen, text: str) -> bool:
        """Whether the current item's bytes ``text`` can become no dangerous value (strings:
        their content so far begins none, :meth:`danger`; other items:
        :meth:`may_become`), and the array can go on after a new value outside them."""
        if self.strings:
            content, _, closed = string_content(text.encode("latin-1")[1:])
            if closed >= 0 or any(d.startswith(content) for d in self.danger(seen)):
                return False
        elif self.may_become(seen, text.encode("latin-1")):
            return False
        return self._goes_on(seen)

    def _goes_on(self, seen) -> bool:
        """Whether the positions still owed can be filled after the values ``seen`` and one new
        value outside every dangerous one (the same for every such value: :data:`FRESH` stands
        for it)."""
        hit = self._fresh_ok.get(seen)
        if hit is None:
            hit = self._fresh_ok[seen] = self._feasible(frozenset(seen) | {FRESH}, len(seen) + 1)
        return hit

    def name(self, st) -> str:
        nm = self._names.get(st)
        if nm is None:
            seen, text = st
            if not isinstance(seen, tuple):
                return super().name(st)
            # (the encoding of statefamily's names, the values' part kept per set of values: a
            # body names ~100 successors that differ in their last byte)
            pre = self._seen_hex.get(seen)
            if pre is None:
                if len(self._seen_hex) > 4096:
                    self._seen_hex.clear()
                pre = self._seen_hex[seen] = ("[" + json.dumps(list(seen), separators=(",", ":")) + ",").encode().hex()
            nm = self._own + pre + (json.dumps(text) + "]").encode().hex()
            self._remember(nm, st)
        return nm

    def _fresh_bytes(self, seen, text: str):
        """For string items inside an item begun (``text``) whose content begins no dangerous
        value: ``(bytes, live)``, the bytes after which liveness must be asked (a quote, a
        backslash, a control, and the next byte of each dangerous value the content begins), and
        whether every other successor is live (the array can go on after a new value); ``None``
        where every successor is asked."""
        if len(text) < 1 or len(self._prod) > 150_000:
            return None
        content, clean, closed = string_content(text.encode("latin-1")[1:])
        if not clean or closed >= 0:
            return None
        n = len(content)
        ask = set(range(0x20)) | {0x22, 0x5C}
        ask.update(d[n] for d in self.danger(seen) if len(d) > n and d.startswith(content))
        return ask, self._goes_on(seen) and (self.hi is None or len(seen) < self.hi)

    def next_danger_values(self, seen) -> tuple:
        """The canonical texts of the values of the position after the current item (the one
        after ``seen`` and one more value), where it has fewer than ``len(seen) + lo + 2`` values
        (else none: any new value leaves it enough)."""
        k2 = min(len(seen) + 1, len(self.items) - 1)
        need = len(seen) + self.lo + 2
        got, _ = self._values(k2, need)
        return tuple(got) if len(got) < need else ()

    def next_danger(self, seen) -> tuple:
        """The UTF-8 contents of the string values among :meth:`next_danger_values`."""
        return value_contents(self.next_danger_values(seen))

    def token_step(self, view, name: str, rest: int, data: bytes):
        """``(state, n)``: the state after the first ``n`` bytes of ``data`` from this family's
        rule ``name`` followed by ``rest``, where ``name``'s item has begun: the bytes of the
        item (up to its end, or all of ``data``), one rule for
        its new bytes (no body per byte on the way, each naming ~100 successors); ``-2`` as the
        state when refused. ``None`` where the family does not step ``name``'s state (the
        automaton walks it)."""
        seen, text = self._state(name)
        if isinstance(seen, str) or not text:
            return None
        body = text.encode("latin-1")
        if self.strings:
            if string_content(body[1:])[2] >= 0:
                return None  # (the item is complete: what follows it is the automaton's)
            whole = body + data
            closed = string_content(whole[1:])[2]
            end = len(whole) if closed < 0 else closed + 2
        else:
            from dotjson.jsonschema.unique_any import item_scan

            end, at = self.item_scan(body)
            if end >= 0:
                return None
            whole = body + data
            end, at = item_scan(whole, at)
            if end < 0:
                self._remember_scan(whole, (end, at))
                end = len(whole)
            if end == len(body):
                return None  # (a number ends here: the automaton walks what follows it)
        nxt = (seen, whole[:end].decode("latin-1"))
        if self._q(self._pos(seen), nxt[1]) < 0 or not self.live(nxt):
            return -2, end - len(body)
        return view.state(view.seq(view.ref(self.name(nxt)), rest)), end - len(body)

    def token_mask(self, view, state: int, prefix: int, name: str, rest: int, other: int):
        """The mask of ``state``, which is ``prefix``, this family's rule ``name``, then ``rest``
        (or the term ``other``): :func:`.unique_strings.token_mask` where every item is a string,
        else :func:`.unique_any.token_mask`; ``None`` where the generic walk decides (a rule per
        token prefix)."""
        st = self._state(name)
        if isinstance(st[0], str):
            return None
        self._automaton()
        if self.strings:
            return token_mask(self, view, state, prefix, st, rest, other)
        from dotjson.jsonschema import unique_any

        return unique_any.token_mask(self, view, state, prefix, st, rest, other)

    def _charge_walk(self, seen, text: str) -> None:
        """Count a rule made for a token mask (:func:`~dotjson.ir.families.token_walk_id`);
        ``LimitExceededError`` past :data:`MAX_MASK_ITEM_TEXTS` in one mask. Nothing is counted
        outside a mask (reading a document)."""
        walk = token_walk_id()
        if not walk:
            return
        w, n = self._walk
        n = n + 1 if w == walk else 1
        self._walk = (walk, n)
        if n > MAX_MASK_ITEM_TEXTS:
            from dotjson.errors import LimitExceededError

            shown = (text if len(text) <= 40 else text[:37] + "...").encode("latin-1")
            raise LimitExceededError(
                f"uniqueItems over any values ({self.prefix}): a token mask inside the array (item {len(seen)}, "
                f"here after its bytes {shown!r}) needs a rule per byte of every token the item may hold: refused "
                f"past {MAX_MASK_ITEM_TEXTS} item texts in one mask; index.check, index.accepts and next_state "
                "read such arrays exactly, and masks outside them are unaffected")

    def body(self, name: str) -> ir.Node:
        hit = self._bodies.get(name)
        if hit is not None:
            return hit
        st = self._state(name)
        seen, text = st
        if isinstance(seen, str):
            node = self._bodies[name] = self._relaxed_body(st)
            return node
        self._charge_walk(seen, text)
        outs = []
        q = self._q(self._pos(seen), text)
        if q >= 0:
            fresh = self._fresh_bytes(seen, text) if self.strings else None
            for b, _ in self._successors(q):
                nxt = (seen, text + chr(b))
                if fresh is not None and b not in fresh[0]:
                    # (the content goes on by this byte, into no dangerous value: live as
                    # the item is, see _fresh_item; remembered for the analyses' question)
                    ok = self._prod[nxt] = fresh[1]
                else:
                    ok = self.live(nxt)
                if ok:
                    byte = ir.chars((b, b)) if b < 0x80 else ir.Lit(chr(0xDC00 + b))
                    outs.append(seq(byte, Ref(self.name(nxt))))
        done = self._done(st)
        if done is not None:
            count, nxt = done
            if count >= self.lo:
                outs.append(ir.EPS)
            if (self.hi is None or count < self.hi) and self.live(nxt):
                outs.append(seq(self.sep, Ref(self.name(nxt))))
        node = ir.alt(*outs)
        self._bodies[name] = node
        return node

    def to_json(self, enc) -> dict:
        out = {"kind": self.kind, "prefix": self.prefix, "lo": self.lo, "hi": self.hi,
               "items": [enc(n) for n in self.items], "sep": enc(self.sep)}
        if self.strings:
            out["strings"] = True
        if self.keys_once:
            out["keys_once"] = True
        if self.members_grow:
            out["members_grow"] = True
        return out

    @classmethod
    def from_json(cls, d: dict, dec) -> "UniqueValues":
        """The family :meth:`to_json` wrote (its grammar attached later: :meth:`attach`);
        ``ValueError`` (``KeyError``, ``TypeError``) if malformed."""
        if not isinstance(d["lo"], int) or not (d["hi"] is None or isinstance(d["hi"], int)) or \
                not isinstance(d["prefix"], str) or not isinstance(d["items"], list) or not d["items"]:
            raise ValueError("malformed rule family")
        if not all(isinstance(d.get(k, False), bool) for k in ("strings", "keys_once", "members_grow")):
            raise ValueError("malformed rule family")
        return cls(d["prefix"], d["lo"], d["hi"], [dec(n) for n in d["items"]], dec(d["sep"]),
                   strings=d.get("strings", False), keys_once=d.get("keys_once", False),
                   members_grow=d.get("members_grow", False))
