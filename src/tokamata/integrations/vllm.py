"""tokamata as a vLLM (v1) structured-output backend: ``structured_outputs_config.backend=
"tokamata"`` once :func:`install` has run.

vLLM has no registry for these backends (its manager picks one with an if/elif on the name,
and its config lists the names in a ``Literal``), so :func:`install` adds the name in the
three places that know them, on the vLLM versions in :data:`SUPPORTED_VLLM` only (it refuses
others with :class:`~tokamata.Unsupported`, since those places move between releases):

1. ``StructuredOutputsConfig.backend`` accepts ``"tokamata"`` (the ``Literal`` is extended
   and the pydantic dataclass rebuilt);
2. ``SamplingParams._validate_structured_outputs`` marks requests of such an engine for
   tokamata (the checks vLLM runs for every backend first; nothing is compiled in the
   front end process: a bad spec fails its request when the engine compiles it);
3. ``StructuredOutputManager.grammar_init`` builds a :class:`TokamataBackend` for them;
4. ``StructuredOutputManager.grammar_bitmask`` fills a tokamata engine's rows, speculative
   draft positions included, with one native call per batch
   (:meth:`TokamataBackend.fill_bitmask_rows`) instead of vLLM's fill / accept / rollback
   per draft token; batches where some request is still reasoning (a reasoning parser whose
   end is not reached) and diffusion models keep vLLM's own loop.

Call it in every process that builds an engine or validates requests, before the engine
starts (``LLM(...)``, or in a ``vllm serve`` plugin entry point)::

    import tokamata.integrations.vllm
    tokamata.integrations.vllm.install()
    llm = vllm.LLM(model, structured_outputs_config={"backend": "tokamata"})

Invariants:
- :class:`TokamataGrammar` follows vLLM's ``StructuredOutputGrammar`` contract through
  :class:`~tokamata.integrations.serving.RequestMatcher`: ``validate_tokens`` returns the
  accepted prefix with the state unchanged (``-1`` padding ends it); ``rollback`` also
  reverts ``num_processed_tokens``; the request's stop ids (``stop_token_ids``) are allowed
  exactly where the output is complete.
- A request fails alone: a compile error is raised by ``compile_grammar`` (vLLM's Future
  carries it to that request); a refused or out-of-range token, or a limit reached while
  filling a mask, makes ``accept_tokens`` return False (vLLM finishes the request with
  ``FINISHED_ERROR``); a failed request's rows allow only its stop ids.
- :meth:`TokamataBackend.fill_bitmask_rows` writes exactly the rows vLLM's own
  ``grammar_bitmask`` loop writes through the grammars (``tests/serving`` compares them):
  for each request a block of ``num_speculative_tokens + 1`` rows, row ``j`` the mask after
  its first ``j`` draft tokens; after ``-1`` padding or once a stop id ends the request, rows
  allow everything (vLLM's full rows); after a draft token the grammar refuses, rows repeat
  the row it was refused under; a grammar that had terminated gets full rows.
- Constraints are compiled once per spec per engine (a :class:`tokamata.ConstraintCache` of
  ``max_cache_bytes``) and shared by requests; each request has its own matcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..constraint_cache import ConstraintCache
from ..errors import InvalidArgument, Unsupported
from ..limits import Limits
from .serving import RequestMatcher, fill_drafts, request_recipe, vocabulary_from_tokenizer

__all__ = ["install", "TokamataBackend", "TokamataGrammar", "SUPPORTED_VLLM", "BACKEND_NAME"]

#: the vLLM versions :func:`install` knows the patch points of
SUPPORTED_VLLM = ("0.33.0",)
BACKEND_NAME = "tokamata"

#: options of the backend, set by :func:`install`
_OPTIONS: dict[str, Any] = {"whitespace": "flexible", "max_whitespace": 4, "limits": None,
                            "max_cache_bytes": 1 << 30}
_INSTALLED: list[bool] = []


def _classes():
    """vLLM's base classes and enums (imported only when needed)."""
    from vllm.v1.structured_output.backend_types import (StructuredOutputBackend, StructuredOutputGrammar,
                                                         StructuredOutputOptions)
    return StructuredOutputBackend, StructuredOutputGrammar, StructuredOutputOptions


