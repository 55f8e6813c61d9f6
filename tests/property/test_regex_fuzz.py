"""Random pattern text: compiling either succeeds or raises from tokamata's error tree (never
another exception), and whatever compiles agrees with ``re.fullmatch`` on random strings."""

from __future__ import annotations

import re
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokamata
from tokamata.automata.dfa import DEAD, LazyByteDfa
from tokamata.syntax.regex_lower import lower
from tokamata.syntax.regex import parse_regex

PIECES = ["a", "b", "é", "日", ".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "[", "]", "^", "-", "(", ")",
          "(?:", "(?i)", "(?s)", "(?i:", "(?P<n>", "(?=", "(?!", "(?<=", "|", "*", "+", "?", "*?", "+?",
          "{2}", "{1,3}", "{,2}", "{2,}", "\\", "\\1", "\\b", "$", "\\x41", "\\u00e9", "\\n", "\\.", " ", "#",
          "{", "}", "(?x)", "\\A", "\\Z", "[^", "a-z", "*+"]
LIMITS = tokamata.Limits(max_dfa_states=300)


def _accepts(dfa: LazyByteDfa, text: str) -> bool:
    if dfa.is_empty:  # the empty language (compile_regex refuses it)
        return False
    state = dfa.run(text.encode("utf-8"))
    return state != DEAD and dfa.accepting(state)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=10),
       texts=st.lists(st.text(st.sampled_from(list("ab é日1\n_-.A")), max_size=6), max_size=8))
def test_random_patterns_compile_or_refuse_and_agree_with_re(pieces, texts):
    pattern = "".join(pieces)
    try:
        tree = parse_regex(pattern, LIMITS)
        dfa = LazyByteDfa(lower(tree), LIMITS)
    except tokamata.TokamataError:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = re.compile(pattern)
    for text in texts:
        try:
            ours = _accepts(dfa, text)
        except tokamata.LimitExceeded:
            return
        assert ours == bool(compiled.fullmatch(text)), (pattern, text)
