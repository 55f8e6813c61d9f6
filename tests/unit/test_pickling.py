"""Across processes: vocabularies and constraints pickle (compactly: the recipe and the token
table, no caches), unpickle in a fresh process to the same masks, and matchers deep-copy to an
independent matcher at the same position. Llama 3 vocabulary; the other process is a real
spawned interpreter."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

import tokamata
from real_tokenizers import llama3

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "id": {"$ref": "https://example.com/id.json"}},
          "required": ["name", "id"]}
REGISTRY = {"https://example.com/id.json": {"type": "integer", "minimum": 0}}

# (kind, spec, options, a text of the language to walk)
CASES = [
    ("regex", r"\d{3}-[a-z]+", {}, "123-abc"),
    ("regex", r"[a-zé ]+", {"characters": ["latin", "[ ]"]}, "élan vital"),
    ("grammar", 'start: "(" NUM ("," NUM)* ")"\nNUM: /[0-9]+/\n%ignore " "', {}, "(1, 22,333)"),
    ("gbnf", 'root ::= "yes" | "no" | [0-9]+', {}, "2024"),
    ("json", None, {"whitespace": "flexible"}, '{"a": [1, 2.5, null]}'),
    ("json_schema", SCHEMA, {"registry": REGISTRY, "whitespace": "compact"}, '{"name":"Ann","id":7}'),
    ("json_schema", '{"enum": ["x", "y"]}', {}, '"y"'),
]


def _compile(kind, spec, options, vocab):
    if kind == "json":
        return tokamata.compile_json(vocab, **options)
    return getattr(tokamata, f"compile_{kind}")(spec, vocab, **options)


def _walk(constraint, tokens):
    """The allowed tokens at every step of consuming ``tokens``, then whether it accepts."""
    m = constraint.matcher()
    rows = []
    for t in tokens:
        rows.append(m.allowed_tokens().tolist())
        assert m.consume(t)
    return rows, m.is_accepting()


def _walk_pickled(data: bytes, tokens):  # (runs in the other process)
    constraint = pickle.loads(data)
    return _walk(constraint, tokens)


@pytest.fixture(scope="module")
def tok():
    return llama3()


def test_constraints_unpickle_in_another_process_to_the_same_masks(tok):
    vocab = tok.vocab
    jobs = []
    for kind, spec, options, text in CASES:
        constraint = _compile(kind, spec, options, vocab)
        tokens = tok.encode(text)
        data = pickle.dumps(constraint)
        # compact: the vocabulary's token table once plus the recipe, no caches or native state
        assert len(data) < len(pickle.dumps(vocab)) + 4096
        jobs.append((data, tokens, _walk(constraint, tokens)))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = list(pool.map(_walk_pickled, [d for d, _, _ in jobs], [t for _, t, _ in jobs]))
    for (_, _, expected), got in zip(jobs, found):
        assert got == expected
        assert got[1]  # the walked text is in the language


def test_unpickling_in_process_returns_the_live_objects(tok):
    vocab = tok.vocab
    assert pickle.loads(pickle.dumps(vocab)) is vocab
    c = tokamata.compile_regex("[0-9]+", vocab)
    assert pickle.loads(pickle.dumps(c)) is c
    both = pickle.loads(pickle.dumps([c, tokamata.compile_json(vocab)]))
    assert both[0] is c and both[1].vocab is vocab


def test_vocabulary_round_trip_keeps_every_attribute():
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", None, b"bc", None], eos_token_ids=[1], size=9,
                                                 special_tokens={"<x>": 3})
    state = pickle.dumps(vocab)
    import tokamata.vocab.vocabulary as module
    module._INTERNED.clear()  # as in a fresh process
    twin = pickle.loads(state)
    assert twin is not vocab
    for name in ("token_bytes", "eos_token_ids", "size", "special_token_ids", "kind", "add_prefix_space", "name"):
        assert getattr(twin, name) == getattr(vocab, name), name
    assert dict(twin.special_token_names) == dict(vocab.special_token_names)
    assert pickle.loads(state) is twin  # interned by digest
    assert tokamata.compile_grammar('start: "a" <x>', twin).matcher().allowed_tokens().tolist() == [0]


def test_recipe_is_the_call_with_defaults_filled_in(tok):
    from tokamata.compile import recipe
    vocab = tok.vocab
    c = tokamata.compile_json_schema(SCHEMA, vocab, registry=REGISTRY)
    assert c.recipe == recipe("json_schema", SCHEMA, registry=REGISTRY)
    assert c.recipe != recipe("json_schema", SCHEMA, registry=REGISTRY, whitespace="flexible")
    # key order matters (property_order="schema"), so it is kept
    swapped = dict(reversed(list(SCHEMA.items())))
    assert recipe("json_schema", swapped) != recipe("json_schema", SCHEMA)
    # the recipe is a snapshot: mutating the schema afterwards changes nothing pickled
    schema = {"type": "string", "maxLength": 2}
    c = tokamata.compile_json_schema(schema, vocab)
    schema["maxLength"] = 50
    import tokamata.constraint as module
    module._ALIVE.clear()
    twin = pickle.loads(pickle.dumps(c))
    assert twin is not c and _walk(twin, tok.encode('"ab"')) == _walk(c, tok.encode('"ab"'))


def test_grammar_ir_constraints_refuse_to_pickle_clearly(tok):
    ir = tokamata.compile_regex("ab", tok.vocab).grammar
    c = tokamata.compile_grammar_ir(ir, tok.vocab)
    assert c.recipe is None
    with pytest.raises(tokamata.InvalidArgument, match="grammar IR"):
        pickle.dumps(c)
    with pytest.raises(tokamata.InvalidArgument, match="does not pickle"):
        pickle.dumps(c.matcher())


def test_deepcopy_of_a_matcher_is_independent_at_the_same_position(tok):
    c = tokamata.compile_json(tok.vocab, whitespace="flexible")
    tokens = tok.encode('{"k": [1, 2]}')
    m = c.matcher()
    assert m.consume_many(tokens[:4]) == 4
    for twin in (copy.deepcopy(m), copy.copy(m), copy.deepcopy([m])[0]):
        assert twin is not m and twin.constraint is c
        assert twin.num_consumed == 4 and twin.allowed_tokens().tolist() == m.allowed_tokens().tolist()
        assert twin.consume_many(tokens[4:]) == len(tokens) - 4 and twin.is_accepting()
        assert m.num_consumed == 4 and not m.is_accepting()
    assert copy.deepcopy(c) is c and copy.deepcopy(tok.vocab) is tok.vocab


def _encode_pickled(data: bytes, text: str):  # (runs in the other process)
    return pickle.loads(data).tokenizer_model.encode(text)


def test_the_tokenizer_model_crosses_processes(tok):
    """A vocabulary's tokenizer model (merges, pre-tokenizer) pickles as plain data: the
    unpickled vocabulary encodes like the tokenizer in a process that never read the file."""
    text = "Hello, world! 12345 ünïcode\n\n  spaces"
    data = pickle.dumps(tok.vocab)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(_encode_pickled, data, text).result() == tok.encode(text)
