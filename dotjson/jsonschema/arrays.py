"""Arrays: positional items, counted repetition, ``contains`` counters and ``uniqueItems``."""

from __future__ import annotations

from dotjson import ir
from dotjson.ir import EMPTY, EPS, Ref, alt, lit, repeat, seq
from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.nodes import ArrayNode
from dotjson.jsonschema.values import FALSE, MAX_UNIQUE_VALUES, TRUE


#: ``minContains``/``maxContains`` up to this are unrolled (a rule per count, each small);
#: above, one counted repetition carries the count (any size: see dotjson.automaton.counters).
CONTAINS_UNROLL = 1000


class ArrayBuilder:
    """Mixin of the compiler: arrays."""

    def build_array(self, a: ArrayNode, where) -> ir.Node:
        lo, hi = a.min_items, a.max_items
        by_position, after = a.positions()
        pos_exprs = [self.and_expr(es) for es in by_position]
        K = len(pos_exprs)
        rest = self.and_expr(after)
        for i, e in enumerate(pos_exprs):
            if e == FALSE:
                hi = i if hi is None else min(hi, i)
                break
        if rest == FALSE:
            hi = K if hi is None else min(hi, K)
        if hi is not None and lo > hi:
            return EMPTY
        contains = [c for c in a.contains if not (c[1] == 0 and c[2] is None)]
        if a.unique and not (hi is not None and hi <= 1):
            node = self.unique_array(a, pos_exprs, rest, lo, hi, contains, where)
            if node is not None:
                return node
        if contains:
            node = self.contains_array(pos_exprs, rest, lo, hi, contains, where)
            if node is not None:
                return node
        ws, sep = self.ws, self.sep
        empty = seq(lit("["), ws, lit("]")) if lo == 0 else EMPTY

        def tail(i):
            # items from position i on (i >= 1), each preceded by a comma
            if i < K:
                if hi is not None and i >= hi:
                    return EPS
                more = seq(sep, self.node_of(pos_exprs[i]), tail(i + 1))
                return alt(EPS, more) if i >= lo else more
            rlo = max(0, lo - K)
            rhi = None if hi is None else hi - K
            if rest == FALSE:
                return EPS
            return repeat(seq(sep, self.node_of(rest)), rlo, rhi)

        if hi == 0:
            return empty
        first = self.node_of(pos_exprs[0]) if K > 0 else self.node_of(rest)
        if K > 0:
            body = seq(first, tail(1))
        else:
            rlo = max(0, lo - 1)
            rhi = None if hi is None else hi - 1
            body = seq(first, repeat(seq(sep, first), rlo, rhi))
        return alt(empty, seq(lit("["), ws, body, ws, lit("]")))

    def finite_values(self, e):
        if e == FALSE:
            return []
        if e == TRUE:
            return None
        out = {}
        for br in self.dnf(e):
            if any(a[0] == "ruleref" for a in br):
                try:
                    brs = self.expand_refs(br, "")
                except UnsupportedSchemaError:
                    return None
            else:
                brs = [br]
            for b in brs:
                m = self.merge(b)
                if m.enum is not None:
                    cs = [c for c in m.enum if self.satisfies(self.literal_cache[("v", c)], b)]
                elif m.types <= {"null", "boolean"}:
                    cs = []
                    for c in ([("n",)] if "null" in m.types else []) + \
                             ([("b", True), ("b", False)] if "boolean" in m.types else []):
                        self.literal_cache.setdefault(("v", c), None if c[0] == "n" else c[1])
                        if c not in m.not_enum:
                            cs.append(c)
                else:
                    return None
                for c in cs:
                    out[c] = None
        return list(out)

    def unique_array(self, a: ArrayNode, pos_exprs, rest, lo, hi, contains, where):
        vals = None
        if not pos_exprs and not contains:
            vals = self.finite_values(rest)
        if vals is None or len(vals) > MAX_UNIQUE_VALUES:
            self.unsupported("uniqueItems is only supported for items drawn from a small finite set "
                             "(enum, const, boolean, null)", a.unique, "uniqueItems")
            return None
        vals = sorted(vals, key=repr)
        lits = [self.literal(c) for c in vals]
        cap = len(vals) if hi is None else min(hi, len(vals))
        if lo > cap:
            return EMPTY
        self.counter += 1
        prefix = f"{self.ns}uniq{self.counter}"
        names = {}

        def state(used: int, count: int):
            key = used
            if key in names:
                return Ref(names[key])
            name = names[key] = f"{prefix}_{used}"
            alts = [EPS] if count >= lo else []
            if count < cap:
                for i, node in enumerate(lits):
                    if not used & (1 << i):
                        alts.append(seq(self.sep, node, state(used | (1 << i), count + 1)))
            self.rules[name] = alt(*alts)
            return Ref(name)

        firsts = [seq(node, state(1 << i, 1)) for i, node in enumerate(lits)] if cap >= 1 else []
        empty = seq(lit("["), self.ws, lit("]")) if lo == 0 else EMPTY
        return alt(empty, *(seq(lit("["), self.ws, f, self.ws, lit("]")) for f in firsts))

    def contains_array(self, pos_exprs, rest, lo, hi, contains, where):
        if len(contains) > 1 or pos_exprs or hi is not None:
            self.unsupported("contains is supported without prefixItems/maxItems and only once per array",
                             where, "contains")
            return None
        e, clo, chi = contains[0]
        if lo > max(clo, 1):
            self.unsupported("contains with minItems above minContains is not supported", where, "contains")
            return None
        y = self.node_of(self.and_expr([rest, e]))
        n_expr = None
        try:
            self.strict += 1
            n_expr = self.and_expr([rest, self.not_expr(e)])
            self.dnf(n_expr)
        except UnsupportedSchemaError:
            n_expr = None
        finally:
            self.strict -= 1
        if n_expr is None and chi is not None:
            self.unsupported("maxContains needs the negation of the contains schema, which is not expressible",
                             where, "maxContains")
            return None
        x = self.node_of(rest)
        nn = self.node_of(n_expr) if n_expr is not None else x
        cap = chi if chi is not None else clo
        if cap > CONTAINS_UNROLL:
            return self.counted_contains(x, y, nn if n_expr is not None else None, lo, clo, chi)
        self.counter += 1
        prefix = f"{self.ns}contains{self.counter}"

        def name(c, started):
            return f"{prefix}_{c}_{int(started)}"

        for c in range(cap + 1):
            for started in (False, True):
                sp = self.sep if started else EPS
                alts = []
                if started and c >= clo:
                    alts.append(EPS)
                if n_expr is None and c >= cap:
                    alts.append(seq(sp, x, Ref(name(c, True))))
                else:
                    alts.append(seq(sp, nn, Ref(name(c, True))))
                    if chi is None or c + 1 <= chi:
                        alts.append(seq(sp, y, Ref(name(min(c + 1, cap), True))))
                self.rules[name(c, started)] = alt(*alts)
        empty = seq(lit("["), self.ws, lit("]")) if clo == 0 and lo == 0 else EMPTY  # (minItems 1 too)
        return alt(empty, seq(lit("["), self.ws, Ref(name(0, False)), self.ws, lit("]")))


    def counted_contains(self, x, y, nn, lo, clo, chi):
        """An array holding ``clo`` to ``chi`` items ``y`` (matching ``contains``) as one counted
        repetition: ``nn`` the other items (disjoint from ``y``), or ``None`` when the negation is
        not expressible (then ``chi`` is ``None`` and ``x`` is any item, ``y`` among them)."""
        sep = self.sep
        if nn is not None:
            others = repeat(seq(sep, nn), 0, None)
            g = seq(sep, y, others)  # the next matching item and the others after it
            first_n = seq(nn, others, repeat(g, clo, chi))
            first_y = seq(y, others, repeat(g, max(clo - 1, 0), None if chi is None else chi - 1)) \
                if chi is None or chi >= 1 else EMPTY
            body = alt(first_n, first_y)
        else:  # at least clo >= 1 items y among any items x: choose which (ambiguous, exact)
            xs = repeat(seq(x, sep), 0, None)
            body = seq(xs, y, repeat(seq(sep, xs, y), clo - 1, clo - 1), repeat(seq(sep, x), 0, None))
        empty = seq(lit("["), self.ws, lit("]")) if clo == 0 and lo == 0 else EMPTY
        return alt(empty, seq(lit("["), self.ws, body, self.ws, lit("]")))
