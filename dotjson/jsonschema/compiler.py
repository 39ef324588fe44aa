"""Phase 2: the normal form of a sub-schema to grammar rules.

:class:`Compiler` turns the branches of an expression into IR, one JSON type at a time (numbers,
strings, arrays and objects in their own modules). Sub-schemas referred to by a branch become rule
references (:meth:`Compiler.node_of`); their bodies are built later, by :meth:`Compiler.body`, when
someone (the automaton) first asks for them.
"""

from __future__ import annotations

import itertools
import warnings
from collections import defaultdict
from decimal import ROUND_CEILING

from dotjson import ir
from dotjson.errors import LimitExceededError, SchemaError, UnsupportedSchemaError
from dotjson.ir import EMPTY, Ref, alt, lit, seq
from dotjson.jsonschema.arrays import ArrayBuilder
from dotjson.jsonschema.atoms import (
    Addl, Contains, Enum, Items, Mult, NotEnum, NotMult, NProps, Num, Pattern, Pos, Props, RuleRef, Some, Unique,
    ViolatedBranch,
)
from dotjson.jsonschema.nodes import Branch
from dotjson.jsonschema.normalize import Normalizer
from dotjson.jsonschema.numbers import NumberBuilder, _digits
from dotjson.jsonschema.objects import ObjectBuilder
from dotjson.jsonschema.strings import StringBuilder, has_some_string
from dotjson.jsonschema.values import _NAME_JUNK, _NUM, EXACT, FALSE, MAX_DEPTH, TRUE
from dotjson.jsonschema.jsonstr import enc_text
from dotjson.jsonschema.key_trie import KeySet, KeyTrie, all_complete

# atoms whose sub-schemas building a branch may intersect (see Compiler._combinations)
_COMBINED = frozenset({Pos, Items, Props, Pattern, Addl})
# atoms whose compilation may exceed a limit of the compiler: compiled in phase 1
_RISKY = frozenset({Mult, NotMult, Unique, Contains, NProps, Pattern, Some})
# A numeric bound's automaton has ~5 states per digit of the bound (two bounds and `integer`
# together: 40 digits, ~270 states), far below MAX_DFA_STATES unless a bound is written with
# hundreds of digits (`maximum: 1e308`): only those are compiled in phase 1.
_LONG_BOUND = 100


# How deep expr_known follows required members into their values before it says "not known".
_KNOWN_DEPTH = 32
# enum values tried, and array items required, by the inhabitation test (beyond: the analysis looks)
_KNOWN_ENUM = 16
#: A string ``enum`` of at least this many values is one native key set (:meth:`Compiler.string_enum`)
NATIVE_ENUM = 32
_KNOWN_ITEMS = 64


# the atoms _risky may say yes to
_MAYBE_RISKY = _RISKY | {Num, Addl, Enum}


def _long_number(c) -> bool:
    """Whether canonical value ``c`` holds a number too long to write as a literal (its
    automaton, and its size limit, decide it: compiled in phase 1 so the limit shows there)."""
    stack = [c]
    while stack:
        c = stack.pop()
        k = c[0]
        if k == "x":
            t = c[1].as_tuple()
            if not isinstance(t.exponent, int) or len(t.digits) + abs(t.exponent) > _LONG_BOUND:
                return True
        elif k == "a":
            stack.extend(c[1])
        elif k == "o":
            stack.extend(v for _, v in c[1])
    return False


def _risky(a) -> bool:
    k = type(a)
    if k is Num:
        for c in (a.lo, a.hi):
            if c is not None:
                t = c.as_tuple()  # (the digits written out number at most these)
                if not isinstance(t.exponent, int) or len(t.digits) + abs(t.exponent) > _LONG_BOUND:
                    return True
        return False
    if k is Enum:
        return any(_long_number(c) for c in a.values)
    return k in _RISKY or (k is Addl and bool(a.patterns))


#: the types of a compiler's own memos and settings, which hold no part (``release`` asks every
#: other attribute for its ``tr``: asked of a dict, a miss raises and clears an AttributeError,
#: ~0.3 us each of the ~60 attributes an index's compiler has when it is let go of)
_PLAIN = frozenset({dict, list, set, frozenset, tuple, str, int, float, bool, type(None), defaultdict})


