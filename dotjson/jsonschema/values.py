"""JSON values, pointers and keyword vocabulary shared by both phases of the schema compiler.

Canonical keys with JSON Schema equality (:func:`_canon`), the JSON type of a value, membership of
a short string in a regular IR language (:func:`_ir_match`, used to filter ``enum`` values and to
match declared names against ``patternProperties``), and the argument checks of keywords.
"""

from __future__ import annotations

import functools
import re
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal, InvalidOperation
from urllib.parse import urldefrag, urljoin

from dotjson import ir
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError
from dotjson.jsonschema.atoms import EVERY_TYPE, NUMBER

# ----------------------------------------------------------------------------- vocabulary

_DIALECTS = {
    "json-schema.org/draft-04/schema": 4,
    "json-schema.org/draft-06/schema": 6,
    "json-schema.org/draft-07/schema": 7,
    "json-schema.org/draft/2019-09/schema": 2019,
    "json-schema.org/draft/2020-12/schema": 2020,
}

#: Keywords that never constrain an instance (annotations, metadata, identifiers); ignored.
IGNORED_KEYWORDS = frozenset({
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$comment",
    "$defs", "definitions", "title", "description", "default", "examples", "readOnly", "writeOnly",
    "deprecated", "contentMediaType", "contentEncoding", "contentSchema", "discriminator", "nullable",
})

#: Keywords dotjson recognises but compiles only in restricted forms (otherwise UnsupportedSchemaError).
UNSUPPORTED_KEYWORDS = frozenset({
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", "uniqueItems",
})

_U = EVERY_TYPE
_NUM = NUMBER
_TYPE_NAMES = {
    "null": frozenset({"null"}), "boolean": frozenset({"boolean"}), "integer": frozenset({"integer"}),
    "number": _NUM, "string": frozenset({"string"}), "array": frozenset({"array"}),
    "object": frozenset({"object"}),
}

TRUE = ("true",)
FALSE = ("false",)

MAX_BRANCHES = 256          # DNF branches of one sub-schema
MAX_DFA_STATES = 4000       # number automaton
MAX_OBJECT_STATES = 50000   # object automaton states (properties × counter)
MAX_PATTERN_CLASSES = 16    # key classes from patternProperties (2 ** patterns) before finite patterns are listed keys
MAX_KEY_CLASSES = 64        # key classes at most (patterns left after listing, witnesses' key languages)
MAX_DEPTH = 1000           # sub-schemas nested in one another (phase 1 walks them iteratively)
MAX_APPLICATOR_DEPTH = 100 # allOf/anyOf/oneOf/not/if nested in one another (normalised recursively)
MAX_EMPTINESS_DEPTH = 40   # required properties followed by the eager emptiness check
MAX_FLOATING = 4           # required names outside `properties`, placed in any order
MAX_UNIQUE_VALUES = 256     # uniqueItems over a finite item domain (a rule family: unique_sets.py)
MAX_NUMBER_DIGITS = 10000  # a schema number's digits written out in full (the DFA fits far fewer)

#: The generation bounds (``bounds="generation"``: see ``docs/keywords.md``, "Generation
#: policies"), each applied only where the schema sets no bound of its own. Small models loop on
#: repetition (one array item again and again, a string repeating a fragment, an invented key
#: over and over, free values nested in free values) until the token budget ends; a bound turns
#: the loop into a closed string, array or object, and the document finishes.
GENERATION_BOUNDS = {
    "items": 16,            # items of an array without maxItems
    "structured_items": 8,  # ... whose items are all objects or arrays (20-40 tokens each)
    "string_length": 128,   # characters of a string without maxLength, or of an undeclared key (StringBuilder.bound_fits)
    "extra_members": 16,    # undeclared members of an open object, whichever declared ones it holds
    "structured_members": 8,  # ... whose values are all objects or arrays
    "free_depth": 3,        # arrays/objects nested in a value the schema leaves free ({} / true)
    "number_digits": 20,    # integer digits of an integer or multipleOf number without a bound,
                            # integer and fraction digits of a number the schema leaves free
    "exponent_digits": 3,   # exponent digits of a number the schema leaves free
}
#: The modes of the ``bounds`` option.
BOUNDS_MODES = ("generation", "schema")


