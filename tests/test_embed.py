"""JSON inside text (dotjson/embed.py): %json rules in Lark grammars, the Python form, tool calls
with triggers, reasoning before a schema; with the shipped real tokenizers."""

from __future__ import annotations

import json

import pytest

from dotjson import Guide, Index, JsonSchema
from dotjson.errors import GrammarError, SchemaError, UnsupportedSchemaError

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}

LARK_ANSWER = """
start: "Answer: " data
data: %json {
  "type": "object",
  "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
  "required": ["a"]
}
"""


def _ids(tokenizer, text: str) -> list[int]:
    enc = tokenizer.encode(text, add_special_tokens=False)
    return list(getattr(enc, "ids", enc))


def _force(index: Index, vocab, ids):
    """``(n, finished)``: how many tokens were allowed before the first refused one (``len(ids)``
    if none), and whether EOS was allowed after all of them."""
    guide = Guide(index, 1)
    ts = guide.get_start_tokensets()
    for i, t in enumerate(ids):
        if not ts.contains(t)[0]:
            return i, False
        ts = guide.get_next_tokensets([t])
    return len(ids), bool(ts.contains(vocab.eos_token_ids[0])[0])


def _first_bad_token(tokenizer, text: str, good_prefix: str) -> int:
    """The index of the token holding the first byte past ``good_prefix`` (where a guide must
    refuse)."""
    ids = _ids(tokenizer, text)
    n, pos = len(good_prefix.encode()), 0
    for i, t in enumerate(ids):
        pos += len(tokenizer.decode([t]).encode())
        if pos > n:
            return i
    raise AssertionError("the text is a prefix of the good part")


# ----------------------------------------------------------------------------- %json in Lark


def test_json_in_lark_accepts_exactly_the_schema(smollm2_vocab):
    ix = Index.from_lark(LARK_ANSWER, smollm2_vocab)
    assert ix.accepts('Answer: {"a": 1}')
    assert ix.accepts('Answer: {"a":-3,"b":"x"}')
    assert not ix.accepts('Answer: {"b":"x"}')          # a required
    assert not ix.accepts('Answer: {"a": 1, "c": 2}')   # closed object (the default)
    assert not ix.accepts('{"a": 1}')
    assert ix.is_prefix('Answer: {"a"')
    assert "j1_" in ix.grammar and 'start: "Answer: " data' in ix.grammar


@pytest.mark.parametrize("name", ["smollm2", "llama3", "qwen"])
def test_json_in_lark_teacher_forced(request, name):
    tok, vocab = request.getfixturevalue(f"{name}_tokenizer"), request.getfixturevalue(f"{name}_vocab")
    g = LARK_ANSWER.replace('start: "Answer: " data', 'start: "Answer: " data (" and " other)?') + \
        'other: %json {"type": "array", "items": {"enum": ["x", "y"]}}\n'
    ix = Index.from_lark(g, vocab)
    for doc in ('Answer: {"a": 12, "b": "hi"}', 'Answer: {"a": 1} and ["x", "y"]'):
        ids = _ids(tok, doc)
        assert _force(ix, vocab, ids) == (len(ids), True)
    bad = 'Answer: {"a": 1} and ["x", "z"]'
    assert _force(ix, vocab, _ids(tok, bad))[0] == _first_bad_token(tok, bad, 'Answer: {"a": 1} and ["x", "')
    # not complete: no EOS
    ids = _ids(tok, 'Answer: {"a": 1')
    assert _force(ix, vocab, ids) == (len(ids), False)


def test_json_in_lark_is_compiled_lazily(smollm2_vocab):
    props = {f"p{i}": {"type": "object", "properties": {"x": {"type": "integer"}}} for i in range(200)}
    g = "start: \"A\" one | \"B\" two\none: %json " + json.dumps({"type": "object", "properties": props}) + \
        "\ntwo: %json {\"type\": \"integer\"}\n"
    ix = Index.from_lark(g, smollm2_vocab)
    ix.mask(ix.initial_state)
    s = ix.next_state(ix.initial_state, _one_token(smollm2_vocab, "B"))
    assert s >= 0 and ix.n_states > 0
    # the 200-property object's rules are never built: only what "B" reaches is
    assert ix.ir.rules.n_built < 40


