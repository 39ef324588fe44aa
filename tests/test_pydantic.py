"""A Pydantic model class as the schema: ``Index.from_pydantic`` and ``Index(cls, ...)``.

Pydantic is a test dependency only; dotjson never imports it. The schemas Pydantic writes say
nothing about ``additionalProperties``, which is exactly the case the default generation policy
(``close_objects=True``) is for: every document a random walk finishes validates with the model
itself, and no document has a key the model does not declare.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dotjson import Guide, Index
from dotjson.errors import SchemaError

pydantic = pytest.importorskip("pydantic")


class Address(pydantic.BaseModel):
    street: str = pydantic.Field(max_length=12)
    city: str = pydantic.Field(max_length=12)


class Person(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=16)
    age: int = pydantic.Field(ge=0, le=120)
    email: str | None = None
    address: Address
    tags: list[str] = pydantic.Field(max_length=3)


def _walk(index: Index, vocab, rng, budget: int = 400) -> str | None:
    """One document by a random walk over the allowed tokens (structural ones preferred)."""
    guide = Guide(index, batch_size=1)
    ts = guide.get_start_tokensets()
    out = b""
    eos = vocab.eos_token_ids[0]
    short_len = np.array([len(vocab.token_bytes(t)) <= 2 for t in range(vocab.max_token_id())])
    for _ in range(budget):
        allowed = ts[0].to_numpy()
        if eos in allowed and rng.random() < 0.5:
            return out.decode()
        short = allowed[short_len[allowed]] if short_len[allowed].any() else allowed
        t = int(rng.choice(short if rng.random() < 0.7 else allowed))
        if t == eos:
            return out.decode()
        out += vocab.token_bytes(t)
        ts = guide.get_next_tokensets([t])
    return None


def test_from_pydantic_and_the_class_as_schema_agree(smollm2_vocab):
    a = Index.from_pydantic(Person, smollm2_vocab)
    b = Index(Person, smollm2_vocab)
    assert a.grammar == b.grammar
    assert a.grammar == Index(Person.model_json_schema(), smollm2_vocab).grammar


def test_pydantic_documents_validate_and_are_closed(smollm2_vocab):
    index = Index.from_pydantic(Person, smollm2_vocab, disallow_whitespace=True)
    rng = np.random.default_rng(0)
    docs = [d for d in (_walk(index, smollm2_vocab, rng) for _ in range(6)) if d is not None]
    assert docs, "no random walk finished"
    for d in docs:
        person = Person.model_validate_json(d)  # raises if invalid
        assert set(json.loads(d)) <= set(Person.model_fields), d
        assert set(json.loads(d)["address"]) <= {"street", "city"}, d
        assert person.age <= 120


def test_open_objects_is_one_option_away(smollm2_vocab):
    doc = ('{"name":"A","age":3,"address":{"street":"s","city":"c"},"tags":[],'
           '"nickname":"x"}')
    assert not Index.from_pydantic(Person, smollm2_vocab, disallow_whitespace=True).accepts(doc)
    assert Index.from_pydantic(Person, smollm2_vocab, disallow_whitespace=True,
                               close_objects=False).accepts(doc)
    Person.model_validate_json(doc)  # pydantic ignores extra keys by default: valid


def test_forbidding_extra_keys_in_pydantic_is_honoured_with_open_objects(smollm2_vocab):
    class Strict(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        x: int

    index = Index.from_pydantic(Strict, smollm2_vocab, close_objects=False)
    assert index.accepts('{"x": 1}') and not index.accepts('{"x": 1, "y": 2}')


def test_a_set_of_strings_is_a_pydantic_set(smollm2_vocab):
    # set[str] is an array of distinct strings (uniqueItems): in the defaults since issue 29's
    # arrays of distinct strings (refused before); every random walk's document is a valid set
    class Post(pydantic.BaseModel):
        title: str = pydantic.Field(max_length=8)
        tags: set[str] = pydantic.Field(max_length=4)

    index = Index.from_pydantic(Post, smollm2_vocab, disallow_whitespace=True)
    assert index.accepts('{"title":"x","tags":["a","b"]}')
    assert not index.accepts('{"title":"x","tags":["a","a"]}')
    rng = np.random.default_rng(29)
    docs = [d for d in (_walk(index, smollm2_vocab, rng) for _ in range(6)) if d is not None]
    assert docs, "no random walk finished"
    for d in docs:
        tags = json.loads(d)["tags"]
        assert len(tags) == len(set(tags)) and Post.model_validate_json(d).tags == set(tags), d


@pytest.mark.parametrize("bad", [Person(name="a", age=1, address=Address(street="s", city="c"),
                                        tags=[]), dict, "Person", 3])
def test_from_pydantic_refuses_what_is_not_a_model_class(bad, smollm2_vocab):
    with pytest.raises(SchemaError, match="needs a Pydantic model class"):
        Index.from_pydantic(bad, smollm2_vocab)
