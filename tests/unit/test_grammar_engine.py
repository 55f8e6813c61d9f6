"""The grammar engine on hand-built IR: the C++ Earley parser against the Python reference,
lexing ambiguity, special tokens, limits and the matcher API."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokamata
from tokamata.automata import derivatives as d
from tokamata.compile import compile_grammar_ir
from tokamata.grammar.earley import EarleyParser
from tokamata.grammar.earley_reference import ReferenceEarleyParser
from tokamata.grammar.ir import Grammar, Rule, Terminal, nonterminal


def lit(text: str) -> d.Expr:
    return d.concat_all(d.byte_set(1 << b) for b in text.encode())


def plus(text: str) -> d.Expr:
    return d.repeat(lit(text), 1, d.UNBOUNDED)


def grammar(terminals: dict[str, d.Expr | None], rules: list[tuple[str, list[str]]], ignore=(),
            specials: dict[str, tuple[int, ...]] | None = None) -> Grammar:
    """Rules as (lhs, [symbols]); uppercase symbols are terminals. The first lhs is the start."""
    specials = specials or {}
    names = list(terminals) + list(specials)
    terms = tuple(Terminal(n, terminals[n]) if n in terminals else Terminal(n, None, specials[n]) for n in names)
    nts: list[str] = []
    for lhs, _ in rules:
        if lhs not in nts:
            nts.append(lhs)
    ir_rules = tuple(Rule(nts.index(lhs), tuple(names.index(s) if s[0].isupper() or s[0] == "<" else nonterminal(nts.index(s))
                                                  for s in rhs)) for lhs, rhs in rules)
    return Grammar(terms, tuple(nts), ir_rules, 0, tuple(names.index(n) for n in ignore))


GRAMMARS = {
    "ambiguous": grammar({"A": lit("a")}, [("s", ["s", "s"]), ("s", ["A"])]),
    "left_recursive": grammar({"A": lit("a"), "B": lit("b")}, [("s", ["s", "A"]), ("s", ["B"])]),
    "nullable_chain": grammar({"A": lit("a"), "B": lit("b"), "C": lit("c")},
                              [("s", ["x", "y", "C"]), ("x", []), ("x", ["A"]), ("y", []), ("y", ["x", "B"]),
                               ("s", ["s", "s"])]),
    "hidden_left_recursion": grammar({"X": lit("x"), "Y": lit("y")},
                                     [("s", ["e", "s", "X"]), ("s", ["Y"]), ("e", [])]),
    "balanced": grammar({"L": lit("("), "R": lit(")")}, [("s", []), ("s", ["L", "s", "R", "s"])]),
    "expression": grammar({"N": lit("1"), "P": lit("+"), "T": lit("*"), "L": lit("("), "R": lit(")")},
                          [("e", ["e", "P", "t"]), ("e", ["t"]), ("t", ["t", "T", "f"]), ("t", ["f"]),
                           ("f", ["N"]), ("f", ["L", "e", "R"])]),
}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_cpp_earley_matches_the_reference(name):
    g = GRAMMARS[name]
    limits = tokamata.Limits()
    fast, slow = EarleyParser(g, limits), ReferenceEarleyParser(g, limits)
    rng = random.Random(name)
    assert fast.allowed(0) == slow.allowed(0) and fast.accepting(0) == slow.accepting(0)
    for _ in range(60):
        a = b = 0
        for _ in range(rng.randrange(1, 14)):
            terminal = rng.randrange(len(g.terminals))
            a2, b2 = fast.scan(a, terminal), slow.scan(b, terminal)
            assert (a2 < 0) == (b2 < 0)
            if a2 < 0:
                continue
            a, b = a2, b2
            assert fast.allowed(a) == slow.allowed(b)
            assert fast.accepting(a) == slow.accepting(b)


def sentences(g: Grammar, max_len: int) -> set[tuple[int, ...]]:
    """Every terminal string of length <= max_len, by brute force over the reference parser."""
    p = ReferenceEarleyParser(g, tokamata.Limits())
    found, frontier = set(), [((), 0)]
    while frontier:
        seq, h = frontier.pop()
        if p.accepting(h):
            found.add(seq)
        if len(seq) < max_len:
            for t in p.allowed(h):
                frontier.append((seq + (t,), p.scan(h, t)))
    return found


def test_reference_parser_languages():
    assert sentences(GRAMMARS["balanced"], 4) == {(), (0, 1), (0, 1, 0, 1), (0, 0, 1, 1)}
    assert sentences(GRAMMARS["left_recursive"], 3) == {(1,), (1, 0), (1, 0, 0)}
    assert sentences(GRAMMARS["hidden_left_recursion"], 3) == {(1,), (1, 0), (1, 0, 0)}
    assert sentences(GRAMMARS["ambiguous"], 3) == {(0,), (0, 0), (0, 0, 0)}


BYTES = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(128)] + [b"ab", b"ba", b"aab", None, None],
                                             eos_token_ids=[131])


def accepts(c, text: bytes) -> bool:
    m = c.matcher()
    return all(m.consume(b) for b in text) and m.is_accepting()


def test_lexemes_end_anywhere_their_terminal_matches():
    # "a"+ "a"+ : lark's dynamic_complete language, not maximal munch: "aa" splits as a|a
    g = grammar({"A": plus("a"), "B": plus("b")}, [("s", ["A", "A"]), ("s", ["A", "B", "A"])])
    c = compile_grammar_ir(g, BYTES)
    assert accepts(c, b"aa") and accepts(c, b"aaaa") and accepts(c, b"abba")
    assert not accepts(c, b"a") and not accepts(c, b"ab")
    m = c.matcher()
    assert m.consume(ord("a"))
    assert 128 in m.allowed_tokens()  # "ab" crosses the A|B boundary
    assert m.consume(128) and not m.is_accepting()  # "aab": A="a" B? no: "a"+"ab" -> A B... needs a final A
    assert m.consume(ord("a")) and m.is_accepting()


def test_ignored_terminals_between_lexemes_and_at_the_ends():
    g = grammar({"A": lit("a"), "B": lit("b"), "WS": plus(" ")}, [("s", ["A", "B"])], ignore=("WS",))
    c = compile_grammar_ir(g, BYTES)
    for text in (b"ab", b" ab", b"a b", b"ab  ", b"  a   b "):
        assert accepts(c, text), text
    for text in (b"a", b" ", b"ba", b"a bb"):
        assert not accepts(c, text), text


def test_special_tokens_as_terminals():
    g = grammar({"A": plus("a")}, [("s", ["A", "<end>", "A"])], specials={"<end>": (130,)})
    c = compile_grammar_ir(g, BYTES)
    m = c.matcher()
    assert 130 not in m.allowed_tokens()
    assert m.consume(ord("a"))
    assert 130 in m.allowed_tokens()
    assert m.consume(ord("a")) and m.consume(130)
    assert not m.consume(130)
    assert m.allowed_tokens().tolist() == [ord("a")]  # "ab", "aab": no b after the special token
    assert m.consume(ord("a")) and m.is_accepting()


def test_allowed_tokens_match_consume_exhaustively():
    g = GRAMMARS["expression"]
    named = {"N": lit("1"), "P": lit("+"), "T": lit("*"), "L": lit("("), "R": lit(")")}
    vocab = tokamata.Vocabulary.from_token_bytes([b"1", b"+", b"*", b"(", b")", b"1+", b"+1", b"(1", b"1)", b")*(",
                                                  b"11", None], eos_token_ids=[11])
    c = compile_grammar_ir(g, vocab)
    frontier = [c.matcher()]
    for _ in range(4):
        nxt = []
        for m in frontier:
            allowed = set(m.allowed_tokens().tolist())
            for token in range(11):
                twin = m.copy()
                assert twin.consume(token) == (token in allowed)
                if token in allowed:
                    nxt.append(twin)
            assert (11 in allowed) == m.is_accepting()
        frontier = nxt[:200]
    # the vocabulary spells every terminal, so the exhaustive check above exercises each one
    from tokamata.automata.dfa import LazyByteDfa
    for name, expr in named.items():
        dfa = LazyByteDfa(expr, tokamata.Limits())
        spelled = [t for t in vocab.token_bytes[:11] if t and (s := dfa.run(t)) >= 0 and dfa.accepting(s)]
        assert spelled, name


SEXP_ABUTTING = r"""
start: datum+
?datum: atom | "(" datum* ")"
atom: SYMBOL | NUMBER
SYMBOL: /[a-z][a-z0-9]*/
NUMBER: /[0-9]+/
%ignore " "
"""


def test_masks_where_lexemes_abut_match_consume():
    # Every split of a token into abutting atoms is a parse: masks come from the dense walk
    # (the event-indexed walk gives way to it); consume runs the lexer over the bytes alone.
    pieces = [b"a", b"1", b"(", b")", b" "]
    tokens = sorted({bytes().join(p) for n in range(1, 4) for p in itertools.product(pieces, repeat=n)})
    vocab = tokamata.Vocabulary.from_token_bytes(tokens + [None], eos_token_ids=[len(tokens)])
    c = tokamata.compile_grammar(SEXP_ABUTTING, vocab)
    frontier = [c.matcher()]
    rng = random.Random(5)
    for _ in range(4):
        nxt = []
        for m in frontier:
            allowed = set(m.allowed_tokens().tolist())
            for token in range(len(tokens)):
                twin = m.copy()
                assert twin.consume(token) == (token in allowed), (m.num_consumed, tokens[token])
                if token in allowed:
                    nxt.append(twin)
            assert (len(tokens) in allowed) == m.is_accepting()
        frontier = rng.sample(nxt, min(len(nxt), 6))


def test_rollback_copy_and_termination():
    g = grammar({"A": lit("a"), "B": lit("b")}, [("s", ["A", "B"])])
    c = compile_grammar_ir(g, BYTES)
    m = c.matcher()
    assert m.consume(ord("a")) and m.consume(ord("b")) and m.is_accepting()
    twin = m.copy()
    assert m.consume(131) and m.is_terminated() and m.allowed_tokens().size == 0
    bitmask = tokamata.allocate_bitmask(2, BYTES.size)
    m.fill_bitmask(bitmask, 1)
    assert np.flatnonzero(np.unpackbits(bitmask[1].view(np.uint8), bitorder="little")).tolist() == [131]
    m.rollback(2)
    assert m.num_consumed == 1 and not m.is_terminated()
    assert m.allowed_tokens().tolist() == [ord("b")]
    assert twin.num_consumed == 2 and twin.is_accepting()
    with pytest.raises(tokamata.InvalidArgument):
        m.rollback(5)
    assert not m.consume(ord("a")) and m.num_consumed == 1


def test_bad_arguments_raise_invalid_argument():
    c = compile_grammar_ir(GRAMMARS["balanced"], BYTES)
    m = c.matcher()
    with pytest.raises(tokamata.InvalidArgument):
        m.consume(10_000)
    with pytest.raises(tokamata.InvalidArgument):
        m.fill_bitmask(np.zeros((1, 2), dtype=np.int32))
    with pytest.raises(tokamata.InvalidArgument):
        m.fill_bitmask(np.zeros((1, 5), dtype=np.int64))
    with pytest.raises(tokamata.InvalidArgument):
        m.fill_bitmask(tokamata.allocate_bitmask(1, BYTES.size), 3)


def test_fill_bitmasks_mixes_regex_and_grammar_matchers():
    regex = tokamata.compile_regex("ab", BYTES).matcher()
    gram = compile_grammar_ir(GRAMMARS["balanced"], BYTES).matcher()
    bitmask = tokamata.allocate_bitmask(3, BYTES.size)
    tokamata.fill_bitmasks([regex, gram], bitmask, [2, 0])
    def row(i):
        return np.flatnonzero(np.unpackbits(bitmask[i].view(np.uint8), bitorder="little")).tolist()
    assert row(2) == [ord("a"), 128]
    assert row(0) == [ord("("), 131]
    assert row(1) == []


def test_limits():
    ambiguous = grammar({"A": plus("a")}, [("s", ["A", "s"]), ("s", ["A"])])  # a+ split every way
    c = compile_grammar_ir(ambiguous, BYTES, limits=tokamata.Limits(max_lexer_configurations=5))
    m = c.matcher()
    with pytest.raises(tokamata.LimitExceeded) as error:
        for _ in range(10):
            m.consume(ord("a"))
    assert error.value.limit == "max_lexer_configurations"
    with pytest.raises(tokamata.LimitExceeded) as error:
        c = compile_grammar_ir(GRAMMARS["balanced"], BYTES, limits=tokamata.Limits(max_parser_states=4))
        m = c.matcher()
        for _ in range(6):
            m.consume(ord("("))
    assert error.value.limit == "max_parser_states"
    with pytest.raises(tokamata.LimitExceeded) as error:  # s: s s | "a" has O(n) items per set
        m = compile_grammar_ir(GRAMMARS["ambiguous"], BYTES, limits=tokamata.Limits(max_earley_items=20)).matcher()
        for _ in range(40):
            m.consume(ord("a"))
    assert error.value.limit == "max_earley_items"
    with pytest.raises(tokamata.LimitExceeded) as error:
        compile_grammar_ir(GRAMMARS["expression"], BYTES, limits=tokamata.Limits(max_grammar_symbols=5))
    assert error.value.limit == "max_grammar_symbols"


@pytest.mark.parametrize("rules, message", [
    ([("s", ["A"]), ("s", ["t"]), ("t", ["t", "A"])], "unproductive"),
    ([("s", ["s", "A"])], "empty"),
])
def test_grammar_errors(rules, message):
    with pytest.raises(tokamata.InvalidSyntax, match=message):
        compile_grammar_ir(grammar({"A": lit("a")}, rules), BYTES)


def test_zero_width_terminals_are_refused():
    with pytest.raises(tokamata.InvalidSyntax, match="empty string"):
        compile_grammar_ir(grammar({"A": d.repeat(lit("a"), 0, 3)}, [("s", ["A"])]), BYTES)


def test_lexer_state_blow_up_raises_limit_exceeded():
    from tokamata.syntax.regex_lower import lower
    from tokamata.syntax.regex import parse_regex

    limits = tokamata.Limits(max_dfa_states=60)
    blow_up = lower(parse_regex("(a|b)*a(a|b){12}", limits))
    g = grammar({"X": blow_up, "C": lit(",")}, [("s", ["X"]), ("s", ["s", "C", "X"])])
    m = compile_grammar_ir(g, BYTES, limits=limits).matcher()
    rng = random.Random(3)
    with pytest.raises(tokamata.LimitExceeded) as error:
        for _ in range(80):  # every new suffix of 13 characters is a new lexer state
            m.allowed_tokens()
            assert m.consume(rng.choice(b"ab"))
    assert error.value.limit == "max_dfa_states"


def test_productive_nonterminals_and_check_once():
    from tokamata.grammar.ir import Grammar, Rule, Terminal, check_grammar, nonterminal, rules_core
    from tokamata.limits import Limits

    a = Terminal("A", d.byte_set(1 << 97))
    # start -> as ; as -> A as | A ; loop -> loop A (unproductive) ; unused -> as (unreachable)
    rules = (Rule(0, (nonterminal(1),)), Rule(1, (0, nonterminal(1))), Rule(1, (0,)), Rule(2, (nonterminal(2), 0)),
             Rule(3, (nonterminal(1),)))
    grammar = Grammar((a,), ("start", "as", "loop", "unused"), rules, 0)
    assert [bool(f) for f in rules_core(grammar).productive()] == [True, True, False, True]
    checked = check_grammar(grammar, Limits())
    assert {r.lhs for r in checked.rules} == {0, 1}  # unreachable rules dropped
    assert check_grammar(checked, Limits()) is checked  # not checked twice
    with pytest.raises(tokamata.LimitExceeded):
        check_grammar(checked, Limits(max_grammar_symbols=3))  # tighter limits: checked again


def test_lexer_rows_shared_across_grammars_whatever_the_terminal_index():
    """The shared row key of a lexer state is its language without terminal tags: a string
    terminal that is terminal 3 in one grammar and terminal 0 in another reuses the row, and
    the masks stay those of the grammar's own walk."""
    from tokamata.grammar.lexer import untagged
    from tokamata.trie import shared_rows

    words = [b"x", b'"', b"a", b"ab", b'a"', b'"a', b"\\", b"y", b'"x', None]
    vocab = tokamata.Vocabulary.from_token_bytes(words, eos_token_ids=[len(words) - 1])
    tokamata.clear_caches(vocab)
    body = d.concat(lit('"'), d.concat(d.repeat(d.byte_set((1 << ord("a")) | (1 << ord("b"))), 0, d.UNBOUNDED), lit('"')))
    first = compile_grammar_ir(grammar({"X": lit("x"), "Y": lit("y"), "Z": lit("zz"), "S": body},
                                       [("start", ["X", "S"])]), vocab)
    second = compile_grammar_ir(grammar({"S": body, "Y": lit("y")}, [("start", ["Y", "S"])]), vocab)
    m1 = first.matcher()
    assert m1.consume(0) and m1.consume(1)  # x then '"': inside the string (terminal 3)
    inside = m1.allowed_tokens().tolist()
    cache = shared_rows(vocab)
    before = cache.size
    m2 = second.matcher()
    assert m2.consume(7) and m2.consume(1)  # y then '"': inside the string (terminal 0)
    assert m2.allowed_tokens().tolist() == inside
    assert cache.size == before  # the row came from the first grammar
    assert m2.consume(3) and m2.consume(4) and m2.is_accepting()  # "ab" then 'a"'
    # the key of a lexer state is its untagged language: the string's inside state has one
    # key in both grammars, whatever the terminal's index
    inside_first = first.lexer.step(first.lexer.step(first.lexer.start(frozenset({3})), ord('"')), ord("a"))
    inside_second = second.lexer.step(second.lexer.step(second.lexer.start(frozenset({0})), ord('"')), ord("a"))
    assert first.lexer.dfa.key(inside_first) == second.lexer.dfa.key(inside_second)
    assert first.lexer.ends(first.lexer.step(inside_first, ord('"'))) == (3,)
    assert second.lexer.ends(second.lexer.step(inside_second, ord('"'))) == (0,)
    tagged = d.alternation(d.tagged(body, 3), d.tagged(body, 5), d.tagged(lit("x"), 1))
    assert untagged(tagged) is d.alternation(body, lit("x"))
    bridge = first.lexer.bridge
    assert bridge.arena.untagged(bridge.to_arena(tagged)) == bridge.to_arena(d.alternation(body, lit("x")))


