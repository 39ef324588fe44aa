"""Prefix-factored choices among many property names: the key position of a wide object.

An object state offers "the next member is one of these declared properties". Written as an
alternation of whole members, the derivative of that state by one byte of a key looks at every
name it still offers (thousands), and building it compiles every member. :class:`KeyTrie` sorts
the names once; :meth:`KeyTrie.choice` then writes the rest of a key after a prefix as one
alternative per *next character*, so a derivative by a byte follows one branch. Sub-tries are
rules made on demand by the caller (``sub``), and a sub-trie offering at most ``inline`` names
is written out in place (the names' remaining characters, then their member tails).

Nodes are named by a position in the sorted names and a depth: ``(p, d)`` is the prefix
``keys[p][:d]``. A choice offers the names at given sorted positions (a state of a schema-order
object offers a range of members); only those appear, so the language is exact and no branch
leads to a dead end.
"""

from __future__ import annotations

import bisect

import numpy as np

from dotjson import ir
from dotjson.ir import Ref, alt, lit, seq
from dotjson.jsonschema.jsonstr import STRING_SYNTAX, enc_char, enc_text

__all__ = ["INLINE", "KeySet", "KeyTrie", "all_complete", "enc_text", "known_by_member"]

#: a sub-trie offering at most this many names is written out in place, not as a rule
INLINE = 8


class KeyTrie:
    """The names of an object's declared properties, sorted for prefix queries.

    Parameters
    ----------
    names : sequence of str
        One name per member, in member order (distinct).
    """

    def __init__(self, names) -> None:
        self.names = list(names)
        self.n = len(self.names)
        order = sorted(range(self.n), key=self.names.__getitem__)
        self.keys = list(map(self.names.__getitem__, order))
        self.member = np.asarray(order, dtype=np.int64)
        self._ends: dict = {}

    def end(self, p: int, d: int) -> int:
        """One past the last sorted position whose name starts with ``keys[p][:d]`` (``p`` is at
        or after the first one)."""
        if d == 0:
            return self.n
        key = (p, d)
        hit = self._ends.get(key)
        if hit is None:
            prefix = self.keys[p][:d]
            last = ord(prefix[-1])
            if last < 0x10FFFF:
                # the names with this prefix are exactly those below its successor
                hit = bisect.bisect_left(self.keys, prefix[:-1] + chr(last + 1), lo=p)
            else:
                hit = bisect.bisect_right(self.keys, prefix, lo=p, key=lambda x: x[:d])
            self._ends[key] = hit
        return hit

    def positions(self, p: int, d: int, lo: int, hi: int) -> np.ndarray:
        """Sorted positions of the names with prefix ``keys[p][:d]`` of members ``lo .. hi - 1``."""
        m = self.member[p:self.end(p, d)]
        return p + np.flatnonzero((m >= lo) & (m < hi))

    def choice(self, p: int, d: int, pos: np.ndarray, leaf, sub, enc_text, inline: int = INLINE) -> ir.Node:
        """The rest of a key after the prefix ``keys[p][:d]``, offering the names at ``pos``.

        ``leaf(j)``: what follows member ``j``'s name (its closing quote onwards);
        ``sub(q, d2, pos2)``: a reference to the sub-trie of prefix ``keys[q][:d2]`` offering
        the names at ``pos2`` (``q = pos2[0]``); ``enc_text(s)``: the JSON spellings of ``s``.
        """
        keys, member = self.keys, self.member
        if len(pos) <= inline:
            return ir.alt(*(ir.seq(enc_text(keys[q][d:]), leaf(int(member[q]))) for q in pos.tolist()))
        alts = []
        k, m = 0, len(pos)
        while k < m:
            q = int(pos[k])
            key = keys[q]
            if len(key) == d:  # the prefix itself is a name (it sorts first)
                alts.append(leaf(int(member[q])))
                k += 1
                continue
            k2 = int(np.searchsorted(pos, self.end(q, d + 1)))
            rest = pos[k:k2]
            if k2 - k <= inline:
                node = ir.alt(*(ir.seq(enc_text(keys[r][d + 1:]), leaf(int(member[r]))) for r in rest.tolist()))
            else:
                node = sub(q, d + 1, rest)
            alts.append(ir.seq(enc_text(key[d]), node))
            k = k2
        return ir.alt(*alts)


