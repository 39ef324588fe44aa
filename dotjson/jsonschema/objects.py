"""Objects: a right-linear automaton over the declared properties in schema order.

Extra members (keys not declared, split by the ``patternProperties`` they match) may appear between
the declared ones where the schema allows extras; ``required`` names outside ``properties`` float
(a bit mask); ``minProperties``/``maxProperties`` are a counter. See ``docs/keywords.md``.
"""

from __future__ import annotations

from operator import itemgetter

from dotjson import ir
from dotjson.errors import DotjsonError, UnsupportedSchemaError
from dotjson.ir import EMPTY, EPS, Ref, Written, alt, lit, repeat, seq
from dotjson.ir.analysis import all_of
from dotjson.jsonschema.atoms import ExtraKeys, PatternKeys, SchemaKeys, ViolatedBranch
from dotjson.jsonschema.key_trie import KeySet, KeyTrie, UndeclaredKey, all_complete, known_by_member
from dotjson.jsonschema.objects_any_order import any_order_object
from dotjson.jsonschema.pattern_keys import fixed_key_members, same_pattern_schemas, split_patterns
from dotjson.jsonschema.nodes import ObjectNode
from dotjson.jsonschema.object_witnesses import NegatedBranch, ObjectWitnesses, key_classes, subsets
from dotjson.jsonschema.strings import matches_every_string
from dotjson.jsonschema.values import FALSE, TRUE, MAX_FLOATING, MAX_KEY_CLASSES, MAX_OBJECT_STATES, MAX_PATTERN_CLASSES

#: objects declaring more names than this reach their undeclared keys through the names' native
#: key set ("any key" less it, :meth:`ObjectRules.undeclared_key`); up to it, "any key but these"
#: is the difference with the alternation of the names, cheaper there (its derivatives by equal
#: remaining suffixes are one term: 2-3x fewer states), dearer past ~300 names (derivatives
#: over every name: 35 ms against 9.5 ms of masks for 3,000 names, ``perf/bench_wide_extra.py``)
WIDE_EXTRA = 256
#: members an object must hold (``some`` atoms: witnesses against negated object keywords), each
#: a bit of the object automaton's state
MAX_WITNESSES = 8
#: ... where some of them are negated object branches (``property_order="any"``: a member offers
#: the witnesses it may be grouped by what its value must be, not as every subset of them)
MAX_BRANCH_WITNESSES = 16


class ObjectBuilder:
    """The compiler's part for objects: each object node built by an :class:`ObjectRules`
    (which reads the compiler ``tr`` itself), and the key questions it asks here."""

    def __init__(self, tr):
        self.tr = tr

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
            return any(self.tr.key_matches(k, y) for k in nx)
        if ny is not None and isinstance(x, str):
            return any(self.tr.key_matches(k, x) for k in ny)
        return True

    def _pattern_head(self, p: str, where) -> str:
        """The text every key pattern ``p`` matches starts with (``""`` when not anchored)."""
        n = self.tr.regex(p, where, "patternProperties")
        if type(n) is ir.Seq and n.items:
            n = n.items[0]
        return n.text if type(n) is ir.Lit else ""

    def build_object(self, o: ObjectNode, where) -> ir.Node:
        """The node of object branch ``o``; its rules are made as the automaton reaches them
        (:class:`ObjectRules`)."""
        return ObjectRules(self.tr, o, where).build()