@pytest.mark.parametrize("rules, message", [
    ([Rule(0, (5,))], "undefined terminal #5"),
    ([Rule(0, (0, nonterminal(3)))], "undefined rule #3"),
    ([Rule(0, (0,)), Rule(2, (0,))], "rule for an undefined nonterminal"),
])
def test_check_grammar_names_symbols_out_of_range(rules, message):
    from tokamata.grammar.ir import check_grammar
    from tokamata.limits import Limits

    g = Grammar((Terminal("A", lit("a")),), ("start",), tuple(rules), 0)
    with pytest.raises(tokamata.InvalidSyntax, match=message):
        check_grammar(g, Limits())


# -- flat rules (_core.GrammarRules) against naive fixed points ----------------------------

def _naive_fixed_point(rules, num_nonterminals, usable) -> list[bool]:
    """Iterate "lhs is marked once every symbol of a usable rule is" to its fixed point."""
    marked = [False] * num_nonterminals
    changed = True
    while changed:
        changed = False
        for rule in rules:
            if not marked[rule.lhs] and usable(rule) and all(s >= 0 or marked[-s - 1] for s in rule.rhs):
                marked[rule.lhs] = changed = True
    return marked


random_rules = st.integers(1, 5).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.lists(st.integers(-n, 2), max_size=4)), max_size=9)))


