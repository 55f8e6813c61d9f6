"""The GBNF front end: tables of grammars with sentences accepted and rejected, checked by a
small Earley recognizer over the IR (the test oracle), for the mapping ``parse_gbnf``
produces and the two others the module has (``plain``: every literal, class and ``.`` a
terminal; ``maximal``: every regular piece one terminal); tables of errors with their line
and column; limits; token elements; the engine end to end.

The grammars below are written for these tests in the style of llama.cpp's examples (JSON,
arithmetic, a list of items, chess moves); none is copied.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import pytest

import tokamata
from tokamata.automata import derivatives as d
from tokamata.automata.dfa import DEAD, LazyByteDfa
from tokamata.grammar.ir import Grammar, is_terminal, nonterminal, nonterminal_index
from tokamata.syntax.gbnf import _parse, parse_gbnf

LIMITS = tokamata.Limits()


# ------------------------------------------------------------------------ the test oracle

_DFAS: dict[int, LazyByteDfa] = {}


def _dfa(expr: d.Expr) -> LazyByteDfa:
    dfa = _DFAS.get(expr.id)
    if dfa is None:
        dfa = _DFAS[expr.id] = LazyByteDfa(expr, LIMITS)
    return dfa


def earley_accepts(grammar: Grammar, units: list) -> bool:
    """Is ``units`` a sentence of ``grammar``? Units are bytes (ints) or ``("token", id)``.

    Earley with Aycock-Horspool nullable prediction; a text terminal is matched by running
    its DFA over the bytes from the current position, a special terminal by one token unit.
    """
    n = len(units)
    by_lhs: dict[int, list[tuple[int, ...]]] = {}
    for rule in grammar.rules:
        by_lhs.setdefault(rule.lhs, []).append(rule.rhs)
    nullable: set[int] = set()
    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            if rule.lhs not in nullable and all(
                    not is_terminal(s) and nonterminal_index(s) in nullable for s in rule.rhs):
                nullable.add(rule.lhs)
                changed = True

    ends_cache: dict[tuple[int, int], list[int]] = {}

    def ends(terminal_index: int, i: int) -> list[int]:
        key = (terminal_index, i)
        if key not in ends_cache:
            terminal = grammar.terminals[terminal_index]
            found = []
            if terminal.expr is None:
                if i < n and isinstance(units[i], tuple) and units[i][1] in terminal.token_ids:
                    found.append(i + 1)
            else:
                dfa = _dfa(terminal.expr)
                state = 0
                j = i
                while j < n and isinstance(units[j], int):
                    state = dfa.step(state, units[j])
                    j += 1
                    if state == DEAD:
                        break
                    if dfa.accepting(state):
                        found.append(j)
            ends_cache[key] = found
        return ends_cache[key]

    items: list[list[tuple]] = [[] for _ in range(n + 1)]
    seen: list[set[tuple]] = [set() for _ in range(n + 1)]

    def add(i: int, item: tuple) -> None:
        if item not in seen[i]:
            seen[i].add(item)
            items[i].append(item)

    for rhs in by_lhs.get(grammar.start, ()):
        add(0, (grammar.start, rhs, 0, 0))
    for i in range(n + 1):
        k = 0
        while k < len(items[i]):
            lhs, rhs, dot, origin = items[i][k]
            k += 1
            if dot == len(rhs):
                for lhs2, rhs2, dot2, origin2 in list(items[origin]):
                    if dot2 < len(rhs2) and rhs2[dot2] == nonterminal(lhs):
                        add(i, (lhs2, rhs2, dot2 + 1, origin2))
                continue
            symbol = rhs[dot]
            if is_terminal(symbol):
                for j in ends(symbol, i):
                    add(j, (lhs, rhs, dot + 1, origin))
            else:
                callee = nonterminal_index(symbol)
                for rhs2 in by_lhs.get(callee, ()):
                    add(i, (callee, rhs2, 0, i))
                if callee in nullable:
                    add(i, (lhs, rhs, dot + 1, origin))
    return any(lhs == grammar.start and dot == len(rhs) and origin == 0
               for lhs, rhs, dot, origin in items[n])


def accepts(grammar: Grammar, text: str) -> bool:
    return earley_accepts(grammar, list(text.encode("utf-8")))


# ------------------------------------------------------------------------- language tables

@dataclass(frozen=True)
class Case:
    name: str
    text: str
    accepted: tuple[str, ...]
    rejected: tuple[str, ...]
    start: str = "root"
    regex: str | None = None  # an equivalent Python regex, when the language is regular


JSON_LIKE = r"""
# any JSON value, with whitespace where JSON allows it
root    ::= element
element ::= space value space
value   ::= object | array | string | number | "true" | "false" | "null"
object  ::= "{" space ( member ( "," space member )* )? "}"
member  ::= string space ":" element
array   ::= "[" space ( element ( "," element )* )? "]"
string  ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number  ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
space   ::= [ \t\n\r]{0,20}
"""

ARITHMETIC = r"""
root   ::= expr
expr   ::= term ( ws ( "+" | "-" ) ws term )*
term   ::= factor ( ws ( "*" | "/" ) ws factor )*
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+ ( "." [0-9]+ )?
ws     ::= " "*
"""

ITEM_LIST = r"""
root ::= item+

