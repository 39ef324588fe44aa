"""JSON Schema → grammar IR (the package ``dotjson.jsonschema``): the first stage of the pipeline.

:func:`schema_to_grammar` translates a JSON Schema (drafts 4, 6, 7, 2019-09 and 2020-12; ``$schema``
picks the dialect, 2020-12 by default) into an :class:`~dotjson.ir.Grammar` whose language is the set
of JSON texts the schema accepts, under dotjson's formatting rules (bounded whitespace between
tokens, or none). A keyword that cannot be enforced exactly raises
:class:`~dotjson.errors.UnsupportedSchemaError`; a malformed schema raises
:class:`~dotjson.errors.SchemaError`. Both carry the JSON pointer of the sub-schema at fault.

How it works
------------
Every sub-schema is first normalised into *disjunctive normal form*: a list of branches, each a
conjunction of *atoms* (``type``, a numeric bound, a string language, one property, one required
name, ...). ``allOf`` is a product of branches, ``anyOf`` a union, ``oneOf`` a union of branches that
are proven pairwise disjoint (or rewritten as ``A ∧ ¬B ∨ B ∧ ¬A`` when the negations are
expressible), ``not`` negates atom by atom (De Morgan), ``if``/``then``/``else`` becomes
``(if ∧ then) ∨ (¬if ∧ else)``. A branch is then compiled per JSON type:

* numbers: a small DFA over the number's characters (digit-by-digit comparison with each bound,
  remainders for ``multipleOf``) converted to a regular IR node (or right-linear rules when the
  DFA has cycles, i.e. ``multipleOf``);
* strings: ``ir.And``/``ir.Diff`` of the encoded pattern, format, length and enum languages, placed
  directly between the quotes;
* arrays: nested optional prefix items, then a counted ``ir.Repeat`` (``minItems: 5000`` is one
  node), plus a counter automaton for ``contains``;
* objects: a right-linear automaton over the declared properties in schema order (see
  ``docs/keywords.md``), extra members allowed between them where the schema allows extras.

Each ``$ref`` target (and every other sub-schema) becomes one named rule, reused everywhere, so
recursive schemas work to any depth.
"""

from __future__ import annotations

import weakref

import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from dotjson import ir
from dotjson.errors import DotjsonError, DotjsonTypeError, LimitExceededError, SchemaError, UnsupportedSchemaError  # noqa: F401
from dotjson.ir import EMPTY, Ref, seq
from dotjson.ir.analysis import Analysis
from dotjson.jsonschema.compiler import Compiler
from dotjson.ir.families import rules_with_families
from dotjson.jsonschema.objects_any_order import PROPERTY_ORDERS
from dotjson.jsonschema.values import FALSE, IGNORED_KEYWORDS, MAX_NUMBER_DIGITS, TRUE, UNSUPPORTED_KEYWORDS
# the modules defining this layer's rule families (their builders import them on first use):
# imported with the layer so that their kinds are registered before an index holding them loads
from dotjson.jsonschema import numfamily as _numfamily, unique as _unique, unique_sets as _unique_sets  # noqa: F401, E402

__all__ = ["schema_to_grammar", "check_schema", "IGNORED_KEYWORDS", "UNSUPPORTED_KEYWORDS"]


def _decimal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:  # an exponent past what Decimal holds (1e999999999999)
        raise UnsupportedSchemaError(
            f"the number {text[:40]} is out of range: more than {MAX_NUMBER_DIGITS} digits written out "
            "(MAX_NUMBER_DIGITS)") from None


def _integer(text: str):
    # Python refuses to convert more than 4,300 digits to an int (ValueError); as a Decimal the
    # value stays exact, and _dec's limit on digits applies to it like to any number.
    return int(text) if len(text) < 4000 else _decimal(text)


def _load(schema):
    if isinstance(schema, (bytes, bytearray)):
        schema = schema.decode("utf-8")
    if isinstance(schema, str):
        try:
            # non-integers as Decimal: a bound written with more digits than a float holds
            # (``"maximum": 0.30000000000000000001``) keeps its exact value
            schema = json.loads(schema, parse_float=_decimal, parse_int=_integer)
        except json.JSONDecodeError as e:
            raise SchemaError(f"schema is not valid JSON: {e}", pointer="") from None
        except RecursionError:
            raise LimitExceededError("schema text nested too deeply for the JSON parser") from None
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a schema must be a JSON object or a boolean, got {type(schema).__name__}", pointer="")
    return schema


