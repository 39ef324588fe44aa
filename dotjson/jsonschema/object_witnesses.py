"""What an object's automaton tracks beside its members: the classes of undeclared keys, and
the negated object branches it must find a witness of (issue 32).

:func:`key_classes` partitions the undeclared keys by the patterns (and witness key languages)
one key may match all of; :class:`NegatedBranch` is an object branch under a negation as one
witness bit of the object automaton (:class:`dotjson.jsonschema.objects.ObjectRules`), and
:func:`subsets` the witness combinations a member may offer; :class:`ObjectWitnesses` is the
object automaton's part that decides which witnesses a member or an undeclared key may be, and
the value it must then have (a mixin of ``ObjectRules``).
"""

from __future__ import annotations

from dotjson.errors import UnsupportedSchemaError
from dotjson.jsonschema.atoms import Addl, ExtraKeys, Pattern, PatternKeys, Props, Required, ViolatedBranch
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


#: the values a member offers for the witnesses it may be (its plain value aside)
MAX_WITNESS_VARIANTS = 64


class ObjectWitnesses:
    """The witnesses part of :class:`dotjson.jsonschema.objects.ObjectRules` (a mixin): which
    members an object must hold against its negated object keywords (``some``), which of them a
    declared member or an extra key class may be, and the value it must have to be them. Reads
    the object's ``tr``, ``wit``, ``W``, ``negs``, ``univ``, ``live``, ``F`` and ``xvariants``."""

    def class_wit(self, T) -> int:
        """The witnesses an extra key of class ``T`` is (the entries of ``T``: the patterns and
        witness key languages it matches)."""
        Tset = set(T) | self.univ
        out = 0
        for a, (sp, _) in enumerate(self.wit):
            k = type(sp)
            if k is ViolatedBranch:
                ok = self.negs[a].on_class(Tset) != FALSE
            elif k is PatternKeys:
                ok = sp.pattern in Tset
            elif k is ExtraKeys:
                ok = not (set(sp.patterns) & Tset) and ("w", a) not in Tset
            else:  # SchemaKeys
                ok = ("w", a) in Tset
            if ok:
                out |= 1 << a
        return out

    def key_wit(self, a, name) -> bool:
        """Whether a member with declared name ``name`` may be witness ``a``."""
        spec = self.wit[a][0]
        if type(spec) is ViolatedBranch:
            return self.negs[a].on_key(name) != FALSE
        return self.tr.key_in(name, spec)

    def wit_value(self, ve, B, key):
        """The value of a member that is the witnesses ``B`` too: ``key`` is its declared name
        or its extra key class (a tuple of patterns; a negated branch asks its violation by the
        key); ``ve`` ``None``: what the witnesses alone ask."""
        es = [] if ve is None else [ve]
        for a in range(self.W):
            if B >> a & 1:
                neg = self.negs.get(a)
                if neg is None:
                    es.append(self.wit[a][1])
                elif isinstance(key, str):
                    es.append(neg.on_key(key))
                else:
                    es.append(neg.on_class(set(key) | self.univ))
        return self.tr.and_expr(es)

    def extra_variants(self) -> dict:
        """With negated branches among the witnesses: the witness sets an extra member may be,
        each with its classes and the value a member of the class must have to be them."""
        if self.xvariants is None:
            xv: dict = {}
            for T, ve in self.live:
                bits = self.class_wit(T)
                if bits:
                    for B, e in self.wit_variants(T, ve, bits):
                        xv.setdefault(B, []).append((T, e))
            self.xvariants = xv
        return self.xvariants

    def wit_variants(self, key, ve, bits) -> list:
        """``(B, value)``: the sets ``B`` of the witnesses ``bits`` a member with key ``key`` (a
        declared name or an extra key class) and value ``ve`` may be, each with the value it
        must have to be them.

        Every subset without negated branches among the witnesses. With them (any order),
        where being more witnesses is never worse (the object closes once it has each):
        witnesses asking the same value go together, and those asking a value outside a
        finite set (``not`` of an ``enum``/``const``: the discriminator of a ``oneOf``'s
        branches) are split by the value read (each value is the witnesses whose sets lack
        it), so a member offers the groups of values, not every subset of the witnesses.
        """
        if not self.negs:
            return [(B, self.wit_value(ve, B, key)) for B in subsets(bits)]
        tr = self.tr
        groups: dict = {}  # value expression -> the witnesses asking it
        own = ve[1] if ve[0] == "and" else (ve,)
        for a in range(self.W):
            if bits >> a & 1:
                e = self.wit_value(None, 1 << a, key)
                if e[0] == "not" and all(any(tr._same_schema(x, y) for y in own)
                                         for x in (e[1][1] if e[1][0] == "and" else (e[1],))):
                    continue  # the member's own schema holds what it would have to violate
                # (the same schema written in several places asks the same value)
                e = next((g for g in groups if g[0] == e[0] == "not" and tr._same_schema(g[1], e[1])), e)
                groups[e] = groups.get(e, 0) | 1 << a
        finite, general = [], []
        for e, b in groups.items():
            vals = tr._finite_prop((Props("", e[1]),), "") if e[0] == "not" else None
            if vals is not None:
                finite.append((b, vals))
            else:
                general.append((e, b))
        options = [(0, ())]
        if finite:
            sig: dict = {}
            for c in dict.fromkeys(c for _, vals in finite for c in vals):
                sig.setdefault(sum(b for b, vals in finite if c not in vals), []).append(c)
            every = tuple(c for cs in sig.values() for c in cs)
            options = [(b, (("enum", tuple(cs)),)) for b, cs in sig.items()]
            options.append((sum(b for b, _ in finite), (("not", ("enum", every)),)))
        if len(options) << len(general) > MAX_WITNESS_VARIANTS:
            raise UnsupportedSchemaError(f"more than {MAX_WITNESS_VARIANTS} ways for one member to be the "
                                         "witnesses of negated object branches (under not/oneOf/if)",
                                         pointer=self.where, keyword="not")
        out = []
        for fb, rs in options:
            for S in range(1 << len(general)):
                B = fb
                es = [ve, *rs]
                for i, (e, b) in enumerate(general):
                    if S >> i & 1:
                        B |= b
                        es.append(e)
                if B:
                    out.append((B, tr.and_expr(es)))
        return out

    def variants(self, name, ve, wj, mask):
        """``(value, mask after)`` of member ``name`` with value ``ve`` that may be the witnesses
        ``wj``: the plain value, and the value of each set of witnesses still missing it may be."""
        F = self.F
        miss = (wj << F) & ~mask
        out = [(ve, mask)]
        for B in subsets(miss >> F):
            out.append((self.wit_value(ve, B, name), mask | (B << F)))
        return out
