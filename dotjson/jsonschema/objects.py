"""Objects: a right-linear automaton over the declared properties in schema order.

Extra members (keys not declared, split by the ``patternProperties`` they match) may appear between
the declared ones where the schema allows extras; ``required`` names outside ``properties`` float
(a bit mask); ``minProperties``/``maxProperties`` are a counter. See ``docs/keywords.md``.
"""

from __future__ import annotations

from operator import itemgetter

from dotjson import ir
from dotjson.ir import EMPTY, EPS, Ref, alt, lit, repeat, seq
from dotjson.ir.analysis import all_of
from dotjson.jsonschema.key_trie import KeySet, KeyTrie, known_by_member
from dotjson.jsonschema.objects_any_order import any_order_object
from dotjson.jsonschema.pattern_keys import fixed_key_members, same_pattern_schemas, split_patterns
from dotjson.jsonschema.nodes import ObjectNode
from dotjson.jsonschema.strings import matches_every_string
from dotjson.jsonschema.values import FALSE, MAX_FLOATING, MAX_KEY_CLASSES, MAX_OBJECT_STATES, MAX_PATTERN_CLASSES

#: objects declaring more names than this reach their undeclared keys through a trie of the
#: names (below, the "any key but these" difference is small enough)
WIDE_EXTRA = 64
#: members an object must hold (``some`` atoms: witnesses against negated object keywords), each
#: a bit of the object automaton's state
MAX_WITNESSES = 8


def _subsets(bits: int):
    """The non-empty subsets of the bit set ``bits``, as bit sets."""
    b = bits
    while b:
        yield b
        b = (b - 1) & bits


def key_classes(entries: list, may_share, limit: int):
    """The subsets of ``entries`` (patterns and witness key languages) one key may match all of,
    in the order of :func:`itertools.combinations` by size (the empty one first), or ``None``
    when there are more than ``limit``. ``may_share(x, y)`` is False only where no key matches
    both ``x`` and ``y`` (a subset holding both is an empty class, left out): ``^schema `` and
    ``^table `` (pyrseas-0.8's fifteen prefixes) make 16 classes, not 2**15."""
    n = len(entries)
    ok = [[i == j or may_share(entries[i], entries[j]) for j in range(n)] for i in range(n)]
    out = [()]
    todo = [((i,), i) for i in range(n)]
    while todo:  # (the cliques of the graph `ok`, each grown by larger indices only)
        nxt = []
        for T, last in todo:
            out.append(T)
            if len(out) > limit:
                return None
            nxt += [(T + (j,), j) for j in range(last + 1, n) if all(ok[i][j] for i in T)]
        todo = nxt
    return [tuple(entries[i] for i in T) for T in out]


