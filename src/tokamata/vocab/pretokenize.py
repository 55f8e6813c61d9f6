r"""Pre-tokenizers as data: how a tokenizer cuts (normalized) text into pretokens before BPE.

BPE never merges across a pretoken boundary, so these splits are the first half of what
makes a token sequence canonical. Each supported Hugging Face ``tokenizers`` component is a
frozen dataclass (:class:`SplitStep`, :class:`ByteLevelStep`, :class:`DigitsStep`,
:class:`MetaspaceStep`); a pre-tokenizer is a tuple of them, applied in order, each to every
piece the previous steps produced (``Sequence`` is that tuple). :func:`pretokenize` runs them
and returns what ``tokenizer.pre_tokenizer.pre_tokenize_str(text)`` returns (the strings, no
offsets), which the tests check on real tokenizers.

Semantics, exactly (the ``regex`` module reproduces Oniguruma, which ``tokenizers`` uses):

- A regex split finds matches left to right, each search starting where the previous match
  ended; an alternation is *leftmost-first* (the first alternative that matches at the
  leftmost position wins, not the longest), quantifiers are greedy with backtracking, and
  ``(?!\S)`` is a lookahead: ``\s+(?!\S)`` takes a whitespace run but gives its last character
  back when a non-space follows, so ``"a   b"`` splits ``"a", "  ", " b"``. ``(?i:'s|...)``
  is case-insensitive (it also matches ``'S``). ``\p{L}``, ``\p{N}``, ``\s`` are Unicode classes.
- The text between matches is a piece too; ``behavior`` then decides what a piece is
  (:data:`BEHAVIORS`): ``Isolated`` keeps matches and gaps as separate pieces;
  ``MergedWithPrevious`` appends each match to the gap before it; ``MergedWithNext`` prepends
  it to the gap after it; ``Contiguous`` joins runs of matches (and runs of gaps); ``Removed``
  drops the matches. ``invert`` swaps matches and gaps first. Empty pieces vanish.
- :class:`ByteLevelStep` with ``use_regex`` first splits with GPT-2's pattern
  (:data:`GPT2_PATTERN`, ``Isolated``), then spells every piece's UTF-8 bytes in GPT-2's
  byte-to-unicode alphabet (:data:`BYTE_TO_CHAR`); BPE then works on those characters, one per
  byte.
- :class:`DigitsStep` isolates each numeric character (``\p{N}``) when ``individual_digits``,
  else isolates maximal runs of them.
- :class:`MetaspaceStep` replaces every space by its marker (``▁``) and, with ``split``,
  starts a new piece at every marker (``MergedWithNext``).

Continuation mode. tokamata encodes generated text as the *continuation* of earlier text at
a pretoken boundary, so the steps that add a space marker to the *start of a text* are not
applied: ``Metaspace`` ``prepend_scheme`` (``"first"``, and ``"always"`` when the step sees the
whole text) and ``ByteLevel`` ``add_prefix_space`` on the first step. A step that would add a
prefix to every piece of an earlier split cannot be expressed that way and is refused
(:func:`parse_pretokenizer` lists it as unsupported).

The patterns llama.cpp and transformers use for GGUF files, by ``tokenizer.ggml.pre``, are
:data:`GGUF_PRE_PATTERNS`. Nothing here imports ``tokenizers``; the ``regex`` module is imported
when a split first runs (:func:`compiled`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import Unsupported

__all__ = ["BEHAVIORS", "BYTE_TO_CHAR", "CHAR_TO_BYTE", "ByteLevelStep", "DigitsStep",
           "GGUF_PRE_PATTERNS", "GPT2_PATTERN", "LLAMA3_PATTERN", "MetaspaceStep",
           "PretokenizerStep", "QWEN2_PATTERN", "SplitStep", "byte_level_spell", "compiled",
           "parse_pretokenizer", "pretokenize"]

BEHAVIORS = frozenset({"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                       "Contiguous"})

#: GPT-2's pattern (``ByteLevel`` with ``use_regex``; GGUF ``gpt-2``).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
#: Llama 3's pattern (digits in groups of at most three; GGUF ``llama-bpe``, ``llama3`` ...).
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
#: Qwen2's pattern (Llama 3's with single digits; GGUF ``qwen2`` ...).
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

#: ``tokenizer.ggml.pre`` of a byte-level GGUF file -> its split pattern (Isolated), as
#: llama.cpp and transformers' GGUF converter apply them. Names not here are unsupported
#: (``"default"`` among them: llama.cpp and transformers disagree on what it means).
GGUF_PRE_PATTERNS: Mapping[str, str] = {
    "gpt-2": GPT2_PATTERN,
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                     "dbrx", "smaug-bpe"), LLAMA3_PATTERN),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "megrez"), QWEN2_PATTERN),
}


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters: printable Latin-1 bytes
    stand for themselves, the others for U+0100 onwards, in byte order."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            + list(range(ord("®"), ord("ÿ") + 1)))
    mapping = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


#: byte -> its character in GPT-2's byte-level alphabet
BYTE_TO_CHAR: Mapping[int, str] = _bytes_to_unicode()
#: the inverse of :data:`BYTE_TO_CHAR`
CHAR_TO_BYTE: Mapping[str, int] = {c: b for b, c in BYTE_TO_CHAR.items()}
_SPELL = tuple(BYTE_TO_CHAR[b] for b in range(256))


def byte_level_spell(data: bytes) -> str:
    """``data`` in GPT-2's byte-level alphabet (one character per byte)."""
    return "".join([_SPELL[b] for b in data])


