"""Rule families whose rules are the states of an automaton built as decoding reads it.

:class:`_Family` implements the :mod:`dotjson.ir.families` rule-family protocol over states that
a subclass defines (``init_state``, ``moves``, ``accepts_empty``, ``can_end``, ``abstract``,
``live``): a rule is named by its state itself (JSON of the state, hex-encoded), so a name means
the same state in every process and a saved index keeps its meaning. Its clients: the number
families of :mod:`dotjson.jsonschema.numfamily` and ``uniqueItems`` over numbers
(:mod:`dotjson.jsonschema.unique`).

Productivity (a state from which some text completes) is decided by the family's arithmetic
(:class:`~dotjson.jsonschema.numarith._Arith`, from a text that reaches the state) where the
family has one: the number families do wherever a ``multipleOf`` is among their constraints,
since a search over a product of remainders visits them all to prove one state dead (MaskBench
``Handwritten---allany7``: 20 s of searches in its first mask). Otherwise, and for a state no
text is known for, by a search over the states with what cannot matter left out (``abstract``).
"""

from __future__ import annotations

import json

from dotjson import ir
from dotjson.errors import LimitExceededError
from dotjson.ir import EMPTY, EPS, Ref, alt, seq

__all__ = ["MAX_SEARCH"]

#: States one productivity search may visit before it gives up with a named error.
MAX_SEARCH = 400_000



# ----------------------------------------------------------------------------- state names
def _tup(x):
    return tuple(_tup(y) for y in x) if isinstance(x, list) else x


def _encode(state) -> str:
    return json.dumps(state, separators=(",", ":")).encode().hex()


def _decode(text: str):
    return _tup(json.loads(bytes.fromhex(text).decode()))



class _Family:
    """The rule family protocol of :mod:`dotjson.ir.families` over named states."""

    kind = ""
    renderable = False  # expand_families refuses these (no finite grammar text)
    #: the constraints as rationals (:class:`_Arith`) where a search over states would not end
    _arith = None

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._own = prefix + "__"
        self._states: dict = {}
        self._names: dict = {}
        self.start = self._own + _encode(self.init_state())
        self._bodies: dict = {}
        self._prod: dict = {}
        # a text that reaches each state named so far (what :class:`_Arith` decides from)
        self._rep: dict = {self.init_state(): ""}

    def owns(self, name: str) -> bool:
        if not name.startswith(self._own):
            return False
        try:
            self._state(name)
        except (ValueError, TypeError):
            return False
        return True

    def _state(self, name: str):
        st = self._states.get(name)
        if st is None:
            st = _decode(name[len(self._own):])
            if not isinstance(st, tuple):
                raise ValueError(name)
            self._remember(name, st)
        return st

    def _remember(self, name: str, st) -> None:
        # (names and states both ways: the analyses ask nullable/productive by name, for every
        # successor of every body, and a name is JSON of the state, hex-encoded)
        if len(self._states) > 200_000:
            self._states.clear()
            self._names.clear()
        self._states[name] = st
        self._names[st] = name

    def name(self, st) -> str:
        nm = self._names.get(st)
        if nm is None:
            nm = self._own + _encode(st)
            self._remember(nm, st)
        return nm

    def nullable(self, name: str) -> bool:
        return self.accepts_empty(self._state(name))

    def productive(self, name: str):
        return self.live(self._state(name))

    def bind(self, node_productive) -> None:  # (members of these families are self-contained)
        return None

    def materialize(self) -> None:
        return None

    def body(self, name: str) -> ir.Node:
        hit = self._bodies.get(name)
        if hit is not None:
            return hit
        st = self._state(name)
        by: dict = {}
        rep = self._rep.get(st)
        for ch, nxt in self.moves(st):
            if rep is not None and nxt not in self._rep:
                self._rep[nxt] = rep + ch[0]
            if self.live(nxt):
                by.setdefault(nxt, []).extend(ch)  # (ch: one character or a class of digits)
        outs = []
        for nxt, chs in by.items():
            outs.append(seq(ir.chars(*((ord(c), ord(c)) for c in chs)), Ref(self.name(nxt))))
        tail = self.tail(st)
        node = alt(*(([EPS] if self.accepts_empty(st) else []) + ([tail] if tail is not EMPTY else []) + outs))
        self._bodies[name] = node
        return node

    def tail(self, st) -> ir.Node:
        return EMPTY

    def hopeless(self, st) -> bool:
        """A necessary condition of death: no text completes ``st`` (prunes the searches)."""
        return False

    def assume_path(self, text: str) -> None:
        """``text`` is a number of this family's language: every state on its path can be
        completed (checked: a text that does not end accepted changes nothing)."""
        st = self.init_state()
        path = [st]
        for ch in text:
            nxt = next((n for c, n in self.moves(st) if ch in c), None)
            if nxt is None:
                return
            st = nxt
            path.append(st)
        if self.can_end(st):
            for p in path:
                self._prod[self.abstract(p)] = True

    def _reps_json(self) -> dict:
        """The texts that reach the states named so far, for a saved index (only where
        :class:`_Arith` decides: a state reached again after loading needs one); each a longest
        one (its prefixes reach the states before it)."""
        if self._arith is None:
            return {}
        texts = sorted(set(self._rep.values()))
        return {"reps": [t for k, t in enumerate(texts) if k + 1 == len(texts) or not texts[k + 1].startswith(t)]}

    def restore_reps(self, texts) -> None:
        """Replays a saved index's texts (:meth:`_reps_json`): every state on each path gets its
        text. A text that leaves the automaton is a corrupt file (``ValueError``)."""
        if not isinstance(texts, list) or not all(isinstance(t, str) and len(t) < 100_000 for t in texts):
            raise ValueError("malformed rule family: reps must be a list of texts")
        for text in texts:
            st = self.init_state()
            for k, ch in enumerate(text):
                st = next((n for c, n in self.moves(st) if ch in c), None)
                if st is None:
                    raise ValueError(f"malformed rule family: {text!r} leaves the number automaton")
                self._rep.setdefault(st, text[:k + 1])

    def live(self, st) -> bool:
        """Some text completes the number from state ``st`` (exact; memoized)."""
        key = self.abstract(st)
        hit = self._prod.get(key)
        if hit is not None:
            return hit
        if self._arith is not None:
            text = self._rep.get(st)
            if text is not None:
                ok = self._prod[key] = self._arith_live(text)
                return ok
        # search the abstract states from key for one that can end; the path to it is
        # productive too (remembered: the next state's question is then answered at once)
        seen = {key: st}
        parent = {key: None}
        order = [key]
        k = 0
        found = None
        while k < len(order):
            a = order[k]
            k += 1
            known = self._prod.get(a)
            if known is True or (known is None and self.can_end(seen[a])):
                found = a
                break
            if known is False or self.hopeless(seen[a]):
                continue
            for _, nxt in self.moves(seen[a]):
                b = self.abstract(nxt)
                if b not in seen:
                    seen[b] = nxt
                    parent[b] = a
                    order.append(b)
                    if len(order) > MAX_SEARCH:
                        raise LimitExceededError(
                            f"number automaton: deciding whether a number can still be completed took more than "
                            f"{MAX_SEARCH} states")
        if found is None:
            for a in order:
                self._prod[a] = False
            return False
        while found is not None:
            self._prod[found] = True
            found = parent[found]
        return True

