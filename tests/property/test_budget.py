"""Token budgets (issue 21 item 3): ``Matcher.fill_bitmask(bitmask, index, max_tokens=n)``.

- Regex constraints (strategy "regular"), exact: at every position of seeded random walks,
  the budget row for every n equals a brute-force oracle: a breadth-first search over
  matcher copies and tokens (every token id of a small real vocabulary; the allowed tokens
  on Llama 3) gives each position's fewest tokens to a complete output (checked by
  ``re.fullmatch``, independently of the matcher), and a token is in the oracle's row iff
  it is consumed and that distance after it is at most n - 2 (its EOS then fits); EOS iff
  the output is complete. ``budget_needed()`` equals the oracle's distance plus one.
- Soundness by random walks under every budget 1..N (regex, Lark grammar, JSON Schema with
  required keys, on Llama 3): a walk that starts on a non-empty row never meets an empty one
  and ends with EOS within its budget, on an output the independent checker accepts (``re``,
  Lark's own parser, ``json`` + ``jsonschema``). A row is never empty when
  ``n >= budget_needed()``; for regexes it is empty exactly when n is smaller.
- Batches, bad input and limits.
"""

from __future__ import annotations

import json
import random
import re
from collections import deque

import numpy as np
import pytest

import tokamata
from real_tokenizers import gpt2, llama3

REGEXES = [
    r"\d{3}-\d{4}",
    r"(ab|ac)*d",
    r"[a-z]{2}@example\.com",
    r"x{5,}y",
    r"(foo|bar)baz\d+",
    r"(yes|no|maybe)!?",
    r"-?(0|[1-9]\d{0,2})(\.\d\d?)?",
]
LARK = [
    ('start: expr\nexpr: term (("+" | "-") term)*\nterm: NUMBER | "(" expr ")"\nNUMBER: /[0-9]+/', "expr"),
    ('start: "let " NAME " = " value ";"\nvalue: NAME | "[" [NAME ("," NAME)*] "]"\nNAME: /[a-z]+/', "let"),
]
SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name", "age"]},
    {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                                          "minItems": 1}},
     "required": ["id", "tags"], "additionalProperties": False},
    {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]},
     "minItems": 2},
]


def small_vocab() -> tokamata.Vocabulary:
    """GPT-2's first 1,500 token ids (its 256 bytes and its first merges), then EOS: a real
    BPE vocabulary small enough to try every id at every position."""
    tokens = list(gpt2().vocab.token_bytes[:1500])
    return tokamata.Vocabulary.from_token_bytes(tokens + [None], eos_token_ids=[len(tokens)])


def full_match(pattern: re.Pattern, text: bytes) -> bool:
    """Whether the UTF-8 text is a sentence of the (str) pattern, as Python's ``re`` says."""
    try:
        return pattern.fullmatch(text.decode()) is not None
    except UnicodeDecodeError:
        return False


def row_ids(bitmask_row: np.ndarray) -> set[int]:
    return set(np.flatnonzero(np.unpackbits(bitmask_row.view(np.uint8), bitorder="little")).tolist())


