"""Tests of the Lark front end (tokamata.syntax.lark.parse_lark), with lark itself as the oracle.

Languages are checked without the engine: tests/naive_grammar.py decides membership from the
IR by a span fixpoint over short strings, with each terminal run as a byte DFA. Where the
grammar uses only lark's features, every expectation is also checked against
``lark.Lark(..., lexer="dynamic_complete")``, exhaustively over small alphabets; the common
terminals are compared with lark's own regexes; literal decoding with lark's own decoder.
Errors are a table of (grammar, error class, line, column, message fragment).
"""

from __future__ import annotations

import itertools
import random
import re

import lark
import pytest
from lark.lexer import Token as LarkToken
from lark.load_grammar import _literal_to_pattern

from grammar_samples import GRAMMAR_NAMES, SentenceGenerator, grammar_text
from naive_grammar import accepts, matches
from tokamata.automata import derivatives as d
from tokamata.errors import InvalidArgument, InvalidSyntax, LimitExceeded, TokamataError, Unsupported
from tokamata.grammar.ir import Grammar, is_terminal, nonterminal_index
from tokamata.limits import Limits
from tokamata.grammar.builder import GrammarBuilder
from tokamata.syntax.lark import parse_lark
from tokamata.syntax.lark_common import COMMON_TERMINALS, common_terminal
from tokamata.syntax.lark_ast import Source
from tokamata.syntax.lark_literals import decode_literal
from tokamata.vocab import Vocabulary

LIMITS = Limits()
# ids 0-1 text, 2 EOS, 3 <|eot|>, 4 <|a|> and 5 (two ids for one name), 6 unnamed control
VOCAB = Vocabulary.from_token_bytes([b"a", b"b", None, None, None, None, None], [2],
                                    special_tokens={"<|eot|>": 3, "<|a|>": [4, 5]})


def parse(text: str, **kwargs: object) -> Grammar:
    return parse_lark(text, VOCAB, LIMITS, **kwargs)  # type: ignore[arg-type]


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.UnexpectedInput:
        return False
    return True


def lark_parser(text: str, start: str = "start") -> lark.Lark:
    return lark.Lark(text, parser="earley", lexer="dynamic_complete", start=start)


# ---------------------------------------------------------------------------------- languages

# (grammar, accepted, rejected): checked with the naive recognizer and, for lark syntax, lark
LANGUAGES: list[tuple[str, list[str], list[str]]] = [
    ('start: "a" "b"', ["ab"], ["a", "ba", "abb", ""]),
    ('start: "a"+ "b"?', ["a", "aaab"], ["b", ""]),
    ('start: ("a" | "b")* "c"', ["c", "abbac"], ["ab", "ca"]),
    ('start: "a" ~ 2..3', ["aa", "aaa"], ["a", "aaaa"]),
    ('start: "a" ~ 2 b\nb: "b" |', ["aa", "aab"], ["a", "aabb"]),
    ('start: ["a"] "b" ["c"]', ["b", "ab", "bc", "abc"], ["ac", ""]),
    ('start: A B\nA: "a"+\nB: A "b"', ["aab", "aaaab"], ["ab", "a"]),
    ('start: X\nX: ("a" | "b")~2..3 "c"?', ["ab", "bbc", "abac"], ["a", "abab"]),
    ('start: "a".."c"+', ["abc", "cc"], ["d", ""]),
    ('start: "ab"i', ["ab", "AB", "aB"], ["a", "abab"]),
    ('start: x\nx: "a" x "b" |', ["", "ab", "aabb"], ["aab", "ba"]),
    ('start: x\nx: x "a" | "b"', ["b", "baa"], ["a", "ab"]),
    ('start: "a" "b"\n%ignore " "', ["ab", " a b ", "a  b"], ["a b c", " "]),
    ('start: "a"+\n%ignore " " | ","', ["a ,a", ",a,"], [",", ""]),
    ('start: WORD ("," WORD)*\n%import common.WORD\n%import common.WS\n%ignore WS',
     ["a, b", "ab ,b "], ["a,", ",a"]),
    ('start: INT | SIGNED_FLOAT\n%import common (INT, SIGNED_FLOAT)', ["1", "-1.", "+.5e-3", "1e5"],
     ["-1", "1e", "."]),
    ('start: "a"\n  | "b"\n\n  // a comment\n  | "c" "c"  # another\n', ["a", "b", "cc"], ["c"]),
    ('start:\n  | "a"', ["", "a"], ["aa"]),  # Lark: the first alternative is empty
    ('start: "a"\n%extend start: "b"', ["a", "b"], ["ab"]),
    ('start: A\nA: "a"\n%override A: "b"', ["b"], ["a"]),
    ('start: "\\x41\\n"', ["A\n"], ["\\x41\\n"]),
    ('start: /a\\/b/', ["a/b"], ["ab"]),
    ('start: /a b/x', ["ab"], ["a b"]),
    ('start: /A./si', ["a\n", "AA"], ["a"]),
    ('start: "\\\\" "\\d"', ["\\\\d"], ["\\d"]),  # Lark reads "\d" as backslash + d
    ('start: /a\\\\"/', ['a"'], ['a\\"']),  # ... and /a\\"/ as a\" (a quirk, kept)
    ('?start: x\n!x: "a" -> foo\n | "b"', ["a", "b"], ["ab"]),
    ('start.2: A\nA.-1: "a"', ["a"], [""]),
    ('start: ESCAPED_STRING\n%import common.ESCAPED_STRING', ['""', '"a\\""', '"\\\\"'],
     ['"a"b"', '"\\"', '"']),
    ('start: "é"+ /[ü-ÿ]/', ["éü", "ééÿ"], ["é", "ü"]),
    ('start: "a" \\\n  "b"', ["ab"], ["a"]),  # backslash-newline joins lines
    ('start: x y\nx: "a" | \ny: "a" | "b"', ["a", "aa", "b", "ab"], ["", "ba"]),
    ('start: (("a" | "b") ("c" | "d"))+', ["ac", "bdac"], ["a", "acb"]),
]