def _one_token(vocab, text: str) -> int:
    b = text.encode()
    for t in range(vocab.max_token_id()):
        if vocab.token_bytes(t) == b:
            return t
    raise AssertionError(text)


def test_json_options_per_schema(smollm2_vocab):
    g = """
start: compact " " loose " " open_obj
compact: %json {"type": "array", "items": {"type": "integer"}, "x-dotjson": {"disallow_whitespace": true}}
loose: %json {"type": "array", "items": {"type": "integer"}, "x-dotjson": {"whitespace": "json"}}
open_obj: %json {"type": "object", "properties": {"a": {"type": "integer"}},
                 "x-dotjson": {"close_objects": false, "property_order": "any"}}
"""
    ix = Index.from_lark(g, smollm2_vocab)
    assert ix.accepts('[1,2] [ 1 ,\n\n  2 ] {"b": true, "a": 1}')
    assert not ix.accepts('[1, 2] [1] {}')                   # the first is compact
    assert ix.accepts('[1,2] [\n\n\n1] {}')                    # the second takes any JSON whitespace
    # the default (bounded) whitespace of another schema still refuses a blank line
    ix2 = Index.from_lark('start: a " " b\na: %json {"type": "array"}\n'
                          'b: %json {"type": "array", "x-dotjson": {"whitespace": "json"}}\n', smollm2_vocab)
    assert ix2.accepts('[ ] [\n\n]') and not ix2.accepts('[\n\n] [ ]')


def test_python_form_and_user_rules_named_like_json_rules(smollm2_vocab):
    # the grammar's own `ws` and `json_value` are not the JSON base rules of the schemas
    g = 'start: x ws y\nws: "W"\njson_value: "V"\n'
    ix = Index.from_lark(g, smollm2_vocab, schemas={
        "x": {"type": "integer"},
        "y": JsonSchema({"type": "array", "items": {"type": "boolean"}}, disallow_whitespace=True),
    })
    assert ix.accepts("1W[true,false]")
    assert not ix.accepts("1W[true, false]")
    assert not ix.accepts("1 [true]")
    with pytest.raises(GrammarError, match="defined both"):
        Index.from_lark('start: x\nx: "a"\n', smollm2_vocab, schemas={"x": {"type": "integer"}})
    with pytest.raises(GrammarError, match="not a Lark rule name"):
        Index.from_lark('start: "a"\n', smollm2_vocab, schemas={"Bad-Name": {}})


def test_errors_point_into_grammar_and_schema(smollm2_vocab):
    bad_json = 'start: "a" data\n\ndata: %json {"type": "object",\n  "properties": {"a" 1}}\n'
    with pytest.raises(GrammarError, match=r"%json at line 3: the schema is not valid JSON: .* line 4, column 22"):
        Index.from_lark(bad_json, smollm2_vocab)
    with pytest.raises(GrammarError, match=r"line 2, column 7: expected a JSON object"):
        Index.from_lark('start: "a" data\ndata: %json [1]\n', smollm2_vocab)
    bad_schema = 'start: data\ndata:   %json {"type": "object", "properties": {"a": {"type": "intger"}}}\n'
    with pytest.raises(SchemaError, match=r"%json at line 2, column 9: .*intger") as e:
        Index.from_lark(bad_schema, smollm2_vocab)
    assert e.value.pointer == "/properties/a/type"
    with pytest.raises(UnsupportedSchemaError, match=r"schema of rule 'x': ") as e:
        # (an unevaluatedProperties past 64 evaluated sets: format regex compiles since issue 29)
        Index.from_lark('start: x\n', smollm2_vocab, schemas={"x": {
            "anyOf": [{"properties": {f"k{i}": {}}} for i in range(7)], "unevaluatedProperties": False}})
    assert e.value.keyword == "unevaluatedProperties"
    with pytest.raises(SchemaError, match=r"unknown option 'closed'"):
        Index.from_lark('start: %json {"x-dotjson": {"closed": true}}\n', smollm2_vocab)
    # Lark's own errors still name the lines as written after a multi-line schema
    with pytest.raises(GrammarError, match=r"line 6"):
        Index.from_lark('start: data\ndata: %json {\n "type":\n "integer"\n}\nbad: ( "x"\n', smollm2_vocab)


