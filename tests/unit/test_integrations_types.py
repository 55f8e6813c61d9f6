"""Integrations take Python types as well as constraints (issue 19): the logits processors of
transformers and llama-cpp-python compile a type over the vocabulary they are given."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tokamata
from real_tokenizers import llama3


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_llama_processor_takes_a_type():
    from tokamata.integrations.llama_cpp import LlamaLogitsProcessor

    vocab = llama3().vocab
    processor = LlamaLogitsProcessor(Point, vocab=vocab)
    assert processor.constraint.parse('{"x":1,"y":2}') == Point(1, 2)
    scores = np.zeros(vocab.size, dtype=np.float32)
    out = processor(np.array([1, 2, 3]), scores.copy())
    allowed = np.flatnonzero(np.isfinite(out)).tolist()
    assert allowed == processor.constraint.matcher().allowed_tokens().tolist()
    python = LlamaLogitsProcessor(Point, vocab=vocab, syntax="python")
    assert python.constraint.parse("Point(x=1, y=2)") == Point(1, 2)


def test_transformers_processor_takes_a_type():
    pytest.importorskip("torch")
    from tokamata.integrations.transformers import TokamataLogitsProcessor

    vocab = llama3().vocab
    processor = TokamataLogitsProcessor([Point, tokamata.compile_regex("[0-9]+", vocab)], vocab=vocab)
    assert processor.constraints[0].parse('{"x":1,"y":2}') == Point(1, 2)


def test_a_type_without_a_vocabulary_is_refused():
    from tokamata.integrations.llama_cpp import LlamaLogitsProcessor

    with pytest.raises(tokamata.InvalidArgument, match="vocab="):
        LlamaLogitsProcessor(Point)
