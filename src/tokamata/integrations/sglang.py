"""tokamata as an SGLang grammar backend: ``--grammar-backend tokamata`` once :func:`install`
has run (SGLang has a registry: ``register_grammar_backend("tokamata", ...)``).

    import tokamata.integrations.sglang
    tokamata.integrations.sglang.install()

Invariants:
- :class:`TokamataGrammarObject` follows SGLang's ``BaseGrammarObject`` through
  :class:`~tokamata.integrations.serving.RequestMatcher`: ``accept_token`` raises
  :class:`~tokamata.InvalidArgument` (a ``ValueError``, what SGLang's scheduler catches to
  abort that request alone) for a refused token, an id out of range, or a request that
  failed mid-generation; ``rollback`` undoes any number of tokens (a stop id included);
  ``copy`` is an independent object at the start of the same compiled constraint (SGLang
  copies its cached templates).
- Masks are tokamata's packed int32 rows (bit ``t % 32`` of word ``t // 32``), the format of
  SGLang's other backends; ``fill_vocab_mask_batched`` fills the whole batch in one call
  without the GIL (:func:`tokamata.fill_bitmasks`); ``apply_vocab_mask`` sets the logits of
  unset bits to ``-inf`` on any device.
- Jump-forward is string-based, as for SGLang's XGrammar backend: ``try_jump_forward``
  returns ``([], text)`` with the text every completion must continue with (the longest
  valid UTF-8 prefix of :meth:`tokamata.Matcher.forced_bytes`), SGLang appends
  and re-tokenizes it, and ``jump_and_retokenize`` rolls back to the common prefix of the
  old and new ids and accepts the new ones.
- Compile errors become SGLang's ``InvalidGrammarObject`` with the error's text (an HTTP 400
  for that request); the backend caches constraints in a :class:`tokamata.ConstraintCache`.
"""

from __future__ import annotations

from typing import Any

from ..constraint_cache import ConstraintCache
from ..errors import InvalidArgument, TokamataError
from ..limits import Limits
from ..matcher import fill_bitmasks
from .serving import RequestMatcher, request_recipe, vocabulary_from_tokenizer

__all__ = ["install", "BACKEND_NAME", "TokamataGrammarObject", "TokamataGrammarBackend"]

BACKEND_NAME = "tokamata"
#: longest jump-forward text, in bytes
MAX_JUMP_BYTES = 256
_OPTIONS: dict[str, Any] = {"whitespace": "flexible", "max_whitespace": 4, "limits": None,
                            "max_cache_bytes": 1 << 30}

# SGLang's key types -> request kinds
_KEY_KINDS = {"json": "json", "regex": "regex", "ebnf": "grammar", "full_assistant_ebnf": "grammar",
              "structural_tag": "structural_tag"}