_SHARED_NODES: dict = {}


def shared_nodes(spellings: str = "any") -> tuple:
    """Nodes that most compiled schemas use besides the base rules: any string character, and
    the spellings of the printable ASCII characters that names and literals are made of (under
    the spelling policy ``spellings``; one tuple per policy and process)."""
    hit = _SHARED_NODES.get(spellings)
    if hit is None:
        from dotjson.jsonschema.jsonstr import spellings as _spellings

        sp = _spellings(spellings)
        ascii_ = [chr(c) for c in range(0x20, 0x7F)]
        nodes = [sp.JSON_STRING_CHAR] + [sp.enc_char(ch) for ch in ascii_]
        if sp.canonical:
            nodes += [sp.lit_char(ch) for ch in ascii_]
        hit = _SHARED_NODES[spellings] = tuple(dict.fromkeys(nodes))
    return hit


#: a schema naming more distinct formats than this compiles them in its own store
MAX_SHARED_FORMATS = 4


def _format_nodes(tr) -> tuple:
    """The encoded languages of the ``format``s phase 1 met (at most :data:`MAX_SHARED_FORMATS`),
    to be compiled into the process's store image with the base rules: a date-time string is
    ~2,400 terms, whose compilation (~6-15 ms in Python) every new schema naming the format
    paid in its first document; with them in the image (one per set of formats, built once per
    process) a new index starts with them compiled."""
    keys = sorted(k for k in tr.formats if k[0] == "format")
    if not keys or len(keys) > MAX_SHARED_FORMATS:
        return ()
    nodes = []
    for k in keys:
        try:
            node = tr.strings.enc_handle(k)
        except DotjsonError:
            return ()  # (refused later, where the format is compiled, with its pointer)
        if node is not None and node is not EMPTY:
            nodes.append(node)
    return tuple(nodes)


def _shared_nodes_for(spellings: str, formats: tuple, punct: tuple = ()) -> tuple:
    """:func:`shared_nodes` followed by ``punct`` (the separators and the quote of the
    grammar's whitespace setting: :func:`dotjson.jsonschema.jsonbase.punctuation`'s nodes) and
    ``formats``, one tuple per such set and process (so the store image is found by the tuple's
    identity, as for schemas without formats)."""
    base = shared_nodes(spellings)
    more = punct + formats
    if not more:
        return base
    key = (spellings, *map(id, more))
    hit = _SHARED_NODES.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[len(base):], more)):
        hit = _SHARED_NODES[key] = base + more
    return hit


def _punct_nodes(tr, disallow_whitespace: bool) -> tuple:
    """The compiler's separators and quote where they are the process's own nodes (the base
    image then holds their terms; a node made for one compiler would make an image of its
    own)."""
    from dotjson.jsonschema.jsonbase import QUOTE, punctuation

    _, sep, colon = punctuation(disallow_whitespace, tr.bp)
    if tr.sep is not sep or tr.colon is not colon or tr.quote is not QUOTE:
        return ()
    return QUOTE, sep, colon


