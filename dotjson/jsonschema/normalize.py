"""Phase 1: documents, references and the normal form of every sub-schema.

A sub-schema is an *expression*: ``("loc", doc, pointer)`` (a place in a document), ``("and",
exprs)``, ``("not", expr)``, or ``TRUE``/``FALSE``. Its normal form (:meth:`Normalizer.dnf`) is a
list of branches, each a conjunction of keyword atoms (``("types", set)``, ``("num", lo, lox, hi,
hix)``, ``("props", name, expr)`` (``("props", name, expr, True)`` where a ``properties``
keyword declares the name), ``("ruleref", expr)`` ...), which :meth:`Normalizer.merge`
turns into a typed node (:mod:`dotjson.jsonschema.nodes`: a ``Branch`` holding a number, string,
array and object node) for the compiler to read: ``allOf`` is a product of branches,
``anyOf`` a union, ``oneOf`` a union of branches proven pairwise disjoint (or ``A ∧ ¬B ∨ B ∧ ¬A``
when the negations are expressible), ``not`` negates atom by atom, ``if``/``then``/``else`` becomes
``(if ∧ then) ∨ (¬if ∧ else)``. A union past ``MAX_BRANCHES`` is compacted
(:meth:`Normalizer.compact`: empty branches and branches another holds dropped), and a negation
still past it is split on a discriminator (:meth:`Normalizer._negate_split`), before the schema
is refused. Sub-schemas below a keyword (a property's schema, ``items`` ...) stay unexpanded
expressions inside their atom: the normal form of one sub-schema costs the size of that
sub-schema, not of the schemas under it. Nothing here builds grammar.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction
from urllib.parse import unquote

from dotjson import ir
from dotjson.errors import DotjsonError, GrammarError, LimitExceededError, SchemaError, UnsupportedSchemaError
from dotjson.formats import UNSUPPORTED_FORMATS as _UNSUPPORTED_FORMATS
from dotjson.ir import EPS, Ref, lit, seq
from dotjson.jsonschema.negated_branches import negate_by_witnesses
from dotjson.jsonschema.nodes import (
    NO_ARRAY, NO_NUMBER, NO_OBJECT, NO_STRING, ArrayNode, Branch, NumberNode, ObjectNode, StringNode,
)
from dotjson.jsonschema.values import (
    MAX_APPLICATOR_DEPTH, MAX_DEPTH, MAX_EMPTINESS_DEPTH, _APPLICATORS, _ATOM_TYPES, _DEFAULT_BASE, _DIALECTS, _MISSING, _REGEX_CACHE, _SUBSCHEMA_LISTS,
    _SUBSCHEMA_MAPS, _SUBSCHEMA_ONE, _TYPE_NAMES, _U, FALSE, IGNORED_KEYWORDS, MAX_BRANCHES, TRUE,
    _canon, _count, _dec, _defrag, _esc, _format_node, _ir_match, _join, _nonempty_list, _number, _type_of,
    _types_of, _unesc,
)


# the atom of `type: <name>` (atoms are immutable: one per process)
_TYPE_ATOMS = {name: ("types", ts) for name, ts in _TYPE_NAMES.items()}


_SCALARS = (str, int, float, Decimal, bool, type(None))
_STRUCTURED = frozenset({"object", "array"})
#: Counts from here on are lane counts (dotjson.automaton.counters.BAND); a schema may hold this
#: many distinct ones (half the lanes: a repetition with two such bounds also takes their
#: difference), so that compiling its rules never runs out of lanes after Index(...).
_LANE_COUNT = 1 << 29
_MAX_LANE_COUNTS = 31
#: a negation's partial product is compacted (Normalizer.compact) once it has more branches
_COMPACT_AT = 16
#: the branch pairs the emptiness tests of one compact() may combine (normal forms of the
#: properties they look into): past it, the remaining branches are kept untested
_COMPACT_FUEL = 20_000
#: the work all compactions of one schema may do (branch pairs combined by their emptiness
#: tests and branch pairs compared for subsumption): past it a union is no longer compacted,
#: so a schema that is refused in the end is refused in bounded time
_COMPACT_BUDGET = 1_000_000


class _OutOfFuel(Exception):
    """A compact()'s emptiness tests ran out of fuel (never leaves Normalizer.compact)."""


def _leaf_key(s: dict):
    """The content of schema ``s`` as a hashable key when it is a leaf: every keyword's value a
    scalar or a list of scalars (no sub-schema), no ``$``-keyword (identifiers, references, a
    dialect) and no ``id``; annotations left out. ``None`` otherwise. Types are part of the key
    (``1``, ``1.0`` and ``True`` are equal in Python, not in a schema)."""
    out = []
    for k, x in s.items():
        if type(k) is not str or k[:1] == "$" or k == "id":
            return None
        if k in IGNORED_KEYWORDS:
            continue
        t = type(x)
        if t in _SCALARS:
            out.append((k, t, x))
        elif t is list:
            items = []
            for y in x:
                ty = type(y)
                if ty not in _SCALARS:
                    return None
                items.append((ty, y))
            out.append((k, list, tuple(items)))
        else:
            return None
    return tuple(out)


def _short(where: str) -> str:
    """A JSON pointer for a message, its middle elided when it is very long."""
    where = where or "/"
    return where if len(where) <= 200 else f"{where[:90]}…{where[-90:]}"

class _Doc:
    __slots__ = ("uri", "root", "draft", "label")

    def __init__(self, uri, root, draft, label):
        self.uri, self.root, self.draft, self.label = uri, root, draft, label


def _draft_of(schema, default=2020) -> int:
    if isinstance(schema, dict):
        s = schema.get("$schema")
        if isinstance(s, str):
            key = s.split("://", 1)[-1].rstrip("#")
            return _DIALECTS.get(key, default)
    return default



