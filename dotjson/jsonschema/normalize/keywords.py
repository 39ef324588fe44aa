"""Keywords: a schema object's keywords read into atoms and parts (:meth:`Keywords._dnf_schema`),
its sub-schemas as expressions, and the checks of keyword values (counts that take an
automaton lane, patterns, formats, ``enum``/``const`` values).
"""

from __future__ import annotations

import warnings
from decimal import Decimal

from dotjson import ir
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError
from dotjson.formats import UNSUPPORTED_FORMATS as _UNSUPPORTED_FORMATS
from dotjson.jsonschema.atoms import (
    EVERY_TYPE, OBJECT, Addl, Contains, Enum, Items, Len, Mult, NItems, NProps, Num, Pattern, PNames, Pos, Props,
    Required, RuleRef, Str, Types, Unique, types_of,
)
from dotjson.jsonschema.normalize.forms import _DROPPED, _InContext, _too_many
from dotjson.jsonschema.normalize.oneof import _OneOf
from dotjson.jsonschema.normalize.product_split import split_product
from dotjson.jsonschema.values import (
    _APPLICATORS, _REGEX_CACHE, _TYPE_NAMES, FALSE, IGNORED_KEYWORDS, TRUE, _canon, _count, _esc,
    _format_node, _nonempty_list, _number,
)


# the atom of `type: <name>` (atoms are immutable: one per process)
_TYPE_ATOMS = {name: Types(ts) for name, ts in _TYPE_NAMES.items()}
# a dependency's key absent: not an object, or an object without the key
_OBJECT_TYPE = _TYPE_ATOMS["object"]
_NOT_OBJECT_TYPE = Types(EVERY_TYPE - OBJECT)

_SCALARS = (str, int, float, Decimal, bool, type(None))

#: Counts from here on are lane counts (dotjson.automaton.counters.BAND); a schema may hold this
#: many distinct ones (half the lanes: a repetition with two such bounds also takes their
#: difference), so that compiling its rules never runs out of lanes after Index(...).
_LANE_COUNT = 1 << 29

_MAX_LANE_COUNTS = 31

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