def default_bounds(bounds, *, close_objects=True) -> str:
    """The mode ``bounds=None`` means: ``"generation"`` with the generation defaults
    (``close_objects=True``), ``"schema"`` (the schema's own bounds only) under the
    specification's rule for extra members; an explicit mode is checked and returned."""
    if bounds is None:
        return "generation" if close_objects else "schema"
    if bounds not in BOUNDS_MODES:
        from dotjson.errors import SchemaError

        raise SchemaError(f"bounds must be one of {BOUNDS_MODES}, got {bounds!r}")
    return bounds


_DEFAULT_BASE = "https://dotjson.invalid/schema.json"

#: Arithmetic on schema numbers (bounds, multipleOf, enum values): exact at any precision. The
#: default context rounds to 28 digits (``abs``, ``-``, ``+``, ``normalize`` all round), which made
#: ``minimum: 1000000000000000000000000000005`` admit ``1000000000000000000000000000001``.
#: Comparisons of Decimals are exact in any context; every other operation goes through this one
#: (or ``copy_abs``/``copy_negate``, or :class:`fractions.Fraction`). Numbers are at most
#: ``MAX_NUMBER_DIGITS`` digits written out, so exact results stay small.
EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)

_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SUBSCHEMA_ONE = ("additionalProperties", "additionalItems", "items", "contains", "not", "if", "then", "else",
                  "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentSchema")


def _esc(token) -> str:
    token = str(token)
    if "~" not in token and "/" not in token:
        return token
    return token.replace("~", "~0").replace("/", "~1")


