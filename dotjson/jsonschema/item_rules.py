"""The rules a rule family reads its items with: a grammar's rules plus the start rules of an
array's item languages (:class:`dotjson.jsonschema.unique.UniqueValues` builds an automaton of
its own over them), holding the grammar's rules weakly."""

from __future__ import annotations

import weakref
from collections.abc import Mapping


class ItemRules(Mapping):
    """A grammar's rules plus the start rules of an array's item languages (for the automaton
    :class:`~dotjson.jsonschema.unique.UniqueValues` reads its items with)."""

    def __init__(self, rules, starts: dict):
        # the grammar's rules, weakly: this view's automaton belongs to a rule family that the
        # grammar's compiler holds, and the compiler lets go of it all once the rules are gone
        # (dotjson.jsonschema._assemble's finalizer); held strongly, they kept the compiler, the
        # automaton and the schema's normal forms alive for the life of the process (~60,000
        # objects for one MaskBench schema, in every later full collection). (A loaded index's
        # rules: held, as they have no such finalizer.)
        try:
            self._ref = weakref.ref(rules)
        except TypeError:
            self._ref = lambda: rules
        self._starts = starts

    @property
    def _rules(self):
        rules = self._ref()
        if rules is None:
            raise ReferenceError("the grammar these uniqueItems items belong to is gone")
        return rules

    def __getitem__(self, name):
        body = self._starts.get(name)
        return body if body is not None else self._rules[name]

    def __contains__(self, name) -> bool:
        return name in self._starts or name in self._rules

    def __iter__(self):
        yield from self._starts
        yield from self._rules

    def __len__(self) -> int:
        return len(self._starts) + len(self._rules)

    def __getattr__(self, attr):  # known_language, native, force: the grammar's own
        if attr.startswith("_"):
            raise AttributeError(attr)
        value = getattr(self._rules, attr)
        if not callable(value):
            return value

        def call(*args, **kwargs):  # (not the rules' bound method: it would hold them)
            return getattr(self._rules, attr)(*args, **kwargs)

        return call