# tokamata's extensions: no lark oracle
EXTENSION_LANGUAGES: list[tuple[str, list[str], list[str]]] = [
    ('start: "<a>" %text_until "</a>"', ["<a></a>", "<a>x</a>", "<a><a></</a>"],
     ["<a>", "<a></a>x", "<a></a></a>"]),
    ('start: "<a>" %text_until "</a>" "!"\n%ignore " "', ["<a>x </a> !"], ["<a>x</a>!!"]),
    ('start: A\nA: "q" %text_until "ab" "c"', ["qabc", "qaaabc"], ["qabc c", "qababc"]),
    ('start: "a"{2} "b"{1,} "c"{0,2}', ["aab", "aabbc", "aabcc"], ["ab", "aa", "aabccc"]),
    ('start: X\nX: ("a" | "b"){2,3}', ["ab", "bab"], ["a", "abab"]),
    ('start: x{3}\nx: "a" | "b" "c"', ["aaa", "abca"], ["aa", "aaaa"]),
    ('start: ("a" "b"){2,}', ["abab", "ababab"], ["ab", "aba"]),
]


@pytest.mark.parametrize("grammar, accepted, rejected", LANGUAGES)
def test_language_matches_table_and_lark(grammar: str, accepted: list[str], rejected: list[str]) -> None:
    ours = parse(grammar)
    theirs = lark_parser(grammar)
    for text in accepted:
        assert accepts(ours, text.encode()), text
        assert lark_accepts(theirs, text), text
    for text in rejected:
        assert not accepts(ours, text.encode()), text
        assert not lark_accepts(theirs, text), text


@pytest.mark.parametrize("grammar, accepted, rejected", EXTENSION_LANGUAGES)
def test_extension_languages(grammar: str, accepted: list[str], rejected: list[str]) -> None:
    ours = parse(grammar)
    for text in accepted:
        assert accepts(ours, text.encode()), text
    for text in rejected:
        assert not accepts(ours, text.encode()), text


# (grammar, alphabet): every string up to length 4 is accepted by both or by neither
EXHAUSTIVE = [(grammar, "".join(sorted(set("".join(acc + rej)))) or "a") for grammar, acc, rej in LANGUAGES]


@pytest.mark.parametrize("grammar, alphabet", EXHAUSTIVE)
def test_same_language_as_lark_exhaustively(grammar: str, alphabet: str) -> None:
    ours = parse(grammar)
    theirs = lark_parser(grammar)
    alphabet = alphabet[:6]
    for length in range(5 if len(alphabet) <= 4 else 4):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            assert accepts(ours, text.encode()) == lark_accepts(theirs, text), text


