"""Compile (or load from Numba's on-disk cache) every kernel before the first request."""

from __future__ import annotations

import concurrent.futures
import threading


def warmup(dtypes=("float32",), *, background: bool = False):
    """Run each Numba kernel once on a tiny input, and build the languages of the ``format``
    values the schema compiler supports.

    Nothing compiles at import. A server calls this at start-up so that the first request does
    not pay for loading (or, on the very first run, compiling) the kernels, nor the first schema
    naming ``format: email`` for that format's language; it ends with one full pass of the
    garbage collector (``gc.collect()``), so that the collector's first full pass over the
    objects of start-up does not land in a request. With the Numba cache warm this takes well
    under a second; the first run after install compiles the kernels into the cache
    (``docs/performance.md``, "Cold start", has today's figures).

    Parameters
    ----------
    dtypes : iterable of str
        Logits dtypes whose masking kernels to prepare (one specialization per width: 1, 2, 4
        or 8 bytes; ``"bfloat16"`` is 2). A dtype not named here is compiled on its first
        use, ~1-2 s on a cold cache.
    background : bool
        Run in a daemon thread and return at once. Use it to overlap the compile with loading
        a model: Numba's type inference holds the GIL, its LLVM passes do not. Kernels a
        request needs before the thread is done wait for it (Numba compiles under one lock).

    Returns
    -------
    concurrent.futures.Future or None
        With ``background=True``, a future that completes (or raises) with the warm-up;
        otherwise ``None``.
    """
    dtypes = tuple(dtypes)
    if not background:
        _warmup(dtypes)
        return None
    fut: concurrent.futures.Future = concurrent.futures.Future()

    def run():
        if not fut.set_running_or_notify_cancel():
            return
        try:
            _warmup(dtypes)
        except BaseException as e:  # handed to whoever waits on the future
            fut.set_exception(e)
        else:
            fut.set_result(None)

    threading.Thread(target=run, name="dotjson-warmup", daemon=True).start()
    return fut


def _warmup(dtypes) -> None:
    import gc

    import numpy as np

    from . import ir
    from .automaton import kernels as K
    from .guide import Guide
    from .index import Index
    from .jsonschema.strings import warm_format_languages
    from .processor import LogitsProcessor, warmup_kernels
    from .vocabulary import Vocabulary

    # (the object below needs "{", ":" and "}": a vocabulary that cannot write a document of
    # its schema is refused at Index())
    tokens = ["[", "]", "1", ",", "[1", '"', "a", "é", "\\", "{", "}", ":"]
    vocab = Vocabulary.from_tuples(tokens, list(range(len(tokens))), eos_token_ids=len(tokens))
    # every unit compiled or loaded, not only those the calls below reach (a kernel's first run
    # links what its code calls): no request of a server loads one
    from ._kernels import jit

    jit.link()
    grammar = ir.Grammar(
        {
            "start": ir.alt(
                ir.seq(ir.lit("["), ir.opt(ir.seq(ir.Ref("start"), ir.repeat(ir.seq(ir.lit(","), ir.Ref("start"))))), ir.lit("]")),
                ir.lit("1"),
                ir.seq(ir.lit('"'), ir.repeat(ir.chars((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF))), ir.lit('"')),
                # set operations: the emptiness search runs when the index is built
                ir.And((ir.repeat(ir.chars((0x61, 0x62)), 1, 3), ir.Diff(ir.lit("ab"), ir.lit("b")))),
            )
        }
    )
    index = Index.from_grammar(grammar, vocab)
    guide = Guide(index, batch_size=2)
    processor = LogitsProcessor(guide, -np.inf)
    ts = guide.get_start_tokensets()
    width = vocab.max_token_id()
    if "float32" in dtypes:  # the processor's own path, on the first dtype most callers use
        processor(np.zeros((2, width), dtype=np.float32), ts)
    warmup_kernels(dtypes)
    warm_format_languages()
    ts.num_allowed()
    ts.forced_tokens()
    guide.get_next_tokensets([0, 5])
    index.accepts("[1,[1]]")  # single transitions outside a mask
    index._auto.compile_rules()
    # a JSON Schema object: the key set kernels (a key position decoded natively)
    obj = Index({"type": "object", "properties": {"a": {"type": "integer"}, "é": {}}}, vocab)
    Guide(obj, batch_size=1).get_start_tokensets()
    obj.accepts('{"a":1,"\\u00e9":[1]}')
    # a key position's mask: the names' joint walk (a key set at the mask's root)
    obj.mask(obj.next_state(obj.next_state(obj.initial_state, tokens.index("{")), tokens.index('"')))
    # a string value's mask: the head kernels (interning, a head's bits and exits) and the base
    # image's head ids, which every index of the process shares (~10-20 ms on a first mask)
    state = obj.initial_state
    for text in ("{", '"', "é", '"', ":", '"'):
        state = obj.next_state(state, tokens.index(text))
    obj.mask(state)
    # a counted class at a mask walk's root (a pattern's `[0-9a-f]{8}`): its tables' kernel
    cls = Index({"type": "string", "pattern": "^a{1,3}1$"}, vocab)
    cls.mask(cls.next_state(cls.initial_state, tokens.index('"')))
    # the store's growth: its rehashing kernels (a wide schema's first requests grow the store)
    auto = obj._auto
    # what the rule families of arrays of distinct values call from Python: one transition, a
    # sequence and an alternation of terms (each ~10 ms of loading in a request otherwise)
    start = obj.initial_state
    auto.fill_entry(start, ord("}"))
    # (and a text walked byte by byte, as an array of distinct objects asks of a member's key:
    # ~7 ms of loading at such a schema's first mask otherwise)
    auto.walk_bytes(start, b'{"a":1')
    # a head interner's table rehashed, as the process's grows (its first hundreds of heads):
    # on a small one of its own
    from .automaton.heads import Interner

    Interner(cap=4)._rehash(16)
    t0 = auto.term_of(start)
    auto._run(K.alt, np.asarray([t0, t0], dtype=np.int32), 2)
    auto._run(K.seq, t0, t0)
    with auto.lock:
        auto._grow(K.NEED_GROW_TERMS, 0)
        auto._grow(K.NEED_GROW_MEMO, 0)
    # One full pass of CPython's cycle collector now, over what start-up made (the tokenizer,
    # the model, the kernels: ~300,000 objects, ~0.15 s): the collector's first full pass of the
    # process otherwise comes after a few thousand young collections, inside some request. Only
    # the collection is run; no setting of the collector changes.
    del index, guide, processor, ts, obj, cls, auto
    gc.collect()