@settings(max_examples=300, deadline=None)
@given(random_rules)
def test_flat_rule_analyses_match_naive_fixed_points(case):
    from tokamata import _core
    from tokamata.grammar.ir import _flat_rules

    n, raw = case
    rules = [Rule(lhs, tuple(rhs)) for lhs, rhs in raw]
    core = _flat_rules(rules, n, 3)
    productive = core.productive()
    assert [bool(f) for f in productive] == _naive_fixed_point(rules, n, lambda r: True)
    assert [bool(f) for f in core.nullable()] == _naive_fixed_point(rules, n, lambda r: all(s < 0 for s in r.rhs))
    reached = {0}
    for _ in range(n):  # reachable from 0 through rules whose symbols are all productive
        reached |= {-s - 1 for r in rules if r.lhs in reached and all(s >= 0 or productive[-s - 1] for s in r.rhs)
                    for s in r.rhs if s < 0}
    assert [bool(f) for f in core.reachable(0, productive)] == [j in reached for j in range(n)]
    assert core.num_rules == len(rules)
    with pytest.raises(ValueError):
        _core.GrammarRules(np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(0, np.int32), n, 3)


@pytest.mark.parametrize("lhs, offsets, rhs, message", [
    ([0], [0, 1], [3], "symbol out of range"),             # terminal 3 of 3
    ([0], [0, 1], [-2], "symbol out of range"),            # nonterminal 1 of 1
    ([0], [0, 1], [-(2**31)], "symbol out of range"),
    ([1], [0, 0], [], "lhs out of range"),
    ([0], [0, 2], [0], "span"),
    ([0, 0], [0, 2, 1], [0], "decrease"),
])
def test_flat_rules_refuse_out_of_range_indices(lhs, offsets, rhs, message):
    from tokamata import _core

    with pytest.raises(ValueError, match=message):
        _core.GrammarRules(np.asarray(lhs, np.int32), np.asarray(offsets, np.int32), np.asarray(rhs, np.int32), 1, 3)


