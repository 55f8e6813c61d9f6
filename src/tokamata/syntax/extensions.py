"""Seed 000's extensions (Table 1): wildcard terminals and syntactic sugar, as the regex and
Lark front ends lower them.

Wildcards that count **tokens** (token-set terminals of the grammar IR: spelled by token
ids, consumed whole at a lexeme boundary, exactly like special tokens):

- ``TEXT_TOKEN``: any one text token (a token with bytes: not special, not padding) whose
  bytes are whole UTF-8 characters. Tokens that end or start inside a character (byte-level
  pieces, byte-fallback ``<0xNN>``) are left out: two wildcards in a row could otherwise
  write invalid UTF-8, and every tokamata constraint keeps its output valid UTF-8.
- ``PARAGRAPH_TOKEN``: any such token whose bytes hold no line break (``\\n`` or ``\\r``).
- ``IMAGE``: the model's image start token, one or more image tokens, its image end token,
  all special tokens of the vocabulary found by name (:data:`IMAGE_TOKEN_NAMES`); a
  vocabulary without them is :class:`~tokamata.errors.Unsupported`.

Wildcards over **text** (byte languages, ordinary terminals):

- ``QUOTED_TEXT``: ``"``, then any characters except ``"`` and ``\\``, or ``\\`` followed by
  any one character, then ``"`` (:data:`QUOTED_TEXT_PATTERN`).
- ``UNQUOTED_TEXT``: a YAML plain scalar on one line (:data:`UNQUOTED_TEXT_PATTERN`): one or
  more characters, no line break; it does not start with whitespace or a YAML indicator
  (``- ? : , [ ] { } # & * ! | > ' " % @`` and backquote), except that ``-``, ``?`` and ``:``
  may start it when a non-space character follows; it contains no ``:`` followed by a space
  or tab, no ``#`` after a space or tab, and it does not end with whitespace or ``:``.
- ``TEXT_UNTIL(stop)``: text up to and including the first occurrence of ``stop``.
- ``SUBSTRING_OF(text)`` (sugar): any substring of ``text``, characters not bytes: one
  native leaf over the suffix automaton of the text's characters
  (:func:`tokamata.automata.substrings.substring_of`, re-exported here), so compile time and
  states are linear in the text (100,000 characters compile in about 0.1 s). The leaf is the
  non-empty substrings (a Lark terminal); the regex front end adds the empty string.

Sugar: ``DELIMITED_LIST(item, delimiter, min, max)`` (``min`` to ``max`` items joined by
the delimiter) and ``DELIMITED_SUBSEQUENCE_OF(items, delimiter)`` (a non-empty ordered
subsequence of the items, joined by the delimiter), over expressions here and over grammar
symbols (:func:`delimited_list_symbols`, :func:`delimited_subsequence_symbols`), both linear
in the number of items.

Example (a vocabulary of four text tokens and EOS):

>>> import tokamata
>>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", b"\\n", None], eos_token_ids=[4])
>>> m = tokamata.compile_regex(r"(?P<TEXT_TOKEN>)b|ab", vocab).matcher()
>>> m.consume(0)  # "a": read as the wildcard and as the literal's first byte
True
>>> m.allowed_tokens().tolist()  # "b" ends either reading
[1]
>>> tokamata.compile_regex(r"(?P<PARAGRAPH_TOKEN>)+", vocab).matcher().allowed_tokens().tolist()
[0, 1, 2]
>>> g = tokamata.compile_grammar('start: %delimited_list("a", "b", 2, 3)', vocab)
>>> g.matcher().consume_many([2, 0])  # "ab" "a": two items
2

Invariants: the id sets are sorted tuples computed once per vocabulary (cached on it);
nothing here loops over user input without a bound the caller checked (item counts are
bounded by the pattern or grammar length, counts by the grammar budget).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Sequence

from ..automata import derivatives as d
from ..automata.substrings import substring_of
from ..caches import register_vocabulary_cache

if TYPE_CHECKING:
    from ..grammar.builder import GrammarBuilder, Origin

__all__ = ["TOKEN_WILDCARDS", "TEXT_WILDCARDS", "SUGAR", "NAMES", "IMAGE_TOKEN_NAMES", "QUOTED_TEXT_PATTERN",
           "UNQUOTED_TEXT_PATTERN", "UNQUOTED_TEXT_FORBIDDEN", "text_token_ids", "paragraph_token_ids",
           "image_token_ids", "delimited_list", "delimited_subsequence", "delimited_list_symbols",
           "delimited_subsequence_symbols", "matches", "substring_of"]

#: wildcards that match whole tokens (token-set terminals)
TOKEN_WILDCARDS = ("TEXT_TOKEN", "PARAGRAPH_TOKEN", "IMAGE")
#: wildcards over text (byte terminals)
TEXT_WILDCARDS = ("QUOTED_TEXT", "UNQUOTED_TEXT", "TEXT_UNTIL")
SUGAR = ("SUBSTRING_OF", "DELIMITED_LIST", "DELIMITED_SUBSEQUENCE_OF")
NAMES = TOKEN_WILDCARDS + TEXT_WILDCARDS + SUGAR

#: (start, image token, end) names of special tokens, per model family; the first triple a
#: vocabulary has entirely is its IMAGE
IMAGE_TOKEN_NAMES = (
    ("<start_of_image>", "<image_soft_token>", "<end_of_image>"),  # Gemma 3
    ("<|vision_start|>", "<|image_pad|>", "<|vision_end|>"),  # Qwen2-VL
    ("<|image_start|>", "<|image|>", "<|image_end|>"),
    ("<image_start>", "<image>", "<image_end>"),
)

QUOTED_TEXT_PATTERN = r'"(?:[^"\\]|\\[\s\S])*"'
#: one line, a safe first character (or -?: before a non-space), then anything on the line;
#: minus the :data:`UNQUOTED_TEXT_FORBIDDEN` shapes (see the module docstring)
UNQUOTED_TEXT_PATTERN = r"""(?:[^\s\-?:,\[\]{}#&*!|>'"%@`]|[-?:][^\s])[^\n\r]*"""
UNQUOTED_TEXT_FORBIDDEN = (r"[^\n\r]*(?::[ \t]|[ \t]#)[^\n\r]*", r"[^\n\r]*[\s:]")

_lock = threading.Lock()
_ATTRIBUTE = "_tokamata_wildcard_ids"


def matches(expr: d.Expr, text: bytes) -> bool:
    """Whether ``expr`` matches ``text`` (derivative by derivative; for examples and tests)."""
    for byte in text:
        expr = d.derivative(expr, byte)
    return expr.nullable


def _ids(vocab) -> dict:
    found = vocab.__dict__.get(_ATTRIBUTE)
    if found is None:
        with _lock:
            found = vocab.__dict__.setdefault(_ATTRIBUTE, {})
    return found


def _drop(vocab) -> None:
    vocab.__dict__.pop(_ATTRIBUTE, None)


register_vocabulary_cache("wildcard token ids", _drop)


def text_token_ids(vocab) -> tuple[int, ...]:
    """The ids of ``vocab``'s text tokens (TEXT_TOKEN), sorted; cached per vocabulary."""
    cache = _ids(vocab)
    found = cache.get("TEXT_TOKEN")
    if found is None:
        found = cache["TEXT_TOKEN"] = tuple(i for i, b in enumerate(vocab.token_bytes) if b and _whole_utf8(b))
    return found


def _whole_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def paragraph_token_ids(vocab) -> tuple[int, ...]:
    """The ids of ``vocab``'s text tokens without ``\\n`` or ``\\r`` (PARAGRAPH_TOKEN)."""
    cache = _ids(vocab)
    found = cache.get("PARAGRAPH_TOKEN")
    if found is None:
        found = cache["PARAGRAPH_TOKEN"] = tuple(
            i for i in text_token_ids(vocab) if b"\n" not in vocab.token_bytes[i] and b"\r" not in vocab.token_bytes[i])
    return found


def image_token_ids(vocab) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """(start ids, image token ids, end ids) of ``vocab``'s IMAGE, or None if it has none."""
    names = vocab.special_token_names
    for triple in IMAGE_TOKEN_NAMES:
        if all(names.get(name) for name in triple):
            start, soft, end = (tuple(names[name]) for name in triple)
            return start, soft, end
    return None


def delimited_list(item: d.Expr, delimiter: d.Expr, low: int, high: int) -> d.Expr:
    """``low`` to ``high`` (``d.UNBOUNDED``: no bound) copies of ``item`` joined by
    ``delimiter``."""
    if high == 0:
        return d.EPSILON
    rest = d.repeat(d.concat(delimiter, item), max(low - 1, 0), d.UNBOUNDED if high == d.UNBOUNDED else high - 1)
    found = d.concat(item, rest)
    return d.alternation(found, d.EPSILON) if low == 0 else found


def delimited_subsequence(items: Sequence[d.Expr], delimiter: d.Expr) -> d.Expr:
    """A non-empty ordered subsequence of ``items`` joined by ``delimiter``: with
    ``from_i`` = the subsequences whose first item is ``i`` or later,
    ``from_i = items[i] (delimiter from_{i+1})? | from_{i+1}``, built from the end (linear)."""
    later = d.NOTHING  # from_{n}: nothing left to choose
    for item in reversed(items):
        tail = d.EPSILON if later is d.NOTHING else d.alternation(d.EPSILON, d.concat(delimiter, later))
        later = d.alternation(d.concat(item, tail), later)
    return later


def delimited_list_symbols(b: "GrammarBuilder", item: list[int], delimiter: list[int], low: int, high: int,
                           hint: str, origin: "Origin | None") -> list[int]:
    """:func:`delimited_list` over grammar symbols (``high`` may be ``d.UNBOUNDED``)."""
    if high == 0:
        return []
    rest = b.repeat([*delimiter, *item], max(low - 1, 0), d.UNBOUNDED if high == d.UNBOUNDED else high - 1,
                    hint, origin)
    found = [*item, *rest]
    return [b.optional(found, hint, origin)] if low == 0 else found


def delimited_subsequence_symbols(b: "GrammarBuilder", items: Sequence[list[int]], delimiter: list[int],
                                  hint: str, origin: "Origin | None") -> list[int]:
    """:func:`delimited_subsequence` over grammar symbols: one nonterminal per item."""
    later: int | None = None
    for item in reversed(items):
        lhs = b.fresh(hint, "subseq")
        b.add_rule(lhs, item, origin)
        if later is not None:
            b.add_rule(lhs, [*item, *delimiter, later], origin)
            b.add_rule(lhs, [later], origin)
        later = lhs
    assert later is not None
    return [later]
