"""SUBSTRING_OF (issue 19 item 3) on Llama 3 against ``s in text``, and the regex front end's
whole-literal reading of TEXT_UNTIL / SUBSTRING_OF arguments against a table of results.

The mask oracle uses neither engine: a byte string is a viable prefix of some substring (whole
characters) of ``text`` iff it is empty or it occurs in ``text``'s UTF-8 and does not start with
a continuation byte (UTF-8 is self-synchronizing: an occurrence that starts with a lead or ASCII
byte starts at a character boundary); it is accepted iff it is also valid UTF-8 (it then ends at
a boundary too), or empty where the empty substring counts (regexes, not Lark terminals).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokamata
from tokamata.syntax import regex as rx
from real_tokenizers import llama3

ALPHABET = "ab é€𝄞\n"


def _viable(text: bytes, data: bytes) -> bool:
    return not data or (not 0x80 <= data[0] < 0xC0 and data in text)


def _accepted(text: bytes, data: bytes, empty: bool) -> bool:
    if not data:
        return empty
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _viable(text, data)


def _expected_mask(vocab, text: bytes, prefix: bytes, empty: bool) -> set[int]:
    room = len(text) - len(prefix)
    found = {i for i, t in enumerate(vocab.token_bytes) if t and len(t) <= room and _viable(text, prefix + t)}
    if _accepted(text, prefix, empty):
        found.update(vocab.eos_token_ids)
    return found


def _constraints(text: str, vocab):
    """(constraint, whether the empty string is in its language) per front end."""
    lark_text = text.replace("\n", "\\n")
    return [(tokamata.compile_regex("(?P<SUBSTRING_OF>" + re.escape(text) + ")", vocab), True),
            (tokamata.compile_regex("<(?P<SUBSTRING_OF>" + re.escape(text) + ")?>", vocab), None),
            (tokamata.compile_grammar(f'start: %substring_of "{lark_text}"', vocab), False)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(ALPHABET, min_size=1, max_size=40), st.data())
def test_masks_on_llama3_are_s_in_text(text, data):
    """Random walks through the mask of ``(?P<SUBSTRING_OF>text)`` and ``%substring_of``:
    every mask equals the oracle's, token by token."""
    tok = llama3()
    vocab = tok.vocab
    encoded = text.encode()
    for constraint, empty in _constraints(text, vocab):
        if empty is None:
            continue  # (delimited: checked by acceptance below)
        m = constraint.matcher()
        prefix = b""
        for _ in range(data.draw(st.integers(1, 6))):
            allowed = set(m.allowed_tokens().tolist())
            assert allowed == _expected_mask(vocab, encoded, prefix, empty), (text, prefix)
            choices = sorted(allowed - set(vocab.eos_token_ids))
            if not choices:
                break
            token = data.draw(st.sampled_from(choices))
            assert m.consume(token)
            prefix += vocab.token_bytes[token]
        assert m.is_accepting() == _accepted(encoded, prefix, empty)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(ALPHABET, min_size=1, max_size=40), st.text(ALPHABET, max_size=6), st.data())
def test_acceptance_on_llama3_is_s_in_text(text, probe, data):
    """Llama 3's own encodings of random strings and of substrings are accepted iff they are
    substrings (non-empty ones for the Lark terminal; between delimiters when optional)."""
    tok = llama3()
    start = data.draw(st.integers(0, len(text)))
    inside = text[start:data.draw(st.integers(start, len(text)))]
    regex, delimited, lark = (c for c, _ in _constraints(text, tok.vocab))
    for s in (probe, inside):
        for constraint, spelled, expected in ((regex, s, s in text), (delimited, f"<{s}>", s in text),
                                              (lark, s, s != "" and s in text)):
            m = constraint.matcher()
            ids = tok.encode(spelled)
            assert (m.consume_many(ids) == len(ids) and m.is_accepting()) == expected, (text, spelled)