def test_json_inside_strings_regexes_and_comments_is_text(smollm2_vocab):
    g = 'start: "%json {" data "}" /%json [a-z]/ // %json {not json\ndata: %json {"const": 1}\n'
    ix = Index.from_lark(g, smollm2_vocab)
    assert ix.accepts("%json {1}%json q")


def test_json_in_lark_saved_and_reloaded(smollm2_vocab, tmp_path):
    ix = Index.from_lark(LARK_ANSWER, smollm2_vocab)
    ix.mask(ix.initial_state)
    ix.serialize_to_disk(tmp_path / "ix")
    ix2 = Index.deserialize_from_disk(tmp_path / "ix", smollm2_vocab)
    for doc in ('Answer: {"a": 1}', 'Answer: {"b": "x"}', 'Answer: {"a": 2, "b": "y"}'):
        assert ix2.accepts(doc) == ix.accepts(doc)
    assert ix2.accepts('Answer: {"a": 1}')


# ----------------------------------------------------------------------------- tool calls

ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
       "required": ["a", "b"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "add", "parameters": ADD}}]

CALLS = {
    "hermes": ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
               '</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'),
    "llama3": 'Sure. {"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}',
    "mistral": '[TOOL_CALLS][{"name": "add", "arguments": {"a": -4, "b": 2}}]',
}
BAD_CALLS = {  # (document, the prefix that is still fine)
    "hermes": ('<tool_call>\n{"name": "get_weather", "arguments": {"city": 5}}\n</tool_call>',
               '<tool_call>\n{"name": "get_weather", "arguments": {"city": '),
    "llama3": ('{"name": "get_time", "parameters": {}}', '{"name": "get_'),
    "mistral": ('[TOOL_CALLS][{"name": "add", "arguments": {"a": 1}}]',
                '[TOOL_CALLS][{"name": "add", "arguments": {"a": 1'),
}


@pytest.fixture(params=["smollm2", "llama3", "qwen"])
def tok_vocab(request):
    return (request.getfixturevalue(f"{request.param}_tokenizer"),
            request.getfixturevalue(f"{request.param}_vocab"))


@pytest.mark.parametrize("family", sorted(CALLS))
def test_tool_calls_teacher_forced(tok_vocab, family):
    tok, vocab = tok_vocab
    ix = Index.from_tools(TOOLS, vocab, family=family)
    doc = CALLS[family]
    assert _force(ix, vocab, _ids(tok, doc)) == (len(_ids(tok, doc)), True)
    bad, good = BAD_CALLS[family]
    ids = _ids(tok, bad)
    assert _force(ix, vocab, ids)[0] == _first_bad_token(tok, bad, good)


def test_trigger_across_token_boundaries(smollm2_tokenizer, smollm2_vocab):
    tok, vocab = smollm2_tokenizer, smollm2_vocab
    ix = Index.from_tools(TOOLS, vocab)
    doc = CALLS["hermes"]
    # the document cut into pieces tokenized alone: token boundaries fall inside the triggers
    for cuts in ([3, 16, 20], [15, 17, 19, 90, 101], list(range(0, len(doc), 2))):
        ids, prev = [], 0
        for c in cuts + [len(doc)]:
            ids += _ids(tok, doc[prev:c])
            prev = c
        assert _force(ix, vocab, ids) == (len(ids), True)
    # once a trigger is written, only the tags' texts go on: no free text, no EOS
    s = ix.initial_state
    for t in _ids(tok, "Hi <tool_") + _ids(tok, "call>"):
        s = ix.next_state(s, t)
    assert s >= 0 and not ix.is_accepting(s)
    assert ix.next_state(s, _ids(tok, "Hello")[0]) < 0


