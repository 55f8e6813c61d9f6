"""Shared data and oracles of the serving-engine contract tests (tests/serving/): requests as
(kind, spec, a valid output), the Llama 3 tokenizer as the engines see it, and the plain
tokamata Matcher replay every backend's masks are compared with."""

from __future__ import annotations

import json
import re

import numpy as np

import tokamata
from real_tokenizers import llama3

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                    "maxItems": 3}},
          "required": ["name", "tags"], "additionalProperties": False}

# (request kind as vLLM's StructuredOutputOptions name, spec text, a valid output)
REQUESTS = [
    ("JSON", json.dumps(SCHEMA), '{"name": "Ada", "tags": ["a", "b"]}'),
    ("JSON", '{"type": "integer", "minimum": 10}', "1234"),
    ("JSON_OBJECT", "", '{"k": [1, {"x": null}]}'),
    ("REGEX", r"\d{3}-[a-z]+(\.[a-z]+)*", "123-tok.mata"),
    ("GRAMMAR", 'root ::= "(" num ("," num)* ")"\nnum ::= [0-9]+', "(1,22,333)"),
    ("GRAMMAR", 'start: expr\nexpr: NUM | expr "+" expr\nNUM: /[0-9]+/', "1+22+3"),
    ("CHOICE", json.dumps(["yes", "no", "maybe (later)"]), "maybe (later)"),
    ("STRUCTURAL_TAG", json.dumps({"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<tool>"],
        "tags": [{"type": "tag", "begin": "<tool>", "content": {"type": "json_schema", "json_schema": SCHEMA},
                  "end": "</tool>"}]}}),
     'Calling it. <tool>{"name": "Ada", "tags": []}</tool> Done.'),
]

STOP = {128001, 128009}


def hf_tokenizer():
    """The Llama 3 tokenizer as vLLM and SGLang hold it (a transformers fast tokenizer)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=str(llama3().source))


def encode(text: str) -> list[int]:
    return llama3().encode(text)


def oracle_constraint(kind: str, spec: str, vocab) -> tokamata.Constraint:
    """What the request means, compiled through tokamata's public front doors directly
    (whitespace as the backends' default: flexible, at most 4 per place)."""
    if kind in ("JSON", "JSON_OBJECT"):
        return tokamata.compile_json_schema(spec if kind == "JSON" else {"type": "object"}, vocab,
                                            whitespace="flexible", max_whitespace=4)
    if kind == "REGEX":
        return tokamata.compile_regex(spec, vocab)
    if kind == "GRAMMAR":
        return (tokamata.compile_gbnf if "::=" in spec else tokamata.compile_grammar)(spec, vocab)
    if kind == "CHOICE":
        return tokamata.compile_regex("|".join(re.escape(c) for c in json.loads(spec)), vocab)
    if kind == "STRUCTURAL_TAG":
        return tokamata.compile_structural_tag(spec, vocab, whitespace="flexible", max_whitespace=4)
    raise AssertionError(kind)


def oracle_rows(constraint, tokens: list[int], stop: set[int]) -> list[np.ndarray]:
    """The row a plain Matcher gives before each token and after the last (stop ids set where
    the output is complete, other EOS ids cleared), as uint32 words."""
    m = constraint.matcher()
    out = []
    width = (constraint.vocab_size + 31) // 32
    for i in range(len(tokens) + 1):
        row = np.zeros((1, width), dtype=np.int32)
        m.fill_bitmask(row, 0)
        words = row[0].view(np.uint32).copy()
        for t in constraint.vocab.eos_token_ids:
            words[t >> 5] &= ~np.uint32(1 << (t & 31))
        if m.is_accepting():
            for t in stop:
                words[t >> 5] |= np.uint32(1 << (t & 31))
        out.append(words)
        if i < len(tokens):
            assert m.consume(tokens[i]), (i, tokens)
    return out
