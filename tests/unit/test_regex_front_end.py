"""The regex front end and byte DFA agree with Python's ``re`` on tables of strings, and
every error path raises the right exception with the right span."""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokamata
from tokamata.automata.dfa import DEAD, LazyByteDfa
from tokamata.syntax.regex_lower import lower
from tokamata.syntax.regex import parse_regex

from regex_cases import ERRORS, TABLE


def dfa_for(pattern: str, limits: tokamata.Limits | None = None) -> LazyByteDfa:
    limits = limits or tokamata.Limits()
    return LazyByteDfa(lower(parse_regex(pattern, limits)), limits)


@functools.lru_cache(maxsize=None)
def cached_dfa(pattern: str) -> LazyByteDfa:
    return dfa_for(pattern)


def dfa_accepts(dfa: LazyByteDfa, text: str) -> bool:
    state = dfa.run(text.encode("utf-8"))
    return state != DEAD and dfa.accepting(state)


@pytest.mark.parametrize("pattern,accepted,rejected", TABLE, ids=[t[0][:40] for t in TABLE])
def test_table_agrees_with_re(pattern, accepted, rejected):
    dfa = dfa_for(pattern)
    for text in accepted:
        assert re.fullmatch(pattern, text), f"table entry wrong: re rejects {text!r}"
        assert dfa_accepts(dfa, text), f"{pattern!r} should accept {text!r}"
    for text in rejected:
        assert not re.fullmatch(pattern, text), f"table entry wrong: re accepts {text!r}"
        assert not dfa_accepts(dfa, text), f"{pattern!r} should reject {text!r}"


@pytest.mark.parametrize("pattern", [t[0] for t in TABLE], ids=[t[0][:40] for t in TABLE])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_strings_agree_with_re(pattern, data):
    """Strings drawn from the regex are accepted; arbitrary strings agree with re."""
    dfa = cached_dfa(pattern)
    if "(?x)" not in pattern:
        drawn = data.draw(st.from_regex(pattern, fullmatch=True), label="from_regex")
        assert re.fullmatch(pattern, drawn)
        assert dfa_accepts(dfa, drawn), f"{pattern!r} should accept {drawn!r}"
    alphabet = st.sampled_from(list("abcxyzABC019 -_.:@\"\\\n\téß日😀٣ſK"))
    text = data.draw(st.text(alphabet, max_size=12), label="text")
    assert dfa_accepts(dfa, text) == bool(re.fullmatch(pattern, text))


@pytest.mark.parametrize("pattern,exception,feature,span", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_have_type_and_span(pattern, exception, feature, span):
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
    with pytest.raises(getattr(tokamata, exception)) as info:
        tokamata.compile_regex(pattern, vocab)
    error = info.value
    assert isinstance(error, tokamata.TokamataError)
    assert error.span == span, f"span {error.span} != {span}: {error}"
    if feature is not None:
        assert feature in str(error)
    if exception == "Unsupported":
        assert feature in error.feature


def test_lazy_quantifiers_same_language():
    for lazy, greedy in [("a+?b", "a+b"), ("(ab)*?", "(ab)*"), ("a{2,5}?", "a{2,5}")]:
        for text in ["", "a", "ab", "aab", "abab", "aaaaa", "aaaaaa"]:
            assert dfa_accepts(dfa_for(lazy), text) == dfa_accepts(dfa_for(greedy), text)


def test_only_valid_utf8_is_produced():
    """From every state, no byte sequence that is invalid UTF-8 survives."""
    dfa = dfa_for(r"(?s).*")
    assert dfa.explore() < 50
    for bad in [b"\xc0\x80", b"\xed\xa0\x80", b"\xf5", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xff"]:
        assert dfa.run(bad) == DEAD, bad
    for good in ["é", "日", "😀", "\U0010ffff", "\ud7ff", "\ue000"]:
        assert dfa.accepting(dfa.run(good.encode()))


def test_blow_up_raises_limit_exceeded():
    """Exploring the 2**31-state DFA stops at the state limit (about 0.3 s with defaults;
    time is measured in benchmarks, not asserted here)."""
    with pytest.raises(tokamata.LimitExceeded) as info:
        dfa_for(r"(a|b)*a(a|b){30}").explore()
    assert info.value.limit == "max_dfa_states"
    assert info.value.value == tokamata.Limits().max_dfa_states + 1


def test_compile_time_limit():
    with pytest.raises(tokamata.LimitExceeded) as info:
        dfa_for(r"(a|b)*a(a|b){30}", tokamata.Limits(max_compile_seconds=0.01, max_dfa_states=10**6)).explore()
    assert info.value.limit == "max_compile_seconds"


def test_limits_on_pattern_size_and_nesting():
    with pytest.raises(tokamata.LimitExceeded) as info:
        parse_regex("a" * 200, tokamata.Limits(max_pattern_length=100))
    assert info.value.limit == "max_pattern_length" and info.value.value == 200
    with pytest.raises(tokamata.LimitExceeded) as info:
        parse_regex("(" * 300 + ")" * 300, tokamata.Limits())
    assert info.value.limit == "max_nesting_depth"
    with pytest.raises(tokamata.LimitExceeded) as info:
        parse_regex("ab" * 100, tokamata.Limits(max_regex_nodes=50))
    assert info.value.limit == "max_regex_nodes"
    with pytest.raises(tokamata.LimitExceeded) as info:
        dfa_for("a{100000}", tokamata.Limits(max_dfa_states=1000)).explore()
    assert info.value.limit == "max_dfa_states"


def test_limits_reject_bad_values():
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.Limits(max_dfa_states=0)
    with pytest.raises(tokamata.InvalidSyntax):
        parse_regex(b"bytes pattern", tokamata.Limits())  # type: ignore[arg-type]
