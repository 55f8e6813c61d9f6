"""The :class:`~tokamata.generate.backend.Backend` over a transformers causal LM.

Any ``AutoModelForCausalLM``-style module works: it is called as ``model(input_ids=...,
attention_mask=..., past_key_values=..., use_cache=...)`` and must return ``.logits``
(``[batch, length, width]``) and, with ``use_cache``, ``.past_key_values``.

Invariants:
- torch is imported when a backend is made, never when tokamata is imported.
- The vocabulary is the caller's :class:`~tokamata.Vocabulary` or one read from the
  tokenizer with ``size`` = the model's number of logits (its output embedding's rows, else
  ``config.vocab_size``); either way its size must equal that width.
- ``logits`` keeps one KV cache, of the ids of the last call. A call reuses it up to the
  common prefix (cut there with ``cache.crop``) and runs the model on the rest only; a cache
  without ``crop``, or with sliding-window layers, is reused only when nothing needs cutting,
  else dropped and the sequence run from its start. Results never depend
  on the cache (up to float rounding of a different computation order).
- ``score`` runs one forward pass for all the sequences it is given, right-padded (so every
  real token keeps its position) with an attention mask; padding is never read back.
- Only the rows asked for are computed where the model takes ``logits_to_keep`` (most
  transformers causal LMs): a long prompt never costs its length times the vocabulary.
- Everything runs under ``torch.inference_mode()`` on the model's device; rows come back as
  float32 numpy arrays on the CPU.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..vocab import Vocabulary
from .backend import chat_continues, check_messages, check_vocab_width, common_prefix

__all__ = ["TransformersBackend"]


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without the extras
        raise ImportError("a transformers model needs torch: pip install 'tokamata[transformers]'") from exc
    return torch


class TransformersBackend:
    """A transformers causal LM with its tokenizer (or a tokamata :class:`~tokamata.Vocabulary`,
    then prompts are token ids)."""

    def __init__(self, model: Any, tokenizer: Any = None, *, vocab: Vocabulary | None = None,
                 chat_template: str | None = None):
        torch = _torch()
        if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
            raise InvalidArgument(f"expected a transformers causal LM (a torch module with a config), "
                                  f"got {type(model).__name__}")
        if isinstance(tokenizer, Vocabulary):
            vocab, tokenizer = tokenizer, None
        self.model = model
        self.tokenizer = tokenizer
        width = _logit_width(model)
        if vocab is None:
            if tokenizer is None:
                raise InvalidArgument("a transformers model needs its tokenizer or a tokamata.Vocabulary")
            vocab = Vocabulary.from_hf(tokenizer, size=width)
        check_vocab_width(vocab, width, f"the model ({type(model).__name__})")
        self.vocab = vocab
        config = model.config
        length = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        self.context_length: int | None = int(length) if length else None
        self.chat_template = chat_template
        parameters = inspect.signature(model.forward).parameters
        #: the forward's name for the KV cache (transformers 5 renamed past_key_values)
        self._cache_kwarg = "cache" if "cache" in parameters else "past_key_values"
        #: whether the forward can return the last positions' logits only (a long prompt's
        #: other rows would cost length x vocabulary floats)
        self._trims = "logits_to_keep" in parameters
        self._cache: Any = None
        self._cached: list[int] = []

    # -- the protocol ---------------------------------------------------------------------

    def logits(self, ids: Sequence[int], start: int) -> np.ndarray:
        torch = _torch()
        ids = list(ids)
        if not 1 <= start <= len(ids):
            raise InvalidArgument(f"start must be in [1, {len(ids)}], got {start}")
        need = start - 1  # the first position whose output row is wanted
        keep = min(common_prefix(self._cached, ids), need)
        cache = self._reusable_cache(keep)
        if cache is None:
            keep = 0
        self._cache, self._cached = None, []  # (until the call succeeds: a failed one may leave it half updated)
        device = _device(self.model)
        with torch.inference_mode():
            wanted = len(ids) - need
            extra = {"logits_to_keep": wanted} if self._trims else {}
            out = self.model(input_ids=torch.tensor([ids[keep:]], dtype=torch.long, device=device),
                             use_cache=True, **{self._cache_kwarg: cache}, **extra)
        self._cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        self._cached = ids if self._cache is not None else []
        return out.logits[0, -wanted:].float().cpu().numpy()

    def reset(self) -> None:
        """Forget the KV cache (the next call runs its whole sequence; for timing runs)."""
        self._cache, self._cached = None, []

    def _reusable_cache(self, keep: int) -> Any:
        """The cache cut back to ``keep`` positions, or None when it cannot be (no cache, nothing
        to keep, or a cache without ``crop`` or with sliding-window layers, which may have
        dropped states a shorter prefix needs)."""
        cache = self._cache
        if cache is None or keep == 0:
            return None
        length = int(cache.get_seq_length()) if hasattr(cache, "get_seq_length") else len(self._cached)
        if length == keep:
            return cache
        if length < keep or not hasattr(cache, "crop") or any(getattr(cache, "is_sliding", None) or ()):
            return None
        cache.crop(keep - length)  # (a negative count removes that many: transformers 4 and 5 alike)
        return cache

    def score(self, prefix: Sequence[int], sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
        torch = _torch()
        prefix = list(prefix)
        if not prefix:
            raise InvalidArgument("scoring needs a non-empty prefix (at least a BOS token)")
        if not sequences:
            return []
        rows = [prefix + list(seq) for seq in sequences]
        width = max(len(r) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
        device = _device(self.model)
        n = len(prefix)
        wanted = width - (n - 1)  # positions n - 1 .. width - 1: every row asked for, and no prefix row
        extra = {"logits_to_keep": wanted} if self._trims else {}
        with torch.inference_mode():
            logits = self.model(input_ids=ids.to(device), attention_mask=mask.to(device), use_cache=False,
                                **extra).logits[:, -wanted:]
        return [logits[i, : len(seq) + 1].float().cpu().numpy() for i, seq in enumerate(sequences)]

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise InvalidArgument("this pipeline has a tokamata.Vocabulary but no tokenizer: give the prompt as "
                                  "token ids, or build the Pipeline with the model's tokenizer")
        return [int(t) for t in self.tokenizer(text, add_special_tokens=True)["input_ids"]]

    def apply_chat_template(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        messages = check_messages(messages)
        template = self.chat_template or getattr(self.tokenizer, "chat_template", None)
        if self.tokenizer is None or not template:
            raise InvalidArgument("messages need a chat template, and this model's tokenizer has none: give the "
                                  "prompt as text or token ids, or pass chat_template= to the Pipeline")
        continues = chat_continues(messages)
        text = self.tokenizer.apply_chat_template(messages, chat_template=template, tokenize=False,
                                                  add_generation_prompt=not continues,
                                                  continue_final_message=continues)
        return [int(t) for t in self.tokenizer(text, add_special_tokens=False)["input_ids"]]


def _logit_width(model: Any) -> int:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    if weight is not None and weight.dim() == 2:
        return int(weight.shape[0])
    size = getattr(model.config, "vocab_size", None)
    if not isinstance(size, int):
        raise InvalidArgument(f"cannot tell how many logits {type(model).__name__} produces (no output "
                              f"embedding, no config.vocab_size)")
    return size


def _device(model: Any):
    device = getattr(model, "device", None)
    if device is None:
        device = next(model.parameters()).device
    return device