# one item per line, written "- text"
item ::= "- " [^\n]+ "\n"
"""

CHESS = r"""
root ::= (
    # first move pair, then numbered pairs
    "1. " move " " move "\n"
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move    ::= (pawn | nonpawn | castle) [+#]?
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBKRQ] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle  ::= "O-O" ("-O")?
"""
_MOVE = r"(?:(?:[a-h]x)?[a-h][1-8](?:=[NBRQ])?|[NBKRQ][a-h]?[1-8]?x?[a-h][1-8]|O-O(?:-O)?)[+#]?"
CHESS_REGEX = rf"1\. {_MOVE} {_MOVE}\n(?:[1-9][0-9]?\. {_MOVE} {_MOVE}\n)+"

S_EXPRESSIONS = r"""
root ::= sexp
sexp ::= atom | "(" ( sexp ( " "+ sexp )* )? ")"
atom ::= [a-z]+ | [0-9]+
"""

CASES = [
    Case("literal escapes", r'root ::= "\x41\u00e9\U0001F600\n\t\r\\\"\[\]\-"',
         ("Aé😀\n\t\r\\\"[]-",), ("A", "Aé😀", "\\x41")),
    Case("literal text in UTF-8", 'root ::= "日本" [α-ω]+',
         ("日本α", "日本ωψ"), ("日本", "日本A", "本α"), regex="日本[α-ω]+"),
    Case("class edges", r'root ::= [a-] [-b] [\]] [\x41-\x43] [^a-z\n]',
         ("a-]C!", "--]AZ", "-b]B日"), ("a-]Cz", "a-]C\n", "a-]D!", "c-]A!"),
         regex=r"[a\-][\-b]\][A-C][^a-z\n]"),
    Case("range then dash", "root ::= [a-c-e]+",
         ("abc-e", "-", "e"), ("d", "", "f"), regex=r"[a-c\-e]+"),
    Case("escaped dash", r"root ::= [a\-z]", ("a", "-", "z"), ("b", "y"), regex=r"[a\-z]"),
    Case("negated class with escapes", r'root ::= "\"" [^"\\]* "\""',
         ('""', '"abc"', '"日\n"'), ('"a"b"', '"\\"', '"'), regex=r'"[^"\\]*"'),
    Case("any character", 'root ::= . . "!"', ("ab!", "日\n!", "😀 !"), ("ab", "abc!", "a!")),
    Case("star plus optional", 'root ::= "a"* "b"+ "c"?',
         ("b", "aabbc", "bbb"), ("", "a", "ac", "bcc"), regex="a*b+c?"),
    Case("literal repeats as a whole", 'root ::= "ab"*', ("", "ab", "abab"), ("a", "abb", "aba"),
         regex="(?:ab)*"),
    Case("counted repetitions", 'root ::= "a"{2} "b"{2,} "c"{1,3} "d"{0,1}',
         ("aabbc", "aabbbbccc", "aabbcd"), ("abbc", "aabc", "aabbcccc", "aabbcdd"),
         regex="a{2}b{2,}c{1,3}d?"),
    Case("spaces inside braces", 'root ::= "a"{ 1 , 2 }', ("a", "aa"), ("", "aaa")),
    Case("zero repetitions", 'root ::= "a"{0} "b"', ("b",), ("ab", "")),
    Case("stacked postfix operators", 'root ::= "ab"{2}* "c"+? "d"',
         ("d", "ababd", "abababab" "ccd"), ("abd", "abababd", "cd" "d"),
         regex="(?:(?:ab){2})*(?:c+)?d"),
    Case("groups and alternation", 'root ::= ("a" | "b" "c")+ ("d" | )',
         ("a", "bca", "abcd"), ("", "b", "ad d", "dd"), regex="(?:a|bc)+d?"),
    Case("empty alternative", 'root ::= "a" | ', ("", "a"), ("b", "aa"), regex="a?"),
    Case("empty literals", 'root ::= "" "a" ""', ("a",), ("", "aa")),
    Case("empty group", 'root ::= () "a" ()*', ("a",), ("",)),
    Case("newlines inside parentheses and after |",
         'root ::= "a" |\n  "b" (\n    "c"\n    "d"\n  )\n', ("a", "bcd"), ("b", "abcd")),
    Case("newline after ::=", 'root ::=\n  "x"\n', ("x",), ("",)),
    Case("CRLF line ends", 'root ::= "a" b\r\nb ::= "c"\r\n', ("ac",), ("a", "a\r\nc")),
    Case("comments", '# leading comment\nroot ::= "a" # trailing\n  # indented\nb ::= "x"  # unused\n',
         ("a",), ("x", "a#")),
    Case("names with digits and dashes", 'root ::= rule-1 2nd\nrule-1 ::= "x"\n2nd ::= "y"',
         ("xy",), ("x", "yx")),
    Case("references before definitions", 'root ::= b b\nb ::= c "!"\nc ::= [0-9]',
         ("1!2!",), ("1!", "12!!")),
    Case("later definition wins", 'root ::= "a"\nroot ::= "b"\n', ("b",), ("a",)),
    Case("nullable rule between lexemes", 'root ::= ws "x" ws "y" ws\nws ::= [ ]*',
         ("xy", " x  y ", "x y"), ("x", " xy z"), regex=" *x *y *"),
    Case("balanced parentheses", 'root ::= "(" root ")" root | ""',
         ("", "()", "(())()", "((()))"), ("(", ")(", "(()", "())")),
    Case("left recursion", 'root ::= root "-" num | num\nnum ::= [0-9]+',
         ("1", "1-22-3"), ("1--2", "-1", "1-")),
    Case("mutual recursion", 'root ::= "x" b | "y"\nb ::= "z" root', ("y", "xzy", "xzxzy"), ("x", "xz", "xy")),
    Case("counted repetition of a recursive rule", 'root ::= p{2,3}\np ::= "(" p* ")"',
         ("()()", "(())()()", "()(()())"), ("()", "()()()()", "(()")),
    Case("recursive group repeated", 'root ::= ("(" root ")"){0,2}',
         ("", "()", "()()", "(())", "(()())"), ("()()()", "(", "(()()())")),
    Case("start rule other than root", 'expr ::= "a" expr | "b"', ("b", "aab"), ("a", ""),
         start="expr"),
    Case("JSON-like", JSON_LIKE,
         ('{"a": [1, 2.5e-3, true, null], "b\\u00e9": {}}', " [ ] ", '"x\\"y"', "-0", "{}",
          '[{"k":"v"},[[]],"\\n"]'),
         ('{"a" 1}', "[1,]", "01", '"\\x"', "[1 2]", "{'a': 1}", '"a\nb"', "tru", "1.", "")),
    Case("arithmetic", ARITHMETIC,
         ("1+2*3", "(1 + 2) * -3.5", "-(4)", "((7))/2", "1 - -1"),
         ("1+", "(1", "1..2", "+1", "1 2", "()", "")),
    Case("list of items", ITEM_LIST, ("- milk\n", "- milk\n- two eggs\n"),
         ("- milk", "milk\n", "- \n", "-milk\n", ""), regex=r"(?:- [^\n]+\n)+"),
    Case("chess moves", CHESS,
         ("1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O-O Qxd1#\n",
          "1. e4 e5\n10. exd8=Q+ Ke7\n"),
         ("1. e4 e5\n", "1. e9 e5\n2. a3 a6\n", "1. e4\n2. e5 e6\n", "1. Zf3 e5\n2. a3 a6\n",
          "1. e4 e5\n0. a3 a6\n"),
         regex=CHESS_REGEX),
    Case("s-expressions", S_EXPRESSIONS, ("(a (b 12) ())", "x", "()", "(())", "(1 2 3)"),
         ("(a", "a)", "( a)", "(a  )x", "(ab(c))", "")),
]


def _mutations(text: str, alphabet: str, rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        chars = list(text)
        position = rng.randrange(len(chars) + 1)
        kind = rng.randrange(3)
        if kind == 0 and chars:
            del chars[min(position, len(chars) - 1)]
        elif kind == 1:
            chars.insert(position, rng.choice(alphabet))
        elif chars:
            chars[min(position, len(chars) - 1)] = rng.choice(alphabet)
        out.append("".join(chars))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_language(case: Case) -> None:
    for mapping, g in _mappings(case).items():
        for text in case.accepted:
            assert accepts(g, text), f"{mapping} mapping should accept {text!r}"
        for text in case.rejected:
            assert not accepts(g, text), f"{mapping} mapping should reject {text!r}"
    if case.regex is not None:
        for text in case.accepted:
            assert re.fullmatch(case.regex, text, re.S), f"table regex rejects {text!r}"
        for text in case.rejected:
            assert not re.fullmatch(case.regex, text, re.S), f"table regex accepts {text!r}"


def _mappings(case: Case) -> dict[str, Grammar]:
    return {"shared": parse_gbnf(case.text, None, LIMITS, start=case.start),
            "plain": _parse(case.text, None, LIMITS, case.start, mode="plain"),
            "maximal": _parse(case.text, None, LIMITS, case.start, mode="maximal")}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_mappings_agree(case: Case) -> None:
    """Near misses of the table's sentences: how regular pieces are cut into terminals
    changes nothing (and the mappings agree with the table's regex when there is one)."""
    mappings = _mappings(case)
    grammar = mappings.pop("shared")
    alphabet = "".join(sorted(set("".join(case.accepted + case.rejected)))) or "a"
    rng = random.Random(case.name)
    for text in case.accepted + case.rejected:
        for mutant in _mutations(text, alphabet, rng, 8):
            verdict = accepts(grammar, mutant)
            for name, other in mappings.items():
                assert verdict == accepts(other, mutant), (name, mutant)
            if case.regex is not None:
                assert verdict == bool(re.fullmatch(case.regex, mutant, re.S)), mutant


# ------------------------------------------------------------------------------- structure

def test_regular_rules_used_once_are_inlined() -> None:
    g = parse_gbnf(ITEM_LIST, None, LIMITS)
    assert len(g.terminals) == 1 and g.nonterminals == ("root",)
    assert [rule.rhs for rule in g.rules] == [(0,)]


def test_regular_rules_used_often_are_shared_terminals() -> None:
    g = parse_gbnf(CHESS, None, LIMITS)
    assert {t.name for t in g.terminals} == {'"1. "', "move", '" "', '"\\n"', '[1-9] [0-9]? ". "'}
    assert g.nonterminals[0] == "root" and not {"move", "pawn", "nonpawn", "castle"} & set(g.nonterminals)
    maximal = _parse(CHESS, None, LIMITS, "root", mode="maximal")
    assert len(maximal.terminals) == 1 and maximal.nonterminals == ("root",)


def test_recursive_rules_stay_nonterminals() -> None:
    g = parse_gbnf(JSON_LIKE, None, LIMITS)
    names = set(g.nonterminals)
    assert {"root", "element", "value", "object", "member", "array"} <= names
    assert not names & {"string", "number", "space"}
    terminals = {t.name for t in g.terminals}
    assert {"string", "space"} <= terminals  # shared: used in several places
    assert 'number | "true" | "false" | "null"' in terminals  # number is used once
    assert all(t.expr is not None and not t.expr.nullable for t in g.terminals)


def test_nullable_regular_start_rule() -> None:
    g = parse_gbnf('root ::= [a-z]*', None, LIMITS)
    assert sorted(rule.rhs for rule in g.rules) == [(), (0,)]
    assert not g.terminals[0].expr.nullable
    assert accepts(g, "") and accepts(g, "abc") and not accepts(g, "A")


def test_terminal_origin_is_line_and_column() -> None:
    g = parse_gbnf('root ::= a "x"\na ::=\n   "(" a ")" | "y"', None, LIMITS)
    origins = {t.name: t.origin for t in g.terminals}
    assert origins['"x"'] == (1, 12)
    assert origins['"("'] == (3, 4)


# --------------------------------------------------------------------------------- errors

ERRORS = [
    # (grammar, error class, line, column, part of the message)
    ('root ::= "abc', tokamata.InvalidSyntax, 1, 10, "unterminated string literal"),
    ("root ::= [abc", tokamata.InvalidSyntax, 1, 10, "unterminated character class"),
    ("root ::= []", tokamata.InvalidSyntax, 1, 10, "empty character class"),
    ("root ::= [^]", tokamata.InvalidSyntax, 1, 10, "empty character class"),
    ("root ::= [z-a]", tokamata.InvalidSyntax, 1, 11, "reversed range"),
    ('root ::= "a" )', tokamata.InvalidSyntax, 1, 14, "unexpected ')'"),
    ('root ::= ("a"', tokamata.InvalidSyntax, 1, 10, "unclosed '('"),
    ('root ::= ("a" ]', tokamata.InvalidSyntax, 1, 15, "expecting ')'"),
    ('root = "a"', tokamata.InvalidSyntax, 1, 6, "expecting '::='"),
    ('root\n::= "a"', tokamata.InvalidSyntax, 1, 5, "expecting '::='"),
    ('my_rule ::= "a"', tokamata.InvalidSyntax, 1, 3, "letters, digits and '-'"),
    ('root ::= "a"\n  "b"', tokamata.InvalidSyntax, 2, 3, "expecting a rule name"),
    ('root ::= "a"\n  | "b"', tokamata.InvalidSyntax, 2, 3, "only inside parentheses or after '|'"),
    ("root ::= undefined-thing", tokamata.InvalidSyntax, 1, 10, "undefined rule 'undefined-thing'"),
    ('root ::= "a"\n\nb ::= c | "d"', tokamata.InvalidSyntax, 3, 7, "undefined rule 'c'"),
    ('root ::= *"a"', tokamata.InvalidSyntax, 1, 10, "no item before it"),
    ('root ::= "a" | +"b"', tokamata.InvalidSyntax, 1, 16, "no item before it"),
    ('root ::= "" *', tokamata.InvalidSyntax, 1, 13, "no item before it"),
    ('root ::= "a"{3,1}', tokamata.InvalidSyntax, 1, 13, "maximum is below the minimum"),
    ('root ::= "a"{x}', tokamata.InvalidSyntax, 1, 14, "expecting a number after '{'"),
    ('root ::= "a"{1;}', tokamata.InvalidSyntax, 1, 15, "expecting ',' or '}'"),
    ('root ::= "a"{1,2', tokamata.InvalidSyntax, 1, 17, "expecting '}'"),
    (r'root ::= "\q"', tokamata.InvalidSyntax, 1, 11, "unknown escape \\q"),
    (r'root ::= "\x4"', tokamata.InvalidSyntax, 1, 11, "exactly 2 hex digits"),
    (r'root ::= "\U00110000"', tokamata.InvalidSyntax, 1, 11, "beyond U+10FFFF"),
    (r'root ::= "\uD800"', tokamata.InvalidSyntax, 1, 11, "surrogate"),
    (r"root ::= [\uD800-\uDFFF]", tokamata.InvalidSyntax, 1, 10, "matches no character"),
    ("root ::= !<[5]>", tokamata.Unsupported, 1, 10, "negated token"),
    ("root ::= !x", tokamata.InvalidSyntax, 1, 11, "expecting '<' after '!'"),
    ("root ::= <[5", tokamata.InvalidSyntax, 1, 13, "expecting ']'"),
    ("root ::= <[]>", tokamata.InvalidSyntax, 1, 12, "expecting a token id"),
    ("root ::= <abc", tokamata.InvalidSyntax, 1, 10, "unterminated token"),
    ("root ::= <abc>", tokamata.InvalidSyntax, 1, 10, "needs a vocabulary"),
    ('root ::= "a"\nx ::= "b" "\\', tokamata.InvalidSyntax, 2, 12, "ends the grammar"),
    ('root ::= root "a"', tokamata.InvalidSyntax, 1, 10, "language is empty"),
    ('root ::= "a" | b\nb ::= b "x"', tokamata.InvalidSyntax, 2, 7, "rule b is unproductive"),
]


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


@pytest.mark.parametrize("text,error,line,column,fragment", ERRORS, ids=[e[0][:30] for e in ERRORS])
def test_errors(text: str, error: type, line: int, column: int, fragment: str) -> None:
    with pytest.raises(error) as info:
        parse_gbnf(text, None, LIMITS)
    assert fragment in str(info.value)
    assert (info.value.line, info.value.column) == (line, column)
    assert f"line {line}, column {column}" in str(info.value)
    assert info.value.span is not None
    assert _line_column(text, info.value.span[0]) == (line, column)


def test_missing_start_rule() -> None:
    with pytest.raises(tokamata.InvalidSyntax, match="no rule named 'root'"):
        parse_gbnf('start ::= "a"', None, LIMITS)
    with pytest.raises(tokamata.InvalidSyntax, match="no rule named 'root'"):
        parse_gbnf("", None, LIMITS)
    with pytest.raises(tokamata.InvalidSyntax, match="no rule named 'top'"):
        parse_gbnf('root ::= "a"', None, LIMITS, start="top")


def test_not_a_string() -> None:
    with pytest.raises(tokamata.InvalidSyntax):
        parse_gbnf(b'root ::= "a"', None, LIMITS)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------- limits

def test_text_length_limit() -> None:
    with pytest.raises(tokamata.LimitExceeded) as info:
        parse_gbnf('root ::= "' + "a" * 200 + '"', None, tokamata.Limits(max_pattern_length=100))
    assert info.value.limit == "max_pattern_length"


@pytest.mark.parametrize("text", [
    "root ::= " + "(" * 300 + '"a"' + ")" * 300,
    'root ::= "a"' + "*" * 300,
])
def test_nesting_limit(text: str) -> None:
    with pytest.raises(tokamata.LimitExceeded) as info:
        parse_gbnf(text, None, LIMITS)
    assert info.value.limit == "max_nesting_depth"


def test_deep_nesting_within_the_limit() -> None:
    g = parse_gbnf("root ::= " + '("(" ' * 150 + '"x"' + ' ")")' * 150 + " | r\nr ::= \"(\" r \")\" | \"y\"",
                   None, LIMITS)
    assert accepts(g, "(" * 150 + "x" + ")" * 150)
    assert not accepts(g, "(" * 149 + "x" + ")" * 150)


def test_counted_repetition_of_a_recursive_rule_is_bounded() -> None:
    small = tokamata.Limits(max_grammar_symbols=1_000)
    text = 'root ::= p{%s}\np ::= "(" p* ")"'
    assert accepts(parse_gbnf(text % "100,200", None, small), "()" * 150)
    with pytest.raises(tokamata.LimitExceeded) as info:
        parse_gbnf(text % "600,700", None, small)
    assert info.value.limit == "max_grammar_symbols"
    with pytest.raises(tokamata.LimitExceeded):
        parse_gbnf(text % "5000", None, small)


def test_counted_repetition_of_a_regular_piece_is_not_expanded() -> None:
    g = parse_gbnf('root ::= [a-z]{150000} | "x"', None, LIMITS)
    assert len(g.terminals) == 1 and len(g.rules) == 1
    with pytest.raises(tokamata.LimitExceeded):
        parse_gbnf('root ::= "a"{300000}', None, LIMITS)


# --------------------------------------------------------------------------------- tokens

VOCAB = tokamata.Vocabulary.from_token_bytes(
    [b"a", b"b", b"<think>", None, None, b"<dup>", b"<dup>"], eos_token_ids=[4],
    special_tokens={"<|end|>": 3})


def test_tokens_by_id_and_by_text() -> None:
    g = parse_gbnf('root ::= <think> "a"+ <[3]> | <|end|> "b"', VOCAB, LIMITS)
    specials = {t.name: t.token_ids for t in g.terminals if t.expr is None}
    assert specials == {"<think>": (2,), "<[3]>": (3,)}  # <|end|> is id 3 too: one terminal
    assert earley_accepts(g, [("token", 2), 97, 97, ("token", 3)])
    assert earley_accepts(g, [("token", 3), 98])
    assert not earley_accepts(g, [("token", 2), 97])
    assert not earley_accepts(g, [*b"<think>", 97, ("token", 3)])  # text is not the token


@pytest.mark.parametrize("text,fragment", [
    ("root ::= <nope>", "not a token of the vocabulary"),
    ("root ::= <dup>", "several token ids"),
    ("root ::= <[7]>", "not in the vocabulary"),
])
def test_token_errors(text: str, fragment: str) -> None:
    with pytest.raises(tokamata.InvalidSyntax, match=re.escape(fragment)) as info:
        parse_gbnf(text, VOCAB, LIMITS)
    assert (info.value.line, info.value.column) == (1, 10) and "line 1, column 10" in str(info.value)


def test_token_by_id_without_vocabulary() -> None:
    g = parse_gbnf("root ::= <[12]>", None, LIMITS)
    assert g.terminals[0].token_ids == (12,)


# ------------------------------------------------------------------ the engine, end to end

BYTES_VOCAB = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None],
                                                   eos_token_ids=[256])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_engine_agrees_with_the_oracle(case: Case) -> None:
    """Byte-per-token decoding with the compiled constraint accepts what the oracle accepts."""
    grammar = parse_gbnf(case.text, BYTES_VOCAB, LIMITS, start=case.start)
    constraint = tokamata.compile_grammar_ir(grammar, BYTES_VOCAB)
    alphabet = "".join(sorted(set("".join(case.accepted + case.rejected)))) or "a"
    rng = random.Random(case.name + "engine")
    texts = case.accepted + case.rejected
    for text in texts + tuple(m for t in texts for m in _mutations(t, alphabet, rng, 3)):
        matcher = constraint.matcher()
        data = list(text.encode("utf-8"))
        verdict = matcher.consume_many(data) == len(data) and matcher.is_accepting()
        assert verdict == accepts(grammar, text), text