def _define():
    StructuredOutputBackend, StructuredOutputGrammar, StructuredOutputOptions = _classes()

    @dataclass
    class TokamataGrammar(StructuredOutputGrammar):
        """One request: vLLM's ``StructuredOutputGrammar`` over a tokamata matcher."""

        request: RequestMatcher = field(repr=False)

        def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
            return self.request.accept(tokens)

        def validate_tokens(self, tokens: list[int]) -> list[int]:
            return self.request.validate(tokens)

        def rollback(self, num_tokens: int) -> None:
            self.request.rollback(num_tokens)

        def fill_bitmask(self, bitmask, batch_index: int) -> None:
            self.request.fill(bitmask, batch_index)

        def is_terminated(self) -> bool:
            return self.request.is_terminated()

        def reset(self) -> None:
            self.request.reset()

        @property
        def num_processed_tokens(self) -> int:
            return self.request.num_processed

        @property
        def error(self):
            """The error that failed this request mid-generation, or None."""
            return self.request.error

    @dataclass
    class TokamataBackend(StructuredOutputBackend):
        """vLLM's engine-level ``StructuredOutputBackend``: one vocabulary and one constraint
        cache per engine."""

        def __post_init__(self) -> None:
            if isinstance(self.vocab_size, bool) or not isinstance(self.vocab_size, int) or self.vocab_size <= 0:
                raise InvalidArgument(f"vocab_size must be a positive int, got {self.vocab_size!r}")
            self.vocab = vocabulary_from_tokenizer(self.tokenizer, self.vocab_size)
            self.cache = ConstraintCache(self.vocab, max_bytes=_OPTIONS["max_cache_bytes"])
            config = getattr(self.vllm_config, "structured_outputs_config", None)
            self.whitespace = "compact" if getattr(config, "disable_any_whitespace", False) else _OPTIONS["whitespace"]
            self._kinds = {option: option.name.lower() for option in StructuredOutputOptions}

        def compile_grammar(self, request_type, grammar_spec: str,
                            stop_token_ids: set[int] | None = None) -> TokamataGrammar:
            kind = self._kinds.get(request_type)
            if kind is None:
                raise InvalidArgument(f"unknown structured output request type {request_type!r}")
            made = request_recipe(kind, grammar_spec, whitespace=self.whitespace,
                                  max_whitespace=_OPTIONS["max_whitespace"], limits=_OPTIONS["limits"])
            constraint = self.cache.get_recipe(made)
            return TokamataGrammar(RequestMatcher(constraint, stop_token_ids or None))

        def allocate_token_bitmask(self, max_num_seqs: int):
            import torch

            return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

        def destroy(self) -> None:
            self.cache.clear()

        def fill_bitmask_rows(self, grammars: list[TokamataGrammar], drafts: list[list[int]], bitmask,
                              stride: int) -> None:
            """The rows of ``grammar_bitmask`` (see the module docstring) for a batch:
            request ``i`` owns rows ``[i * stride, i * stride + len(drafts[i]) + 1)`` of
            ``bitmask`` (int32, CPU; ``len(drafts[i]) < stride``), filled in one native call
            for the batch; nothing moves."""
            rows = np.asarray(bitmask)
            live = [i for i, g in enumerate(grammars) if not g.is_terminated()]
            for i, g in enumerate(grammars):
                if g.is_terminated():
                    rows[i * stride: i * stride + len(drafts[i]) + 1] = -1
            results = fill_drafts([grammars[i].request for i in live], [drafts[i] for i in live], bitmask,
                                  [i * stride for i in live])
            for i, (written, ended) in zip(live, results):
                draft = drafts[i]
                padding = next((j for j, t in enumerate(draft) if t == -1), len(draft))  # (vLLM's sentinel)
                start, end = i * stride, i * stride + len(draft) + 1
                if ended or written - 1 == padding:  # after the end or the padding: full rows
                    rows[start + written: end] = -1
                else:  # refused at row start + written - 1: later rows repeat it
                    rows[start + written: end] = rows[start + written - 1]

    return TokamataBackend, TokamataGrammar


def __getattr__(name: str):
    if name in ("TokamataBackend", "TokamataGrammar"):
        backend, grammar = _define()
        globals().update(TokamataBackend=backend, TokamataGrammar=grammar)
        return globals()[name]
    raise AttributeError(name)


def install(*, whitespace: str = "flexible", max_whitespace: int = 4, limits: Limits | None = None,
            max_cache_bytes: int = 1 << 30) -> None:
    """Make ``structured_outputs_config.backend="tokamata"`` work in this process (see the
    module docstring); idempotent. ``whitespace``/``max_whitespace``: JSON whitespace of JSON
    requests (vLLM's ``disable_any_whitespace`` makes it compact); ``limits``: the bounds of
    every compile; ``max_cache_bytes``: the engine's constraint cache. Raises
    :class:`Unsupported` on a vLLM version not in :data:`SUPPORTED_VLLM`."""
    import vllm

    version = getattr(vllm, "__version__", "unknown")
    if version not in SUPPORTED_VLLM:
        raise Unsupported("vllm", f"tokamata.integrations.vllm.install() knows vLLM {', '.join(SUPPORTED_VLLM)}, "
                          f"not {version}: vLLM has no backend registry, so install() patches version-specific "
                          f"places")
    _OPTIONS.update(whitespace=whitespace, max_whitespace=max_whitespace, limits=limits,
                    max_cache_bytes=max_cache_bytes)
    if _INSTALLED:
        return
    backend_class = __getattr__("TokamataBackend")
    _extend_config()
    _patch_validation()
    _patch_manager(backend_class)
    _patch_bitmask(backend_class, globals()["TokamataGrammar"])  # (the grammar class defined with it)
    _INSTALLED.append(True)


