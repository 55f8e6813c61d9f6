r"""Which pretoken boundaries of a text are *decided*: the same whatever text follows.

Canonical masks decide token by token whether the output so far can still be the tokenizer's
own encoding of some longer text. BPE never merges across a pretoken boundary, so once a
boundary is decided, everything before it is settled: its tokens must be exactly the encoding
of its pretokens, and nothing written later changes that. What is not settled is the *open
region*, the text after the last decided boundary. :func:`text_region` cuts a text into its
pretokens (byte spans, added tokens included) and says where the open region starts.

The rule (for the pre-tokenizer families of :func:`region_family`): the open region starts at
the earliest of

1. the start of the last pretoken (a greedy run may go on: ``"12"`` + ``"3"``, ``"'"`` +
   ``"s"``);
2. the start of the pretoken holding the first character of the text's trailing whitespace
   run (``\s``): whitespace is split by ``\s+(?!\S)``, ``\s*[\r\n]+`` and ``\s+``, which look
   past the run, so a later character may re-cut the whole run (Llama 3: ``"a\r\n\t "`` is
   ``"a", "\r\n", "\t "`` but ``"a\r\n\t \n"`` is ``"a", "\r\n\t \n"``);
3. the start of the pretoken holding the start of the longest suffix of the text that is a
   proper prefix of an added token's text (added tokens are cut out of raw text first:
   ``"[PAD"`` then ``"151646]"`` is one added token in Qwen 2);
4. the start of a pretoken ``'`` followed by a last pretoken of one letter ``r``, ``v`` or
   ``l`` (either case): the contractions ``'re``, ``'ve``, ``'ll`` failed only at the end of
   the text (GPT-2: ``"'r"`` is ``"'", "r"`` but ``"'re"`` is one pretoken).

Why the other boundaries are decided: every alternative of these split patterns is a fixed
string (contractions, at most three characters) or a greedy run of one character class with
an optional first character; a match that ends before the end of the text stopped at a
character of the text that is outside its class, and every alternative tried before it at the
same start failed on characters of the text, except the whitespace alternatives of rule 2 and
the three-character contractions of rule 4.
The rule is checked against the pre-tokenizer itself on random texts and continuations
(``tests/unit/test_pretoken_region.py``).

Offsets are byte offsets in the text's UTF-8 (normalized text equals raw text for the
supported families: byte-level BPE without a normalizer). Nothing here imports
``tokenizers``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..errors import Unsupported
from .pretokenize import (GPT2_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN, ByteLevelStep, SplitStep,
                          byte_level_spell, compiled)
from .tokenizer_model import MODEL_BYTE_LEVEL, TokenizerModel

__all__ = ["Region", "Span", "added_prefix_start", "region_family", "text_region"]

_FAMILIES = {GPT2_PATTERN: "gpt-2", LLAMA3_PATTERN: "llama3", QWEN2_PATTERN: "qwen2"}


@dataclass(frozen=True)
class Span:
    """One pretoken of a text: bytes ``[start, end)``, its ``text``, ``added`` the added
    token's id (else ``None``) and whether it is all whitespace."""

    start: int
    end: int
    text: str
    added: int | None
    whitespace: bool

    @property
    def piece(self) -> str:
        """The pretoken in the model's (byte-level) spelling."""
        return byte_level_spell(self.text.encode("utf-8"))


@dataclass(frozen=True)
class Region:
    """A text's pretokens and the byte offset where its open region starts (a span start, or
    the text's length when the text is empty)."""

    spans: tuple[Span, ...]
    open_start: int


def region_family(model: TokenizerModel) -> str:
    """The pre-tokenizer family whose decided boundaries :func:`text_region` knows (``"gpt-2"``,
    ``"llama3"``, ``"qwen2"``), or :class:`~tokamata.Unsupported` naming what it does not
    know: a model that is not byte-level BPE, a normalizer, or another split pattern."""
    model.require_exact()
    if model.model_type != "BPE" or model.kind != MODEL_BYTE_LEVEL:
        raise Unsupported(f"canonical {model.kind} {model.model_type}",
                          f"{model.source or 'this tokenizer'}: canonical masks support byte-level BPE "
                          "(GPT-2, Llama 3, Qwen 2) so far")
    if model.normalizer:
        names = ", ".join(type(s).__name__ for s in model.normalizer)
        raise Unsupported(f"canonical normalizer {names}",
                          f"{model.source or 'this tokenizer'}: canonical masks do not yet follow a "
                          "normalizer on a byte-level vocabulary")
    steps = model.pretokenizer
    pattern = None
    if len(steps) == 1 and steps[0] == ByteLevelStep(True):
        pattern = GPT2_PATTERN
    elif (len(steps) == 2 and isinstance(steps[0], SplitStep) and steps[1] == ByteLevelStep(False)
          and steps[0].is_regex and steps[0].behavior == "Isolated" and not steps[0].invert):
        pattern = steps[0].pattern
    family = _FAMILIES.get(pattern) if pattern is not None else None
    if family is None:
        shown = "; ".join(repr(s)[:80] for s in steps) or "none"
        raise Unsupported("canonical pre_tokenizer",
                          f"{model.source or 'this tokenizer'}: no decided-boundary rule for this "
                          f"pre-tokenizer ({shown})")
    return family