@pytest.mark.parametrize("name", GRAMMAR_NAMES)
def test_corpus_grammars_agree_with_lark_on_samples_and_mutations(name: str) -> None:
    text = grammar_text(name)
    ours = parse(text)
    generator = SentenceGenerator(text, max_lexemes=8, extra_depth=4)
    rng = random.Random(7)
    checked = 0
    for _ in range(30):
        sentence = generator.sentence(rng)
        if len(sentence) > 20:
            continue
        assert accepts(ours, sentence.encode()), sentence
        for _ in range(3):
            i = rng.randrange(len(sentence) + 1)
            c = rng.choice(sentence + " ,;()[]\"'x1")
            mutated = rng.choice([sentence[:i] + c + sentence[i:], sentence[:i] + sentence[i + 1:],
                                  sentence[:i] + c + sentence[i + 1:]])
            assert accepts(ours, mutated.encode()) == lark_accepts(generator.parser, mutated), mutated
            checked += 1
    assert checked >= 9


# ---------------------------------------------------------------------------- common terminals

_ALPHABETS = {
    "ESCAPED_STRING": '"\\a\né', "C_COMMENT": "/*a\n", "NEWLINE": "\r\na", "CR": "\r\na",
    "LF": "\r\na", "WS": " \t\f\r\n\va", "WS_INLINE": " \t\na", "SH_COMMENT": "#a\n\r",
    "CPP_COMMENT": "/a\n", "SQL_COMMENT": "-a\n",
}
_DEFAULT_ALPHABET = "0a1.eE+-_Zé"
# lark's regexes for these use lazy quantifiers and lark's lexers take the shortest match
_LAZY = {"ESCAPED_STRING", "C_COMMENT"}


def _lark_common_regex(name: str) -> str:
    parser = lark_parser(f"%import common.{name}\nstart: {name}")
    return parser.get_terminal(name).pattern.to_regexp()


def _lark_lexeme(regex: str, text: str, lazy: bool) -> bool:
    """Can lark's lexer cut ``text`` as one lexeme of ``regex``?"""
    if lazy:
        m = re.match(regex, text)
        return m is not None and m.end() == len(text)
    return re.fullmatch(regex, text) is not None


@pytest.mark.parametrize("name", sorted(COMMON_TERMINALS))
def test_common_terminals_match_lark(name: str) -> None:
    regex = _lark_common_regex(name)
    ours = common_terminal(name, LIMITS)
    alphabet = _ALPHABETS.get(name, _DEFAULT_ALPHABET)
    max_length = 5 if len(alphabet) <= 5 else 4
    for length in range(max_length + 1):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            assert matches(ours, text.encode()) == _lark_lexeme(regex, text, name in _LAZY), text
    rng = random.Random(name)
    for _ in range(300):  # longer strings
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(6, 14)))
        assert matches(ours, text.encode()) == _lark_lexeme(regex, text, name in _LAZY), text


@pytest.mark.parametrize("name, accepted, rejected", [
    ("ESCAPED_STRING", ['"a\\"b"', '"\\\\"', '"é\\é"', '"\'"'], ['"a"b"', '"\\"', '"a\nb"', "'a'"]),
    ("C_COMMENT", ["/**/", "/* a\n*/", "/***/", "/*/ */"], ["/*/", "/* */ */", "/* *"]),
    ("NUMBER", ["1", "1.", ".5", "1e5", "1.5E-3"], ["-1", "e5", "1e", "."]),
    ("CNAME", ["_", "a_1", "Z"], ["1a", "é"]),
])
def test_common_terminal_tables(name: str, accepted: list[str], rejected: list[str]) -> None:
    regex = _lark_common_regex(name)
    ours = common_terminal(name, LIMITS)
    for text in accepted:
        assert matches(ours, text.encode()) and _lark_lexeme(regex, text, name in _LAZY), text
    for text in rejected:
        assert not matches(ours, text.encode()) and not _lark_lexeme(regex, text, name in _LAZY), text


def test_import_forms() -> None:
    g = parse("%import common.INT -> N\n%import common (WS, WORD)\n%import common.WS\n"
              "start: N WORD\n%ignore WS")
    assert [t.name for t in g.terminals] == ["N", "WORD", "WS"]
    assert accepts(g, b" 12 ab ") and not accepts(g, b"ab 12")


# ---------------------------------------------------------------------------------- literals

_STRING_TOKEN = re.compile(r'"(\\"|\\\\|[^"\n])*?"i?')
_REGEXP_TOKEN = re.compile(r"/(?!/)(\\/|\\\\|[^/])*?/[imslux]*")