def test_end_tag_inside_a_string_and_eos(qwen_tokenizer, qwen_vocab):
    tok, vocab = qwen_tokenizer, qwen_vocab
    ix = Index.from_tools(TOOLS, vocab)
    doc = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "</tool_call> <tool_call>"}}\n</tool_call>'
    assert ix.accepts(doc) and ix.accepts(doc + " and text after")
    assert not ix.accepts(doc[:-3])
    guide = Guide(ix, 1)
    ts = guide.get_start_tokensets()
    eos = vocab.eos_token_ids[0]
    assert ts.contains(eos)[0]                       # free text may end at once
    for t in _ids(tok, doc):
        ts = guide.get_next_tokensets([t])
        if guide.states[0] >= 0 and not ix.is_accepting(guide.states[0]):
            assert not ts.contains(eos)[0]
    assert ts.contains(eos)[0]
    assert ix.check(_ids(tok, doc[:40]) + [eos]).reason == "rejected"


def test_max_calls_and_calls_only(smollm2_vocab):
    one = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    ix = Index.from_tools(TOOLS, smollm2_vocab, max_calls=1)
    assert ix.accepts(one) and ix.accepts(one + " <tool_call>\n{not a call")   # text after the last
    assert not Index.from_tools(TOOLS, smollm2_vocab).accepts(one + " <tool_call>\n{not a call")
    only = Index.from_tools(TOOLS, smollm2_vocab, text=False, max_calls=2)
    assert only.accepts(one) and only.accepts(one + one)
    assert not only.accepts(one + one + one) and not only.accepts("x" + one) and not only.accepts("")
    with pytest.raises(GrammarError, match="max_calls"):
        Index.from_tools(TOOLS, smollm2_vocab, max_calls=0)


def test_tags_with_triggers(smollm2_vocab):
    tags = [("<function=get_weather>", WEATHER, "</function>"), ("<function=add>", ADD, "</function>")]
    ix = Index.from_tags(tags, smollm2_vocab, triggers=["<function="])
    assert ix.accepts('ok <function=add>{"a": 1, "b": 2}</function> ok')
    assert not ix.accepts('ok <function=sub>{"a": 1}</function>')
    assert ix.accepts('a <function b')                     # no trigger: text
    with pytest.raises(GrammarError, match="starts with none of the triggers"):
        Index.from_tags(tags, smollm2_vocab, triggers=["<tool>"])
    with pytest.raises(GrammarError, match="contains trigger"):
        Index.from_tags(tags, smollm2_vocab, triggers=["<f", "x<f"])
    with pytest.raises(SchemaError, match=r"tag 1 \('<function=add>'\): .*intger"):
        Index.from_tags([tags[0], ("<function=add>", {"type": "intger"}, "")], smollm2_vocab)


def test_only_the_called_tool_is_compiled(smollm2_tokenizer, smollm2_vocab):
    tok, vocab = smollm2_tokenizer, smollm2_vocab
    tools = [{"name": f"tool_{i}", "parameters": {"type": "object", "properties": {
        f"arg_{j}": {"type": "string", "maxLength": 10 + j} for j in range(8)}}} for i in range(50)]
    ix = Index.from_tools(tools, vocab)
    ix.mask(ix.initial_state)
    src = ix.ir.rules._src
    built = {ns: len(tr.rules) - len(tr.base) for ns, tr in src.compilers.items()}
    assert set(built.values()) == {0}                 # no tool compiled before its name is written
    doc = '<tool_call>\n{"name": "tool_7", "arguments": {"arg_1": "x"}}\n</tool_call>'
    assert _force(ix, vocab, _ids(tok, doc)) == (len(_ids(tok, doc)), True)
    built = {ns: len(tr.rules) - len(tr.base) for ns, tr in src.compilers.items()}
    assert [ns for ns, n in built.items() if n] == ["j8_"]