class ObjectRules(ObjectWitnesses):
    """One object branch as rules: its members, the classes of its extra keys, and the automaton
    over them.

    :meth:`build` reads the branch in phases: the declared members and their values
    (:meth:`_declare`), the classes of the keys that are not declared (:meth:`_extra_classes`),
    the rule of an extra member (:meth:`_extra_rule`), then either an any-order rule family
    (``property_order="any"``) or the schema-order automaton (:meth:`_schema_order`). The
    automaton's states ``(i, c, mask)`` (members before ``i`` behind, ``c`` counted, floating
    names and witnesses seen in ``mask``) and the rules around them are methods that make a rule
    when the automaton first reaches it (``tr.pending``), with what the analyses may know of it
    before (``tr.state_hints``).

    Parameters
    ----------
    tr : Compiler
        The schema compiler (its rules, pending rules, hints, spellings and options).
    o : ObjectNode
        The branch's object keywords in normal form.
    where : str
        The JSON pointer of the sub-schema, for errors.
    """

    #: a member's rule holds the state after it in place (:meth:`member_rule`); ``False``: a
    #: reference to that state's rule (the same language: tests compare the masks of both)
    inline_next = True
    #: the automaton writes the states and members of an object whose key position is native
    #: straight into its store (:class:`~dotjson.ir.Written`: no IR body compiled, no
    #: left-recursion search); ``False``: from their IR bodies (the reference the tests compare)
    written = True
    #: with ``written``: what follows a member's name (:meth:`member_tail`) and the state after
    #: the first undeclared member are written in place, the undeclared members' loop as a
    #: repetition, with no rule per member or state (MaskBench's sample: 3,711 -> 1,277 rule
    #: bodies in the steps); ``False``: a rule of each (:meth:`member_rule`, :meth:`state`)
    inline_states = True

    def __init__(self, tr, o: ObjectNode, where):
        self.tr = tr
        tr.owned.append(self)  # (its closures and key sets refer to it: let go with the compiler)
        self.o = o
        self.where = where
        self.quote = tr.quote
        # made on first use
        self.contents: dict = {}          # extra key class -> its spellings
        self.declared_spellings: list = []  # [the spellings of the declared names]
        self.names_alt = None              # their alternation (_names_alt)
        self.wextra: dict = {}            # witness bits -> the rule of an extra member that is them
        self.xvariants = None             # (negated branches) witness bits -> [(class, value)]
        self.members: dict = {}           # chain index -> its member node
        self.made: dict = {}              # state key -> rule name
        self.req_after: dict = {}         # i -> (every required member from i on has a value, how many)
        self.tries: list = []             # [the KeyTrie of the chain's names]
        self.tails: dict = {}             # (j, c2, mask) -> the node after member j's name
        self.keysets: list = []           # [the KeySet of the chain's names]
        self.ok_from: list = []           # [which members certainly complete]
        self.xname = None                 # the rule of an extra member
        self.x_loop = None                # (sep X)*: the undeclared members after a member
        self.F = 0  # floating names: the witness bits of the mask come after theirs

    # ------------------------------------------------------------------ the phases
    def build(self) -> ir.Node:
        """The object's node: ``{`` its members ``}`` (or :data:`~dotjson.ir.EMPTY`)."""
        tr, o = self.tr, self.o
        # the declared names (a required one outside `properties` too), each with its schemas;
        # the lists are o's own, read only (a copy per property was 10,000 lists for the
        # collector to track in a 10,000-property object)
        props = self.props = dict(o.properties)
        for r in o.required:
            props.setdefault(r, ())
        self.plo, self.phi = o.min_properties, o.max_properties
        if self.phi is not None and (self.plo > self.phi or len(o.required) > self.phi):
            return EMPTY
        # a member the object must hold (`some`: a witness against a negated object keyword)
        # has a key the schema may not declare: such an object stays open, or it could be empty
        wit = list(dict.fromkeys(o.some))
        if any(v == FALSE for _, v in wit):
            return EMPTY
        W = len(wit)
        most = MAX_BRANCH_WITNESSES if any(type(spec) is ViolatedBranch for spec, _ in wit) else MAX_WITNESSES
        if W > most:
            r = tr.unsupported(f"more than {most} members an object must hold (negated object "
                               "keywords under not/oneOf/if)", self.where, "not")
            if r is None:
                wit, W = [], 0
        self.wit, self.W = wit, W
        # a negated object branch (`some` with a ViolatedBranch key spec): one witness bit, set
        # by a member that violates the branch; a required name of the branch left out stands
        # for it too. Every name the branch speaks of is declared here, so that the members
        # seen tell which of them is absent and each extra key violates it by its class alone.
        self.negs = {a: NegatedBranch(tr, spec.atoms) for a, (spec, _) in enumerate(wit) if type(spec) is ViolatedBranch}
        if self.negs:
            if tr.property_order != "any":
                raise UnsupportedSchemaError("a negated object branch as a witness needs property_order='any'",
                                             pointer=self.where, keyword="not")
            for neg in self.negs.values():
                for name in neg.names:
                    props.setdefault(name, ())
        # close_objects closes an object that declares a property it may hold (a `properties`
        # name whose schema is not `false`) or patternProperties; one declaring none stays open
        # (closing `{"not": {"required": ["x"]}}` would leave it only `{}`)
        self.closed = tr.close_objects and not o.additional and (o.declared or o.patterns) and not wit
        self.pn = tr.and_expr(o.property_names) if o.property_names else None
        declared = self.declared = self._declare()
        if declared is None:
            return EMPTY
        if self.negs:
            # a negated branch requiring a name this object never holds is violated by every
            # object here: its witness is no condition
            held = {d[0] for d in declared}
            gone = {a for a, neg in self.negs.items() if any(r not in held for r in neg.required)}
            if gone:
                keep = [a for a in range(W) if a not in gone]
                wit = self.wit = [wit[a] for a in keep]
                W = self.W = len(wit)
                self.negs = {i: self.negs[a] for i, a in enumerate(keep) if a in self.negs}
        # the witnesses each declared name may be (its key is one the `some` atom speaks of)
        self.wit_of = [sum(1 << a for a in range(W) if self.key_wit(a, d[0])) for d in declared] if wit else None
        if self.closed and not o.patterns and not any(d[0] in o.declared and d[1] != FALSE for d in declared):
            self.closed = False  # every declared name is forbidden: nothing is declared to be held
        # extra members: keys that are not declared, split by which patterns they match
        # (closed objects keep their patternProperties keys; only the rest is shut)
        self._extra_classes()
        X = self.X = self._extra_rule()
        if tr.property_order == "any":
            if not self.wit:
                return any_order_object(tr, declared, X, self.plo, self.phi)
            wit_of = self.wit_of
            index = {d[0]: j for j, d in enumerate(declared)}
            absent = [tuple(index[r] for r in self.negs[a].required) if a in self.negs else ()
                      for a in range(self.W)]
            if self.negs:
                # the values each member offers for the witnesses: made now (expressions, no
                # rule), so that an object past object_witnesses.MAX_WITNESS_VARIANTS is refused by Index()
                wv = [self.wit_variants(*d[:2], wit_of[j]) for j, d in enumerate(declared)]
                # (and normalised with the schema: a value that is too many alternatives is
                # refused by Index(), not when a document first offers it)
                tr.derive(e for vs in wv for _, e in vs)
                tr.derive(e for vs in self.extra_variants().values() for _, e in vs)
            return any_order_object(tr, declared, X, self.plo, self.phi, witnesses=(
                self.W, lambda j: [(B, tr.node_of(e)) for B, e in (wv[j] if self.negs else self.wit_variants(
                    *declared[j][:2], wit_of[j]))],
                lambda: [(B, r) for B in (self.extra_variants() if self.negs else range(1, 1 << self.W))
                         for r in [self.witness_extra(B)] if r is not None],
                absent))
        return self._schema_order()

    def _declare(self):
        """``(name, value expression, required)`` per declared name, or ``None`` when a required
        member can have no value (the object is then empty)."""
        tr, o, props = self.tr, self.o, self.props
        rq = set(o.required)
        pn = self.pn
        ae = tr.and_expr
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
                    es = tr.member_schemas(o, name, es)
                if pn is not None and not tr.validate(name, pn):
                    es = [*es, FALSE]
                declared.append((name, value(es), name in rq))
        # (a required value that is empty by its normal form is found by the productivity
        # analysis, exactly, when the object's states are asked about: not searched here)
        if empty_values:
            if any(d[2] and d[1] == FALSE for d in declared):
                return None
            declared = [d for d in declared if d[1] != FALSE]
        return declared

    def _extra_classes(self) -> None:
        """The classes of extra keys (``live``: each a tuple of the patterns and witness key
        languages its keys match, with the value expression of such a member), the patterns
        (``pats``, less the universal ones, ``univ``) and listed keys (``fixed_members``)."""
        tr, o, where, wit = self.tr, self.o, self.where, self.wit
        # a pattern whose members' schema is `true` splits no class of an open object: it narrows
        # no value, and an additionalProperties that leaves its keys out names it itself (``qs``);
        # `"patternProperties": {"^.{1,255}$": {}}` would otherwise cost every key a walk of a
        # counted difference (12 ms a mask at a key's start). A closed object keeps it: its keys
        # are the ones admitted.
        own = [p for p, e in o.patterns if self.closed or not self._accepts_all(e)]
        pats = list(dict.fromkeys(own + [q for _, _, qs in o.additional for q in qs]
                                  + [sp.pattern for sp, _ in wit if type(sp) is PatternKeys]
                                  + [q for sp, _ in wit if type(sp) is ExtraKeys for q in sp.patterns]
                                  + [q for neg in self.negs.values() for q in neg.patterns()]))
        # a pattern every key matches (`.*`, `^a*`, the empty one) is in every class: none lacks it,
        # and it narrows no key (its language, with escapes, in an And/Diff of the key cost
        # the automaton hundreds of states to find the class without it empty)
        univ = self.univ = {p for p in pats if matches_every_string(tr.regex(p, where, "patternProperties"))}
        if univ:
            pats = [p for p in pats if p not in univ]
        self.fixed_members, self.fixed_names = [], []
        # key languages of the witnesses that are not patterns: the names an
        # additionalProperties leaves out that this object does not declare, the keys a
        # negated propertyNames allows; extra keys are split by them too
        wlangs = []
        wnames = {}  # the finite witness key languages' names
        for a, (sp, _) in enumerate(wit):
            if type(sp) is ExtraKeys:
                names = sorted(n for n in sp.names if n not in self.props)
                if names:
                    wlangs.append((("w", a), alt(*(tr.enc_text(n) for n in names))))
                    wnames[("w", a)] = names
            elif type(sp) is SchemaKeys:
                wlangs.append((("w", a), tr.strings.key_language(sp.schema)))

        def classes(entries):
            # the key classes: the sets of entries one key may match all of (``None`` past
            # MAX_KEY_CLASSES); 2**len(entries) unless some are disjoint
            return key_classes(entries, lambda x, y: tr.objects._may_share_key(x, y, where, wnames),
                               MAX_KEY_CLASSES)

        if wit:
            if classes(pats + [k for k, _ in wlangs]) is None:
                r = tr.unsupported(f"more than {MAX_KEY_CLASSES} key classes (patternProperties and the "
                                   "keys of negated object keywords)", where, "patternProperties")
                if r is None:
                    self.wit, self.W, wlangs, self.wit_of, self.negs = [], 0, [], None, {}
                    wit = self.wit
        self.wlangs, self.wlang = wlangs, dict(wlangs)
        if 2 ** len(pats) > MAX_PATTERN_CLASSES and not wit and not same_pattern_schemas(o):
            # finite patterns (`^SHA-256$`) become listed keys; classes range over the rest
            split = split_patterns(pats, lambda p: tr.regex(p, where, "patternProperties"), MAX_PATTERN_CLASSES)
            if split is not None:
                pats = split[1]
                self.fixed_members, self.fixed_names = fixed_key_members(tr, split[0], o, set(self.props), self.pn)
        # beyond 16 classes: one class for all patterns when they share a schema, else
        # (up to 6 patterns) every class of the patterns a key matches
        same = 2 ** len(pats) > MAX_PATTERN_CLASSES and not wit and same_pattern_schemas(o)
        subsets = None if same else classes(pats + [k for k, _ in wlangs])
        if same or subsets is None:
            if not same:
                r = tr.unsupported(f"more than {MAX_KEY_CLASSES} key classes (patternProperties with different "
                                   "schemas one key may match together, not finite)", where, "patternProperties")
                if r is None:
                    pats = []
            subsets = [(), tuple(pats)] if same else [()]
            self.union_mode = same
        else:
            self.union_mode = False
        self.pats = pats
        pn_lang = self.pn_lang = tr.strings.key_language(self.pn) if self.pn is not None else None
        live = self.live = []
        for T in subsets:
            Tset = set(T) | univ
            es = [e for p, e in o.patterns if p in Tset]
            es += [e for e, names, qs in o.additional if not (set(qs) & Tset)]
            if not Tset and self.closed:
                es.append(FALSE)
            ve = tr.and_expr(es)
            if ve == FALSE or pn_lang == EMPTY:
                continue
            live.append((T, ve))

    def _accepts_all(self, e) -> bool:
        """Whether expression ``e`` is ``true`` by its normal form (one branch, no constraint);
        ``False`` where the normal form is refused (asked again, and reported, where the value is
        compiled)."""
        if e == TRUE:
            return True
        try:
            return self.tr.dnf(e) == [()]
        except DotjsonError:
            return False

    def _extra_rule(self):
        """The rule of "an extra member" (it recurs in every state of the automaton), or
        ``None`` when the object allows none."""
        tr = self.tr
        if not (self.live or self.fixed_members):
            return None
        xname = self.xname = tr.fresh_prefix("extra")
        names = [xname]
        if self.props:
            # beside declared names: its opening quote, then a rule of its own for the rest (the
            # names' difference, ~0.1 ms to build): a derivative through the quote stops at that
            # rule, so the mask at an object's `{`, whose tokens end at `{"`, does not build it
            # (time to first mask). Not without names: the rest is a plain string then, cheap to
            # build, and a key start whose state begins with that rule's reference is neither
            # plain-invariant nor split into a shared string head (a map's keys, 12-19% slower)
            rest = f"{xname}_r"
            tr.pending[xname] = lambda: seq(lit('"'), Ref(rest))
            tr.pending[rest] = lambda: self.extra_member(opening=False)
            names.append(rest)
        else:
            tr.pending[xname] = self.extra_member
        if not self.pats and self.pn_lang is None and not self.wit:
            # any key but the declared names (finitely many: infinitely many keys are left),
            # so an extra member exists when its value does: known without building the
            # Diff of keys and asking the automaton whether it is empty
            live = self.live

            def hint():
                return (False, True if any(tr.expr_known(ve)[1] for _, ve in live) else None)

            for nm in names:
                tr.state_hints[nm] = hint
        return Ref(xname)

    def _schema_order(self) -> ir.Node:
        """The object automaton in schema order: the states, each made when first reached."""
        tr, o, declared, X = self.tr, self.o, self.declared, self.X
        wit, W = self.wit, self.W
        # required names that `properties` does not declare have no schema position: they may
        # appear anywhere extras may (tracked by a bit mask), when there are few of them
        floating = [d for d in declared if d[0] not in o.properties] if len(self.props) > len(o.properties) else []
        if len(floating) > MAX_FLOATING:
            floating = []
        chain = self.chain = [d for d in declared if d[0] in o.properties] if floating else declared
        self.floating = floating
        F = self.F = len(floating)
        if wit:
            wof = dict(zip((d[0] for d in declared), self.wit_of))
            self.chain_wit = [wof[d[0]] for d in chain]
            self.float_wit = [wof[d[0]] for d in floating]
        self.fmembers = [self.member(name, ve) for name, ve, _ in floating]
        full = self.full = (1 << (F + W)) - 1
        reqs = [req for _, _, req in chain] if o.required else None
        n = self.n = len(chain)
        # extras_only: the counter counts the undeclared members alone (the generation bound)
        self.extras_only = False
        self._generation_bound()
        plo, phi = self.plo, self.phi
        if X is None:  # no other members: a bound beyond the declared ones is no bound
            if plo > n + len(floating):
                return EMPTY
            if phi is not None and phi >= n + len(floating):
                phi = self.phi = None
        open_ = seq(lit("{"), tr.ws)
        close = seq(tr.ws, lit("}"))
        empty_ok = not (reqs and any(reqs)) and plo == 0 and not floating and not wit
        empty = seq(lit("{"), tr.ws, lit("}")) if empty_ok else EMPTY
        if n == 0 and not floating and not wit:
            if X is None:
                return empty
            if phi == 0:
                return empty
            rlo = max(plo - 1, 0)
            rhi = None if phi is None else phi - (2 if self.extras_only else 1)
            return alt(empty, seq(open_, X, repeat(seq(tr.sep, X), rlo, rhi), close))
        self.cap = max(1, phi if phi is not None else plo)
        nstates = (n + 1) * 2 * (self.cap + 1) * (full + 1)
        # without a counter the states are linear in the members, and built only when reached
        if (plo > 0 or phi is not None) and nstates > MAX_OBJECT_STATES:
            r = tr.unsupported("object too large for its minProperties/maxProperties counter", self.where,
                               "maxProperties")
            if r is None:
                self.plo, self.phi, self.cap = 0, None, 1
        self.prefix = tr.fresh_prefix("obj")
        # nreq[i]: the first required member at or after i (n when none)
        nreq = self.nreq = [n] * (n + 1)
        if reqs:
            for i in range(n - 1, -1, -1):
                nreq[i] = i if reqs[i] else nreq[i + 1]
        # Without a counter or a floating name, the key position of state i offers members i ..
        # the first required one, each followed by member_rule(j, 1, 0): the automaton builds it
        # natively from the sorted names (a KeySet), not as a trie of rules (key_choice, still
        # the rule's IR body: the analyses, rendering and saving read that). A member certainly
        # completes when its value is known to have one and so are the required members after it.
        self.native_ok = not self.fmembers and self.plo == 0 and self.phi is None and not wit
        return alt(empty, seq(open_, self.state(0, 0, 0), close))

    def _generation_bound(self) -> None:
        """The generation bound on undeclared members: at most that many of them, whichever
        declared ones the document holds (a counter like maxProperties', of the extra members;
        not where it would pass the limit on the object's states). Beside minProperties (not
        where it asks for more than the bound) the counter counts every member, so the bound is
        on members beyond the declared ones."""
        tr = self.tr
        if self.X is None or tr.gen_bounds is None or self.phi is not None:
            return
        n, full = self.n, self.full
        extra = tr.gen_bounds["extra_members"]
        if self.live and not self.fixed_members and all(tr.structured(ve) for _, ve in self.live):
            extra = tr.gen_bounds["structured_members"]  # each value an object or array
        if self.plo == 0:
            # the count is 0 before any member, 1 + the extra members after: a declared
            # member only makes it at least 1 (the separator and `done` ask whether a
            # member came before)
            if (n + 1) * 2 * (extra + 2) * (full + 1) <= MAX_OBJECT_STATES:
                self.phi, self.extras_only = extra + 1, True
        else:
            lim = n + len(self.floating) + extra
            if self.plo <= lim and (n + 1) * 2 * (lim + 1) * (full + 1) <= MAX_OBJECT_STATES:
                self.phi = lim

    # ------------------------------------------------------------------ extra members
    def extra_member(self, opening: bool = True) -> ir.Node:
        """The body of the extra-member rule (built when the automaton first reaches one); with
        ``opening=False`` what follows its key's opening quote (the body of its rest's rule)."""
        tr = self.tr
        q = [lit('"')] if opening else []
        classes = []
        if not tr.whole and len(self.props) > WIDE_EXTRA and not self.pats and self.pn_lang is None \
                and not self.fixed_names and not self.wit:
            # "any key but these thousands": any key less the names' native key set (a byte of
            # the key narrows their sorted range; no rule per prefix); under the generation
            # bound on a key's characters, counted from where it leaves the names, a lazy
            # complement of their trie (a byte of the key follows one branch, and starting it
            # builds a rule, not every name)
            trie = KeyTrie(list(self.props))
            bounded = self.key_bound(())
            for T, ve in self.live:
                if bounded:
                    classes.append(seq(*q, UndeclaredKey(self, trie, ve).node(0, 0)))
                else:
                    classes.append(seq(*q, self.undeclared_key(trie), tr.node_of(ve)))
            return alt(*classes)
        for T, ve in self.live:
            classes.append(seq(*q, self.class_content(T), lit('"'), tr.colon, tr.node_of(ve)))
        classes.extend(seq(*q, m) for m in self.fixed_members)
        return alt(*classes)

    def undeclared_key(self, trie: KeyTrie) -> Ref:
        """The rest of a key that is none of ``trie``'s names, its closing quote and the colon:
        one rule the automaton builds natively, any key less the names' key set
        (:meth:`dotjson.automaton.Automaton._keys_body`); its IR body, for the analyses and
        the grammar text, is the same language as a trie of rules (:class:`~dotjson.jsonschema.key_trie.UndeclaredKey`)."""
        tr = self.tr
        nm = f"{self.xname}_ku"
        if nm not in tr.rules and nm not in tr.pending:
            colon = f"{self.xname}_kc"  # what follows a name in the key set: its colon
            tr.pending[colon] = lambda: tr.colon
            tr.state_hints[colon] = (False, True)
            keys = KeySet(trie, all_complete, lambda j: colon,
                          spelling=tr.jsonstr.enc_char)  # (every spelling the content allows)
            after = seq(lit('"'), Ref(colon))
            tr.pending[nm] = lambda: UndeclaredKey(self, trie, None, after=after, tag="ku").node(0, 0)
            tr.state_hints[nm] = (False, True)
            tr.native[nm] = (keys, 0, trie.n, seq(tr.jsonstr.json_string_content(), after))
        return Ref(nm)

    def key_bound(self, T) -> bool:
        """Whether the generation bound on string length cuts the extra keys of class ``T`` too
        (a model otherwise writes one key without end: `"S_S_S_…"` under a `^S_` pattern,
        MaskBench Github_hard---o36012): where it cannot empty a class the object needs (no
        minProperties beyond the declared names, no witnesses) and each pattern of ``T`` has
        keys of any length, the shortest within the bound (as for a string's pattern)."""
        tr = self.tr
        if tr.gen_bounds is None or self.wit or self.plo > len(self.props):
            return False
        return all(isinstance(p, str) and tr.strings.bound_fits(tr.regex(p, self.where, "patternProperties")) for p in T)

    def class_content(self, T) -> ir.Node:
        """The spellings of the extra keys of class ``T`` (the patterns and witness key
        languages they match, none of the others, no declared or listed name)."""
        hit = self.contents.get(T)
        if hit is not None:
            return hit
        tr, where = self.tr, self.where
        if not self.declared_spellings:
            self.declared_spellings.append([tr.enc_text(n) for n in self.props])
        declared_names = self.declared_spellings[0]
        Tset = set(T)
        if self.union_mode and T:
            pos = [alt(*(tr.strings.enc_pattern(p, where) for p in T))]
            neg = list(declared_names)
            names_only = True
        else:
            pos = [tr.strings.enc_pattern(p, where) if isinstance(p, str) else self.wlang[p] for p in T]
            neg = [tr.strings.enc_pattern(q, where) for q in self.pats if q not in Tset]
            neg += [x for k, x in self.wlangs if k not in Tset]
            names_only = not neg and not self.fixed_names
            neg += declared_names + self.fixed_names
        if self.pn_lang is not None:
            pos.append(self.pn_lang)
        elif self.key_bound(T):
            pos.append(tr.jsonstr.string_of_length(0, tr.gen_bounds["string_length"]))
        if not pos:
            content = tr.jsonstr.json_string_content()
        elif len(pos) == 1:
            content = pos[0]
        else:
            content = ir.And(tuple(pos))
        if neg:
            content = ir.Diff(content, self._names_alt() if names_only else alt(*neg))
        self.contents[T] = content
        return content

    def _names_alt(self) -> ir.Node:
        """The alternation of the declared names' spellings, made once per object; where every
        name is printable ASCII, registered with the compiler as the spellings of those texts
        (``text_alts``), so that the automaton builds its term from the characters' terms in
        one program instead of walking a node per character (an object of 150 long names: ~3 ms
        of its undeclared key's first mask)."""
        if self.names_alt is None:
            tr = self.tr
            node = alt(*self.declared_spellings[0])
            if type(node) is ir.Alt and all(n and n.isascii() and n.isprintable() for n in self.props):
                tr.text_alts[id(node)] = (node, tuple(self.props), tr.jsonstr)
            self.names_alt = node
        return self.names_alt

    def witness_extra(self, B):
        """An extra member that is the witnesses ``B`` (all of them): a rule, or ``None`` when
        no extra key is."""
        if B in self.wextra:
            return self.wextra[B]
        tr = self.tr
        if self.negs:
            cls = self.extra_variants().get(B, ())
        else:
            cls = [(T, self.wit_value(ve, B, T)) for T, ve in self.live if self.class_wit(T) & B == B]
        ref = None
        if cls:
            nm = f"{self.xname}_w{B}"
            tr.pending[nm] = lambda: alt(*(seq(lit('"'), self.class_content(T), lit('"'), tr.colon,
                                               tr.node_of(e)) for T, e in cls))
            ref = Ref(nm)
        self.wextra[B] = ref
        return ref

    # ------------------------------------------------------------------ the automaton's states
    def member(self, name, ve) -> ir.Node:
        tr = self.tr
        return seq(lit('"'), tr.lit_text(name), lit('"'), tr.colon, tr.node_of(ve))

    def rule(self, key, make, hint=None, alts=None) -> Ref:
        """A rule of the object automaton, built when the automaton first reaches it; with
        ``alts`` (where the key position is native), the body the automaton writes in place of
        compiling ``make``'s (:class:`~dotjson.ir.Written`)."""
        nm = self.made.get(key)
        if nm is None:
            nm = self.made[key] = self.prefix + "_" + "_".join(map(str, key))
            tr = self.tr
            tr.pending[nm] = make
            if hint is not None:
                tr.state_hints[nm] = hint
            if alts is not None and self.written and self.native_ok and not tr.whole:
                tr.native[nm] = Written(alts)
        return Ref(nm)

    def inc(self, c):
        """The count after an extra member (or any member, but with ``extras_only``)."""
        phi = self.phi
        if self.extras_only:
            c += 1 if c > 0 else 2
            return c if c <= phi else None
        if phi is not None:
            return c + 1 if c + 1 <= phi else None
        return min(c + 1, self.cap)

    def inc_declared(self, c):
        """The count after a declared (or floating) member."""
        return max(c, 1) if self.extras_only else self.inc(c)

    def done(self, i, c, mask) -> bool:
        """Whether the object may close here: no required member left, enough members."""
        return self.nreq[i] == self.n and mask == self.full and c > 0 and c >= self.plo

    def required_after(self, i):
        """(every required member from ``i`` on certainly has a value, how many there are)."""
        req_after, nreq, n = self.req_after, self.nreq, self.n
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
            ok = ok and bool(self.tr.expr_known(self.chain[j][1])[1])
            cnt += 1
            req_after[k] = (ok, cnt)
        return req_after[i]

    def sure(self, i, c, mask):
        """``True`` when the object certainly completes from state ``(i, c, mask)``, where it
        may not close yet: the required members left (in the chain and floating) have values by
        their normal forms, and placing just them satisfies the counter; ``None``: the analysis
        builds and looks."""
        ok, cnt = self.required_after(i)
        if not ok:
            return None
        left = [fl[1] for k, fl in enumerate(self.floating) if not mask >> k & 1]
        if not all(self.tr.expr_known(v)[1] for v in left):
            return None
        least = max(c, 1) if self.extras_only and (c or cnt or left) else c + cnt + len(left)
        if least == 0 or least < self.plo or (self.phi is not None and least > self.phi):
            return None  # an optional member is needed, or the bound decides: look
        return True

    def state_known(self, i, c, mask):
        """(nullable, productive) of a state where the object may not close yet."""
        if self.wit and mask >> self.F != self.full >> self.F:
            return (False, None)  # a witness still missing: the analysis looks
        j = self.nreq[i]
        if j < self.n and not self.floating and self.plo == 0 and self.phi is None:
            if self.required_after(i)[0]:
                # every required member left has a value by its normal form: placing just
                # them completes the object (no counter, no floating name), an answer, not
                # a condition the analysis walks through the rest of the chain for (~50 us
                # a new state of a MaskBench object)
                return (False, True)
            # no counter, no floating name: productive exactly when the next required
            # member's value and the state after that member are (the optional members
            # before it may all be skipped) - a condition, so the search goes on to the
            # value's own rule without building this state
            v = self.chain[j][1]
            val = True if self.tr.expr_known(v)[1] else self.tr.node_of(v)
            if val is not True:
                val = val.name if isinstance(val, Ref) else False
            return (False, all_of(val, self.state(j + 1, self.inc_declared(c), mask).name))
        return (False, self.sure(i, c, mask))

    def state(self, i, c, mask) -> Ref:
        """Members before ``i`` are behind (``c`` of them counted, floating ones in ``mask``).
        Its language is nullable exactly when the object may close here (every other
        alternative consumes), and then productive; otherwise :meth:`state_known` tells when
        asked: the analyses need not build the state to know."""
        d = self.done(i, c, mask)
        return self.rule(("s", i, c, mask), lambda: self.state_body(i, c, mask),
                         (d, True) if d else (lambda: self.state_known(i, c, mask)),
                         lambda: self.state_alts(i, c, mask))

    def state_alts(self, i, c, mask) -> list:
        """:meth:`state_body` as the automaton writes it (a :class:`~dotjson.ir.Written`
        alternation), where the key position is native (no counter, floating name or witness)."""
        tr, X = self.tr, self.X
        sp = [tr.sep] if c > 0 else []
        alts = []
        if X is not None and self.inline_states and c == 0:
            # (the state after this first member written in place: no rule of it; its key
            # position a rule still, so that `{` does not write the names' table)
            alts.append([X.name] + self.after_member(i, keys_in_place=False))
        elif X is not None:
            alts.append(sp + [X.name, self.state(i, self.inc(c), mask).name])
        if i < self.n:
            alts.append(sp + [self.quote, self.keys_rule(i, self.inc_declared(c), mask).name])
        if self.done(i, c, mask):
            alts.append([])
        return alts

    def state_body(self, i, c, mask) -> ir.Node:
        tr, X, F, full, n = self.tr, self.X, self.F, self.full, self.n
        sp = tr.sep if c > 0 else EPS
        alts = []
        c2 = self.inc(c)
        if c2 is not None:
            if X is not None:
                alts.append(seq(sp, X, self.state(i, c2, mask)))
            if self.wit:
                for B in subsets((full & ~mask) >> F):
                    y = self.witness_extra(B)
                    if y is not None:
                        alts.append(seq(sp, y, self.state(i, c2, mask | (B << F))))
        c2 = self.inc_declared(c)
        if c2 is not None:
            for j, fm in enumerate(self.fmembers):
                if not mask & (1 << j):
                    if not self.wit:
                        alts.append(seq(sp, fm, self.state(i, c2, mask | (1 << j))))
                        continue
                    for ve, m2 in self.variants(*self.floating[j][:2], self.float_wit[j], mask):
                        alts.append(seq(sp, self.member(self.floating[j][0], ve), self.state(i, c2, m2 | (1 << j))))
            # the next member is any of i .. the first required one (the ones between are
            # optional and skipped): for the automaton, a trie of their names (a byte of a
            # key follows one branch); written out whole, a few nodes of a balanced tree
            # over the members (O(n) rules for all the states together)
            if i < n:
                if tr.whole:
                    alts.extend(self.cover(0, n, i, min(self.nreq[i], n - 1) + 1, c, c2, mask))
                elif self.native_ok:
                    alts.append(seq(sp, self.quote, self.keys_rule(i, c2, mask)))
                else:
                    alts.append(seq(sp, lit('"'), self.key_choice(i, c2, mask)))
        if self.done(i, c, mask):
            alts.append(EPS)
        return alt(*alts)

    # ------------------------------------------------------------------ the key position
    def trie(self) -> KeyTrie:
        """The trie of the chain's names (made once)."""
        if not self.tries:
            self.tries.append(KeyTrie([d[0] for d in self.chain]))
        return self.tries[0]

    def key_choice(self, i, c2, mask) -> ir.Node:
        """After the opening quote: the rest of member ``j``'s name, for ``j`` in ``i`` .. the
        first required member, then its value and ``state(j + 1, c2, mask)``."""
        trie = self.trie()
        return trie.choice(0, 0, trie.positions(0, 0, i, min(self.nreq[i], self.n - 1) + 1),
                           lambda j: self.tail(j, c2, mask), lambda q, d, pos: self.sub(q, d, pos, c2, mask),
                           self.tr.lit_text)

    def member_rule(self, j, c2, mask) -> Ref:
        """After member ``j``'s closing quote: its value, the next state."""
        tr, chain = self.tr, self.chain
        d = self.done(j + 1, c2, mask)
        if self.wit:
            def make():
                return alt(*(seq(tr.colon, tr.node_of(ve), self.state(j + 1, c2, m2))
                             for ve, m2 in self.variants(*chain[j][:2], self.chain_wit[j], mask)))
        elif self.inline_next and self.X is None:
            # the state after the member written in place (the same language as its rule): a
            # document passes through state(j + 1) once after member j, and a rule made for that
            # alone cost a body call here and ~11 us of the engine beside compiling it, once per
            # member of every document (MaskBench probe: 35% fewer bodies with closed objects).
            # Not where extra members loop on the state's rule: a token that runs through a
            # whole extra member (`":"",` at a key's start) builds that rule at every key
            # position of an open object anyway, and the state was then compiled twice (sample
            # fresh masks 393 -> 376 ms with a reference instead)
            def make():
                self.state(j + 1, c2, mask)  # (registered: its hint, the extra members' loop)
                return seq(tr.colon, tr.node_of(chain[j][1]), self.state_body(j + 1, c2, mask))
        else:
            def make():
                return seq(tr.colon, tr.node_of(chain[j][1]), self.state(j + 1, c2, mask))
        # productive when the object may close after it and its value has an instance; or,
        # where the key position is native (no counter, floating name or witness), when the
        # member certainly completes the object (what the key set asks first: so the analysis
        # knows the member's rule without building its body when the key set makes its tail)
        sure = (d and tr.expr_known(chain[j][1])[1]) or (self.native_ok and bool(self.alive_many(j)))
        return self.rule(("m", j, c2, mask), make, (False, True if sure else None),
                         lambda: self.member_alts(j, c2, mask))

    def member_tail(self, j) -> list:
        """What follows member ``j``'s closing quote as the automaton writes it in place (the
        key set's ``tail_alts``: no rule of the member, nor of the state after it): the colon,
        the value, then :meth:`after_member`. The language of :meth:`member_rule`'s ``(j, 1, 0)``."""
        tr = self.tr
        return [[tr.colon, tr.node_of(self.chain[j][1])] + self.after_member(j + 1)]

    def after_member(self, i, keys_in_place=True) -> list:
        """State ``(i, 1, 0)`` (some member behind, the next one ``i`` or later) written in
        place, as the items of a sequence: the undeclared members' loop (``(sep X)*``: the state
        is the same after each), then the next declared key or the object's end. The key
        position is the key set's term itself where some member it offers surely completes
        (its table is written by then: a member was read from it) and ``keys_in_place``;
        otherwise its rule, whose productivity the analysis decides."""
        tr, X = self.tr, self.X
        items = []
        if X is not None:
            rep = self.x_loop
            if rep is None:
                rep = self.x_loop = ir.repeat(seq(tr.sep, X), 0, None)
            items.append(rep)
        alts = []
        if i < self.n:
            if keys_in_place and self.keysets and self.alive_many(i):
                keys = self.keys_spec(i)
            else:
                keys = self.keys_rule(i, 1, 0).name
            alts.append([tr.sep, self.quote, keys])
        if self.done(i, 1, 0):
            alts.append([])
        items.append(alts)
        return items

    def member_alts(self, j, c2, mask) -> list:
        """:meth:`member_rule`'s body as the automaton writes it (see :meth:`state_alts`)."""
        tr = self.tr
        nxt = self.state(j + 1, c2, mask)  # (registered either way, as make() does: its hint)
        if self.inline_next and self.X is None:
            return [[tr.colon, tr.node_of(self.chain[j][1]), self.state_alts(j + 1, c2, mask)]]
        return [[tr.colon, tr.node_of(self.chain[j][1]), nxt.name]]

    def tail(self, j, c2, mask) -> ir.Node:
        """After member ``j``'s name: the closing quote, its value, the next state; one rule per
        member and continuation, shared (node and all) by every state that offers it."""
        hit = self.tails.get((j, c2, mask))
        if hit is None:
            hit = self.tails[(j, c2, mask)] = seq(self.quote, self.member_rule(j, c2, mask))
        return hit

    def alive_many(self, js):
        """Whether members ``js`` (an array, or one member) certainly complete the object: their
        value is known to have an instance, and so are the required members after them.
        ``required_after(k)[0]`` holds from some ``k`` on (the required members from ``k`` on
        all have values by their normal forms): found once, by bisection."""
        if not self.ok_from:
            a, b = 0, self.n
            while a < b:
                mid = (a + b) // 2
                if self.required_after(mid)[0]:
                    b = mid
                else:
                    a = mid + 1
            # members whose value has an instance by its normal form, asked once per
            # distinct value expression; a member completes from a - 1 on
            vals = list(map(itemgetter(1), self.chain))
            ok = known_by_member(vals, lambda i: self.tr.expr_known(vals[i])[1] is True)
            ok[: max(a - 1, 0)] = False
            self.ok_from.append(ok)
        return self.ok_from[0][js]

    def keys_rule(self, i, c2, mask) -> Ref:
        """The key position of state ``i`` as a rule the automaton builds natively (a
        :class:`~dotjson.jsonschema.key_trie.KeySet`); its IR body is :meth:`key_choice`."""
        if not self.keysets:
            inline = self.inline_states and self.written and not self.tr.whole
            self.keysets.append(KeySet(self.trie(), self.alive_many, lambda j: self.member_rule(j, 1, 0).name,
                                       spelling=self.tr.jsonstr.lit_char,
                                       tail_alts=self.member_tail if inline else None))
        ref = self.rule(("K", i, c2, mask), lambda: self.key_choice(i, c2, mask),
                        (False, True if self.alive_many(i) else None))
        self.tr.native[ref.name] = self.keys_spec(i)
        return ref

    def keys_spec(self, i) -> tuple:
        """The native key set of state ``i``'s key position: members ``i`` .. the first required
        one (the key set made by :meth:`keys_rule`)."""
        return (self.keysets[0], i, min(self.nreq[i], self.n - 1) + 1)

    def sub(self, q, d, pos, c2, mask) -> Ref:
        """The sub-trie of prefix ``keys[q][:d]`` offering the names at ``pos``: the members of
        that prefix between the least and the greatest offered one (a state offers a range of
        members), so every state offering the same ones shares it."""
        trie = self.tries[0]
        js = trie.member[pos]
        lo, hi = int(js.min()), int(js.max()) + 1
        # productive when one offered member certainly completes the object; otherwise the
        # analysis builds it and looks (never a dead state)
        j = int(js[0])
        sure = True if self.tr.expr_known(self.chain[j][1])[1] and self.done(j + 1, c2, mask) else None
        return self.rule(("k", q, d, lo, hi, c2, mask),
                         lambda: trie.choice(q, d, trie.positions(q, d, lo, hi), lambda j: self.tail(j, c2, mask),
                                             lambda q2, d2, pos2: self.sub(q2, d2, pos2, c2, mask),
                                             self.tr.lit_text),
                         (False, sure))

    # ------------------------------------------------------------------ written out whole
    def leaf(self, j, c, c2, mask) -> ir.Node:
        sp = self.tr.sep if c > 0 else EPS
        chain = self.chain
        if self.wit:
            return alt(*(seq(sp, self.member(chain[j][0], ve), self.state(j + 1, c2, m2))
                         for ve, m2 in self.variants(*chain[j][:2], self.chain_wit[j], mask)))
        mb = self.members.get(j)
        if mb is None:
            mb = self.members[j] = self.member(chain[j][0], chain[j][1])
        return seq(sp, mb, self.state(j + 1, c2, mask))

    def node(self, lo, hi, c, c2, mask) -> ir.Node:
        if hi - lo == 1:
            return self.leaf(lo, c, c2, mask)
        mid = (lo + hi) // 2
        return self.rule(("t", lo, hi, c, mask),
                         lambda: alt(self.node(lo, mid, c, c2, mask), self.node(mid, hi, c, c2, mask)))

    def cover(self, lo, hi, a, b, c, c2, mask) -> list:
        """Canonical tree nodes covering members ``a`` .. ``b-1`` (O(log n) of them)."""
        out = []
        stack = [(lo, hi)]
        while stack:
            lo, hi = stack.pop()
            if a <= lo and hi <= b:
                out.append(self.node(lo, hi, c, c2, mask))
                continue
            mid = (lo + hi) // 2
            if b > mid:
                stack.append((mid, hi))
            if a < mid:
                stack.append((lo, mid))
        return out