# ----------------------------------------------------------------------------- the steps


@dataclass(frozen=True)
class SplitStep:
    """``Split``: cut at the matches of ``pattern`` (a regex when ``is_regex``, else a literal
    string), then shape the pieces by ``behavior`` (:data:`BEHAVIORS`), matches and gaps
    swapped first when ``invert``."""
    pattern: str
    is_regex: bool
    behavior: str = "Isolated"
    invert: bool = False


@dataclass(frozen=True)
class ByteLevelStep:
    """``ByteLevel``: with ``use_regex``, an ``Isolated`` split by :data:`GPT2_PATTERN`; then
    every piece spelled in the byte-level alphabet. (``add_prefix_space`` is not applied:
    continuation mode, see the module docstring.)"""
    use_regex: bool = True


@dataclass(frozen=True)
class DigitsStep:
    """``Digits``: isolate numeric characters, one by one when ``individual_digits``, else in
    maximal runs."""
    individual_digits: bool = False


@dataclass(frozen=True)
class MetaspaceStep:
    """``Metaspace``: spaces become ``replacement``; with ``split`` each piece is cut before
    every ``replacement`` (``MergedWithNext``). (No prefix: continuation mode.)"""
    replacement: str = "\u2581"
    split: bool = True


PretokenizerStep = SplitStep | ByteLevelStep | DigitsStep | MetaspaceStep


@functools.lru_cache(maxsize=64)
def compiled(pattern: str) -> Any:
    """``pattern`` compiled by the ``regex`` module (cached). :class:`Unsupported` if the module
    is missing (``pip install regex``) or cannot compile the pattern."""
    try:
        import regex
    except ImportError:
        raise Unsupported("regex", "the exact pretokenizer needs the 'regex' module: "
                          "pip install regex") from None
    try:
        return regex.compile(pattern)
    except regex.error as e:
        raise Unsupported("pre_tokenizer", f"cannot compile split pattern {pattern!r}: {e}") from None


def parse_pretokenizer(component: Any) -> tuple[tuple[PretokenizerStep, ...], list[tuple[str, str]]]:
    """The steps of a ``tokenizer.json`` ``pre_tokenizer`` object (``None``: no steps), and
    what cannot be reproduced, as ``(component, reason)`` pairs (empty when all can).
    ``Sequence`` is flattened with a stack (no recursion: the JSON may nest deeply)."""
    steps: list[PretokenizerStep] = []
    problems: list[tuple[str, str]] = []
    pending = [component]
    while pending:
        step = pending.pop()
        if step is None:
            continue
        if not isinstance(step, dict):
            problems.append(("pre_tokenizer", f"a step is {type(step).__name__}, not an object"))
            continue
        kind = step.get("type")
        first = not steps
        if kind == "Sequence":
            inner = step.get("pretokenizers")
            if not isinstance(inner, list):
                problems.append(("pre_tokenizer Sequence", "'pretokenizers' is not a list"))
            else:
                pending.extend(reversed(inner))
        elif kind == "Split":
            pattern = step.get("pattern")
            behavior = step.get("behavior")
            if isinstance(behavior, str):
                behavior = {"isolated": "Isolated", "removed": "Removed",
                            "merged_with_previous": "MergedWithPrevious",
                            "merged_with_next": "MergedWithNext",
                            "contiguous": "Contiguous"}.get(behavior, behavior)
            if behavior not in BEHAVIORS:
                problems.append(("pre_tokenizer Split", f"behavior {behavior!r}"))
            elif isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
                steps.append(SplitStep(pattern["Regex"], True, behavior, bool(step.get("invert"))))
            elif isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
                steps.append(SplitStep(pattern["String"], False, behavior,
                                       bool(step.get("invert"))))
            else:
                problems.append(("pre_tokenizer Split", f"pattern {pattern!r:.60}"))
        elif kind == "ByteLevel":
            if step.get("add_prefix_space") and not first:
                problems.append(("pre_tokenizer ByteLevel",
                                 "add_prefix_space after another step adds a space to every piece"))
            steps.append(ByteLevelStep(bool(step.get("use_regex", True))))
        elif kind == "Digits":
            steps.append(DigitsStep(bool(step.get("individual_digits"))))
        elif kind == "Metaspace":
            replacement = step.get("replacement") or "\u2581"
            scheme = step.get("prepend_scheme")
            if not isinstance(replacement, str) or len(replacement) != 1:
                problems.append(("pre_tokenizer Metaspace", f"replacement {replacement!r}"))
                continue
            if scheme == "always" and not first:
                problems.append(("pre_tokenizer Metaspace",
                                 "prepend_scheme 'always' after another step"))
            steps.append(MetaspaceStep(replacement, bool(step.get("split", True))))
        else:
            problems.append((f"pre_tokenizer {kind}", "no exact reproduction of this component"))
    return tuple(steps), problems


