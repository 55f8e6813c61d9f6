"""tokamata behind SGLang's own grammar-backend contract (SGLang 0.5.23's registry, base
classes and GrammarRow): dispatch through the registry, copies of cached templates, accept /
rollback, the vocab-mask methods (batched fill included) against a plain Matcher replay,
jump-forward and re-tokenization, and requests failing alone. Runs in the serving environment
(make serving-env); skipped elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sglang", reason="SGLang is not installed here: run `make test-serving` (it builds "
                                     ".cache/venv-serving from PyPI)")

import torch  # noqa: E402

import tokamata  # noqa: E402
import tokamata.integrations.sglang as ts  # noqa: E402
from serving_cases import REQUESTS, STOP, encode, hf_tokenizer, oracle_constraint, oracle_rows  # noqa: E402
from sglang.srt.constrained.base_grammar_backend import (GRAMMAR_BACKEND_REGISTRY, BaseGrammarBackend,  # noqa: E402
                                                         BaseGrammarObject, GrammarRow, InvalidGrammarObject)

VOCAB_SIZE = 128256
# vLLM request kinds -> SGLang keys (choice is sent as a regex by SGLang's front end)
KEYS = {"JSON": "json", "REGEX": "regex", "GRAMMAR": "ebnf", "STRUCTURAL_TAG": "structural_tag"}


@pytest.fixture(scope="module")
def backend():
    ts.install()
    made = GRAMMAR_BACKEND_REGISTRY["tokamata"](None, hf_tokenizer(), VOCAB_SIZE, STOP)
    assert isinstance(made, BaseGrammarBackend)
    return made


def compile_key(backend, key):
    value, hit = backend.get_cached_or_future_value(key, False)
    if not hit:
        value = value.result()
        if not isinstance(value, InvalidGrammarObject):
            backend.set_cache(key, value)
            value = value.copy()
    return value


def cases():
    return [(KEYS[k], spec, text, k) for k, spec, text in REQUESTS if k in KEYS]


@pytest.mark.parametrize("key_type, spec, text, kind", cases())
def test_masks_accept_rollback_and_batched_fill(backend, key_type, spec, text, kind):
    grammar = compile_key(backend, (key_type, spec))
    assert isinstance(grammar, BaseGrammarObject)
    tokens = encode(text)
    rows = oracle_rows(oracle_constraint(kind, spec, backend.vocab), tokens, STOP)
    twin = compile_key(backend, (key_type, spec))  # a cache hit: a fresh copy of the template
    mask = grammar.allocate_vocab_mask(VOCAB_SIZE, 2, "cpu")
    for i, t in enumerate(tokens):
        grammar.reset_vocab_mask(mask)
        type(grammar).fill_vocab_mask_batched([GrammarRow(1, grammar)], mask)
        assert np.array_equal(mask[1].numpy().view(np.uint32), rows[i])
        assert np.array_equal(mask[0].numpy(), np.full_like(mask[0].numpy(), -1))  # unlisted rows untouched
        grammar.accept_token(t)
        if i == len(tokens) // 2:
            grammar.rollback(2 if i >= 1 else 1)
            for again in tokens[i - (1 if i >= 1 else 0): i + 1]:
                grammar.accept_token(again)
    grammar.fill_vocab_mask(mask, 0)
    assert np.array_equal(mask[0].numpy().view(np.uint32), rows[-1])
    grammar.accept_token(128009)
    assert grammar.is_terminated()
    # the copy did not move
    twin.fill_vocab_mask(mask, 0)
    assert np.array_equal(mask[0].numpy().view(np.uint32), rows[0])
    logits = torch.zeros(1, VOCAB_SIZE)
    grammar.apply_vocab_mask(logits, grammar.move_vocab_mask(mask[:1], "cpu"))
    assert torch.isfinite(logits[0]).nonzero().flatten().tolist() == \
        np.flatnonzero(np.unpackbits(rows[0].view(np.uint8), bitorder="little")).tolist()


def test_jump_forward_and_retokenize(backend):
    grammar = compile_key(backend, ("regex", r"tokamata-(serving|engine)-v[0-9]"))
    helper = grammar.try_jump_forward(hf_tokenizer())
    text, state = grammar.jump_forward_str_state(helper)
    assert text == "tokamata-"
    # SGLang appends the text and re-tokenizes the output; the grammar follows the new ids
    old = encode("tok")
    for t in old:
        grammar.accept_token(t)
    grammar.jump_and_retokenize(old, encode(text), state)
    helper = grammar.try_jump_forward(None)
    assert helper is None  # "serving" or "engine": not forced
    check = tokamata.compile_regex(r"tokamata-(serving|engine)-v[0-9]", backend.vocab).matcher()
    check.consume_many(encode(text))
    mask = grammar.allocate_vocab_mask(VOCAB_SIZE, 1, "cpu")
    grammar.fill_vocab_mask(mask, 0)
    assert np.flatnonzero(np.unpackbits(mask[0].numpy().view(np.uint8), bitorder="little")).tolist() == \
        check.allowed_tokens().tolist()


@pytest.mark.parametrize("key", [("json", '{"type": "nope"}'), ("json", "{"), ("regex", "a("),
                                 ("ebnf", "root ::= undefined"), ("structural_tag", "{}")])
def test_bad_specs_become_invalid_grammar_objects(backend, key):
    value = compile_key(backend, key)
    assert isinstance(value, InvalidGrammarObject) and value.error_message


def test_refused_and_out_of_range_tokens_abort_that_request_alone(backend):
    grammar = compile_key(backend, ("regex", "[0-9]+"))
    other = compile_key(backend, ("regex", "[0-9]+"))
    with pytest.raises(ValueError, match="refused"):  # SGLang aborts the request on ValueError
        grammar.accept_token(encode("x")[0])
    with pytest.raises(ValueError):
        grammar.accept_token(VOCAB_SIZE + 3)
    for t in encode("42"):
        other.accept_token(t)
    other.accept_token(128001)
    assert other.is_terminated()