def known_by_member(values, known_at) -> np.ndarray:
    """A bool per member: ``known_at(i)`` asked for one member ``i`` of each distinct object of
    ``values`` (the members' value expressions) and shared by the others. The values of 10,000
    properties of one leaf schema are one expression: one question, not 10,000 (identity is
    enough: the list holds the objects)."""
    if len(values) <= 64:  # a typical object: a dict is cheaper than sorting in NumPy
        seen: dict = {}
        out = np.empty(len(values), dtype=np.bool_)
        for i, v in enumerate(values):
            a = seen.get(id(v))
            if a is None:
                a = seen[id(v)] = bool(known_at(i))
            out[i] = a
        return out
    ids = np.fromiter(map(id, values), dtype=np.int64, count=len(values))
    _, first, inv = np.unique(ids, return_index=True, return_inverse=True)
    answers = np.fromiter((bool(known_at(i)) for i in first.tolist()), dtype=np.bool_, count=len(first))
    return answers[inv.reshape(-1)]


def all_complete(js) -> np.ndarray:
    """A :class:`KeySet`'s ``alive_many`` where every member completes (its tail is a rule known
    to be productive, or there is none): True for each member of ``js``."""
    return np.ones(np.shape(js), dtype=np.bool_)


class KeySet:
    """A key trie's names as the automaton's native key set (:func:`dotjson.automaton.keysets.keys_root`).

    The automaton writes the sorted names into its term store once and answers a key position's
    derivatives by narrowing ranges of them; it asks this object only what depends on the members'
    values: whether a member can complete (once per member, for all the members a state offers
    at once), and the rule of what follows a member's name (once per member whose name decoding
    reaches).

    Parameters
    ----------
    trie : KeyTrie
        The names.
    alive_many : callable
        ``alive_many(js)``: for each member ``j`` of the int array ``js``, True when it certainly
        completes the object (known without building anything), False when that is not known
        cheaply.
    tail : callable or None
        ``tail(j)``: the name of the rule of what follows member ``j``'s closing quote (its value
        and the rest of the object); the member can complete exactly when that rule is
        productive. ``None``: nothing follows, every name ends the key set's language (a string
        ``enum``: :meth:`dotjson.jsonschema.compiler.Compiler.string_enum`).
    excluded : sequence of int, optional
        Members never offered (an object in any order: the ones already seen). Key sets over one
        trie share its names in the automaton's store; only which members complete, and their
        tails, are their own.
    spelling : callable, default :func:`dotjson.jsonschema.jsonstr.enc_char`
        The spellings of one name character (the spelling policy's ``lit_char``: under
        ``spellings="canonical"`` one spelling; the automaton reads the escapes it allows from it).
    syntax : StringSyntax, default :data:`dotjson.jsonschema.jsonstr.STRING_SYNTAX`
        The string syntax the names are written in (closing quote, escape bytes, the characters
        never written raw): the automaton writes it beside the names, and its key set kernels
        read it there (the generic engine knows no JSON).
    tail_alts : callable or None
        ``tail_alts(j)``: what follows member ``j``'s closing quote written out
        (a :class:`~dotjson.ir.Written` alternation, the language of rule ``tail(j)``): the
        automaton builds the tail from it in place, with no rule of its own (an object's states
        after a member: no rule, name or analysis per member). ``None``: the tail is rule
        ``tail(j)``'s body. ``tail(j)`` still names that language for a member whose
        completion the key set has to ask (``alive_many`` could not vouch for it).
    """

    __slots__ = ("trie", "alive_many", "tail", "excluded", "_spelling", "syntax", "tail_alts")

    def __init__(self, trie: KeyTrie, alive_many, tail, excluded=(), spelling=enc_char,
                 syntax=STRING_SYNTAX, tail_alts=None) -> None:
        self._spelling = spelling
        self.syntax = syntax
        self.trie = trie
        self.alive_many = alive_many
        self.tail = tail
        self.tail_alts = tail_alts
        self.excluded = np.asarray(sorted(excluded), dtype=np.int64)

    def spelling(self, ch: str) -> ir.Node:
        """The spellings of the name character ``ch`` (as the policy's ``lit_text`` writes it)."""
        return self._spelling(ch)

    @property
    def spelling_key(self):
        """What the spellings depend on (the policy's ``lit_char``, hashable): key sets with
        equal keys spell every character alike, so the automaton reads a character's escapes
        once for all of them."""
        return self._spelling