def test_literals_decode_exactly_as_lark() -> None:
    alphabet = ["a", "\\", '"', "'", "n", "x", "4", "1", "u", "/", "N"]
    checked = 0
    for length in range(1, 5):
        for chars in itertools.product(alphabet, repeat=length):
            body = "".join(chars)
            for raw, kind, token in ((f'"{body}"', "STRING", _STRING_TOKEN),
                                     (f"/{body}/", "REGEXP", _REGEXP_TOKEN)):
                if not token.fullmatch(raw):
                    continue
                try:
                    theirs: str | None = _literal_to_pattern(LarkToken(kind, raw)).value
                except Exception:  # lark's GrammarError and friends
                    theirs = None
                try:
                    ours: str | None = decode_literal(raw, 0, Source(raw)).value
                except InvalidSyntax:
                    ours = None
                assert ours == theirs, raw
                checked += 1
    assert checked > 10_000


def test_decoded_characters_keep_their_source_offsets() -> None:
    literal = decode_literal('/\\x41\\n(b/', 10, Source(" " * 10 + '/\\x41\\n(b/'))
    assert literal.value == "A\n(b"
    assert literal.offsets == (11, 15, 17, 18)


# --------------------------------------------------------------------------------- structure


def _rules_of(g: Grammar, name: str) -> list[list[str]]:
    index = g.nonterminals.index(name)
    return [[g.describe(s) for s in r.rhs] for r in g.rules if r.lhs == index]


def test_identical_inline_literals_share_one_terminal() -> None:
    g = parse('start: "a" x "a" /b/ "a"\nx: "a" | /b/')
    assert [t.name for t in g.terminals] == ['"a"', "/b/"]


def test_ignored_terminal_is_separate_from_a_rule_terminal() -> None:
    g = parse('start: "a" " " "a"\n%ignore " "')
    assert len(g.terminals) == 3 and g.ignore == (2,)
    assert g.terminals[1].expr is g.terminals[2].expr
    assert accepts(g, b"a a") and accepts(g, b"a  a") and not accepts(g, b"aa")


def test_rule_structure_and_helpers() -> None:
    g = parse('start: "a" x* ("b" | x)\nx: "c"+')
    assert g.nonterminals[:2] == ("start", "x")
    assert _rules_of(g, "start") == [['"a"', "__start_star_0", "__start_group_1"]]
    assert _rules_of(g, "__start_star_0") == [[], ["__start_star_0", "x"]]
    assert sorted(_rules_of(g, "__start_group_1")) == [['"b"'], ["x"]]
    assert _rules_of(g, "x") == [["__x_plus_2"]]
    assert all(r.origin is not None for r in g.rules)


def test_counted_repetition_expands_linearly() -> None:
    g = parse('start: "a" ~ 2..4')
    rhs = [g.describe(s) for s in g.rules[-1].rhs] if g.nonterminals[g.rules[-1].lhs] == "start" else None
    assert rhs is not None and rhs[:2] == ['"a"', '"a"'] and len(rhs) == 3
    assert sum(len(r.rhs) + 1 for r in g.rules) < 20


def test_terminal_references_are_expanded() -> None:
    g = parse('start: B\nA: "a" | "b"\nB: A A "c"')
    assert len(g.terminals) == 1 and g.terminals[0].name == "B"
    assert matches(g.terminals[0].expr, b"abc") and not matches(g.terminals[0].expr, b"ab")


def test_priorities_aliases_and_modifiers_do_not_change_the_language() -> None:
    plain = parse('start: x\nx: "a" | "b" y\ny: "c"')
    decorated = parse('?start.3: x\n!x.-1: "a" -> one | "b" y -> two\ny.2: "c"')
    assert [(r.lhs, r.rhs) for r in plain.rules] == [(r.lhs, r.rhs) for r in decorated.rules]
    assert [t.expr for t in plain.terminals] == [t.expr for t in decorated.terminals]


def test_start_parameter() -> None:
    g = parse('start: "a"\nother: "b" start', start="other")
    assert g.nonterminals[g.start] == "other"
    assert accepts(g, b"ba") and not accepts(g, b"a")
    with pytest.raises(InvalidSyntax, match="start rule 'nope' is not defined"):
        parse('start: "a"', start="nope")
    with pytest.raises(InvalidArgument, match="must be a rule name"):
        parse('start: "a"', start="START")


