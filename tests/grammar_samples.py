"""Random sentences of a Lark grammar's language, checked by lark itself.

The generator reads the grammar with lark (``parser="earley"``, ``lexer="dynamic_complete"``)
and walks the BNF that lark derives from it (``Lark.rules``, ``Lark.terminals``,
``Lark.ignore_tokens``: EBNF already expanded), so it never reimplements lark's grammar
language. Invariants:

- Every string :meth:`SentenceGenerator.sentence` returns has been accepted by
  ``Lark.parse``; rejected candidates (rare: a lexeme that merges with its neighbour, a
  keyword read as a name, ...) are discarded and counted in ``attempts`` / ``discards``.
- Terminal texts come from :class:`RegexSampler`, which only returns strings that
  ``re.fullmatch`` the terminal's pattern (it checks, and retries).
- Derivations are bounded: each sentence gets a depth budget above the start symbol's
  minimum derivation height and a lexeme budget; once either is spent, only productions of
  minimal height are chosen, so generation always terminates.
- Everything is driven by the ``random.Random`` passed in: same seed, same sentences.

Strings are short and mostly ASCII; string-like terminals (negated classes, ``.``) draw a
non-ASCII character now and then, and case-insensitive literals sometimes use the
characters Python's ``re`` folds onto ASCII letters (``ſ`` for s, ``K`` for k, ``İ``/``ı``
for i).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import lark
from lark.lexer import PatternStr

try:  # Python >= 3.11
    from re import _constants as sre_c
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

__all__ = ["GRAMMAR_DIR", "GRAMMAR_NAMES", "EXAMPLES", "grammar_text", "lark_parser", "RegexSampler",
           "SentenceGenerator"]

GRAMMAR_DIR = Path(__file__).resolve().parent / "data" / "grammars"
GRAMMAR_NAMES = ("json", "arithmetic", "c_like", "csv", "nested_lists", "sql")


# Hand-written texts per grammar: (accepted by lark, rejected by lark); checked in
# tests/unit/test_grammar_samples.py, replayed against tokamata byte by byte.
EXAMPLES = {
    "json": (['{"a": [1, -2.5e+3, true, null], "b\\u00e9\\n": {}}', ' "é" ', "0", "[]", "[[],{}]",
              "-0", "1E+2", '"\u2028\x7f😀"', '{"":""}', ' [ ] ', '"\\/\\b\\f\\r\\t\\"\\\\"'],
             ["01", "[1,]", '"\\x"', '{"a"}', "tru", "'a'", '"\x01"', "1.", "", "+1", "[1 2]",
              '"\\u12G4"', "nul", "1e", ".5"]),
    "arithmetic": (["1 + 2 * (x - -3) / y_1", "--4", "a*b*c", "(((1)))", "1.5e3-.5", "1.e5", ".5",
                    "x1e5", "_", "1e5*1E-5"],
                   ["1 +", "()", "1 2", "+1", "a b", "", "1e", "1 ** 2", "(1", "1)"]),
    "c_like": (["int main() { int x = 1; while (x < 10) x = x + 1; return x; }",
                'if (a && !b) f(1, "s"); else { g(); }  // done\n',
                "float f(int a, char b) { return a * -b % 3 >= 2 || a != b; }",
                "int if = 2;", "intx;", "ifx(1);", "x = \"a\\\"é\";", "{}", "return;",
                "int x = 1 // c\n;"],
               ["int x = ;", "if x) y;", "int f( { }", "return 1", "x = 1; // no newline", "",
                "int x = 1 // c;", "x = 1 <> 2;", "else x;", "int 1;"]),
    "csv": (["a,b\n1,2\n", "a,b\r\n1,2", 'name,"q""uote"\n"x,y",\n,\n', "h", "a,b\r\n",
             '"a\r\nb",c', "é, ü\n\n"],
            ["", ",a", 'a,"b', 'a\n"x"y', 'a,b\n1,"2"3', "a\r", 'a"b', "a,\n"]),
    "nested_lists": (["[1, [2, [3]], []]", "[ ]", "[-1,+2,x_1,[[]]]", " [a] ", "[[[[]]]]"],
                     ["[1,]", "[1 2]", "1", "[", "[[]", "[,]", "[--1]", "[1.5]"]),
    "sql": (["SELECT a, b FROM t WHERE a = 1 AND (b <> 'x''y' OR NOT c >= 2) "
             "ORDER BY a DESC, b LIMIT 10;",
             "select * from t", "insert into t (a, b) values (1, 'two')",
             "InSeRt InTo t VALUES (NULL, -1.5)", "ſelect * from t", "select*from t",
             "selectfrom from t", "SELECT a FROM t WHERE a='it''s'", "select x from t order by x asc"],
            ["SELECT FROM t", "select * from t limit x", "insert into t values ()",
             "select a b from t", "select * from t where a", "select * from t;;", "select * from",
             "select * from t limit 1 order by a", "select a, from t"]),
}


def grammar_text(name: str) -> str:
    """The text of ``tests/data/grammars/NAME.lark``."""
    return (GRAMMAR_DIR / f"{name}.lark").read_text(encoding="utf-8")


def lark_parser(text: str, start: str = "start") -> lark.Lark:
    """lark's reading of ``text`` with the options whose language tokamata implements."""
    return lark.Lark(text, parser="earley", lexer="dynamic_complete", start=start)