# ------------------------------------------------------------------------------ running


def _segments(text: str, step: SplitStep | DigitsStep) -> list[tuple[int, int, bool]]:
    """``(start, end, is_match)`` covering ``text``: matches and the gaps between them."""
    out: list[tuple[int, int, bool]] = []
    prev = 0
    if isinstance(step, DigitsStep):
        spans: Sequence[tuple[int, int]] = [m.span() for m in compiled(r"\p{N}").finditer(text)]
    elif step.is_regex:
        spans = [m.span() for m in compiled(step.pattern).finditer(text)]
    else:
        spans = []
        if step.pattern:
            at = text.find(step.pattern)
            while at >= 0:
                spans.append((at, at + len(step.pattern)))
                at = text.find(step.pattern, at + len(step.pattern))
    for start, end in spans:
        if prev != start:
            out.append((prev, start, False))
        out.append((start, end, True))
        prev = end
    if prev != len(text):
        out.append((prev, len(text), False))
    return out


def _shape(segments: list[tuple[int, int, bool]], behavior: str) -> list[tuple[int, int]]:
    """The pieces ``behavior`` makes of ``segments`` (the ``tokenizers`` rules, see the module
    docstring); empty pieces dropped."""
    out: list[list[int]] = []
    if behavior == "Isolated":
        out = [[s, e] for s, e, _ in segments]
    elif behavior == "Removed":
        out = [[s, e] for s, e, m in segments if not m]
    elif behavior == "MergedWithPrevious":
        previous = False
        for s, e, m in segments:
            if m and not previous and out:
                out[-1][1] = e
            else:
                out.append([s, e])
            previous = m
    elif behavior == "MergedWithNext":
        previous = False
        for s, e, m in reversed(segments):
            if m and not previous and out:
                out[-1][0] = s
            else:
                out.append([s, e])
            previous = m
        out.reverse()
    elif behavior == "Contiguous":
        previous = False
        for s, e, m in segments:
            if m == previous and out:
                out[-1][1] = e
            else:
                out.append([s, e])
            previous = m
    return [(s, e) for s, e in out if s != e]


def _apply(step: PretokenizerStep, piece: str) -> list[str]:
    if isinstance(step, SplitStep):
        segments = _segments(piece, step)
        if step.invert:
            segments = [(s, e, not m) for s, e, m in segments]
        return [piece[s:e] for s, e in _shape(segments, step.behavior)]
    if isinstance(step, DigitsStep):
        # each numeric character is a match of its own: Isolated keeps them apart, Contiguous
        # joins each run (and each run of gaps)
        behavior = "Isolated" if step.individual_digits else "Contiguous"
        return [piece[s:e] for s, e in _shape(_segments(piece, step), behavior)]
    if isinstance(step, ByteLevelStep):
        parts = ([m.group() for m in compiled(GPT2_PATTERN).finditer(piece)] if step.use_regex
                 else [piece])
        # (GPT-2's pattern matches every character: its last alternative is \s+, and every
        # other character is \p{L}, \p{N} or [^\s\p{L}\p{N}], so no gap is left)
        return [byte_level_spell(p.encode("utf-8")) for p in parts if p]
    text = piece.replace(" ", step.replacement)
    if not step.split:
        return [text]
    return [text[s:e] for s, e in _shape(_segments(text, SplitStep(step.replacement, False)),
                                         "MergedWithNext")]


def pretokenize(steps: Sequence[PretokenizerStep], text: str) -> list[str]:
    """The pretokens of (already normalized) ``text``: every step applied to every piece of
    the step before. Equals ``pre_tokenize_str(text)``'s strings for the same component in
    continuation mode. ``[]`` for ``""``.

    >>> pretokenize((SplitStep(LLAMA3_PATTERN, True), ByteLevelStep(False)), "it's 12345  ok")
    ['it', "'s", 'Ġ', '123', '45', 'Ġ', 'Ġok']
    """
    pieces = [text] if text else []
    for step in steps:
        pieces = [p for piece in pieces for p in _apply(step, piece) if p]
    return pieces