def schema_to_grammar(schema, *, disallow_whitespace: bool = False, close_objects: bool = True,
                      lenient: bool = False, resources=None, property_order: str = "schema",
                      whitespace: str = "bounded", spellings: str | None = None,
                      check_language: bool = True, numbers: str | None = None,
                      bounds: str | None = None) -> ir.Grammar:
    """Translate a JSON Schema into a grammar whose language is exactly the documents it accepts.

    Parameters
    ----------
    schema : dict, bool or str
        The schema, as a Python object or JSON text. ``$schema`` selects the dialect (drafts 4, 6,
        7, 2019-09, 2020-12); without it, 2020-12.
    disallow_whitespace : bool, default False
        ``True``: compact JSON, no whitespace anywhere. ``False``: bounded whitespace (the ``ws`` rule
        of ``grammars/json.lark``) between syntax tokens and around the document.
    close_objects : bool, default True
        A generation policy. ``True``: objects that declare ``properties``/``patternProperties``
        but say nothing about ``additionalProperties`` are closed (no extra keys), as XGrammar and
        OpenAI's strict mode do. ``False`` follows the specification (extra keys allowed).
    lenient : bool, default False
        Downgrade :class:`UnsupportedSchemaError` to a warning for keywords whose neglect still
        yields valid JSON; the grammar then over-approximates the schema.
    resources : mapping of str to schema, optional
        Schemas for remote ``$ref`` URIs (nothing is fetched from the network).
    property_order : {"schema", "any"}, default "schema"
        ``"schema"``: declared properties in the schema's order. ``"any"``: in any order, each at
        most once, built lazily (:mod:`dotjson.jsonschema.objects_any_order`; the grammar then holds rule
        families, written out by :func:`dotjson.grammar.to_lark` for small objects only).
    whitespace : {"bounded", "json"}, default "bounded"
        Without ``disallow_whitespace``: ``"bounded"`` is the ``ws`` rule of ``grammars/json.lark``
        (one line break, 20 blanks); ``"json"`` is any whitespace JSON allows between tokens.
    spellings : {"canonical", "any"}, optional
        A generation policy for strings (:mod:`dotjson.jsonschema.jsonstr`). ``"canonical"``: declared keys,
        ``enum`` and ``const`` strings only as ``json.dumps(..., ensure_ascii=False)`` writes
        them, and string contents with no escape of a character JSON lets stand raw (``\\"``,
        ``\\\\``, control characters keep theirs). ``"any"``: every JSON spelling of every string
        (``\\u0061`` for ``a``, surrogate pairs, ``\\/``). Default: ``"any"`` in the "every valid
        document" configuration (``property_order="any"``, ``close_objects=False``,
        ``whitespace="json"``), ``"canonical"`` otherwise.
    numbers : {"plain", "any"}, optional
        A generation policy for numbers. ``"plain"``: under a bound, ``multipleOf``, an excluded
        or listed value or ``type: integer``, numbers in plain notation only (``1000``, not
        ``1e3``; ``type: number`` alone, and bounds of 0, keep every exponent). ``"any"``: every
        spelling of every number (``1e3`` is an integer, ``1.5E2`` is at least 100), exactly:
        the language is then not context-free, and :func:`dotjson.grammar.to_lark` refuses to
        write it out. Default: ``"any"`` in the "every valid document" configuration,
        ``"plain"`` otherwise.
    bounds : {"generation", "schema"}, optional
        A generation policy against loops (``docs/keywords.md``, "Generation policies").
        ``"generation"``: where the schema sets no bound of its own, arrays hold at most 16 items
        (8 where every item is an object or an array), strings without maxLength at most 128
        characters (one with a pattern or format too, when its shortest string plainly fits),
        undeclared keys at most 128 characters,
        an open object at most 16 undeclared members (8 where their values are all objects or
        arrays), integers and ``multipleOf`` numbers at most 20 integer digits, numbers the schema
        leaves free at most 20 integer and 20 fraction digits (3 exponent digits), and values the
        schema leaves free (``{}``, ``true``)
        nest arrays and objects at most 3 deep (:data:`~dotjson.jsonschema.values.GENERATION_BOUNDS`).
        ``"schema"``: only the schema's own bounds. Default: ``"generation"`` with
        ``close_objects=True``, ``"schema"`` with ``close_objects=False``.
    check_language : bool, default True
        Decide here that the language is not empty (:class:`SchemaError` otherwise).
        :class:`~dotjson.Index` passes ``False``: its automaton decides the same question
        exactly (``And``/``Diff`` included) when it builds the start state, and the analysis is
        then done once.

    Returns
    -------
    ir.Grammar
        Start rule ``"start"``: optional ``ws``, the value, optional ``ws``. Rule bodies share the
        base rules of :func:`dotjson.jsonschema.jsonbase.json_base`.

    Raises
    ------
    UnsupportedSchemaError
        A keyword (named, with the JSON pointer of its schema) that cannot be enforced exactly.
    SchemaError
        A malformed schema, or one that accepts no value at all.
    LimitExceededError
        Sub-schemas nested deeper than 1,000 levels, or applicators deeper than 100 (the JSON
        pointer is named).
    """
    spellings, numbers = _policies(disallow_whitespace, close_objects, property_order, whitespace, spellings,
                                   numbers)
    schema = _load(schema)
    resources = _load_resources(resources)
    tr, root = _compile_root(schema, resources, numbers, whitespace, disallow_whitespace=disallow_whitespace,
                             close_objects=close_objects, lenient=lenient, property_order=property_order,
                             spellings=spellings, bounds=bounds)
    grammar = _assemble(tr, root, disallow_whitespace, spellings)
    if check_language:
        _check_not_empty(grammar)
    return grammar