# ------------------------------------------------------------------------------ characters

_PRINTABLE = [chr(c) for c in range(0x20, 0x7F)]
_CONTROLS = ["\t", "\n", "\r", "\x00", "\x1f", "\x7f"]
_NON_ASCII = ["é", "ß", "ñ", "ü", "Ω", "ж", "中", "文", "→", "😀", "\u00a0", "\u2028"]
_CATEGORY_RE = {
    sre_c.CATEGORY_DIGIT: re.compile(r"\d"), sre_c.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
    sre_c.CATEGORY_SPACE: re.compile(r"\s"), sre_c.CATEGORY_NOT_SPACE: re.compile(r"\S"),
    sre_c.CATEGORY_WORD: re.compile(r"\w"), sre_c.CATEGORY_NOT_WORD: re.compile(r"\W"),
}
_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) + (
    (sre_c.POSSESSIVE_REPEAT,) if hasattr(sre_c, "POSSESSIVE_REPEAT") else ())
_MAXREPEAT = sre_c.MAXREPEAT


def _case_variants(ch: str) -> list[str]:
    """Characters that ``(?i)ch`` matches, plain case pairs first (ASCII-folding ones last)."""
    found = dict.fromkeys([ch, ch.lower(), ch.upper()])
    for special in ("ſ", "\u212a", "İ", "ı", "\u212b"):
        if re.fullmatch("(?i)" + re.escape(ch), special):
            found[special] = None
    return [c for c in found if len(c) == 1 and re.fullmatch("(?i)" + re.escape(ch), c)]


