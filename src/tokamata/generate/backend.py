"""The one model protocol the generation layer decodes with, and what every backend shares.

A backend is a causal language model over a :class:`~tokamata.Vocabulary`. It answers two
questions, both as float32 logits over ``vocab.size`` columns (row ``r`` predicts one token):

- ``logits(ids, start)``: the rows predicting ``ids[start], ..., ids[-1]`` and then the token
  after ``ids`` (``len(ids) - start + 1`` rows; ``1 <= start <= len(ids)``). A decoding loop
  calls it with the whole sequence so far and the first position whose logits it has not
  seen: one call scores a run of tokens nobody sampled (forced tokens, a response prefix)
  and gives the next step's logits. A backend keeps what it can of the previous call (a KV
  cache over the common prefix).
- ``score(prefix, sequences)``: for each sequence the rows predicting each of its tokens after
  ``prefix`` and the token after it (``len(seq) + 1`` rows), in as few model calls as the
  backend can (one forward pass per call on transformers).

``context_length`` is the most tokens one sequence may hold (``None``: unbounded);
``encode(text)`` is the tokenizer's encoding of a prompt (special tokens parsed, BOS added as
the tokenizer does); ``apply_chat_template(messages)`` renders chat messages with the model's
template and encodes them.

Invariants:
- Rows are fresh arrays the caller owns (never views into the backend's buffers).
- ``vocab.size`` equals the model's number of logits: the backends check it when built.
- The protocol is sequence-in, logits-out and stateless from the caller's side (the cache is
  an optimization the results never depend on), so a second backend (a draft model for
  speculative decoding) can sit beside the first, and a target model can score a draft's
  tokens with one ``logits`` call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import InvalidArgument
from ..vocab import Vocabulary

__all__ = ["Backend", "common_prefix", "check_messages", "chat_continues", "check_vocab_width"]


@runtime_checkable
class Backend(Protocol):
    """What :class:`~tokamata.generate.Pipeline` needs from a model (see the module docstring)."""

    vocab: Vocabulary
    context_length: int | None

    def logits(self, ids: Sequence[int], start: int) -> np.ndarray:
        """float32 ``[len(ids) - start + 1, vocab.size]``: the rows predicting ``ids[start:]``
        and the next token."""
        ...

    def score(self, prefix: Sequence[int], sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """For each sequence, float32 ``[len(seq) + 1, vocab.size]`` rows after ``prefix``."""
        ...

    def encode(self, text: str) -> list[int]:
        """The prompt's token ids."""
        ...

    def apply_chat_template(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The token ids of ``messages`` rendered with the model's chat template."""
        ...


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two id sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def check_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as a list of dicts with a str ``role`` and ``content``, or InvalidArgument."""
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidArgument(f"message {i} must be a dict with 'role' and 'content', got {type(message).__name__}")
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise InvalidArgument(f"message {i} needs a str 'role' and a str 'content', got {dict(message)!r}")
        out.append(dict(message))
    if not out:
        raise InvalidArgument("messages is empty")
    return out


def chat_continues(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the output continues the last message (an ``assistant`` message: seed 003's
    ``{"role": "assistant", "content": "Answer:"}``) rather than starting a new turn."""
    return messages[-1]["role"] == "assistant"


def check_vocab_width(vocab: Vocabulary, width: int, model: str) -> None:
    """InvalidArgument unless the vocabulary has exactly ``width`` logit columns."""
    if not isinstance(vocab, Vocabulary):
        raise InvalidArgument(f"vocab must be a tokamata.Vocabulary, got {type(vocab).__name__}")
    if vocab.size != width:
        raise InvalidArgument(
            f"the vocabulary has {vocab.size} logit columns but {model} produces {width} logits per token: "
            f"build it from the model's own tokenizer with size={width}")
