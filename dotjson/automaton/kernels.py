"""The engine's kernels, one namespace: the term store and every algorithm over it.

Numba kernels over a store of terms (byte-level regular expressions with rule references,
interned by structure) held in flat arrays. One concept per module:

* :mod:`.store` — the store's layout (term kinds, flags, memo columns, the slots of the store
  tuple, exit statuses, memo key tags), ``borrow``, hashing and the memo table;
* :mod:`.terms` — interning constructors (``seq``, ``alt``, ``rep``, ...) and the builder program
  that compiles a rule body (``build``);
* :mod:`.keysets` — the key position of a wide object as one term kind (``K_KEYS``);
* :mod:`.derive` — single-byte derivatives; :mod:`.rows` — derivative classes (rows);
* :mod:`.emptiness` — emptiness and infiniteness; :mod:`.clamp` — clamped mask keys and radii;
* :mod:`.states` — automaton states, transitions, plain invariance and plain runs.

The modules form a chain (each imports only those before it in this list). Callers import this
namespace (``from dotjson.automaton import kernels as K``); it holds the names they use.

The store is a tuple of flat arrays (see :mod:`.store` for the layout), passed
whole to every kernel. Every kernel is iterative with explicit stacks (a chain of 10,000 rules
costs a deeper stack array, never a deeper native stack), releases the GIL, and never raises:
a function that cannot finish returns ``FAIL`` (``-1``) after writing the reason into
``ctl[C_STATUS]`` and its argument into ``ctl[C_ARG]``:

* ``NEED_GROW_*``: an array is full; Python grows it (×2) and calls again;
* ``NEED_RULE``: a rule body (``ctl[C_ARG]``) is not compiled yet; Python compiles it, calls again;
* ``NEED_KEY_ALIVE`` / ``NEED_KEY_TAIL``: whether member ``ctl[C_ARG2]`` of the key set at pool
  offset ``ctl[C_ARG]`` can complete, or the term of what follows its name, is not known yet
  (the members the builder vouches for are written with the table: only the others are
  asked); Python answers (it builds the member's rule), calls again;
* ``LIMIT_STATES`` / ``LIMIT_FUEL``: a budget is spent; Python raises ``LimitExceededError``.

Interning is idempotent and memo entries are written only once complete, so a call restarted
from scratch after an exit redoes nothing it had finished and builds the same terms.
"""

from __future__ import annotations

from .store import (  # noqa: F401
    _T_ACLS, _T_CCLS, _T_CREACH, _T_REACH, _T_PRUN, INV_NO_RUN, K_BYTES, S_ACC, S_BW, BAND, C_ARG, C_ARG2, C_ARG3, C_ARG4, C_BSETS, C_EXPANDED, C_FUEL, C_MAX_STATES, C_POOL,
    C_STATES, C_STATUS, C_TERMS, DEAD, EMPTY, EPS, FAIL, F_BOOL, F_NULL, F_REP, F_FAR, FAR_MIN, INF, K_ALT,
    K_AND, K_KEYS, K_REF, K_REP, K_SEQ, LIMIT_FUEL, LIMIT_STATES, M_HASH, M_ROW_LEN, M_ROW_OFF, M_STATE,
    NEED_GROW_BSETS, NEED_GROW_MEMO, NEED_GROW_POOL, NEED_GROW_RC, NEED_GROW_STATES,
    NEED_GROW_TERMS, NEED_KEY_ALIVE, NEED_KEY_TAIL, NEED_RULE, N_CTL, N_TM, RUN_INF, STORE, S_RULE,
    S_INV, S_POOL, S_READY, S_TERM_OF, S_TF, S_TI, S_TRANS, TERM_ID_BITS, UNKNOWN, _I32_1, _I32_3,
    _I64_1, _grow_i32, _i64, _mget, _mput, _mslot, borrow, scratch, rehash_memo, rehash_stored, rehash_terms,
    term_hash, PACKED, pack, pack_store, packed, packed_size, unpack_store, unpacker,
)
from .terms import (  # noqa: F401
    OP_ALT, OP_AND, OP_BYTES, OP_DIFF, OP_EMPTY, OP_EPS, OP_LOAD, OP_REF, OP_REP, OP_SAVE, OP_SEQ,
    OP_TERM, alt, build, mk_bytes, mk_simple, rep, seq, seq_list,
)
from .keysets import (  # noqa: F401
    KD_END, KD_ESC, KT_ALIVE, KT_BLOB, KT_FULL, KT_MEMBER, KT_N, KT_TAIL, N_KT, keys_register,
    keys_root,
)
from .derive import (  # noqa: F401
    _deriv, _has, deriv,
)
from .rows import (  # noqa: F401
    _row, row,
)
from .emptiness import (  # noqa: F401
    is_empty,
)
from .emptiness import _empty_known as empty_known  # noqa: F401
from .clamp import (  # noqa: F401
    clamp,
)
from .states import (  # noqa: F401
    RUN_BYTES_MAX, byte_run, class_run, fill_entry, fill_row, fill_rows, plain_inv, plain_open, plain_run,
    run_head, run_len, state, walk_bytes_packed, walk_terms_packed,
)