class RegexSampler:
    """Short random strings that ``re.fullmatch(pattern)``, drawn from the ``sre_parse`` tree.

    ``non_ascii`` is the chance that a character drawn from a broad class (``.``, a negated
    class, ``\\S``...) is non-ASCII. Lookarounds and anchors produce nothing and are left to
    the final ``fullmatch`` check; a pattern no attempt satisfies raises ``ValueError``.
    """

    def __init__(self, pattern: str, *, non_ascii: float = 0.12, max_repeat: int = 6) -> None:
        self.pattern = pattern
        self.regex = re.compile(pattern)
        self.tree = sre_parse.parse(pattern)
        self.non_ascii = non_ascii
        self.max_repeat = max_repeat

    def sample(self, rng: random.Random, tries: int = 200) -> str:
        for _ in range(tries):
            out: list[str] = []
            groups: dict[int, str] = {}
            self._seq(list(self.tree), rng, out, self.tree.state.flags, groups)
            text = "".join(out)
            if self.regex.fullmatch(text):
                return text
        raise ValueError(f"no sample of {self.pattern!r} in {tries} tries")

    # -- tree walk

    def _seq(self, items: list, rng: random.Random, out: list[str], flags: int,
             groups: dict[int, str]) -> None:
        for op, av in items:
            self._item(op, av, rng, out, flags, groups)

    def _item(self, op, av, rng: random.Random, out: list[str], flags: int,
              groups: dict[int, str]) -> None:
        if op is sre_c.LITERAL:
            ch = chr(av)
            if flags & re.IGNORECASE:
                variants = _case_variants(ch)
                plain = [c for c in variants if c.isascii()] or variants
                ch = rng.choice(variants if rng.random() < 0.05 else plain)
            out.append(ch)
        elif op is sre_c.NOT_LITERAL:
            out.append(self._pick(rng, lambda c: not self._literal_matches(av, c, flags)))
        elif op is sre_c.ANY:
            dotall = bool(flags & re.DOTALL)
            out.append(self._pick(rng, lambda c: dotall or c != "\n"))
        elif op is sre_c.IN:
            out.append(self._pick_in(av, rng, flags))
        elif op is sre_c.BRANCH:
            self._seq(list(rng.choice(av[1])), rng, out, flags, groups)
        elif op is sre_c.SUBPATTERN:
            group, add, delete, sub = av
            start = len(out)
            self._seq(list(sub), rng, out, (flags | add) & ~delete, groups)
            if group is not None:
                groups[group] = "".join(out[start:])
        elif op in _REPEATS:
            low, high, sub = av
            high = low + self.max_repeat if high == _MAXREPEAT else high
            count = low
            while count < high and rng.random() < 0.55:
                count += 1
            for _ in range(count):
                self._seq(list(sub), rng, out, flags, groups)
        elif op is sre_c.GROUPREF:
            out.append(groups.get(av, ""))
        elif op is getattr(sre_c, "ATOMIC_GROUP", None):
            self._seq(list(av), rng, out, flags, groups)
        elif op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
            pass  # zero-width: the final fullmatch decides
        else:
            raise ValueError(f"RegexSampler: unsupported regex operator {op} in {self.pattern!r}")

    # -- characters

    @staticmethod
    def _literal_matches(code: int, ch: str, flags: int) -> bool:
        if flags & re.IGNORECASE:
            return ch in _case_variants(chr(code))
        return ord(ch) == code

    @staticmethod
    def _in_set(items: list, ch: str, flags: int) -> bool:
        candidates = [ch] + ([ch.lower(), ch.upper(), ch.swapcase()] if flags & re.IGNORECASE else [])
        negate = False
        hit = False
        for op, av in items:
            if op is sre_c.NEGATE:
                negate = True
            elif op is sre_c.LITERAL:
                hit = hit or any(ord(c) == av for c in candidates if len(c) == 1)
            elif op is sre_c.RANGE:
                hit = hit or any(av[0] <= ord(c) <= av[1] for c in candidates if len(c) == 1)
            elif op is sre_c.CATEGORY:
                hit = hit or bool(_CATEGORY_RE[av].fullmatch(ch))
        return hit != negate

    def _pick_in(self, items: list, rng: random.Random, flags: int) -> str:
        positive = [(op, av) for op, av in items if op in (sre_c.LITERAL, sre_c.RANGE)]
        negated = any(op is sre_c.NEGATE for op, _ in items)
        if positive and not negated and rng.random() < 0.85:
            op, av = rng.choice(positive)
            if op is sre_c.LITERAL:
                return chr(av)
            low, high = av
            for _ in range(20):
                code = rng.randint(low, min(high, low + 0x7F) if rng.random() < 0.8 else high)
                if not 0xD800 <= code <= 0xDFFF:
                    return chr(code)
        return self._pick(rng, lambda c: self._in_set(items, c, flags))

    def _pick(self, rng: random.Random, accept) -> str:
        for _ in range(200):
            roll = rng.random()
            if roll < self.non_ascii:
                ch = rng.choice(_NON_ASCII)
            elif roll < self.non_ascii + 0.03:
                ch = rng.choice(_CONTROLS)
            else:
                ch = rng.choice(_PRINTABLE)
            if accept(ch):
                return ch
        for code in range(0x80):
            if accept(chr(code)):
                return chr(code)
        raise ValueError("no character satisfies the class")


# ------------------------------------------------------------------------------ sentences

Symbol = tuple[bool, str]  # (is_terminal, name)