def test_flat_rule_queries_refuse_bad_arguments():
    from tokamata import _core

    rules = _core.GrammarRules(np.zeros(1, np.int32), np.asarray([0, 1], np.int32), np.zeros(1, np.int32), 1, 1)
    assert rules.productive() == b"\x01" and rules.reachable(0, b"\x01") == b"\x01"
    with pytest.raises(ValueError, match="start out of range"):
        rules.reachable(1, b"\x01")
    with pytest.raises(ValueError, match="wrong size"):
        rules.reachable(0, b"\x01\x01")
    with pytest.raises(ValueError, match="start out of range"):
        _core.EarleyCore(rules, 2, 1000, 1000)


@pytest.mark.parametrize("recursion", ["left", "right"])
def test_parser_states_merge_whatever_the_lexeme_sequence(recursion):
    # Atoms of two terminals abut in any order: the kernels after "A B" and "B A" differ (the
    # completed atom keeps its origin), their open items do not. Merging by content keeps the
    # states linear in the number of lexemes (right recursion) or constant (left), where
    # kernels alone gave 2^k states: the s-expression cliff (issue 20).
    rules = [("s", ["s", "d"]), ("s", ["d"])] if recursion == "left" else [("s", ["d", "s"]), ("s", ["d"])]
    g = grammar({"A": lit("a"), "B": lit("b")}, rules + [("d", ["A"]), ("d", ["B"])])
    parser, reference = EarleyParser(g, tokamata.Limits()), ReferenceEarleyParser(g, tokamata.Limits())
    k = 10
    for seq in itertools.product(range(2), repeat=k):
        h, r = 0, 0
        for t in seq:
            h, r = parser.scan(h, t), reference.scan(r, t)
            assert parser.allowed(h) == reference.allowed(r) and parser.accepting(h) == reference.accepting(r)
    assert parser.num_states <= (4 if recursion == "left" else 2 * k + 2)