def test_free_text_is_one_memoized_state(llama3_tokenizer, llama3_vocab):
    tok, vocab = llama3_tokenizer, llama3_vocab
    ix = Index.from_tools(TOOLS, vocab)
    guide = Guide(ix, 1)
    guide.get_start_tokensets()
    start = guide.states[0]
    text = "The weather in Paris is mild today, and the forecast says rain (maybe) tomorrow."
    masks = ix.n_masks
    for t in _ids(tok, text):
        guide.get_next_tokensets([t])
        assert guide.states[0] == start                # every position of plain text
    assert ix.n_masks == masks                         # no new mask along the text


def test_tools_saved_and_reloaded(qwen_tokenizer, qwen_vocab, tmp_path):
    tok, vocab = qwen_tokenizer, qwen_vocab
    ix = Index.from_tools(TOOLS, vocab)
    doc = CALLS["hermes"]
    _force(ix, vocab, _ids(tok, doc))
    ix.serialize_to_disk(tmp_path / "tools")
    ix2 = Index.deserialize_from_disk(tmp_path / "tools", vocab)
    assert _force(ix2, vocab, _ids(tok, doc)) == (len(_ids(tok, doc)), True)
    bad, good = BAD_CALLS["hermes"]
    assert _force(ix2, vocab, _ids(tok, bad))[0] == _first_bad_token(tok, bad, good)
    assert ix2.accepts("just text")


# ----------------------------------------------------------------------------- reasoning first


@pytest.mark.parametrize("name", ["smollm2", "llama3", "qwen"])
def test_reasoning_then_json(request, name):
    tok, vocab = request.getfixturevalue(f"{name}_tokenizer"), request.getfixturevalue(f"{name}_vocab")
    ix = Index(WEATHER, vocab, reasoning="</think>")
    doc = 'The user wants {"city"} </thin k> and "days"... so: Paris.\n</think>\n\n{"city": "Paris", "days": 2}'
    ids = _ids(tok, doc)
    assert _force(ix, vocab, ids) == (len(ids), True)
    bad = 'Paris it is.</think>\n\n{"city": "Paris", "days": 0}'
    assert _force(ix, vocab, _ids(tok, bad))[0] == _first_bad_token(tok, bad, bad[: bad.index("0}")])
    # no EOS inside the reasoning, nor before the document
    guide = Guide(ix, 1)
    ts = guide.get_start_tokensets()
    assert not ts.contains(vocab.eos_token_ids[0])[0]
    assert not ix.accepts("thinking</think>") and not ix.accepts("thinking")


def test_reasoning_begin_and_bound(smollm2_vocab, tmp_path):
    ix = Index(WEATHER, smollm2_vocab, reasoning=("<think>", "</think>"), max_reasoning_chars=12,
               disallow_whitespace=True)
    assert ix.accepts('<think>twelve chars</think>{"city":"x"}')
    assert not ix.accepts('<think>thirteen chars</think>{"city":"x"}')
    assert not ix.accepts('twelve chars</think>{"city":"x"}')
    assert not ix.accepts('<think>a</think>{"city": "x"}')      # compact
    assert "(?!<\\/think>)" in ix.grammar
    ix.serialize_to_disk(tmp_path / "r")
    ix2 = Index.deserialize_from_disk(tmp_path / "r", smollm2_vocab)
    assert ix2.accepts('<think>ok</think>\n{"city":"y"}') and not ix2.accepts('<think>ok</think>{}')
    with pytest.raises(TypeError, match="reasoning"):
        Index(WEATHER, smollm2_vocab, reasoning=3)
    with pytest.raises(ValueError, match="max_reasoning_chars"):
        Index(WEATHER, smollm2_vocab, max_reasoning_chars=5)


