"""The Lark statement lexer's one-match path for frequent tokens (names, closed string
literals, punctuation, with the spaces and comments before them) gives exactly the tokens, and
the errors, of its per-character branches.

Oracle: the same lexer with the fast path switched off (``_Lexer._scan_slow`` for every token),
on the grammar files of the tests and benchmarks and on random texts over the characters that
make Lark's tokens, comments, escapes and line continuations.
"""

from __future__ import annotations

import pathlib

from hypothesis import given, settings
from hypothesis import strategies as st

from tokamata.errors import TokamataError
from tokamata.syntax import lark_syntax
from tokamata.syntax.lark_ast import Source

ROOT = pathlib.Path(__file__).resolve().parents[2]
GRAMMAR_FILES = sorted((ROOT / "tests" / "data" / "grammars").glob("*.lark")) + sorted(
    (ROOT / "benchmarks" / "grammars").glob("*.lark"))


class _SlowLexer(lark_syntax._Lexer):
    def _scan(self):
        return self._scan_slow()


def tokens(lexer_class, text: str, limit: int = 10_000):
    """(kind, value, start, end) of every token through EOF, or the error's (type, span)."""
    lexer = lexer_class(Source(text))
    out = []
    try:
        for _ in range(limit):
            token = lexer.next()
            out.append(tuple(token))
            if token.kind == "EOF":
                return out
    except TokamataError as error:
        out.append((type(error).__name__, error.span))
    return out


def test_grammar_files_tokenize_the_same() -> None:
    assert len(GRAMMAR_FILES) >= 8
    for path in GRAMMAR_FILES:
        text = path.read_text(encoding="utf-8")
        fast = tokens(lark_syntax._Lexer, text)
        assert fast == tokens(_SlowLexer, text), path.name
        assert fast[-1][0] == "EOF", path.name


PIECES = ["a", "b_1", "_x", "AB", "_C2", "_", "1", "-", ":", "|", "(", ")", "[", "]", "{", "}", ",", "~", "+",
          "*", "?", "!", ".", "..", "->", '"', '"x"', '"x"i', '"\\""', "\\", "/", "/a+/i", "//c", "#c", " ", "\t",
          "\n", "\\\n", "\r", "%ignore", "%import", "%bogus", "<|s|>", "<[1]>", "i", "é"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_random_texts_tokenize_the_same(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert tokens(lark_syntax._Lexer, text) == tokens(_SlowLexer, text)
