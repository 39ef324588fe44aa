"""What an object's automaton tracks beside its members: the classes of undeclared keys, and
the negated object branches it must find a witness of (issue 32).

:func:`key_classes` partitions the undeclared keys by the patterns (and witness key languages)
one key may match all of; :class:`NegatedBranch` is an object branch under a negation as one
witness bit of the object automaton (:class:`dotjson.jsonschema.objects.ObjectRules`), and
:func:`subsets` the witness combinations a member may offer.
"""

from __future__ import annotations

from dotjson.jsonschema.atoms import Addl, Pattern, Props, Required
from dotjson.jsonschema.nodes import ObjectNode
from dotjson.jsonschema.values import FALSE, TRUE


def subsets(bits: int):
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


class NegatedBranch:
    """An object branch negated (the object keywords of its atoms: ``props``, ``required``,
    ``pattern``, ``addl``), as one witness of the object automaton: a member violates it when
    its value fails what the branch asks of its key (:meth:`on_key`, :meth:`on_class`), and a
    required name of the branch left out violates it too (:attr:`required`)."""

    def __init__(self, tr, atoms):
        self.tr = tr
        props: dict = {}
        req, pats, addl = [], [], []
        for a in atoms:
            k = type(a)
            if k is Props:
                props.setdefault(a.name, []).append(a.schema)
            elif k is Required:
                req.append(a.name)
            elif k is Pattern:
                pats.append(a.fields())
            elif k is Addl:
                addl.append(a.fields())
            else:  # pragma: no cover - the normaliser makes such witnesses of these atoms only
                raise AssertionError(a)
        self.node = ObjectNode(properties=props, required=dict.fromkeys(req), patterns=pats, additional=addl)
        self.required = list(dict.fromkeys(req))
        # the names to declare: those it gives a schema or requires, and the names its
        # additionalProperties leaves out (so that an extra key is outside every one of them)
        self.names = list(dict.fromkeys([*props, *req, *(n for _, ns, _ in addl for n in ns)]))
        self._keys: dict = {}

    def patterns(self) -> list:
        """The key patterns it speaks of (extra keys are split by them)."""
        return [p for p, _ in self.node.patterns] + [q for _, _, qs in self.node.additional for q in qs]

    def _violation(self, es):
        es = [e for e in es if e != TRUE]
        if not es:
            return FALSE
        return self.tr.not_expr(self.tr.and_expr(es))

    def on_key(self, name):
        """The values with which member ``name`` (a declared name) violates the branch (an
        expression; ``FALSE``: none does)."""
        hit = self._keys.get(name)
        if hit is None:
            o = self.node
            hit = self._keys[name] = self._violation(self.tr.member_schemas(o, name, o.properties.get(name, ())))
        return hit

    def on_class(self, Tset):
        """The values with which an extra member whose key matches exactly the patterns
        ``Tset`` (and no name the branch speaks of) violates it."""
        o = self.node
        return self._violation([e for p, e in o.patterns if p in Tset]
                               + [e for e, _, qs in o.additional if not set(qs) & Tset])