def _scalar_text(value, where, kw) -> None:
    """Refuse, at construction, a string of a schema value (``const``, ``enum``, a property or
    required name) holding a lone surrogate: no UTF-8 text carries one, and its only JSON
    spelling, a lone ``\\uD8xx`` escape, decodes to a string that is not Unicode (RFC 8259
    §8.2). Found here, not when decoding first reaches the value."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                raise SchemaError(f"a string holds the lone surrogate U+{ord(v[e.start]):04X}: expected "
                                  "Unicode scalar values (a JSON document generated as UTF-8 cannot carry "
                                  "an unpaired surrogate)", where, kw) from None
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v)
            stack.extend(v.values())


class Normalizer:
    """Documents, resolution and normal forms (phase 1); the compiler derives from it."""

    #: the dynamic scopes (:mod:`.dynamic`), once :meth:`track_dynamic_scope` was called
    scopes = None
    #: a ``$dynamicRef`` needing scopes raises ``dynamic.Restart`` (the caller starts over)
    restartable = False

    def __init__(self, schema, *, disallow_whitespace, close_objects, lenient, resources, property_order="schema",
                 namespace: str = "", base_prefix: str = "", spellings=None, bounds=None):
        from dotjson.jsonschema import jsonbase as _grammar
        from dotjson.jsonschema import jsonstr as _jsonstr

        spellings = _jsonstr.default_spellings(spellings, disallow_whitespace=disallow_whitespace,
                                               close_objects=close_objects, property_order=property_order)
        # the string spelling policy: content languages (`jsonstr.enc_text`: what a Diff takes
        # away too) and a schema's own strings (`lit_text`: keys, enum and const strings)
        self.spellings = spellings
        self.jsonstr = _jsonstr.spellings(spellings)
        self.enc_text = self.jsonstr.enc_text
        self.lit_text = self.jsonstr.lit_text
        self.close_objects = close_objects
        self.property_order = property_order
        # the generation bounds (values.GENERATION_BOUNDS) where the schema sets none, or None
        from dotjson.jsonschema.values import GENERATION_BOUNDS, default_bounds

        self.bounds = default_bounds(bounds, close_objects=close_objects)
        self.gen_bounds = GENERATION_BOUNDS if self.bounds == "generation" else None
        self.families: list = []         # lazy rule families (property_order="any" objects)
        self.lenient = lenient
        self.strict = 0
        # Several schemas may share one grammar (``%json`` rules in a Lark grammar, tool calls):
        # each names its rules with its own ``namespace`` prefix, and refers to the JSON base
        # rules of its whitespace setting by ``base_prefix`` + their names.
        self.ns = namespace
        self.bp = base_prefix
        self.base = _grammar.json_base(disallow_whitespace, prefix=base_prefix, spellings=spellings)
        self.ws = EPS if disallow_whitespace else Ref(base_prefix + "ws")
        self.sep = seq(self.ws, lit(","), self.ws)
        self.colon = seq(self.ws, lit(":"), self.ws)
        self.rules: dict[str, ir.Node] = {}
        self.rule_of: dict = {}          # expr -> rule name (or node, for inlined ones)
        self.names_used: set[str] = set(self.base) | {"start"}
        self.dnf_cache: dict = {}
        self._structured: dict = {}  # expression -> every value an object or array
        self.dnf_ctx_cache: dict = {}    # (expr, context atoms) -> normal form (dnf in context)
        self._ptr_cache = defaultdict(dict)  # document -> {JSON pointer -> the object or array there}
        self._leaves = defaultdict(dict)  # document -> {a leaf schema's content -> its expression}
        self._merged: dict = {}          # id(branch) -> (branch, merged atoms)
        self.inlining: set = set()
        self.docs: dict[str, _Doc] = {}
        self.resources: dict[str, tuple[str, str]] = {}   # uri -> (doc key, pointer)
        self.anchors: dict[tuple[str, str], tuple[str, str]] = {}
        self.dyn_anchor_count: dict[str, int] = {}
        self.recursive_anchor = False
        self.base_of: dict[tuple[str, str], str] = {}
        self.indexed: set = set()        # documents whose identifiers are all registered
        self.dyn_seen: set = set()
        self.pending_resources = dict(resources or {})
        self.regex_cache: dict[str, ir.Node] = {}
        self.enc_cache: dict = {}
        self.literal_cache: dict = {}
        self.number_cache: dict = {}
        self.string_cache: dict = {}
        self.formats: dict = {}
        self.empty_cache: dict = {}
        self.keep: list = []
        self.counter = 0
        self.value_sets: dict = {}
        self.depth = 0                   # applicator nesting of the normal form being computed
        self.empty_depth = 0             # nesting of the eager emptiness check
        self.fuel = None                 # products left to the emptiness tests of a compact()
        self.compact_budget = _COMPACT_BUDGET  # work left to all compactions (see compact)
        root_draft = _draft_of(schema)
        self.root_draft = root_draft
        # draft 4: `integer` is a number written without fraction or exponent (1.0 is not one)
        self.syntactic_int = root_draft == 4
        base = _DEFAULT_BASE
        self._add_doc("", schema, base, root_draft, label="")

    # ------------------------------------------------------------------ errors
    def unsupported(self, msg, ptr, kw):
        err = UnsupportedSchemaError(msg, pointer=ptr, keyword=kw)
        if self.lenient and self.strict == 0:
            warnings.warn(f"dotjson: ignoring {kw!r} ({err}); the grammar over-approximates", stacklevel=4)
            return None
        raise err

    def where(self, doc, ptr):
        label = self.docs[doc].label
        return f"{label}#{ptr}" if label else ptr

    # ------------------------------------------------------------------ documents and references
    def _add_doc(self, key, schema, base, draft, label):
        self.docs[key] = _Doc(base, schema, draft, label)
        self._scan(key, schema, "", base, draft)   # the root's own identifiers
        uri = _defrag(base)[0]
        self.resources.setdefault(uri, (key, ""))

    def _scan(self, doc, s, ptr, base, draft) -> str:
        """Register the identifiers of one schema object (``$id``, anchors); return its base URI."""
        if not isinstance(s, dict):
            return base
        idk = "id" if draft == 4 else "$id"
        sid = s.get(idk)
        if isinstance(sid, str) and not ("$ref" in s and draft <= 7):
            if draft <= 7 and sid.startswith("#"):
                self.anchors[(_defrag(base)[0], sid[1:])] = (doc, ptr)
            else:
                base = _join(base, sid)
                uri, frag = _defrag(base)
                if frag and not frag.startswith("/"):
                    self.anchors[(uri, frag)] = (doc, ptr)
                self.resources.setdefault(uri, (doc, ptr))
                base = uri
        self.base_of[(doc, ptr)] = base
        anc = s.get("$anchor")
        if isinstance(anc, str):
            self.anchors[(_defrag(base)[0], anc)] = (doc, ptr)
        dan = s.get("$dynamicAnchor")
        if isinstance(dan, str) and (doc, ptr) not in self.dyn_seen:
            self.dyn_seen.add((doc, ptr))
            self.anchors.setdefault((_defrag(base)[0], dan), (doc, ptr))
            self.dyn_anchor_count[dan] = self.dyn_anchor_count.get(dan, 0) + 1
        if s.get("$recursiveAnchor") is True and ptr != "":
            self.recursive_anchor = True
        return base

    def index_all(self) -> None:
        """Register the identifiers of every document, everywhere in it.

        Done only when a reference needs it (an embedded resource or an anchor not met on the
        way to the references seen so far, ``$dynamicRef``, ``$recursiveRef``): a 4 MB schema
        whose references are JSON pointers is never walked beyond what it uses.
        """
        for key, d in list(self.docs.items()):
            if key not in self.indexed:
                self.indexed.add(key)
                self._index(key, d.root, "", d.uri, d.draft)

    def _index(self, doc, s, ptr, base, draft):
        stack = [(s, ptr, base, 0)]
        while stack:
            s, ptr, base, depth = stack.pop()
            if not isinstance(s, dict):
                continue
            if depth > MAX_DEPTH:
                raise LimitExceededError(f"sub-schemas nested deeper than {MAX_DEPTH} levels, at "
                                         f"{_short(self.where(doc, ptr))}")
            depth += 1
            base = self._scan(doc, s, ptr, base, draft)
            for kw in _SUBSCHEMA_MAPS:
                m = s.get(kw)
                if isinstance(m, dict):
                    for k, v in m.items():
                        if isinstance(v, (dict, bool)):
                            stack.append((v, f"{ptr}/{kw}/{_esc(k)}", base, depth))
            for kw in _SUBSCHEMA_LISTS:
                m = s.get(kw)
                if isinstance(m, list):
                    for i, v in enumerate(m):
                        stack.append((v, f"{ptr}/{kw}/{i}", base, depth))
            for kw in _SUBSCHEMA_ONE:
                m = s.get(kw)
                if isinstance(m, dict):
                    stack.append((m, f"{ptr}/{kw}", base, depth))

    def get(self, doc, ptr):
        if ptr == "":
            return self.docs[doc].root
        # the parent of a sub-schema was almost always looked up just before (a property's
        # pointer after its object's): one step from it, not a walk from the root per name
        cache = self._ptr_cache[doc]
        hit = cache.get(ptr)
        if hit is not None:
            return hit
        parent, _, tok = ptr.rpartition("/")
        node = self.docs[doc].root if parent == "" else cache.get(parent)
        if node is not None:
            node = self._step(node, _unesc(tok))
        else:
            node = self._walk(doc, ptr)
        if node is not _MISSING and isinstance(node, (dict, list)):
            cache[ptr] = node
        return node

    @staticmethod
    def _step(node, tok):
        if isinstance(node, dict) and tok in node:
            return node[tok]
        if isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
            return node[int(tok)]
        return _MISSING

    def _walk(self, doc, ptr):
        node = self.docs[doc].root
        for tok in ptr.split("/")[1:]:
            tok = _unesc(tok)
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                return _MISSING
        return node

    def base_uri(self, doc, ptr):
        """The base URI in force at a schema location: the ``$id``s on the path from the root."""
        if self.scopes is not None:
            doc = self.scopes.split(doc)[0]  # (a scoped copy's identifiers are its document's)
        b = self.base_of.get((doc, ptr))
        if b is not None:
            return b
        d = self.docs[doc]
        node, base, cur = d.root, self.base_of.get((doc, ""), d.uri), ""
        # from the nearest enclosing schema whose base is known (the walk of phase 1 goes top
        # down: most often the parent's), not from the root for every reference
        j = len(ptr)
        while j > 0:
            j = ptr.rfind("/", 0, j)
            if j <= 0:
                break
            hit = self.base_of.get((doc, ptr[:j]))
            if hit is not None:
                node, base, cur = self.get(doc, ptr[:j]), hit, ptr[:j]
                break
        toks = ptr[len(cur):].split("/")[1:] if ptr else []
        i = 0
        while i < len(toks) and isinstance(node, dict):
            kw = _unesc(toks[i])
            val = node.get(kw)
            child, step = _MISSING, 1
            if kw in _SUBSCHEMA_MAPS and isinstance(val, dict) and i + 1 < len(toks):
                child, step = val.get(_unesc(toks[i + 1]), _MISSING), 2
            elif kw in _SUBSCHEMA_LISTS and isinstance(val, list) and i + 1 < len(toks):
                t = toks[i + 1]
                child, step = (val[int(t)] if t.isdigit() and int(t) < len(val) else _MISSING), 2
            elif kw in _SUBSCHEMA_ONE and isinstance(val, (dict, bool)):
                child = val
            if child is _MISSING:
                break  # not a schema position: the base stays that of the last schema
            cur = cur + "/" + "/".join(toks[i:i + step])
            i += step
            hit = self.base_of.get((doc, cur))
            base = hit if hit is not None else self._scan(doc, child, cur, base, d.draft)
            node = child
        self.base_of[(doc, ptr)] = base
        return base

    def resolve(self, doc, ptr, ref, kw="$ref"):
        if not isinstance(ref, str):
            raise SchemaError(f"{kw} must be a string", self.where(doc, ptr), kw)
        full = _join(self.base_uri(doc, ptr), ref)
        uri, frag = _defrag(full)
        if uri not in self.resources:
            self.index_all()  # perhaps an embedded resource ($id) not met so far
        if uri not in self.resources:
            found = None
            for cand in (uri, uri.rstrip("#")):
                if cand in self.pending_resources:
                    found = cand
                    break
            if found is None:
                return self.unsupported(f"cannot resolve {kw} {ref!r} (no such resource; remote schemas are "
                                        "not fetched: pass them in `resources`)", self.where(doc, ptr), kw) or TRUE
            sch = self.pending_resources.pop(found)
            key = found
            self._add_doc(key, sch, found, _draft_of(sch, self.root_draft), label=found)
            self.resources[uri] = (key, "")
        rdoc, rptr = self.resources[uri]
        frag = unquote(frag)
        if frag == "":
            target = (rdoc, rptr)
        elif frag.startswith("/"):
            target = (rdoc, rptr + frag)
        else:
            hit = self.anchors.get((uri, frag))
            if hit is None:
                self.index_all()
                hit = self.anchors.get((uri, frag))
            if hit is None:
                raise SchemaError(f"{kw} {ref!r}: no anchor {frag!r}", self.where(doc, ptr), kw)
            target = hit
        if self.get(*target) is _MISSING:
            raise SchemaError(f"{kw} {ref!r} points to nothing", self.where(doc, ptr), kw)
        return ("loc",) + target

    # ------------------------------------------------------------------ expressions
    @staticmethod
    def not_expr(e):
        if e == TRUE:
            return FALSE
        if e == FALSE:
            return TRUE
        if e[0] == "not":
            return e[1]
        return ("not", e)

    @staticmethod
    def and_expr(exprs):
        if len(exprs) == 1:  # one schema (a declared property's, most often): itself
            e = exprs[0]
            if e[0] not in ("and", "true"):
                return e
        out = []
        for e in exprs:
            if e == TRUE:
                continue
            if e == FALSE:
                return FALSE
            if e[0] == "and":
                out.extend(e[1])
            else:
                out.append(e)
        out = list(dict.fromkeys(out))
        if not out:
            return TRUE
        if len(out) == 1:
            return out[0]
        return ("and", tuple(out))

    def dnf(self, expr, ctx=()):
        """The normal form of ``expr``. ``ctx``: atoms the caller intersects the result D with
        anyway; D then need only satisfy D ∧ ctx ≡ expr ∧ ctx (the ``oneOf`` of the schema ask
        their overlaps beside ``ctx``; see :meth:`_part`). Remembered per expression (and
        context)."""
        if expr == TRUE:
            return [()]
        if expr == FALSE:
            return []
        cache, key = (self.dnf_ctx_cache, (expr, ctx)) if ctx else (self.dnf_cache, expr)
        hit = cache.get(key)
        if hit is not None:
            return hit
        if self.depth >= MAX_APPLICATOR_DEPTH:
            raise LimitExceededError(f"allOf/anyOf/oneOf/not/if/$ref nested deeper than {MAX_APPLICATOR_DEPTH} "
                                     f"levels, at {_short(self.expr_where(expr))}")
        self.depth += 1
        try:
            kind = expr[0]
            if kind == "loc":
                out = self._dnf_schema(expr[1], expr[2], ctx)
            elif kind == "and":
                out = [()]
                for e in expr[1]:
                    out = self.and2(out, self.dnf(e, ctx), self.expr_where(e))
            elif kind == "not":
                out = self.negate(self.dnf_strict(expr[1]), self.expr_where(expr[1]))
            elif kind == "enum":  # a value of a negated `const`/`enum` (see _differs)
                out = [(("enum", expr[1]),)]
            else:  # pragma: no cover
                raise AssertionError(expr)
        finally:
            self.depth -= 1
        cache[key] = out
        return out

    def dnf_strict(self, expr):
        self.strict += 1
        try:
            if self.lenient:
                # a lenient DNF may have dropped keywords: recompute without the cache
                saved = self.dnf_cache
                self.dnf_cache = {}
                try:
                    return self.dnf(expr)
                finally:
                    self.dnf_cache = saved
            return self.dnf(expr)
        finally:
            self.strict -= 1

    def expr_where(self, e):
        while e[0] in ("not", "and"):
            e = e[1] if e[0] == "not" else e[1][0]
        if e[0] == "loc":
            return self.where(e[1], e[2])
        return ""

    def and2(self, A, B, where):
        if self.fuel is not None:
            self.fuel -= max(1, len(A) * len(B))
            if self.fuel < 0:
                raise _OutOfFuel()
        if len(A) * len(B) > MAX_BRANCHES:
            # a product past the limit: its factors without their empty and subsumed branches
            # first (an allOf of if/then pairs is mostly contradictions)
            A, B = self.compact(A), self.compact(B)
            if (self.close_objects or self.property_order != "any") and \
                    sum(1 for a in A for b in B if _types_of(a + b)) > MAX_BRANCHES:
                # rather than refuse the schema, the generation policies' language may lose the
                # documents of a branch that another branch holds in the specification's
                A, B = self.compact(A, policy=False), self.compact(B, policy=False)
        out = []
        squeezed = False
        for a in A:
            for b in B:
                c = a + b if b else a
                if not _types_of(c):
                    continue
                out.append(tuple(dict.fromkeys(c)))
                if len(out) > MAX_BRANCHES:
                    out, squeezed = self._over(out, squeezed, where)
        res = []
        squeezed = False
        for c in out:
            if len(c) > 1 and any(a[0] == "ruleref" for a in c):
                res.extend(self.expand_refs(c, where))
            else:
                res.append(c)
            if len(res) > MAX_BRANCHES:
                res, squeezed = self._over(res, squeezed, where)
        return res

    def _over(self, brs, squeezed, where, room=MAX_BRANCHES // 2):
        """``brs``, a union grown past ``MAX_BRANCHES``, compacted (:meth:`compact`), and
        whether it has been compacted before; refused when compacting does not bring it back
        to ``room`` (half the limit: a product grows by factors), or when it grows past the
        limit a second time after that."""
        if not squeezed:
            brs = self.compact(brs)
            if len(brs) > room and (self.close_objects or self.property_order != "any"):
                brs = self.compact(brs, policy=False)  # (as in and2)
            if len(brs) <= room:
                return brs, True
        raise UnsupportedSchemaError("too many alternatives after combining allOf/anyOf/oneOf "
                                     f"(more than {MAX_BRANCHES})", pointer=where, keyword="allOf")

    def compact(self, brs, policy=True) -> list:
        """The union of branches ``brs`` without the branches it does not need: those provably
        empty (:meth:`live_types`) and those another, weaker branch holds (each of its atoms
        implied by theirs: the same atom, a wider ``type``, a property's schema where they
        forbid the property, a typed atom of a type they exclude). Exact: the union's language
        is unchanged. The branches keep their order (the grammar's alternatives do).

        Under the generation policies the weaker branch must also not have the narrower policy
        language: with ``close_objects`` the object keywords that declare or admit keys (a
        declared property, ``patternProperties``, ``additionalProperties``, a witness) open
        keys, and with ``property_order="schema"`` the properties' order is the order objects
        are written in. There, a branch holds another only when the other adds no such object
        keyword and lists the same properties in the same order. ``policy=False`` leaves that
        condition out (the policy language may then lose documents; still only valid ones).
        """
        if self.compact_budget <= 0:
            return brs
        # (a branch with references is kept as it is: deciding it would expand them)
        keep = self._live(brs, keep_refs=True)
        if len(keep) < 2:
            return keep
        self.compact_budget -= len(keep) * len(keep) // 2
        policy = policy and (self.close_objects or self.property_order != "any")
        norm = (lambda x: x) if policy else (lambda x: x[:3] if x[0] == "props" else x)
        facts = []
        for br in keep:
            absent = {x[1] for x in br if x[0] == "props" and x[2] == FALSE}
            facts.append((frozenset(norm(x) for x in br), _types_of(br), absent))
        order = sorted(range(len(keep)), key=lambda i: len(keep[i]))
        chosen: list = []
        for i in order:
            if any(self._implies(facts[i], keep[j], norm) and (not policy or self._same_objects(keep[j], keep[i]))
                   for j in chosen):
                continue
            chosen.append(i)
        chosen.sort()
        return [keep[i] for i in chosen]

    @staticmethod
    def _implies(fact, a, norm) -> bool:
        """Whether a branch with ``fact`` (its atoms, its types, the properties it forbids)
        satisfies every atom of branch ``a``."""
        atoms, types, absent = fact
        for x in a:
            k = x[0]
            if norm(x) in atoms:
                continue
            if k == "types":
                if types <= x[1]:
                    continue
                return False
            if k == "props" and x[1] in absent:
                continue
            T = _ATOM_TYPES.get(k)
            if T is not None and not (types & T):
                continue
            return False
        return True

    @staticmethod
    def _same_objects(a, b) -> bool:
        """Whether branch ``b`` (a superset of ``a``'s atoms) holds no object keyword beyond
        ``a``'s that changes its policy language (see :meth:`compact`)."""
        extra = set(b).difference(a)
        if any(x[0] in ("props", "pattern", "addl", "some") for x in extra):
            return False
        names_a = list(dict.fromkeys(x[1] for x in a if x[0] == "props"))
        names_b = list(dict.fromkeys(x[1] for x in b if x[0] == "props"))
        return names_a == names_b

    def inline(self, target, where):
        if target in self.inlining:
            raise UnsupportedSchemaError("a $ref cycle through allOf/not/if cannot be intersected "
                                         "(recursive schema combined with sibling keywords)",
                                         pointer=where, keyword="$ref")
        self.inlining.add(target)
        try:
            d = self.dnf(target)
            res = []
            for br in d:
                if len(br) == 1 and br[0][0] == "ruleref":
                    res.extend(self.inline(br[0][1], where))
                else:
                    res.append(br)
            return res
        finally:
            self.inlining.discard(target)

    def expand_refs(self, c, where):
        # keep the atoms' order: it is the order of the properties in the grammar
        out = [()]
        for a in c:
            if a[0] == "ruleref":
                out = self.and2(out, self.inline(a[1], where), where)
            else:
                out = [b + (a,) for b in out]
        return out

    # ------------------------------------------------------------------ negation
    def negate(self, D, where, within=()):
        """The normal form of ¬D (``D`` a normal form); ``within``: atoms the result is
        intersected with anyway (a type), so that branches outside them are dropped as they
        are made, not after the product of every negated branch."""
        if not D:
            return [tuple(within)]
        if len(D) == 1:
            return self.and2([tuple(within)], self.neg_branch(D[0], where), where)
        try:
            out = self._negate_product(D, where, within)
            if len(out) > MAX_BRANCHES:
                # (a product within the limit, its shared alternatives beside it past it)
                return negate_by_witnesses(self, D, where, within) or out
            return out
        except UnsupportedSchemaError as e:
            if e.keyword != "allOf":
                raise
            try:
                out = self._negate_split(D, where, within)
            except UnsupportedSchemaError as e2:
                if e2.keyword != "allOf":
                    raise
                out = None
            if out is None:
                # one witness per negated object branch instead of their product
                out = negate_by_witnesses(self, D, where, within)
            if out is None:
                raise
            return out

    def _negate_product(self, D, where, within):
        # ¬(B1 ∨ … ∨ Bk) = ∧ ¬Bi, each ¬Bi a union of negated atoms: a product that grows by a
        # factor per branch. Alternatives that are empty or subsumed (`bar` absent, and `bar`
        # absent with more) go first, and the alternatives C every ¬Bi shares are factored out:
        # ∧ (C ∨ Ri) = C ∨ ∧ Ri (a value of another type, a shared property invalid ...)
        nbs = []
        for br in D:
            nb = self.neg_branch(br, where)
            nbs.append(self.compact(nb) if len(nb) > 1 else nb)
        common = set(nbs[0]).intersection(*nbs[1:])
        out = [tuple(within)]
        for nb in nbs:
            rest = [x for x in nb if x not in common] if common else nb
            out = self.and2(out, rest, where)
            if not out:
                break
            if len(out) > _COMPACT_AT:
                out = self.compact(out)
        if common:
            shared = self.and2([tuple(within)], [x for x in nbs[0] if x in common], where)
            out = shared + out
            if len(out) > _COMPACT_AT:
                out = self.compact(out)
        return out

    def _negate_split(self, D, where, within):
        """¬D split on a discriminator, or ``None`` without one: an object property ``p`` to
        which two branches or more give finitely many values (``"type": {"const": "Point"}``).
        On objects, ¬D is the union over the cases of ``p`` — absent, present with a value of
        one group (the values the same branches allow), present with another value — of the
        case with the negation of the branches that case leaves, restricted to it (their
        atoms on ``p`` are settled); on other types, ¬D itself. Each case negates a few
        branches where the product over all of them has one factor per branch."""
        best, V = None, None
        for p in dict.fromkeys(a[1] for br in D for a in br if a[0] == "props"):
            vs = [self._finite_prop(br, p) for br in D]
            if sum(v is not None for v in vs) > max(1, best and sum(v is not None for v in V) or 0):
                best, V = p, vs
        if best is None:
            return None
        p = best
        obj = ("types", frozenset({"object"}))
        # values grouped by the branches that allow them
        sig: dict = {}
        for v in dict.fromkeys(x for vs in V if vs is not None for x in vs):
            sig.setdefault(tuple(i for i, vs in enumerate(V) if vs is not None and v in vs), []).append(v)
        allv = tuple(x for g in sig.values() for x in g)

        def rest(br, absent):
            # br on the case: its atoms on p settled (a finite one holds for the group's values;
            # any holds when p is absent; `required p` holds when p is present)
            return tuple(a for a in br if not (a[0] in ("props", "required") and a[1] == p
                                               and (absent or a[0] == "required" or self._finite_prop((a,), p) is not None)))

        cases = []
        # p absent: the branches that do not require it
        cases.append(((obj, ("props", p, FALSE)),
                      [rest(br, True) for br in D if ("required", p) not in br]))
        for members, vals in sig.items():
            g = tuple(vals)
            cases.append(((obj, ("required", p), ("props", p, ("enum", g))),
                          [rest(br, False) for i, br in enumerate(D) if V[i] is None or i in members]))
        cases.append(((obj, ("required", p), ("props", p, ("not", ("enum", allv)))),
                      [rest(br, False) for i, br in enumerate(D) if V[i] is None]))
        nonobj = ("types", _U - {"object"})
        out = self.negate(D, where, tuple(within) + (nonobj,))
        for atoms, sub in cases:
            if any(not br for br in sub):
                continue  # a branch the case satisfies whole: no value of the case is outside D
            out = out + self.negate(sub, where, tuple(within) + atoms)
            if len(out) > MAX_BRANCHES:
                out, _ = self._over(out, False, where)
        return out

    def _finite_prop(self, br, p):
        """The values (canonical) branch ``br`` allows property ``p`` by a ``props`` atom whose
        schema lists them (an ``enum``/``const``), intersected over such atoms; ``None`` when
        none does."""
        out = None
        for a in br:
            if a[0] == "props" and a[1] == p and a[2] not in (TRUE, FALSE):
                key = ("finite-prop", a[2])
                if key not in self.formats:
                    vals = None
                    try:
                        d = self.dnf_strict(a[2])
                        fins = [self.finite_branch(b) for b in d]
                        if d and all(f is not None for f in fins):
                            vals = frozenset(c for f in fins for c in f)
                    except UnsupportedSchemaError:
                        vals = None
                    self.formats[key] = vals
                vals = self.formats[key]
                if vals is not None:
                    out = vals if out is None else out & vals
        return out

    def neg_branch(self, br, where) -> list:
        """The normal form of ¬br (one branch): the union of its atoms' negations, except that a
        required property and its schemas are negated together: ¬(p present ∧ p's value in X)
        is "p's value, if present, in ¬X" (one alternative, not "p absent" beside "p present
        and not in X")."""
        req = {a[1] for a in br if a[0] == "required"}
        joint: dict = {}
        if req:
            for a in br:
                if a[0] == "props" and a[1] in req:
                    joint.setdefault(a[1], []).append(a[2])
        out = []
        for a in br:
            k = a[0]
            if joint and k == "props" and a[1] in joint:
                continue
            if joint and k == "required" and a[1] in joint:
                ne = self.not_expr(self.and_expr(joint[a[1]]))
                out.append((_OBJECT_TYPE, ("props", a[1], ne)))
                continue
            out.extend(self.neg_atom(a, where))
        return out

    def neg_atom(self, a, where):
        k = a[0]
        if k == "types":
            return [(("types", _U - a[1]),)]
        if k == "enum":
            # (an excluded object or array value is expanded where it is built, and only there:
            # a branch that lists its values filters them instead; see without_values)
            return [(("notenum", a[1]),)]
        if k == "notenum":
            return [(("enum", a[1]),)]
        if k == "ruleref":
            return self.negate(self.inline(a[1], where), where)
        T = _ATOM_TYPES[k]
        # a typed atom holds for every value of another type: its negation is typed
        t = ("types", T)
        if k == "num":
            _, lo, lox, hi, hix = a
            res = []
            if lo is not None:
                res.append((t, ("num", None, False, lo, not lox)))
            if hi is not None:
                res.append((t, ("num", hi, not hix, None, False)))
            return res
        if k == "mult":
            return [(t, ("notmult", a[1]))]
        if k == "notmult":
            return [(t, ("mult", a[1]))]
        if k == "str":
            return [(t, ("str", a[1], not a[2]))]
        if k in ("len", "nprops", "nitems"):
            _, lo, hi = a
            res = []
            if lo > 0:
                res.append((t, (k, 0, lo - 1)))
            if hi is not None:
                res.append((t, (k, hi + 1, None)))
            return res
        if k == "required":
            return [(t, ("props", a[1], FALSE))]
        if k == "props":
            return [(t, ("required", a[1]), ("props", a[1], self.not_expr(a[2])))]
        if k == "pos":
            return [(t, ("nitems", a[1] + 1, None), ("pos", a[1], self.not_expr(a[2])))]
        if k == "items":
            # some item from that position on violates the schema (a contains from there)
            ne = self.not_expr(a[2])
            return [(t, ("contains", ne, 1, None) if a[1] == 0 else ("contains", ne, 1, None, a[1]))]
        if k == "contains":
            e, lo, hi = a[1], a[2], a[3]
            tail = a[4:]  # (the first position it counts from, when not 0)
            res = []
            if lo > 0:
                res.append((t, ("contains", e, 0, lo - 1) + tail))
            if hi is not None:
                res.append((t, ("contains", e, hi + 1, None) + tail))
            return res
        # An object keyword over members fails on one member: some key it speaks of whose value
        # violates its schema (a `some` atom, a witness the object automaton looks for), and
        # the negation of a witness is the keyword again.
        if k == "pattern":
            return [(t, ("some", ("p", a[1]), self.not_expr(a[2])))]
        if k == "addl":
            return [(t, ("some", ("a", a[2], a[3]), self.not_expr(a[1])))]
        if k == "pnames":
            ne = self.not_expr(a[1])
            self.dnf_strict(ne)  # (the names' negation: its errors now, not when decoding)
            return [(t, ("some", ("n", ne), TRUE))]
        if k == "some":
            spec, v = a[1], a[2]
            if spec[0] == "o":  # a negated object branch (negated_branches): the branch again
                return [(t,) + spec[1]]
            if spec[0] == "p":
                return [(t, ("pattern", spec[1], self.not_expr(v)))]
            if spec[0] == "a":
                return [(t, ("addl", self.not_expr(v), spec[1], spec[2]))]
            if v == TRUE:
                return [(t, ("pnames", self.not_expr(spec[1])))]
        kwname = {"items": "items", "addl": "additionalProperties", "pattern": "patternProperties",
                  "pnames": "propertyNames", "unique": "uniqueItems", "some": "not"}.get(k, k)
        raise UnsupportedSchemaError(f"cannot negate {kwname!r} exactly (under not/oneOf/if)",
                                     pointer=where, keyword=kwname)

    def _differs(self, c) -> list:
        """The normal form of "not the object or array value ``c``" (canonical): another type,
        or for an object a key ``c`` lacks, a key of ``c`` missing or one of its values
        different, for an array another length or an item different. The values are
        expressions ``("enum", (value,))``, negated lazily, so nested values cost nothing
        until a document reaches them."""
        t = frozenset({"object" if c[0] == "o" else "array"})
        out = [(("types", _U - t),)]
        ty = ("types", t)
        if c[0] == "o":
            names = frozenset(k for k, _ in c[1])
            out.append((ty, ("some", ("a", names, ()), TRUE)))
            for k, vc in c[1]:
                out.append((ty, ("props", k, FALSE)))
                out.append((ty, ("required", k), ("props", k, self._not_value(vc))))
        else:
            n = len(c[1])
            if n > 0:
                out.append((ty, ("nitems", 0, n - 1)))
            out.append((ty, ("nitems", n + 1, None)))
            for i, vc in enumerate(c[1]):
                out.append((ty, ("nitems", i + 1, None), ("pos", i, self._not_value(vc))))
        return out

    def without_values(self, br, where):
        """Branch ``br`` as branches without an excluded object or array value (``not`` over
        an object/array ``const``/``enum``), or ``None`` when it excludes none of a type it
        allows or lists its values (they are filtered one by one)."""
        m = self.merge(br)
        if m.enum is not None or m.refs:
            return None
        ts = m.types
        structured = [c for c in m.not_enum if (c[0] == "o" and "object" in ts) or (c[0] == "a" and "array" in ts)]
        if not structured:
            return None
        scalars = tuple(sorted((c for c in m.not_enum if c[0] != "o" and c[0] != "a"), key=repr))
        out = [tuple(a for a in br if a[0] != "notenum") + ((("notenum", scalars),) if scalars else ())]
        for c in sorted(structured, key=repr):
            out = self.and2(out, self._differs(c), where)
        return out

    def _not_value(self, c):
        """The expression of every value but canonical value ``c``."""
        self.literal_cache.setdefault(("v", c), _uncanon(c))
        return ("not", ("enum", (c,)))

    # ------------------------------------------------------------------ keywords → DNF
    def _dnf_schema(self, doc, ptr, ctx=()):
        # ctx: atoms the caller intersects the result with anyway (see dnf)
        s = self.get(doc, ptr)
        if s is True:
            return [()]
        if s is False:
            return []
        if not isinstance(s, dict):
            raise SchemaError(f"a schema must be an object or a boolean, got {type(s).__name__}",
                              self.where(doc, ptr))
        draft = self.docs[doc].draft
        atoms: list = []
        parts: list = []

        if "$ref" in s and draft <= 7:
            return [(("ruleref", self.ref_target(doc, ptr, s["$ref"], "$ref")),)]

        for kw, val in s.items():
            try:
                self._keyword(kw, val, s, doc, ptr, draft, atoms, parts)
            except UnsupportedSchemaError as e:
                if self.lenient and self.strict == 0:
                    warnings.warn(f"dotjson: ignoring {kw!r} at {self.where(doc, ptr) or '/'} ({e}); the "
                                  "grammar over-approximates", stacklevel=3)
                    continue
                if e.pointer is None:
                    raise UnsupportedSchemaError(str(e), pointer=f"{ptr}/{_esc(kw)}", keyword=kw) from None
                raise
            except SchemaError as e:
                if e.pointer is None:
                    raise SchemaError(str(e), pointer=f"{ptr}/{_esc(kw)}", keyword=kw) from None
                raise
        out = [tuple(atoms)]
        if atoms and not _types_of(out[0]):
            return []
        if parts:
            where = self.where(doc, ptr)
            around = out[0] + tuple(ctx) if ctx else out[0]
            for k, d in enumerate(parts):
                if type(d) is _OneOf:  # its overlaps are asked beside this schema's own atoms
                    parts[k] = self.one_of(d.exprs, d.where, around)
                elif type(d) is _InContext:
                    parts[k] = self._in_context(d, around)
            parts = [d for d in parts if d is not _DROPPED]
            for d in parts:
                out = self.and2(out, d, where)
                if not out:
                    break
        return out

    def _kw_where(self, doc, ptr, kw) -> str:
        """Where keyword ``kw`` of the schema at ``ptr`` sits, as a message gives it."""
        return f"{self.where(doc, ptr)}/{_esc(kw)}"

    def _sub(self, s, doc, ptr, kw, *more):
        """The expression of the sub-schema ``s[kw][m]...`` of the schema ``s`` at ``ptr``.

        That is what ``self.get`` would find at its pointer (every caller has checked the
        containers on the way): taken directly, and remembered for the normal form of the
        sub-schema, which looks its pointer up next. A method, not a closure per schema.
        """
        v = s[kw]
        p = f"{ptr}/{kw}"  # (a keyword this module names: no ~ or / to escape)
        for m in more:
            v = v[m]
            p = f"{p}/{m if type(m) is int else _esc(m)}"
        if isinstance(v, dict):
            # a leaf (no sub-schema, no identifier or reference) means the same wherever it sits
            # in its document: its first place stands for all (10,000 properties of
            # `{"type": "integer"}` are one expression, normalised and decided once)
            key = _leaf_key(v)
            if key is not None:
                e = self._leaves[doc].get(key)
                if e is not None:
                    return e
            self._ptr_cache[doc][p] = v
            e = ("loc", doc, p)
            if key is not None:
                self._leaves[doc][key] = e
            return e
        if not isinstance(v, bool):
            raise SchemaError(f"{kw} must hold a schema (an object or a boolean)", self.where(doc, p), kw)
        if v is True:
            return TRUE
        if v is False:
            return FALSE
        return ("loc", doc, p)

    def _keyword(self, kw, val, s, doc, ptr, draft, atoms, parts):
        if kw in IGNORED_KEYWORDS:
            return
        # The four most frequent keywords (three in four of a typical schema's) first, their
        # pointer spelled only for an error: spelling it for every keyword showed in profiles.
        if kw == "type":
            if isinstance(val, str) and val in _TYPE_ATOMS:
                atoms.append(_TYPE_ATOMS[val])  # shared, not a new atom per schema
                return
            names = val if isinstance(val, list) else [val]
            ts = frozenset()
            for t in names:
                if not isinstance(t, str) or t not in _TYPE_NAMES:
                    raise SchemaError(f"unknown type {t!r}", self._kw_where(doc, ptr, kw), kw)
                ts |= _TYPE_NAMES[t]
            atoms.append(("types", ts))
            return
        if kw == "minLength" or kw == "maxLength":
            if isinstance(val, int) and not isinstance(val, bool) and val >= 0:
                n = int(val)
            else:
                n = _count(val, self._kw_where(doc, ptr, kw), kw)
            if n >= _LANE_COUNT:
                self.lane_count(n, self._kw_where(doc, ptr, kw), kw)
            atoms.append(("len", n, None) if kw == "minLength" else ("len", 0, n))
            return
        if kw == "properties":
            if not isinstance(val, dict):
                raise SchemaError("properties must be an object", self._kw_where(doc, ptr, kw), kw)
            if not "".join(val).isascii():  # ASCII holds no surrogate
                _scalar_text(list(val), self._kw_where(doc, ptr, kw), kw)
            for name in val:
                # (marked declared: `not`, `dependentRequired` ... make props atoms that only
                # constrain a value, and close_objects closes only objects that declare names)
                atoms.append(("props", name, self._sub(s, doc, ptr, kw, name), True))
            return
        if kw == "required":
            if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
                raise SchemaError("required must be an array of strings", self._kw_where(doc, ptr, kw), kw)
            if not "".join(val).isascii():
                _scalar_text(val, self._kw_where(doc, ptr, kw), kw)
            for name in val:
                atoms.append(("required", name))
            return
        where = self.where(doc, ptr)
        kwhere = f"{where}/{_esc(kw)}"
        if kw == "$ref":
            atoms.append(("ruleref", self.ref_target(doc, ptr, val, kw)))
        elif kw == "$dynamicRef" and draft >= 2020:
            target = self.ref_target(doc, ptr, val, kw)
            if target is not None and target != TRUE:
                atoms.append(("ruleref", target))
        elif kw == "$recursiveRef" and draft == 2019:
            self.index_all()
            if self.recursive_anchor:
                self.unsupported("$recursiveRef with nested $recursiveAnchor is not supported", kwhere, kw)
                return
            atoms.append(("ruleref", self.resolve(doc, ptr, val, kw)))
        elif kw == "enum":
            if not isinstance(val, list):
                raise SchemaError("enum must be an array", kwhere, kw)
            _scalar_text(val, kwhere, kw)
            atoms.append(("enum", self.values(val, kwhere, kw)))
        elif kw == "const" and draft >= 6:
            _scalar_text(val, kwhere, kw)
            atoms.append(("enum", self.values([val], kwhere, kw)))
        elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if kw.startswith("exclusive") and draft == 4:
                if not isinstance(val, bool):
                    raise SchemaError(f"{kw} must be a boolean in draft 4", kwhere, kw)
                return  # read together with minimum/maximum
            c = _number(val, kwhere, kw)
            if kw == "minimum":
                atoms.append(("num", c, draft == 4 and s.get("exclusiveMinimum") is True, None, False))
            elif kw == "maximum":
                atoms.append(("num", None, False, c, draft == 4 and s.get("exclusiveMaximum") is True))
            elif kw == "exclusiveMinimum":
                atoms.append(("num", c, True, None, False))
            else:
                atoms.append(("num", None, False, c, True))
        elif kw == "multipleOf":
            c = _number(val, kwhere, kw)
            if c <= 0:
                raise SchemaError("multipleOf must be greater than 0", kwhere, kw)
            atoms.append(("mult", c))
        elif kw == "pattern":
            self.regex(val, kwhere, kw)
            atoms.append(("str", ("pattern", val), True))
        elif kw == "format":
            if not isinstance(val, str):
                raise SchemaError("format must be a string", kwhere, kw)
            if self.format_node(val) is not None:
                atoms.append(("str", ("format", val), True))
            elif val in _UNSUPPORTED_FORMATS:
                self.unsupported(f"format {val!r} has no exact string language in dotjson.formats "
                                 "(lenient=True ignores it)", kwhere, kw)
        elif kw == "additionalProperties":
            atoms.append(self.addl_atom(s, self._sub(s, doc, ptr, kw), kwhere))
        elif kw == "unevaluatedProperties":
            e = self._sub(s, doc, ptr, kw)
            if e == TRUE or "additionalProperties" in s:
                return
            if any(k in s for k in _APPLICATORS):
                self.unevaluated(doc, ptr, "props", e, kwhere, kw, parts)
                return
            atoms.append(self.addl_atom(s, e, kwhere))
        elif kw == "patternProperties":
            if not isinstance(val, dict):
                raise SchemaError("patternProperties must be an object", kwhere, kw)
            for p in val:
                self.regex(p, f"{kwhere}/{_esc(p)}", kw)
                atoms.append(("pattern", p, self._sub(s, doc, ptr, kw, p)))
        elif kw == "propertyNames" and draft >= 6:
            atoms.append(("pnames", self._sub(s, doc, ptr, kw)))
        elif kw in ("minProperties", "maxProperties"):
            n = self.lane_count(_count(val, kwhere, kw), kwhere, kw)
            atoms.append(("nprops", n, None) if kw == "minProperties" else ("nprops", 0, n))
        elif kw == "dependentRequired" and draft >= 2019 or kw == "dependencies":
            if not isinstance(val, dict):
                raise SchemaError(f"{kw} must be an object", kwhere, kw)
            for name, dep in val.items():
                absent = [(("types", frozenset({"object"})), ("props", name, FALSE)), (("types", _U - {"object"}),)]
                if isinstance(dep, list):
                    if not all(isinstance(x, str) for x in dep):
                        raise SchemaError(f"{kw} entries must be arrays of strings", f"{kwhere}/{_esc(name)}", kw)
                    present = [(("required", name),) + tuple(("required", d) for d in dep)]
                    parts.append(absent + present)
                elif kw == "dependencies" and isinstance(dep, (dict, bool)):
                    parts.append(self._dependent(self._sub(s, doc, ptr, kw, name), name, absent, kwhere))
                else:
                    raise SchemaError(f"{kw} entries must be arrays of strings", f"{kwhere}/{_esc(name)}", kw)
        elif kw == "dependentSchemas" and draft >= 2019:
            if not isinstance(val, dict):
                raise SchemaError(f"{kw} must be an object", kwhere, kw)
            for name in val:
                absent = [(("types", frozenset({"object"})), ("props", name, FALSE)), (("types", _U - {"object"}),)]
                parts.append(self._dependent(self._sub(s, doc, ptr, kw, name), name, absent, kwhere))
        elif kw == "prefixItems" and draft >= 2020:
            if not isinstance(val, list):
                raise SchemaError("prefixItems must be an array", kwhere, kw)
            for i in range(len(val)):
                atoms.append(("pos", i, self._sub(s, doc, ptr, kw, i)))
        elif kw == "items":
            if isinstance(val, list) and draft <= 2019:
                for i in range(len(val)):
                    atoms.append(("pos", i, self._sub(s, doc, ptr, kw, i)))
            elif isinstance(val, (dict, bool)):
                start = len(s.get("prefixItems", ())) if draft >= 2020 and isinstance(s.get("prefixItems"), list) else 0
                atoms.append(("items", start, self._sub(s, doc, ptr, kw)))
            else:
                raise SchemaError("items must be a schema" + (" or an array of schemas" if draft <= 2019 else ""),
                                  kwhere, kw)
        elif kw == "additionalItems" and draft <= 2019:
            if isinstance(s.get("items"), list):
                atoms.append(("items", len(s["items"]), self._sub(s, doc, ptr, kw)))
        elif kw == "unevaluatedItems":
            e = self._sub(s, doc, ptr, kw)
            if e == TRUE:
                return
            if any(k in s for k in _APPLICATORS) or "contains" in s:
                self.unevaluated(doc, ptr, "items", e, kwhere, kw, parts)
                return
            items = s.get("items")
            if draft >= 2020:
                if "items" in s:
                    return
                pre = s.get("prefixItems")
                atoms.append(("items", len(pre) if isinstance(pre, list) else 0, e))
            else:
                if isinstance(items, list):
                    if "additionalItems" in s:
                        return
                    atoms.append(("items", len(items), e))
                elif items is None:
                    atoms.append(("items", 0, e))
        elif kw in ("minItems", "maxItems"):
            n = self.lane_count(_count(val, kwhere, kw), kwhere, kw)
            atoms.append(("nitems", n, None) if kw == "minItems" else ("nitems", 0, n))
        elif kw == "contains" and draft >= 6:
            lo, hi = 1, None
            if draft >= 2019:
                if "minContains" in s:
                    lo = self.lane_count(_count(s["minContains"], f"{where}/minContains", "minContains"),
                                         f"{where}/minContains", "minContains")
                if "maxContains" in s:
                    hi = self.lane_count(_count(s["maxContains"], f"{where}/maxContains", "maxContains"),
                                         f"{where}/maxContains", "maxContains")
            atoms.append(("contains", self._sub(s, doc, ptr, kw), lo, hi))
        elif kw == "uniqueItems":
            if not isinstance(val, bool):
                raise SchemaError("uniqueItems must be a boolean", kwhere, kw)
            if val:
                atoms.append(("unique", kwhere))
        elif kw == "allOf":
            for i in range(_nonempty_list(val, kwhere, kw)):
                parts.append(self._part(self._sub(s, doc, ptr, kw, i), kwhere))
        elif kw == "anyOf":
            u = []
            for i in range(_nonempty_list(val, kwhere, kw)):
                u.extend(self.dnf(self._sub(s, doc, ptr, kw, i)))
            parts.append(u)
        elif kw == "oneOf":
            n = _nonempty_list(val, kwhere, kw)
            parts.append(_OneOf([self._sub(s, doc, ptr, kw, i) for i in range(n)], kwhere))
        elif kw == "not":
            parts.append(self.negate(self.dnf_strict(self._sub(s, doc, ptr, kw)), kwhere))
        elif kw == "if" and draft >= 7:
            then = self._sub(s, doc, ptr, "then") if "then" in s else None
            els = self._sub(s, doc, ptr, "else") if "else" in s else None
            if then is None and els is None:
                return
            I = self.dnf(self._sub(s, doc, ptr, kw)) if els is None or then is not None else None
            if then is None:
                # (if ∧ true) ∨ (¬if ∧ else)  ≡  if ∨ else
                parts.append(self.dnf(self._sub(s, doc, ptr, kw)) + self.dnf(els))
                return
            NI = self.negate(self.dnf_strict(self._sub(s, doc, ptr, kw)), kwhere)
            T = self.and2(I, self.dnf(then), kwhere)
            E = NI if els is None else self.and2(NI, self.dnf(els), kwhere)
            parts.append(T + E)
        # everything else: not a keyword of this dialect (or an annotation): no constraint

    def unevaluated(self, doc, ptr, what, e, where, kw, parts):
        """``unevaluatedProperties``/``unevaluatedItems: e`` beside applicators: a case per set
        of evaluated members the branches that hold may give (:mod:`.unevaluated`)."""
        from dotjson.jsonschema import unevaluated as _unev

        try:
            d = _unev.keyword(self, doc, ptr, what, e, where)
        except _unev.NotStatic as err:
            self.unsupported(f"{kw} whose evaluated {'properties' if what == 'props' else 'items'} "
                             f"cannot be enumerated: {err}", where, kw)
            return
        if d is not None:
            parts.append(d)

    def ref_target(self, doc, ptr, ref, kw):
        """The expression ``$ref``/``$dynamicRef`` ``ref`` at ``(doc, ptr)`` refers to (``None``:
        refused, leniently)."""
        if kw != "$dynamicRef":
            target = self.resolve(doc, ptr, ref, kw)
            return target if self.scopes is None or target == TRUE else self.scopes.follow(doc, ptr, target)
        self.index_all()  # every $dynamicAnchor counts
        target = self.resolve(doc, ptr, ref, kw)
        if target == TRUE:
            return target
        if self.scopes is not None:
            return self.scopes.dynamic(doc, ptr, ref, target)
        frag = _defrag(ref)[1]
        tgt = self.get(target[1], target[2])
        name = tgt.get("$dynamicAnchor") if isinstance(tgt, dict) else None
        if name == frag and self.dyn_anchor_count.get(name, 0) > 1:
            if self.restartable:
                from dotjson.jsonschema.dynamic import Restart

                raise Restart()  # (the dynamic scope matters: tracked from the root, see .dynamic)
            return self.unsupported("$dynamicRef with several candidate $dynamicAnchors needs the dynamic "
                                    "scope tracked from the root (track_dynamic_scope)", self._kw_where(doc, ptr, kw), kw)
        return target

    def track_dynamic_scope(self) -> None:
        """Follow every reference into a copy per dynamic scope (:mod:`.dynamic`): called before
        phase 1 where a ``$dynamicRef`` has several candidate ``$dynamicAnchor``s."""
        from dotjson.jsonschema.dynamic import Scopes

        self.scopes = Scopes(self)

    def addl_atom(self, s, e, where):
        props = s.get("properties", {})
        pats = s.get("patternProperties", {})
        if not isinstance(props, dict) or not isinstance(pats, dict):
            raise SchemaError("properties/patternProperties must be objects", where)
        for p in pats:
            self.regex(p, where, "patternProperties")
        return ("addl", e, frozenset(props), tuple(sorted(pats)))

    def format_node(self, name):
        key = ("format", name)
        if key not in self.formats:
            self.formats[key] = _format_node(name)
        return self.formats[key]


    def values(self, vals, where=None, kw=None):
        out = []
        for v in vals:
            try:
                c = _canon(v)
            except SchemaError as e:
                if e.pointer is not None or where is None:
                    raise
                raise type(e)(str(e), where, kw) from None
            self.literal_cache.setdefault(("v", c), v)
            out.append(c)
        return tuple(dict.fromkeys(out))

    def regex(self, pattern, where, kw):
        if not isinstance(pattern, str):  # (before the caches: a list is not even hashable)
            raise SchemaError(f"{kw} must be a string", where, kw)
        hit = self.regex_cache.get(pattern)
        if hit is not None:
            return hit
        hit = _REGEX_CACHE.get(pattern)
        if hit is not None:
            self.regex_cache[pattern] = hit
            self._regex_lane_counts(pattern, hit, where, kw)
            return hit
        from dotjson.regex import regex_to_ir

        try:
            node = regex_to_ir(pattern, search=True)
        except UnsupportedSchemaError as e:
            raise UnsupportedSchemaError(f"pattern {pattern!r}: {e}", pointer=where, keyword=kw) from None
        except (SchemaError, GrammarError) as e:
            raise SchemaError(f"pattern {pattern!r}: {e}", pointer=where, keyword=kw) from None
        self.regex_cache[pattern] = node
        if len(_REGEX_CACHE) > 4096:
            _REGEX_CACHE.clear()
        _REGEX_CACHE[pattern] = node
        self._regex_lane_counts(pattern, node, where, kw)
        return node

    def lane_count(self, n: int, where, kw) -> int:
        """Note count ``n`` of keyword ``kw`` (at ``where``); returns it. A count of at least
        :data:`dotjson.automaton.counters.BAND` takes an automaton lane (so may the difference
        of two bounds of one repetition): a schema with more than half the lanes' worth of
        distinct such counts is refused here, at ``Index(...)``, never at a later mask."""
        if n >= _LANE_COUNT:
            seen = self.__dict__.setdefault("_lane_counts", set())
            seen.add(n)
            if len(seen) > _MAX_LANE_COUNTS:
                raise UnsupportedSchemaError(
                    f"{kw} {n}: more than {_MAX_LANE_COUNTS} distinct counts of at least "
                    f"{_LANE_COUNT} in one schema (each takes one of the automaton's lanes, "
                    f"and so may the difference of two bounds)", pointer=where, keyword=kw)
        return n

    def _regex_lane_counts(self, pattern, node, where, kw) -> None:
        if "{" not in pattern:
            return
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ir.Repeat):
                for b in (n.min, n.max):
                    if b is not None and b >= _LANE_COUNT:
                        self.lane_count(b, where, kw)
            stack.extend(ir.children(n))

    def one_of(self, exprs, where, context=(), witnesses=False):
        """The normal form of ``oneOf``: each branch of each sub-schema, with the negation of
        every *other* sub-schema it may overlap (exactly one holds). A pair proven disjoint
        (:meth:`branch_empty`) needs no negation: the branch implies it. ``context``: atoms
        of the schema around the ``oneOf`` (its ``type`` ...), which the result is intersected
        with anyway: two branches that overlap only outside it are disjoint here.

        Where that is refused for its size (with ``property_order="any"``), it is made again
        with ``witnesses``: the sub-schemas a branch overlaps negated together, each object
        branch of them one witness (:func:`~dotjson.jsonschema.negated_branches.negate_by_witnesses`)
        instead of a factor of a product."""
        Ds = [self.dnf(e) for e in exprs]
        # per branch of each sub-schema: groups of its types, each with the other sub-schemas it
        # may overlap on those types (a string two object branches both allow overlaps; their
        # objects may not)
        plan = []
        any_overlap = False
        for i, D in enumerate(Ds):
            for a in D:
                over: dict = {}
                for j in range(len(Ds)):
                    if j != i:
                        for b in Ds[j]:
                            for t in self.live_types(context + a + b):
                                over.setdefault(t, set()).add(j)
                groups: dict = {}
                for t in _types_of(context + a):
                    groups.setdefault(frozenset(over.get(t, ())), set()).add(t)
                any_overlap = any_overlap or any(groups)
                plan.append((a, groups))
        if not any_overlap:
            return [br for D in Ds for br in D]
        # exactly one: A_i ∧ ¬A_j, on each type, for the j that A_i may overlap there
        negs: dict = {}
        retry = False
        try:
            self.strict += 1
            out = []
            for a, groups in plan:
                if len(groups) == 1 and frozenset() in groups:
                    out.append(a)
                    continue
                fin = self.finite_branch(a)
                if fin is not None:
                    # finitely many values (an enum): those that satisfy no other sub-schema
                    js = sorted(set().union(*groups))
                    keep = tuple(c for c in fin
                                 if not any(self.validate(self.literal_cache[("v", c)], exprs[j]) for j in js))
                    if keep:
                        out.append((("enum", keep),))
                    continue
                for js, ts in groups.items():
                    ty = ("types", frozenset(ts))
                    cur = [a + (ty,)]
                    if witnesses and js:
                        key = ("w", frozenset(js), ty)
                        if key not in negs:
                            union = [br for j in sorted(js) for br in self.dnf_strict(exprs[j])]
                            negs[key] = negate_by_witnesses(self, union, where, (ty,))
                        if negs[key] is not None:
                            out.extend(self.and2(cur, negs[key], where))
                            if len(out) > MAX_BRANCHES:
                                out, _ = self._over(out, False, where, MAX_BRANCHES * 3 // 4)
                            continue
                    try:
                        # each ¬A_j beside this branch (what the branch leaves of it); the
                        # alternatives they all share are factored out: ∧ (C ∨ R_j) = C ∨ ∧ R_j
                        factors = []
                        for j in sorted(js):
                            key = (j, ty)
                            if key not in negs:
                                negs[key] = self.negate(self.dnf_strict(exprs[j]), where, (ty,))
                            nj = self._beside(negs[key], context + a + (ty,))
                            if nj is None:
                                continue  # the branch implies ¬A_j: nothing to multiply
                            factors.append(nj)
                        common = set(factors[0]).intersection(*factors[1:]) if len(factors) > 1 else ()
                        for nj in factors:
                            cur = self.and2(cur, [x for x in nj if x not in common] if common else nj, where)
                            if not cur:
                                break
                        if common:
                            cur = self.and2([a + (ty,)], [x for x in factors[0] if x in common], where) + cur
                    except UnsupportedSchemaError as e:
                        if e.keyword != "allOf" or len(js) < 2:
                            raise
                        # ¬A1 ∧ ¬A2 … as one negation, ¬(A1 ∨ A2 …): a discriminator the
                        # sub-schemas share splits it (negate), where their product is too big
                        key = (frozenset(js), ty)
                        if key not in negs:
                            union = [br for j in sorted(js) for br in self.dnf_strict(exprs[j])]
                            negs[key] = self.negate(union, where, (ty,))
                        cur = self.and2([a + (ty,)], negs[key], where)
                    out.extend(cur)
                    if len(out) > MAX_BRANCHES:
                        # (a union grows by addition here: compacted each time it passes the limit)
                        out, _ = self._over(out, False, where, MAX_BRANCHES * 3 // 4)
            return out
        except UnsupportedSchemaError as e:
            if not witnesses and _too_many(e) and self.property_order == "any":
                retry = True
            else:
                raise UnsupportedSchemaError("oneOf branches that may overlap, and whose negation is not "
                                             f"expressible ({e})", pointer=where, keyword="oneOf") from None
        finally:
            self.strict -= 1
        if retry:
            return self.one_of(exprs, where, context, witnesses=True)

    def _beside(self, N, base):
        """The branches of union ``N`` that may hold beside the atoms ``base`` (the others are
        provably empty with it), or ``None`` when ``base`` implies one of them (then ``base ∧ N``
        is ``base``): a negation multiplied into a ``oneOf`` branch keeps only what that branch
        leaves it. Exact; bounded by the compaction budget like :meth:`compact`."""
        if any(x[0] == "ruleref" for x in base):
            # (a branch that is a $ref: its atoms, when it is one branch)
            try:
                exp = self.expand_refs(base, "")
            except UnsupportedSchemaError:
                exp = ()
            if len(exp) == 1:
                base = exp[0]
        N = self._witnesses_beside(N, base)
        if self.compact_budget <= 0:
            return N
        N = [y for y in (self._atoms_beside(x, base) for x in N) if y is not None]
        fact = (frozenset(base), _types_of(base), {x[1] for x in base if x[0] == "props" and x[2] == FALSE})
        if any(self._implies(fact, x, _same) for x in N):
            return None
        if len(N) < 2:
            return N
        return self._live(N, base)

    def _live(self, brs, base=(), keep_refs=False) -> list:
        """The branches of ``brs`` not provably empty beside the atoms ``base``
        (:meth:`live_types`), within the compaction fuel (a branch left untested is kept, and
        with ``keep_refs`` one holding a reference)."""
        keep = []
        outer = self.fuel is None
        if outer:
            self.fuel = min(_COMPACT_FUEL, self.compact_budget)
            start = self.fuel
        try:
            for br in brs:
                if self.fuel <= 0 or (keep_refs and any(a[0] == "ruleref" for a in br)):
                    keep.append(br)
                    continue
                try:
                    if self.live_types(base + br if base else br):
                        keep.append(br)
                except (UnsupportedSchemaError, _OutOfFuel):
                    keep.append(br)
        finally:
            if outer:
                self.compact_budget -= start - max(self.fuel, 0)
                self.fuel = None
        return keep

    def _atoms_beside(self, x, base):
        """Branch ``x`` without the atoms ``base`` implies, or ``None`` when one contradicts it
        (a property's value outside a schema that ``base`` gives it: the same schema, or one
        disjoint from it, as a ``oneOf``'s discriminator without ``required``)."""
        vals: dict = {}
        for a in base:
            if a[0] == "props":
                vals.setdefault(a[1], []).append(a[2])
        out = []
        for a in x:
            if a in base:
                continue
            if a[0] == "props" and a[1] in vals and a[2] not in (TRUE, FALSE):
                v = a[2]
                mine = vals[a[1]]
                if v[0] == "not" and any(self._same_schema(e, v[1]) for e in mine):
                    # its value would be outside the schema it must be in: the property absent
                    # (none of it where it is required)
                    if ("required", a[1]) in x or ("required", a[1]) in base:
                        return None
                    out.append(("props", a[1], FALSE))
                    continue
                neg = self.not_expr(v)
                try:
                    if any(self.expr_empty(self.and_expr([e, neg])) for e in mine):
                        continue  # every value base allows satisfies it
                except (UnsupportedSchemaError, _OutOfFuel):
                    pass
            out.append(a)
        return tuple(out)

    def _same_schema(self, e1, e2) -> bool:
        """Whether two expressions are the same schema: equal, or equal JSON in one document
        under the same base URI (its references then resolve alike)."""
        if e1 == e2:
            return True
        if e1[0] != "loc" or e2[0] != "loc" or e1[1] != e2[1]:
            return False
        s1, s2 = self.get(e1[1], e1[2]), self.get(e2[1], e2[2])
        return type(s1) is type(s2) and s1 == s2 and self.base_uri(e1[1], e1[2]) == self.base_uri(e2[1], e2[2])

    def _witnesses_beside(self, N, base, most=4):
        """``N`` with each witness of an extra member (``some`` of an ``additionalProperties``)
        beside a closed object (``base`` allows no key outside its names) written as the
        required members it can be: ``{"properties": {"a": …}, "additionalProperties": false}``
        beside ``¬{"properties": {"b": …}, "additionalProperties": false}`` needs a member
        outside ``b``, i.e. ``a`` (one object bit fewer for each of a ``oneOf``'s branches).
        Left as it is when it may be more than ``most`` names."""
        closed = [x for x in base if x[0] == "addl" and x[1] == FALSE and not x[3]]
        if not closed or not any(a[0] == "some" and a[1][0] == "a" for x in N for a in x):
            return N
        allowed = frozenset.intersection(*(frozenset(x[2]) for x in closed))
        out = []
        for x in N:
            alts = [()]
            for a in x:
                if a[0] == "some" and a[1][0] == "a":
                    names, pats = a[1][1], a[1][2]
                    ks = sorted(k for k in allowed if k not in names and not any(self.key_matches(k, q) for q in pats))
                    if len(ks) > most:
                        alts = [y + (a,) for y in alts]
                        continue
                    one = [(("required", k),) + ((("props", k, a[2]),) if a[2] != TRUE else ()) for k in ks]
                    alts = [y + z for y in alts for z in one]
                else:
                    alts = [y + (a,) for y in alts]
            out.extend(tuple(dict.fromkeys(y)) for y in alts)
        return out

    # ------------------------------------------------------------------ normal forms in context
    # A sub-schema's normal form does not know the schema around it, so a ``oneOf`` whose
    # branches are disjoint only beside its parent's atoms (``"required": ["type"]`` next to an
    # ``allOf`` holding ``oneOf`` branches that each give ``type`` one value, without requiring
    # it) needs every branch to negate every other: a product past MAX_BRANCHES, refused. Such a
    # part (an allOf entry or a dependency whose schema has a ``oneOf``, or one refused alone for
    # its size) is normalised *in context*: its normal form D only has to satisfy D ∧ C ≡ S ∧ C
    # for the atoms C its result is intersected with anyway (the schema's own, a dependency's key
    # present), which the ``oneOf`` it holds asks its overlaps beside. Other parts are untouched
    # (and their normal forms shared as before).

    def _part(self, e, where):
        """``dnf(e)``, or a part to normalise in context (:class:`_InContext`): a schema whose
        own ``oneOf`` asks its overlaps beside the atoms around it (its normal form is then
        never larger), or one refused alone for its size."""
        if e[0] == "loc":
            s = self.get(e[1], e[2])
            if isinstance(s, dict) and "oneOf" in s:
                return _InContext(e, where, None)
        try:
            return self.dnf(e)
        except UnsupportedSchemaError as err:
            if not _too_many(err):
                raise
            return _InContext(e, where, err)

    def _dependent(self, e, name, absent, where):
        """The part of a dependency on key ``name`` (its schema ``e``): the key absent, or
        present and ``e`` (in context when ``e`` alone is refused for its size)."""
        d = self._part(e, where)
        if type(d) is _InContext:
            d.key = name
            d.absent = absent
            return d
        return absent + self.and2([(("required", name),)], d, where)

    def _in_context(self, d, around):
        """The normal form of part ``d`` (:class:`_InContext`) beside atoms ``around``, or
        ``_DROPPED`` when a lenient translation ignores it."""
        ctx = tuple(around)
        if d.key is not None:
            ctx += (("types", frozenset({"object"})), ("required", d.key))
        try:
            D = self.dnf(d.expr, ctx)
        except UnsupportedSchemaError as err:
            if d.err is not None and _too_many(err):
                err = d.err  # (the error of the part alone: where the product first grew)
            if self.lenient and self.strict == 0:  # (as the keyword loop would have: the part ignored)
                warnings.warn(f"dotjson: ignoring {err.pointer or d.where or '/'} ({err}); the grammar "
                              "over-approximates", stacklevel=4)
                return _DROPPED
            if err.pointer is None:
                raise UnsupportedSchemaError(str(err), pointer=d.where, keyword=err.keyword) from None
            raise err from None
        if d.key is not None:
            return d.absent + self.and2([(("required", d.key),)], D, d.where)
        return D

    # ------------------------------------------------------------------ merging a branch
    def merge(self, br) -> Branch:
        """The typed node of normal-form branch ``br`` (:class:`~dotjson.jsonschema.nodes.Branch`:
        its atoms merged, one node per JSON type it constrains). Callers only read it."""
        # remembered by identity (branches live in dnf_cache; the memo keeps them alive): the
        # branch of a 10,000-property object is merged once, not once per question about it
        hit = self._merged.get(id(br))
        if hit is not None and hit[0] is br:
            return hit[1]
        m = self._merge(br)
        self._merged[id(br)] = (br, m)
        return m

    def _merge(self, br) -> Branch:
        b = Branch(_U)
        types = _U
        # A node is made when the branch first has an atom of its kind (most branches use two
        # or three kinds), and so is each container: merged branches stay in a memo for the
        # compiler's lifetime, and every container left empty would be one more object for the
        # collector to track.
        for a in br:
            k = a[0]
            if k == "types":
                types = types & a[1]
            elif k == "enum":
                # a dict, not a set: its values keep the schema's order, so whatever iterates
                # them (a propertyNames key language, an array's item values) renders the same
                # grammar in every process (a set of strings iterates in PYTHONHASHSEED's order)
                if b.enum is None:
                    b.enum = dict.fromkeys(a[1])
                else:
                    keep = set(a[1])
                    b.enum = {c: None for c in b.enum if c in keep}
            elif k == "notenum":
                if not b.not_enum:
                    b.not_enum = set()
                b.not_enum.update(a[1])
            elif k == "ruleref":
                b.refs = _push(b.refs, a[1])
            elif k in _OBJECT_ATOMS:
                o = b.object
                if o is NO_OBJECT:
                    o = b.object = ObjectNode()
                if k == "props":
                    o.properties = _put(o.properties, a[1], a[2])
                    if len(a) > 3:
                        if not o.declared:
                            o.declared = {}
                        o.declared[a[1]] = None
                elif k == "required":
                    if not o.required:
                        o.required = {}
                    o.required[a[1]] = None
                elif k == "addl":
                    o.additional = _push(o.additional, a[1:])
                elif k == "pattern":
                    o.patterns = _push(o.patterns, (a[1], a[2]))
                elif k == "pnames":
                    o.property_names = _push(o.property_names, a[1])
                elif k == "some":
                    o.some = _push(o.some, (a[1], a[2]))
                else:  # nprops
                    o.min_properties, o.max_properties = _narrowed(o.min_properties, o.max_properties, a)
            elif k in _NUMBER_ATOMS:
                n = b.number
                if n is NO_NUMBER:
                    n = b.number = NumberNode()
                if k == "num":
                    _, lo, lox, hi, hix = a
                    if lo is not None and (n.lo is None or lo > n.lo or (lo == n.lo and lox)):
                        n.lo, n.lo_excl = lo, lox
                    if hi is not None and (n.hi is None or hi < n.hi or (hi == n.hi and hix)):
                        n.hi, n.hi_excl = hi, hix
                elif k == "mult":
                    n.multiples = _push(n.multiples, a[1])
                else:  # notmult
                    n.not_multiples = _push(n.not_multiples, a[1])
            elif k == "str" or k == "len":
                t = b.string
                if t is NO_STRING:
                    t = b.string = StringNode()
                if k == "str":
                    if a[2]:
                        t.patterns = _push(t.patterns, a[1])
                    else:
                        t.not_patterns = _push(t.not_patterns, a[1])
                else:
                    t.min_length, t.max_length = _narrowed(t.min_length, t.max_length, a)
            elif k in _ARRAY_ATOMS:
                r = b.array
                if r is NO_ARRAY:
                    r = b.array = ArrayNode()
                if k == "pos":
                    r.prefix = _put(r.prefix, a[1], a[2])
                elif k == "items":
                    r.items = _push(r.items, (a[1], a[2]))
                elif k == "nitems":
                    r.min_items, r.max_items = _narrowed(r.min_items, r.max_items, a)
                elif k == "contains":
                    r.contains = _push(r.contains, a[1:])
                else:  # unique
                    r.unique = a[1]
        b.types = types
        return b

    def finite_branch(self, br):
        """The values of branch ``br`` (canonical) when it lists them (``enum``/``const``, also
        through its references), else ``None``."""
        try:
            brs = self.expand_refs(br, "") if any(a[0] == "ruleref" for a in br) else [br]
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
        ts = _types_of(br)
        if not ts:
            return ts
        if any(a[0] == "ruleref" for a in br):
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

    # ------------------------------------------------------------------ validating values (enum filters)
    def validate(self, v, e) -> bool:
        if e == TRUE:
            return True
        if e == FALSE:
            return False
        return any(self.satisfies(v, br) for br in self.dnf(e))

    def satisfies(self, v, br) -> bool:
        t = _type_of(v)
        for a in br:
            k = a[0]
            if k == "types":
                if t not in a[1]:
                    return False
                continue
            if k == "enum":
                if _canon(v) not in self.value_set(a[1]):
                    return False
                continue
            if k == "notenum":
                if _canon(v) in self.value_set(a[1]):
                    return False
                continue
            if k == "ruleref":
                if not self.validate(v, a[1]):
                    return False
                continue
            if t not in _ATOM_TYPES[k]:
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
        k = a[0]
        if k == "num":
            x = _dec(v)
            _, lo, lox, hi, hix = a
            if lo is not None and (x < lo or (lox and x == lo)):
                return False
            if hi is not None and (x > hi or (hix and x == hi)):
                return False
            return True
        if k == "mult":  # (Fractions: a Decimal remainder rounds, or fails past 28 digits)
            return Fraction(_dec(v)) % Fraction(a[1]) == 0
        if k == "notmult":
            return Fraction(_dec(v)) % Fraction(a[1]) != 0
        if k == "str":
            return _ir_match(self.str_node(a[1]), v) == a[2]
        if k == "len":
            return len(v) >= a[1] and (a[2] is None or len(v) <= a[2])
        if k == "props":
            return a[1] not in v or self.validate(v[a[1]], a[2])
        if k == "required":
            return a[1] in v
        if k == "addl":
            _, e, names, pats = a
            return all(self.validate(x, e) for key, x in v.items()
                       if key not in names and not any(self.key_matches(key, p) for p in pats))
        if k == "pattern":
            return all(self.validate(x, a[2]) for key, x in v.items() if self.key_matches(key, a[1]))
        if k == "pnames":
            return all(self.validate(key, a[1]) for key in v)
        if k == "some":
            if a[1][0] == "o":  # (a negated object branch: some atom of it fails)
                return not all(self.sat_atom(v, x) for x in a[1][1])
            return any(self.key_in(key, a[1]) and self.validate(x, a[2]) for key, x in v.items())
        if k == "nprops" or k == "nitems":
            return len(v) >= a[1] and (a[2] is None or len(v) <= a[2])
        if k == "pos":
            return len(v) <= a[1] or self.validate(v[a[1]], a[2])
        if k == "items":
            return all(self.validate(x, a[2]) for x in v[a[1]:])
        if k == "contains":
            n = sum(1 for x in v[a[4] if len(a) > 4 else 0:] if self.validate(x, a[1]))
            return n >= a[2] and (a[3] is None or n <= a[3])
        if k == "unique":
            cs = [_canon(x) for x in v]
            return len(set(cs)) == len(cs)
        return True  # pragma: no cover

    def key_matches(self, key, pattern) -> bool:
        return _ir_match(self.regex(pattern, "", "patternProperties"), key)

    def key_in(self, key, spec) -> bool:
        """Whether ``key`` is one of the keys the witness key spec of a ``some`` atom names:
        ``("p", pattern)`` (a key the pattern matches), ``("a", names, patterns)`` (a key
        neither named nor matched: an extra member of that ``additionalProperties``),
        ``("n", expr)`` (a key the string schema ``expr`` accepts)."""
        if spec[0] == "p":
            return self.key_matches(key, spec[1])
        if spec[0] == "a":
            return key not in spec[1] and not any(self.key_matches(key, q) for q in spec[2])
        return self.validate(key, spec[1])

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


# the atoms of each typed node (see _merge)
_OBJECT_TYPE = ("types", frozenset({"object"}))
_OBJECT_ATOMS = frozenset({"props", "required", "addl", "pattern", "pnames", "nprops", "some"})
_NUMBER_ATOMS = frozenset({"num", "mult", "notmult"})
_ARRAY_ATOMS = frozenset({"pos", "items", "nitems", "contains", "unique"})


def _same(x):
    return x


def _too_many(err) -> bool:
    """Whether an UnsupportedSchemaError is a refusal for the size of a normal form."""
    return err.keyword in ("allOf", "oneOf") and "too many alternatives" in str(err)


class _InContext:
    """A part of a schema refused alone for its size, to normalise beside the schema's own atoms
    once they are known (:meth:`Normalizer._in_context`); ``key``: a dependency's key."""

    __slots__ = ("expr", "where", "err", "key", "absent")

    def __init__(self, expr, where, err):
        self.expr, self.where, self.err = expr, where, err
        self.key = self.absent = None


_DROPPED = object()  # (a part a lenient translation ignores)


class _OneOf:
    """A ``oneOf`` met in a schema's keywords: made a normal form once the schema's own atoms
    are known (:meth:`Normalizer.one_of` asks its overlaps beside them)."""

    __slots__ = ("exprs", "where")

    def __init__(self, exprs, where):
        self.exprs, self.where = exprs, where


def _uncanon(c):
    """The Python value of canonical value ``c`` (:func:`~dotjson.jsonschema.values._canon`)."""
    k = c[0]
    if k == "n":
        return None
    if k == "b" or k == "x" or k == "s":
        return c[1]
    if k == "a":
        return [_uncanon(x) for x in c[1]]
    return {kk: _uncanon(x) for kk, x in c[1]}


def _narrowed(lo, hi, a) -> tuple:
    """Count bounds ``lo``, ``hi`` (``None``: unbounded) narrowed by a count atom ``(kind, lo, hi)``
    (``len``, ``nitems``, ``nprops``)."""
    return max(lo, a[1]), (hi if a[2] is None else a[2] if hi is None else min(hi, a[2]))


def _push(seq, x) -> list:
    """``seq`` with ``x`` appended: ``seq`` itself, or a new list in place of a shared empty one."""
    if seq:
        seq.append(x)
        return seq
    return [x]


def _put(mapping, key, x) -> dict:
    """``mapping`` with ``x`` appended to ``mapping[key]`` (a list): ``mapping`` itself, or a new
    dict in place of the shared empty one (:data:`~dotjson.jsonschema.nodes.NO_ENTRIES`)."""
    if not mapping:
        return {key: [x]}
    es = mapping.get(key)
    if es is None:
        mapping[key] = [x]
    else:
        es.append(x)
    return mapping