def test_special_tokens_of_a_real_vocabulary() -> None:
    from real_tokenizers import llama3

    tokenizer = llama3()
    vocab = tokenizer.vocab
    names = vocab.special_token_names
    text = r'root ::= <|start_header_id|> "assistant" <|end_header_id|> "\n\n" [^<]+ <|eot_id|>'
    grammar = parse_gbnf(text, vocab, LIMITS)
    assert {t.name: t.token_ids for t in grammar.terminals if t.expr is None} == {
        name: names[name] for name in ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")}
    matcher = tokamata.compile_grammar_ir(grammar, vocab).matcher()
    assert matcher.allowed_tokens().tolist() == list(names["<|start_header_id|>"])
    ids = [*names["<|start_header_id|>"], *tokenizer.encode("assistant"), *names["<|end_header_id|>"],
           *tokenizer.encode("\n\nHello there.")]
    assert matcher.consume_many(ids) == len(ids)
    assert names["<|eot_id|>"][0] in matcher.allowed_tokens().tolist()
    assert matcher.consume(names["<|eot_id|>"][0]) and matcher.is_accepting()


@pytest.mark.parametrize("text,sentences", [
    ('root ::= ("")* "a"', ("a",)),
    ('root ::= "a"{0000000000000000000000000002}', ("aa",)),
])
def test_odd_but_valid(text: str, sentences: tuple[str, ...]) -> None:
    grammar = parse_gbnf(text, None, LIMITS)
    assert all(accepts(grammar, s) for s in sentences)


def test_huge_counts_are_limits_not_crashes() -> None:
    with pytest.raises(tokamata.LimitExceeded):
        parse_gbnf('root ::= "a"{' + "9" * 5000 + "}", None, LIMITS)


# ------------------------------------------------------------------- random grammars

def _random_expression(rng: random.Random, names: list[str], depth: int = 0) -> str:
    kind = rng.randrange(9 if depth < 3 else 4)
    if kind == 0:
        return rng.choice(['""', '"a"', '"b"', '"ab"', '"ba"'])
    if kind == 1:
        return rng.choice(["[ab]", "[^a]", "[a]", "."])
    if kind in (2, 3):
        return rng.choice(names) if names else '"a"'
    if kind in (4, 5):
        return " ".join(_random_expression(rng, names, depth + 1) for _ in range(rng.randrange(1, 4)))
    if kind == 6:
        return "(" + " | ".join(_random_expression(rng, names, depth + 1)
                                for _ in range(rng.randrange(1, 4))) + ")"
    item = _random_expression(rng, [], depth + 1) if rng.random() < 0.5 else rng.choice(names or ['"a"'])
    item = item if item.startswith(("(", '"', "[", ".")) and item != '""' else f"({item})"
    return item + rng.choice(["*", "+", "?", "{2}", "{0,2}", "{1,}"])


@pytest.mark.parametrize("seed", range(40))
def test_random_grammars_agree_across_mappings(seed: int) -> None:
    """Random rule sets (nullable pieces, rules used once or often, recursion): the three
    mappings accept the same short strings."""
    rng = random.Random(seed)
    names = [f"r{i}" for i in range(4)]
    rules = [f"root ::= {_random_expression(rng, names)}"]
    for i, name in enumerate(names):
        callees = names[i + 1:] if rng.random() < 0.7 else names  # sometimes recursive
        rules.append(f"{name} ::= {_random_expression(rng, callees)} | {_random_expression(rng, [])}")
    text = "\n".join(rules)
    try:
        grammars = {mode: _parse(text, None, LIMITS, "root", mode) for mode in ("shared", "plain", "maximal")}
    except tokamata.InvalidSyntax as error:
        assert "unproductive" in str(error) or "empty" in str(error), text
        return
    strings = {"".join(rng.choice("abc") for _ in range(rng.randrange(6))) for _ in range(40)}
    for s in sorted(strings):
        verdicts = {mode: accepts(g, s) for mode, g in grammars.items()}
        assert len(set(verdicts.values())) == 1, (text, s, verdicts)
