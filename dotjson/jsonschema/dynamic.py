"""``$dynamicRef`` / ``$dynamicAnchor`` (draft 2020-12): one copy of a sub-schema per dynamic scope.

A ``$dynamicRef`` whose lexical target carries the ``$dynamicAnchor`` it names resolves to the
*outermost* schema resource of the dynamic scope (the resources evaluation entered on its way:
the root, every ``$ref``/``$dynamicRef`` target's resource, every embedded ``$id`` crossed) that
has a ``$dynamicAnchor`` of that name. For a schema, the resources on a path are known
statically: the scope at a keyword is the *bindings* of the paths into it. Only the first
(outermost) binding of each anchor name matters, so a scope is a small set ``{name: anchor}``
plus the resource evaluation entered last (what is entered lexically below it is read from the
pointer). Every name counts, not only those with several anchors so far: a remote resource
loaded later may add a candidate.

A place is then a *scoped document*: ``(document, entry resource, bindings)``, spelled as a
document key of its own (:meth:`Scopes.key`) whose schema is the original document's. Every
reference is followed into the scoped document of its target, so a sub-schema reached with two
different bindings compiles twice, once per resolution of its ``$dynamicRef``s. The root and
targets entered with no binding keep the plain key (one copy, as without dynamic references).

Tracking starts only once a ``$dynamicRef`` with several candidates is met: the normalizer then
restarts (:class:`Restart`) with scopes on from the root (``dynamic_scope = True``).
"""

from __future__ import annotations

from dotjson.jsonschema.values import _defrag

#: separates the parts of a scoped document key (not in any URI or document label)
_SEP = "\x00"


class Restart(BaseException):
    """Raised out of the normalizer when a ``$dynamicRef`` needs scopes tracked from the root
    (caught by :func:`dotjson.jsonschema.schema_to_grammar`, which starts over with them; a
    ``BaseException`` so that no handler of schema errors takes it for one)."""


class Scopes:
    """The dynamic scopes of one normalizer's documents
    (:class:`~dotjson.jsonschema.normalize.documents.Documents`; built once every identifier is
    indexed)."""

    def __init__(self, documents):
        self.ds = documents
        self.parts: dict = {}  # scoped key -> (document, entry resource URI, bindings)
        self.by_resource: dict = {}  # resource URI -> {name: (doc, ptr)} of its dynamic anchors
        self._docs = -1

    def _refresh(self) -> None:
        """Index the documents loaded since (a remote resource is loaded when first referred to)."""
        ds = self.ds
        n = len(ds.docs) - len(self.parts)
        if n == self._docs:
            return
        ds.index_all()
        self._docs = len(ds.docs) - len(self.parts)
        self.by_resource = {}
        for (uri, name), (doc, ptr) in ds.anchors.items():
            s = ds.get(doc, ptr)
            if isinstance(s, dict) and s.get("$dynamicAnchor") == name:
                self.by_resource.setdefault(uri, {}).setdefault(name, (doc, ptr))

    def split(self, doc):
        """``(document, entry resource URI or None for its root, bindings)`` of a document key."""
        hit = self.parts.get(doc)
        return hit if hit is not None else (doc, None, ())

    def resource(self, doc, ptr) -> str:
        return _defrag(self.ds.base_uri(doc, ptr))[0]

    def bindings(self, doc, ptr) -> dict:
        """``{name: anchor}`` in force at ``(doc, ptr)``: the bindings the key carries, then those
        of the resources entered lexically from its entry resource down to ``ptr``."""
        self._refresh()
        orig, entry, B = self.split(doc)
        chain: list = []
        toks = ptr.split("/")[1:] if ptr else []
        for i in range(len(toks) + 1):
            u = self.resource(orig, "/" + "/".join(toks[:i]) if i else "")
            if not chain or chain[-1] != u:
                chain.append(u)
        if entry is not None and entry in chain:
            chain = chain[chain.index(entry):]
        out = dict(B)
        for u in chain:
            for name, tgt in self.by_resource.get(u, {}).items():
                out.setdefault(name, tgt)
        return out

    def key(self, target, bind) -> tuple:
        """The scoped place of ``target`` (an unscoped ``("loc", doc, ptr)``) entered with
        bindings ``bind``."""
        _, tdoc, tptr = target
        B = tuple(sorted(bind.items()))
        entry = self.resource(tdoc, tptr)
        if not B and entry == self.resource(tdoc, ""):
            return target  # (entered at its document's root resource with nothing bound: the plain copy)
        key = f"{tdoc}{_SEP}{entry}{_SEP}{B!r}"
        if key not in self.parts:
            ds = self.ds
            self.parts[key] = (tdoc, entry, B)
            ds.docs[key] = ds.docs[tdoc]
            ds.indexed.add(key)  # (its identifiers are the original's)
        return ("loc", key, tptr)

    def follow(self, doc, ptr, target):
        """``target`` of a ``$ref`` at ``(doc, ptr)``, in the scope it is entered with."""
        if target[0] != "loc":
            return target
        return self.key(target, self.bindings(doc, ptr))

    def dynamic(self, doc, ptr, ref, target):
        """The target of ``$dynamicRef: ref`` at ``(doc, ptr)``, whose lexical target is
        ``target``: the outermost binding of its anchor when ``target`` carries it."""
        bind = self.bindings(doc, ptr)
        frag = _defrag(ref)[1]
        s = self.ds.get(target[1], target[2])
        name = s.get("$dynamicAnchor") if isinstance(s, dict) else None
        if name == frag and name in bind:
            target = ("loc",) + bind[name]
        return self.key(target, bind)