def test_unused_rules_are_checked_but_dropped() -> None:
    g = parse('start: "a"\nunused: "b" start')
    assert all(g.nonterminals[r.lhs] == "start" for r in g.rules)
    with pytest.raises(InvalidSyntax, match="undefined rule 'missing'"):
        parse('start: "a"\nunused: missing')


def test_unused_terminal_definitions_may_be_nullable_fragments() -> None:
    g = parse('start: X\n_OPT: "-"?\nX: _OPT "1"')
    assert matches(g.terminals[0].expr, b"-1") and matches(g.terminals[0].expr, b"1")


# ---------------------------------------------------------------------------- special tokens


def test_special_tokens_by_name_and_by_id() -> None:
    g = parse('start: "a" <|eot|> | <|a|> <[3]> <[4, 6]> <[5-6]>')
    specials = [t for t in g.terminals if t.is_special]
    assert [(t.name, t.token_ids) for t in specials] == [
        ("<|eot|>", (3,)), ("<|a|>", (4, 5)), ("<[4, 6]>", (4, 6)), ("<[5-6]>", (5, 6))]
    assert all(t.expr is None for t in specials)
    assert len(g.terminals) == 5  # <[3]> is the same terminal as <|eot|>


def test_special_tokens_need_a_vocabulary() -> None:
    with pytest.raises(InvalidSyntax, match=r"needs a vocabulary \(line 1, column 8\)"):
        parse_lark("start: <|eot|>", None, LIMITS)


def test_vocabulary_special_token_names_from_a_real_tokenizer() -> None:
    import real_tokenizers as rt
    vocab = rt.llama3().vocab
    g = parse_lark('start: "hi" <|eot_id|> <[128001]>', vocab, LIMITS)
    assert [t.token_ids for t in g.terminals if t.is_special] == [(128009,), (128001,)]


# ----------------------------------------------------------------------------- %json and builder


def test_json_block_embeds_the_schema() -> None:
    text = 'start: "x" %json {\n  "type": "object", "properties": {"a}": {"type": "string"}},\n  "required": ["a}"], "additionalProperties": false\n} "y"'
    g = parse(text)
    assert accepts(g, b'x{"a}":"q"}y')
    assert not accepts(g, b'x{}y')
    assert not accepts(g, b'x{"a}":1}y')


@pytest.mark.parametrize("text, error, where", [
    ('start: %json {"type": "strin"}', "SchemaError", "line 1, column 8"),
    ('start: "a"\n  | %json {"$ref": "http://example.com/s.json"}', "Unsupported", "line 2, column 5"),
])
def test_json_block_errors_name_the_place(text, error, where) -> None:
    with pytest.raises(TokamataError) as e:
        parse(text)
    assert type(e.value).__name__ == error and where in str(e.value)


def test_json_block_refs_into_the_registry() -> None:
    registry = {"http://example.com/s.json": {"$defs": {"n": {"type": "integer", "minimum": 3}}}}
    text = 'start: "v=" %json {"$ref": "http://example.com/s.json#/$defs/n"}'
    g = parse(text, registry=registry)
    assert accepts(g, b"v=3") and accepts(g, b"v=40")
    assert not accepts(g, b"v=2") and not accepts(g, b'v="3"')
    with pytest.raises(Unsupported, match="in %json at line 1, column 13"):
        parse(text)  # without the registry: refused, naming the %json's place
    import tokamata

    vocab = tokamata.Vocabulary.from_token_bytes([b"v=", b"3", b"2", b"4", None], eos_token_ids=[4])
    constraint = tokamata.compile_grammar(text, vocab, registry=registry)
    m = constraint.matcher()
    assert m.consume(0) and m.allowed_tokens().tolist() == [1, 2, 3]  # "2" may go on: 20, 23, ...
    assert m.consume(2) and not m.is_accepting()
    m = constraint.matcher()
    assert m.consume(0) and m.consume(1) and m.is_accepting()