def _policies(disallow_whitespace, close_objects, property_order, whitespace, spellings, numbers) -> tuple:
    """``(spellings, numbers)``: the generation policies checked, their defaults settled (``"any"``
    in the every-valid configuration); :class:`SchemaError` naming the modes otherwise."""
    if property_order not in PROPERTY_ORDERS:
        raise SchemaError(f"property_order must be one of {PROPERTY_ORDERS}, got {property_order!r}")
    from dotjson.jsonschema.jsonbase import WHITESPACE_MODES

    if whitespace not in WHITESPACE_MODES:
        raise SchemaError(f"whitespace must be one of {WHITESPACE_MODES}, got {whitespace!r}")
    from dotjson.jsonschema.jsonstr import default_spellings
    from dotjson.jsonschema.jsonstr import spellings as _spellings

    spellings = default_spellings(spellings, disallow_whitespace=disallow_whitespace, close_objects=close_objects,
                                  property_order=property_order, whitespace=whitespace)
    _spellings(spellings)  # (a SchemaError naming the modes for anything else)
    every_valid = property_order == "any" and not close_objects and whitespace == "json" and not disallow_whitespace
    if numbers is None:
        numbers = "any" if every_valid else "plain"
    if numbers not in NUMBER_MODES:
        raise SchemaError(f"numbers must be one of {NUMBER_MODES}, got {numbers!r}")
    return spellings, numbers


def _load_resources(resources):
    """The remote schemas of ``resources`` (URI -> schema or JSON text) loaded, or ``None``."""
    if resources is None:
        return None
    if not isinstance(resources, Mapping):
        raise DotjsonTypeError(
            f"Invalid resources: expected a mapping of URI (str) to schema, got {type(resources).__name__}")
    for k in resources:
        if not isinstance(k, str):
            raise DotjsonTypeError(f"Invalid resources: expected URI keys (str), got the key {k!r}")
    loaded = {}
    for k, v in resources.items():
        try:
            loaded[k] = _load(v)
        except SchemaError as e:
            raise SchemaError(f"resource {k!r}: {e}") from None
    return loaded


def _compile_root(schema, resources, numbers: str, whitespace: str, **options) -> tuple:
    """``(compiler, root node)``: phase 1 over the whole reachable schema, then the root's node
    (phase 2 goes on on demand). ``options``: the :class:`Compiler`'s."""
    from dotjson.jsonschema.dynamic import Restart
    from dotjson.jsonschema.jsonbase import JSON_WS
    from dotjson.jsonschema.normalize.oneof import refused_for_size

    # (a $dynamicRef with several candidate anchors restarts phase 1 with dynamic scopes tracked
    # from the root: a copy of what it reaches per scope; other schemas run once, untracked. A
    # schema refused for a oneOf too large to negate exactly runs again, where the generation
    # policy closes objects, with that oneOf's object branches closed as the policy closes them:
    # OneOf.oneof_closing)
    dynamic = closing = False
    refusal = None  # (the exact pass's refusal: what a closed pass that fails too reports)
    while True:
        try:
            tr = Compiler(schema, resources=resources, **options)
            tr.oneof_closing = closing
            tr.exponents = numbers == "any"  # (read by the number builder, phase 1 included)
            if whitespace == "json" and not options["disallow_whitespace"]:
                tr.rules["ws"] = JSON_WS
            if dynamic:
                tr.track_dynamic_scope()
            tr.restartable = not dynamic
            root_expr = TRUE if schema is True else FALSE if schema is False else ("loc", "", "")
            tr.prepare(root_expr)                                  # phase 1: the whole reachable schema
            root = tr.node_of(root_expr)                           # phase 2 starts on demand
            tr.restartable = False
            break
        except Restart:
            if dynamic:  # pragma: no cover - a tracked phase 1 does not restart
                raise
            dynamic = True
            continue
        except DotjsonError as e:  # (a schema's errors, a limit; UnsupportedSchemaError among them)
            if closing:
                raise refusal from None
            if not (isinstance(e, UnsupportedSchemaError) and options.get("close_objects") and refused_for_size(e)):
                raise
            closing, refusal = True, e
            continue
        except RecursionError:
            if closing:
                raise refusal from None
            raise LimitExceededError("schema nesting too deep to normalise") from None
    if root == EMPTY:
        if refusal is not None:  # (empty once closed: the exact pass's refusal stands)
            raise refusal
        raise SchemaError("the schema accepts no JSON value (its language is empty)", pointer="")
    return tr, root


