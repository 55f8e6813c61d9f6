"""The :class:`Pipeline`: generation, sequence probabilities and probability mass over one model
(seed 003, section 5.1 and App. A), with every mask from the one :class:`~tokamata.Matcher`.

Invariants:
- Every result carries two log-probabilities per token (:mod:`tokamata.generate.results`):
  ``unconstrained``, the model's own at temperature 1 (``log_softmax`` of its logits), and
  ``constrained``, the same logits renormalized over the tokens the constraint allows at
  that step (:mod:`tokamata.generate.scoring`). Sampling settings (temperature, top-k, top-p)
  choose tokens; they never change the reported log-probabilities.
- A forced step (``Matcher.forced_tokens``, or an EOS that is the only allowed token) makes no
  model call: its constrained log-probability is 0 exactly, and its unconstrained one is
  read from the next model call, which evaluates the forced run together with the new token
  (``Backend.logits`` with ``start`` at the first unscored position), or from one last call
  after the loop. So every token of a result has both values, and ``forced_steps`` model
  calls were saved.
- The constraint must be over the model's vocabulary: the same object, or one with the same
  size, EOS ids and token bytes; anything else is refused (:class:`~tokamata.InvalidArgument`)
  before a model call. A Python type is compiled with :func:`tokamata.compile_type`.
- Token healing (``heal=``) removes prompt tokens with :func:`tokamata.heal` and constrains
  the output to begin with their bytes (``constraint.matcher(prefix=...)``); without a
  constraint, the healing prefix alone is the constraint (any text after it).
- ``canonical=True`` goes through :func:`constraint_matcher`, the one place that makes
  matchers: a constraint compiled with ``canonical=True`` is used as it is; another is
  recompiled from its recipe with ``canonical=True`` (once per constraint, kept while the
  constraint lives); one without a recipe (a Python type, grammar IR) raises
  :class:`~tokamata.Unsupported` naming ``canonical mode``. Without a constraint, canonical
  mode decodes under the constraint of any text (so "constrained" is then the model
  restricted to canonical tokenizations).
- Bad input raises before any model call: a prompt that is empty or leaves no room in the
  model's context, ids out of range, empty token sequences, ``max_new_tokens`` or
  ``samples`` < 1, bad sampling settings. Logits with a NaN or ``+inf`` raise where they
  are read.
- With a draft model, the decoding loop after the response prefix is
  :func:`~tokamata.generate.speculative.speculative_decode` (same matcher, same log-probability
  bookkeeping, same stopping rules); the draft's vocabulary must equal the model's.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..bitmask import allocate_bitmask, unpack_bitmask
from ..compile import build, compile_regex
from ..constraint import Constraint, Recipe
from ..errors import InvalidArgument, Unsupported
from ..healing import heal as heal_prompt
from ..integrations.resolve import resolve_constraint
from ..limits import Limits
from ..matcher import Matcher
from .backend import Backend
from .mass import enumerate_language, importance_estimate
from .results import GenerationResult, LogProbs, ProbabilityMass, SequenceLogProbs
from .scoring import SamplingParams, check_row, constrained_log_prob, logsumexp, sample, unconstrained_log_prob
from .speculative import speculative_decode

__all__ = ["Pipeline", "constraint_matcher"]


def constraint_matcher(constraint: Constraint, prefix: bytes = b"", canonical: bool = False) -> Matcher:
    """The matcher every pipeline call decodes with (the one switch for canonical mode).

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    >>> constraint_matcher(tokamata.compile_regex("a", vocab)).allowed_tokens().tolist()
    [0]
    >>> constraint_matcher(tokamata.compile_grammar_ir(tokamata.compile_regex("a", vocab).grammar, vocab),
    ...                    canonical=True)
    Traceback (most recent call last):
    tokamata.errors.Unsupported: unsupported: canonical mode: ...
    """
    if not isinstance(canonical, bool):
        raise InvalidArgument(f"canonical must be a bool, got {canonical!r}")
    if canonical and constraint.canonical is None:
        constraint = _canonical_variant(constraint)
    return constraint.matcher(prefix=prefix)


_CANONICAL_VARIANTS: "weakref.WeakKeyDictionary[Constraint, Constraint]" = weakref.WeakKeyDictionary()


def _canonical_variant(constraint: Constraint) -> Constraint:
    """``constraint`` recompiled from its recipe with ``canonical=True`` (kept while it lives)."""
    found = _CANONICAL_VARIANTS.get(constraint)
    if found is None:
        made = constraint.recipe
        if made is None:
            raise Unsupported("canonical mode", "this constraint has no recipe to recompile canonically (a Python "
                              "type or grammar IR): compile it with canonical=True")
        options = tuple((name, value) for name, value in made.options if name != "canonical") + (("canonical", True),)
        found = _CANONICAL_VARIANTS[constraint] = build(Recipe(made.kind, made.spec, options), constraint.vocab)
    return found


class Pipeline:
    """A model with its vocabulary: :meth:`generate`, :meth:`compute_probability`,
    :meth:`compute_probability_mass`.

    ``model`` is a transformers causal LM (with ``tokenizer``, its transformers tokenizer, or a
    tokamata :class:`~tokamata.Vocabulary`: then prompts are token ids), a ``llama_cpp.Llama``
    made with ``logits_all=True`` (``tokenizer`` may be its Vocabulary; by default read from
    its GGUF), or any :class:`~tokamata.generate.backend.Backend`. ``chat_template`` overrides
    the model's chat template for ``messages`` prompts. ``batch_size`` is how many sequences
    one scoring call evaluates (one forward pass each on transformers). A pipeline is used by
    one thread at a time (its backend holds the model's cache).

    Example, with a :class:`~tokamata.generate.Backend` written on the spot (every token equally
    likely; docs/guides/generation.md has transformers and llama.cpp)::

        >>> import math, numpy as np, tokamata
        >>> class Uniform:
        ...     vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
        ...     context_length = 16
        ...     def logits(self, ids, start): return np.zeros((len(ids) - start + 1, 4), np.float32)
        ...     def score(self, prefix, seqs): return [np.zeros((len(s) + 1, 4), np.float32) for s in seqs]
        ...     def encode(self, text): return [0]
        ...     def apply_chat_template(self, messages): return [0]
        >>> pipe = Pipeline(Uniform())
        >>> ab = tokamata.compile_regex("ab", pipe.vocab)
        >>> out = pipe.generate("prompt", ab)        # greedy: "a" (the first of "a", "ab"), then forced
        >>> out.token_strs, out.forced_steps, out.model_calls
        (['a', 'b', '<3>'], 2, 2)
        >>> [round(x, 4) for x in out.log_probs.constrained.per_token[0]]      # 1/2, then forced: 0
        [-0.6931, 0.0, 0.0]
        >>> [round(x, 4) for x in out.log_probs.unconstrained.per_token[0]]    # 1/4 each
        [-1.3863, -1.3863, -1.3863]
        >>> round(pipe.compute_probability_mass("prompt", ab).mass, 6)       # a b EOS, ab EOS
        0.078125
    """

    def __init__(self, model: Any, tokenizer: Any = None, *, chat_template: str | None = None,
                 batch_size: int = 8):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgument(f"batch_size must be an int >= 1, got {batch_size!r}")
        self.backend: Backend = _backend(model, tokenizer, chat_template)
        self.vocab = self.backend.vocab
        self.batch_size = batch_size
        self._eos = frozenset(int(t) for t in self.vocab.eos_token_ids)
        self._compatible: weakref.WeakSet[Any] = weakref.WeakSet()  # other vocabularies found equal
        self._names: dict[int, str] | None = None
        self._by_str: dict[str, int] | None = None
        self._free_text: Constraint | None = None
        self._drafts: weakref.WeakKeyDictionary[Any, Backend] = weakref.WeakKeyDictionary()  # draft models' backends

    # ------------------------------------------------------------------------- generate

    def generate(self, prompt: str | Sequence[int] | Sequence[Mapping[str, Any]], constraint: Any = None, *,
                 max_new_tokens: int = 64, do_sample: bool = False, temperature: float = 1.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int | None = None, heal: bool | int = False,
                 response_prefix: Sequence[int | str] = (), canonical: bool = False, draft: Any = None,
                 num_draft_tokens: int = 4, budget: bool | None = None) -> GenerationResult:
        """Generate after ``prompt`` (text, token ids, or chat messages rendered with the model's
        template), under ``constraint`` (a :class:`~tokamata.Constraint` over the model's
        vocabulary, a Python type, or None).

        Greedy unless ``do_sample``; then ``temperature``, ``top_k`` (0: off) and ``top_p``
        shape the sampling distribution, drawn from ``numpy.random.default_rng(seed)``. Stops
        on an EOS token, after ``max_new_tokens`` tokens or when the model's context is full.
        ``heal`` (True or a number of tokens) gives the prompt's last token(s) back to the
        output (:func:`tokamata.heal`). ``response_prefix`` (token ids, or token strings as
        :attr:`GenerationResult.token_strs` spells them) are the output's first tokens, as if
        sampled: scored like the rest, with one model call. See :class:`GenerationResult`
        for what comes back.

        ``draft`` (a smaller model over the same vocabulary: a :class:`Pipeline`, a
        :class:`~tokamata.generate.Backend`, or a model this pipeline's tokenizer fits) turns on
        speculative decoding (:mod:`tokamata.generate.speculative`): the draft proposes up to
        ``num_draft_tokens`` tokens under the constraint's masks, this pipeline's model scores
        them in one call under the same masks and keeps a prefix. The output has the
        distribution of plain decoding (greedy: the same tokens); ``draft_proposed`` and
        ``draft_accepted`` say how well the draft guessed.

        ``budget`` (default: on under a constraint that supports token budgets, see
        :attr:`Matcher.supports_budgets`): masks with a token budget
        (:meth:`Matcher.fill_bitmask`'s ``max_tokens``, the outputs left with EOS counted), so
        that the output ends as a complete sentence of the constraint within
        ``max_new_tokens`` tokens; ``max_new_tokens`` too small for any output raises
        :class:`~tokamata.InvalidArgument` before decoding. ``budget=False`` masks plainly (the
        output may stop mid-sentence); ``budget=True`` where budgets are not supported (canonical
        mode) raises :class:`~tokamata.Unsupported`.
        """
        if budget is not None and not isinstance(budget, bool):
            raise InvalidArgument(f"budget must be a bool or None, got {budget!r}")
        params = SamplingParams(do_sample, temperature, top_k, top_p)
        max_new_tokens = _positive(max_new_tokens, "max_new_tokens")
        rng = np.random.default_rng(seed)
        drafter = None
        if draft is not None:
            drafter = self._draft_backend(draft)
            num_draft_tokens = _positive(num_draft_tokens, "num_draft_tokens")
        return self._generate(prompt, constraint, max_new_tokens, params, rng, heal, response_prefix, canonical,
                              drafter, num_draft_tokens, budget)

    def _draft_backend(self, draft: Any) -> Backend:
        """The backend of a draft model, over a vocabulary equal to this pipeline's."""
        found: Backend | None = draft.backend if isinstance(draft, Pipeline) else None
        if found is None:
            found = self._drafts.get(draft) if _weakrefable(draft) else None
        if found is None:
            found = _backend(draft, getattr(self.backend, "tokenizer", None) or self.vocab, None)
            if _weakrefable(draft):
                self._drafts[draft] = found
        if found is self.backend:
            raise InvalidArgument("the draft model is the pipeline's own backend: give a second model (or a "
                                  "second Llama / module over the same weights), since each keeps its own cache")
        self._check_vocab(found.vocab, "the draft model")
        return found

    def _generate(self, prompt, constraint, max_new_tokens: int, params: SamplingParams, rng, heal,
                  response_prefix, canonical: bool, draft: Backend | None = None,
                  num_draft_tokens: int = 4, budget: bool | None = None) -> GenerationResult:
        prompt_ids = self._prompt_ids(prompt)
        c = self._constraint(constraint)
        healed = b""
        if heal is not False and heal != 0:
            count = 1 if heal is True else heal
            prompt_ids, healed = heal_prompt(self.vocab, prompt_ids, count)
            if not prompt_ids:
                raise InvalidArgument("token healing removed the whole prompt; heal fewer tokens")
            if c is None and healed:
                c = self._any_text()
        if c is None and canonical:
            c = self._any_text()
        matcher = constraint_matcher(c, healed, canonical) if c is not None else None
        budgeted = matcher is not None and (matcher.supports_budgets if budget is None else budget)
        prefix_tokens = self._token_list(response_prefix, "response_prefix", allow_empty=True)
        ends = [j for j, t in enumerate(prefix_tokens[:-1]) if t in self._eos]
        if ends:
            raise InvalidArgument(f"response_prefix has tokens after its EOS token at position {ends[0]}")
        limit = self._context()
        if len(prompt_ids) + len(prefix_tokens) >= limit:
            raise InvalidArgument(f"the prompt ({len(prompt_ids)} tokens) and response_prefix "
                                  f"({len(prefix_tokens)}) leave no room in the model's context of {limit} tokens")
        size = self.vocab.size
        bitmask = allocate_bitmask(1, size)

        def allowed_now() -> np.ndarray | None:
            if matcher is None:
                return None
            if budgeted:  # (the outputs left, EOS included)
                matcher.fill_bitmask(bitmask, 0, max_tokens=max_new_tokens - (len(ids) - base))
                if not bitmask[0].any():
                    raise InvalidArgument(f"max_new_tokens={max_new_tokens} is too small for any output of the "
                                          f"constraint from output position {len(ids) - base} (it needs "
                                          f"{matcher.budget_needed()} tokens, EOS included)")
            else:
                matcher.fill_bitmask(bitmask, 0)
            return unpack_bitmask(bitmask[0], size)

        ids = list(prompt_ids)
        base = len(ids)
        unc: list[float | None] = []
        con: list[float] = []
        forced = calls = 0
        pending = base  # the first position of ids whose unconstrained log-probability is unknown
        next_row: np.ndarray | None = None
        reason = ""

        def take(token: int, u: float | None, k: float) -> None:
            nonlocal reason
            unc.append(u)
            con.append(k)
            ids.append(token)
            if matcher is not None and not matcher.consume(token):
                raise InvalidArgument(f"token {token} ({self._token_str(token)!r}) at output position "
                                      f"{len(ids) - base - 1} is not allowed by the constraint")
            if token in self._eos:
                reason = "eos"

        if prefix_tokens:
            rows = self.backend.logits(ids + prefix_tokens, len(ids))
            calls += 1
            for j, token in enumerate(prefix_tokens):
                check_row(rows[j], f"at response_prefix position {j}")
                allowed = allowed_now()
                if allowed is not None and not allowed[token]:
                    raise InvalidArgument(f"response_prefix token {j} ({token}, {self._token_str(token)!r}) is not "
                                          f"allowed by the constraint there")
                u = unconstrained_log_prob(rows[j], token)
                take(token, u, u if allowed is None else constrained_log_prob(rows[j], allowed, token))
                if reason:
                    break
            if not reason:
                next_row = rows[len(prefix_tokens)]
            pending = len(ids)
        spec = None
        if draft is not None and not reason:
            spec = speculative_decode(self.backend, draft, matcher, self._eos, ids, base, unc, con, pending,
                                      max_new_tokens, limit, params, rng, num_draft_tokens, self._token_str,
                                      budgeted)
            reason, pending, calls, forced = spec.reason, spec.pending, calls + spec.target_calls, forced + spec.forced
        while not reason:
            produced = len(ids) - base
            if produced >= max_new_tokens:
                reason = "length"
                break
            if len(ids) >= limit:
                reason = "context"
                break
            allowed = None
            if matcher is not None:
                run = matcher.forced_tokens(min(max_new_tokens - produced, limit - len(ids)))
                if run:
                    matcher.consume_many(run)
                    ids.extend(run)
                    unc.extend([None] * len(run))
                    con.extend([0.0] * len(run))
                    forced += len(run)
                    next_row = None
                    continue
                allowed = allowed_now()
                assert allowed is not None
                only = np.flatnonzero(allowed)
                if len(only) == 1:  # an EOS that is the only allowed token (forced_tokens stops before EOS)
                    take(int(only[0]), None, 0.0)
                    forced += 1
                    next_row = None
                    continue
            if next_row is None:
                rows = self.backend.logits(ids, pending)
                calls += 1
                self._fill_pending(rows, ids, pending, base, unc)
                next_row = rows[-1]
                pending = len(ids)
            check_row(next_row, f"at output position {len(ids) - base}")
            token = sample(next_row, allowed, params, rng)
            norm = logsumexp(next_row)
            u = unconstrained_log_prob(next_row, token, norm)
            take(token, u, u if allowed is None else constrained_log_prob(next_row, allowed, token))
            next_row = None
            pending = len(ids)
        if any(u is None for u in unc):  # forced steps at the end: one pass scores them all
            rows = self.backend.logits(ids, pending)
            calls += 1
            self._fill_pending(rows, ids, pending, base, unc)
        out = ids[base:]
        unconstrained = [u for u in unc if u is not None]
        assert len(unconstrained) == len(unc)  # (all known now)
        log_probs = SequenceLogProbs(LogProbs.of([unconstrained]), LogProbs.of([con if matcher is not None
                                                                                else unconstrained]))
        return GenerationResult(
            text=self.vocab.decode(out).decode("utf-8", errors="replace"), token_ids=out,
            token_strs=[self._token_str(t) for t in out], log_probs=log_probs, forced_steps=forced,
            model_calls=calls, finish_reason=reason, prompt_ids=list(prompt_ids), healed=healed,
            draft_proposed=spec.proposed if spec else 0, draft_accepted=spec.accepted if spec else 0,
            draft_calls=spec.draft_calls if spec else 0, budget=max_new_tokens if budgeted else None)

    def _fill_pending(self, rows: np.ndarray, ids: list[int], pending: int, base: int,
                      unc: list[float | None]) -> None:
        """Unconstrained log-probabilities of ``ids[pending:]`` from ``rows`` (one per token)."""
        for k in range(len(ids) - pending):
            check_row(rows[k], f"at output position {pending + k - base}")
            unc[pending + k - base] = unconstrained_log_prob(rows[k], ids[pending + k])

    # ------------------------------------------------------------------- probabilities

    def compute_probability(self, prompt: str | Sequence[int] | Sequence[Mapping[str, Any]],
                            tokens: Sequence[Sequence[int | str]], constraint: Any = None, *,
                            canonical: bool = False) -> SequenceLogProbs:
        """The unconstrained and constrained log-probabilities of each token sequence in
        ``tokens`` after ``prompt`` (the same values :meth:`generate` reports), scored in
        batches of ``batch_size`` sequences.

        A sequence ends where it ends: include an EOS id to score the end of the output. Under
        a constraint, the first token the constraint does not allow, and every token after it,
        has constrained log-probability ``-inf``.
        """
        prompt_ids = self._prompt_ids(prompt)
        c = self._constraint(constraint)
        if c is None and canonical:
            c = self._any_text()
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence) or not tokens:
            raise InvalidArgument("tokens must be a non-empty list of token sequences")
        sequences = [self._token_list(seq, f"tokens[{i}]", allow_empty=False) for i, seq in enumerate(tokens)]
        limit = self._context()
        for i, seq in enumerate(sequences):
            if len(prompt_ids) + len(seq) > limit:
                raise InvalidArgument(f"tokens[{i}] ({len(seq)} tokens) after the prompt ({len(prompt_ids)}) does "
                                      f"not fit the model's context of {limit} tokens")
        unc_rows: list[list[float]] = []
        con_rows: list[list[float]] = []
        size = self.vocab.size
        bitmask = allocate_bitmask(1, size)
        for lo in range(0, len(sequences), self.batch_size):
            chunk = sequences[lo: lo + self.batch_size]
            for seq, rows in zip(chunk, self.backend.score(prompt_ids, chunk)):
                matcher = constraint_matcher(c, b"", canonical) if c is not None else None
                unc, con = [], []
                alive = True
                for j, token in enumerate(seq):
                    row = rows[j]
                    check_row(row, f"at position {j} of a scored sequence")
                    u = unconstrained_log_prob(row, token)
                    unc.append(u)
                    if matcher is None:
                        con.append(u)
                        continue
                    k = -math.inf
                    if alive:
                        matcher.fill_bitmask(bitmask, 0)
                        k = constrained_log_prob(row, unpack_bitmask(bitmask[0], size), token)
                        alive = k > -math.inf and matcher.consume(token)
                    con.append(k)
                unc_rows.append(unc)
                con_rows.append(con)
        return SequenceLogProbs(LogProbs.of(unc_rows), LogProbs.of(con_rows))

    def compute_probability_mass(self, prompt: str | Sequence[int] | Sequence[Mapping[str, Any]],
                                 constraint: Any, *, method: str = "exact", samples: int = 100,
                                 seed: int | None = None, max_new_tokens: int = 256, canonical: bool = False,
                                 limits: Limits | None = None) -> ProbabilityMass:
        """The (log) probability the model gives, after ``prompt``, to the constraint's
        language: every token sequence the constraint accepts, followed by an EOS token.

        ``method="exact"`` enumerates every token sequence (every tokenization of every
        sentence; :func:`~tokamata.generate.mass.enumerate_language`) and sums their
        probabilities, scoring them in batches; past ``limits.max_enumerated_sequences``
        (default: the constraint's limits) it raises :class:`~tokamata.LimitExceeded`, as for
        any infinite language. ``method="importance"`` draws ``samples`` outputs from the
        constrained model (temperature 1, no top-k or top-p: the proposal ``q``) with
        ``seed``, weights each by ``p / q`` (its unconstrained over its constrained
        probability) and returns their mean with its standard error; a sample that does not
        end within ``max_new_tokens`` weighs 0.
        """
        c = self._constraint(constraint)
        if c is None:
            raise InvalidArgument("compute_probability_mass needs a constraint (the mass of everything is 1)")
        if method == "exact":
            if limits is None:
                limits = c.limits
            elif not isinstance(limits, Limits):
                raise InvalidArgument(f"limits must be a tokamata.Limits, got {type(limits).__name__}")
            prompt_ids = self._prompt_ids(prompt)
            matcher = constraint_matcher(c, b"", canonical)
            found = enumerate_language(matcher, self.vocab.eos_token_ids, limits.max_enumerated_sequences)
            limit = self._context()
            longest = max((len(tokens) for tokens, _ in found), default=0)
            if len(prompt_ids) + longest + 1 > limit:
                raise InvalidArgument(f"the constraint's longest token sequence ({longest} tokens and EOS) after the "
                                      f"prompt ({len(prompt_ids)}) does not fit the model's context of {limit}")
            totals: list[float] = []
            for lo in range(0, len(found), self.batch_size):
                chunk = found[lo: lo + self.batch_size]
                for (tokens, ends), rows in zip(chunk, self.backend.score(prompt_ids, [t for t, _ in chunk])):
                    total = 0.0
                    for j, token in enumerate(tokens):
                        check_row(rows[j], f"at position {j} of an enumerated sequence")
                        total += unconstrained_log_prob(rows[j], token)
                    check_row(rows[len(tokens)], "after an enumerated sequence")
                    norm = logsumexp(rows[len(tokens)])
                    totals.extend(total + unconstrained_log_prob(rows[len(tokens)], e, norm) for e in ends)
            count = sum(len(ends) for _, ends in found)
            return ProbabilityMass(logsumexp(np.asarray(totals, dtype=np.float64)), 0.0, "exact", count)
        if method == "importance":
            samples = _positive(samples, "samples")
            max_new_tokens = _positive(max_new_tokens, "max_new_tokens")
            rng = np.random.default_rng(seed)
            params = SamplingParams(True, 1.0, 0, 1.0)
            prompt = self._prompt_ids(prompt)  # (encoded once for all samples)
            weights, truncated = [], 0
            for _ in range(samples):
                out = self._generate(prompt, c, max_new_tokens, params, rng, False, (), canonical)
                if out.finish_reason != "eos":
                    truncated += 1
                    weights.append(-math.inf)
                    continue
                weights.append(out.log_probs.unconstrained.cumulative[0] - out.log_probs.constrained.cumulative[0])
            return importance_estimate(weights, truncated)
        raise InvalidArgument(f"method must be 'exact' or 'importance', got {method!r}")

    # ------------------------------------------------------------------------- helpers

    def _context(self) -> int:
        length = self.backend.context_length
        return length if length is not None else 2**62

    def _prompt_ids(self, prompt: Any) -> list[int]:
        if isinstance(prompt, str):
            ids = self.backend.encode(prompt)
        elif isinstance(prompt, Sequence) and prompt and isinstance(prompt[0], Mapping):
            ids = self.backend.apply_chat_template(prompt)
        elif isinstance(prompt, (bytes, bytearray)) or not isinstance(prompt, (Sequence, np.ndarray)):
            raise InvalidArgument(f"prompt must be text, token ids or chat messages, got {type(prompt).__name__}")
        else:
            ids = self._token_list(prompt, "prompt", allow_empty=True)
        if not ids:
            raise InvalidArgument("the prompt is empty: the model needs at least one token (a BOS) to condition on")
        limit = self._context()
        if len(ids) >= limit:
            raise InvalidArgument(f"the prompt has {len(ids)} tokens; the model's context holds {limit}, and at least "
                                  f"one must be left for the output")
        return ids

    def _token_list(self, tokens: Any, what: str, *, allow_empty: bool) -> list[int]:
        """``tokens`` (ids or token strings) as a list of ids in range, or InvalidArgument."""
        if isinstance(tokens, (str, bytes, bytearray)) or not isinstance(tokens, (Sequence, np.ndarray)):
            raise InvalidArgument(f"{what} must be a list of token ids or token strings, got {type(tokens).__name__}")
        out = []
        for j, item in enumerate(tokens):
            if isinstance(item, str):
                token = self._str_to_id().get(item)
                if token is None:
                    raise InvalidArgument(f"{what}[{j}] = {item!r} is no token of the vocabulary")
            elif isinstance(item, bool):
                raise InvalidArgument(f"{what}[{j}] is a bool, not a token id")
            else:
                try:
                    token = operator.index(item)
                except TypeError:
                    raise InvalidArgument(f"{what}[{j}] must be a token id, got {type(item).__name__}") from None
                if not 0 <= token < self.vocab.size:
                    raise InvalidArgument(f"{what}[{j}] = {token} is out of range [0, {self.vocab.size})")
            out.append(token)
        if not out and not allow_empty:
            raise InvalidArgument(f"{what} is empty: a token sequence needs at least one token")
        return out

    def _constraint(self, constraint: Any) -> Constraint | None:
        if constraint is None:
            return None
        c = resolve_constraint(constraint, self.vocab)
        self._check_vocab(c.vocab, "the constraint")
        return c

    def _check_vocab(self, theirs: Any, whose: str) -> None:
        """InvalidArgument unless ``theirs`` is this model's vocabulary or equal to it."""
        if theirs is self.vocab or theirs in self._compatible:
            return
        ours = self.vocab
        if theirs.size != ours.size:
            raise InvalidArgument(f"{whose} is over a vocabulary of {theirs.size} tokens, the model's has "
                                  f"{ours.size}: compile it over pipeline.vocab")
        if tuple(theirs.eos_token_ids) != tuple(ours.eos_token_ids):
            raise InvalidArgument(f"{whose}'s EOS ids {list(theirs.eos_token_ids)} are not the model's "
                                  f"{list(ours.eos_token_ids)}: compile it over pipeline.vocab")
        if theirs.token_bytes != ours.token_bytes:
            first = next(i for i, (a, b) in enumerate(zip(theirs.token_bytes, ours.token_bytes)) if a != b) \
                if len(theirs.token_bytes) == len(ours.token_bytes) else min(len(theirs.token_bytes),
                                                                             len(ours.token_bytes))
            raise InvalidArgument(f"{whose}'s vocabulary is not the model's (token {first} differs): compile "
                                  f"it over pipeline.vocab")
        self._compatible.add(theirs)

    def _any_text(self) -> Constraint:
        """The constraint of any text (what healing without a constraint decodes under)."""
        if self._free_text is None:
            self._free_text = compile_regex(r"(?s:.*)", self.vocab)
        return self._free_text

    def _token_str(self, token: int) -> str:
        data = self.vocab.token_bytes[token] if token < len(self.vocab.token_bytes) else None
        if data is not None:
            return data.decode("utf-8", errors="backslashreplace")
        if self._names is None:
            self._names = {i: name for name, ids in self.vocab.special_token_names.items() for i in ids}
        return self._names.get(token, f"<{token}>")

    def _str_to_id(self) -> dict[str, int]:
        if self._by_str is None:
            table: dict[str, int] = {}
            for token in range(self.vocab.size):
                table.setdefault(self._token_str(token), token)
            self._by_str = table
        return self._by_str


def _weakrefable(value: Any) -> bool:
    try:
        weakref.ref(value)
    except TypeError:
        return False
    return True


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgument(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def _backend(model: Any, tokenizer: Any, chat_template: str | None) -> Backend:
    """The backend for ``model``: llama_cpp by its type's module, a torch module by duck
    typing, else a :class:`Backend` as it is."""
    module = type(model).__module__ or ""
    if module.split(".")[0] == "llama_cpp":
        from .llama_cpp_backend import LlamaCppBackend

        return LlamaCppBackend(model, tokenizer, chat_template=chat_template)
    if hasattr(model, "config") and hasattr(model, "forward"):
        from .transformers_backend import TransformersBackend

        return TransformersBackend(model, tokenizer, chat_template=chat_template)
    if isinstance(model, Backend):
        return model
    raise InvalidArgument(f"a Pipeline takes a transformers causal LM, a llama_cpp.Llama or a "
                          f"tokamata.generate.Backend, got {type(model).__name__}")