def test_reasoning_unbounded_is_one_state(qwen_tokenizer, qwen_vocab):
    ix = Index({"type": "integer"}, qwen_vocab, reasoning="</think>")
    s0 = ix.initial_state
    s = s0
    for t in _ids(qwen_tokenizer, "Long thoughts, with <tags> and </thinking about it> and more."):
        s = ix.next_state(s, t)
        assert s == s0 or s >= 0
    assert s == s0
    assert ix.accepts("x</think>\n\n42") and not ix.accepts("x</think>\n\n\n\n42")


# ----------------------------------------------------------------------------- special tokens


def test_special_token_trigger_llama_python_tag(llama3_tokenizer, llama3_vocab, tmp_path):
    """Llama 3.1's <|python_tag|> (128010) writes no text: only that token id starts the call."""
    from dotjson.embed import special_token

    tok, vocab = llama3_tokenizer, llama3_vocab
    tag = special_token(128010)
    tags = [(tag + '{"name": "get_weather", "parameters": ', WEATHER, "}")]
    ix = Index.from_tags(tags, vocab, triggers=[tag])
    doc = 'Let me look.<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}'
    ids = _ids(tok, doc)
    assert 128010 in ids
    assert _force(ix, vocab, ids) == (len(ids), True)
    # the tag's text spelled out is just text, and no call follows it
    spelled = [t for t in _ids(tok, "<|python") + _ids(tok, "_tag|>") if t != 128010]
    assert _force(ix, vocab, spelled) == (len(spelled), True)
    assert _force(ix, vocab, spelled + _ids(tok, '{"name": "get_weather", "parameters": {"city": 1}}'))[1]
    # after the special token: only the call, no EOS, and a wrong argument is refused where it is
    i = ids.index(128010)
    assert _force(ix, vocab, ids[: i + 1]) == (i + 1, False)
    bad = ids[: i + 1] + _ids(tok, '{"name": "get_weather", "parameters": {"city": 5}}')
    assert _force(ix, vocab, bad)[0] == len(ids[: i + 1]) + len(_ids(tok, '{"name": "get_weather", "parameters": {"city": '))
    # other special tokens are not text either
    s = ix.initial_state
    assert ix.next_state(s, 128011) < 0 and ix.mask(s)[128010 >> 5] & (1 << (128010 & 31))
    assert not ix.mask(s)[128011 >> 5] & (1 << (128011 & 31))
    ix.serialize_to_disk(tmp_path / "pt")
    ix2 = Index.deserialize_from_disk(tmp_path / "pt", vocab)
    assert _force(ix2, vocab, ids) == (len(ids), True)


def test_special_token_in_lark(llama3_tokenizer, llama3_vocab):
    tok, vocab = llama3_tokenizer, llama3_vocab
    g = ('start: TEXT | fun_call\nTEXT: /[^{](.|\\n)*/\nfun_call: <[128010]> json_body\n'
         'json_body: %json {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}\n')
    ix = Index.from_lark(g, vocab)
    ok = _ids(tok, '<|python_tag|>{"city": "Oslo"}')
    assert ok[0] == 128010 and _force(ix, vocab, ok) == (len(ok), True)
    text = _ids(tok, "No call needed.")
    assert _force(ix, vocab, text) == (len(text), True)
    assert _force(ix, vocab, _ids(tok, '{"city": "Oslo"}'))[0] == 0       # JSON only after the tag
    with pytest.raises(GrammarError, match=r"<\[99999999\]> at line 1"):
        Index.from_lark('start: <[99999999]>\n', vocab)


def test_llama3_python_tag_family(llama3_tokenizer, llama3_vocab):
    tok, vocab = llama3_tokenizer, llama3_vocab
    ix = Index.from_tools(TOOLS, vocab, family="llama3_python_tag")
    doc = 'Checking.<|python_tag|>{"name": "add", "parameters": {"a": 2, "b": 3}}'
    ids = _ids(tok, doc)
    assert _force(ix, vocab, ids) == (len(ids), True)
    bad = _ids(tok, '<|python_tag|>{"name": "add", "parameters": {"a": 2}}')
    assert _force(ix, vocab, bad)[0] == len(_ids(tok, '<|python_tag|>{"name": "add", "parameters": {"a": 2'))