class ObjectBuilder:
    """Mixin of the compiler: objects."""

    def _may_share_key(self, x, y, where, wnames: dict) -> bool:
        """Some key may match both ``x`` and ``y`` (patterns, or witness key entries
        ``("w", a)`` whose finite names ``wnames`` holds): False only when proven disjoint, two
        patterns with anchored literal heads neither of which starts the other, or listed names
        none of which the other matches."""
        if isinstance(x, str) and isinstance(y, str):
            hx, hy = self._pattern_head(x, where), self._pattern_head(y, where)
            return hx.startswith(hy) or hy.startswith(hx)
        nx, ny = wnames.get(x), wnames.get(y)
        if nx is not None and ny is not None:
            return bool(set(nx) & set(ny))
        if nx is not None and isinstance(y, str):
            return any(self.key_matches(k, y) for k in nx)
        if ny is not None and isinstance(x, str):
            return any(self.key_matches(k, x) for k in ny)
        return True

    def _pattern_head(self, p: str, where) -> str:
        """The text every key pattern ``p`` matches starts with (``""`` when not anchored)."""
        n = self.regex(p, where, "patternProperties")
        if type(n) is ir.Seq and n.items:
            n = n.items[0]
        return n.text if type(n) is ir.Lit else ""

    def build_object(self, o: ObjectNode, where) -> ir.Node:
        # the declared names (a required one outside `properties` too), each with its schemas;
        # the lists are o's own, read only (a copy per property was 10,000 lists for the
        # collector to track in a 10,000-property object)
        props = dict(o.properties)
        for r in o.required:
            props.setdefault(r, ())
        required = o.required
        plo, phi = o.min_properties, o.max_properties
        if phi is not None and (plo > phi or len(required) > phi):
            return EMPTY
        # close_objects closes an object that declares a property it may hold (a `properties`
        # name whose schema is not `false`) or patternProperties; one declaring none stays open
        # (closing `{"not": {"required": ["x"]}}` would leave it only `{}`)
        # a member the object must hold (`some`: a witness against a negated object keyword)
        # has a key the schema may not declare: such an object stays open, or it could be empty
        wit = list(dict.fromkeys(o.some))
        if any(v == FALSE for _, v in wit):
            return EMPTY
        W = len(wit)
        if W > MAX_WITNESSES:
            r = self.unsupported(f"more than {MAX_WITNESSES} members an object must hold (negated object "
                                 "keywords under not/oneOf/if)", where, "not")
            if r is None:
                wit, W = [], 0
        closed = self.close_objects and not o.additional and (o.declared or o.patterns) and not wit
        pn = self.and_expr(o.property_names) if o.property_names else None
        rq = set(required)
        ae = self.and_expr
        empty_values = []  # (a schema `false`, a contradiction the normal form shows)

        def value(es):
            ve = ae(es)
            if ve == FALSE:
                empty_values.append(ve)
            return ve

        if not o.patterns and not o.additional and pn is None:
            # each value is its property's own schemas (most objects; one pass, as lean as it
            # goes: a 10,000-property object pays it at its first mask)
            declared = [(name, es[0] if len(es) == 1 and es[0][0] == "loc" else value(es), name in rq)
                        for name, es in props.items()]
        else:
            declared = []
            own = not o.patterns and not o.additional  # a value's schemas are the property's own
            for name, es in props.items():
                if not own:
                    es = self.member_schemas(o, name, es)
                if pn is not None and not self.validate(name, pn):
                    es = [*es, FALSE]
                declared.append((name, value(es), name in rq))
        # (a required value that is empty by its normal form is found by the productivity
        # analysis, exactly, when the object's states are asked about: not searched here)
        if empty_values:
            if any(d[2] and d[1] == FALSE for d in declared):
                return EMPTY
            declared = [d for d in declared if d[1] != FALSE]
        # the witnesses each declared name may be (its key is one the `some` atom speaks of)
        wit_of = [sum(1 << a for a, (spec, _) in enumerate(wit) if self.key_in(d[0], spec)) for d in declared] \
            if wit else None
        if closed and not o.patterns and not any(d[0] in o.declared and d[1] != FALSE for d in declared):
            closed = False  # every declared name is forbidden: nothing is declared to be held
        # extra members: keys that are not declared, split by which patterns they match
        if True:  # (closed objects keep their patternProperties keys; only the rest is shut)
            pats = list(dict.fromkeys([p for p, _ in o.patterns] + [q for _, _, qs in o.additional for q in qs]
                                      + [sp[1] for sp, _ in wit if sp[0] == "p"]
                                      + [q for sp, _ in wit if sp[0] == "a" for q in sp[2]]))
            # a pattern every key matches (`.*`, `^a*`, the empty one) is in every class: none lacks it,
            # and it narrows no key (its language, with escapes, in an And/Diff of the key cost
            # the automaton hundreds of states to find the class without it empty)
            univ = {p for p in pats if matches_every_string(self.regex(p, where, "patternProperties"))}
            if univ:
                pats = [p for p in pats if p not in univ]
            fixed_members, fixed_names = [], []
            # key languages of the witnesses that are not patterns: the names an
            # additionalProperties leaves out that this object does not declare, the keys a
            # negated propertyNames allows; extra keys are split by them too
            wlangs = []
            wnames = {}  # the finite witness key languages' names
            for a, (sp, _) in enumerate(wit):
                if sp[0] == "a":
                    names = sorted(n for n in sp[1] if n not in props)
                    if names:
                        wlangs.append((("w", a), alt(*(self.enc_text(n) for n in names))))
                        wnames[("w", a)] = names
                elif sp[0] == "n":
                    wlangs.append((("w", a), self.key_language(sp[1])))

            def classes(entries):
                # the key classes: the sets of entries one key may match all of (``None``
                # past MAX_KEY_CLASSES); 2**len(entries) unless some are disjoint
                return key_classes(entries, lambda x, y: self._may_share_key(x, y, where, wnames),
                                   MAX_KEY_CLASSES)

            if wit:
                if classes(pats + [k for k, _ in wlangs]) is None:
                    r = self.unsupported(f"more than {MAX_KEY_CLASSES} key classes (patternProperties and the "
                                         "keys of negated object keywords)", where, "patternProperties")
                    if r is None:
                        wit, W, wlangs, wit_of = [], 0, [], None
            wlang = dict(wlangs)
            if 2 ** len(pats) > MAX_PATTERN_CLASSES and not wit and not same_pattern_schemas(o):
                # finite patterns (`^SHA-256$`) become listed keys; classes range over the rest
                split = split_patterns(pats, lambda p: self.regex(p, where, "patternProperties"),
                                       MAX_PATTERN_CLASSES)
                if split is not None:
                    pats = split[1]
                    fixed_members, fixed_names = fixed_key_members(self, split[0], o, set(props), pn)
            # beyond 16 classes: one class for all patterns when they share a schema, else
            # (up to 6 patterns) every class of the patterns a key matches
            same = 2 ** len(pats) > MAX_PATTERN_CLASSES and not wit and same_pattern_schemas(o)
            subsets = None if same else classes(pats + [k for k, _ in wlangs])
            if same or subsets is None:
                if not same:
                    r = self.unsupported(f"more than {MAX_KEY_CLASSES} key classes (patternProperties with different "
                                         "schemas one key may match together, not finite)", where, "patternProperties")
                    if r is None:
                        pats = []
                subsets = [(), tuple(pats)] if same else [()]
                union_mode = same
            else:
                union_mode = False
            pn_lang = self.key_language(pn) if pn is not None else None
            live = []
            for T in subsets:
                Tset = set(T) | univ
                es = [e for p, e in o.patterns if p in Tset]
                es += [e for e, names, qs in o.additional if not (set(qs) & Tset)]
                if not Tset and closed:
                    es.append(FALSE)
                ve = self.and_expr(es)
                if ve == FALSE or pn_lang == EMPTY:
                    continue
                live.append((T, ve))

        def class_wit(T):
            # the witnesses an extra key of class T is (the entries of T: the patterns and
            # witness key languages it matches)
            Tset = set(T) | univ
            out = 0
            for a, (sp, _) in enumerate(wit):
                if sp[0] == "p":
                    ok = sp[1] in Tset
                elif sp[0] == "a":
                    ok = not (set(sp[2]) & Tset) and ("w", a) not in Tset
                else:
                    ok = ("w", a) in Tset
                if ok:
                    out |= 1 << a
            return out

        def wit_value(ve, B):
            # the value of a member that is the witnesses B too
            return self.and_expr([ve] + [wit[a][1] for a in range(W) if B >> a & 1])

        def extra_member():
            # built when the automaton first reaches an extra member (phase 2)
            classes = []
            if not self.whole and len(props) > WIDE_EXTRA and not pats and pn_lang is None and not fixed_names \
                    and not wit:
                # "any key but these thousands" as a lazy complement of their trie: a byte of
                # the key follows one branch, and starting it builds a rule, not every name
                for T, ve in live:
                    classes.append(seq(lit('"'), undeclared_key(KeyTrie(list(props)), ve)))
                return alt(*classes)
            for T, ve in live:
                classes.append(seq(lit('"'), class_content(T), lit('"'), self.colon, self.node_of(ve)))
            classes.extend(fixed_members)
            return alt(*classes)

        contents: dict = {}
        declared_spellings: list = []

        def key_bound(T):
            # the generation bound on string length cuts the extra keys of class T too (a model
            # otherwise writes one key without end: `"S_S_S_…"` under a `^S_` pattern, MaskBench
            # Github_hard---o36012), where it cannot empty a class the object needs (no
            # minProperties beyond the declared names, no witnesses) and each pattern of T has
            # keys of any length, the shortest within the bound (as for a string's pattern)
            if self.gen_bounds is None or wit or plo > len(props):
                return False
            return all(isinstance(p, str) and self.bound_fits(self.regex(p, where, "patternProperties"))
                       for p in T)

        def class_content(T):
            # the spellings of the extra keys of class T (the patterns and witness key
            # languages they match, none of the others, no declared or listed name)
            hit = contents.get(T)
            if hit is not None:
                return hit
            if not declared_spellings:
                declared_spellings.append([self.enc_text(n) for n in props])
            declared_names = declared_spellings[0]
            Tset = set(T)
            if union_mode and T:
                pos = [alt(*(self.enc_pattern(p, where) for p in T))]
                neg = list(declared_names)
            else:
                pos = [self.enc_pattern(p, where) if isinstance(p, str) else wlang[p] for p in T]
                neg = [self.enc_pattern(q, where) for q in pats if q not in Tset]
                neg += [x for k, x in wlangs if k not in Tset]
                neg += declared_names + fixed_names
            if pn_lang is not None:
                pos.append(pn_lang)
            elif key_bound(T):
                pos.append(self.jsonstr.string_of_length(0, self.gen_bounds["string_length"]))
            if not pos:
                content = self.jsonstr.json_string_content()
            elif len(pos) == 1:
                content = pos[0]
            else:
                content = ir.And(tuple(pos))
            if neg:
                content = ir.Diff(content, alt(*neg))
            contents[T] = content
            return content

        wextra: dict = {}

        def witness_extra(B):
            # an extra member that is the witnesses B (all of them): a rule, or None when no
            # extra key is
            if B in wextra:
                return wextra[B]
            cls = [(T, ve) for T, ve in live if class_wit(T) & B == B]
            ref = None
            if cls:
                nm = f"{xname}_w{B}"
                self.pending[nm] = lambda: alt(*(seq(lit('"'), class_content(T), lit('"'), self.colon,
                                                     self.node_of(wit_value(ve, B))) for T, ve in cls))
                ref = Ref(nm)
            wextra[B] = ref
            return ref

        def variants(ve, wj, mask):
            # (value, mask after) of a member with value ve that may be the witnesses wj: the
            # plain value, and the value of each set of witnesses still missing it may be
            miss = (wj << F) & ~mask
            out = [(ve, mask)]
            for B in _subsets(miss >> F):
                out.append((wit_value(ve, B), mask | (B << F)))
            return out

        def undeclared_key(trie, ve):
            # after `"`: the rest of a key that is not a declared name, its closing quote, `:`
            # and the value. After the prefix P = keys[q][:d] (a prefix of some name): a
            # character no name continues P with, then any content; or one that some name does
            # (recursively); or the end, unless P is itself a name.
            after = seq(lit('"'), self.colon, self.node_of(ve))
            sure = True if self.expr_known(ve)[1] else None
            content = self.jsonstr.json_string_content()
            # the generation bound on a key's characters, counted from where it leaves the names
            most = self.gen_bounds["string_length"] if key_bound(()) else None
            others: dict = {}  # (characters continuing P, depth) -> the node for every other one

            def node(q, d):
                nm = f"{xname}_nk_{q}_{d}"
                if nm not in self.rules and nm not in self.pending:
                    self.pending[nm] = lambda: body(q, d)
                    self.state_hints[nm] = (False, sure)
                return Ref(nm)

            def body(q, d):
                e = trie.end(q, d)
                alts, used = [], []
                k = q
                if len(trie.keys[q]) == d:  # P is a name: the key may not end here
                    k += 1
                else:
                    alts.append(after)
                while k < e:
                    ch = trie.keys[k][d]
                    used.append(ord(ch))
                    alts.append(seq(self.enc_text(ch), node(k, d + 1)))
                    k = trie.end(k, d + 1)
                rkey = (tuple(used), d if most is not None else 0)
                rest = others.get(rkey)
                if rest is None:
                    other, lo = [], 0
                    for cp in used:  # ascending: the names are sorted
                        if cp > lo:
                            other.append((lo, cp - 1))
                        lo = cp + 1
                    if lo <= ir.MAX_CODEPOINT:
                        other.append((lo, ir.MAX_CODEPOINT))
                    tail = content if most is None else self.jsonstr.string_of_length(0, max(most - d - 1, 0))
                    rest = others[rkey] = seq(self.jsonstr.encode_chars(ir.Chars(tuple(other))), tail, after)
                alts.append(rest)
                return alt(*alts)

            return node(0, 0)

        X = None
        xname = None
        if live or fixed_members:
            # one rule for "an extra member" (it recurs in every state of the automaton below)
            self.counter += 1
            xname = f"{self.ns}extra{self.counter}"
            self.pending[xname] = extra_member
            if not pats and pn_lang is None and not wit:
                # any key but the declared names (finitely many: infinitely many keys are left),
                # so an extra member exists when its value does: known without building the
                # Diff of keys and asking the automaton whether it is empty
                self.state_hints[xname] = lambda: (
                    False, True if any(self.expr_known(ve)[1] for _, ve in live) else None)
            X = Ref(xname)
        F = 0  # (in schema order the witness bits come after the floating names': set below)
        if self.property_order == "any":
            if not wit:
                return any_order_object(self, declared, X, plo, phi)
            return any_order_object(self, declared, X, plo, phi, witnesses=(
                W, lambda j: [(B, self.node_of(wit_value(declared[j][1], B))) for B in _subsets(wit_of[j])],
                lambda: [(B, r) for B in range(1, 1 << W) for r in [witness_extra(B)] if r is not None]))
        # required names that `properties` does not declare have no schema position: they may
        # appear anywhere extras may (tracked by a bit mask), when there are few of them
        floating = [d for d in declared if d[0] not in o.properties] if len(props) > len(o.properties) else []
        if len(floating) > MAX_FLOATING:
            floating = []
        chain = [d for d in declared if d[0] in o.properties] if floating else declared
        F = len(floating)
        if wit:
            wof = dict(zip((d[0] for d in declared), wit_of))
            chain_wit = [wof[d[0]] for d in chain]
            float_wit = [wof[d[0]] for d in floating]

        def member(name, ve):
            return seq(lit('"'), self.lit_text(name), lit('"'), self.colon, self.node_of(ve))

        members: dict = {}
        fmembers = [member(name, ve) for name, ve, _ in floating]
        full = (1 << (F + W)) - 1
        reqs = [req for _, _, req in chain] if rq else None
        n = len(chain)
        # extras_only: the counter counts the undeclared members alone (the generation bound)
        extras_only = False
        if X is not None and self.gen_bounds is not None and phi is None:
            # the generation bound on undeclared members: at most that many of them, whichever
            # declared ones the document holds (a counter like maxProperties', of the extra
            # members; not where it would pass the limit on the object's states). Beside
            # minProperties (not where it asks for more than the bound) the counter counts every
            # member, so the bound is on members beyond the declared ones.
            extra = self.gen_bounds["extra_members"]
            if live and not fixed_members and all(self.structured(ve) for _, ve in live):
                extra = self.gen_bounds["structured_members"]  # each value an object or array
            if plo == 0:
                # the count is 0 before any member, 1 + the extra members after: a declared
                # member only makes it at least 1 (the separator and `done` ask whether a
                # member came before)
                if (n + 1) * 2 * (extra + 2) * (full + 1) <= MAX_OBJECT_STATES:
                    phi, extras_only = extra + 1, True
            else:
                lim = n + len(floating) + extra
                if plo <= lim and (n + 1) * 2 * (lim + 1) * (full + 1) <= MAX_OBJECT_STATES:
                    phi = lim
        if X is None:  # no other members: a bound beyond the declared ones is no bound
            if plo > n + len(floating):
                return EMPTY
            if phi is not None and phi >= n + len(floating):
                phi = None
        open_ = seq(lit("{"), self.ws)
        close = seq(self.ws, lit("}"))
        empty_ok = not (reqs and any(reqs)) and plo == 0 and not floating and not wit
        empty = seq(lit("{"), self.ws, lit("}")) if empty_ok else EMPTY
        if n == 0 and not floating and not wit:
            if X is None:
                return empty
            if phi == 0:
                return empty
            rlo = max(plo - 1, 0)
            rhi = None if phi is None else phi - (2 if extras_only else 1)
            return alt(empty, seq(open_, X, repeat(seq(self.sep, X), rlo, rhi), close))
        cap = max(1, phi if phi is not None else plo)
        nstates = (n + 1) * 2 * (cap + 1) * (full + 1)
        # without a counter the states are linear in the members, and built only when reached
        if (plo > 0 or phi is not None) and nstates > MAX_OBJECT_STATES:
            r = self.unsupported("object too large for its minProperties/maxProperties counter", where,
                                 "maxProperties")
            if r is None:
                plo, phi, cap = 0, None, 1
        self.counter += 1
        prefix = f"{self.ns}obj{self.counter}"
        made: dict = {}
        # nreq[i]: the first required member at or after i (n when none)
        nreq = [n] * (n + 1)
        if reqs:
            for i in range(n - 1, -1, -1):
                nreq[i] = i if reqs[i] else nreq[i + 1]

        def rule(key, make, hint=None):
            # a rule of the object automaton, built when the automaton first reaches it
            nm = made.get(key)
            if nm is None:
                nm = made[key] = prefix + "_" + "_".join(map(str, key))
                self.pending[nm] = make
                if hint is not None:
                    self.state_hints[nm] = hint
            return Ref(nm)

        def inc(c):
            # the count after an extra member (or any member, but with extras_only)
            if extras_only:
                c += 1 if c > 0 else 2
                return c if c <= phi else None
            if phi is not None:
                return c + 1 if c + 1 <= phi else None
            return min(c + 1, cap)

        def inc_declared(c):
            # the count after a declared (or floating) member
            return max(c, 1) if extras_only else inc(c)

        def done(i, c, mask):
            # the object may close here: no required member left, enough members
            return nreq[i] == n and mask == full and c > 0 and c >= plo

        req_after: dict = {}  # i -> (every required member from i on certainly has a value, how many)

        def required_after(i):
            path = []  # (k, the first required member at or after k)
            k = i
            while k not in req_after:
                j = nreq[k]
                if j == n:
                    req_after[k] = (True, 0)
                    break
                path.append((k, j))
                k = j + 1
            ok, cnt = req_after[k]
            for k, j in reversed(path):  # the last required member first
                ok = ok and bool(self.expr_known(chain[j][1])[1])
                cnt += 1
                req_after[k] = (ok, cnt)
            return req_after[i]

        def sure(i, c, mask):
            # True when the object certainly completes from state (i, c, mask), where it may not
            # close yet: the required members left (in the chain and floating) have values by
            # their normal forms, and placing just them satisfies the counter; None: the
            # analysis builds and looks
            ok, cnt = required_after(i)
            if not ok:
                return None
            left = [fl[1] for k, fl in enumerate(floating) if not mask >> k & 1]
            if not all(self.expr_known(v)[1] for v in left):
                return None
            least = max(c, 1) if extras_only and (c or cnt or left) else c + cnt + len(left)
            if least == 0 or least < plo or (phi is not None and least > phi):
                return None  # an optional member is needed, or the bound decides: look
            return True

        def state_known(i, c, mask):
            # (nullable, productive) of a state where the object may not close yet
            if wit and mask >> F != full >> F:
                return (False, None)  # a witness still missing: the analysis looks
            j = nreq[i]
            if j < n and not floating and plo == 0 and phi is None:
                # no counter, no floating name: productive exactly when the next required
                # member's value and the state after that member are (the optional members
                # before it may all be skipped) - a condition, so the search goes on to the
                # value's own rule without building this state
                v = chain[j][1]
                val = True if self.expr_known(v)[1] else self.node_of(v)
                if val is not True:
                    val = val.name if isinstance(val, Ref) else False
                return (False, all_of(val, state(j + 1, inc_declared(c), mask).name))
            return (False, sure(i, c, mask))

        def state(i, c, mask):
            # members before i are behind (c of them counted, floating ones in mask). Its
            # language is nullable exactly when the object may close here (every other
            # alternative consumes), and then productive; otherwise `state_known` tells when
            # asked: the analyses need not build the state to know.
            d = done(i, c, mask)
            return rule(("s", i, c, mask), lambda: state_body(i, c, mask),
                        (d, True) if d else (lambda: state_known(i, c, mask)))

        def state_body(i, c, mask):
            sp = self.sep if c > 0 else EPS
            alts = []
            c2 = inc(c)
            if c2 is not None:
                if X is not None:
                    alts.append(seq(sp, X, state(i, c2, mask)))
                if wit:
                    for B in _subsets((full & ~mask) >> F):
                        y = witness_extra(B)
                        if y is not None:
                            alts.append(seq(sp, y, state(i, c2, mask | (B << F))))
            c2 = inc_declared(c)
            if c2 is not None:
                for j, fm in enumerate(fmembers):
                    if not mask & (1 << j):
                        if not wit:
                            alts.append(seq(sp, fm, state(i, c2, mask | (1 << j))))
                            continue
                        for ve, m2 in variants(floating[j][1], float_wit[j], mask):
                            alts.append(seq(sp, member(floating[j][0], ve), state(i, c2, m2 | (1 << j))))
                # the next member is any of i .. the first required one (the ones between are
                # optional and skipped): for the automaton, a trie of their names (a byte of a
                # key follows one branch); written out whole, a few nodes of a balanced tree
                # over the members (O(n) rules for all the states together)
                if i < n:
                    if self.whole:
                        alts.extend(cover(0, n, i, min(nreq[i], n - 1) + 1, c, c2, mask))
                    elif native_ok:
                        alts.append(seq(sp, quote, keys_rule(i, c2, mask)))
                    else:
                        alts.append(seq(sp, lit('"'), key_choice(i, c2, mask)))
            if done(i, c, mask):
                alts.append(EPS)
            return alt(*alts)

        tries: list = []
        quote = lit('"')

        def key_choice(i, c2, mask):
            # after the opening quote: the rest of member j's name, for j in i .. the first
            # required member, then its value and state(j + 1, c2, mask)
            if not tries:
                tries.append(KeyTrie([d[0] for d in chain]))
            trie = tries[0]
            return trie.choice(0, 0, trie.positions(0, 0, i, min(nreq[i], n - 1) + 1),
                               lambda j: tail(j, c2, mask), lambda q, d, pos: sub(q, d, pos, c2, mask),
                               self.lit_text)

        tails: dict = {}

        def member_rule(j, c2, mask):
            # after member j's closing quote: its value, the next state
            d = done(j + 1, c2, mask)
            if wit:
                def make():
                    return alt(*(seq(self.colon, self.node_of(ve), state(j + 1, c2, m2))
                                 for ve, m2 in variants(chain[j][1], chain_wit[j], mask)))
            else:
                def make():
                    return seq(self.colon, self.node_of(chain[j][1]), state(j + 1, c2, mask))
            return rule(("m", j, c2, mask), make,
                        (False, True if d and self.expr_known(chain[j][1])[1] else None))

        def tail(j, c2, mask):
            # after member j's name: the closing quote, its value, the next state; one rule per
            # member and continuation, shared (node and all) by every state that offers it
            hit = tails.get((j, c2, mask))
            if hit is None:
                hit = tails[(j, c2, mask)] = seq(quote, member_rule(j, c2, mask))
            return hit

        # Without a counter or a floating name, the key position of state i offers members i ..
        # the first required one, each followed by member_rule(j, 1, 0): the automaton builds it
        # natively from the sorted names (a KeySet), not as a trie of rules (key_choice, still
        # the rule's IR body: the analyses, rendering and saving read that). A member certainly
        # completes when its value is known to have one and so are the required members after it.
        native_ok = not fmembers and plo == 0 and phi is None and not wit
        keysets: list = []
        ok_from: list = []  # [which members certainly complete], made on first use

        def alive_many(js):
            # whether members js (an array, or one member) certainly complete the object: their
            # value is known to have an instance, and so are the required members after them.
            # required_after(k)[0] holds from some k on (the required members from k on all
            # have values by their normal forms): found once, by bisection
            if not ok_from:
                a, b = 0, n
                while a < b:
                    mid = (a + b) // 2
                    if required_after(mid)[0]:
                        b = mid
                    else:
                        a = mid + 1
                # members whose value has an instance by its normal form, asked once per
                # distinct value expression; a member completes from a - 1 on
                vals = list(map(itemgetter(1), chain))
                ok = known_by_member(vals, lambda i: self.expr_known(vals[i])[1] is True)
                ok[: max(a - 1, 0)] = False
                ok_from.append(ok)
            return ok_from[0][js]

        def keys_rule(i, c2, mask):
            if not keysets:
                if not tries:
                    tries.append(KeyTrie([d[0] for d in chain]))
                keysets.append(KeySet(tries[0], alive_many, lambda j: member_rule(j, 1, 0).name,
                                       spelling=self.jsonstr.lit_char))
            ref = rule(("K", i, c2, mask), lambda: key_choice(i, c2, mask),
                       (False, True if alive_many(i) else None))
            self.native[ref.name] = (keysets[0], i, min(nreq[i], n - 1) + 1)
            return ref

        def sub(q, d, pos, c2, mask):
            # the sub-trie of prefix keys[q][:d] offering the names at pos: the members of that
            # prefix between the least and the greatest offered one (a state offers a range of
            # members), so every state offering the same ones shares it
            trie = tries[0]
            js = trie.member[pos]
            lo, hi = int(js.min()), int(js.max()) + 1
            # productive when one offered member certainly completes the object; otherwise the
            # analysis builds it and looks (never a dead state)
            j = int(js[0])
            sure = True if self.expr_known(chain[j][1])[1] and done(j + 1, c2, mask) else None
            return rule(("k", q, d, lo, hi, c2, mask),
                        lambda: trie.choice(q, d, trie.positions(q, d, lo, hi), lambda j: tail(j, c2, mask),
                                            lambda q2, d2, pos2: sub(q2, d2, pos2, c2, mask), self.lit_text),
                        (False, sure))

        def leaf(j, c, c2, mask):
            if wit:
                return alt(*(seq(self.sep if c > 0 else EPS, member(chain[j][0], ve), state(j + 1, c2, m2))
                             for ve, m2 in variants(chain[j][1], chain_wit[j], mask)))
            mb = members.get(j)
            if mb is None:
                mb = members[j] = member(chain[j][0], chain[j][1])
            return seq(self.sep if c > 0 else EPS, mb, state(j + 1, c2, mask))

        def node(lo, hi, c, c2, mask):
            if hi - lo == 1:
                return leaf(lo, c, c2, mask)
            mid = (lo + hi) // 2
            return rule(("t", lo, hi, c, mask),
                        lambda: alt(node(lo, mid, c, c2, mask), node(mid, hi, c, c2, mask)))

        def cover(lo, hi, a, b, c, c2, mask):
            # canonical tree nodes covering members a .. b-1 (O(log n) of them)
            out = []
            stack = [(lo, hi)]
            while stack:
                lo, hi = stack.pop()
                if a <= lo and hi <= b:
                    out.append(node(lo, hi, c, c2, mask))
                    continue
                mid = (lo + hi) // 2
                if b > mid:
                    stack.append((mid, hi))
                if a < mid:
                    stack.append((lo, mid))
            return out

        return alt(empty, seq(open_, state(0, 0, 0), close))

