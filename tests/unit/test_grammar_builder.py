"""The one grammar builder (tokamata.grammar.builder) and its passes: dead-rule removal
(grammar/dead_rules.py) and the regular-rule pass (grammar/regular_rules.py). Tables of small
grammars with the rules and terminals expected after each pass, the one symbol budget, and a
check that every front end builds through the builder."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import tokamata
from tokamata.automata import derivatives as d
from tokamata.grammar import builder as builder_module
from tokamata.grammar.builder import GrammarBuilder
from tokamata.grammar.dead_rules import drop_dead_rules, start_is_productive
from tokamata.grammar.ebnf import Alt, Literal, Ref, Repeat, RuleDef, Seq
from tokamata.grammar.ir import Grammar, Rule, Terminal, live_symbols
from tokamata.syntax.gbnf import parse_gbnf
from tokamata.syntax.json import json_grammar
from tokamata.syntax.json_schema import schema_to_grammar
from tokamata.syntax.lark import parse_lark

LIMITS = tokamata.Limits()


def _byte(c: str) -> d.Expr:
    return d.byte_set(1 << ord(c))


def _shape(g: Grammar) -> tuple[list[str], list[str], list[tuple[str, tuple[str, ...]]]]:
    """Terminal names, nonterminal names and rules by name: comparable across renumbering."""
    rules = sorted((g.nonterminals[r.lhs], tuple(g.describe(s) for s in r.rhs)) for r in g.rules)
    return [t.name for t in g.terminals], list(g.nonterminals), rules


# ------------------------------------------------------------------------------ dead rules

@dataclass(frozen=True)
class DeadCase:
    name: str
    nonterminals: tuple[str, ...]
    rules: tuple[tuple[int, tuple[int, ...]], ...]  # (lhs, rhs) over terminals "a" "b" "c"
    drop_unproductive: bool
    expected: tuple[list[str], list[str], list[tuple[str, tuple[str, ...]]]]


DEAD_CASES = [
    DeadCase("nothing dead", ("s", "x"), ((0, (0, -2)), (1, (1,))), False,
             (["a", "b"], ["s", "x"], [("s", ("a", "x")), ("x", ("b",))])),
    DeadCase("unreachable rule and its terminal", ("s", "x"), ((0, (0,)), (1, (2,))), False,
             (["a"], ["s"], [("s", ("a",))])),
    DeadCase("unreachable unproductive rule", ("s", "loop"), ((0, (0,)), (1, (-2, 1))), False,
             (["a"], ["s"], [("s", ("a",))])),
    DeadCase("unproductive alternative dropped when expected", ("s", "loop"),
             ((0, (0,)), (0, (-2,)), (1, (-2, 1))), True, (["a"], ["s"], [("s", ("a",))])),
    DeadCase("what only an unproductive rule reached goes too", ("s", "loop", "x"),
             ((0, (1,)), (0, (-2, -3)), (1, (-2,)), (2, (2,))), True, (["b"], ["s"], [("s", ("b",))])),
    DeadCase("renumbering keeps order and names", ("x", "s", "y"),
             ((1, (-3, -1)), (0, (0,)), (2, (2,))), False,
             (["a", "c"], ["x", "s", "y"], [("s", ("y", "x")), ("x", ("a",)), ("y", ("c",))])),
]


@pytest.mark.parametrize("case", DEAD_CASES, ids=[c.name for c in DEAD_CASES])
def test_dead_rules(case: DeadCase) -> None:
    terminals = tuple(Terminal(c, _byte(c)) for c in "abc")
    start = 1 if case.name.startswith("renumbering") else 0
    g = Grammar(terminals, case.nonterminals, tuple(Rule(lhs, rhs) for lhs, rhs in case.rules), start)
    live = drop_dead_rules(g, case.drop_unproductive)
    assert _shape(live) == case.expected
    assert live.nonterminals[live.start] == case.nonterminals[start]
    _check_recorded_live_symbols(live)


def _check_recorded_live_symbols(live: Grammar) -> None:
    """Live symbols a pass recorded (set_live_symbols) equal those computed afresh."""
    recorded = live.__dict__.get("_live_symbols")
    if recorded is not None:
        fresh = Grammar(live.terminals, live.nonterminals, live.rules, live.start, live.ignore, live.source)
        assert live_symbols(fresh) == recorded


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": False, "b": {"type": "integer"}}},
    {"anyOf": [{"type": "string"}, {"allOf": [{"type": "integer"}, {"type": "string"}]}]},
    {"type": "array", "items": {"not": {}}, "maxItems": 3},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False},
    {"$defs": {"n": {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"},
])
def test_live_symbols_recorded_by_dead_rules_are_exact(schema) -> None:
    # the builder's dead-rule pass records "every symbol left is live" on what it returns
    grammar, _ = schema_to_grammar(schema)
    _check_recorded_live_symbols(grammar)
    for case in DEAD_CASES:
        terminals = tuple(Terminal(c, _byte(c)) for c in "abc")
        start = 1 if case.name.startswith("renumbering") else 0
        dropped = drop_dead_rules(Grammar(terminals, case.nonterminals,
                                          tuple(Rule(lhs, rhs) for lhs, rhs in case.rules), start),
                                  case.drop_unproductive)
        _check_recorded_live_symbols(dropped)


def test_dead_rules_keep_ignored_terminals_and_return_a_live_grammar_as_is() -> None:
    terminals = (Terminal("a", _byte("a")), Terminal("WS", _byte(" ")), Terminal("b", _byte("b")))
    g = Grammar(terminals, ("s",), (Rule(0, (2,)),), 0, ignore=(1,))
    live = drop_dead_rules(g, False)
    assert [t.name for t in live.terminals] == ["WS", "b"] and live.ignore == (0,)
    assert drop_dead_rules(live, False) is live


def test_unproductive_mentioned_by_a_reachable_rule_is_still_an_error() -> None:
    b = GrammarBuilder("s: x\nx: x", LIMITS)
    s, x = b.nonterminal("s"), b.nonterminal("x")
    b.add_rule(s, [b.terminal('"a"', _byte("a"), (1, 1))], (1, 1))
    b.add_rule(s, [x], (1, 4))
    b.add_rule(x, [x], (2, 1))
    with pytest.raises(tokamata.InvalidSyntax, match="unproductive") as info:
        b.build(s)
    assert (info.value.line, info.value.column) == (2, 1)


def test_an_empty_language_raises_the_front_ends_error() -> None:
    b = GrammarBuilder("", LIMITS, drop_unproductive=True)
    s = b.nonterminal("s")
    b.add_rule(s, [s])
    with pytest.raises(tokamata.SchemaError, match="no value"):
        b.build(s, lambda: tokamata.SchemaError("no value", pointer=""))
    g = Grammar((), ("s",), (Rule(0, (-1,)),), 0)
    assert not start_is_productive(g)


# ------------------------------------------------------------------------------ the builder

def test_terminals_are_shared_by_expression_and_ids() -> None:
    b = GrammarBuilder("", LIMITS)
    assert b.terminal("A", _byte("a")) == b.terminal("again", _byte("a")) == 0
    assert b.special_terminal("<x>", [7, 7]) == b.special_terminal("<y>", (7,)) == 1
    assert b.ignore_terminal("WS", _byte("a"), None) == 2  # ignored: a namespace of its own
    assert b.terminal("n", _byte("b"), None, numbered=True) == 3
    s = b.nonterminal("s")
    b.add_rule(s, [0, 1, 3])
    g = b.build(s)
    assert [t.name for t in g.terminals] == ["A", "<x>", "WS", "n_3"] and g.ignore == (2,)


def test_ebnf_helpers() -> None:
    b = GrammarBuilder("", LIMITS)
    a = b.terminal("a", _byte("a"))
    s = b.nonterminal("s")
    rhs = [b.optional([a], "s", None), b.plus([a], "s", None), *b.repeat([a], 2, 3, "s", None)]
    b.add_rule(s, rhs)
    g = b.build(s)
    assert _shape(g)[2] == [
        ("__s_opt_0", ()), ("__s_opt_0", ("a",)),
        ("__s_opt_2", ()), ("__s_opt_2", ("a",)),
        ("__s_plus_1", ("__s_plus_1", "a")), ("__s_plus_1", ("a",)),
        ("s", ("__s_opt_0", "__s_plus_1", "a", "a", "__s_opt_2")),
    ]


@pytest.mark.parametrize("action", ["rules", "repeat", "count"])
def test_one_symbol_budget(action: str) -> None:
    b = GrammarBuilder("", tokamata.Limits(max_grammar_symbols=10))
    a = b.terminal("a", _byte("a"))
    s = b.nonterminal("s")
    b.add_rule(s, [a, a, a])  # 4 symbols
    assert b.size == 4 and b.fits(6) and not b.fits(7)
    with pytest.raises(tokamata.LimitExceeded) as info:
        if action == "rules":
            b.add_rule(s, [a] * 6)
        elif action == "repeat":
            b.repeat([a], 7, 7, "s", None)
        else:
            b.check_count(11)
    assert info.value.limit == "max_grammar_symbols" and info.value.bound == 10
    assert info.value.value == {"rules": 11, "repeat": 11, "count": 11}[action]
    assert b.size == 4  # nothing was added


def test_merging_needs_a_character_level_grammar() -> None:
    with pytest.raises(ValueError, match="character-level"):
        GrammarBuilder("", LIMITS, inlining="shared")
    with pytest.raises(ValueError, match="inlining must be"):
        GrammarBuilder("", LIMITS, character_level=True, inlining="all")
    assert GrammarBuilder("", LIMITS).inlining == "plain"
    assert GrammarBuilder("", LIMITS, character_level=True).inlining == "shared"


# --------------------------------------------------------------------- regular-rule pass

REGULAR_TEXT = 'root ::= "a" item+ | "b" root\nitem ::= "x" "y"?\nword ::= "w"'


def _regular_definitions() -> list[RuleDef]:
    t = REGULAR_TEXT
    a = Literal(t.index('"a"'), t.index('"a"') + 3, 0, "a")
    item_ref = Ref(t.index("item+"), t.index("item+") + 4, 0, "item")
    plus = Repeat(item_ref.start, item_ref.end + 1, 1, item_ref, 1, d.UNBOUNDED)
    b = Literal(t.index('"b"'), t.index('"b"') + 3, 0, "b")
    root_ref = Ref(t.index("root\n"), t.index("root\n") + 4, 0, "root")
    root_body = Alt(a.start, root_ref.end, 1, (Seq(a.start, plus.end, 1, (a, plus)),
                                               Seq(b.start, root_ref.end, 0, (b, root_ref))))
    x = Literal(t.index('"x"'), t.index('"x"') + 3, 0, "x")
    y = Literal(t.index('"y"'), t.index('"y"') + 3, 0, "y")
    y_opt = Repeat(y.start, y.end + 1, 1, y, 0, 1)
    item_body = Seq(x.start, y_opt.end, 1, (x, y_opt))
    w = Literal(t.index('"w"'), t.index('"w"') + 3, 0, "w")
    return [RuleDef("root", root_body, 0), RuleDef("item", item_body, t.index("item ::=")),
            RuleDef("word", w, t.index("word"))]


@pytest.mark.parametrize("mode,expected", [
    # item is regular and used once: inlined, and the run "a" item+ is one terminal
    ("shared", (['"a" item+', '"b"'], ["root"], [("root", ('"a" item+',)), ("root", ('"b"', "root"))])),
    ("maximal", (['"a" item+', '"b"'], ["root"], [("root", ('"a" item+',)), ("root", ('"b"', "root"))])),
    # plain: literals only, EBNF through helpers
    ("plain", (['"a"', '"b"', '"x"', '"y"'], ["root", "item", "__item_opt_1", "__root_plus_0"],
               [("__item_opt_1", ()), ("__item_opt_1", ('"y"',)),
                ("__root_plus_0", ("__root_plus_0", "item")), ("__root_plus_0", ("item",)),
                ("item", ('"x"', "__item_opt_1")),
                ("root", ('"a"', "__root_plus_0")), ("root", ('"b"', "root"))])),
])
def test_regular_rule_pass(mode: str, expected) -> None:
    b = GrammarBuilder(REGULAR_TEXT, LIMITS, character_level=True, inlining=mode)
    for definition in _regular_definitions():
        b.define(definition)
    g = b.build("root")
    names, nonterminals, rules = _shape(g)
    assert (names, sorted(nonterminals), rules) == (expected[0], sorted(expected[1]), expected[2])
    assert "word" not in g.nonterminals  # unreachable definitions are not lowered
    assert g.rules[0].origin is not None


def test_shared_terminals_for_rules_used_twice() -> None:
    g = parse_gbnf('root ::= ws "a" ws "b" r\nr ::= "c" r | ws\nws ::= " "*', None, LIMITS)
    names = [t.name for t in g.terminals]
    assert "ws" in names and not any(n.startswith('" "') for n in names)
    maximal = tokamata.syntax.gbnf._parse('root ::= ws "a" ws "b"\nws ::= " "*', None, LIMITS, "root", "maximal")
    assert len(maximal.terminals) == 1


# ------------------------------------------------------------- every front end uses it

def _calls(monkeypatch) -> list[str]:
    built: list[str] = []
    original = builder_module.GrammarBuilder.build

    def build(self, start, empty_language=None):
        built.append("character" if self.character_level else "lexer")
        return original(self, start, empty_language)

    monkeypatch.setattr(builder_module.GrammarBuilder, "build", build)
    return built


@pytest.mark.parametrize("front_end,kind", [
    (lambda: parse_lark('start: "a" "b"*', None, LIMITS), "lexer"),
    (lambda: parse_gbnf('root ::= "a" "b"*', None, LIMITS), "character"),
    (lambda: schema_to_grammar({"type": "array"}, LIMITS), "character"),
    (lambda: json_grammar(LIMITS, 2), "character"),
])
def test_every_front_end_builds_through_the_builder(monkeypatch, front_end, kind: str) -> None:
    built = _calls(monkeypatch)
    front_end()
    assert built == [kind]


BUDGET = tokamata.Limits(max_grammar_symbols=40)


@pytest.mark.parametrize("front_end", [
    lambda: parse_lark("start: x~50\nx: \"a\" | \"b\" x", None, BUDGET),
    lambda: parse_gbnf('root ::= x{50}\nx ::= "a" | "b" x', None, BUDGET),
    lambda: schema_to_grammar({"type": "object", "properties": {f"p{i}": {"type": "array", "items": {"$ref": "#"}}
                                                                for i in range(12)}}, BUDGET),
    lambda: json_grammar(tokamata.Limits(max_grammar_symbols=20), 1),
], ids=["lark", "gbnf", "json-schema", "json"])
def test_every_front_end_shares_the_symbol_budget(front_end) -> None:
    with pytest.raises(tokamata.LimitExceeded) as info:
        front_end()
    assert info.value.limit == "max_grammar_symbols"
    assert info.value.bound in (40, 20) and info.value.value > info.value.bound
