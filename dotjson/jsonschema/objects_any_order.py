"""Objects whose properties may come in any order (``property_order="any"``), built lazily.

With ``property_order="any"`` an object's declared properties may appear in any order, each at
most once, with extra members (where the schema allows them) anywhere. The grammar state must
remember which declared properties were seen: ``2**n`` sets for ``n`` properties, far too many to
write down. So the object is not a set of rules but a *rule family*, :class:`AnyOrderObject`:
its rules are named ``<prefix>__seen_<count>_<j>_<j>...`` (the member count, capped, for
``minProperties``/``maxProperties``, and the indices of the declared properties seen so far)
and their bodies are produced on demand, when the automaton first expands the name. Only the
sets a document actually visits are ever built. The key of the next member is a trie of the
names not seen yet (``__key_`` rules, :mod:`dotjson.jsonschema.key_trie`) and what follows a completed name
a ``__tail_`` rule, so a byte of a key follows one branch and starting a 10,000-property object
costs a few rule bodies; a member's productivity is asked only when a rule depends on it.

Exactness: ``required`` (every required property seen before the object closes),
``minProperties``/``maxProperties`` (the count), ``patternProperties``/``additionalProperties``
(the extra-member rule the translator built for schema order, unchanged: a key that is not
declared, split by the patterns it matches) and ``dependentRequired`` (distributed into
branches by the translator before objects are built) are all kept. As in schema order, two extra
members may share a key (a context-free grammar cannot exclude that in general).

Every body alternative starts with ``,``, a key's ``"``, a key character or ``:``, so family
rules are never left recursive and none is nullable except by its end-of-object alternative.
"""

from __future__ import annotations


import numpy as np

from dotjson import ir
from dotjson.ir import EPS, Ref
from dotjson.ir.families import register_family
from dotjson.jsonschema.jsonbase import QUOTE
from dotjson.jsonschema.key_trie import INLINE, KeySet, KeyTrie, known_by_member

__all__ = ["AnyOrderObject", "any_order_object"]

PROPERTY_ORDERS = ("schema", "any")


def any_order_object(tr, declared, extra, plo: int, phi, witnesses=None) -> ir.Node:
    """The object node for the schema translator: ``{}`` where allowed, else ``{`` family ``}``.

    ``declared``: ``(name, value expression, required)`` per declared property (required names
    outside ``properties`` included); ``extra``: the extra-member node or ``None``. A member's
    value rule is made when a document first completes its name (``tr.node_of``).
    ``witnesses``: ``None``, or ``(w, member, extra)`` for an object that must hold ``w``
    members of given kinds (witnesses against negated object keywords; see
    :class:`AnyOrderObject`).
    """
    exprs = [ve for _, ve, _ in declared]
    values: dict = {}

    def value(j):
        v = values.get(j)
        if v is None:
            v = values[j] = tr.node_of(exprs[j])
        return v

    fam = AnyOrderObject(tr.fresh_prefix("obj"), [name for name, _, _ in declared], value,
                         [req for _, _, req in declared], extra, tr.sep, tr.colon, plo, phi,
                         value_known=lambda j: tr.expr_known(exprs[j])[1],
                         native=getattr(tr, "native", None), value_exprs=exprs,
                         spell=getattr(tr, "jsonstr", None) if hasattr(getattr(tr, "jsonstr", None), "lit_text") else None,
                         witnesses=witnesses)
    tr.families.append(fam)
    if tr.whole:
        fam.materialize()  # the grammar is being built whole: every value rule now
    # (with witnesses, `{}` only where every one of them is stood for by an absent member)
    empty_ok = plo == 0 and not any(req for _, _, req in declared) and (
        not witnesses or (len(witnesses) > 3 and all(witnesses[3])))
    empty = ir.seq(ir.lit("{"), tr.ws, ir.lit("}")) if empty_ok else ir.EMPTY
    return ir.alt(empty, ir.seq(ir.lit("{"), tr.ws, Ref(fam.start), tr.ws, ir.lit("}")))