def _assemble(tr, root, disallow_whitespace: bool, spellings: str) -> ir.Grammar:
    """The grammar: ``start`` (whitespace, the root, whitespace) over the compiler's lazy rules,
    with its families and the base rules the automaton finds precompiled."""
    tr.rules["start"] = seq(tr.ws, root, tr.ws)

    def start_known():
        # never nullable (the root is a JSON value), productive when the root's rule is known to
        # be: an index's first rule id, without a solver search over the start's body on top of
        # the root's own answer (~20 us of a ~440 us Index())
        if type(root) is Ref and root.name in tr.pending:
            nul, prod = tr.known_language(root.name)
            if nul is False:
                return (False, prod)
        return (None, None)

    tr.state_hints["start"] = start_known
    rules = ir.LazyRules(tr)
    # the base rules the automaton finds precompiled: the process's own tuple of them (one
    # image lookup by identity) unless `whitespace="json"` replaced `ws`
    from dotjson.jsonschema.jsonbase import json_base_items, warm_items

    base = json_base_items(disallow_whitespace, spellings)
    if any(tr.rules[k] is not v for k, v in base):
        base = {k: tr.rules[k] for k in tr.base}
    # the families list is shared: property_order="any" objects add theirs as they are built
    nodes = _shared_nodes_for(spellings, _format_nodes(tr), _punct_nodes(tr, disallow_whitespace))
    grammar = ir.Grammar(rules, "start", families=tr.families, shared=(base, nodes, warm_items(spellings)))
    # (what families reading their items with an automaton of their own need: a weak reference,
    # the grammar owning the compiler through its rules, not the other way round)
    tr.grammar_ref = weakref.ref(grammar)
    # the compiler, its parts and the closures of the rules it has not built yet refer to one
    # another; once nothing can ask the rules for a body, it lets go of them all, so that an
    # index's compiler is freed by reference counting, not left to the cycle collector (~28,000
    # objects for 24 MaskBench documents, a collection of up to ~100 ms inside some mask)
    weakref.finalize(rules, tr.release)
    return grammar


def _check_not_empty(grammar: ir.Grammar) -> None:
    """:class:`SchemaError` when no document satisfies the schema. Decided lazily and exactly (up
    to And/Diff, which the automaton decides): a witness is found without compiling what it does
    not need."""
    try:
        productive = Analysis(rules_with_families(grammar)).productive("start")
    except RecursionError:
        raise LimitExceededError("schema nesting too deep to compile") from None
    if not productive:
        raise SchemaError(EMPTY_LANGUAGE, pointer="")


#: The number spelling policies of :func:`schema_to_grammar` (``numbers=``).
NUMBER_MODES = ("plain", "any")

#: What :func:`schema_to_grammar` and :class:`~dotjson.Index` say of a schema no document satisfies.
EMPTY_LANGUAGE = ("the schema accepts no JSON value (its language is empty: a required value is empty or "
                  "recurses forever, or constraints contradict each other)")


def check_schema(schema, *, disallow_whitespace: bool = False, close_objects: bool = True,
                 lenient: bool = False, resources=None, property_order: str = "schema",
                 whitespace: str = "bounded", spellings: str | None = None, numbers: str | None = None,
                 bounds: str | None = None) -> None:
    """Raise the error :func:`schema_to_grammar` would raise, and nothing otherwise.

    Translation is fast (milliseconds), so the check is the translation itself.

    Raises
    ------
    UnsupportedSchemaError, SchemaError
        As :func:`schema_to_grammar`.
    """
    schema_to_grammar(schema, disallow_whitespace=disallow_whitespace, close_objects=close_objects,
                      lenient=lenient, resources=resources, property_order=property_order,
                      whitespace=whitespace, spellings=spellings, numbers=numbers, bounds=bounds)