# (pattern, limits, the argument read or the error's class and span); the results of parsing
# each literal argument atom by atom (the parser before the whole-literal reading)
_DEFAULT = tokamata.Limits()
LITERAL_ARGUMENTS = [
    (r"(?P<SUBSTRING_OF>abc)", _DEFAULT, "abc"),
    (r"(?P<SUBSTRING_OF>a\.b\(c\))", _DEFAULT, "a.b(c)"),
    (r"(?P<SUBSTRING_OF>a\.b\(c\))", tokamata.Limits(max_regex_nodes=5), (tokamata.LimitExceeded, None)),
    (r"(?P<SUBSTRING_OF>abc)", tokamata.Limits(max_regex_nodes=3), (tokamata.LimitExceeded, None)),
    (r"(?P<SUBSTRING_OF>abc)", tokamata.Limits(max_nesting_depth=1), (tokamata.LimitExceeded, None)),
    (r"(?P<SUBSTRING_OF>abc)", tokamata.Limits(max_nesting_depth=2), "abc"),
    (r"(?P<SUBSTRING_OF>)", _DEFAULT, (tokamata.InvalidSyntax, (0, 18))),
    (r"(?P<SUBSTRING_OF>ab*)", _DEFAULT, (tokamata.InvalidSyntax, (17, 20))),
    (r"(?P<SUBSTRING_OF>a{2}b)", _DEFAULT, (tokamata.InvalidSyntax, (17, 22))),
    (r"(?i)(?P<SUBSTRING_OF>abc)", _DEFAULT, (tokamata.InvalidSyntax, (21, 24))),
    (r"(?i)(?P<SUBSTRING_OF>123)", _DEFAULT, "123"),
    (r"(?i:(?P<SUBSTRING_OF>abc))", _DEFAULT, (tokamata.InvalidSyntax, (21, 24))),
    (r"(?x)(?P<SUBSTRING_OF>a b)", _DEFAULT, "ab"),
    (r"(?x)(?P<SUBSTRING_OF>a\ b)", _DEFAULT, "a b"),
    (r"(?x)(?P<SUBSTRING_OF>a#b)", _DEFAULT, (tokamata.InvalidSyntax, (4, 5))),
    (r"x(?P<TEXT_UNTIL>é€𝄞\-\#)y", _DEFAULT, "é€𝄞-#"),
    (r"(?P<SUBSTRING_OF>ab)(", _DEFAULT, (tokamata.InvalidSyntax, (20, 21))),
    (r"(?P<SUBSTRING_OF>ab)\q", _DEFAULT, (tokamata.InvalidSyntax, (20, 21))),
    (r"(?P<SUBSTRING_OF>ab\1)", _DEFAULT, (tokamata.InvalidSyntax, (19, 20))),
    (r"(?P<SUBSTRING_OF>ab[)", _DEFAULT, (tokamata.InvalidSyntax, None)),
    (r"(?P<SUBSTRING_OF>a\nb)", _DEFAULT, "a\nb"),
    (r"(?P<SUBSTRING_OF>a\\b)", _DEFAULT, "a\\b"),
    (r"(?P<SUBSTRING_OF>a\x41b)", _DEFAULT, "aAb"),
    (r"(?P<SUBSTRING_OF>a}b])", _DEFAULT, "a}b]"),
    (r"(?P<SUBSTRING_OF>a\é)", _DEFAULT, "aé"),
    ("(?P<SUBSTRING_OF>" + re.escape("x" * 70_000 + " ()[]{}.*+?^$|#-&~\\") + ")",
     tokamata.Limits(max_regex_nodes=10 ** 6, max_pattern_length=10 ** 6), "x" * 70_000 + " ()[]{}.*+?^$|#-&~\\"),
]


@pytest.mark.parametrize("pattern,limits,expected", LITERAL_ARGUMENTS, ids=lambda v: ascii(v)[:40])
def test_literal_arguments_read_whole(pattern, limits, expected):
    if isinstance(expected, str):
        tree = rx.parse_regex(pattern, limits)
        found = [node for node in (tree.items if isinstance(tree, rx.Concat) else (tree,))
                 if isinstance(node, rx.Extension)]
        assert [node.argument for node in found] == [expected]
        return
    kind, span = expected
    with pytest.raises(kind) as info:
        rx.parse_regex(pattern, limits)
    if span is not None:
        assert info.value.span == span


def test_text_length_is_bounded_by_the_pattern_length():
    text = "ab" * 60_000
    with pytest.raises(tokamata.LimitExceeded) as info:
        tokamata.compile_regex(f"(?P<SUBSTRING_OF>{text})", llama3().vocab)
    assert info.value.limit == "max_pattern_length"
    with pytest.raises(tokamata.LimitExceeded) as info:
        tokamata.compile_grammar(f'start: %substring_of "{text}"', llama3().vocab)
    assert info.value.limit == "max_pattern_length"