@settings(max_examples=200, deadline=None)
@given(random_rules, st.randoms(use_true_random=False))
def test_cpp_earley_matches_the_reference_on_random_grammars(case, rng):
    from tokamata.grammar.ir import check_grammar

    n, raw = case
    terminals = tuple(Terminal(c.upper(), lit(c)) for c in "abc")
    g = Grammar(terminals, tuple(f"n{j}" for j in range(n)), tuple(Rule(lhs, tuple(rhs)) for lhs, rhs in raw), 0)
    try:
        g = check_grammar(g, tokamata.Limits())
    except tokamata.InvalidSyntax:
        return
    fast, slow = EarleyParser(g, tokamata.Limits()), ReferenceEarleyParser(g, tokamata.Limits())
    assert fast.allowed(0) == slow.allowed(0) and fast.accepting(0) == slow.accepting(0)
    for _ in range(20):
        a = b = 0
        for _ in range(rng.randrange(1, 8)):
            terminal = rng.randrange(3)
            a2, b2 = fast.scan(a, terminal), slow.scan(b, terminal)
            assert (a2 < 0) == (b2 < 0)
            if a2 < 0:
                break
            a, b = a2, b2
            assert fast.allowed(a) == slow.allowed(b) and fast.accepting(a) == slow.accepting(b)