def _extend_config() -> None:
    from typing import Literal, get_args

    from pydantic.dataclasses import rebuild_dataclass
    from vllm.config import structured_outputs as module

    names = get_args(module.StructuredOutputsBackend)
    if BACKEND_NAME in names:
        return
    extended = Literal[(*names, BACKEND_NAME)]  # type: ignore[valid-type]
    module.StructuredOutputsBackend = extended
    cls = module.StructuredOutputsConfig
    cls.__annotations__["backend"] = extended
    cls.__dataclass_fields__["backend"].type = extended
    rebuild_dataclass(cls, force=True)


def _patch_validation() -> None:
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import SamplingParams

    original = SamplingParams._validate_structured_outputs

    def validate(self, model_config, structured_outputs_config, tokenizer) -> None:
        if (structured_outputs_config is None or self.structured_outputs is None
                or structured_outputs_config.backend != BACKEND_NAME):
            return original(self, model_config, structured_outputs_config, tokenizer)
        if tokenizer is None:
            raise VLLMValidationError("structured outputs need a tokenizer (not 'skip_tokenizer_init')")
        params = self.structured_outputs
        if params._backend not in (None, BACKEND_NAME):
            raise VLLMValidationError(f"request-level structured output backend selection is not supported: the "
                                      f"request asks for {params._backend!r}, the engine uses {BACKEND_NAME!r}")
        for name in ("grammar", "json"):
            value = getattr(params, name)
            if isinstance(value, str) and not value.strip():
                raise VLLMValidationError(f"structured_outputs.{name} cannot be an empty string")
        if isinstance(params.choice, list) and not params.choice:
            raise VLLMValidationError("structured_outputs.choice cannot be an empty list")
        params._backend = BACKEND_NAME
        params.__post_init__()

    validate.__wrapped__ = original  # type: ignore[attr-defined]
    SamplingParams._validate_structured_outputs = validate


def _patch_manager(backend_class) -> None:
    from vllm.v1.structured_output import StructuredOutputManager

    original = StructuredOutputManager.grammar_init

    def grammar_init(self, request) -> None:
        if self.backend is None and request.structured_output_request is not None:
            params = request.sampling_params.structured_outputs
            if params is not None and params._backend == BACKEND_NAME:
                self.backend = backend_class(self.vllm_config, tokenizer=self.tokenizer,
                                             vocab_size=self.vllm_config.model_config.get_vocab_size())
                self.backend_name = BACKEND_NAME
        return original(self, request)

    grammar_init.__wrapped__ = original  # type: ignore[attr-defined]
    StructuredOutputManager.grammar_init = grammar_init


def _patch_bitmask(backend_class, grammar_class) -> None:
    from vllm.v1.structured_output import StructuredOutputManager

    original = StructuredOutputManager.grammar_bitmask

    def grammar_bitmask(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens):
        if (not isinstance(self.backend, backend_class) or not structured_output_request_ids
                or self.vllm_config.model_config.is_diffusion):
            return original(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)
        grammars = []
        for req_id in structured_output_request_ids:
            request = requests[req_id]
            grammar = request.structured_output_request.grammar
            if not isinstance(grammar, grammar_class) or tuple(self._get_constraint_bounds(request, ())) != (0, 0):
                return original(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)
            grammars.append(grammar)
        max_spec = self.vllm_config.num_speculative_tokens
        if self._grammar_bitmask is None:
            self._grammar_bitmask = self.backend.allocate_token_bitmask(
                self.vllm_config.scheduler_config.max_num_seqs * (1 + max_spec))
        drafts = [list(scheduled_spec_decode_tokens.get(req_id, ())) if max_spec else []
                  for req_id in structured_output_request_ids]
        self.backend.fill_bitmask_rows(grammars, drafts, self._grammar_bitmask, max_spec + 1)
        return self._grammar_bitmask[: len(structured_output_request_ids) * (max_spec + 1)].numpy()

    grammar_bitmask.__wrapped__ = original  # type: ignore[attr-defined]
    StructuredOutputManager.grammar_bitmask = grammar_bitmask
