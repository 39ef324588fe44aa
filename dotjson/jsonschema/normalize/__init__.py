"""Phase 1: documents, references and the normal form of every sub-schema.

A sub-schema is an *expression*: ``("loc", doc, pointer)`` (a place in a document), ``("and",
exprs)``, ``("not", expr)``, or ``TRUE``/``FALSE``. Its normal form (:meth:`Normalizer.dnf`) is a
list of branches, each a tuple of keyword atoms (:mod:`dotjson.jsonschema.atoms`: ``Types(set)``,
``Num(lo, lo_excl, hi, hi_excl)``, ``Props(name, expr)`` (``declared=True`` where a ``properties``
keyword declares the name), ``RuleRef(expr)`` ...), which ``Normalizer.merge`` (a
:class:`.merge.Merger`) turns into a typed node (:mod:`dotjson.jsonschema.nodes`: a ``Branch`` holding a number, string,
array and object node) for the compiler to read: ``allOf`` is a product of branches,
``anyOf`` a union, ``oneOf`` a union of branches proven pairwise disjoint (or ``A ∧ ¬B ∨ B ∧ ¬A``
when the negations are expressible), ``not`` negates atom by atom, ``if``/``then``/``else`` becomes
``(if ∧ then) ∨ (¬if ∧ else)``. A union past ``MAX_BRANCHES`` is compacted
(:meth:`Normalizer.compact`: empty branches and branches another holds dropped), and a negation
still past it is split on a discriminator (:meth:`Normalizer._negate_split`) or, on objects in
any order, made of one witness per negated branch (:mod:`.negated_branches`), before the schema
is refused. Sub-schemas below a keyword (a property's schema, ``items`` ...) stay unexpanded
expressions inside their atom: the normal form of one sub-schema costs the size of that
sub-schema, not of the schemas under it. Nothing here builds grammar.

One concept per module: the documents and the merging are parts :class:`Normalizer` holds
(``nz.documents``, ``nz.merge``), the others mixins of it:

* :mod:`.documents` — documents, identifiers, JSON pointers, references resolved;
* :mod:`.keywords` — a schema object's keywords read into atoms and parts;
* :mod:`.forms` — expressions, normal forms, products and their compaction, parts in context;
* :mod:`.negation` — ¬D atom by atom, by De Morgan's product or split on a discriminator;
* :mod:`.negated_branches` — ¬D over objects as one witness per negated branch, where the
  product is too big (``property_order="any"``);
* :mod:`.oneof` — ``oneOf`` as branches with the negations of the sub-schemas they overlap;
* :mod:`.merge` — a branch's atoms merged into a typed node;
* :mod:`.decide` — emptiness of branches and values checked against normal forms.
"""

from __future__ import annotations

import warnings
from collections import defaultdict

from dotjson import ir
from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.normalize.decide import Decisions
from dotjson.jsonschema.normalize.documents import Documents
from dotjson.jsonschema.normalize.forms import _COMPACT_BUDGET, NormalForms
from dotjson.jsonschema.normalize.keywords import Keywords
from dotjson.jsonschema.normalize.merge import Merger
from dotjson.jsonschema.normalize.negation import Negation
from dotjson.jsonschema.normalize.oneof import OneOf

__all__ = ["Normalizer"]


class Normalizer(Keywords, NormalForms, Negation, OneOf, Decisions):
    """Normal forms (phase 1); the compiler derives from it. Two parts it holds: the schema's
    documents and the resolution of references, :attr:`documents`
    (:class:`~dotjson.jsonschema.normalize.documents.Documents`), and the merging of a branch
    into a typed node, :attr:`merge` (:meth:`.merge.Merger.merge`)."""

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
        # alternations of texts' spellings the automaton builds from their characters at once:
        # id(node) -> (node, texts, spelling policy) (see dotjson.ir.LazyRules.texts_of)
        self.text_alts: dict = {}
        self.lenient = lenient
        self.strict = 0
        # Several schemas may share one grammar (``%json`` rules in a Lark grammar, tool calls):
        # each names its rules with its own ``namespace`` prefix, and refers to the JSON base
        # rules of its whitespace setting by ``base_prefix`` + their names.
        self.ns = namespace
        self.bp = base_prefix
        self.base = _grammar.json_base(disallow_whitespace, prefix=base_prefix, spellings=spellings)
        # (the process's nodes of them: the base image holds their terms)
        self.ws, self.sep, self.colon = _grammar.punctuation(disallow_whitespace, base_prefix)
        self.quote = _grammar.QUOTE
        self.rules: dict[str, ir.Node] = {}
        self.rule_of: dict = {}          # expr -> rule name (or node, for inlined ones)
        self.names_used: set[str] = set(self.base) | {"start"}
        self.dnf_cache: dict = {}
        self._structured: dict = {}  # expression -> every value an object or array
        self.dnf_ctx_cache: dict = {}    # (expr, context atoms) -> normal form (dnf in context)
        self._leaves = defaultdict(dict)  # document -> {a leaf schema's content -> its expression}
        # a branch -> its typed node, remembered (the part's bound method: a call of an object
        # with __call__ costs more, and phase 1 merges ~100 branches a schema)
        self.merge = Merger().merge
        self.inlining: set = set()
        self.regex_cache: dict[str, ir.Node] = {}
        self.enc_cache: dict = {}
        self.literal_cache: dict = {}
        self.formats: dict = {}
        self.empty_cache: dict = {}
        self.keep: list = []
        self.counter = 0
        self.value_sets: dict = {}
        self.depth = 0                   # applicator nesting of the normal form being computed
        self.empty_depth = 0             # nesting of the eager emptiness check
        self.fuel = None                 # products left to the emptiness tests of a compact()
        self.compact_budget = _COMPACT_BUDGET  # work left to all compactions (see compact)
        self.documents = Documents(self, schema, resources)
        # draft 4: `integer` is a number written without fraction or exponent (1.0 is not one)
        self.syntactic_int = self.documents.root_draft == 4

    # ------------------------------------------------------------------ errors
    def unsupported(self, msg, ptr, kw):
        err = UnsupportedSchemaError(msg, pointer=ptr, keyword=kw)
        if self.lenient and self.strict == 0:
            warnings.warn(f"dotjson: ignoring {kw!r} ({err}); the grammar over-approximates", stacklevel=4)
            return None
        raise err

    def track_dynamic_scope(self) -> None:
        """Follow every reference into a copy per dynamic scope (:mod:`..dynamic`): called before
        phase 1 where a ``$dynamicRef`` has several candidate ``$dynamicAnchor``s."""
        self.documents.track_dynamic_scope()