def test_embed_merges_a_sub_grammar() -> None:
    sub = parse('start: item ("," item)*\nitem: "1" | "x"\n%ignore " "')
    b = GrammarBuilder("outer", LIMITS)
    start = b.nonterminal("start")
    b.add_rule(start, [b.terminal('"["', d.byte_set(1 << ord("[")), None),
                       b.embed(sub, "__json0_", (1, 1)),
                       b.terminal('"x"', d.byte_set(1 << ord("x")), None)], (1, 1))
    with pytest.raises(Unsupported, match="ignores"):
        b.build(start)  # the sub-grammar ignores " ", the outer grammar does not
    b.ignore_terminal('" "', d.byte_set(1 << ord(" ")), None)
    g = b.build(start)
    assert "__json0_item" in g.nonterminals
    assert [t.name for t in g.terminals].count('"x"') == 1  # shared with the sub-grammar's "x"
    assert accepts(g, b"[1, x x") and not accepts(g, b"[x")


def test_builder_limits_counted_repetition_before_expanding() -> None:
    with pytest.raises(LimitExceeded) as e:
        parse('start: "a"{10000000}')
    assert e.value.limit == "max_grammar_symbols"
    with pytest.raises(LimitExceeded):
        parse('start: "a" ~ 0..10000000')


# ----------------------------------------------------------------------------------- errors