def budget_row(matcher: tokamata.Matcher, n: int | None) -> set[int]:
    bitmask = np.zeros((1, (matcher.constraint.vocab_size + 31) // 32), dtype=np.int32)
    matcher.fill_bitmask(bitmask, 0, max_tokens=n)
    return row_ids(bitmask[0])


class Distances:
    """The oracle: fewest tokens from a position to a complete output, by breadth-first
    search over matcher copies (positions told apart by their configurations) and tokens;
    completeness from ``re.fullmatch`` on the output's text."""

    def __init__(self, pattern: str, vocab: tokamata.Vocabulary, every_id: bool):
        self.pattern = re.compile(pattern, re.DOTALL)
        self.vocab = vocab
        self.every_id = every_id
        self.eos = set(vocab.eos_token_ids)
        self.graph: dict[tuple, dict[int, tuple]] = {}   # position -> token -> position
        self.complete: dict[tuple, bool] = {}
        self.distance: dict[tuple, float] = {}

    def candidates(self, matcher: tokamata.Matcher) -> list[int]:
        ids = range(self.vocab.size) if self.every_id else matcher.allowed_tokens().tolist()
        return [t for t in ids if t not in self.eos]

    def explore(self, matcher: tokamata.Matcher, text: bytes) -> tuple:
        key = tuple(matcher._core.position())
        queue = deque([(matcher.copy(), text, key)])
        if key in self.graph:
            return key
        self.graph[key] = {}
        while queue:
            m, prefix, here = queue.popleft()
            self.complete[here] = full_match(self.pattern, prefix)
            assert m.is_accepting() == self.complete[here]
            for t in self.candidates(m):
                if not m.consume(t):
                    continue
                after = tuple(m._core.position())
                self.graph[here][t] = after
                if after not in self.graph:
                    self.graph[after] = {}
                    queue.append((m.copy(), prefix + self.vocab.token_bytes[t], after))
                m.rollback(1)
        self._solve()
        return key

    def _solve(self) -> None:
        """Distances (tokens to a complete output, then EOS) by relaxation to a fixed point."""
        distance = {p: (1 if self.complete[p] else float("inf")) for p in self.graph}
        changed = True
        while changed:
            changed = False
            for p, edges in self.graph.items():
                for after in edges.values():
                    if distance[after] + 1 < distance[p]:
                        distance[p] = distance[after] + 1
                        changed = True
        self.distance = distance

    def row(self, key: tuple, n: int) -> set[int]:
        allowed = {t for t, after in self.graph[key].items() if self.distance[after] <= n - 1}
        if self.complete[key]:
            allowed |= self.eos
        return allowed


def check_regex_against_oracle(pattern: str, vocab: tokamata.Vocabulary, every_id: bool, walks: int, seed: int):
    constraint = tokamata.compile_regex(pattern, vocab)
    assert constraint.strategy == "regular"
    oracle = Distances(pattern, vocab, every_id)
    rng = random.Random(seed)
    for _ in range(walks):
        m = constraint.matcher()
        text = b""
        for _step in range(12):
            key = oracle.explore(m, text)
            d = oracle.distance[key]
            assert m.budget_needed() == d
            plain = budget_row(m, None)
            for n in range(1, int(d) + 3):
                got = budget_row(m, n)
                assert got == oracle.row(key, n), (pattern, text, n)
                assert got <= plain
                assert (not got) == (n < d)
            choices = sorted(plain - oracle.eos)
            if not choices or rng.random() < 0.1:
                break
            t = rng.choice(choices)
            assert m.consume(t)
            text += vocab.token_bytes[t]


@pytest.mark.parametrize("pattern", REGEXES)
def test_regex_budget_rows_equal_the_oracle_small_vocab(pattern):
    check_regex_against_oracle(pattern, small_vocab(), every_id=True, walks=3, seed=1)


@pytest.mark.parametrize("pattern", REGEXES[:5])
def test_regex_budget_rows_equal_the_oracle_llama3(pattern):
    check_regex_against_oracle(pattern, llama3().vocab, every_id=False, walks=2, seed=2)


# ----------------------------------------------------------------------- soundness by walks


def walk(constraint: tokamata.Constraint, budget: int, rng: random.Random) -> list[int] | None:
    """A random walk under ``budget``; None when the first row is empty. Asserts that no
    later row is empty and that it ends with EOS within the budget."""
    m = constraint.matcher()
    eos = set(constraint.vocab.eos_token_ids)
    tokens: list[int] = []
    for k in range(budget):
        row = budget_row(m, budget - k)
        assert row <= budget_row(m, None)
        if not row:
            assert k == 0, f"empty row after {tokens} with {budget - k} tokens left"
            return None
        t = rng.choice(sorted(row))
        assert m.consume(t)
        tokens.append(t)
        if t in eos and m.is_terminated():
            return tokens[:-1]
    raise AssertionError(f"budget {budget} spent without EOS: {tokens}")


def check_walks(constraint: tokamata.Constraint, valid, budgets: range, walks: int, seed: int, exact: bool):
    rng = random.Random(seed)
    need = constraint.matcher().budget_needed()
    for n in budgets:
        for _ in range(walks):
            tokens = walk(constraint, n, rng)
            if tokens is None:
                assert n < need  # never empty from budget_needed() on
                break
            if exact:
                assert n >= need
            text = constraint.vocab.decode(tokens)
            assert valid(text), (n, text)


@pytest.mark.parametrize("pattern", REGEXES)
def test_regex_walks_end_complete_within_every_budget(pattern):
    constraint = tokamata.compile_regex(pattern, llama3().vocab)
    compiled = re.compile(pattern, re.DOTALL)
    check_walks(constraint, lambda text: full_match(compiled, text), range(1, 11), 3, 3, exact=True)


@pytest.mark.parametrize("grammar,name", LARK, ids=[name for _, name in LARK])
def test_lark_walks_end_complete_within_every_budget(grammar, name):
    import lark

    parser = lark.Lark(grammar, start="start", parser="earley", lexer="dynamic")
    constraint = tokamata.compile_grammar(grammar, llama3().vocab)
    assert constraint.strategy == "earley"

    def valid(text: bytes) -> bool:
        parser.parse(text.decode())
        return True

    check_walks(constraint, valid, range(1, 16), 3, 4, exact=False)


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_json_schema_walks_end_complete_within_every_budget(index):
    import jsonschema

    schema = SCHEMAS[index]
    constraint = tokamata.compile_json_schema(json.dumps(schema), llama3().vocab)

    def valid(text: bytes) -> bool:
        jsonschema.validate(json.loads(text), schema)
        return True

    check_walks(constraint, valid, range(1, 25), 2, 5, exact=False)


def test_budget_needed_bounds_a_real_completion_for_grammars():
    """From every position of a walk, budget_needed() is the length of a completion the
    matcher accepts: following the budget rows with the budget exactly budget_needed()
    ends the output in exactly that many tokens or fewer."""
    constraint = tokamata.compile_json_schema(json.dumps(SCHEMAS[0]), llama3().vocab)
    rng = random.Random(6)
    m = constraint.matcher()
    for _ in range(15):
        need = m.budget_needed()
        probe = m.copy()
        for k in range(need):
            row = budget_row(probe, need - k)
            assert row
            probe.consume(min(row))
            if probe.is_terminated():
                break
        assert probe.is_terminated()
        choices = sorted(budget_row(m, None) - set(constraint.vocab.eos_token_ids))
        if not choices:
            break
        m.consume(rng.choice(choices))


# ----------------------------------------------------------------------- batches, bad input


def test_fill_bitmasks_with_budgets_equals_one_by_one():
    tokenizer = llama3()
    vocab = tokenizer.vocab
    regex = tokamata.compile_regex(r"\d{3}-\d{4}", vocab)
    schema = tokamata.compile_json_schema(json.dumps(SCHEMAS[0]), vocab)
    matchers = [regex.matcher(), schema.matcher(), regex.matcher(), schema.matcher()]
    assert matchers[2].consume_many(tokenizer.encode("12")) == 1
    budgets = [9, 9, 3, 30]
    width = (vocab.size + 31) // 32
    for threads in (1, 2):
        batch = np.zeros((4, width), dtype=np.int32)
        tokamata.fill_bitmasks(matchers, batch, max_tokens=budgets, threads=threads)
        for i, m in enumerate(matchers):
            assert row_ids(batch[i]) == budget_row(m, budgets[i])
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.fill_bitmasks(matchers, np.zeros((4, width), dtype=np.int32), max_tokens=[1, 2])
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.fill_bitmasks(matchers, np.zeros((4, width), dtype=np.int32), max_tokens=[1, 2, 0, 4])


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3", 2**31])
def test_bad_budgets_are_refused(bad):
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
    m = tokamata.compile_regex("ab", vocab).matcher()
    bitmask = np.full((1, 1), 7, dtype=np.int32)
    with pytest.raises(tokamata.InvalidArgument, match="max_tokens"):
        m.fill_bitmask(bitmask, 0, max_tokens=bad)
    assert bitmask[0, 0] == 7  # nothing written


def test_a_budget_below_every_completion_gives_an_empty_row():
    vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", None], eos_token_ids=[2])
    for constraint in (tokamata.compile_regex("ab", vocab), tokamata.compile_grammar('start: "a" "b"', vocab)):
        m = constraint.matcher()
        assert m.budget_needed() == 3
        assert budget_row(m, 2) == set() and budget_row(m, 3) == {0}
        m.consume_many([0, 1])
        assert budget_row(m, 1) == {2} and m.budget_needed() == 1
        m.consume(2)
        assert budget_row(m, 1) == {2} and m.budget_needed() == 0  # terminated: EOS only, as without a budget


def test_budgets_across_a_healing_prefix():
    vocab = tokamata.Vocabulary.from_token_bytes([b":", b"//", b"://", b"x", b"/", None], eos_token_ids=[5])
    for constraint in (tokamata.compile_regex("//x", vocab), tokamata.compile_grammar('start: "//" "x"', vocab)):
        m = constraint.matcher(prefix=b":")
        assert m.budget_needed() == 3                       # "://", "x", EOS
        assert budget_row(m, 2) == set()
        assert budget_row(m, 3) == {2}                      # ":" then "//", "x", EOS would need 4
        assert budget_row(m, 4) == {0, 2}
        assert budget_row(m, 10) == budget_row(m, None)
        assert m.consume(0) and m.budget_needed() == 3      # "//", "x", EOS
        assert budget_row(m, 3) == {1}


@pytest.mark.parametrize("pattern,text", [(r"https?://[a-z]+\.(com|org)", "Visit https:"),
                                          (r'"name": "[A-Z][a-z]+"\}', 'JSON: {')])
def test_healed_budget_rows_equal_the_oracle(pattern, text):
    """A healed matcher on Llama 3: its budget rows in the prefix phase equal the oracle's
    (distances after each allowed token from the BFS over matcher copies)."""
    tokenizer = llama3()
    vocab = tokenizer.vocab
    kept, removed = tokamata.heal(vocab, tokenizer.encode(text), max_tokens=2)
    assert removed
    constraint = tokamata.compile_regex(pattern, vocab)
    m = constraint.matcher(prefix=removed)
    oracle = Distances(pattern, vocab, every_id=False)
    oracle.pattern = re.compile(re.escape(removed.decode()) + pattern, re.DOTALL)  # (the output starts with it)
    key = oracle.explore(m, b"")
    for n in range(1, int(oracle.distance[key]) + 3):
        assert budget_row(m, n) == oracle.row(key, n), n
    assert m.budget_needed() == oracle.distance[key]


def test_budget_searches_are_bounded_by_limits():
    vocab = small_vocab()
    limits = tokamata.Limits(max_budget_states=5)
    for constraint in (tokamata.compile_regex(r"[a-z]{20}", vocab, limits=limits),
                       tokamata.compile_grammar('start: "a" " b"* ("c" | "d")+ "e" "fghijklmnop"', vocab,
                                                limits=limits)):
        with pytest.raises(tokamata.LimitExceeded) as info:
            constraint.matcher().budget_needed()
        assert info.value.limit == "max_budget_states"


# ----------------------------------------------------------------------- the Earley strategy

# (regex, the same language as a grammar of several terminals: the Earley strategy)
PAIRS = [
    (r"(ab|ac)*d", 'start: ("ab" | "ac")* "d"'),
    (r"[0-9]{3}-[0-9]{4}", 'start: D D D "-" D D D D\nD: /[0-9]/'),
    (r"(foo|bar)baz[0-9]+", 'start: ("foo" | "bar") "baz" DIGITS\nDIGITS: /[0-9]+/'),
    (r"(yes|no|maybe)!?", 'start: WORD ["!"]\nWORD: "yes" | "no" | "maybe"'),
    (r"\[([0-9]+(,[0-9]+)*)?\]", 'start: "[" [NUM ("," NUM)*] "]"\nNUM: /[0-9]+/'),
]


@pytest.mark.parametrize("pattern,grammar", PAIRS, ids=[p for p, _ in PAIRS])
def test_earley_rows_are_within_the_exact_rows(pattern, grammar):
    """The same language under both strategies: the grammar's budget rows are subsets of the
    regex's exact rows (sound), its budget_needed() is at least the exact one, and its rows
    are not empty from its budget_needed() on."""
    vocab = llama3().vocab
    exact = tokamata.compile_regex(pattern, vocab)
    earley = tokamata.compile_grammar(grammar, vocab)
    assert (exact.strategy, earley.strategy) == ("regular", "earley")
    rng = random.Random(8)
    for _ in range(3):
        a, b = exact.matcher(), earley.matcher()
        for _step in range(10):
            plain = budget_row(a, None)
            assert budget_row(b, None) == plain
            need_a, need_b = a.budget_needed(), b.budget_needed()
            assert need_b >= need_a
            for n in range(1, need_b + 3):
                row = budget_row(b, n)
                assert row <= budget_row(a, n), (pattern, n)
                if n >= need_b:
                    assert row
            choices = sorted(plain - set(vocab.eos_token_ids))
            if not choices:
                break
            t = rng.choice(choices)
            assert a.consume(t) and b.consume(t)


def test_special_tokens_and_ignored_terminals_in_witnesses():
    """Witnesses spell token-set terminals by one of their tokens (a special token, any text
    token for %text_token) and skip ignored whitespace."""
    tokenizer = llama3()
    vocab = tokenizer.vocab
    grammar = ('start: "let " NAME "=" NUMBER ";" <|start_header_id|> (%text_token)~2\n'
               'NAME: /[a-z]+/\nNUMBER: /[0-9]+/\n%ignore " "')
    constraint = tokamata.compile_grammar(grammar, vocab)
    need = constraint.matcher().budget_needed()
    assert need <= 10  # "let ", "x", "=", "0", ";", the special token, two text tokens, EOS
    rng = random.Random(9)
    for n in range(need, need + 8):
        for _ in range(3):
            m = constraint.matcher()
            for k in range(n):
                row = budget_row(m, n - k)
                assert row, (n, k)
                m.consume(rng.choice(sorted(row)))
                if m.is_terminated():
                    break
            assert m.is_terminated()
