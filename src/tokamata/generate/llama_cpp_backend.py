"""The :class:`~tokamata.generate.backend.Backend` over llama-cpp-python.

The model must be made with ``llama_cpp.Llama(..., logits_all=True)``: then ``Llama.eval``
keeps every evaluated position's logits in ``llm.scores``, which is what scoring a run of
tokens in one call needs.

Invariants:
- llama_cpp is never imported here: the caller made the ``Llama``.
- The vocabulary is the caller's or read from the model's GGUF
  (:func:`tokamata.integrations.llama_cpp.vocabulary`); its size must equal ``llm.n_vocab()``.
- ``logits`` reuses the evaluated prefix ``llm.input_ids[:llm.n_tokens]``: positions in the
  common prefix are read from ``llm.scores`` (causal: they do not depend on what follows),
  the rest is evaluated after truncating the model's state there (``llm.n_tokens = common``;
  ``Llama.eval`` removes the KV cells from ``n_tokens`` on). This shares the state of the
  ``Llama`` with any other user of it: do not interleave calls.
- ``score`` evaluates the sequences one after another, each sharing the prefix's evaluation.
- The chat template is ``chat_template=`` or the GGUF's ``tokenizer.chat_template``, rendered
  with llama-cpp-python's ``Jinja2ChatFormatter``; a model without one refuses messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..integrations.llama_cpp import vocabulary
from ..vocab import Vocabulary
from .backend import chat_continues, check_messages, check_vocab_width, common_prefix

__all__ = ["LlamaCppBackend"]


class LlamaCppBackend:
    """A ``llama_cpp.Llama`` made with ``logits_all=True``."""

    def __init__(self, llm: Any, vocab: Vocabulary | None = None, *, chat_template: str | None = None):
        logits_all = getattr(llm, "_logits_all", None)
        if logits_all is None:
            logits_all = llm.scores.shape[0] == llm.n_ctx()
        if not logits_all:
            raise InvalidArgument("the llama_cpp.Llama must be made with logits_all=True (scoring needs the logits "
                                  "of every position)")
        self.llm = llm
        if vocab is None:
            vocab = vocabulary(llm)
        check_vocab_width(vocab, int(llm.n_vocab()), "the llama.cpp model")
        self.vocab = vocab
        self.context_length: int | None = int(llm.n_ctx())
        self.chat_template = chat_template

    def logits(self, ids: Sequence[int], start: int) -> np.ndarray:
        ids = [int(t) for t in ids]
        if not 1 <= start <= len(ids):
            raise InvalidArgument(f"start must be in [1, {len(ids)}], got {start}")
        llm = self.llm
        if self.context_length is not None and len(ids) > self.context_length:
            raise InvalidArgument(f"{len(ids)} tokens do not fit the model's context of {self.context_length}")
        evaluated = llm.input_ids[: llm.n_tokens].tolist()
        common = common_prefix(evaluated, ids)
        if common < len(ids):
            if common == 0:
                llm.reset()
            else:
                llm.n_tokens = common
            llm.eval(ids[common:])
        return np.array(llm.scores[start - 1: len(ids)], dtype=np.float32, copy=True)

    def reset(self) -> None:
        """Forget the evaluated prefix (``Llama.reset``; the next call evaluates its whole sequence)."""
        self.llm.reset()

    def score(self, prefix: Sequence[int], sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
        prefix = [int(t) for t in prefix]
        if not prefix:
            raise InvalidArgument("scoring needs a non-empty prefix (at least a BOS token)")
        return [self.logits(prefix + [int(t) for t in seq], len(prefix)) for seq in sequences]

    def encode(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))

    def apply_chat_template(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        messages = check_messages(messages)
        llm = self.llm
        template = self.chat_template or llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise InvalidArgument("messages need a chat template, and this GGUF has no tokenizer.chat_template: "
                                  "give the prompt as text or token ids, or pass chat_template= to the Pipeline")
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def name(token: int) -> str:
            return llm.detokenize([token], special=True).decode("utf-8", errors="replace") if token >= 0 else ""

        continues = chat_continues(messages)
        formatter = Jinja2ChatFormatter(template, eos_token=name(llm.token_eos()), bos_token=name(llm.token_bos()),
                                        add_generation_prompt=not continues)
        text = formatter(messages=messages).prompt  # type: ignore[arg-type]  # (plain dicts, as its own API takes)
        if continues:  # the template closes the last turn: the output continues its content instead
            content = messages[-1]["content"]
            cut = text.rfind(content)
            if cut < 0:
                raise InvalidArgument("the chat template does not write the last message's content verbatim, so the "
                                      "output cannot continue it")
            text = text[: cut + len(content)]
        return list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