# (grammar, error class, line, column, message fragment)
ERRORS: list[tuple[str, type[TokamataError], int, int, str]] = [
    ('start: "a"\nstart: "b"', InvalidSyntax, 2, 1, "rule 'start' is defined more than once"),
    ('start: A\nA: "a"\nA: "b"', InvalidSyntax, 3, 1, "terminal 'A' is defined more than once"),
    ('%import common.INT\nINT: "a"\nstart: INT', InvalidSyntax, 2, 1, "'INT' is defined more than once"),
    ("start: foo", InvalidSyntax, 1, 8, "undefined rule 'foo'"),
    ("start: FOO", InvalidSyntax, 1, 8, "undefined terminal 'FOO'"),
    ('start: ("a"', InvalidSyntax, 1, 8, "unbalanced '('"),
    ('start: "a"\n  | ["b"\nx: "c"', InvalidSyntax, 2, 5, "unbalanced '['"),
    ('start: "a")', InvalidSyntax, 1, 11, "unbalanced ')'"),
    ('start: ("a"]', InvalidSyntax, 1, 12, "']' does not match '(' opened at line 1, column 8"),
    ('start: A\nA: "x" A', InvalidSyntax, 2, 8, "recursion in terminal 'A'"),
    ('start: A\nA: B\nB: A', InvalidSyntax, 3, 4, "recursion in terminal 'A'"),
    ("start: /a(/", InvalidSyntax, 1, 10, "missing ), unterminated subpattern"),
    ("start: /\\x41(/", InvalidSyntax, 1, 13, "missing )"),  # position after a 4-char escape
    ("start: /(/i", InvalidSyntax, 1, 9, "missing )"),  # flags wrap the pattern: still the '('
    ("start: /a{2,1}/", InvalidSyntax, 1, 11, "min repeat greater than max repeat"),
    ('start: "a" /(?<=a)b/', Unsupported, 1, 13, "lookaround"),
    ('start: "a" @', InvalidSyntax, 1, 12, "unexpected character '@'"),
    ('start: "abc', InvalidSyntax, 1, 8, "unterminated string"),
    ("start: /abc", InvalidSyntax, 1, 8, "unterminated regular expression"),
    ('start: ""', InvalidSyntax, 1, 8, "empty terminals are not allowed"),
    ('start: A\nA: /a*/', InvalidSyntax, 2, 1, "terminal A matches the empty string"),
    ('start: "a"\n%ignore /a?/', InvalidSyntax, 2, 9, "matches the empty string"),
    ('start: start "a"', InvalidSyntax, 1, 8, "language is empty"),
    ('start: "a" | "b" x\nx: x "b"', InvalidSyntax, 2, 4, "rule x is unproductive"),
    ('foo: "a"', InvalidSyntax, 1, 1, "start rule 'start' is not defined"),
    ('start: "a"\n%declare B', Unsupported, 2, 1, "%declare"),
    ("%import python.NAME\nstart: NAME", Unsupported, 1, 9, "%import from 'python'"),
    ("%import .other.A\nstart: A", Unsupported, 1, 9, "relative %import"),
    ("%import common.FOO\nstart: FOO", InvalidSyntax, 1, 16, "has no terminal 'FOO'"),
    ('%import common\nstart: "a"', InvalidSyntax, 1, 1, "needs a name"),
    ("%import common.INT -> n\nstart: n", InvalidSyntax, 1, 16, "uppercase"),
    ("start: <|x|>", InvalidSyntax, 1, 8, "unknown special token <|x|>"),
    ("start: <[0]>", InvalidSyntax, 1, 8, "token id 0 is not a special token"),
    ("start: <[99]>", InvalidSyntax, 1, 8, "token id 99 is not a special token"),
    ("start: <[1-x]>", InvalidSyntax, 1, 8, "bad special token id list"),
    ("start: <|eot", InvalidSyntax, 1, 8, "closing '>'"),
    ("start: A\nA: <|eot|>", Unsupported, 2, 4, "special token <|eot|> inside a terminal"),
    ('start: "a"\n%ignore <|eot|>', Unsupported, 2, 9, "inside a terminal or %ignore"),
    ('start: %json {"a": }', InvalidSyntax, 1, 20, "malformed JSON in %json"),
    ('start: %json {\n  "a": 1,\n}', InvalidSyntax, 3, 1, "malformed JSON"),
    ('start: %json {"a": [1, 2}', InvalidSyntax, 1, 25, "malformed JSON"),
    ('start: %json {"a": "}"', InvalidSyntax, 1, 14, "unbalanced '{'"),
    ('start: %json "a"', InvalidSyntax, 1, 14, "JSON object"),
    ('start: A\nA: %json {}', Unsupported, 2, 4, "%json inside a terminal"),
    ('start: "a" ~ 3..2', InvalidSyntax, 1, 14, "bad range 3..2"),
    ('start: "a" "b"{2,1}', InvalidSyntax, 1, 15, "bad repetition"),
    ('start: "a"{x}', InvalidSyntax, 1, 12, "a count after '{'"),
    ('start: A\nA: b\nb: "x"', InvalidSyntax, 2, 4, "rules are not allowed inside terminals"),
    ('%ignore b\nb: "x"\nstart: "a"', InvalidSyntax, 1, 9, "rules are not allowed inside terminals"),
    ('start: "a"\n%ignore', InvalidSyntax, 2, 1, "%ignore needs a terminal"),
    ("start: /a/l", InvalidSyntax, 1, 8, "flag 'l'"),
    ("start: /a\nb/", InvalidSyntax, 1, 8, "x (verbose) flag"),
    ('start: _sep{"a"}', Unsupported, 1, 12, "rule templates"),
    ('_sep{x}: x\nstart: "a"', Unsupported, 1, 5, "rule templates"),
    ('start: "a"\n%override foo: "b"', InvalidSyntax, 2, 11, "%override of rule 'foo'"),
    ('start: "a"\n%extend FOO: "b"', InvalidSyntax, 2, 9, "%extend of terminal 'FOO'"),
    ('%import common.INT\nstart: INT\n%extend INT: "x"', Unsupported, 3, 9, "%extend of the imported"),
    ('start: "\\x4"', InvalidSyntax, 1, 9, "bad \\x escape"),
    ('start: "\\U00110000"', InvalidSyntax, 1, 9, "bad \\U escape"),
    ('start: ("a" -> x)', InvalidSyntax, 1, 13, "alias (-> name) is only allowed"),
    ('start: A\nA: "a" -> x', InvalidSyntax, 2, 8, "alias"),
    ('start:\n  "a"', InvalidSyntax, 2, 3, "expected a rule, a terminal or a directive"),
    ('start: "a" "b" :', InvalidSyntax, 1, 16, "unexpected ':'"),
    ('start: %text_until ""', InvalidSyntax, 1, 20, "empty terminals"),
    ("start: %text_until /a/", InvalidSyntax, 1, 20, "a string literal after %text_until"),
    ('start: %text_until "a"i', InvalidSyntax, 1, 20, "plain string"),
    ('start: "a".."bc"', InvalidSyntax, 1, 13, "a range end must be one character"),
    ('start: "z".."a"', InvalidSyntax, 1, 8, "bad character range"),
    ('start: "a"i.."z"', InvalidSyntax, 1, 8, "cannot have the i flag"),
    ('start: "\\ud800"', InvalidSyntax, 1, 8, "lone surrogate"),
    ('start: "a"\n%foo', InvalidSyntax, 2, 1, "unknown directive '%foo'"),
    ('start: "a"?b\nb: "c"', InvalidSyntax, 1, 11, "rule modifiers"),
    ('?A: "a"\nstart: A', InvalidSyntax, 1, 1, "unexpected '?'"),
    ('start: "a" | /b/x\n  ]', InvalidSyntax, 2, 3, "unbalanced ']'"),
]


