"""An open object's key positions read through heads every such position shares (issue 24).

A part of :class:`dotjson.masks.Masker` (a mixin: the masker's state, lock and walks): see
:meth:`OpenKeyMasks._open_key_mask` and ``docs/ARCHITECTURE.md`` §3, "Open keys". Generic: the
shape is terms (a key set beside a difference of a free content and finitely many names), and
the front end's one fact, that the content is free and which bytes close and escape it, comes as
data (``ir.FreeText``, recorded by the base image).
"""

from __future__ import annotations

import numpy as np

from .automaton import kernels as _K
from .automaton.rules import _BYTE_WORDS
from .automaton.store import K_DIFF as _K_DIFF
from .trie import set_token_bits

#: (vocabulary uid, close byte, escape byte) -> :meth:`OpenKeyMasks._close_sets`, per process
_CLOSE_TABLES: dict = {}


class OpenKeyMasks:
    """The masker's open-key shortcut (mixed into :class:`dotjson.masks.Masker`)."""

    def _init_open_keys(self) -> None:
        self._free_heads: dict = {}  # (free content or closing byte, items after it) -> head term
        self._close_bits: dict = {}  # (close byte, escape byte) -> _close_sets
        self._close_memo: dict = {}  # names term -> the tokens completing one (_close_of)
        self._word_memo: dict = {}  # term -> its words, None or _TOO_MANY (_words)

    #: most tokens completing a name that an open key's mask walks one by one (more: the
    #: state's whole walk instead)
    _OPEN_KEY_WALKS = 12
    #: items of what follows an undeclared key's content taken into its shared head
    _OPEN_KEY_ITEMS = 5
    #: most words of the declared names' rests an open key's mask lists (more: a walk of them)
    _OPEN_KEY_WORDS = 64

    def _open_key_mask(self, state: int):
        """The bitset of a key position in an open object (its key begun: after the opening
        quote) from heads every such position shares and a few token walks; ``None`` for
        another state (then it is walked whole). Call with the lock held.

        The state is ``(K | Diff(L, N) Y) R`` (a branch maybe a rule's reference, read through
        its body): the key set ``K`` of the members still offered, beside an undeclared key --
        ``L`` a free content (an ``ir.FreeText`` fact of the front end) less ``N``, the
        finitely many declared names' rests from the key's prefix -- and what follows it
        (``Y``: the closing byte, the colon, the value, the object's loop), then the rest
        ``R`` of the document. A token that stays inside the key is allowed exactly when ``L``
        allows it (an infinite content less finitely many names never runs out, and every
        name is of ``L``'s), and a token that closes the key at a text that is no name is the
        undeclared member's. So the mask is that of ``L Y R`` -- the head ``x' = L y1 .. yk``
        (no name, no position: one per process, vocabulary and value schema, see
        :meth:`_head_entry`) and its exits walked from ``y(k+1) .. R`` (tokens passing a whole
        value: two on Llama 3) -- except at the tokens whose text before the closing byte is
        a word of ``N`` (:meth:`_close_of`): each is walked from the state, and where the
        key's prefix is a whole name (the empty word in ``N``) the tokens starting with the
        closing byte are that member's (:meth:`_member_after`). The walk of the whole state
        made a state per prefix of an undeclared key a token spells (``Diff(L, N')`` each,
        with the rest of the document), new at every position of every key.

        ``K`` may also be written out (an object in any order writes a trie of the names not
        seen yet, a name alone in its branch inline): up to eight branches beside the
        undeclared key, each a key set or a chain of single bytes spelling a name's rest to
        the closing byte, then its member (``name" ws : ws V next``, :meth:`_chain_word`). The
        argument holds where every such rest is a word of ``N`` (checked: ``N``'s words
        listed), as a key set's names are by construction.
        """
        a = self._auto
        img = a.image
        free = img.free_terms if img is not None else None
        if not free or self._options.get("specials"):
            return None
        S = a.store
        ti, pool = S[_K.S_TI], S[_K.S_POOL]
        t = S[_K.S_TERM_OF].item(state)
        if ti.item(t, 0) == _K.K_SEQ and ti.item(ti.item(t, 1), 0) == _K.K_ALT:
            first, R = ti.item(t, 1), ti.item(t, 2)
        elif ti.item(t, 0) == _K.K_ALT:
            first, R = t, _K.EPS
        else:
            return None
        n = ti.item(first, 2)
        if n < 2 or n > 8:
            return None
        off = ti.item(first, 1)
        branches = [pool.item(off + j) for j in range(n)]
        keys = 0
        xb = None
        chains = []  # (branches spelling one declared name's rest to its closing byte, then its member)
        for b in branches:
            if ti.item(b, 0) == _K.K_SEQ:
                lead, tail = ti.item(b, 1), ti.item(b, 2)
            else:
                lead, tail = b, _K.EPS
            rest = _K.EPS  # (after ``tail``: the branch's rest where ``lead`` is a rule's body's)
            if ti.item(lead, 0) == _K.K_REF:  # a rule: its body
                body = self._rule_body(ti.item(lead, 1))
                if body < 0:
                    return None
                S = a.store
                ti, pool = S[_K.S_TI], S[_K.S_POOL]
                rest = tail
                if ti.item(body, 0) == _K.K_SEQ:
                    lead, tail = ti.item(body, 1), ti.item(body, 2)
                else:
                    lead, tail = body, _K.EPS
            k = ti.item(lead, 0)
            if k == _K.K_KEYS and ti.item(lead, 3) < _K.KD_ESC:
                keys += 1
            elif k == _K_DIFF and xb is None:
                xb = (lead, tail, rest)
            elif k == _K.K_BYTES and rest == _K.EPS:
                chains.append(b)
            else:
                return None
        if xb is None or not (keys or chains):
            return None
        D, Y, rest = xb
        Lx, NR = ti.item(D, 1), ti.item(D, 2)
        fact = free.get(Lx)
        if fact is None:
            return None
        close, escape = fact
        # what follows the key: its closing byte first, then up to _OPEN_KEY_ITEMS items in all
        items, y = self._items(Y, self._OPEN_KEY_ITEMS)
        if not self._is_byte(items[0], close):
            return None
        q = items[0]
        if chains:  # (each must spell a word of ``N``: a declared name's rest, then its closing byte)
            words = self._words(NR)
            if words is None:
                return None
            for b in chains:
                w = self._chain_word(b, close, escape)
                if w is None or w not in words:
                    return None
        got = self._close_of(NR, q, close, escape)
        if got is None:
            return None
        walk, whole = got
        if len(walk) > self._OPEN_KEY_WALKS:
            return None
        bits, exits = self._head_entry(self._head_of(Lx, items))
        out = bits.copy()
        if exits.shape[0]:
            cx = self._cat(y, rest, R)
            if cx != _K.EPS:
                self._walk_exits(exits, a.state(cx), out)
        if whole:
            out &= ~self._close_sets(close, escape)[1]
            self._member_after(t, close, q, out)
        vocab = self._vocab
        for i in walk:  # (each token completing a name: that member's, walked from the state)
            w, bit = i >> 5, np.uint32(1 << (i & 31))
            if a.walk_text(state, vocab.token_bytes(i)) >= 0:
                out[w] |= bit
            else:
                out[w] &= ~bit
        if a.accepting[state]:
            self.set_eos(out)
        return out

    def _chain_word(self, b: int, close: int, escape: int):
        """The bytes term ``b`` spells before its byte ``close`` where it is a chain of single
        bytes, ``SEQ(b1, SEQ(b2, ... SEQ(close, Z)))`` (a rule family writing a declared name's
        rest inline, then its member ``Z``), none of them ``escape``; ``None`` otherwise."""
        S = self._auto.store
        ti = S[_K.S_TI]
        word = bytearray()
        while ti.item(b, 0) == _K.K_SEQ and len(word) < 1024:
            h = ti.item(b, 1)
            if ti.item(h, 0) != _K.K_BYTES:
                return None
            hw = self._words(h)
            if hw is None or len(hw) != 1:
                return None
            c = hw[0][0]
            if c == close:
                return bytes(word)
            if c == escape:
                return None
            word.append(c)
            b = ti.item(b, 2)
        return None

    def _close_of(self, NR: int, q: int, close: int, escape: int):
        """``(ids, whole)``: the tokens (a list) whose text before their first ``close`` byte
        (``q`` its term) not escaped (``escape``) is a non-empty word of term ``NR``, and
        whether ``NR`` holds the empty word; ``None`` where ``NR``'s words are not finitely
        many. Where they are few (:meth:`_words`) they are looked up in the vocabulary's
        table of such texts, else (an object's first key among many names) found by a walk of
        ``NR q`` (with, as a name may hold the closing byte escaped, the tokens holding it
        that are prefixes of a name: they are walked from the state too). Memoized per
        term."""
        got = self._close_memo.get(NR)
        if got is not None:
            return got
        words = self._words(NR)
        if words is not None:
            index = self._close_sets(close, escape)[2]
            ids: list = []
            whole = False
            for w in words:
                if not w:
                    whole = True
                else:
                    hit = index.get(w)
                    if hit is not None:
                        ids.extend(hit)
        elif self._word_memo.get(NR, 0) is not _TOO_MANY:
            return None
        else:  # many names (an object's first key): a walk of them and the closing byte
            a = self._auto
            whole = a.nullable(NR)
            holding, starting, _ = self._close_sets(close, escape)
            sn = a.state(a._run(_K.seq, NR, q))
            cl = self._compute_mask(sn)
            cl &= holding
            ex = self._head_exits(sn)
            if ex.shape[0]:
                sp = self._tries.special
                for node in ex.tolist():  # (every token below a word of N and its closing byte)
                    below = sp.tok_ids[sp.tok_ptr[node]: sp.tok_ptr[sp.subtree_end[node]]].astype(np.int64)
                    set_token_bits(cl, below)
            if whole:
                cl &= ~starting
            from .masks import bit_ids  # (masks imports this module)

            ids = bit_ids(cl).tolist()
        got = (tuple(ids), whole)  # (a tuple of ints: untracked by the collector, as the memo keeps it)
        if len(self._close_memo) >= 4096:
            self._close_memo.clear()
        self._close_memo[NR] = got
        return got

    def _words(self, t: int):
        """The words of term ``t`` (a list of ``bytes``) where it is built of bytes, sequences
        and alternations only and has at most :attr:`_OPEN_KEY_WORDS` of them; ``None``
        otherwise (memoized per term, a name's rests sharing theirs, as the list, ``None``
        for a term of another kind, or :data:`_TOO_MANY`)."""
        memo = self._word_memo
        got = memo.get(t, 0)
        if got != 0:
            return got if type(got) is tuple else None
        S = self._auto.store
        if len(memo) >= 16384:
            memo.clear()
        try:
            got = _term_words(t, S[_K.S_TI], S[_K.S_POOL], S[_K.S_BW], memo, self._OPEN_KEY_WORDS)
        except RecursionError:  # (a deep chain: the state is walked whole)
            return None
        return got if type(got) is tuple else None

    def _member_after(self, t: int, close: int, q: int, out: np.ndarray) -> None:
        """OR into ``out`` the tokens starting with byte ``close`` (``q`` its term) that term
        ``t`` allows, where ``t`` is a key position at a whole name: its derivative by the
        byte is the member after its name, ``ws : ws V next R'`` (or ``K_KEYS(C, p, KD_END)
        R'`` before its tail is made: the tail is made here), read as the head ``close ws :
        ws V`` (``V`` a rule's body: one head per value, every member with that value shares
        it, across indexes where the value names no rule of its own) whose exits are walked
        from ``next R'``."""
        a = self._auto
        dq = a.deriv(t, close)
        if dq == _K.EMPTY:
            return
        S = a.store
        ti = S[_K.S_TI]
        if ti.item(dq, 0) == _K.K_SEQ:
            lead, Rq = ti.item(dq, 1), ti.item(dq, 2)
        else:
            lead, Rq = dq, _K.EPS
        if ti.item(lead, 0) == _K.K_KEYS and ti.item(lead, 3) == _K.KD_END:
            pool = S[_K.S_POOL]
            T = pool.item(ti.item(lead, 1))
            m = pool.item(pool.item(T + _K.KT_MEMBER) + ti.item(lead, 2))
            if pool.item(pool.item(T + _K.KT_ALIVE) + m) < 0:
                a._key_alive(T, m)
                pool = a.store[_K.S_POOL]
            if pool.item(pool.item(T + _K.KT_ALIVE) + m) == 0:
                return
            if pool.item(pool.item(T + _K.KT_TAIL) + m) < 0:
                a._key_tail(T, m)
                pool = a.store[_K.S_POOL]
            tail = pool.item(pool.item(T + _K.KT_TAIL) + m)
            if tail == _K.EMPTY:
                return
            items, y = self._items(tail, self._OPEN_KEY_ITEMS - 1)
            Rq = self._cat(y, Rq)
        else:
            items, Rq = self._items(dq, self._OPEN_KEY_ITEMS - 1)
        bits, exits = self._head_entry(self._head_of(q, items))
        out |= bits
        if exits.shape[0] and Rq != _K.EPS:
            self._walk_exits(exits, a.state(Rq), out)

    def _head_of(self, first: int, items: list) -> int:
        """The term ``first items...``, its last item read through its rule's body
        (:meth:`_body_of`), memoized by the items."""
        items[-1] = self._body_of(items[-1])
        hk = (first, tuple(items))
        h = self._free_heads.get(hk)
        if h is None:
            h = items[-1]
            for it in reversed([first] + items[:-1]):
                h = self._auto._run(_K.seq, it, h)
            if len(self._free_heads) >= 4096:
                self._free_heads.clear()
            self._free_heads[hk] = h
        return h

    def _cat(self, *terms: int) -> int:
        """The sequence of ``terms`` (``EPS`` ones skipped without a kernel call)."""
        out = _K.EPS
        for z in reversed(terms):
            if z != _K.EPS:
                out = z if out == _K.EPS else self._auto._run(_K.seq, z, out)
        return out

    def _items(self, t: int, k: int) -> tuple:
        """The first (at most) ``k`` items of sequence term ``t`` (a list, at least one) and the
        term of the rest (``EPS`` when none)."""
        ti = self._auto.store[_K.S_TI]
        items = []
        while len(items) < k - 1 and ti.item(t, 0) == _K.K_SEQ:
            items.append(ti.item(t, 1))
            t = ti.item(t, 2)
        if ti.item(t, 0) == _K.K_SEQ:
            items.append(ti.item(t, 1))
            return items, ti.item(t, 2)
        items.append(t)
        return items, _K.EPS

    def _body_of(self, t: int) -> int:
        """Term ``t``, or where it is a reference to a rule of this index (numbered past the
        base image's), the rule's body: a head ending with a member's value then names no rule
        of its own when the value's body does not (a ``{"type": "string"}`` member's is the
        JSON string's), so every index of the process shares it (:meth:`_head_entry`)."""
        S = self._auto.store
        if S[_K.S_TI].item(t, 0) != _K.K_REF:
            return t
        i = S[_K.S_TI].item(t, 1)
        if i < len(self._rule_gid):  # (a base image's rule: shared already)
            return t
        body = self._rule_body(i)
        return body if body >= 0 else t

    def _is_byte(self, t: int, b: int) -> bool:
        """Term ``t`` is the one byte ``b``."""
        S = self._auto.store
        if S[_K.S_TI].item(t, 0) != _K.K_BYTES:
            return False
        return tuple(S[_K.S_BW][S[_K.S_TI].item(t, 1)].tolist()) == _BYTE_WORDS[b]

    def _close_sets(self, close: int, escape: int) -> tuple:
        """``(holding, starting, index)`` for the delimiter byte ``close`` (escaped by byte
        ``escape``): the bitsets of the tokens holding it and of those starting with it, and
        the tokens with an unescaped one by their bytes before it (``bytes`` -> ids). Read
        only; once per process, vocabulary and pair of bytes."""
        got = self._close_bits.get((close, escape))
        if got is not None:
            return got
        key = (self._vocab._uid, "close", close, escape)
        got = _CLOSE_TABLES.get(key)
        if got is None:
            from .masks import bit_ids, tokens_holding  # (masks imports this module)

            holding = np.ascontiguousarray(tokens_holding(self._vocab, frozenset((close,)))[: self._n_words])
            starting = np.zeros(self._n_words, dtype=np.uint32)
            vocab = self._vocab
            index: dict = {}
            for i in bit_ids(holding).tolist():
                tb = vocab.token_bytes(i)
                j, esc = 0, False
                for j, c in enumerate(tb):
                    if esc:
                        esc = False
                    elif c == escape:
                        esc = True
                    elif c == close:
                        break
                else:
                    continue  # (every one escaped)
                if j == 0:
                    starting[i >> 5] |= np.uint32(1 << (i & 31))
                index.setdefault(tb[:j], []).append(i)
            holding.flags.writeable = starting.flags.writeable = False
            got = (holding, starting, index)
            if len(_CLOSE_TABLES) > 8:
                _CLOSE_TABLES.clear()
            _CLOSE_TABLES[key] = got
        self._close_bits[(close, escape)] = got
        return got


