"""Lexer start states made natively (cpp lexer_starts.hpp) are the states Python makes.

The walks make the start state of an allowed-terminal set as the arena alternation of the
tagged terminals' ids (``Lexer.terminal_nodes``, ``DerivativeDfa.start``); Python's
``Lexer.start`` builds the alternation with the derivative module and imports it. Both must
give the same lexer state for the same set, whichever comes first (state identities, counts
and row sharing depend on it), and no mask walk may call back into Python.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokamata
from tokamata.automata import derivatives as d
from tokamata.automata.dfa import DEAD
from tokamata.grammar.lexer import Lexer

from real_tokenizers import gpt2

ROOT = Path(__file__).resolve().parents[2]
BYTES = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "tags": {"type": "array", "items": {"enum": ["a", "bc", 3]}},
                                           "n": {"type": "number", "multipleOf": 0.5}},
          "required": ["name"]}
CONSTRAINTS = {
    "arithmetic": lambda vocab: tokamata.compile_grammar((ROOT / "tests/data/grammars/arithmetic.lark").read_text(), vocab),
    "c_like": lambda vocab: tokamata.compile_grammar((ROOT / "tests/data/grammars/c_like.lark").read_text(), vocab),
    "python_like": lambda vocab: tokamata.compile_grammar(
        (ROOT / "benchmarks/grammars/python_like.lark").read_text(), vocab),
    "sql": lambda vocab: tokamata.compile_grammar((ROOT / "tests/data/grammars/sql.lark").read_text(), vocab),
    "json_schema": lambda vocab: tokamata.compile_json_schema(SCHEMA, vocab),
}
_compiled: dict[str, tokamata.Constraint] = {}


def constraint(name: str) -> tokamata.Constraint:
    found = _compiled.get(name)
    if found is None:
        found = _compiled[name] = CONSTRAINTS[name](BYTES)
    return found


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_native_start_is_the_python_start(name, data):
    c = constraint(name)
    assert c.strategy == "earley"
    lexer = c.lexer
    nodes = lexer.terminal_nodes()
    count = len(c.grammar.terminals)
    assert nodes.shape == (count,)
    terminals = data.draw(st.frozensets(st.integers(0, count - 1), max_size=count), label="terminals")
    python_first = data.draw(st.booleans(), label="python first")
    members = np.asarray([nodes[t] for t in sorted(terminals)], dtype=np.int32)
    before = lexer.num_states
    if python_first:
        python = lexer.start(terminals)
        native = lexer.dfa.start(members)
    else:
        native = lexer.dfa.start(members)
        python = lexer.start(terminals)
    assert native == python
    assert lexer.num_states - before <= 1  # one new state at most, made by whichever came first
    texts = [t for t in terminals if c.grammar.terminals[t].expr is not None]
    assert (native == DEAD) == (not texts)
    if native != DEAD:
        assert set(lexer.ends(native)) <= set(terminals)


@pytest.mark.parametrize("name", ["c_like", "python_like", "json_schema"])
def test_the_walks_starts_are_the_python_starts(name):
    """Along decoding, the start state the C++ core made (natively, for the allowed set of
    each parser state and the ignored terminals) is Python's Lexer.start of the same set."""
    c = CONSTRAINTS[name](BYTES)
    text = {"c_like": b"int main() { int x = 1 + 2; return x; }",
            "python_like": b"import os\nx = f(a, b) + 1\nprint(x)",
            "json_schema": b'{"name":"ab","tags":["bc",3],"n":1.5}'}[name]
    m = c.matcher()
    for byte in text:
        m.allowed_tokens()
        assert m.consume(byte)
    parser, walks = c.parser, c.grammar_core
    assert parser is not None and walks is not None
    ignore = frozenset(c.grammar.ignore)
    starts = set()
    for handle in range(parser.core.num_handles):
        native = walks.start_of(handle)
        assert native == c.lexer.start(parser.allowed(handle) | ignore), handle
        starts.add(native)
    assert len(starts) > 3


def _python_calls(action) -> list[str]:
    """The functions of the tokamata package entered while ``action`` runs, but the matcher
    methods called (whose native core does the work)."""
    entered: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and "/tokamata/" in frame.f_code.co_filename:
            entered.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return [name for name in entered if name not in ("matcher.py:fill_bitmask", "matcher.py:consume")]


@pytest.mark.parametrize("name", ["python_like", "json_schema"])
def test_cold_masks_and_consumes_call_no_python(name):
    vocab = gpt2().vocab
    c = CONSTRAINTS[name](vocab)
    m = c.matcher()
    states = c.num_lexer_states
    bitmask = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
    assert _python_calls(lambda: m.fill_bitmask(bitmask)) == []
    assert c.num_lexer_states > states  # the cold mask made lexer states, start states among them
    text = "import os\nx = f(a, b) + 1\n" if name == "python_like" else '{"name":"ab","n":1.5}'
    for token in gpt2().encode(text):
        assert _python_calls(lambda: m.consume(token)) == []
        assert _python_calls(lambda: m.fill_bitmask(bitmask)) == []


def test_start_states_count_against_max_dfa_states():
    c = constraint("c_like")
    lexer = Lexer(c.grammar, tokamata.Limits(max_dfa_states=3))
    nodes = lexer.terminal_nodes()
    texts = [t for t, terminal in enumerate(c.grammar.terminals) if terminal.expr is not None]
    states = [lexer.dfa.start(nodes[[t]]) for t in texts[:3]]
    assert states == [0, 1, 2]
    with pytest.raises(tokamata.LimitExceeded) as error:
        lexer.dfa.start(nodes[[texts[3]]])
    assert (error.value.limit, error.value.value, error.value.bound) == ("max_dfa_states", 4, 3)
    assert lexer.dfa.start(nodes[[texts[1]]]) == 1  # (a known state is no new state)


def test_a_walk_past_max_dfa_states_raises_limit_exceeded():
    """Small DFA budgets fail in the mask walk (start states and derivatives alike), as
    LimitExceeded, never as another error; the budget that lets the constraint compile but
    not decode exists."""
    failed_in_walk = 0
    for bound in range(1, 30):
        limits = tokamata.Limits(max_dfa_states=bound)
        try:
            c = tokamata.compile_grammar((ROOT / "tests/data/grammars/c_like.lark").read_text(), BYTES, limits=limits)
        except tokamata.LimitExceeded as error:
            assert error.limit == "max_dfa_states"
            continue
        m = c.matcher()
        try:
            for byte in b"int main() { return 0; }":
                m.allowed_tokens()
                assert m.consume(byte)
        except tokamata.LimitExceeded as error:
            assert error.limit == "max_dfa_states"
            failed_in_walk += 1
    assert failed_in_walk > 0


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_terminal_nodes_are_the_tagged_expressions(name):
    # terminal_nodes() tags in the arena; importing the tagged Python expressions gives the same ids
    c = constraint(name)
    lexer = c.lexer
    expected = [lexer.bridge.to_arena(d.NOTHING if t.expr is None else d.tagged(t.expr, i))
                for i, t in enumerate(c.grammar.terminals)]
    assert lexer.terminal_nodes().tolist() == expected
