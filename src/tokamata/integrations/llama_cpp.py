"""llama-cpp-python adapter: a logits processor, a vocabulary helper and a generation loop.

Usage::

    from llama_cpp import Llama, LogitsProcessorList
    from tokamata.integrations.llama_cpp import LlamaLogitsProcessor, generate, vocabulary

    llm = Llama(model_path, verbose=False)
    constraint = tokamata.compile_regex(r"(yes|no)", vocabulary(llm))
    # either through llama-cpp-python's own API ...
    out = llm("Is water wet? Answer:", max_tokens=8, temperature=0.0,
              logits_processor=LogitsProcessorList([LlamaLogitsProcessor(constraint)]))
    # ... or through tokamata's loop, which stops as soon as the output is complete
    result = generate(llm, constraint, "Is water wet? Answer:")
    result.text, result.token_ids

How llama-cpp-python calls a processor (checked against 0.3.x): ``Llama.generate`` puts a
custom sampler first in its sampler chain; it calls ``processor(input_ids, scores)`` with
``input_ids`` = every token evaluated so far (prompt included, ``np.intc``) and ``scores`` = the
logits of the last position in token-id order (a strided ``float32`` view of length
``n_vocab``), and copies the returned array back. Temperature, top-k and friends run after it.

Speed note: llama.cpp's CPU backend uses OpenMP, whose threads spin while waiting by default.
On a small machine shared with other work that is several times slower (2 busy cores: 3.8 vs
19.5 tok/s for Gemma 3 270M); set ``OMP_WAIT_POLICY=PASSIVE`` before llama_cpp (or torch, which
loads the same ``libgomp.so.1``) is first imported. ``python -m tokamata`` does.

Invariants:
- The processor keeps one :class:`tokamata.Matcher`; the prompt is the ``input_ids`` of its first
  call. Each call feeds the tokens generated since then; a shorter or different sequence rolls
  the matcher back to the common prefix, a different prompt starts over. So one processor can
  serve several completions, one at a time (not thread-safe).
- After an EOS token is consumed only EOS stays allowed (the scores never become all -inf).
- A generated token the constraint does not allow raises :class:`InvalidArgument` naming it: the
  masked scores cannot produce one, so the model's vocabulary is not the constraint's.
- :meth:`LlamaLogitsProcessor.prefetch` fills the next mask on a worker thread (the fill
  releases the GIL) while llama.cpp evaluates the token (ctypes releases it too); the next call
  uses that row only if the matcher has not moved since (a version counter), and always waits
  for the worker before touching the matcher, so the matcher is never used by two threads.
  :func:`generate` prefetches after every token, so the mask costs no decoding time where the
  machine has a core to spare. The worker threads are process-wide (:func:`mask_workers`),
  started once: starting a thread per generation cost more than the masks of a short one.
- The ids seen so far (prompt, then the consumed tokens) are kept in one array; a call whose
  ids extend them is recognized with one vectorized comparison and consumes only the new
  tokens, so a step costs the same whatever the prompt's length.
"""

from __future__ import annotations

import dataclasses
import time
import os
import threading
import queue
from typing import TYPE_CHECKING, Sequence

import numpy as np

from tokamata.bitmask import token_bitmask_row
from tokamata.errors import InvalidArgument
from tokamata.constraint import Constraint
from tokamata.integrations.apply import apply_bitmask
from tokamata.integrations.resolve import resolve_constraint

if TYPE_CHECKING:  # pragma: no cover
    import llama_cpp

class MaskWorkers:
    """Process-wide threads that run prefetched mask fills (one per core up to 4, started
    together on first use, daemons). A job is a callable and its argument, run as given: the
    callable reports its own outcome (it must not raise). Submitting is one put on a C-level
    queue: the per-token path stays short when the model's evaluation has swept the caches
    (a ThreadPoolExecutor's submit and Future cost ~120 and ~60 us there)."""

    def __init__(self, threads: int):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._run, name=f"tokamata-mask-{i}", daemon=True)
                        for i in range(threads)]
        for thread in self.threads:
            thread.start()

    def submit(self, job, argument) -> None:
        self._jobs.put((job, argument))

    def _run(self) -> None:
        while True:
            job, argument = self._jobs.get()
            job(argument)


