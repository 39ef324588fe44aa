"""Decisions on normal forms: which types of a branch are provably empty (for ``oneOf``
disjointness and compaction), the finite values of a branch, and whether a value satisfies an
expression (the filters of ``enum`` values and keys).
"""

from __future__ import annotations

from fractions import Fraction

from dotjson import ir
from dotjson.errors import DotjsonError, UnsupportedSchemaError
from dotjson.jsonschema.nodes import Branch, ObjectNode
from dotjson.jsonschema.atoms import (
    Addl, Contains, Enum, ExtraKeys, Items, Len, Mult, NItems, NotEnum, NotMult, NProps, Num, Pattern, PatternKeys,
    PNames, Pos, Props, Required, RuleRef, Some, Str, Types, Unique, ViolatedBranch, types_of,
)
from dotjson.jsonschema.values import MAX_EMPTINESS_DEPTH, FALSE, TRUE, _canon, _dec, _ir_match, _type_of


_STRUCTURED = frozenset({"object", "array"})


class Decisions:
    """Emptiness of branches and satisfaction of values, decided on normal forms. (A part of
    :class:`~dotjson.jsonschema.normalize.Normalizer`, whose constructor sets the state it reads.)"""

    def finite_branch(self, br):
        """The values of branch ``br`` (canonical) when it lists them (``enum``/``const``, also
        through its references), else ``None``."""
        try:
            brs = self.expand_refs(br, "") if any(type(a) is RuleRef for a in br) else [br]
        except UnsupportedSchemaError:
            return None
        out: dict = {}
        for b in brs:
            m = self.merge(b)
            if m.enum is None or m.refs:
                return None
            for c in m.enum:
                if self.satisfies(self.literal_cache[("v", c)], b):
                    out[c] = None
        return list(out)

    def branch_empty(self, br) -> bool:
        """True when the conjunction provably accepts no value (used for oneOf disjointness)."""
        return not self.live_types(br)

    def live_types(self, br) -> frozenset:
        """The types of which the conjunction ``br`` may have values: all but those it provably
        has none of (:meth:`type_empty`; a sufficient test of emptiness)."""
        ts = types_of(br)
        if not ts:
            return ts
        if any(type(a) is RuleRef for a in br):
            try:
                brs = self.expand_refs(br, "")
            except UnsupportedSchemaError:
                return ts
            out = frozenset()
            for b in brs:
                out |= self.live_types(b)
                if out == ts:
                    break
            return out
        m = self.merge(br)
        if m.enum is not None:
            return frozenset(_type_of(self.literal_cache[("v", c)]) for c in m.enum
                             if self.satisfies(self.literal_cache[("v", c)], br))
        return frozenset(t for t in m.types if not self.type_empty(m, t))

    def structured(self, e) -> bool:
        """Whether every value of expression ``e`` is an object or an array (a sufficient test:
        ``False`` where the normal form does not tell)."""
        if e == TRUE or e == FALSE:
            return False
        hit = self._structured.get(e)
        if hit is None:
            try:
                brs = self.dnf(e)
                hit = bool(brs) and all(self.live_types(br) <= _STRUCTURED for br in brs)
            except DotjsonError:
                hit = False
            self._structured[e] = hit
        return hit

    def type_empty(self, m: Branch, t) -> bool:
        """True when branch ``m`` provably has no value of type ``t`` (a sufficient test)."""
        if t == "null":
            return ("n",) in m.not_enum
        if t == "boolean":
            return ("b", True) in m.not_enum and ("b", False) in m.not_enum
        if t in ("integer", "nonint"):
            n = m.number
            if n.lo is not None and n.hi is not None:
                if n.lo > n.hi or (n.lo == n.hi and (n.lo_excl or n.hi_excl)):
                    return True
                if t == "integer" and not n.lo_excl and not n.hi_excl and not n.multiples:
                    import math
                    if math.floor(n.hi) < math.ceil(n.lo):
                        return True
            return False
        if t == "string":
            st = m.string
            if st.max_length is not None and st.min_length > st.max_length:
                return True
            # a pattern with finitely many strings (`^Abs$`, a discriminator's): empty when none
            # of them satisfies the rest (two branches with different such patterns are disjoint)
            for h in st.patterns:
                strings = self.finite_of(h)
                if strings is not None:
                    return not any(self.string_ok(x, st, m.not_enum) for x in strings)
            # patterns that fix different starts (`^pkg:cargo/`, `^pkg:npm/`: a discriminator)
            if len(st.patterns) > 1:
                heads = [self.literal_head(h) for h in dict.fromkeys(st.patterns)]
                for i, a in enumerate(heads):
                    for b in heads[i + 1:]:
                        if not (a.startswith(b) or b.startswith(a)):
                            return True
            return False
        if t == "array":
            a = m.array
            if a.max_items is not None and a.min_items > a.max_items:
                return True
            for i, es in a.prefix.items():
                if i < a.min_items and self.expr_empty(self.and_expr(es)):
                    return True
            return False
        if t == "object":
            o = m.object
            if o.max_properties is not None and (o.min_properties > o.max_properties or len(o.required) > o.max_properties):
                return True
            for name in o.required:
                # (the schemas its value must satisfy: its own, every matching pattern's, those of
                # the additionalProperties it is extra to; a name propertyNames refuses: none)
                es = self.member_schemas(o, name, o.properties.get(name, ()))
                if any(not self.validate(name, pn) for pn in o.property_names):
                    return True
                if self.expr_empty(self.and_expr(es)):
                    return True
            return False
        return False

    def literal_head(self, handle) -> str:
        """The text every string of a pattern/format handle's language starts with (its
        anchored literal prefix; ``""`` when it has none)."""
        key = ("head", handle)
        hit = self.formats.get(key)
        if hit is None:
            hit = ""
            if handle[0] == "pattern":
                n = self.str_node(handle)
                if type(n) is ir.Seq:
                    n = n.items[0]
                if type(n) is ir.Lit:
                    hit = n.text
            self.formats[key] = hit
        return hit

    def finite_of(self, handle):
        """The strings of a pattern/format handle's language when there are few, else ``None``."""
        key = ("finite", handle)
        if key not in self.formats:
            from dotjson.jsonschema.pattern_keys import finite_strings

            self.formats[key] = finite_strings(self.str_node(handle)) if handle[0] == "pattern" else None
        return self.formats[key]

    def string_ok(self, x: str, st, not_enum) -> bool:
        """Whether string ``x`` satisfies string node ``st`` and is not excluded by ``not_enum``."""
        n = len(x)
        if n < st.min_length or (st.max_length is not None and n > st.max_length) or ("s", x) in not_enum:
            return False
        return all(_ir_match(self.str_node(h), x) for h in st.patterns) and \
            not any(_ir_match(self.str_node(h), x) for h in st.not_patterns)

    def expr_empty(self, e) -> bool:
        if e == FALSE:
            return True
        if e == TRUE:
            return False
        hit = self.empty_cache.get(e)
        if hit is not None:
            return hit
        if self.empty_depth >= MAX_EMPTINESS_DEPTH:
            # Deeper than this, stay conservative: the grammar analyses decide the rest exactly
            # (an empty required value makes its object unproductive, never a dead state).
            return False
        # a recursive schema re-entering itself: not provably empty (stay conservative)
        self.empty_cache[e] = False
        self.empty_depth += 1
        try:
            res = all(self.branch_empty(br) for br in self.dnf(e))
        except UnsupportedSchemaError:
            res = False
        finally:
            self.empty_depth -= 1
        self.empty_cache[e] = res
        return res

    def validate(self, v, e) -> bool:
        if e == TRUE:
            return True
        if e == FALSE:
            return False
        return any(self.satisfies(v, br) for br in self.dnf(e))

    def satisfies(self, v, br) -> bool:
        t = _type_of(v)
        for a in br:
            k = type(a)
            if k is Types:
                if t not in a.allowed:
                    return False
                continue
            if k is Enum:
                if _canon(v) not in self.value_set(a.values):
                    return False
                continue
            if k is NotEnum:
                if _canon(v) in self.value_set(a.values):
                    return False
                continue
            if k is RuleRef:
                if not self.validate(v, a.target):
                    return False
                continue
            if t not in a.applies_to:
                continue
            if not self.sat_atom(v, a):
                return False
        return True

    def value_set(self, values: tuple) -> frozenset:
        """The set of an ``enum`` atom's values (membership in constant time: a 50,000-value
        enum filters its values in linear time)."""
        hit = self.value_sets.get(id(values))
        if hit is None:
            hit = self.value_sets[id(values)] = (values, frozenset(values))
        return hit[1]

    def sat_atom(self, v, a) -> bool:
        """Whether value ``v``, of a type typed atom ``a`` applies to, satisfies it."""
        k = type(a)
        if k is Num:
            x = _dec(v)
            lo, hi = a.lo, a.hi
            if lo is not None and (x < lo or (a.lo_excl and x == lo)):
                return False
            if hi is not None and (x > hi or (a.hi_excl and x == hi)):
                return False
            return True
        if k is Mult:  # (Fractions: a Decimal remainder rounds, or fails past 28 digits)
            return Fraction(_dec(v)) % Fraction(a.divisor) == 0
        if k is NotMult:
            return Fraction(_dec(v)) % Fraction(a.divisor) != 0
        if k is Str:
            return _ir_match(self.str_node(a.handle), v) == a.positive
        if k is Len or k is NProps or k is NItems:
            return len(v) >= a.lo and (a.hi is None or len(v) <= a.hi)
        if k is Props:
            return a.name not in v or self.validate(v[a.name], a.schema)
        if k is Required:
            return a.name in v
        if k is Addl:
            e, names, pats = a.schema, a.names, a.patterns
            return all(self.validate(x, e) for key, x in v.items()
                       if key not in names and not any(self.key_matches(key, p) for p in pats))
        if k is Pattern:
            return all(self.validate(x, a.schema) for key, x in v.items() if self.key_matches(key, a.pattern))
        if k is PNames:
            return all(self.validate(key, a.schema) for key in v)
        if k is Some:
            if type(a.spec) is ViolatedBranch:  # (a negated object branch: some atom of it fails)
                return not all(self.sat_atom(v, x) for x in a.spec.atoms)
            return any(self.key_in(key, a.spec) and self.validate(x, a.schema) for key, x in v.items())
        if k is Pos:
            return len(v) <= a.index or self.validate(v[a.index], a.schema)
        if k is Items:
            return all(self.validate(x, a.schema) for x in v[a.start:])
        if k is Contains:
            n = sum(1 for x in v[a.start:] if self.validate(x, a.schema))
            return n >= a.lo and (a.hi is None or n <= a.hi)
        if k is Unique:
            cs = [_canon(x) for x in v]
            return len(set(cs)) == len(cs)
        return True  # pragma: no cover

    def key_matches(self, key, pattern) -> bool:
        return _ir_match(self.regex(pattern, "", "patternProperties"), key)

    def key_in(self, key, spec) -> bool:
        """Whether ``key`` is one of the keys the witness key spec of a ``some`` atom names
        (:class:`~dotjson.jsonschema.atoms.PatternKeys`: a key the pattern matches;
        :class:`~dotjson.jsonschema.atoms.ExtraKeys`: a key neither named nor matched, an
        extra member of that ``additionalProperties``; :class:`~dotjson.jsonschema.atoms.SchemaKeys`:
        a key the string schema accepts)."""
        k = type(spec)
        if k is PatternKeys:
            return self.key_matches(key, spec.pattern)
        if k is ExtraKeys:
            return key not in spec.names and not any(self.key_matches(key, q) for q in spec.patterns)
        return self.validate(key, spec.schema)

    def member_schemas(self, o: ObjectNode, name: str, es) -> list:
        """The schemas the value of declared property ``name`` of object node ``o`` must
        satisfy: its own ``es``, every ``patternProperties`` schema whose pattern matches the
        name, and the ``additionalProperties`` schema of every branch that neither declares nor
        matches it."""
        es = list(es)
        for p, x in o.patterns:
            if self.key_matches(name, p):
                es.append(x)
        for x, names, pats in o.additional:
            if name not in names and not any(self.key_matches(name, q) for q in pats):
                es.append(x)
        return es