@dataclass
class SentenceGenerator:
    """Random sentences of a Lark grammar, each verified by ``lark.Lark.parse``.

    ``extra_depth`` bounds how far a derivation may go beyond the start symbol's minimal
    height, ``max_lexemes`` how many lexemes (before whitespace) a sentence may have; both are
    drawn per sentence between 0 (resp. 1) and the bound. ``grow`` is the chance, at each
    choice, of taking only productions higher than the lowest that fits (more structure).
    """

    text: str
    start: str = "start"
    extra_depth: int = 10
    max_lexemes: int = 40
    grow: float = 0.4
    attempts: int = 0
    discards: int = 0
    rejected: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.parser = lark_parser(self.text, self.start)
        self.rules: dict[str, list[tuple[Symbol, ...]]] = {}
        for rule in self.parser.rules:
            rhs = tuple((isinstance(s, lark.grammar.Terminal), s.name) for s in rule.expansion)
            self.rules.setdefault(rule.origin.name, []).append(rhs)
        self.samplers: dict[str, RegexSampler | str] = {}
        for term in self.parser.terminals:
            pattern = term.pattern
            if isinstance(pattern, PatternStr) and not pattern.flags:
                self.samplers[term.name] = pattern.value
            else:
                self.samplers[term.name] = RegexSampler(pattern.to_regexp())
        self.ignore = list(self.parser.ignore_tokens)
        self.height = self._min_heights()

    # -- analysis

    def _rhs_height(self, rhs: tuple[Symbol, ...], height: dict[str, float]) -> float:
        return 1 + max((0 if is_t else height[name] for is_t, name in rhs), default=0)

    def _min_heights(self) -> dict[str, float]:
        height = {name: float("inf") for name in self.rules}
        changed = True
        while changed:
            changed = False
            for name, alternatives in self.rules.items():
                best = min(self._rhs_height(rhs, height) for rhs in alternatives)
                if best < height[name]:
                    height[name] = best
                    changed = True
        return height

    # -- generation

    def derive(self, rng: random.Random) -> list[str]:
        """The lexemes of one random derivation (no ignored text, not verified)."""
        budget = self.height[self.start] + rng.randint(0, self.extra_depth)
        lexeme_budget = rng.randint(1, self.max_lexemes)
        lexemes: list[str] = []
        # explicit stack of (symbol, remaining depth) so deep grammars do not recurse
        stack: list[tuple[Symbol, float]] = [((False, self.start), budget)]
        while stack:
            (is_terminal, name), depth = stack.pop()
            if is_terminal:
                sampler = self.samplers[name]
                lexemes.append(sampler if isinstance(sampler, str) else sampler.sample(rng))
                continue
            alternatives = self.rules[name]
            heights = [self._rhs_height(rhs, self.height) for rhs in alternatives]
            fitting = [rhs for rhs, h in zip(alternatives, heights) if h <= depth]
            if not fitting or len(lexemes) >= lexeme_budget:
                lowest = min(heights)
                fitting = [rhs for rhs, h in zip(alternatives, heights) if h == lowest]
            if rng.random() < self.grow:  # prefer structure while the budget lasts
                lowest = min(self._rhs_height(rhs, self.height) for rhs in fitting)
                fitting = [rhs for rhs in fitting if self._rhs_height(rhs, self.height) > lowest] or fitting
            rhs = rng.choice(fitting)
            for symbol in reversed(rhs):
                stack.append((symbol, depth - 1))
        return lexemes

    def _ignored(self, rng: random.Random) -> str:
        """Ignored text: mostly one space or a newline when the grammar ignores them."""
        name = self.ignore[0] if len(self.ignore) == 1 or rng.random() < 0.8 else rng.choice(self.ignore)
        sampler = self.samplers[name]
        if isinstance(sampler, str):
            return sampler
        roll = rng.random()
        for plain, chance in ((" ", 0.6), ("\n", 0.75)):
            if roll < chance and sampler.regex.fullmatch(plain):
                return plain
        return sampler.sample(rng)

    def join(self, lexemes: list[str], rng: random.Random) -> str:
        """Lexemes joined with ignored text: always between two word characters (so that
        ``int x`` does not become ``intx``), sometimes elsewhere and at both ends."""
        if not self.ignore:
            return "".join(lexemes)
        parts: list[str] = []
        if rng.random() < 0.1:
            parts.append(self._ignored(rng))
        for i, lexeme in enumerate(lexemes):
            if i:
                previous = lexemes[i - 1]
                glued = previous and lexeme and _is_word(previous[-1]) and _is_word(lexeme[0])
                if glued or rng.random() < 0.3:
                    parts.append(self._ignored(rng))
            parts.append(lexeme)
        if rng.random() < 0.1:
            parts.append(self._ignored(rng))
        return "".join(parts)

    def accepts(self, text: str) -> bool:
        try:
            self.parser.parse(text)
        except lark.exceptions.LarkError:
            return False
        return True

    def sentence(self, rng: random.Random, tries: int = 50) -> str:
        """One random sentence that lark parses (discarded candidates are counted)."""
        for _ in range(tries):
            self.attempts += 1
            text = self.join(self.derive(rng), rng)
            if self.accepts(text):
                return text
            self.discards += 1
            if len(self.rejected) < 20:
                self.rejected.append(text)
        raise AssertionError(f"lark rejected {tries} sentences in a row, e.g. {self.rejected[-3:]}")

    def sentences(self, count: int, seed: int) -> list[str]:
        rng = random.Random(seed)
        return [self.sentence(rng) for _ in range(count)]


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"