_WORKERS: MaskWorkers | None = None
_WORKERS_LOCK = threading.Lock()


def mask_workers() -> MaskWorkers:
    """The process-wide :class:`MaskWorkers` (started on first use)."""
    global _WORKERS
    if _WORKERS is None:
        with _WORKERS_LOCK:
            if _WORKERS is None:
                _WORKERS = MaskWorkers(min(4, os.cpu_count() or 1))
    return _WORKERS

__all__ = ["LlamaLogitsProcessor", "GenerationResult", "generate", "vocabulary"]

_INSTALL_HINT = (
    "llama-cpp-python is not installed; install it with: pip install llama-cpp-python "
    "(it builds llama.cpp from source, about 10 minutes on 2 cores)"
)


def _require_llama_cpp():
    try:
        import llama_cpp
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return llama_cpp


_VOCAB_CACHE: dict[tuple[str, int], object] = {}


def vocabulary(llm: "llama_cpp.Llama"):
    """The :class:`tokamata.Vocabulary` of a loaded ``llama_cpp.Llama`` (read from its GGUF).

    Cached per (model path, ``n_vocab``) for the life of the process.
    """
    from tokamata.vocab import Vocabulary

    key = (str(llm.model_path), int(llm.n_vocab()))
    vocab = _VOCAB_CACHE.get(key)
    if vocab is None:
        vocab = _VOCAB_CACHE[key] = Vocabulary.from_gguf(key[0], size=key[1])
    return vocab


