"""Arrays: positional items, counted repetition, ``contains`` counters and ``uniqueItems``."""

from __future__ import annotations

from dotjson import ir
from dotjson.ir import EMPTY, EPS, Ref, alt, lit, repeat, seq
from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.atoms import RuleRef
from dotjson.jsonschema.nodes import ArrayNode
from dotjson.jsonschema.unique_sets import UniqueChoices
from dotjson.jsonschema.values import FALSE, MAX_UNIQUE_VALUES, TRUE

#: ``contains`` keywords of one array (each a counter of its states; an item has an alternative
#: per set of them it counts for)
MAX_CONTAINS = 8
#: states of an array automaton with ``contains`` counters (positions × counts)
MAX_ARRAY_STATES = 50_000
#: ``minContains``/``maxContains`` up to this are unrolled (a rule per count, each small);
#: above, one counted repetition carries the count (any size: see dotjson.automaton.counters),
#: for one ``contains`` without a prefix or ``maxItems``.
CONTAINS_UNROLL = 1000


class ArrayBuilder:
    """The compiler's part for arrays: items by position, counts, ``contains`` counters and
    ``uniqueItems``.

    It reads of the compiler ``tr``: the syntax (``ws``, ``sep``), rule references to
    sub-schemas (``node_of``, ``literal``), the generation bounds (``gen_bounds``), phase 1's
    answers (``dnf``, ``merge``, ``expand_refs``, ``and_expr``, ``not_expr``, ``satisfies``,
    ``structured``, ``literal_cache``, ``syntactic_int``) and its refusals (``unsupported``,
    ``strict``); and writes its rule names (``ns``, ``counter``), rules (``rules``, ``pending``)
    and families (``families``).
    """

    def __init__(self, tr):
        self.tr = tr

    def build_array(self, a: ArrayNode, where) -> ir.Node:
        tr = self.tr
        lo, hi = a.min_items, a.max_items
        by_position, after = a.positions()
        pos_exprs = [tr.and_expr(es) for es in by_position]
        K = len(pos_exprs)
        rest = tr.and_expr(after)
        strings = bool(a.unique) and self.strings_only(pos_exprs, rest)
        if hi is None and tr.gen_bounds is not None and not a.contains and (not a.unique or strings):
            # the generation bound on items (not beside contains or uniqueItems over finite sets
            # or numbers, which count items their own way; distinct strings are as many as plain
            # ones)
            hi = self.items_bound(pos_exprs, rest, lo)
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
            node = self.unique_array(a, pos_exprs, rest, lo, hi, contains, where, strings)
            if node is not None:
                return node
        if contains:
            node = self.contains_array(pos_exprs, rest, lo, hi, contains, where)
            if node is not None:
                return node
        ws, sep = tr.ws, tr.sep
        empty = seq(lit("["), ws, lit("]")) if lo == 0 else EMPTY

        def tail(start):
            # items from position start on (start >= 1), each preceded by a comma: the nodes
            # asked for in order, the sequence built from the last (a loop: a nested function
            # calling itself is a reference cycle, left to the collector)
            end = K if hi is None else min(K, hi)
            nodes = [tr.node_of(pos_exprs[i]) for i in range(start, end)]
            if end < K or rest == FALSE:
                node = EPS
            else:
                node = repeat(seq(sep, tr.node_of(rest)), max(0, lo - K), None if hi is None else hi - K)
            for i in range(end - 1, start - 1, -1):
                more = seq(sep, nodes[i - start], node)
                node = alt(EPS, more) if i >= lo else more
            return node

        if hi == 0:
            return empty
        first = tr.node_of(pos_exprs[0]) if K > 0 else tr.node_of(rest)
        if K > 0:
            body = seq(first, tail(1))
        else:
            rlo = max(0, lo - 1)
            rhi = None if hi is None else hi - 1
            body = seq(first, repeat(seq(sep, first), rlo, rhi))
        return alt(empty, seq(lit("["), ws, body, ws, lit("]")))

    def finite_values(self, e):
        tr = self.tr
        if e == FALSE:
            return []
        if e == TRUE:
            return None
        out = {}
        for br in tr.dnf(e):
            if any(type(a) is RuleRef for a in br):
                try:
                    brs = tr.expand_refs(br, "")
                except UnsupportedSchemaError:
                    return None
            else:
                brs = [br]
            for b in brs:
                m = tr.merge(b)
                if m.enum is not None:
                    cs = [c for c in m.enum if tr.satisfies(tr.literal_cache[("v", c)], b)]
                elif m.types <= {"null", "boolean"}:
                    cs = []
                    for c in ([("n",)] if "null" in m.types else []) + \
                             ([("b", True), ("b", False)] if "boolean" in m.types else []):
                        tr.literal_cache.setdefault(("v", c), None if c[0] == "n" else c[1])
                        if c not in m.not_enum:
                            cs.append(c)
                else:
                    return None
                for c in cs:
                    out[c] = None
        return list(out)

    def unique_array(self, a: ArrayNode, pos_exprs, rest, lo, hi, contains, where, strings: bool):
        """Distinct items drawn from finite sets: the items of each position (``prefixItems``)
        and after them (``items``; ``false`` or a ``maxItems`` within the prefix ends the array)
        each an ``enum``/``const``/boolean/null set, at most ``MAX_UNIQUE_VALUES`` values in all:
        a rule family whose state is the set of values used
        (:class:`~dotjson.jsonschema.unique_sets.UniqueChoices`, made as decoding reaches it).
        Otherwise numbers (:meth:`unique_numbers`), any values with ``bounds="schema"`` and
        strings (``strings``: :meth:`strings_only`) in every configuration (:meth:`unique_values`),
        or a named refusal."""
        tr = self.tr
        K = len(pos_exprs)
        finite = None if contains else [self.finite_values(e) for e in pos_exprs]
        if finite is not None:
            closed = rest == FALSE or (hi is not None and hi <= K)
            finite.append([] if closed else self.finite_values(rest))
        universe = {}
        for vs in finite or [None]:
            if vs is None:
                universe = None
                break
            for c in vs:
                universe.setdefault(c, None)
        if universe is None or len(universe) > MAX_UNIQUE_VALUES:
            node = self.unique_numbers(rest, lo, hi) if not contains and K == 0 else None
            once = node is None and not contains and not strings and self.keys_once([*pos_exprs, rest])
            if node is None and not contains and (tr.gen_bounds is None or strings or once):
                node = self.unique_values(pos_exprs, rest, lo, hi, strings, once)
            if node is None:
                finite_sets = f"finite sets of at most {MAX_UNIQUE_VALUES} values in all (enum, const, boolean, null" + \
                    (f"; here {len(universe)})" if universe is not None else ") or numbers")
                tr.unsupported(
                    "uniqueItems beside contains (minContains of 1 or more, or maxContains) is not supported"
                    if contains else
                    "uniqueItems over items whose objects may repeat a key (an open object, patternProperties, "
                    "a free value) is exact only with bounds='schema' (the every-valid configuration; token masks "
                    "inside such an array walk a rule per byte of an item, docs/keywords.md); with the generation "
                    "bounds: strings, values whose objects are closed, or items drawn from " + finite_sets,
                    a.unique, "uniqueItems")
            return node
        vals = sorted(universe, key=repr)
        bit = {c: 1 << k for k, c in enumerate(vals)}
        allowed = [sum(bit[c] for c in vs) for vs in finite]  # per position, then the rest
        # (a string without its opening quote: the family writes it once for all of them)
        nodes = [seq(tr.lit_text(c[1]), lit('"')) if c[0] == "s" else tr.literal(c) for c in vals]
        fam = UniqueChoices(tr.fresh_prefix("uniq"), lo, hi, nodes, [c[0] == "s" for c in vals], allowed, tr.sep)
        empty = seq(lit("["), tr.ws, lit("]")) if lo == 0 else EMPTY
        if not fam.fits(0):  # (no array of max(lo, 1) distinct items)
            return empty
        tr.families.append(fam)
        return alt(empty, seq(lit("["), tr.ws, Ref(fam.start), tr.ws, lit("]")))

    def _expanded(self, e) -> list:
        """The branches of expression ``e``'s normal form with their ``$ref`` targets multiplied
        in (``UnsupportedSchemaError`` where that is refused)."""
        tr = self.tr
        out = []
        for br in tr.dnf(e):
            out.extend(tr.expand_refs(br, "") if any(type(at) is RuleRef for at in br) else [br])
        return out

    def strings_only(self, pos_exprs, rest) -> bool:
        """Whether every item of the array is a JSON string (each position's schema and the
        rest's, ``false`` included: no item there): the items :class:`UniqueValues` masks through
        :mod:`~dotjson.jsonschema.unique_strings`."""
        tr = self.tr
        for e in [*pos_exprs, rest]:
            if e == FALSE:
                continue
            if e == TRUE:
                return False
            try:
                out = self._expanded(e)
            except UnsupportedSchemaError:
                return False
            for br in out:
                m = tr.merge(br)
                if m.enum is not None:
                    if not all(c[0] == "s" for c in m.enum):
                        return False
                elif not m.types or not m.types <= {"string"}:
                    return False
        return True

    def items_bound(self, pos_exprs, rest, lo: int):
        """The generation bound on an array's items (``None``: none, where ``minItems`` asks for
        more: the schema wants long arrays), tighter where every item is an object or an array
        (20-40 tokens each to a model)."""
        tr = self.tr
        most = tr.gen_bounds["structured_items"] \
            if all(tr.structured(e) for e in [*pos_exprs, rest]) else tr.gen_bounds["items"]
        if lo <= most:
            return most
        return tr.gen_bounds["items"] if lo <= tr.gen_bounds["items"] else None

    def keys_once(self, exprs) -> bool:
        """Whether no object the schemas ``exprs`` allow, at any depth, may hold a key twice:
        every object is closed to its declared names (``additionalProperties: false``, or closed
        by ``close_objects``), each held at most once, with no ``patternProperties`` and no free
        value (``true``, ``{}``, an object without properties) anywhere. ``False`` when in doubt
        (a refusal while expanding, a witness member): an open object's undeclared keys may
        repeat, and the last member of a name is the value's (:mod:`.unique_any`)."""
        tr = self.tr
        busy: set = set()

        def ok(e) -> bool:
            if e == FALSE:
                return True
            if e == TRUE:
                return False
            try:
                if e in busy:
                    return True  # (a recursive schema: its objects are checked where first met)
                busy.add(e)
            except TypeError:
                return False
            for br in self._expanded(e):
                m = tr.merge(br)
                if m.enum is not None:
                    continue  # (constants: each spelled with its keys once)
                if "object" in m.types:
                    o = m.object
                    if o.patterns or o.some:
                        return False
                    shut = any(x[0] == FALSE and not x[2] for x in o.additional)
                    held = [nm for nm in o.declared if FALSE not in o.properties.get(nm, ())]
                    if not shut and not (tr.close_objects and not o.additional and held):
                        return False
                    if not all(ok(tr.and_expr(list(es))) for nm, es in o.properties.items() if FALSE not in es):
                        return False
                if "array" in m.types:
                    by_position, after = m.array.positions()
                    if not all(ok(tr.and_expr(es)) for es in [*by_position, after]):
                        return False
            return True

        try:
            return all(ok(e) for e in exprs)
        except UnsupportedSchemaError:
            return False

    def members_grow(self, exprs) -> bool:
        """Whether every object the schemas ``exprs`` allow as a whole value stays allowed with
        one member more whose name no schema speaks of (any value): each branch that admits
        objects (a ``maxProperties`` below its required names' count admits none) declares no
        ``maxProperties``, ``propertyNames`` or ``patternProperties`` (a witness member, which
        a negated object keyword asks for, is said to exist: it still does with a member more),
        its ``additionalProperties`` have a value in common (known without
        building a rule: :meth:`Compiler.expr_known`), it has no ``$ref``,
        ``enum`` or excluded object value left beside it, and the objects are open
        (``close_objects=False``, no generation bound on members). Such a member keeps the value
        in the branch it was in (declared members, required names and ``minProperties`` are
        unchanged or still met), so an item of an array of distinct values that has begun as an
        object can always become a value no other item is (:meth:`UniqueValues.live`,
        ``members_grow``; the names it adds, :data:`~dotjson.jsonschema.unique.FRESH_KEYS`, are
        none the branches name). ``False`` when in doubt (a refusal while expanding)."""
        from dotjson.jsonschema.unique import FRESH_KEYS

        tr = self.tr
        if tr.close_objects or tr.gen_bounds is not None:
            return False
        try:
            for e in exprs:
                if e == TRUE:
                    continue  # (any value: any object with one member more is one)
                if e == FALSE:
                    continue
                for br in self._expanded(e):
                    m = tr.merge(br)
                    if "object" not in m.types:
                        continue
                    o = m.object
                    if o.max_properties is not None and (
                            o.max_properties < len(o.required) or o.max_properties < o.min_properties):
                        continue  # (a branch no object is in: none of its objects must grow)
                    # (witness members, `some`, are said to exist: an object holding them still
                    # does with a member more, whose fresh name is no absent name of a negated
                    # branch either)
                    if m.enum is not None or m.refs or o.max_properties is not None or o.property_names \
                            or o.patterns or any(c[0] == "o" for c in m.not_enum) \
                            or any(k in o.properties or k in o.required for k in FRESH_KEYS):
                        return False  # (an excluded object may hold the name; the name is the schema's)
                    extra = [x[0] for x in o.additional if x[0] != TRUE]
                    if extra and tr.expr_known(tr.and_expr(extra))[1] is not True:
                        return False  # (the member's value: one of each additionalProperties schema)
        except UnsupportedSchemaError:
            return False
        return True

    def unique_numbers(self, rest, lo, hi):
        """Arrays of distinct numbers (:class:`~dotjson.jsonschema.unique.UniqueNumbers`) when
        ``rest`` is one branch of numbers only (``type: integer``/``number`` with bounds,
        ``multipleOf``, excluded values), else ``None``."""
        tr = self.tr
        from dotjson.jsonschema.unique_numbers import UniqueNumbers, item_params

        if rest in (TRUE, FALSE):
            return None
        brs = tr.dnf(rest)
        if len(brs) != 1:
            return None
        (br,) = brs
        if any(type(at) is RuleRef for at in br):
            try:
                brs = tr.expand_refs(br, "")
            except UnsupportedSchemaError:
                return None
            if len(brs) != 1:
                return None
            (br,) = brs
        m = tr.merge(br)
        if m.enum is not None or not m.types or not m.types <= {"integer", "nonint"}:
            return None
        both = m.types == {"integer", "nonint"}
        if tr.syntactic_int and not both:
            return None  # (draft 4: 1.0 is no integer; values alone cannot tell)
        item = item_params(m, None if both else "integer" in m.types)
        consts = [c for c in (item["lo"], item["hi"], *item["ne"]) if c is not None]
        # the item's own spelling policy: numbers="any", or a number with nothing to compare
        exponents = bool(tr.exponents) or (
            both and not item["mults"] and not item["notmults"] and all(float(c) == 0 for c in consts))
        fam = UniqueNumbers(tr.fresh_prefix("unum"), lo, hi, item, exponents, tr.sep,
                            self._unique_item_node(m, both, exponents))
        tr.families.append(fam)
        empty = seq(lit("["), tr.ws, lit("]")) if lo == 0 else EMPTY
        return alt(empty, seq(lit("["), tr.ws, Ref(fam.start), tr.ws, lit("]")))

    def _unique_item_node(self, m, both: bool, exponents: bool):
        """The numbers of merged branch ``m`` as the compiler writes them, with no generation
        bound on their digits and exponents exactly where ``exponents`` (the family's own
        language: its relaxed item, for token masks), or ``None`` where the compiler writes none
        such (numbers in every spelling under the generation bounds)."""
        tr, n = self.tr, m.number
        ne = tuple(sorted(c[1] for c in m.not_enum if c[0] == "x"))
        args = (n.lo, n.lo_excl, n.hi, n.hi_excl, tuple(n.multiples), tuple(n.not_multiples), ne,
                "integer" in m.types, "nonint" in m.types, "")
        if tr.gen_bounds is None:
            return tr.numbers.number_node(*args)
        if tr.exponents:
            return None
        if both and n.lo is None and n.hi is None and not n.multiples and not n.not_multiples and not ne:
            return None if not exponents else Ref(tr.bp + "json_number")  # (not the generation bounds' free number)
        return tr.numbers.plain_number_node(*args)

    def unique_values(self, pos_exprs, rest, lo, hi, strings: bool, keys_once: bool = False):
        """Arrays of distinct values of any item schemas
        (:class:`~dotjson.jsonschema.unique.UniqueValues`: a rule per byte of an item, its
        items read by an automaton of their own over this grammar's rules). Under the generation
        bounds, items that are not all strings (those are bounded with plain arrays) get the
        generation bound on items too."""
        tr = self.tr
        from dotjson.jsonschema.unique import UniqueValues

        if hi is None and tr.gen_bounds is not None and not strings:
            hi = self.items_bound(pos_exprs, rest, lo)
        items = [tr.node_of(e) for e in pos_exprs] + [tr.node_of(rest)]
        grow = not strings and not keys_once and self.members_grow([*pos_exprs, rest])
        fam = UniqueValues(tr.fresh_prefix("uval"), lo, hi, items, tr.sep,
                           grammar_of=tr.the_grammar, strings=strings, keys_once=keys_once, members_grow=grow)
        tr.families.append(fam)
        empty = seq(lit("["), tr.ws, lit("]")) if lo == 0 else EMPTY
        return alt(empty, seq(lit("["), tr.ws, Ref(fam.start), tr.ws, lit("]")))

    def contains_array(self, pos_exprs, rest, lo, hi, contains, where):
        """Arrays with ``contains`` counters: a state per item position (up to the prefix, or
        ``maxItems``) and count of items matching each ``contains`` schema (up to its
        ``maxContains``, else its ``minContains``). An item may count for any set of the
        ``contains`` schemas it matches; one with a ``maxContains`` counts exactly (the item
        that does not count must not match it: its negation)."""
        tr = self.tr
        # (a contains from a position on: the negation of `items` after a prefix)
        starts = [c[3] if len(c) > 3 else 0 for c in contains]
        contains = [c[:3] for c in contains]
        m = len(contains)
        if m > MAX_CONTAINS:
            tr.unsupported(f"more than {MAX_CONTAINS} contains per array", where, "contains")
            return None
        K = len(pos_exprs)
        caps = [chi if chi is not None else clo for _, clo, chi in contains]
        negs = {}
        for k, (e, clo, chi) in enumerate(contains):
            if chi is None:
                continue
            try:
                tr.strict += 1
                n_expr = tr.not_expr(e)
                tr.dnf(n_expr)
            except UnsupportedSchemaError:
                n_expr = None
            finally:
                tr.strict -= 1
            if n_expr is None:
                tr.unsupported("maxContains needs the negation of the contains schema, which is not expressible",
                                 where, "maxContains")
                return None
            negs[k] = n_expr
        if m == 1 and K == 0 and hi is None and starts[0] == 0 and caps[0] > CONTAINS_UNROLL:
            return self.counted_contains(rest, contains[0], negs.get(0), lo, where)
        top = hi if hi is not None else max(K, lo, 1, *starts)  # the positions told apart
        n_states = top + 1
        for c in caps:
            n_states *= c + 1
        if n_states > MAX_ARRAY_STATES:
            tr.unsupported(f"contains counters over more than {MAX_ARRAY_STATES} array states", where, "contains")
            return None
        prefix = tr.fresh_prefix("contains")
        made: dict = {}

        def item(i):
            return pos_exprs[i] if i < K else rest

        def state(i, counts):
            nm = made.get((i, counts))
            if nm is None:
                nm = made[(i, counts)] = f"{prefix}_{i}_" + "_".join(map(str, counts))
                tr.pending[nm] = lambda: body(i, counts)
            return Ref(nm)

        def body(i, counts):
            alts = []
            if i > 0 and i >= lo and all(c >= clo for c, (_, clo, _) in zip(counts, contains)):
                alts.append(EPS)
            if hi is not None and i >= hi:
                return alt(*alts)
            sp = tr.sep if i > 0 else EPS
            nxt = i + 1 if hi is not None else min(i + 1, top)
            for B in range(1 << m):
                es = [item(i)]
                new = list(counts)
                ok = True
                for k, (e, _, chi) in enumerate(contains):
                    if i < starts[k]:
                        if B >> k & 1:
                            ok = False  # (an item before its first position does not count)
                            break
                        continue
                    if B >> k & 1:
                        if chi is not None and counts[k] + 1 > chi:
                            ok = False
                            break
                        es.append(e)
                        new[k] = min(counts[k] + 1, caps[k])
                    elif k in negs:
                        es.append(negs[k])
                if not ok:
                    continue
                ve = tr.and_expr(es)
                if ve != FALSE:
                    alts.append(seq(sp, tr.node_of(ve), state(nxt, tuple(new))))
            return alt(*alts)

        empty_ok = lo == 0 and all(clo == 0 for _, clo, _ in contains)
        empty = seq(lit("["), tr.ws, lit("]")) if empty_ok else EMPTY
        if hi == 0:
            return empty
        return alt(empty, seq(lit("["), tr.ws, state(0, (0,) * m), tr.ws, lit("]")))

    def counted_contains(self, rest, contains, neg, lo, where):
        """An array holding ``clo`` to ``chi`` items matching ``contains`` (``(e, clo, chi)``)
        as one counted repetition, for counts too large to unroll: ``neg`` the negation of ``e``
        (the other items, disjoint from the matching ones) when ``chi`` is given, else ``None``
        (then at least ``clo`` of any items match)."""
        tr = self.tr
        e, clo, chi = contains
        if lo > max(clo, 1):
            tr.unsupported("contains with minItems above a large minContains is not supported",
                             where, "contains")
            return None
        sep = tr.sep
        y = tr.node_of(tr.and_expr([rest, e]))
        if neg is not None:
            nn = tr.node_of(tr.and_expr([rest, neg]))
            others = repeat(seq(sep, nn), 0, None)
            g = seq(sep, y, others)  # the next matching item and the others after it
            first_n = seq(nn, others, repeat(g, clo, chi))
            first_y = seq(y, others, repeat(g, max(clo - 1, 0), None if chi is None else chi - 1)) \
                if chi is None or chi >= 1 else EMPTY
            body = alt(first_n, first_y)
        else:  # at least clo >= 1 items y among any items x: choose which (ambiguous, exact)
            x = tr.node_of(rest)
            xs = repeat(seq(x, sep), 0, None)
            body = seq(xs, y, repeat(seq(sep, xs, y), clo - 1, clo - 1), repeat(seq(sep, x), 0, None))
        empty = seq(lit("["), tr.ws, lit("]")) if clo == 0 and lo == 0 else EMPTY
        return alt(empty, seq(lit("["), tr.ws, body, tr.ws, lit("]")))