class UndeclaredKey:
    """After ``"``: the rest of a key that is not a declared name, its closing quote, ``:`` and
    the value ``ve`` (or, given ``after``, what follows the closing quote: the IR body of
    :meth:`~dotjson.jsonschema.objects.ObjectRules.undeclared_key`, names ``tag``). After the prefix ``P = keys[q][:d]`` (a prefix of some name): a character
    no name continues ``P`` with, then any content; or one that some name does (recursively);
    or the end, unless ``P`` is itself a name. One rule per trie position, made when reached.
    ``obj`` is the object's :class:`~dotjson.jsonschema.objects.ObjectRules` (its compiler, its
    extra rule's name and its generation bound on a key's characters)."""

    def __init__(self, obj, trie: KeyTrie, ve, after=None, tag="nk"):
        tr = obj.tr
        self.tr, self.xname, self.trie, self.tag = tr, obj.xname, trie, tag
        if after is None:  # (else ``after`` is what follows the key's closing quote)
            after = seq(lit('"'), tr.colon, tr.node_of(ve))
            self.sure = True if tr.expr_known(ve)[1] else None
        else:
            self.sure = True
        self.after = after
        self.content = tr.jsonstr.json_string_content()
        # the generation bound on a key's characters, counted from where it leaves the names
        self.most = tr.gen_bounds["string_length"] if obj.key_bound(()) else None
        self.others: dict = {}  # (characters continuing P, depth) -> the node for every other one

    def node(self, q, d) -> Ref:
        tr = self.tr
        nm = f"{self.xname}_{self.tag}_{q}_{d}"
        if nm not in tr.rules and nm not in tr.pending:
            tr.pending[nm] = lambda: self.body(q, d)
            tr.state_hints[nm] = (False, self.sure)
        return Ref(nm)

    def body(self, q, d) -> ir.Node:
        tr, trie, most = self.tr, self.trie, self.most
        e = trie.end(q, d)
        alts, used = [], []
        k = q
        if len(trie.keys[q]) == d:  # P is a name: the key may not end here
            k += 1
        else:
            alts.append(self.after)
        while k < e:
            ch = trie.keys[k][d]
            used.append(ord(ch))
            alts.append(seq(tr.enc_text(ch), self.node(k, d + 1)))
            k = trie.end(k, d + 1)
        rkey = (tuple(used), d if most is not None else 0)
        rest = self.others.get(rkey)
        if rest is None:
            other, lo = [], 0
            for cp in used:  # ascending: the names are sorted
                if cp > lo:
                    other.append((lo, cp - 1))
                lo = cp + 1
            if lo <= ir.MAX_CODEPOINT:
                other.append((lo, ir.MAX_CODEPOINT))
            tail = self.content if most is None else tr.jsonstr.string_of_length(0, max(most - d - 1, 0))
            rest = self.others[rkey] = seq(tr.jsonstr.encode_chars(ir.Chars(tuple(other))), tail, self.after)
        alts.append(rest)
        return alt(*alts)
