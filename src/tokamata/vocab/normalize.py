"""Normalizers as data: how a tokenizer rewrites text before it pre-tokenizes it.

A normalizer is a tuple of steps applied in order to the whole text (a ``tokenizer.json``
``Sequence`` is that tuple): :class:`ReplaceStep` (every occurrence of a literal string, or of
a regex, left to right, non-overlapping), :class:`UnicodeStep` (``NFC``, ``NFD``, ``NFKC``,
``NFKD``, by Python's :mod:`unicodedata`), :class:`LowercaseStep`. SentencePiece-style
tokenizers spell spaces ``▁`` with ``Replace(" ", "▁")``.

Continuation mode (see :mod:`tokamata.vocab.pretokenize`): ``Prepend`` (a space marker put
before a non-empty text) is parsed and dropped, since tokamata encodes text as the
continuation of earlier text. Any other component (``Precompiled`` charsmaps, ``Strip``,
``BertNormalizer`` ...) is reported unsupported by :func:`parse_normalizer`, never ignored.

Caveat: ``NFC``/``NFKC`` use the Unicode version of this Python, which may differ from the one
compiled into ``tokenizers`` for characters assigned recently.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .pretokenize import compiled

__all__ = ["LowercaseStep", "NormalizerStep", "ReplaceStep", "UnicodeStep", "normalize",
           "parse_normalizer"]


@dataclass(frozen=True)
class ReplaceStep:
    """``Replace``: each match of ``pattern`` (a regex when ``is_regex``, else a literal
    string), left to right and non-overlapping, becomes ``content``."""
    pattern: str
    content: str
    is_regex: bool = False


@dataclass(frozen=True)
class UnicodeStep:
    """``NFC`` / ``NFD`` / ``NFKC`` / ``NFKD``."""
    form: str


@dataclass(frozen=True)
class LowercaseStep:
    """``Lowercase``: ``str.lower``."""


NormalizerStep = ReplaceStep | UnicodeStep | LowercaseStep


def parse_normalizer(component: Any) -> tuple[tuple[NormalizerStep, ...], list[tuple[str, str]]]:
    """The steps of a ``tokenizer.json`` ``normalizer`` (``None``: none) and what cannot be
    reproduced, as ``(component, reason)`` pairs. ``Prepend`` is dropped (continuation
    mode). Sequences are flattened with a stack."""
    steps: list[NormalizerStep] = []
    problems: list[tuple[str, str]] = []
    pending = [component]
    while pending:
        step = pending.pop()
        if step is None:
            continue
        if not isinstance(step, dict):
            problems.append(("normalizer", f"a step is {type(step).__name__}, not an object"))
            continue
        kind = step.get("type")
        if kind == "Sequence":
            inner = step.get("normalizers")
            if not isinstance(inner, list):
                problems.append(("normalizer Sequence", "'normalizers' is not a list"))
            else:
                pending.extend(reversed(inner))
        elif kind == "Replace":
            pattern, content = step.get("pattern"), step.get("content")
            if not isinstance(content, str) or not isinstance(pattern, dict):
                problems.append(("normalizer Replace", f"pattern {pattern!r:.60}"))
            elif isinstance(pattern.get("String"), str):
                steps.append(ReplaceStep(pattern["String"], content))
            elif isinstance(pattern.get("Regex"), str):
                steps.append(ReplaceStep(pattern["Regex"], content, True))
            else:
                problems.append(("normalizer Replace", f"pattern {pattern!r:.60}"))
        elif kind == "Prepend":
            pass  # continuation mode: no marker before the text
        elif kind in ("NFC", "NFD", "NFKC", "NFKD"):
            steps.append(UnicodeStep(kind))
        elif kind == "Lowercase":
            steps.append(LowercaseStep())
        else:
            problems.append((f"normalizer {kind}", "no exact reproduction of this component"))
    return tuple(steps), problems


def normalize(steps: Sequence[NormalizerStep], text: str) -> str:
    """``text`` after every step, in order.

    >>> normalize((ReplaceStep(" ", "\u2581"),), "a b")
    'a▁b'
    """
    for step in steps:
        if isinstance(step, ReplaceStep):
            if step.is_regex:
                text = compiled(step.pattern).sub(step.content.replace("\\", "\\\\"), text)
            elif step.pattern:
                text = text.replace(step.pattern, step.content)
        elif isinstance(step, UnicodeStep):
            text = unicodedata.normalize(step.form, text)  # type: ignore[arg-type]
        else:
            text = text.lower()
    return text