class Compiler(Normalizer):
    """Builds rule bodies from normal forms (phase 2), on demand.

    ``rules`` holds the bodies built so far (the JSON base rules from the start), ``pending``
    the names handed out whose bodies are not built yet; :class:`~dotjson.ir.LazyRules` over
    this object is the grammar's rule mapping. A branch is built one JSON type at a time by the
    compiler's parts, each holding the compiler and its own caches: :attr:`numbers`
    (:class:`~dotjson.jsonschema.numbers.NumberBuilder`), :attr:`strings`
    (:class:`~dotjson.jsonschema.strings.StringBuilder`), :attr:`arrays`
    (:class:`~dotjson.jsonschema.arrays.ArrayBuilder`) and :attr:`objects`
    (:class:`~dotjson.jsonschema.objects.ObjectBuilder`).
    """

    #: ``numbers="any"``: every spelling of every number (set by ``schema_to_grammar``)
    exponents = False

    def __init__(self, schema, **options):
        super().__init__(schema, **options)
        self.numbers = NumberBuilder(self)
        self.strings = StringBuilder(self)
        self.arrays = ArrayBuilder(self)
        self.objects = ObjectBuilder(self)
        self.pending: dict = {}       # rule name -> expression, body not built yet
        self.fallback: set = set()    # expressions dropped in lenient mode (any JSON value)
        # rule name -> (nullable, productive) known to its builder, or a function computing it
        self.state_hints: dict = {}
        # rule name -> what the automaton builds natively in place of its IR body (a wide
        # object's key position: see objects.ObjectRules.keys_rule, dotjson.jsonschema.key_trie.KeySet)
        self.native: dict = {}
        self.known_cache: dict = {}   # expression -> (nullable, productive) from its normal form
        self.known_depth = 0          # nesting of expr_known (required members within members)
        self.inhabited_cache: dict = {}  # normal-form branch -> obviously inhabited (shared by equal schemas)
        # False while the automaton asks for rules one by one; True once the whole grammar is
        # being built (rendering, saving: LazyRules.force), where wide objects take the shape
        # that is smallest written out in full (see objects.ObjectRules.cover)
        self.whole = False
        # expressions a builder made in phase 1 that its rules will refer to later (an
        # object's witness values): phase 1 normalises them too (see prepare, derive)
        self.derived: list = []
        # helpers made per object branch whose closures the pending rules hold (ObjectRules):
        # :meth:`release` lets go of what they hold too
        self.owned: list = []
        self.rules.update(self.base)

    def derive(self, exprs) -> None:
        """Say that rules built later will refer to the expressions ``exprs``, made by a builder
        (not read from the schema): :meth:`prepare` normalises them and what they reach, so that
        what refuses them is raised by ``Index()``, not when decoding first reaches them."""
        self.derived.extend(exprs)

    def the_grammar(self):
        """The grammar over this compiler's rules (:func:`dotjson.jsonschema._assemble`), or
        ``None`` before it is made or once it is gone (the compiler holds it weakly)."""
        ref = getattr(self, "grammar_ref", None)
        return ref() if ref is not None else None

    def release(self) -> None:
        """Let go of everything this compiler holds: its parts, rules, pending rules' closures,
        hints, caches and the grammar's rule families. Called when its grammar's rule mapping is
        gone (no rule body can be asked of it again, and the grammar holding the families is
        gone with it): they refer back to the compiler or to one another, and would otherwise
        wait for the cycle collector. Shared objects (the base rules, process-wide languages) are
        only let go of, never changed."""
        d = vars(self)
        # the builders (tr.numbers ...), the helpers they made (ObjectRules) and the grammar's
        # rule families (its key sets' closures refer to the family): the grammar is gone too
        parts = [v for v in d.values() if type(v) not in _PLAIN and getattr(v, "tr", None) is self] \
            + d.get("owned", []) + d.get("families", [])
        d.clear()
        for part in parts:
            own = getattr(part, "__dict__", None)
            if own is not None:
                own.clear()

    def fresh_prefix(self, kind: str) -> str:
        """A name of its own for a builder's rules or rule family: the namespace, ``kind`` and
        a new number (the same counter as :meth:`new_name`, so names follow the order in which
        the automaton asked for rules)."""
        self.counter += 1
        return f"{self.ns}{kind}{self.counter}"

    def new_name(self, hint: str) -> str:
        h = _NAME_JUNK.sub("_", hint.lower()).strip("_")[-40:].strip("_")
        base = f"{self.ns}s_{h}" if h else f"{self.ns}s"
        self.counter += 1
        name = base
        while name in self.names_used:
            self.counter += 1
            name = f"{base}_{self.counter}"
        self.names_used.add(name)
        return name

    def node_of(self, e) -> ir.Node:
        """A reference to the rule of an expression's language; the body is built later.

        ``TRUE`` and ``FALSE`` are inline (any JSON value, the empty language). Everything else
        gets a rule name now and a body when :meth:`body` is first asked for it (by the
        automaton, through :class:`~dotjson.ir.LazyRules`): a property the decoder never opens
        is never compiled.
        """
        if e == TRUE:
            if self.gen_bounds is not None:
                return self.free_value(self.gen_bounds["free_depth"])
            return Ref(self.bp + "json_value")
        if e == FALSE:
            return EMPTY
        hit = self.rule_of.get(e)
        if hit is not None:
            return hit
        name = self.new_name(self.hint(e))
        self.pending[name] = e
        ref = self.rule_of[e] = Ref(name)
        return ref

    def free_value(self, depth: int) -> ir.Node:
        """Any JSON value within the generation bounds (``bounds="generation"``): arrays and
        objects nested at most ``depth`` deep, each with at most ``items`` / ``extra_members``
        entries, strings of at most ``string_length`` characters. One rule per depth, built
        when the automaton first reaches it."""
        name = f"{self.ns}free_value_{depth}"
        if name not in self.rules and name not in self.pending:
            self.names_used.add(name)
            self.pending[name] = lambda: self._free_value_body(depth)
            self.state_hints[name] = (False, True)
        return Ref(name)

    def free_number(self) -> ir.Node:
        """Any JSON number within the generation bounds (``bounds="generation"``): at most
        ``number_digits`` integer and fraction digits and ``exponent_digits`` exponent digits (a
        small model otherwise writes ``1.1111…`` to the token budget: MaskBench
        Github_hard---o68391). One rule, built when the automaton first reaches it."""
        name = f"{self.ns}free_number"
        if name not in self.rules and name not in self.pending:
            self.names_used.add(name)
            self.pending[name] = self._free_number_body
            self.state_hints[name] = (False, True)
        return Ref(name)

    def _free_number_body(self) -> ir.Node:
        b = self.gen_bounds
        digit = ir.Chars(((0x30, 0x39),))
        int_part = alt(lit("0"), seq(ir.Chars(((0x31, 0x39),)), ir.repeat(digit, 0, b["number_digits"] - 1)))
        frac = seq(lit("."), ir.repeat(digit, 1, b["number_digits"]))
        exp = seq(ir.Chars(((0x45, 0x45), (0x65, 0x65))), ir.repeat(ir.Chars(((0x2B, 0x2B), (0x2D, 0x2D))), 0, 1),
                  ir.repeat(digit, 1, b["exponent_digits"]))
        return seq(ir.repeat(lit("-"), 0, 1), int_part, ir.repeat(frac, 0, 1), ir.repeat(exp, 0, 1))

    def _free_value_body(self, depth: int) -> ir.Node:
        b, bp, ws = self.gen_bounds, self.bp, self.ws
        string = self.strings.bounded_string()
        scalars = [string, self.free_number(), Ref(bp + "json_boolean"), Ref(bp + "json_null")]
        if depth == 0:
            return alt(*scalars)
        v = self.free_value(depth - 1)
        member = seq(string, self.colon, v)

        def container(open_, item, close, most):
            return alt(seq(lit(open_), ws, lit(close)),
                       seq(lit(open_), ws, item, ir.repeat(seq(self.sep, item), 0, most - 1), ws, lit(close)))

        return alt(*scalars, container("[", v, "]", b["items"]),
                   container("{", member, "}", b["extra_members"]))

    def body(self, name: str) -> ir.Node:
        """Build the body of the pending rule ``name`` (phase 2), record it, and return it."""
        e = self.pending[name]
        if callable(e):
            # a state of an object/array automaton, or an extra-member rule
            body = e()
        elif e in self.fallback:
            body = Ref(self.bp + "json_value")
        else:
            try:
                body = self.build(e)
            except UnsupportedSchemaError as err:
                if not (self.lenient and self.strict == 0):
                    raise
                # values sit in positive positions only: any JSON value over-approximates
                warnings.warn(f"dotjson: ignoring the schema at {self.expr_where(e) or '/'} ({err}); the "
                              "grammar over-approximates", stacklevel=3)
                body = Ref(self.bp + "json_value")
        del self.pending[name]
        self.rules[name] = body
        return body

    def known_language(self, name: str) -> tuple:
        """``(nullable, productive)`` of a rule, where phase 1 tells without building it.

        A sub-schema's rule is never nullable (a JSON value is never empty text). It is
        productive when one branch of its normal form obviously has a value (``null``, a
        boolean, an unbounded number, an unconstrained string, ``[]`` or ``{}`` allowed);
        otherwise ``None``: the analysis then builds the rule and looks. A builder's rule, and a
        built one such as the start rule, answers with its hint (``state_hints``), if any.
        """
        e = self.pending.get(name)
        if e is None or callable(e):
            h = self.state_hints.get(name, (None, None))
            if callable(h):  # a builder's hint computed when first asked
                h = self.state_hints[name] = h()
            return h
        return self.expr_known(e)

    def expr_known(self, e) -> tuple:
        """``(nullable, productive)`` of the rule of expression ``e`` as far as its normal form
        tells (see :meth:`known_language`); remembered per expression, and per normal-form
        branch, so that a thousand properties with the same schema are looked at once."""
        hit = self.known_cache.get(e)
        if hit is not None:
            return hit
        if e == TRUE:
            return (False, True)
        if e == FALSE:
            return (False, False)
        r = (False, None)
        if e in self.fallback:
            r = (False, True)
        else:
            if self.known_depth >= _KNOWN_DEPTH:
                return r  # (not remembered: asked from nearer the top, it may be known)
            # a schema met again inside itself (a required member of its own type): not known
            # from there; the analysis decides it
            self.known_cache[e] = r
            self.known_depth += 1
            try:
                d = self.dnf(e)
            except UnsupportedSchemaError:
                d = ()
            try:
                cache = self.inhabited_cache
                for br in d:
                    try:
                        ok = cache.get(br)
                    except TypeError:  # an atom holding an unhashable value: not shared
                        ok = self._inhabited(self.merge(br), br)
                    else:
                        if ok is None:
                            ok = cache[br] = self._inhabited(self.merge(br), br)
                    if ok:
                        r = (False, True)
                        break
            finally:
                self.known_depth -= 1
        self.known_cache[e] = r
        return r

    def _inhabited(self, m: Branch, br) -> bool:
        """A merged branch with a value that needs no search (a sufficient test): a scalar or
        an empty container it allows (:func:`_obviously_inhabited`); a plain `$ref` to such a
        schema; an `enum`/`const` value that satisfies the branch; a lone `format`, or a lone
        pattern that plainly has a string; a number range with a value the types allow; an array
        whose first required items have values; an object whose required members are all
        declared, within its property counts, and each of whose values has one by the same
        test. An index's start then needs no rule built to know that its language is not empty,
        and a required sub-object is compiled when decoding reaches it."""
        if _obviously_inhabited(m):
            return True
        if m.refs:
            # a reference alone (`{"$ref": ...}`): its target's value
            return len(br) == 1 and self.expr_known(m.refs[0])[1] is True
        if m.enum is not None:
            # the values the branch builds are those that satisfy it (build_branch)
            return any(self.satisfies(self.literal_cache[("v", c)], br)
                       for c in itertools.islice(m.enum, _KNOWN_ENUM))
        ts = m.types
        t = m.string
        if "string" in ts and len(t.patterns) == 1 and not t.not_patterns and t.min_length == 0 \
                and t.max_length is None and not any(c[0] == "s" for c in m.not_enum):
            kind, what = t.patterns[0]
            if kind == "format":
                return True  # a supported format alone (each has strings: test_formats)
            if kind == "pattern" and what in self.regex_cache and has_some_string(self.regex_cache[what]):
                return True  # a pattern alone whose language plainly has a string
        n = m.number
        if ts & _NUM and not n.multiples and not n.not_multiples and not any(c[0] == "x" for c in m.not_enum) \
                and _range_has_value(n, "integer" in ts, "nonint" in ts):
            return True
        if "array" in ts and not any(c[0] == "a" for c in m.not_enum) and self._array_inhabited(m.array):
            return True
        o = m.object
        if "object" not in ts or o.property_names or not o.required or o.some:
            return False
        req = o.required
        if o.min_properties > len(req) or (o.max_properties is not None and len(req) > o.max_properties):
            return False
        if any(c[0] == "o" for c in m.not_enum):
            return False
        own = not o.patterns and not o.additional
        for name in req:
            es = o.properties.get(name)
            if es is None:
                return False  # a required name without a position (see ObjectBuilder)
            if not own:
                es = self.member_schemas(o, name, es)
            if self.expr_known(self.and_expr(es))[1] is not True:
                return False
        return True

    def _array_inhabited(self, a) -> bool:
        """An array node with a value by the test of :meth:`_inhabited`: its first
        ``minItems`` positions each have one (few of them), within ``maxItems``, no ``contains``
        to satisfy, and no two items that must differ."""
        if a.min_items > _KNOWN_ITEMS or (a.max_items is not None and a.min_items > a.max_items):
            return False
        if any(c[1] > 0 for c in a.contains) or (a.unique is not None and a.min_items > 1):
            return False
        pos, rest = a.positions()
        for i in range(min(a.min_items, len(pos))):
            if self.expr_known(self.and_expr(pos[i]))[1] is not True:
                return False
        return a.min_items <= len(pos) or self.expr_known(self.and_expr(rest))[1] is True

    def build_all(self) -> None:
        """Called by :meth:`~dotjson.ir.LazyRules.force` before it builds every rule: from now
        on objects are built in the shape meant for writing out, and the value rules of every
        ``property_order="any"`` object exist (its family makes them on first use otherwise)."""
        self.whole = True
        for fam in self.families:
            fam.materialize()

    # ------------------------------------------------------------------ phase 1 over the document
    def prepare(self, root) -> None:
        """Normalise every sub-schema the root can reach, before any rule is built.

        Errors of the schema (malformed or unsupported keywords, unresolvable references, a
        ``$ref`` cycle that never consumes input) surface here, at :class:`~dotjson.Index`
        construction, not in the middle of decoding. The walk is iterative and costs the size of
        the reachable schema; ``$defs`` nobody refers to are never looked at. Sub-schemas whose
        compilation may hit a limit of the compiler (numeric automata, ``uniqueItems``,
        ``contains``, ``patternProperties`` classes, property counters) are compiled now too.
        """
        seen: set = set()
        todo = [(root, 0)]
        alias: dict = {}
        while todo:
            e, depth = todo.pop()
            if e == TRUE or e == FALSE or e in seen:
                continue
            if depth > MAX_DEPTH:
                w = self.expr_where(e)
                raise LimitExceededError(f"sub-schemas nested deeper than {MAX_DEPTH} levels, at "
                                         f"{w if len(w) <= 200 else w[:90] + '…' + w[-90:]}")
            seen.add(e)
            try:
                d = self.dnf(e)
            except UnsupportedSchemaError as err:
                if not (self.lenient and self.strict == 0):
                    raise
                warnings.warn(f"dotjson: ignoring the schema at {self.expr_where(e) or '/'} ({err}); the "
                              "grammar over-approximates", stacklevel=3)
                self.fallback.add(e)
                continue
            risky = False
            for br in d:
                if len(br) == 1 and type(br[0]) is RuleRef:
                    alias.setdefault(e, []).append(br[0].target)
                    todo.append((br[0].target, 0))  # a $ref target starts over: see below
                    continue
                subs = []
                combined = has_ref = False
                for a in br:
                    k = type(a)
                    sub = a.subschema
                    if sub is not None:
                        # a $ref target starts over: its nesting is counted from where it is
                        if k is RuleRef:
                            has_ref = True
                            subs.append((sub, 0))
                        else:
                            subs.append((sub, depth + 1))
                        if k is Some and type(a.spec) is ViolatedBranch:
                            # a negated object branch: the negations of its members' schemas
                            # (what a member must be to violate it) are normalised now too
                            subs += [(self.not_expr(x.subschema), depth + 1) for x in a.spec.atoms
                                     if x.subschema is not None]
                        if k is RuleRef or k in _COMBINED:
                            combined = True
                    if k in _MAYBE_RISKY and _risky(a):
                        risky = True
                    elif k is NotEnum and any(c[0] == "o" or c[0] == "a" for c in a.values):
                        # an excluded object/array value: its branches, and their limit, now
                        for b in (self.expand_refs(br, self.expr_where(e)) if any(type(x) is RuleRef for x in br)
                                  else [br]):
                            self.without_values(b, self.expr_where(e))
                if combined:  # (nothing to intersect without one of those: most leaves)
                    # sub-schemas the builders will intersect (allOf of two `items`, a property
                    # under properties and patternProperties): normalised here too, so that
                    # what their combination cannot do is also said up front
                    combos, merged_risky = self._combinations(br, e, has_ref)
                    for c in combos:
                        todo.append((c, depth + 1))
                    # a `$ref` merged with sibling keywords: what may hit a limit of the merged
                    # branch (its witnesses, counters, key classes) is built now too, for the
                    # values it derives and its limits to be met here, not by a later rule
                    risky = risky or merged_risky
                todo += subs
            if risky:
                name = self.node_of(e)
                if isinstance(name, Ref) and name.name in self.pending:
                    self.body(name.name)
                if self.derived:
                    todo += [(x, depth + 1) for x in self.derived]
                    self.derived.clear()
        self._alias_cycles(alias)

    def _combinations(self, br, e, has_ref: bool) -> tuple[list, bool]:
        """The intersections of sub-schemas that building this branch (of expression ``e``,
        which holds a :class:`RuleRef` when ``has_ref``, else an atom of ``_COMBINED``) will
        compile, and whether the branch merges a ``$ref`` target's atoms that may hit a limit
        of the compiler with its own."""
        merged_risky = False
        if has_ref:
            brs = self.expand_refs(br, self.expr_where(e))
            merged_risky = any(type(a) in _MAYBE_RISKY and _risky(a) for b in brs for a in b)
        else:
            brs = [br]
        out = []
        for b in brs:
            if has_ref and not any(type(a) in _COMBINED for a in b):
                continue  # nothing here is intersected (most leaves of a schema)
            m = self.merge(b)
            if "array" in m.types:
                by_position, after = m.array.positions()
                out += [self.and_expr(es) for es in by_position if len(es) > 1]
                if len(after) > 1:
                    out.append(self.and_expr(after))
            o = m.object
            if "object" in m.types and (o.patterns or o.additional or any(len(v) > 1 for v in o.properties.values())):
                for name, es in o.properties.items():
                    es = self.member_schemas(o, name, es)
                    if len(es) > 1:
                        out.append(self.and_expr(es))
        return [c for c in out if c != TRUE and c != FALSE], merged_risky

    def _alias_cycles(self, alias: dict) -> None:
        """Reject a sub-schema that is, through ``$ref``/``anyOf`` branches alone, itself."""
        colour: dict = {}
        for root in alias:
            if colour.get(root):
                continue
            colour[root] = 1
            stack = [(root, iter(alias.get(root, ())))]
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    colour[node] = 2
                    stack.pop()
                    continue
                c = colour.get(nxt, 0)
                if c == 1:
                    raise SchemaError("a $ref cycle that never consumes input (left recursion): the schema "
                                      "refers to itself without descending into a property or item",
                                      self.expr_where(nxt), "$ref")
                if c == 0:
                    colour[nxt] = 1
                    stack.append((nxt, iter(alias.get(nxt, ()))))

    def hint(self, e) -> str:
        if e[0] == "loc":
            toks = [t for t in e[2].split("/") if t and t not in ("properties", "$defs", "definitions", "items")]
            return "_".join(toks[-2:]) or "root"
        if e[0] == "not":
            return "not_" + self.hint(e[1])
        if e[0] == "and":
            return "all_" + self.hint(e[1][0])
        return e[0]

    def build(self, e) -> ir.Node:
        where = self.expr_where(e)
        nodes = []
        for br in self.dnf(e):
            if len(br) == 1 and type(br[0]) is RuleRef:
                nodes.append(self.node_of(br[0].target))
            else:
                nodes.append(self.build_branch(br, where))
        return alt(*nodes)

    def build_branch(self, br, where) -> ir.Node:
        m = self.merge(br)  # (remembered: a 10,000-atom branch is scanned once)
        if m.refs:
            return alt(*(self.build_branch(b, where) for b in self.expand_refs(br, where)))
        if m.not_enum and m.enum is None:
            brs = self.without_values(br, where)
            if brs is not None:  # an object or array value excluded: other keys, lengths, values
                return alt(*(self.build_branch(b, where) for b in brs))
        if m.enum is not None:
            vals = [c for c in m.enum if self.satisfies(self.literal_cache[("v", c)], br)]
            vals.sort(key=repr)
            strs = [c[1] for c in vals if c[0] == "s"]
            out = []
            if len(strs) >= NATIVE_ENUM:
                out.append(self.string_enum(strs))
                vals = [c for c in vals if c[0] != "s"]
            if self.syntactic_int and "nonint" not in m.types:
                # draft 4: an integral enum value under `type: integer` has no `1.0` spelling
                out += [self.numbers.number_node(c[1], False, c[1], False, (), (), (), True, False, "")
                        if c[0] == "x" else self.literal(c) for c in vals]
            else:
                out += [self.literal(c) for c in vals]
            return alt(*out)
        out = []
        ts = m.types
        if "null" in ts and ("n",) not in m.not_enum:
            out.append(lit("null"))
        if "boolean" in ts:
            for b in (True, False):
                if ("b", b) not in m.not_enum:
                    out.append(lit("true" if b else "false"))
        if ts & _NUM:
            out.append(self.numbers.build_number(m.number, m.not_enum, "integer" in ts, "nonint" in ts, where))
        if "string" in ts:
            out.append(self.strings.build_string(m.string, m.not_enum))
        if "array" in ts:
            out.append(self.arrays.build_array(m.array, where))
        if "object" in ts:
            out.append(self.objects.build_object(m.object, where))
        return alt(*out)

    # ------------------------------------------------------------------ literals
    def string_enum(self, values) -> ir.Node:
        """A string among ``values`` (at least :data:`NATIVE_ENUM` of them), every spelling the
        policy allows: the opening quote, then one rule the automaton builds natively, the
        values as a key set whose names end the language
        (:class:`~dotjson.jsonschema.key_trie.KeySet` with no tail): a derivative narrows a
        range of the sorted values instead of compiling a node per value. Its IR body (for the
        analyses, the grammar text and the reference tests) is the alternation of the values'
        literals after their opening quote.

        392 values (MaskBench ``Github_ultra---o65671``'s IAB categories) cost 4.2 ms inside
        one mask as literals (the IR of every value and its compilation, 2,111 terms)."""
        names = tuple(sorted(set(values)))
        key = ("senum", names)
        hit = self.literal_cache.get(key)
        if hit is not None:
            return hit
        nm = self.new_name("enum")
        self.pending[nm] = lambda: alt(*(seq(self.lit_text(v), lit('"')) for v in names))
        self.state_hints[nm] = (False, True)
        keys = KeySet(KeyTrie(names), all_complete, None,
                      spelling=self.jsonstr.lit_char)
        self.native[nm] = (keys, 0, len(names))
        hit = self.literal_cache[key] = seq(lit('"'), Ref(nm))
        return hit

    def literal(self, c) -> ir.Node:
        key = ("lit", c)
        hit = self.literal_cache.get(key)
        if hit is not None:
            return hit
        k = c[0]
        if k == "n":
            node = lit("null")
        elif k == "b":
            node = lit("true" if c[1] else "false")
        elif k == "x":
            node = self.numbers.number_node(c[1], False, c[1], False, (), (), (), True, True, "")
        elif k == "s":
            node = seq(lit('"'), self.lit_text(c[1]), lit('"'))
        elif k == "a":
            if not c[1]:
                node = seq(lit("["), self.ws, lit("]"))
            else:
                items = [self.literal(x) for x in c[1]]
                body = [items[0]]
                for x in items[1:]:
                    body += [self.sep, x]
                node = seq(lit("["), self.ws, *body, self.ws, lit("]"))
        else:
            pairs = c[1]
            if not pairs:
                node = seq(lit("{"), self.ws, lit("}"))
            else:
                mems = [seq(lit('"'), self.lit_text(kk), lit('"'), self.colon, self.literal(vv)) for kk, vv in pairs]
                orders = itertools.permutations(mems) if len(mems) <= 3 else [mems]
                alts = []
                for order in orders:
                    body = [order[0]]
                    for x in order[1:]:
                        body += [self.sep, x]
                    alts.append(seq(lit("{"), self.ws, *body, self.ws, lit("}")))
                node = alt(*alts)
        self.literal_cache[key] = node
        return node

    #: All JSON spellings of a string's text (:func:`dotjson.jsonschema.jsonstr.enc_text`, shared with the
    #: key tries); an instance binds its spelling policy's (``Normalizer.__init__``), with
    #: ``lit_text``, the policy's spelling of a schema's own strings.
    enc_text = staticmethod(enc_text)
    lit_text = staticmethod(enc_text)

    def enc(self, node) -> ir.Node:
        # keyed by identity: IR nodes do not cache their hash, and format languages are big
        hit = self.enc_cache.get(id(node))
        if hit is None:
            self.keep.append(node)
            hit = self.enc_cache[id(node)] = self.jsonstr.encode_string_language(node)
        return hit


