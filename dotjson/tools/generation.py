"""Decoding with a model under dotjson's mask: prompts, the one-document and batched loops, sampling,
and the JSON text they print.

The command line (:mod:`dotjson.tools.cli`) and the end-to-end benchmarks (``perf/``) decode
through these functions; they load nothing themselves (models come from
:mod:`dotjson.tools.models`).
"""

from __future__ import annotations

from . import CLIError

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "chat_prompt_ids",
    "generate_json",
    "generate_batch",
    "pretty_json",
]


#: The system message of ``generate`` (``--system`` replaces it); ``{schema}`` becomes the schema.
DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant that answers only with a JSON document, with no other text. "
    "The document must be valid for this JSON Schema:\n{schema}"
)



def chat_prompt_ids(tokenizer, schema_text: str, prompt: str, *, system: str | None = None,
                    chat_template: bool = True) -> list[int]:
    """Token ids of the prompt.

    Parameters
    ----------
    tokenizer : transformers tokenizer
    schema_text : str
        Replaces ``{schema}`` in the system message.
    prompt : str
        The user's message.
    system : str, optional
        The system message (default :data:`DEFAULT_SYSTEM_PROMPT`: asks for JSON valid for the
        schema, and quotes it). ``""``: no system message.
    chat_template : bool
        Apply the tokenizer's chat template (when it has one). ``False``: the system text, a
        blank line and the prompt, as plain text.
    """
    system = DEFAULT_SYSTEM_PROMPT if system is None else system
    system = system.replace("{schema}", schema_text.strip())
    if chat_template and getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    text = f"{system}\n\n{prompt}\n" if system else f"{prompt}\n"
    return list(tokenizer(text)["input_ids"])


def _model_io(lm):
    import inspect

    # transformers 5 names the cache argument `cache`, 4.x `past_key_values`
    params = inspect.signature(lm.forward).parameters
    cache_kw = "cache" if "cache" in params else "past_key_values"
    extra = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
    return cache_kw, extra


def generate_json(lm, index, vocabulary, prompt_ids, *, max_new_tokens: int = 256,
                  temperature: float = 0.0, top_p: float = 1.0, top_k: int = 0, seed: int = 0,
                  repetition_penalty: float = 1.0, progress=None,
                  on_token=None) -> tuple[str, list[int], bool]:
    """Decode one document with ``lm`` under ``index``'s constraint.

    After each sampled token, the model's forward pass runs on this thread while a worker thread
    computes the next token set (dotjson's kernels release the GIL). A token that is forced
    (exactly one allowed) is taken without a forward pass: forced tokens are queued and fed to the
    next forward pass together. The model's KV cache is kept across steps.

    Parameters
    ----------
    lm : transformers causal LM (CPU, eval mode)
    index : dotjson.Index
    vocabulary : dotjson.Vocabulary
        The vocabulary ``index`` was built with (its EOS ids end the document).
    prompt_ids : list of int
    max_new_tokens : int
    temperature : float
        0 for greedy decoding; otherwise sampling from ``softmax(logits / temperature)``.
    top_p, top_k : float, int
        Nucleus and top-k filtering of the sampled distribution (1.0 and 0: off).
    seed : int
        Seed of the sampler.
    repetition_penalty : float
        ``transformers``' rule: the logit of every token generated so far is divided by it when
        positive, multiplied when negative (1.0: off). Forced tokens count too.
    progress : tqdm-like, optional
        Updated once per generated token.
    on_token : callable, optional
        Called with the bytes of each generated token (not EOS) as soon as it is chosen.

    Returns
    -------
    (text, token_ids, finished) : the decoded text (without EOS), the generated ids (with EOS when
    finished), and whether the document was completed within ``max_new_tokens``.
    """
    from concurrent.futures import ThreadPoolExecutor

    import torch
    from transformers import DynamicCache

    from dotjson import Guide, LogitsProcessor

    guide = Guide(index, batch_size=1)
    processor = LogitsProcessor(guide, float("-inf"))
    eos_ids = {int(t) for t in vocabulary.eos_token_ids}
    generator = torch.Generator().manual_seed(int(seed))
    cache_kw, extra = _model_io(lm)
    kv_cache = DynamicCache()

    def forward(ids: list[int]):
        with torch.no_grad():
            out = lm(torch.tensor([ids], dtype=torch.long), use_cache=True,
                     **{cache_kw: kv_cache}, **extra)
        return out.logits[:, -1, :].float().contiguous()

    def emit(token: int) -> None:
        if progress is not None:
            progress.update(1)
        if on_token is not None and token not in eos_ids:
            on_token(vocabulary.token_bytes(token))

    generated: list[int] = []
    pending = list(prompt_ids)  # fed to the model before the next logits are valid
    logits = None
    finished = False
    with ThreadPoolExecutor(max_workers=1) as pool:
        token_set = guide.get_start_tokensets()
        while len(generated) < max_new_tokens:
            token = int(token_set.forced_tokens()[0])  # -1 unless exactly one is allowed
            if token >= 0:
                generated.append(token)
                emit(token)
                if token in eos_ids:
                    finished = True
                    break
                pending.append(token)
                logits = None
                token_set = guide.get_next_tokensets([token])
                continue
            if int(token_set.num_allowed()[0]) == 0:
                raise CLIError("dotjson allowed no token: the guide reached a dead state")
            if pending:
                logits = forward(pending)
                pending = []
            _penalize(logits[0], generated, repetition_penalty)
            processor(logits, token_set)
            token = _choose(logits[0], temperature, top_p, top_k, generator)
            generated.append(token)
            emit(token)
            if token in eos_ids:
                finished = True
                break
            if len(generated) >= max_new_tokens:
                break
            future = pool.submit(guide.get_next_tokensets, [token])
            logits = forward([token])  # overlaps the token-set computation
            token_set = future.result()
    text = b"".join(vocabulary.token_bytes(t) for t in generated if t not in eos_ids)
    return text.decode("utf-8", errors="replace"), generated, finished