def _pattern(model: TokenizerModel) -> str:
    """The split pattern of a model that passed :func:`region_family`."""
    steps = model.pretokenizer
    return GPT2_PATTERN if isinstance(steps[0], ByteLevelStep) else steps[0].pattern  # type: ignore[union-attr]


@functools.lru_cache(maxsize=8)
def _added_prefixes(added: tuple[tuple[str, int], ...]) -> tuple[frozenset[str], int]:
    prefixes = {text[:k] for text, _ in added for k in range(1, len(text))}
    return frozenset(prefixes), max((len(t) for t, _ in added), default=0)


def text_region(model: TokenizerModel, text: str) -> Region:
    """The pretokens of ``text`` (complete characters, continuation mode) as byte spans, and
    where its open region starts (module docstring). ``model`` must pass
    :func:`region_family`.

    >>> from tokamata.vocab import TokenizerModel
    >>> from tokamata.vocab.pretokenize import LLAMA3_PATTERN, SplitStep, ByteLevelStep
    >>> m = TokenizerModel.from_pieces({}, [], kind="byte-level",
    ...     pretokenizer=(SplitStep(LLAMA3_PATTERN, True), ByteLevelStep(False)))
    >>> r = text_region(m, "ab 12\\r\\n\\t ")
    >>> [(s.start, s.end) for s in r.spans], r.open_start
    ([(0, 2), (2, 3), (3, 5), (5, 7), (7, 9)], 5)
    """
    spans: list[Span] = []
    at = 0
    split = compiled(_pattern(model))
    space = compiled(r"\s+")
    for stretch, added in model.split_added(text) if model.added_tokens else [(text, None)]:
        if added is not None:
            n = len(stretch.encode("utf-8"))
            spans.append(Span(at, at + n, stretch, added, False))
            at += n
            continue
        # (the family's split pattern matches every character, so its matches are the
        # pretokens; pieces are the byte-level spelling of each)
        for m in split.finditer(stretch):
            raw = m.group()
            data = raw.encode("utf-8")
            spans.append(Span(at, at + len(data), raw, None, space.fullmatch(raw) is not None))
            at += len(data)
    if not spans:
        return Region((), 0)
    first = spans[-1].start
    if len(spans) >= 2 and spans[-2].text == "'" and spans[-1].text in ("r", "v", "l", "R", "V", "L"):
        first = spans[-2].start  # (rule 4)
    m = compiled(r"\s+\Z").search(text)
    if m is not None:
        first = min(first, _span_start(spans, len(text[:m.start()].encode("utf-8"))))
    if model.added_tokens:
        prefixes, longest = _added_prefixes(model.added_tokens)
        for k in range(min(longest - 1, len(text)), 0, -1):
            if text[-k:] in prefixes:  # (the text before it may then end a stretch: rule 2)
                before = text[:-k]
                m = compiled(r"\s*\Z").search(before)
                first = min(first, _span_start(spans, len(before[:m.start()].encode("utf-8"))))
                break
    return Region(tuple(spans), first)


def added_prefix_start(model: TokenizerModel, text: str) -> int | None:
    """The byte offset in ``text`` where its longest suffix that is a proper prefix of an added
    token's text starts (``None``: no such suffix). Added tokens are cut out of raw text first,
    leftmost then longest, so a later character may still turn that suffix into an added token
    (Gemma 3: ``"\\n"`` then ``"\\n"`` is the one added token ``"\\n\\n"``); everything before it
    is cut as it will stay.

    >>> from tokamata.vocab import TokenizerModel
    >>> m = TokenizerModel.from_pieces({}, [], added_tokens=(("<b>", 7),))
    >>> added_prefix_start(m, "ab<"), added_prefix_start(m, "ab<b>"), added_prefix_start(m, "é<b")
    (2, None, 2)
    """
    if not model.added_tokens:
        return None
    prefixes, longest = _added_prefixes(model.added_tokens)
    for k in range(min(longest - 1, len(text)), 0, -1):
        if text[-k:] in prefixes:
            return len(text[:-k].encode("utf-8"))
    return None


def _span_start(spans: list[Span], offset: int) -> int:
    """The start of the span holding byte ``offset``."""
    for span in reversed(spans):
        if span.start <= offset:
            return span.start
    return 0