@register_family
class AnyOrderObject:
    """A rule family: the members of one object in any order, each declared one at most once.

    The :mod:`dotjson.ir.families` protocol, registered for saving as kind ``any_order_object``.

    Its rules, for a set ``S`` of the declared members seen (their indices, ascending) and a
    member count ``c`` (capped, for ``minProperties``/``maxProperties``):

    * ``<prefix>__seen_<c>[_<j>...]``: the rest of the object (a separator, then a member, or
      the end where the object may close);
    * ``<prefix>__key_<q>_<d>_<c>[_<j>...]``: after ``"`` and the prefix ``keys[q][:d]`` of a
      name (:class:`~dotjson.jsonschema.key_trie.KeyTrie` positions), the rest of the name of a member not
      in ``S``: one alternative per next character, so a byte of a key follows one branch;
    * ``<prefix>__tail_<j>_<c>[_<j>...]``: after member ``j``'s name: ``"``-closing quote is
      behind, then ``:``, its value, and the state with ``j`` added to ``S``.

    Parameters
    ----------
    prefix : str
        Unique rule-name prefix; the family owns the names ``<prefix>__...``.
    names : list of str
        The declared names, in schema order.
    value : callable or list of ir.Node
        ``value(j)``: the node of member ``j``'s value (made on first use), or the list of them.
    required : list of bool
        Whether each member must appear.
    extra : ir.Node or None
        One extra (undeclared) member, or ``None`` when the object allows none.
    sep, colon : ir.Node
        The separator between members (``ws , ws``) and between a key and its value.
    plo, phi : int, int or None
        ``minProperties`` / ``maxProperties``.
    value_known : callable, optional
        ``value_known(j)``: ``True`` when member ``j``'s value certainly has a text, else
        ``None`` (a hint; the analysis settles the rest).
    native : dict, optional
        The compiler's mapping of rules the automaton builds natively: given, a family of more
        than ``INLINE`` names makes each key position a key set (:class:`~dotjson.jsonschema.key_trie.KeySet`).
    value_exprs : sequence, optional
        Each member's value expression: members with the same object share ``value_known``.
    witnesses : tuple, optional
        ``(w, member, extra)`` or ``(w, member, extra, absent)`` for an object that must hold
        ``w`` members of given kinds (a key some negated object keyword speaks of, its value
        violating that keyword's schema; a member violating a negated object branch):
        ``member(j)`` lists ``(bits, value node)``, the values with which declared member ``j``
        is the witnesses ``bits``; ``extra()`` lists ``(bits, member node)``, the extra members
        that are; ``absent[a]`` lists the declared members whose absence stands for witness
        ``a`` (a required name of the negated branch; none by default). The count in the rule
        names then carries the witnesses seen in its low ``w`` bits (``count << w | bits``);
        the object closes only once each is held or stood for by an absent member.
    """

    kind = "any_order_object"
    # the automaton writes the states' and tails' bodies straight into its store (an
    # :class:`~dotjson.ir.Written` each, where the compiler passed its ``native`` mapping);
    # ``False``: their IR bodies compiled (the reference tests/test_any_order.py compares)
    written = True
    # the missing witnesses checked at once (:meth:`_covers`) before the member-by-member plan;
    # ``False``: the plan and the analysis's search alone (the reference the tests compare with)
    covers = True

    def __init__(self, prefix, names, value, required, extra, sep, colon, plo=0, phi=None, value_known=None,
                 native=None, value_exprs=None, spell=None, witnesses=None):
        from dotjson.jsonschema.jsonstr import spellings

        # the spellings of the names (a schema's own strings: `Spellings.lit_text`/`lit_char`)
        self._spell = spell or spellings("any")
        self.prefix = prefix
        self.tag = f"{prefix}__seen_"
        self._key_tag = f"{prefix}__key_"
        self._tail_tag = f"{prefix}__tail_"
        self._own = f"{prefix}__"
        self.names = list(names)
        self.n = len(self.names)
        self._value = value if callable(value) else list(value).__getitem__
        self._value_known = value_known
        self._value_exprs = value_exprs  # members with the same object here share value_known
        # the compiler's mapping of rules the automaton builds natively: a wide family's key
        # positions are key sets (one per set seen and count; see _key_start)
        self._native = native
        self._keysets: dict = {}
        self._known = None  # value_known of every member (a bool array), made on first use
        self.required = [bool(r) for r in required]
        self.extra = extra
        self.sep = sep
        self.colon = colon
        self.plo = plo
        self.phi = phi
        self.cap = max(1, phi if phi is not None else plo)
        self.req = [j for j, r in enumerate(self.required) if r]
        self.nw, self._wmember, self._wextra = witnesses[:3] if witnesses else (0, None, None)
        self.wfull = (1 << self.nw) - 1
        # per witness, the declared members whose absence stands for it (a negated object
        # branch is also violated by a required name of it missing): () for a member that
        # must be held
        self.wesc = tuple(tuple(x) for x in witnesses[3]) if witnesses and len(witnesses) > 3 \
            else ((),) * self.nw
        # per member, the witnesses its absence stands for (a bit set; _covers)
        self._esc = [sum(1 << a for a in range(self.nw) if j in self.wesc[a]) for j in range(self.n)] \
            if self.nw else None
        self._wm: dict = {}
        self._wx = None
        self.trie = KeyTrie(self.names)
        rank = np.empty(self.n, dtype=np.int64)
        rank[self.trie.member] = np.arange(self.n)
        self.rank = rank
        self._ranks: dict = {}
        self._sets: dict = {}
        self._parsed: dict = {}
        self._q = QUOTE
        self._wnames: dict = {}  # member -> its name and closing quote, one node (written bodies)
        self._cover: dict = {}   # (seen, witnesses) -> _covers
        self.bind(None)

    # ------------------------------------------------------------------ names
    def owns(self, name: str) -> bool:
        """Whether ``name`` is a well-formed rule of this family (a saved index naming anything
        else is refused when loaded, not when decoding reaches it)."""
        if not name.startswith(self._own):
            return False
        try:
            self.parse(name)
        except ValueError:
            return False
        return True

    def _set(self, seen) -> str:
        hit = self._sets.get(seen)  # (spelled in every rule name of a set: once per set)
        if hit is None:
            hit = self._sets[seen] = "".join(f"_{j}" for j in seen)
        return hit

    # a name made here is remembered with its parts (what parse() would return)
    def name(self, seen: tuple, c: int) -> str:
        nm = f"{self.tag}{c}{self._set(seen)}"
        if nm not in self._parsed:
            self._parsed[nm] = ("seen", seen, c)
            if self._native is not None and self.written:
                self._native[nm] = ir.Written(lambda: self._state_alts(seen, c))
        return nm

    def _key_name(self, q, d, c, seen) -> str:
        nm = f"{self._key_tag}{q}_{d}_{c}{self._set(seen)}"
        self._parsed.setdefault(nm, ("key", seen, c, q, d))
        return nm

    def _tail_name(self, j, c, seen) -> str:
        nm = f"{self._tail_tag}{j}_{c}{self._set(seen)}"
        if nm not in self._parsed:
            self._parsed[nm] = ("tail", seen, c, j)
            if self._native is not None and self.written:
                self._native[nm] = ir.Written(lambda: [self._tail_alts(j, seen, c)])
        return nm

    def parse(self, name: str) -> tuple:
        """``("seen", S, c)``, ``("key", S, c, q, d)`` or ``("tail", S, c, j)``; ``ValueError``
        for a name the family does not own. Remembered per name: every lookup of a family rule
        (ownership, body, productivity) asks."""
        hit = self._parsed.get(name)
        if hit is None:
            hit = self._parsed[name] = self._parse(name)
        return hit

    def _parse(self, name: str) -> tuple:
        for kind, tag, k in (("seen", self.tag, 1), ("key", self._key_tag, 3), ("tail", self._tail_tag, 2)):
            if name.startswith(tag):
                parts = [int(x) for x in name[len(tag):].split("_")]
                if len(parts) < k or any(x < 0 for x in parts):
                    break
                head, seen = parts[:k], tuple(parts[k:])
                if list(seen) != sorted(set(seen)) or any(j >= self.n for j in seen):
                    break
                if kind == "seen":
                    return ("seen", seen, head[0])
                if kind == "key":
                    q, d, c = head
                    if q >= self.n or d > len(self.trie.keys[q]):
                        break
                    return ("key", seen, c, q, d)
                j, c = head
                if j >= self.n or j in seen:
                    break
                return ("tail", seen, c, j)
        raise ValueError(f"not a rule of {self.prefix}: {name!r}")

    @property
    def start(self) -> str:
        """The rule of an object with no member read yet (its caller wraps it in ``{`` ... ``}``)."""
        return self.name((), 0)

    def value(self, j: int) -> ir.Node:
        return self._value(j)

    def materialize(self) -> None:
        """Make every member's value node (and so its rule) now: before a whole grammar is built."""
        for j in range(self.n):
            self._value(j)
            self._wvalues(j)
        self._wextras()

    # ------------------------------------------------------------------ witnesses
    def _wvalues(self, j) -> list:
        """``(bits, value node)``: the values with which member ``j`` is the witnesses ``bits``."""
        if not self.nw:
            return []
        hit = self._wm.get(j)
        if hit is None:
            hit = self._wm[j] = list(self._wmember(j)) if callable(self._wmember) else list(self._wmember[j])
        return hit

    def _wextras(self) -> list:
        """``(bits, member node)``: the extra members that are the witnesses ``bits``."""
        if not self.nw:
            return []
        if self._wx is None:
            self._wx = list(self._wextra()) if callable(self._wextra) else list(self._wextra)
        return self._wx

    def _split(self, cw: int) -> tuple:
        """The member count and the witnesses seen, of a rule name's count field."""
        return cw >> self.nw, cw & self.wfull

    def _member_tail(self, j, seen, cw) -> ir.Node:
        """After member ``j``'s name and quote: ``:``, its value, the state with ``j`` seen (and
        the witnesses its value is, where it may be some)."""
        nxt = tuple(sorted(seen + (j,)))
        node = ir.seq(self.colon, self.value(j), Ref(self.name(nxt, cw)))
        w = cw & self.wfull
        more = [ir.seq(self.colon, v, Ref(self.name(nxt, cw | b))) for b, v in self._wvalues(j) if b & ~w]
        return ir.alt(node, *more) if more else node

    def _tail_alts(self, j, seen, cw) -> list:
        """:meth:`_member_tail` as the automaton writes it (a sequence; an alternation after
        the colon where member ``j``'s value may be some witnesses)."""
        nxt = tuple(sorted(seen + (j,)))
        w = cw & self.wfull
        more = [[self.colon, v, self.name(nxt, cw | b)] for b, v in self._wvalues(j) if b & ~w]
        if more:
            return [[[self.colon, self.value(j), self.name(nxt, cw)], *more]]
        return [self.colon, self.value(j), self.name(nxt, cw)]

    def _wname(self, j) -> ir.Node:
        """Member ``j``'s name (its spellings) and closing quote: one node per member, so its
        term is compiled once."""
        hit = self._wnames.get(j)
        if hit is None:
            hit = self._wnames[j] = ir.seq(self._spell.lit_text(self.names[j]), self._q)
        return hit

    def _state_alts(self, seen, c) -> list:
        """:meth:`_state_body` as the automaton writes it (a :class:`~dotjson.ir.Written`
        alternation): no IR body, no left-recursion search (every alternative consumes a byte
        first), the names of a small family one flat alternation."""
        sp = [self.sep] if c >> self.nw > 0 else []
        alts = []
        c2 = self._inc(c)
        if c2 is not None:
            if self.extra is not None:
                alts.append(sp + [self.extra, self.name(seen, c2)])
            w = c & self.wfull
            for b, x in self._wextras():
                if b & ~w:
                    alts.append(sp + [x, self.name(seen, c2 | b)])
            if len(seen) < self.n:
                if self.n <= INLINE:
                    names = [[self._wname(j), *self._tail_alts(j, seen, c2)]
                             for j in (int(self.trie.member[q]) for q in self._offered(0, 0, seen).tolist())]
                    alts.append(sp + [self._q, names])
                else:
                    alts.append(sp + [self._q, self._key_start(seen, c2).name])
        if self._nullable(seen, c):
            alts.append([])
        return alts

    # ------------------------------------------------------------------ rules
    def _inc(self, cw: int):
        c, w = self._split(cw)
        if self.phi is not None:
            return (c + 1) << self.nw | w if c + 1 <= self.phi else None
        return min(c + 1, self.cap) << self.nw | w

    def body(self, name: str) -> ir.Node:
        hit = self._bodies.get(name)
        if hit is not None:
            return hit
        kind, seen, c, *rest = self.parse(name)
        if kind == "seen":
            node = self._state_body(seen, c)
        elif kind == "key":
            q, d = rest
            node = self._choice(q, d, seen, c)
        else:
            (j,) = rest
            node = self._member_tail(j, seen, c)
        self._bodies[name] = node
        return node

    def _state_body(self, seen, c) -> ir.Node:
        sp = self.sep if c >> self.nw > 0 else EPS
        alts = []
        c2 = self._inc(c)
        if c2 is not None:
            if self.extra is not None:  # (an unproductive reference compiles to nothing)
                alts.append(ir.seq(sp, self.extra, Ref(self.name(seen, c2))))
            w = c & self.wfull
            for b, x in self._wextras():
                if b & ~w:
                    alts.append(ir.seq(sp, x, Ref(self.name(seen, c2 | b))))
            if len(seen) < self.n:
                alts.append(ir.seq(sp, ir.lit('"'), self._key_start(seen, c2)))
        if self._nullable(seen, c):
            alts.append(EPS)
        return ir.alt(*alts)

    def _key_start(self, seen, c2) -> ir.Node:
        """The names not seen yet, after the opening quote: in place for a small family; for a
        wide one the rule ``__key_0_0_<c2>_<S>``, which the automaton builds natively as a key set
        (its IR body, the trie of the names, stays what the analyses and rendering read)."""
        if self._native is None or self.n <= INLINE:
            return self._choice(0, 0, seen, c2)
        name = self._key_name(0, 0, c2, seen)
        if name not in self._native:
            self._native[name] = (self._keyset(seen, c2), 0, self.n)
        return Ref(name)

    def _keyset(self, seen, c2) -> KeySet:
        ks = self._keysets.get((seen, c2))
        if ks is None:
            ks = self._keysets[(seen, c2)] = KeySet(
                self.trie, lambda js: self._alive_many(js, c2, seen), lambda j: self._tail_name(j, c2, seen),
                excluded=seen, spelling=self._spell.lit_char)
        return ks

    def _alive_many(self, js, c2, seen) -> np.ndarray:
        """For a key set of this family (members ``js``, none of them in ``seen``): True where
        the member certainly completes the object, known without building anything (its value
        has an instance by its normal form, and so has every required member not seen yet, which
        may follow it in any order: no maximum, no witness left, the count reached); False
        otherwise (the automaton then asks the member's tail rule, exactly). With required
        members this had answered False for every member, and a walk asked each one's tail
        (~750 exits to Python over the serving benchmark's 32 schemas)."""
        if self._value_known is None or not self._closable(c2):
            return np.zeros(len(js), dtype=np.bool_)
        if self._known is None:  # once per family: asked once per distinct value expression
            self._known = self._value_known_all()
        if self.req and not all(self._known[j] for j in self.req if j not in seen):
            return np.zeros(len(js), dtype=np.bool_)
        return self._known[js]

    def _closable(self, cw) -> bool:
        """No maximum, every witness seen, and ``c`` members (at least one) are enough: with
        its required members the object may close whatever else was seen (:meth:`_free`, less
        the required members)."""
        c, w = self._split(cw)
        return self.phi is None and c > 0 and c >= self.plo and w == self.wfull

    def _value_known_all(self) -> np.ndarray:
        if self._value_exprs is None:
            return np.fromiter((bool(self._value_known(j)) for j in range(self.n)), dtype=np.bool_,
                               count=self.n)
        return known_by_member(self._value_exprs, self._value_known)

    def _offered(self, q, d, seen) -> np.ndarray:
        e = self.trie.end(q, d)
        pos = np.arange(q, e, dtype=np.int64)
        if seen:
            out = [r - q for r in self._seen_ranks(seen) if q <= r < e]
            if out:
                pos = np.delete(pos, out)
        return pos

    def _seen_ranks(self, seen) -> list:
        """The sorted positions of the names of ``seen`` (a handful; remembered per set)."""
        hit = self._ranks.get(seen)
        if hit is None:
            hit = self._ranks[seen] = sorted(int(self.rank[j]) for j in seen)
        return hit

    def _choice(self, q, d, seen, c2) -> ir.Node:
        # the rest of a name after keys[q][:d]: members not seen yet, then their tails
        if self.n <= INLINE:
            def leaf(j):  # small objects: written out, as a grammar text would be
                return ir.seq(ir.lit('"'), self._member_tail(j, seen, c2))
        else:
            def leaf(j):
                return ir.seq(ir.lit('"'), Ref(self._tail_name(j, c2, seen)))
        return self.trie.choice(q, d, self._offered(q, d, seen), leaf,
                                lambda q2, d2, pos: Ref(self._key_name(q2, d2, c2, seen)), self._spell.lit_text)

    # ------------------------------------------------------------------ analyses
    def nullable(self, name: str) -> bool:
        kind, seen, c, *_ = self.parse(name)
        return kind == "seen" and self._nullable(seen, c)

    def _nullable(self, seen, cw) -> bool:
        c, w = self._split(cw)
        return c > 0 and c >= self.plo and self._wdone(seen, w) and all(j in seen for j in self.req)

    def _wdone(self, seen, w) -> bool:
        """Whether the witnesses ``w`` (a bit set) and the members ``seen`` satisfy every
        witness: its bit is set, or a member whose absence stands for it is not in ``seen``."""
        if w == self.wfull:
            return True
        return all(w >> a & 1 or any(j not in seen for j in self.wesc[a]) for a in range(self.nw))

    def productive(self, name: str):
        """Can the object still be completed from this rule? ``None`` while the productivity of
        a member it depends on is being settled (a recursive schema asking about itself)."""
        kind, seen, c, *rest = self.parse(name)
        try:
            if kind == "seen":
                return self._productive(seen, c)
            if kind == "tail":
                (j,) = rest
                return bool(self._member_ok(j)) and self._productive(tuple(sorted(seen + (j,))), c)
            q, d = rest
            free = self._free(c)
            # the offered names one by one, the seen ones skipped (most often the first answers:
            # asked of every key rule a body refers to, this must not cost the range)
            skip = set(self._seen_ranks(seen)) if seen else ()
            member = self.trie.member
            for p in range(q, self.trie.end(q, d)):
                if p in skip:
                    continue
                j = int(member[p])
                if self._member_ok(j) and (free or self._productive(tuple(sorted(seen + (j,))), c)):
                    return True
            return False
        except _Unsettled:
            return None

    def _free(self, cw) -> bool:
        """Nothing required, no maximum, every witness seen, and ``c`` members (at least one)
        are enough: the object may close whatever else was seen."""
        return not self.req and self._closable(cw)

    def _productive(self, seen, cw) -> bool:
        # required members left must have values; then counts (extras or unseen members fill
        # up to minProperties, required ones must fit under maxProperties)
        if self._free(cw):
            return True
        c, w = self._split(cw)
        seen_set = set(seen)
        missing = [j for j in self.req if j not in seen_set]
        if not all(self._member_ok(j) for j in missing):
            return False
        need = len(missing)
        keep_out: set = set()  # members left out: their absence stands for a witness
        used: set = set()      # members that are witnesses
        low = max(self.plo, 1 if c == 0 else 0)  # the members the object must hold, at least
        if self.covers and w != self.wfull and self.phi is None and (
                low <= c or (self.extra is not None and self._member_ok(None))) and self._covers(seen, w):
            # no count to keep under, and the members the object still needs (one at least where
            # none is read: the family's states are non-empty objects) are there, or extra
            # members make them up: whichever members cover the witnesses (or none), it closes
            return True
        if w != self.wfull:
            try:
                need += self._witnesses_left(seen_set, w, keep_out, used)
            except _Answer as ans:
                return ans.value
            if self.phi is not None and c + need > self.phi:
                raise _Unsettled
        if self.phi is not None and c + need > self.phi:
            return False
        fits = self.phi is None or max(low, c + need) <= self.phi
        if self.extra is not None and self._member_ok(None):
            return fits
        want = low - c - len(used)  # members still to come, at least
        if want > 0:
            have = 0
            for j in range(self.n):
                if j not in seen_set and j not in keep_out and j not in used and self._member_ok(j):
                    have += 1
                    if have >= want:
                        break
            if have < want:
                if keep_out or used:
                    raise _Unsettled  # (the members counted out might have filled it)
                return False
        return fits

    def _covers(self, seen, w) -> bool:
        """Whether the members not in ``seen`` can complete the witnesses ``w`` has: each missing
        witness held by a member's value (one value per member: each offers some bit sets, a
        required one its plain value too), by an extra member that is it (any number), or stood
        for by a member left out. Exact (a search over the sets of witnesses reachable, 2 ** w at
        most, member by member); only a ``True`` is used (:meth:`_productive`,
        where no maximum counts the members): ``False`` leaves the question to the plan below and
        the analysis. Remembered per state."""
        key = (seen, w)
        hit = self._cover.get(key)
        if hit is not None:
            return hit
        full = self.wfull
        seen_set = set(seen)
        reach = np.zeros(full + 1, dtype=np.bool_)
        reach[w] = True
        every = np.arange(full + 1, dtype=np.int64)
        for j in range(self.n):
            if j in seen_set:
                continue
            if self.required[j]:
                opts = [0] if self._member_ok(j) else []
            else:
                opts = [self._esc[j]]  # (left out; present with its plain value adds nothing)
            opts += [b for i, (b, _) in enumerate(self._wvalues(j)) if self._member_ok(("v", j, i))]
            if not opts:
                hit = False
                break
            src = every[reach]
            nxt = np.zeros_like(reach)
            for b in set(opts):
                nxt[src | b] = True
            reach = nxt
        else:
            for _ in range(self.nw):  # extra members that are witnesses: as many as wanted
                grown = reach.copy()
                for b, _x in self._wextras():
                    if self._member_ok(("w", b)):
                        grown[every[reach] | b] = True
                if (grown == reach).all():
                    break
                reach = grown
            hit = bool(reach[full])
        if len(self._cover) > 100_000:
            self._cover.clear()
        self._cover[key] = hit
        return hit

    def _witnesses_left(self, seen_set, w, keep_out: set, used: set) -> int:
        """The witnesses the object still lacks (``w``: those it has), for :meth:`_productive`:
        how many more extra members they take, with the declared members that are witnesses
        added to ``used`` and those whose absence stands for one to ``keep_out``. ``_Answer(False)``
        where some witness can be had no way at all; ``_Unsettled``
        where this plan does not decide (the analysis then searches the rules)."""
        wx = self._wextras()
        unseen = [j for j in range(self.n) if j not in seen_set]
        lack = []
        for a in range(self.nw):
            if w >> a & 1:
                continue
            free = [j for j in self.wesc[a] if j not in seen_set and not self.required[j]]
            if free:
                keep_out.update(free)  # (leaving them all out keeps it)
            else:
                lack.append(a)
        extras = 0
        for a in lack:
            if any(b >> a & 1 and self._member_ok(("w", b)) for b, _ in wx):
                extras += 1  # an extra member each (one might be several: a bound searches)
                continue
            # the first member free to be it (asking about every member would compile the value
            # of each: what each must be to violate a negated branch)
            free = [j for j in unseen if j not in keep_out and j not in used]
            pick = next((j for j in free if self._can_be(j, a)), None)
            if pick is None:
                if any(self._can_be(j, a) for j in unseen if j in keep_out or j in used):
                    raise _Unsettled
                raise _Answer(False)
            used.add(pick)
        return extras + sum(1 for j in used if not self.required[j])

    def _can_be(self, j, a) -> bool:
        """Whether declared member ``j`` has a value with which it is witness ``a``."""
        return any(b >> a & 1 and self._member_ok(("v", j, i)) for i, (b, _) in enumerate(self._wvalues(j)))

    def _member_ok(self, j):
        """Whether member ``j`` (``None``: the extra member) has a value at all."""
        hit = self._ok.get(j)
        if hit is None:
            if j is None:
                node = self.extra
            elif isinstance(j, tuple):
                node = dict(self._wextras())[j[1]] if j[0] == "w" else self._wvalues(j[1])[j[2]][1]
            else:
                node = self.value(j)
            if self._ask is None:
                hit = node != ir.EMPTY  # structural, before an analysis is bound
            else:
                if isinstance(j, int) and self._value_known is not None and self._value_known(j):
                    hit = True
                else:
                    if self._asking:
                        raise _Unsettled
                    self._asking = True
                    try:
                        hit = bool(self._ask(node))
                    finally:
                        self._asking = False
            self._ok[j] = hit
        return hit

    def bind(self, node_productive) -> None:
        """Answer member productivity with ``node_productive`` (exact; the automaton's analysis),
        or structurally with ``None``."""
        self._ask = node_productive
        self._asking = False
        self._ok: dict = {}
        self._bodies: dict = {}

    # ------------------------------------------------------------------ persistence
    def to_json(self, enc) -> dict:
        """Plain JSON values (``enc``: IR node to JSON, as :mod:`dotjson.serialization` writes)."""
        return {"kind": self.kind, "prefix": self.prefix, "names": self.names,
                "values": [enc(self.value(j)) for j in range(self.n)], "required": self.required,
                "extra": None if self.extra is None else enc(self.extra), "sep": enc(self.sep),
                "colon": enc(self.colon), "plo": self.plo, "phi": self.phi, "spellings": self._spell.name,
                "witnesses": None if not self.nw else {
                    "n": self.nw, "members": [[[b, enc(v)] for b, v in self._wvalues(j)] for j in range(self.n)],
                    "extra": [[b, enc(x)] for b, x in self._wextras()],
                    "absent": [list(x) for x in self.wesc]}}

    @classmethod
    def from_json(cls, d: dict, dec) -> "AnyOrderObject":
        """The family :meth:`to_json` wrote (``dec``: JSON to IR node); ``ValueError`` if malformed."""
        names, required = d["names"], d["required"]
        values = [dec(v) for v in d["values"]]
        plo, phi = d["plo"], d["phi"]
        if (not isinstance(d["prefix"], str) or not isinstance(names, list) or not isinstance(required, list)
                or not all(isinstance(x, str) for x in names) or len(set(names)) != len(names)
                or len(required) != len(names) or len(values) != len(names)
                or not all(isinstance(r, bool) for r in required) or not isinstance(plo, int)
                or not (phi is None or isinstance(phi, int))):
            raise ValueError("malformed rule family")
        extra = None if d["extra"] is None else dec(d["extra"])
        from dotjson.jsonschema.jsonstr import SPELLINGS, spellings

        sp = d.get("spellings", "any")  # (how the names are spelled: the policy it was built with)
        if sp not in SPELLINGS:
            raise ValueError("malformed rule family")
        wd = d.get("witnesses")
        witnesses = None
        if wd is not None:
            nw = wd.get("n") if isinstance(wd, dict) else None
            if not isinstance(nw, int) or not 0 < nw <= 16 or not isinstance(wd.get("members"), list) \
                    or len(wd["members"]) != len(names) or not isinstance(wd.get("extra"), list):
                raise ValueError("malformed rule family")

            def pairs(xs):
                if not isinstance(xs, list) or not all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], int)
                                                       and 0 < x[0] < 1 << nw for x in xs):
                    raise ValueError("malformed rule family")
                return [(b, dec(v)) for b, v in xs]

            esc = wd.get("absent", [[]] * nw)
            if not isinstance(esc, list) or len(esc) != nw or not all(
                    isinstance(x, list) and all(isinstance(j, int) and 0 <= j < len(names) for j in x) for x in esc):
                raise ValueError("malformed rule family")
            witnesses = (nw, [pairs(m) for m in wd["members"]], pairs(wd["extra"]), esc)
        return cls(d["prefix"], names, values, required, extra, dec(d["sep"]), dec(d["colon"]), plo, phi,
                   spell=spellings(sp), witnesses=witnesses)


class _Unsettled(Exception):
    """A member's productivity is being settled further up the stack (recursive schema)."""


class _Answer(Exception):
    """The answer of a productivity question, found deep in its reasoning."""

    def __init__(self, value: bool):
        super().__init__(value)
        self.value = value