class Keywords:
    """A schema object's keywords as atoms and parts of its normal form. (A part of
    :class:`~dotjson.jsonschema.normalize.Normalizer`, whose constructor sets the state it reads.)"""

    def _dnf_schema(self, doc, ptr, ctx=()):
        # ctx: atoms the caller intersects the result with anyway (see dnf)
        ds = self.documents
        s = ds.get(doc, ptr)
        if s is True:
            return [()]
        if s is False:
            return []
        if not isinstance(s, dict):
            raise SchemaError(f"a schema must be an object or a boolean, got {type(s).__name__}",
                              ds.where(doc, ptr))
        draft = ds.docs[doc].draft
        atoms: list = []
        parts: list = []

        if "$ref" in s and draft <= 7:
            return [(RuleRef(ds.ref_target(doc, ptr, s["$ref"], "$ref")),)]

        for kw, val in s.items():
            # each keyword of the dialect read into atoms (conjuncts of the branch) and parts
            # (normal forms to multiply in, or to normalise beside the atoms) by its handler
            h = KEYWORDS.get(kw)
            if h is None or not h[1] <= draft <= h[2]:
                continue  # (an annotation, another dialect's keyword: no constraint)
            try:
                h[0](self, kw, val, s, doc, ptr, draft, atoms, parts)
            except UnsupportedSchemaError as e:
                if self.lenient and self.strict == 0:
                    warnings.warn(f"dotjson: ignoring {kw!r} at {ds.where(doc, ptr) or '/'} ({e}); the "
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
        if atoms and not types_of(out[0]):
            return []
        if parts:
            where = ds.where(doc, ptr)
            around = out[0] + tuple(ctx) if ctx else out[0]
            for k, d in enumerate(parts):
                if type(d) is _OneOf:  # its overlaps are asked beside this schema's own atoms
                    parts[k] = self.one_of(d.exprs, d.where, around)
                elif type(d) is _InContext:
                    parts[k] = self._in_context(d, around)
            parts = [d for d in parts if d is not _DROPPED]
            base = out
            try:
                for d in parts:
                    out = self.and2(out, d, where)
                    if not out:
                        break
            except UnsupportedSchemaError as e:
                # a product refused for its size: split on a discriminator the parts share
                if not _too_many(e):
                    raise
                out = split_product(self, base, parts, where)
                if out is None:
                    raise
        return out

    def _kw_where(self, doc, ptr, kw) -> str:
        """Where keyword ``kw`` of the schema at ``ptr`` sits, as a message gives it."""
        return f"{self.documents.where(doc, ptr)}/{_esc(kw)}"

    def _sub(self, s, doc, ptr, kw, *more):
        """The expression of the sub-schema ``s[kw][m]...`` of the schema ``s`` at ``ptr``.

        That is what ``documents.get`` would find at its pointer (every caller has checked the
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
            self.documents.known(doc, p, v)
            e = ("loc", doc, p)
            if key is not None:
                self._leaves[doc][key] = e
            return e
        if not isinstance(v, bool):
            raise SchemaError(f"{kw} must hold a schema (an object or a boolean)", self.documents.where(doc, p), kw)
        if v is True:
            return TRUE
        if v is False:
            return FALSE
        return ("loc", doc, p)

    # ------------------------------------------------------------------ one handler per keyword
    # Each takes (kw, val, s, doc, ptr, draft, atoms, parts): keyword kw: val of schema s at ptr
    # in document doc of dialect draft, read into atoms and parts (see _dnf_schema). The four most
    # frequent keywords (three in four of a typical schema's: type, min/maxLength, properties,
    # required) spell their pointer only for an error: spelling it for every keyword showed in
    # profiles.

    def _k_type(self, kw, val, s, doc, ptr, draft, atoms, parts):
        if isinstance(val, str) and val in _TYPE_ATOMS:
            atoms.append(_TYPE_ATOMS[val])  # shared, not a new atom per schema
            return
        names = val if isinstance(val, list) else [val]
        ts = frozenset()
        for t in names:
            if not isinstance(t, str) or t not in _TYPE_NAMES:
                raise SchemaError(f"unknown type {t!r}", self._kw_where(doc, ptr, kw), kw)
            ts |= _TYPE_NAMES[t]
        atoms.append(Types(ts))

    def _k_length(self, kw, val, s, doc, ptr, draft, atoms, parts):
        if isinstance(val, int) and not isinstance(val, bool) and val >= 0:
            n = int(val)
        else:
            n = _count(val, self._kw_where(doc, ptr, kw), kw)
        if n >= _LANE_COUNT:
            self.lane_count(n, self._kw_where(doc, ptr, kw), kw)
        atoms.append(Len(n, None) if kw == "minLength" else Len(0, n))

    def _k_properties(self, kw, val, s, doc, ptr, draft, atoms, parts):
        if not isinstance(val, dict):
            raise SchemaError("properties must be an object", self._kw_where(doc, ptr, kw), kw)
        if not "".join(val).isascii():  # ASCII holds no surrogate
            _scalar_text(list(val), self._kw_where(doc, ptr, kw), kw)
        # (marked declared: `not`, `dependentRequired` ... make props atoms that only
        # constrain a value, and close_objects closes only objects that declare names)
        sub = self._sub
        atoms += Props.declaring([(name, sub(s, doc, ptr, kw, name)) for name in val])

    def _k_required(self, kw, val, s, doc, ptr, draft, atoms, parts):
        try:  # (join raises on an item that is no string: one C pass, not a test per name)
            text = "".join(val) if isinstance(val, list) else None
        except TypeError:
            text = None
        if text is None:
            raise SchemaError("required must be an array of strings", self._kw_where(doc, ptr, kw), kw)
        if not text.isascii():
            _scalar_text(val, self._kw_where(doc, ptr, kw), kw)
        atoms += Required.each(val)

    def _k_ref(self, kw, val, s, doc, ptr, draft, atoms, parts):
        atoms.append(RuleRef(self.documents.ref_target(doc, ptr, val, kw)))

    def _k_dynamic_ref(self, kw, val, s, doc, ptr, draft, atoms, parts):
        target = self.documents.ref_target(doc, ptr, val, kw)
        if target is not None and target != TRUE:
            atoms.append(RuleRef(target))

    def _k_recursive_ref(self, kw, val, s, doc, ptr, draft, atoms, parts):
        self.documents.index_all()
        if self.documents.recursive_anchor:
            self.unsupported("$recursiveRef with nested $recursiveAnchor is not supported",
                             self._kw_where(doc, ptr, kw), kw)
            return
        atoms.append(RuleRef(self.documents.resolve(doc, ptr, val, kw)))

    def _k_enum(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        if not isinstance(val, list):
            raise SchemaError("enum must be an array", kwhere, kw)
        _scalar_text(val, kwhere, kw)
        atoms.append(Enum(self.values(val, kwhere, kw)))

    def _k_const(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        _scalar_text(val, kwhere, kw)
        atoms.append(Enum(self.values([val], kwhere, kw)))

    def _k_bound(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        if kw.startswith("exclusive") and draft == 4:
            if not isinstance(val, bool):
                raise SchemaError(f"{kw} must be a boolean in draft 4", kwhere, kw)
            return  # read together with minimum/maximum
        c = _number(val, kwhere, kw)
        if kw == "minimum":
            atoms.append(Num(c, draft == 4 and s.get("exclusiveMinimum") is True, None, False))
        elif kw == "maximum":
            atoms.append(Num(None, False, c, draft == 4 and s.get("exclusiveMaximum") is True))
        elif kw == "exclusiveMinimum":
            atoms.append(Num(c, True, None, False))
        else:
            atoms.append(Num(None, False, c, True))

    def _k_multiple_of(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        c = _number(val, kwhere, kw)
        if c <= 0:
            raise SchemaError("multipleOf must be greater than 0", kwhere, kw)
        atoms.append(Mult(c))

    def _k_pattern(self, kw, val, s, doc, ptr, draft, atoms, parts):
        self.regex(val, self._kw_where(doc, ptr, kw), kw)
        atoms.append(Str(("pattern", val), True))

    def _k_format(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        if not isinstance(val, str):
            raise SchemaError("format must be a string", kwhere, kw)
        if self.format_node(val) is not None:
            atoms.append(Str(("format", val), True))
        elif val in _UNSUPPORTED_FORMATS:
            self.unsupported(f"format {val!r} has no exact string language in dotjson.formats "
                             "(lenient=True ignores it)", kwhere, kw)

    def _k_additional_properties(self, kw, val, s, doc, ptr, draft, atoms, parts):
        atoms.append(self.addl_atom(s, self._sub(s, doc, ptr, kw), self._kw_where(doc, ptr, kw)))

    def _k_unevaluated_properties(self, kw, val, s, doc, ptr, draft, atoms, parts):
        e = self._sub(s, doc, ptr, kw)
        if e == TRUE or "additionalProperties" in s:
            return
        kwhere = self._kw_where(doc, ptr, kw)
        if any(k in s for k in _APPLICATORS):
            self.unevaluated(doc, ptr, "props", e, kwhere, kw, parts)
            return
        atoms.append(self.addl_atom(s, e, kwhere))

    def _k_pattern_properties(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        if not isinstance(val, dict):
            raise SchemaError("patternProperties must be an object", kwhere, kw)
        for p in val:
            self.regex(p, f"{kwhere}/{_esc(p)}", kw)
            atoms.append(Pattern(p, self._sub(s, doc, ptr, kw, p)))

    def _k_property_names(self, kw, val, s, doc, ptr, draft, atoms, parts):
        atoms.append(PNames(self._sub(s, doc, ptr, kw)))

    def _k_count(self, kw, val, s, doc, ptr, draft, atoms, parts):
        # minProperties, maxProperties, minItems, maxItems
        kwhere = self._kw_where(doc, ptr, kw)
        n = self.lane_count(_count(val, kwhere, kw), kwhere, kw)
        k = NProps if kw.endswith("Properties") else NItems
        atoms.append(k(n, None) if kw.startswith("min") else k(0, n))

    def _k_dependencies(self, kw, val, s, doc, ptr, draft, atoms, parts):
        # dependentRequired, and draft 4-7's dependencies (arrays of names or schemas)
        kwhere = self._kw_where(doc, ptr, kw)
        if not isinstance(val, dict):
            raise SchemaError(f"{kw} must be an object", kwhere, kw)
        for name, dep in val.items():
            absent = [(_OBJECT_TYPE, Props(name, FALSE)), (_NOT_OBJECT_TYPE,)]
            if isinstance(dep, list):
                if not all(isinstance(x, str) for x in dep):
                    raise SchemaError(f"{kw} entries must be arrays of strings", f"{kwhere}/{_esc(name)}", kw)
                present = [(Required(name),) + tuple(Required(d) for d in dep)]
                parts.append(absent + present)
            elif kw == "dependencies" and isinstance(dep, (dict, bool)):
                parts.append(self._dependent(self._sub(s, doc, ptr, kw, name), name, absent, kwhere))
            else:
                raise SchemaError(f"{kw} entries must be arrays of strings", f"{kwhere}/{_esc(name)}", kw)

    def _k_dependent_schemas(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        if not isinstance(val, dict):
            raise SchemaError(f"{kw} must be an object", kwhere, kw)
        for name in val:
            absent = [(_OBJECT_TYPE, Props(name, FALSE)), (_NOT_OBJECT_TYPE,)]
            parts.append(self._dependent(self._sub(s, doc, ptr, kw, name), name, absent, kwhere))

    def _k_prefix_items(self, kw, val, s, doc, ptr, draft, atoms, parts):
        if not isinstance(val, list):
            raise SchemaError("prefixItems must be an array", self._kw_where(doc, ptr, kw), kw)
        for i in range(len(val)):
            atoms.append(Pos(i, self._sub(s, doc, ptr, kw, i)))

    def _k_items(self, kw, val, s, doc, ptr, draft, atoms, parts):
        if isinstance(val, list) and draft <= 2019:
            for i in range(len(val)):
                atoms.append(Pos(i, self._sub(s, doc, ptr, kw, i)))
        elif isinstance(val, (dict, bool)):
            start = len(s.get("prefixItems", ())) if draft >= 2020 and isinstance(s.get("prefixItems"), list) else 0
            atoms.append(Items(start, self._sub(s, doc, ptr, kw)))
        else:
            raise SchemaError("items must be a schema" + (" or an array of schemas" if draft <= 2019 else ""),
                              self._kw_where(doc, ptr, kw), kw)

    def _k_additional_items(self, kw, val, s, doc, ptr, draft, atoms, parts):
        if isinstance(s.get("items"), list):
            atoms.append(Items(len(s["items"]), self._sub(s, doc, ptr, kw)))

    def _k_unevaluated_items(self, kw, val, s, doc, ptr, draft, atoms, parts):
        e = self._sub(s, doc, ptr, kw)
        if e == TRUE:
            return
        if any(k in s for k in _APPLICATORS) or "contains" in s:
            self.unevaluated(doc, ptr, "items", e, self._kw_where(doc, ptr, kw), kw, parts)
            return
        items = s.get("items")
        if draft >= 2020:
            if "items" in s:
                return
            pre = s.get("prefixItems")
            atoms.append(Items(len(pre) if isinstance(pre, list) else 0, e))
        elif isinstance(items, list):
            if "additionalItems" in s:
                return
            atoms.append(Items(len(items), e))
        elif items is None:
            atoms.append(Items(0, e))

    def _k_contains(self, kw, val, s, doc, ptr, draft, atoms, parts):
        lo, hi = 1, None
        if draft >= 2019:
            where = self.documents.where(doc, ptr)
            if "minContains" in s:
                lo = self.lane_count(_count(s["minContains"], f"{where}/minContains", "minContains"),
                                     f"{where}/minContains", "minContains")
            if "maxContains" in s:
                hi = self.lane_count(_count(s["maxContains"], f"{where}/maxContains", "maxContains"),
                                     f"{where}/maxContains", "maxContains")
        atoms.append(Contains(self._sub(s, doc, ptr, kw), lo, hi))

    def _k_unique_items(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        if not isinstance(val, bool):
            raise SchemaError("uniqueItems must be a boolean", kwhere, kw)
        if val:
            atoms.append(Unique(kwhere))

    def _k_all_of(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        for i in range(_nonempty_list(val, kwhere, kw)):
            parts.append(self._part(self._sub(s, doc, ptr, kw, i), kwhere))

    def _k_any_of(self, kw, val, s, doc, ptr, draft, atoms, parts):
        u = []
        for i in range(_nonempty_list(val, self._kw_where(doc, ptr, kw), kw)):
            u.extend(self.dnf(self._sub(s, doc, ptr, kw, i)))
        parts.append(u)

    def _k_one_of(self, kw, val, s, doc, ptr, draft, atoms, parts):
        kwhere = self._kw_where(doc, ptr, kw)
        n = _nonempty_list(val, kwhere, kw)
        parts.append(_OneOf([self._sub(s, doc, ptr, kw, i) for i in range(n)], kwhere))

    def _k_not(self, kw, val, s, doc, ptr, draft, atoms, parts):
        parts.append(self.negate(self.dnf_strict(self._sub(s, doc, ptr, kw)), self._kw_where(doc, ptr, kw)))

    def _k_if(self, kw, val, s, doc, ptr, draft, atoms, parts):
        then = self._sub(s, doc, ptr, "then") if "then" in s else None
        els = self._sub(s, doc, ptr, "else") if "else" in s else None
        if then is None and els is None:
            return
        I = self.dnf(self._sub(s, doc, ptr, kw)) if els is None or then is not None else None
        if then is None:
            # (if ∧ true) ∨ (¬if ∧ else)  ≡  if ∨ else
            parts.append(self.dnf(self._sub(s, doc, ptr, kw)) + self.dnf(els))
            return
        kwhere = self._kw_where(doc, ptr, kw)
        NI = self.negate(self.dnf_strict(self._sub(s, doc, ptr, kw)), kwhere)
        T = self.and2(I, self.dnf(then), kwhere)
        E = NI if els is None else self.and2(NI, self.dnf(els), kwhere)
        parts.append(T + E)

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

    def addl_atom(self, s, e, where):
        props = s.get("properties", {})
        pats = s.get("patternProperties", {})
        if not isinstance(props, dict) or not isinstance(pats, dict):
            raise SchemaError("properties/patternProperties must be objects", where)
        for p in pats:
            self.regex(p, where, "patternProperties")
        return Addl(e, frozenset(props), tuple(sorted(pats)))

    def str_node(self, key):
        """The decoded-string language of a string-language handle: ``("pattern", p)`` (read
        by :meth:`regex` before) or ``("format", name)`` (by :meth:`format_node`)."""
        if key[0] == "pattern":
            return self.regex_cache[key[1]]
        return self.formats[key]

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


_ALL = (0, 1 << 30)  # every dialect
#: keyword -> (its handler, the first and last dialect (draft) that reads it); a keyword of
#: another dialect, an annotation or an unknown keyword constrains nothing
KEYWORDS = {
    "type": (Keywords._k_type, *_ALL),
    "minLength": (Keywords._k_length, *_ALL),
    "maxLength": (Keywords._k_length, *_ALL),
    "properties": (Keywords._k_properties, *_ALL),
    "required": (Keywords._k_required, *_ALL),
    "$ref": (Keywords._k_ref, *_ALL),  # (up to draft 7 a $ref replaces its siblings: see _dnf_schema)
    "$dynamicRef": (Keywords._k_dynamic_ref, 2020, _ALL[1]),
    "$recursiveRef": (Keywords._k_recursive_ref, 2019, 2019),
    "enum": (Keywords._k_enum, *_ALL),
    "const": (Keywords._k_const, 6, _ALL[1]),
    "minimum": (Keywords._k_bound, *_ALL),
    "maximum": (Keywords._k_bound, *_ALL),
    "exclusiveMinimum": (Keywords._k_bound, *_ALL),
    "exclusiveMaximum": (Keywords._k_bound, *_ALL),
    "multipleOf": (Keywords._k_multiple_of, *_ALL),
    "pattern": (Keywords._k_pattern, *_ALL),
    "format": (Keywords._k_format, *_ALL),
    "additionalProperties": (Keywords._k_additional_properties, *_ALL),
    "unevaluatedProperties": (Keywords._k_unevaluated_properties, *_ALL),
    "patternProperties": (Keywords._k_pattern_properties, *_ALL),
    "propertyNames": (Keywords._k_property_names, 6, _ALL[1]),
    "minProperties": (Keywords._k_count, *_ALL),
    "maxProperties": (Keywords._k_count, *_ALL),
    "dependentRequired": (Keywords._k_dependencies, 2019, _ALL[1]),
    "dependencies": (Keywords._k_dependencies, *_ALL),
    "dependentSchemas": (Keywords._k_dependent_schemas, 2019, _ALL[1]),
    "prefixItems": (Keywords._k_prefix_items, 2020, _ALL[1]),
    "items": (Keywords._k_items, *_ALL),
    "additionalItems": (Keywords._k_additional_items, _ALL[0], 2019),
    "unevaluatedItems": (Keywords._k_unevaluated_items, *_ALL),
    "minItems": (Keywords._k_count, *_ALL),
    "maxItems": (Keywords._k_count, *_ALL),
    "contains": (Keywords._k_contains, 6, _ALL[1]),
    "uniqueItems": (Keywords._k_unique_items, *_ALL),
    "allOf": (Keywords._k_all_of, *_ALL),
    "anyOf": (Keywords._k_any_of, *_ALL),
    "oneOf": (Keywords._k_one_of, *_ALL),
    "not": (Keywords._k_not, *_ALL),
    "if": (Keywords._k_if, 7, _ALL[1]),
}
