"""Documents and references: the schema documents (the root and the ``resources`` a
reference reaches), their identifiers (``$id``, anchors), JSON pointers into them and the
resolution of ``$ref``/``$dynamicRef``/``$recursiveRef`` to expressions ``("loc", doc, pointer)``.
"""

from __future__ import annotations

from collections import defaultdict
from urllib.parse import unquote

from dotjson.errors import LimitExceededError, SchemaError
from dotjson.jsonschema.values import (
    _DEFAULT_BASE, MAX_DEPTH, _DIALECTS, _MISSING, _SUBSCHEMA_LISTS, _SUBSCHEMA_MAPS, _SUBSCHEMA_ONE, TRUE, _defrag,
    _esc, _join, _unesc,
)


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


class Documents:
    """The schema documents, their identifiers and the resolution of references: a part the
    :class:`~dotjson.jsonschema.normalize.Normalizer` holds (``nz.documents``), made with the
    root schema and the ``resources`` a reference may load. It asks the normaliser ``nz`` only
    to refuse a reference (``nz.unsupported``, lenient or not) and whether phase 1 may start over
    with dynamic scopes (``nz.restartable``)."""

    def __init__(self, nz, schema, resources):
        self.nz = nz
        self._ptr_cache = defaultdict(dict)  # document -> {JSON pointer -> the object or array there}
        self.docs: dict[str, _Doc] = {}
        self.resources: dict[str, tuple[str, str]] = {}   # uri -> (doc key, pointer)
        self.anchors: dict[tuple[str, str], tuple[str, str]] = {}
        self.dyn_anchor_count: dict[str, int] = {}
        self.recursive_anchor = False
        self.base_of: dict[tuple[str, str], str] = {}
        self.indexed: set = set()        # documents whose identifiers are all registered
        self.dyn_seen: set = set()
        self.pending_resources = dict(resources or {})
        #: the dynamic scopes (:mod:`..dynamic`), once :meth:`track_dynamic_scope` was called
        self.scopes = None
        self.root_draft = _draft_of(schema)
        self._add_doc("", schema, _DEFAULT_BASE, self.root_draft, label="")

    def where(self, doc, ptr) -> str:
        """The place ``(doc, ptr)`` as a message names it: the JSON pointer, after the
        document's label for a resource other than the root."""
        label = self.docs[doc].label
        return f"{label}#{ptr}" if label else ptr

    def known(self, doc, ptr, node) -> None:
        """Remember ``node`` (an object or array) as what :meth:`get` finds at ``ptr``."""
        self._ptr_cache[doc][ptr] = node

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
                return self.nz.unsupported(f"cannot resolve {kw} {ref!r} (no such resource; remote schemas are "
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
            if self.nz.restartable:
                from dotjson.jsonschema.dynamic import Restart

                raise Restart()  # (the dynamic scope matters: tracked from the root, see .dynamic)
            return self.nz.unsupported("$dynamicRef with several candidate $dynamicAnchors needs the dynamic "
                                       "scope tracked from the root (track_dynamic_scope)",
                                       f"{self.where(doc, ptr)}/{_esc(kw)}", kw)
        return target

    def track_dynamic_scope(self) -> None:
        """Follow every reference into a copy per dynamic scope (:mod:`.dynamic`): called before
        phase 1 where a ``$dynamicRef`` has several candidate ``$dynamicAnchor``s."""
        from dotjson.jsonschema.dynamic import Scopes

        self.scopes = Scopes(self)  # (over the documents)