@pytest.mark.parametrize("grammar, error, line, column, fragment", ERRORS)
def test_errors_name_line_and_column(grammar: str, error: type[TokamataError], line: int, column: int,
                                     fragment: str) -> None:
    with pytest.raises(error) as info:
        parse(grammar)
    e = info.value
    assert type(e) is error
    assert fragment in str(e), str(e)
    assert f"line {line}, column {column}" in str(e), str(e)
    assert getattr(e, "text", None) == grammar
    span = getattr(e, "span", None)
    assert span is not None and 0 <= span[0] <= span[1] <= len(grammar)
    lines = grammar.split("\n")
    assert span[0] == sum(len(x) + 1 for x in lines[:line - 1]) + column - 1


# grammars lark reads but we refuse, on purpose
STRICTER_THAN_LARK = [
    ('start: start "a"', "an empty language is an error (lark only fails when parsing)"),
    ('start: "a" | "b" x\nx: x "b"', "an unproductive rule is an error"),
    ('start: "\\ud800"', "a lone surrogate has no UTF-8 spelling"),
    ('%import common.FOO\nstart: "a"', "lark ignores an unknown name it never needs"),
]


@pytest.mark.parametrize("grammar", [g for g, error, *_ in ERRORS if error is InvalidSyntax
                                     and "<" not in g and "%json" not in g and "%text_until" not in g
                                     and "{" not in g and g not in dict(STRICTER_THAN_LARK)])
def test_lark_rejects_our_syntax_errors_too(grammar: str) -> None:
    """Errors in lark syntax are errors for lark too (we are never stricter by accident)."""
    with pytest.raises(Exception):
        lark_parser(grammar)


@pytest.mark.parametrize("grammar, why", STRICTER_THAN_LARK)
def test_where_we_are_stricter_than_lark(grammar: str, why: str) -> None:
    lark_parser(grammar)  # lark reads it
    with pytest.raises(InvalidSyntax):
        parse(grammar)


# ----------------------------------------------------------------------------------- limits


def test_limits() -> None:
    with pytest.raises(LimitExceeded) as e:
        parse_lark('start: "a"', None, Limits(max_pattern_length=5))
    assert e.value.limit == "max_pattern_length"
    deep = "start: " + "(" * 50 + '"a"' + ")" * 50
    assert accepts(parse(deep), b"a")
    with pytest.raises(LimitExceeded) as e:
        parse_lark(deep, None, Limits(max_nesting_depth=20))
    assert e.value.limit == "max_nesting_depth"
    chain = "start: T0\n" + "".join(f"T{i}: T{i + 1}\n" for i in range(60)) + 'T60: "a"'
    assert accepts(parse(chain), b"a")
    with pytest.raises(LimitExceeded) as e:
        parse_lark(chain, None, Limits(max_nesting_depth=30))
    assert e.value.limit == "max_nesting_depth"
    with pytest.raises(LimitExceeded) as e:
        parse_lark('start: "a"+ "b"+ "c"+', None, Limits(max_grammar_symbols=8))
    assert e.value.limit == "max_grammar_symbols"
    with pytest.raises(LimitExceeded) as e:
        parse_lark('start: %json {"a": [[[[1]]]]}', None, Limits(max_nesting_depth=3))
    assert e.value.limit == "max_nesting_depth"


def test_a_grammar_must_be_text() -> None:
    with pytest.raises(InvalidSyntax, match="must be a str"):
        parse_lark(b'start: "a"', None, LIMITS)  # type: ignore[arg-type]


def test_every_symbol_in_the_result_is_in_range() -> None:
    g = parse(grammar_text("c_like"))
    for rule in g.rules:
        for s in rule.rhs:
            assert (s < len(g.terminals)) if is_terminal(s) else nonterminal_index(s) < len(g.nonterminals)


# ------------------------------------------------------------------------- through the engine


def test_special_tokens_and_text_until_through_the_engine() -> None:
    import tokamata
    vocab = Vocabulary.from_token_bytes([bytes([i]) for i in range(128)] + [None, None], [128],
                                        special_tokens={"<|eot|>": 129})
    matcher = tokamata.compile_grammar('start: "<a>" %text_until "</a>" <|eot|>', vocab).matcher()
    for byte in b"<a>x</a":
        assert matcher.consume(byte)
    assert matcher.consume(ord(">"))
    assert list(matcher.allowed_tokens()) == [129]  # only the special token, never its text
    assert matcher.consume(129) and matcher.is_accepting()