def _unesc(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


# ----------------------------------------------------------------------------- JSON values


def _dec(v) -> Decimal:
    """The exact value of JSON number ``v`` (an ``int``, a ``float`` as its shortest repr, or a
    ``Decimal``, as :func:`json.loads` of schema text gives non-integers).

    Raises
    ------
    UnsupportedSchemaError
        More than ``MAX_NUMBER_DIGITS`` digits written out in full (``1e999999999`` is a short
        text but a billion digits: no number automaton holds it).
    """
    if isinstance(v, Decimal):
        d = v
    elif isinstance(v, int):
        if v.bit_length() > 3.33 * MAX_NUMBER_DIGITS:  # before any conversion of a huge int
            raise UnsupportedSchemaError(
                f"a number of {v.bit_length()} bits: more than {MAX_NUMBER_DIGITS} digits (MAX_NUMBER_DIGITS)")
        d = Decimal(v)
    else:
        d = Decimal(repr(v))
    if d.is_finite():
        _, digits, exp = d.as_tuple()
        n = max(len(digits), -exp) + max(exp, 0)
        if n > MAX_NUMBER_DIGITS:
            shown = str(d)
            if len(shown) > 40:
                shown = f"{shown[:20]}…{shown[-10:]}"
            raise UnsupportedSchemaError(
                f"the number {shown} has {n} digits written out: more than {MAX_NUMBER_DIGITS} (MAX_NUMBER_DIGITS)")
    return d


def _canon(v):
    """A hashable key with JSON Schema equality (1 == 1.0, true != 1, key order irrelevant)."""
    if v is None:
        return ("n",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float, Decimal)):
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise SchemaError(f"non-finite number {v!r} in a schema")
        return ("x", _dec(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("a", tuple(_canon(x) for x in v))
    if isinstance(v, dict):
        return ("o", tuple(sorted((k, _canon(x)) for k, x in v.items())))
    raise SchemaError(f"not a JSON value: {type(v).__name__}")


def _type_of(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "nonint"
    if isinstance(v, Decimal):
        return "integer" if v == v.to_integral_value() else "nonint"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


# ----------------------------------------------------------------------------- IR matcher
# Membership of a (short) decoded string in a ref-free IR language: used to filter enum values
# against patterns/formats and to decide which patternProperties a declared name matches.


def _ir_match(node: ir.Node, s: str) -> bool:
    memo: dict = {}

    def ends(n, i):
        key = (id(n), i)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if isinstance(n, ir.Lit):
            out = frozenset({i + len(n.text)}) if s.startswith(n.text, i) else frozenset()
        elif isinstance(n, ir.Chars):
            out = frozenset()
            if i < len(s):
                cp = ord(s[i])
                if any(lo <= cp <= hi for lo, hi in n.ranges):
                    out = frozenset({i + 1})
        elif isinstance(n, ir.Seq):
            cur = {i}
            for it in n.items:
                nxt = set()
                for p in cur:
                    nxt |= ends(it, p)
                cur = nxt
                if not cur:
                    break
            out = frozenset(cur)
        elif isinstance(n, ir.Alt):
            acc = set()
            for it in n.items:
                acc |= ends(it, i)
            out = frozenset(acc)
        elif isinstance(n, ir.Repeat):
            cur = frozenset({i})
            res = set()
            k = 0
            while True:
                if k >= n.min:
                    before = len(res)
                    res |= cur
                    if k > n.min and len(res) == before:
                        break
                if n.max is not None and k >= n.max:
                    break
                nxt = set()
                for p in cur:
                    nxt |= ends(n.item, p)
                nxt = frozenset(nxt)
                if not nxt:
                    break
                if k < n.min and nxt == cur:
                    k = n.min  # a fixed point: further repetitions change nothing
                    continue
                cur = nxt
                k += 1
            out = frozenset(res)
        elif isinstance(n, ir.And):
            acc = None
            for it in n.items:
                e = ends(it, i)
                acc = set(e) if acc is None else acc & e
            out = frozenset(acc or ())
        elif isinstance(n, ir.Diff):
            out = ends(n.left, i) - ends(n.right, i)
        else:
            raise GrammarError("cannot match a rule reference")
        memo[key] = out
        return out

    try:
        return len(s) in ends(node, 0)
    finally:
        ends = None  # (it refers to itself through its closure: a cycle for the collector)


_MISSING = object()
_NAME_JUNK = re.compile(r"[^a-z0-9_]+")
# per-process caches of immutable languages (patterns and formats recur across schemas)
_REGEX_CACHE: dict = {}
_ENC_CACHE: dict = {}
_APPLICATORS = ("allOf", "anyOf", "oneOf", "not", "if", "$ref", "$dynamicRef", "$recursiveRef",
                "dependentSchemas", "dependencies")


@functools.lru_cache(maxsize=4096)
def _defrag(url: str) -> tuple[str, str]:
    """``urllib.parse.urldefrag(url)`` as a ``(url, fragment)`` pair, remembered: a pure
    function of the text (~2.5 µs a call), asked of the same few base URIs for every
    reference of every schema."""
    u, f = urldefrag(url)
    return u, f


def _join(base: str, ref: str) -> str:
    if ref.startswith("#"):
        return _defrag(base)[0] + ref
    try:
        return urljoin(base, ref)
    except ValueError:
        return ref


def _number(val, where, kw) -> Decimal:
    if isinstance(val, bool) or not isinstance(val, (int, float, Decimal)):
        raise SchemaError(f"{kw} must be a number", where, kw)
    try:
        d = _dec(val)
    except UnsupportedSchemaError as e:
        raise UnsupportedSchemaError(f"{kw}: {e}", where, kw) from None
    except (InvalidOperation, ValueError):
        raise SchemaError(f"{kw} must be a finite number", where, kw) from None
    if not d.is_finite():
        raise SchemaError(f"{kw} must be a finite number", where, kw)
    return d


def _count(val, where, kw) -> int:
    if isinstance(val, bool) or not isinstance(val, (int, float, Decimal)):
        ok = False
    elif isinstance(val, int):
        ok = val >= 0
    elif isinstance(val, float):
        ok = val.is_integer() and val >= 0
    else:
        ok = val.is_finite() and val == val.to_integral_value() and val >= 0
    if not ok:
        raise SchemaError(f"{kw} must be a non-negative integer", where, kw)
    return int(val)


def _nonempty_list(val, where, kw) -> int:
    if not isinstance(val, list) or not val:
        raise SchemaError(f"{kw} must be a non-empty array of schemas", where, kw)
    return len(val)


def _format_node(name: str):
    try:
        from dotjson.formats import format_to_ir
    except ImportError:  # pragma: no cover - formats module not available
        return None
    return format_to_ir(name)
