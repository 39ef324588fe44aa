"""The vocabulary's byte tries, in flat arrays the Numba kernels walk.

Two tries are built per vocabulary: ``plain`` holds the tokens whose bytes are plain JSON string
content (complete UTF-8 characters, none of them ``"``, ``\\`` or a control character below
U+0020); ``special`` holds every other emittable token. Inside a JSON string body a state is
usually unchanged by any plain character, so a walk of the plain trie can stop at the first node
whose state is plain-invariant and take that node's whole subtree at once; only the ~4% special
tokens need a real walk there.

Layout of one :class:`TokenTrie` (nodes numbered in pre-order, root 0, children sorted by byte):

- ``child_ptr[n] .. child_ptr[n+1]`` index ``child_byte`` / ``child_node``: the edges of node ``n``.
- ``tok_ptr[n] .. tok_ptr[n+1]`` index ``tok_ids``: the ids whose bytes end exactly at ``n``
  (several ids may share the same bytes).
- ``subtree_end[n]``: the subtree of ``n`` is the node range ``[n, subtree_end[n])``, so its token
  ids are ``tok_ids[tok_ptr[n] : tok_ptr[subtree_end[n]]]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_NON_PLAIN_ASCII = frozenset(range(0x20)) | {0x22, 0x5C}


@dataclass(frozen=True)
class TokenTrie:
    child_ptr: np.ndarray  # int32[n_nodes + 1]
    child_byte: np.ndarray  # uint8[n_edges]
    child_node: np.ndarray  # int32[n_edges]
    tok_ptr: np.ndarray  # int32[n_nodes + 1]
    tok_ids: np.ndarray  # int32[n_entries]
    subtree_end: np.ndarray  # int32[n_nodes]

    @property
    def n_nodes(self) -> int:
        return int(self.subtree_end.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "child_ptr": self.child_ptr,
            "child_byte": self.child_byte,
            "child_node": self.child_node,
            "tok_ptr": self.tok_ptr,
            "tok_ids": self.tok_ids,
            "subtree_end": self.subtree_end,
        }


@dataclass(frozen=True)
class VocabTries:
    """Both tries of a vocabulary plus the plain-token bitset.

    Attributes
    ----------
    plain, special : TokenTrie
    plain_bits : numpy.ndarray
        ``uint32[n_words]``: bit ``t`` set when token ``t`` is in the plain trie.
    n_words : int
        ``(max_token_id + 31) // 32``: words per packed token bitset.
    max_len : int
        Longest token, in bytes.
    """

    plain: TokenTrie
    special: TokenTrie
    plain_bits: np.ndarray
    n_words: int
    max_len: int


def is_plain(b: bytes) -> bool:
    """True when ``b`` is non-empty plain JSON string content (see module docstring)."""
    if not b:
        return False
    if any(x in _NON_PLAIN_ASCII for x in b):
        return False
    try:
        b.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        return False
    return True


def build_trie(items: list[tuple[bytes, int]]) -> TokenTrie:
    """Build one trie from ``(token_bytes, token_id)`` pairs (empty byte strings are skipped)."""
    items = sorted((b, i) for b, i in items if b)
    child_ptr: list[int] = []
    tok_ptr: list[int] = []
    tok_ids: list[int] = []
    subtree_end: list[int] = []
    # Pre-order construction from sorted keys: a stack of (node, depth) on the current path.
    node_edges: list[list[tuple[int, int]]] = [[]]
    node_toks: list[list[int]] = [[]]
    path = [0]  # node ids along the current key
    prev = b""
    for key, tid in items:
        lcp = 0
        m = min(len(prev), len(key))
        while lcp < m and prev[lcp] == key[lcp]:
            lcp += 1
        del path[lcp + 1 :]
        for d in range(lcp, len(key)):
            nid = len(node_edges)
            node_edges.append([])
            node_toks.append([])
            node_edges[path[-1]].append((key[d], nid))
            path.append(nid)
        node_toks[path[len(key)]].append(tid)
        prev = key
    n = len(node_edges)
    # Nodes were created in pre-order already (sorted keys, depth-first creation).
    end = list(range(1, n + 1))
    for nid in range(n - 1, -1, -1):
        for _, c in node_edges[nid]:
            if end[c] > end[nid]:
                end[nid] = end[c]
    cb: list[int] = []
    cn: list[int] = []
    for nid in range(n):
        child_ptr.append(len(cb))
        for byte, c in node_edges[nid]:
            cb.append(byte)
            cn.append(c)
        tok_ptr.append(len(tok_ids))
        tok_ids.extend(node_toks[nid])
    child_ptr.append(len(cb))
    tok_ptr.append(len(tok_ids))
    subtree_end = end
    return TokenTrie(
        child_ptr=np.asarray(child_ptr, dtype=np.int32),
        child_byte=np.asarray(cb, dtype=np.uint8),
        child_node=np.asarray(cn, dtype=np.int32),
        tok_ptr=np.asarray(tok_ptr, dtype=np.int32),
        tok_ids=np.asarray(tok_ids, dtype=np.int32),
        subtree_end=np.asarray(subtree_end, dtype=np.int32),
    )


def build_vocab_tries(token_bytes: list[tuple[bytes, int]], max_token_id: int) -> VocabTries:
    """Split emittable tokens into plain and special and build both tries.

    Parameters
    ----------
    token_bytes : list of (bytes, int)
        Every emittable (non-special, non-EOS) token's exact output bytes and its id.
    max_token_id : int
        One past the largest id (the logits width).
    """
    plain_items = []
    special_items = []
    max_len = 0
    for b, i in token_bytes:
        if not b:
            continue
        max_len = max(max_len, len(b))
        (plain_items if is_plain(b) else special_items).append((b, i))
    n_words = (max_token_id + 31) // 32
    plain_bits = np.zeros(n_words, dtype=np.uint32)
    if plain_items:
        ids = np.asarray([i for _, i in plain_items], dtype=np.int64)
        np.bitwise_or.at(plain_bits, ids >> 5, (np.uint32(1) << (ids & 31).astype(np.uint32)))
    return VocabTries(
        plain=build_trie(plain_items),
        special=build_trie(special_items),
        plain_bits=plain_bits,
        n_words=n_words,
        max_len=max_len,
    )