#: :meth:`OpenKeyMasks._words` of a term with too many words to list
_TOO_MANY = "too many"


def _term_words(x: int, ti, pool, bw, memo: dict, cap: int):
    """The words of term ``x`` (see :meth:`OpenKeyMasks._words`): a tuple, ``None`` (a term of
    another kind than bytes, sequences and alternations) or :data:`_TOO_MANY` (more than
    ``cap``); memoized in ``memo``. (A module function: a nested one calling itself would be a
    reference cycle left at every call. Tuples of bytes, not lists: the collector untracks
    them; as lists, ``Github_ultra---o34345``'s names were 22% of the objects its index left
    to the collector.)"""
    hit = memo.get(x, 0)
    if hit != 0:
        return hit
    k = ti.item(x, 0)
    if k == _K.K_SEQ:
        # a name's spelling is a chain of sequences whose heads spell one word each (a byte),
        # SEQ(b1, SEQ(b2, ... rest)): walked in a loop (a recursive call per byte was most of
        # this function's time), its words those of the chain's end with the heads' before
        # them, every link memoized on the way back (a later key position's names are the
        # chains' tails); a byte's words are memoized per term, shared by every name
        chain = []
        y = x
        while True:
            h = ti.item(y, 1)
            hw = memo.get(h, 0)
            if hw == 0:
                hw = _term_words(h, ti, pool, bw, memo, cap)
            if type(hw) is not tuple or len(hw) != 1:
                break
            chain.append((y, hw[0]))
            y = ti.item(y, 2)
            if memo.get(y, 0) != 0 or ti.item(y, 0) != _K.K_SEQ:
                break
        if chain:
            out = _term_words(y, ti, pool, bw, memo, cap)
            if type(out) is tuple and len(out) > cap:  # (a set of bytes holds up to 4 words)
                out = _TOO_MANY
            for z, w in reversed(chain):
                if type(out) is tuple:
                    out = tuple([w + v for v in out])  # (as many words: within the cap)
                memo[z] = out
            return out
    if x == _K.EPS:
        out = (b"",)
    elif x == _K.EMPTY:
        out = ()
    elif k == _K.K_BYTES:
        out = []
        j = ti.item(x, 1)
        for w in range(4):
            v = bw.item(j, w)
            while v and len(out) <= 4:
                low = v & -v
                out.append(bytes((64 * w + low.bit_length() - 1,)))
                v ^= low
        out = tuple(out) if len(out) <= 4 else None
    elif k == _K.K_SEQ:
        head = _term_words(ti.item(x, 1), ti, pool, bw, memo, cap)
        rest = _term_words(ti.item(x, 2), ti, pool, bw, memo, cap) if type(head) is tuple else head
        if type(head) is not tuple or type(rest) is not tuple:
            out = head if type(head) is not tuple else rest
        elif len(head) * len(rest) > cap:
            out = _TOO_MANY
        else:
            out = tuple([u + v for u in head for v in rest])
    elif k == _K.K_ALT:
        o, n = ti.item(x, 1), ti.item(x, 2)
        if n > cap:
            out = _TOO_MANY
        else:
            got: list = []
            for j in range(n):
                sub = _term_words(pool.item(o + j), ti, pool, bw, memo, cap)
                if type(sub) is not tuple:
                    out = sub
                    break
                if len(got) + len(sub) > cap:
                    out = _TOO_MANY
                    break
                got.extend(sub)
            else:
                out = tuple(got)
    else:
        out = None
    memo[x] = out
    return out