def _define():
    import torch
    from sglang.srt.constrained.base_grammar_backend import (BaseGrammarBackend, BaseGrammarObject,
                                                             InvalidGrammarObject)

    class TokamataGrammarObject(BaseGrammarObject):
        """One request: SGLang's ``BaseGrammarObject`` over a tokamata matcher."""

        def __init__(self, request: RequestMatcher, key: tuple[str, str] | None = None):
            super().__init__()
            self.request = request
            self.key = key

        def accept_token(self, token: int) -> None:
            if self.request.terminated:
                return
            self.current_token = token
            if not self.request.accept([token]):
                reason = f": {self.request.error}" if self.request.error is not None else ""
                raise InvalidArgument(f"token {token} refused by the constraint{reason}")

        def rollback(self, k: int) -> None:
            self.request.rollback(k)

        def is_terminated(self) -> bool:
            return self.request.is_terminated()

        def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> torch.Tensor:
            return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32)

        def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
            self.request.fill(vocab_mask, idx)

        @staticmethod
        def fill_vocab_mask_batched(entries, vocab_mask: torch.Tensor) -> None:
            live = [e for e in entries if isinstance(e.grammar, TokamataGrammarObject) and e.grammar.request.live]
            if live:
                try:
                    fill_bitmasks([e.grammar.request.matcher for e in live], vocab_mask, [e.row for e in live])
                except TokamataError:
                    live = []  # (one of them reached a limit: fill one by one, which records it)
                for entry in live:
                    entry.grammar.request.adjust_stops(vocab_mask, entry.row)
            done = {id(e) for e in live}
            for entry in entries:
                if id(entry) not in done:
                    entry.grammar.fill_vocab_mask(vocab_mask, entry.row)

        @staticmethod
        def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
            vocab_mask.fill_(-1)

        @staticmethod
        def move_vocab_mask(vocab_mask: torch.Tensor, device) -> torch.Tensor:
            return vocab_mask.to(device, non_blocking=True)

        @staticmethod
        def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
            from .torch import bitmask_to_bool

            allowed = bitmask_to_bool(vocab_mask, logits.shape[-1], device=logits.device)
            logits.masked_fill_(~allowed[: logits.shape[0]], float("-inf"))

        def copy(self) -> "TokamataGrammarObject":
            return TokamataGrammarObject(RequestMatcher(self.request.constraint, self.request.stop), self.key)

        def try_jump_forward(self, tokenizer) -> tuple[list[int], str] | None:
            if self.request.terminated or self.request.error is not None:
                return None
            text = _valid_utf8_prefix(self.request.matcher.forced_bytes(MAX_JUMP_BYTES))
            return ([], text) if text else None

        def jump_forward_str_state(self, helper: tuple[list[int], str]) -> tuple[str, int]:
            return helper[1], -1

        def jump_and_retokenize(self, old_output_ids: list[int], new_output_ids: list[int],
                                next_state: int) -> None:
            common = 0
            for old, new in zip(old_output_ids, new_output_ids):
                if old != new:
                    break
                common += 1
            self.request.rollback(len(old_output_ids) - common)
            for token in new_output_ids[common:]:
                self.accept_token(token)

    class TokamataGrammarBackend(BaseGrammarBackend):
        """SGLang's ``BaseGrammarBackend``: one vocabulary and constraint cache per server."""

        def __init__(self, tokenizer, vocab_size: int, eos_token_ids=None):
            super().__init__()
            self.vocab = vocabulary_from_tokenizer(tokenizer, vocab_size)
            self.stop = frozenset(eos_token_ids) if eos_token_ids else None
            self.constraints = ConstraintCache(self.vocab, max_bytes=_OPTIONS["max_cache_bytes"])

        def _compile(self, key_type: str, key_string: str):
            try:
                made = request_recipe(_KEY_KINDS[key_type], key_string, whitespace=_OPTIONS["whitespace"],
                                      max_whitespace=_OPTIONS["max_whitespace"], limits=_OPTIONS["limits"])
                constraint = self.constraints.get_recipe(made)
            except (TokamataError, ValueError) as error:  # (a choice list that is not JSON: ValueError)
                return InvalidGrammarObject(f"{type(error).__name__}: {error}")
            return TokamataGrammarObject(RequestMatcher(constraint, self.stop), (key_type, key_string))

        def dispatch_json(self, key_string: str):
            return self._compile("json", key_string)

        def dispatch_regex(self, key_string: str):
            return self._compile("regex", key_string)

        def dispatch_ebnf(self, key_string: str):
            return self._compile("ebnf", key_string)

        def dispatch_structural_tag(self, key_string: str):
            return self._compile("structural_tag", key_string)

    return TokamataGrammarObject, TokamataGrammarBackend


def _valid_utf8_prefix(data: bytes) -> str:
    """The longest prefix of ``data`` that is whole UTF-8 characters, decoded."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


def __getattr__(name: str):
    if name in ("TokamataGrammarObject", "TokamataGrammarBackend"):
        grammar, backend = _define()
        globals().update(TokamataGrammarObject=grammar, TokamataGrammarBackend=backend)
        return globals()[name]
    raise AttributeError(name)


def create_backend(server_args, tokenizer, vocab_size: int, eos_token_ids=None):
    """SGLang's backend factory signature (``register_grammar_backend``)."""
    return __getattr__("TokamataGrammarBackend")(tokenizer, vocab_size, eos_token_ids)


def install(*, whitespace: str = "flexible", max_whitespace: int = 4, limits: Limits | None = None,
            max_cache_bytes: int = 1 << 30) -> None:
    """Register ``"tokamata"`` with SGLang's grammar backend registry (and its CLI choices,
    where this SGLang version has the hook); the options are as for
    :func:`tokamata.integrations.vllm.install`. Idempotent."""
    from sglang.srt.constrained import base_grammar_backend as registry

    _OPTIONS.update(whitespace=whitespace, max_whitespace=max_whitespace, limits=limits,
                    max_cache_bytes=max_cache_bytes)
    registry.register_grammar_backend(BACKEND_NAME, create_backend)
    try:
        from sglang.srt import server_args
    except ImportError:  # pragma: no cover
        return
    choices = getattr(server_args, "GRAMMAR_BACKEND_CHOICES", None)
    if isinstance(choices, list) and BACKEND_NAME not in choices:
        choices.append(BACKEND_NAME)