def test_rendered_grammars_agree_with_the_lark_oracle(smollm2_vocab):
    """index.grammar of each form, parsed by Lark's Earley parser, accepts what the index does."""
    from dotjson.grammar import lark_parses

    tools = [{"name": "w", "parameters": WEATHER}, {"name": "n", "parameters": {"type": "integer"}}]
    ix = Index.from_tools(tools, smollm2_vocab, max_calls=2)
    call = '<tool_call>\n{"name": "n", "arguments": 5}\n</tool_call>'
    docs = ["", "hi", "a <tool_c b", "x <tool_call> y", "<" + call, call + "x" + call + "<tool_call>",
            '<tool_call>\n{"name": "w", "arguments": {"city": "x</tool_call>"}}\n</tool_call>',
            '<tool_call>\n{"name": "n", "arguments": "5"}\n</tool_call>']
    lark_ix = Index.from_lark('start: "A" x | "B" y\nx: %json {"type": "array", "items": {"type": "integer"}}\n'
                              'y: %json {"enum": [1, "a"], "x-dotjson": {"disallow_whitespace": true}}\n',
                              smollm2_vocab)
    think = Index({"type": "integer"}, smollm2_vocab, reasoning=("<think>", "</think>"), max_reasoning_chars=8)
    for index, texts in ((ix, docs), (lark_ix, ["A[1, 2]", "A[]", "B1", 'B"a"', "B 1", "A [1]"]),
                         (think, ["<think>a</think>1", "<think>12345678</think>\n\n2", "<think>123456789</think>3",
                                  "<think></thin</think>4", "<think></think></think>5"])):
        grammar = index.grammar
        for text in texts:
            assert index.accepts(text) == lark_parses(grammar, text), text


def test_json_spellings_per_schema(smollm2_vocab):
    """Each embedded schema has its own string spelling policy, and two policies in one grammar
    do not share base rules (``json_string_char`` differs)."""
    g = """
start: canon " " every
canon: %json {"type": "object", "properties": {"a": {"type": "string"}}}
every: %json {"type": "object", "properties": {"a": {"type": "string"}}, "x-dotjson": {"spellings": "any"}}
"""
    ix = Index.from_lark(g, smollm2_vocab)
    assert ix.accepts('{"a": "x"} {"a": "x"}')
    assert ix.accepts('{"a": "x"} {"\\u0061": "\\u0078"}')     # every spelling in the second
    assert not ix.accepts('{"\\u0061": "x"} {"a": "x"}')       # the first key only as written
    assert not ix.accepts('{"a": "\\u0078"} {"a": "x"}')       # no gratuitous escape in the first
    assert ix.accepts('{"a": "\\"\\n"} {"a": "x"}')            # real escapes stay
    ix2 = Index.from_lark("start: d\n", smollm2_vocab,
                          schemas={"d": JsonSchema({"type": "string"}, spellings="any")})
    assert ix2.accepts('"\\u0078"')
    with pytest.raises(SchemaError):
        Index.from_lark("start: d\n", smollm2_vocab, schemas={"d": JsonSchema({"type": "string"}, spellings="odd")})


def test_an_embedded_schema_reads_unique_items_through_its_grammar(smollm2_vocab):
    """``uniqueItems`` over free values reads its items with an automaton of its own over the
    grammar's rules: a schema inside a reasoning grammar finds that grammar as a schema's own
    index does (the compilers hold it weakly)."""
    schema = {"type": "array", "items": {"type": "object"}, "uniqueItems": True}
    ix = Index(schema, smollm2_vocab, reasoning="</think>", bounds="schema")
    assert ix.accepts('</think>[{"a":1},{"b":2}]')
    assert not ix.accepts('</think>[{"a":1},{"a":1}]')