class LlamaLogitsProcessor:
    """Sets the logits of tokens ``constraint`` does not allow next to -inf (in place when the
    scores are a writable float32 array, as llama-cpp-python passes them; returns them).

    Pass it in a ``llama_cpp.LogitsProcessorList``; put it last so that nothing re-enables a
    token it removed. ``prompt_length`` defaults to the length of the first call's input_ids.
    A Python type may stand for the constraint: it is compiled with
    :func:`tokamata.compile_type` over ``vocab`` (see :func:`vocabulary`).

    ``max_new_tokens`` (the budget mode): the tokens this generation may still take, EOS
    included, are ``max_new_tokens`` less those generated so far, and only tokens after which
    a complete output and its EOS fit are allowed (:meth:`tokamata.Matcher.fill_bitmask`'s
    ``max_tokens``). With llama-cpp-python's own ``max_tokens=n`` (which does not count the
    EOS it stops on), pass ``max_new_tokens=n + 1``: the output is complete at the cap.
    """

    def __init__(self, constraint, prompt_length: int | None = None, *, vocab=None, syntax: str = "json",
                 max_new_tokens: int | None = None):
        if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
                                           or max_new_tokens < 1):
            raise InvalidArgument(f"max_new_tokens must be an int >= 1 or None, not {max_new_tokens!r}")
        #: the generation's token budget, EOS included (None: plain masks)
        self.max_new_tokens = max_new_tokens
        constraint = resolve_constraint(constraint, vocab, syntax)
        self.constraint = constraint
        self.vocab = constraint.vocab
        self.vocab_size = int(self.vocab.size)
        self._eos = frozenset(int(t) for t in self.vocab.eos_token_ids)
        self._fixed_prompt_length = prompt_length
        self.prompt_length = prompt_length
        self._prompt: np.ndarray | None = None
        self.matcher = constraint.matcher()
        self.tokens: list[int] = []  # generated tokens consumed, EOS included
        self.done = False  # an EOS token was consumed
        words = (self.vocab_size + 31) // 32
        self._bitmask = np.zeros((1, words), dtype=np.int32)
        self._eos_only = token_bitmask_row(self._eos, self.vocab_size)
        self._version = 0  # bumped whenever the matcher moves
        self._filled = -1  # the version self._bitmask was filled at
        self._pending = False  # a prefetch was submitted and not joined yet
        self._prefetch_done = threading.Lock()  # held while a prefetch runs
        self._prefetch_error: BaseException | None = None
        self._seen = np.zeros(64, dtype=np.int32)  # prompt + consumed tokens, the first _num_seen
        self._num_seen = 0
        self._seen_bytes = b""  # the same as bytes (what llama.cpp's int32 input_ids compare to)
        #: seconds llama.cpp's sampling waited in :meth:`__call__` (the mask's share of the
        #: decoding loop's critical path; a prefetched mask is only waited for, not computed)
        self.call_seconds = 0.0

    def prefetch(self) -> None:
        """Start filling the mask of the current position on a worker thread (see the module
        docstring); the next call, :meth:`allowed_mask` or :meth:`sync` waits for it."""
        self._join()
        if self.done or self._filled == self._version:
            return
        self._prefetch_done.acquire()
        self._pending = True
        mask_workers().submit(self._prefetch_job, self._version)

    def _prefetch_job(self, version: int) -> None:
        """The fill, on a worker thread: an error is kept for :meth:`_join` to raise."""
        try:
            self._fill_at(version)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            self._prefetch_error = error
        finally:
            self._prefetch_done.release()

    def _fill_at(self, version: int) -> None:
        if self.max_new_tokens is None:
            self.matcher.fill_bitmask(self._bitmask, 0)
        else:
            left = self.max_new_tokens - len(self.tokens)
            if left < 1:
                raise InvalidArgument(f"token {len(self.tokens) + 1} asked for, past max_new_tokens="
                                      f"{self.max_new_tokens} (EOS included)")
            self.matcher.fill_bitmask(self._bitmask, 0, max_tokens=left)
            if not self.tokens and not self._bitmask[0].any():
                raise InvalidArgument(f"max_new_tokens={self.max_new_tokens} is too small for any output of the "
                                      f"constraint (it needs {self.matcher.budget_needed()} tokens, EOS included)")
        self._filled = version

    def _join(self) -> None:
        if self._pending:
            self._prefetch_done.acquire()  # (waits for the worker)
            self._prefetch_done.release()
            self._pending = False
            error, self._prefetch_error = self._prefetch_error, None
            if error is not None:
                raise error  # a LimitExceeded from the fill, in the caller's thread

    def close(self) -> None:
        """Wait for a prefetch in flight (the worker threads are shared: they stay)."""
        self._join()

    def reset(self) -> None:
        """Forget the prompt and everything consumed."""
        self._join()
        self._version += 1
        self.prompt_length = self._fixed_prompt_length
        self._prompt = None
        self.matcher = self.constraint.matcher()
        self.tokens = []
        self.done = False
        self._num_seen = 0

    def advance(self, token: int) -> None:
        """Consume one generated token after the ids seen so far (what :meth:`sync` with them
        plus ``token`` does, without comparing the ids)."""
        self._join()
        if self._prompt is None:
            raise InvalidArgument("advance() before the prompt is known: call sync() first")
        self._consume_new([int(token)])

    def _consume_new(self, generated: list[int]) -> None:
        """Consume tokens generated after ``self.tokens`` (the matcher moves)."""
        if not generated or self.done:
            return
        self._version += 1
        try:
            for token in generated:
                self._consume_one(token)
                if self.done:
                    break
        finally:  # (what was consumed before a refused token stays consumed)
            self._remember_tokens()

    def _consume_one(self, token: int) -> None:
        done = self.tokens
        if not self.matcher.consume(token):
            shown = self.vocab.token_bytes[token] if 0 <= token < self.vocab_size else None
            so_far = b"".join(self.vocab.token_bytes[t] or b"" for t in done)
            raise InvalidArgument(
                f"generated token {token} ({shown!r}) after {so_far[-60:]!r} is not allowed by "
                f"the constraint; the masked logits cannot produce it, so the model's "
                f"vocabulary differs from the constraint's, or a logits processor after this "
                f"one re-enabled tokens, or prompt_length={self.prompt_length} is wrong"
            )
        done.append(token)
        if token in self._eos:
            self.done = True

    def _remember_tokens(self) -> None:
        """Bring the array of ids seen up to the prompt + ``self.tokens``; tokens are only
        appended between calls (:meth:`_sync_slow` clears it when it rolls back)."""
        prompt = self._prompt
        assert prompt is not None  # (set by sync before any token is consumed)
        first = len(prompt)
        n = first + len(self.tokens)
        if n > len(self._seen):
            grown = np.zeros(max(n, 2 * len(self._seen)), dtype=np.int32)
            grown[:self._num_seen] = self._seen[:self._num_seen]
            self._seen = grown
        if self._num_seen < first:
            self._seen[:first] = prompt
            self._num_seen = first
        self._seen[self._num_seen:n] = self.tokens[self._num_seen - first:]
        self._num_seen = n
        self._seen_bytes = self._seen[:n].tobytes()

    def sync(self, input_ids: Sequence[int] | np.ndarray) -> None:
        """Make the matcher's state match ``input_ids`` (prompt + generated tokens)."""
        self._join()
        ids = np.asarray(input_ids)
        known = self._num_seen
        # (bytes compare: after the model's evaluation has swept the caches, np.array_equal
        # costs ~100 us of cold numpy code paths, a bytes comparison ~25)
        if self._prompt is not None and known and len(ids) >= known and not self.done \
                and (ids[:known].tobytes() == self._seen_bytes if ids.dtype == np.int32
                     else np.array_equal(ids[:known], self._seen[:known])):
            if len(ids) > known:  # (the usual step: the ids seen so far, then new tokens)
                self._consume_new(ids[known:].tolist())
            return
        self._sync_slow(ids)

    def _sync_slow(self, ids: np.ndarray) -> None:
        self._num_seen = 0
        if self._prompt is not None:
            n = len(self._prompt)
            if len(ids) < n or not np.array_equal(ids[:n], self._prompt):
                self.reset()
        if self.prompt_length is None:
            self.prompt_length = len(ids)
        if self._prompt is None:
            if len(ids) < self.prompt_length:
                raise InvalidArgument(
                    f"input_ids has {len(ids)} tokens, fewer than prompt_length={self.prompt_length}"
                )
            self._prompt = ids[: self.prompt_length].copy()
        generated = ids[self.prompt_length:].tolist()
        done = self.tokens
        n = min(len(done), len(generated))
        if generated[:n] != done[:n]:
            common = next(i for i in range(n) if generated[i] != done[i])
        else:
            common = n
        if common < len(done) or common < len(generated):
            self._version += 1
        if common == 0 and done:
            self.matcher = self.constraint.matcher()  # cheaper than a full rollback
            done.clear()
            self.done = False
        elif common < len(done):
            self.matcher.rollback(len(done) - common)
            del done[common:]
            self.done = bool(done) and done[-1] in self._eos
        try:
            if not self.done:
                for token in generated[common:]:
                    self._consume_one(token)
                    if self.done:
                        break
        finally:
            self._remember_tokens()

    def allowed_mask(self) -> np.ndarray:
        """A bool array over the vocabulary: which tokens may come next (after :meth:`sync`)."""
        bits = np.unpackbits(self.row().view(np.uint8), bitorder="little")
        return bits[: self.vocab_size].view(bool)

    def row(self) -> np.ndarray:
        """The bitmask row (int32 words) of the tokens that may come next (after :meth:`sync`);
        the prefetched one when the matcher has not moved since."""
        if self.done:
            return self._eos_only
        self._join()
        if self._filled != self._version:
            self._fill_at(self._version)
        return self._bitmask[0]

    def only_eos(self) -> bool:
        """Whether nothing but EOS may come next."""
        return self.done or (self.matcher.is_accepting() and bool(np.array_equal(self.row(), self._eos_only)))

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self._masked(input_ids, scores)
        finally:
            self.call_seconds += time.perf_counter() - start

    def _masked(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        self.sync(input_ids)
        width = scores.shape[-1]
        if width < self.vocab_size:
            raise InvalidArgument(
                f"the model has {width} logits per token but the constraint's vocabulary has "
                f"{self.vocab_size} tokens: build the Vocabulary with "
                f"tokamata.integrations.llama_cpp.vocabulary(llm)"
            )
        if isinstance(scores, np.ndarray) and scores.dtype == np.float32 and scores.ndim == 1 and scores.flags.writeable:
            # in place, on llama.cpp's strided view of its token data: no copy there and back
            # (llama-cpp-python assigns the result to the same view, which numpy skips)
            return apply_bitmask(scores, self.row())  # columns past the vocabulary become -inf too
        out = np.array(scores, dtype=np.float32)
        apply_bitmask(out, self.row())
        return out


@dataclasses.dataclass
class GenerationResult:
    """What :func:`generate` produced.

    ``token_ids`` are the generated tokens (EOS excluded); ``text`` their bytes decoded as UTF-8
    (invalid bytes replaced); ``finished`` says the output ended on EOS (or on a state where only
    EOS was allowed) rather than on ``max_tokens``; ``seconds`` is the time spent generating
    (prompt evaluation included), ``prompt_tokens`` the prompt's length in tokens.
    ``first_token_seconds`` is the time until the first sampled token (prompt evaluation, first
    mask, sampling); ``decode_steps`` and ``decode_seconds`` count the sampling steps after it
    (one model evaluation, mask and sample each; a final EOS included), so
    :attr:`decode_tokens_per_second` is the per-token speed without the prompt.
    """

    text: str
    token_ids: list[int]
    finished: bool
    seconds: float
    prompt_tokens: int
    first_token_seconds: float = 0.0
    decode_steps: int = 0
    decode_seconds: float = 0.0
    #: the constraint generated under (compiled here when a type was given), or None
    constraint: "Constraint | None" = None
    #: of ``decode_seconds``, the time the loop waited on tokamata (masking the logits in the
    #: sampler, consuming the token, starting the next mask): its share of the decoding time,
    #: whatever the output's length (0 without a constraint)
    constraint_seconds: float = 0.0

    def __iter__(self):  # so that ``text, token_ids = generate(...)`` works
        return iter((self.text, self.token_ids))

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second, prompt evaluation included."""
        return len(self.token_ids) / self.seconds if self.seconds > 0 else float("nan")

    @property
    def decode_tokens_per_second(self) -> float:
        """Sampling steps per second after the first token (nan when there were none)."""
        return self.decode_steps / self.decode_seconds if self.decode_steps else float("nan")


def generate(
    llm: "llama_cpp.Llama",
    constraint,
    prompt: str | Sequence[int],
    max_tokens: int = 64,
    temperature: float = 0.0,
    *,
    seed: int | None = None,
    add_bos: bool = True,
    budget: bool | None = None,
) -> GenerationResult:
    """Generate with ``llm`` under ``constraint`` (``None``: unconstrained, same loop; a Python
    type is compiled with :func:`tokamata.compile_type` over ``llm``'s vocabulary, and
    ``result.constraint.parse(result.text)`` reads the instance back).

    ``prompt`` is text (tokenized with special tokens parsed, so chat-template markers work) or
    token ids. Greedy when ``temperature`` is 0, otherwise llama.cpp's sampler at that
    temperature. Stops on an end-of-generation token, after ``max_tokens`` tokens, or, under a
    constraint, as soon as the constraint allows nothing but EOS (no model call is spent on it).
    Unpack as ``text, token_ids = generate(...)`` or use the :class:`GenerationResult` fields.

    ``budget`` (default: on under a constraint that supports token budgets, see
    :attr:`tokamata.Matcher.supports_budgets`; not canonical mode or token filters): masks with
    a token budget, so that the output is a complete sentence of the constraint within
    ``max_tokens`` tokens (the EOS that would follow is not counted: ``finished`` is then true
    at the cap too); ``budget=False`` masks plainly and may stop mid-sentence at
    ``max_tokens``; ``budget=True`` where budgets are not supported raises
    :class:`~tokamata.Unsupported`. ``max_tokens`` too small for any output raises
    :class:`InvalidArgument`.
    """
    if budget is not None and not isinstance(budget, bool):
        raise InvalidArgument(f"budget must be a bool or None, got {budget!r}")
    llama_cpp = _require_llama_cpp()
    if isinstance(prompt, str):
        prompt_ids = llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)
    else:
        prompt_ids = [int(t) for t in prompt]
    if max_tokens < 1:
        raise InvalidArgument(f"max_tokens must be >= 1, not {max_tokens}")
    if seed is not None:
        llm.set_seed(seed)
    processor = None
    kwargs = {}
    if constraint is not None:
        resolved = resolve_constraint(constraint, None if isinstance(constraint, Constraint) else vocabulary(llm),
                                      "json")
        if budget is None:
            budget = resolved.matcher().supports_budgets
        processor = LlamaLogitsProcessor(resolved, prompt_length=len(prompt_ids),
                                         max_new_tokens=max_tokens + 1 if budget else None)
        constraint = processor.constraint
        if budget:  # (an error inside llama.cpp's sampler callback would only be printed)
            processor.row()  # raises InvalidArgument when no output fits
        kwargs["logits_processor"] = llama_cpp.LogitsProcessorList([processor])
        eos = frozenset(processor._eos)
        token_bytes = constraint.vocab.token_bytes
    else:
        eos = frozenset()
    out: list[int] = []
    finished = False
    steps = 0
    loop_seconds = 0.0  # (tokamata's time in this loop, after the first token)
    first_call_seconds = 0.0  # (the processor's time up to the first token)
    start = time.perf_counter()
    first = last = start
    stream = llm.generate(
        prompt_ids, temp=temperature, top_k=0 if temperature else 40, top_p=1.0, min_p=0.0,
        repeat_penalty=1.0, reset=True, **kwargs,
    )
    try:
        for token in stream:
            last = time.perf_counter()
            steps += 1
            if steps == 1:
                first = last
                first_call_seconds = processor.call_seconds if processor is not None else 0.0
            if token in eos or _is_eog(llama_cpp, llm, token):
                finished = True
                break
            out.append(token)
            if processor is not None:
                t0 = time.perf_counter()
                processor.advance(token)
                only_eos = processor.only_eos()
                loop_seconds += time.perf_counter() - t0
                if only_eos:
                    finished = True
                    break
            if len(out) >= max_tokens:
                # (under a budget the output is complete here: only EOS would fit)
                finished = processor is not None and bool(budget) and processor.matcher.is_accepting()
                break
            if processor is not None:
                t0 = time.perf_counter()
                processor.prefetch()  # the next mask, while llama.cpp evaluates this token
                loop_seconds += time.perf_counter() - t0
    finally:
        stream.close()
        if processor is not None:
            processor.close()
    seconds = time.perf_counter() - start
    if constraint is not None:
        data = b"".join(token_bytes[t] or b"" for t in out)
    else:
        data = llm.detokenize(out)
    return GenerationResult(
        text=data.decode("utf-8", errors="replace"), token_ids=out, finished=finished,
        seconds=seconds, prompt_tokens=len(prompt_ids), first_token_seconds=first - start,
        decode_steps=max(steps - 1, 0), decode_seconds=last - first, constraint=constraint,
        constraint_seconds=0.0 if processor is None else loop_seconds + processor.call_seconds - first_call_seconds,
    )


def _is_eog(llama_cpp, llm, token: int) -> bool:
    try:
        return bool(llama_cpp.llama_vocab_is_eog(llm._model.vocab, token))
    except AttributeError:  # older llama-cpp-python
        return token == llm.token_eos()