def generate_batch(lm, index, vocabulary, prompt_ids, n: int, *, max_new_tokens: int = 256,
                   temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0, seed: int = 0,
                   repetition_penalty: float = 1.0,
                   progress=None) -> list[tuple[str, list[int], bool]]:
    """Decode ``n`` documents for one prompt as a batch (one forward pass per step for all rows).

    Every row starts from the same prompt, so no padding is needed; a row that has sampled EOS
    is fed EOS (the only token its guide row allows) until every row is done. Parameters as for
    :func:`generate_json`; ``progress`` is updated once per step.

    Returns
    -------
    list of (text, token_ids, finished), one per row.
    """
    import torch
    from transformers import DynamicCache

    from dotjson import Guide, LogitsProcessor

    guide = Guide(index, batch_size=n)
    processor = LogitsProcessor(guide, float("-inf"))
    eos_ids = {int(t) for t in vocabulary.eos_token_ids}
    eos = int(vocabulary.eos_token_ids[0])
    generator = torch.Generator().manual_seed(int(seed))
    cache_kw, extra = _model_io(lm)
    kv_cache = DynamicCache()

    def forward(batch: list[list[int]]):
        with torch.no_grad():
            out = lm(torch.tensor(batch, dtype=torch.long), use_cache=True,
                     **{cache_kw: kv_cache}, **extra)
        return out.logits[:, -1, :].float().contiguous()

    rows: list[list[int]] = [[] for _ in range(n)]
    done = [False] * n
    token_set = guide.get_start_tokensets()
    logits = forward([list(prompt_ids)] * n)
    for _ in range(max_new_tokens):
        for r in range(n):
            _penalize(logits[r], rows[r], repetition_penalty)
        processor(logits, token_set)
        step = []
        for r in range(n):
            if done[r]:
                step.append(eos)
                continue
            t = _choose(logits[r], temperature, top_p, top_k, generator)
            rows[r].append(t)
            done[r] = t in eos_ids
            step.append(t)
        if progress is not None:
            progress.update(1)
        if all(done):
            break
        token_set = guide.get_next_tokensets(step)
        logits = forward([[t] for t in step])
    out = []
    for r in range(n):
        text = b"".join(vocabulary.token_bytes(t) for t in rows[r] if t not in eos_ids)
        out.append((text.decode("utf-8", errors="replace"), rows[r], done[r]))
    return out


def _penalize(logits_row, generated: list[int], penalty: float) -> None:
    """``transformers``' repetition penalty, in place, on the tokens generated so far."""
    if penalty == 1.0 or not generated:
        return
    import torch

    ids = torch.tensor(sorted(set(generated)), dtype=torch.long)
    ids = ids[ids < logits_row.shape[0]]
    x = logits_row[ids]
    logits_row[ids] = torch.where(x > 0, x / penalty, x * penalty)


def _choose(logits_row, temperature: float, top_p: float, top_k: int, generator) -> int:
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits_row))
    x = logits_row / temperature
    if top_k and top_k < x.numel():
        kth = torch.topk(x, top_k).values[-1]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, dim=-1)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = (torch.cumsum(sorted_p, 0) - sorted_p) < top_p  # the smallest set reaching top_p
        kept = torch.zeros_like(probs)
        kept[order[keep]] = probs[order[keep]]
        probs = kept / kept.sum()
    return int(torch.multinomial(probs, 1, generator=generator))


def pretty_json(text: str, indent: int = 2) -> str:
    """Indent a JSON text without re-serializing it: numbers and string escapes stay exactly as
    the model wrote them (``json.dumps(json.loads(...))`` would round ``0.1000000000000000055``
    and rewrite ``\\u00e9``). Whitespace outside strings is replaced."""
    out: list[str] = []
    depth, i, n, in_str = 0, 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c in "{[":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":  # an empty container stays on its line
                out.append(c + text[j])
                i = j
            else:
                depth += 1
                out.append(c + "\n" + " " * (indent * depth))
        elif c in "}]":
            depth -= 1
            out.append("\n" + " " * (indent * depth) + c)
        elif c == ",":
            out.append(",\n" + " " * (indent * depth))
        elif c == ":":
            out.append(": ")
        elif c not in " \t\r\n":
            out.append(c)
        i += 1
    return "".join(out)


def _compact_json(text: str) -> str:
    out, in_str, esc = [], False, False
    for c in text:
        if in_str:
            out.append(c)
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c not in " \t\r\n":
            out.append(c)
    return "".join(out)