def _range_has_value(n, allow_int: bool, allow_nonint: bool) -> bool:
    """A number within the bounds of ``n`` (both set: one is :func:`_obviously_inhabited`'s)
    that the types allow; bounds of many digits are left to the number automaton (its size
    limit decides them)."""
    lo, hi = n.lo, n.hi
    if lo is None or hi is None or max(_digits(lo), _digits(hi)) > _LONG_BOUND:
        return False
    if lo == hi:
        if n.lo_excl or n.hi_excl:
            return False
        return allow_int if lo == lo.to_integral_value() else allow_nonint
    if lo > hi:
        return False
    if allow_nonint:
        return True  # non-integers between any two distinct numbers
    k = lo.to_integral_value(rounding=ROUND_CEILING)
    if n.lo_excl and k == lo:
        k = EXACT.add(k, 1)
    return allow_int and (k < hi or (k == hi and not n.hi_excl))


def _obviously_inhabited(m: Branch) -> bool:
    """A merged branch with a value that needs no search: a sufficient test, never a necessary one."""
    if m.enum is not None or m.refs:
        return False
    ts = m.types
    if "null" in ts and ("n",) not in m.not_enum:
        return True
    if "boolean" in ts and not (("b", True) in m.not_enum and ("b", False) in m.not_enum):
        return True
    n = m.number
    if ts & _NUM and not n.multiples and not n.not_multiples and (n.lo is None or n.hi is None):
        return True
    t = m.string
    if "string" in ts and not t.patterns and not t.not_patterns and (t.max_length is None or t.min_length <= t.max_length) \
            and not any(c[0] == "s" for c in m.not_enum):
        return True
    if "array" in ts and m.array.min_items == 0 and not any(c[1] > 0 for c in m.array.contains) \
            and ("a", ()) not in m.not_enum:
        return True
    if "object" in ts and not m.object.required and m.object.min_properties == 0 and not m.object.some \
            and ("o", ()) not in m.not_enum:
        return True
    return False

