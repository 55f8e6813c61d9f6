"""The native arena's text-until, decimal-divisibility and substring leaves
(``cpp/src/expr_leaves.cpp``) against the Python derivative engine, their reference, and against
independent oracles.

Along every byte string tried, the native state must be the import of the Python state (one
node per language: the arena's constructors normalize as the Python ones do), NOTHING at the
same prefixes, with the same acceptance; acceptance must also agree with an oracle that uses
neither engine (UTF-8 decoding and ``bytes.find`` for text until a stop string, ``Decimal``
arithmetic for divisibility, UTF-8 decoding and ``str.__contains__`` for substrings). Strings are random over each case's interesting bytes, plus
adversarial ones: overlapping stops, split characters, multiples and their neighbours, moduli
past 64 bits; and the leaves inside intersections and differences with regexes and JSON
Schema number ranges, whose emptiness the arena decides itself."""

from __future__ import annotations

import random
import re
from decimal import Decimal, localcontext

import numpy as np
import pytest

from tokamata import _core
from tokamata import errors as tokamata_errors
from tokamata.automata import boolean, native, substrings
from tokamata.automata import derivatives as d
from tokamata.limits import Limits
from tokamata.syntax import regex as rx
from tokamata.syntax import regex_lower
from tokamata.syntax.json_schema import numbers as nm


def _regex(pattern: str) -> d.Expr:
    return regex_lower.lower(rx.parse_regex(pattern, Limits()))


def _walk(root: d.Expr, data: bytes) -> bool:
    """Run ``data`` through both engines in lockstep; returns whether it is accepted."""
    bridge = native.bridge()
    arena = bridge.arena
    python, ours = root, bridge.to_arena(root)
    for i, byte in enumerate(data):
        python = d.derivative(python, byte)
        ours = arena.derivative(ours, byte)
        assert (python is d.NOTHING) == (ours == 0), (data, i)
        if python is d.NOTHING:
            return False
        assert bridge.to_arena(python) == ours, ("one language, two nodes", data, i)
    assert arena.nullable(ours) == python.nullable, data
    return python.nullable


def _until_oracle(stop: bytes, data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return data.find(stop) == len(data) - len(stop) and data.endswith(stop)


STOPS = [b'"', b"ab", b"aab", b"**/", b"</a>", "é!".encode(), "€".encode(), "a€a".encode(), "日本".encode(),
         b"\n\n", b"abab"]


@pytest.mark.parametrize("stop", STOPS, ids=repr)
def test_text_until_agrees_with_the_python_engine_and_the_oracle(stop):
    leaf = d.text_until(stop)
    rng = random.Random(stop)
    pieces = [bytes([b]) for b in stop] + [b"x", b"a", b"*", b"/", "é".encode(), "€".encode(), "日".encode(),
                                            b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80"]
    strings = [stop, stop * 2, stop[:-1], stop[:-1] + stop, b"x" + stop, stop + b"x", stop[:1] + stop,
               stop[: len(stop) // 2] + stop, b"aaab", b"***/", b"ababab", "é".encode()[:1] + stop]
    for _ in range(300):
        strings.append(b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 8))))
    for data in strings:
        assert _walk(leaf, data) == _until_oracle(stop, data), data


@pytest.mark.parametrize("pattern,stop", [
    (r"[a-z */]{0,10}", b"*/"),
    (r"[ab]{0,6}", b"aab"),
    (r"[^x]*", "€".encode()),
])
def test_text_until_in_intersections_and_differences(pattern, stop):
    rng = random.Random(pattern)
    until, other = d.text_until(stop), _regex(pattern)
    both = boolean.intersection(until, other)
    minus = boolean.difference(until, other)
    assert both is not d.NOTHING and minus is not d.NOTHING
    alphabet = sorted(set(stop) | set(b"abxz */"))
    strings = [stop, b"ab" + stop, b"x" + stop, b"a" * 3 + stop] + [
        bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 9))) + stop for _ in range(150)]
    for data in strings:
        try:
            in_other = re.fullmatch(pattern, data.decode("utf-8")) is not None
        except UnicodeDecodeError:
            in_other = False
        until_ok = _until_oracle(stop, data)
        assert _walk(both, data) == (until_ok and in_other), data
        assert _walk(minus, data) == (until_ok and not in_other), data


def _decimal_oracle(text: str, p: int, k: int) -> bool:
    """decimal_multiple's language: digits with at most one '.' (lax: "", ".", "5."), whose
    value is a multiple of p / 10**k."""
    if not re.fullmatch(r"[0-9]*\.?[0-9]*", text):
        return False
    digits, fraction = int(text.replace(".", "") or "0"), len(text.partition(".")[2])
    return digits * 10 ** k % (p * 10 ** fraction) == 0  # (exact: Python ints)


MODULI = [1, 2, 3, 4, 5, 7, 8, 10, 12, 25, 37, 40, 125, 999983, 10 ** 20, 2 ** 70, 123456789012345678901]


@pytest.mark.parametrize("p", MODULI)
@pytest.mark.parametrize("k", [0, 1, 2, 3, 5])
def test_decimal_multiple_agrees_with_the_python_engine_and_the_oracle(p, k):
    leaf = boolean.decimal_multiple(p, k)
    rng = random.Random(p * 10 + k)
    strings = ["", ".", "0", "0.", ".0", "00", "1..", "1.2.3", "-1", "1e3", "x"]
    for j in (1, 2, 3, 7, 10, 11, 1000):  # multiples spelled with the point k digits in, and neighbours
        for n in (p * j, p * j + 1, p * j - 1, p * j * 10 ** 3):
            digits = str(n).rjust(k + 1, "0")
            point = digits[: len(digits) - k] + "." + digits[len(digits) - k:]
            strings += [digits, point, point + "0", point + "5", "0" + point]
    for _ in range(150):
        strings.append("".join(rng.choice("0123456789..") for _ in range(rng.randint(0, 10))))
    for text in strings:
        assert _walk(leaf, text.encode()) == _decimal_oracle(text, p, k), (text, p, k)


@pytest.mark.parametrize("step,low,high", [
    ("0.01", "0", "100"), ("7", "-50", None), ("0.25", "-2.5", "1000"), ("1e-5", None, "3"),
    ("123456789012345678901", None, None), ("2.5", "10", "20"), ("999983", "1", None),
])
def test_multiple_of_with_bounds_agrees_with_the_python_engine(step, low, high):
    """JSON Schema multipleOf with minimum/maximum: intersections whose derivatives the arena
    builds, deciding their emptiness itself (the divisibility leaf's hint guides the search)."""
    limits = Limits()
    number = boolean.intersection(nm.multiple_of(Decimal(step), limits),
                                  nm.number_range(None if low is None else Decimal(low), False,
                                                  None if high is None else Decimal(high), True, limits))
    number = nm.overflow_safe(number, limits)
    rng = random.Random(step)
    strings = ["0", "-0", "1", "12", "-7", "0.5", "2.50", "99.99", "100", "-2.5", "3", "1e5", "01"]
    for j in (1, 2, 3, 13, 400):
        value = Decimal(step) * j
        strings += [str(value), str(-value), str(value + 1), str(value) + "0"]
    for _ in range(150):
        strings.append(rng.choice(["", "-"]) + "".join(rng.choice("0123456789.") for _ in range(rng.randint(1, 8))))
    plain = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")
    for text in strings:
        accepted = _walk(number, text.encode())
        if plain.fullmatch(text):
            with localcontext() as exact:
                exact.prec = 200
                value = Decimal(text)
                expected = (value % Decimal(step) == 0 and (low is None or value >= Decimal(low))
                            and (high is None or value < Decimal(high)))
            assert accepted == expected, (text, step)


def _product_search_outcomes(members: list, budget: int) -> set:
    """Outcomes of the arena's emptiness search for the intersection of ``members`` (True:
    non-empty, "limit": over ``budget`` states) in fresh arenas that import the members in
    every order, so that their ids, and the id-sorted order of the product's members, differ."""
    import itertools

    outcomes = set()
    for order in itertools.permutations(range(len(members))):
        native.reset(force=True)
        bridge = native.bridge()
        ids = np.array([bridge.to_arena(members[i]) for i in order], dtype=np.int32)
        try:
            outcomes.add(bridge.arena.intersection(ids, budget) != 0)
        except tokamata_errors.LimitExceeded:
            outcomes.add("limit")
    native.reset(force=True)
    return outcomes


@pytest.mark.parametrize("budget", [500, 1500, 3000, 6000])
def test_emptiness_search_does_not_depend_on_id_order(budget):
    """The search of a product of divisibility leaves (multiples of 7, 11, 13 and 17 from
    given remainders: 17017 product states) follows the leaves' hints in an order set by
    their structure: under a budget it succeeds or gives up whatever order the process
    imported them in (it followed the hint of the lowest id: 1,280 to 5,120 states decided
    it in some orders and not in others)."""
    def leaves(moduli):
        members = []
        for p in moduli:
            node = boolean.decimal_multiple(p, 0)
            for byte in b"123":
                node = d.derivative(node, byte)
            members.append(node)
        return members

    assert len(_product_search_outcomes(leaves((7, 11, 13, 17)), budget)) == 1
    found = set()
    for moduli in ((7, 11, 13, 17), (17, 13, 11, 7), (11, 17, 7, 13)):  # the Python reference, the same rule
        d.clear_interned()  # (so that the leaves' ids follow this order)
        members = leaves(moduli)
        try:
            found.add(boolean.reference_non_empty(d.Kind.AND, tuple(sorted(members, key=lambda m: m.id)),
                                                  Limits(max_dfa_states=budget)))
        except tokamata_errors.LimitExceeded:
            found.add("limit")
    assert len(found) == 1


def test_malformed_leaf_imports_are_refused():
    arena = _core.ExprArena()
    with pytest.raises(ValueError, match="valid UTF-8"):
        arena.import_nodes(np.asarray([8, 0, 0, 1, 0xC3], dtype=np.int32))
    with pytest.raises(ValueError, match="empty stop"):
        arena.import_nodes(np.asarray([8, 0, 0, 0], dtype=np.int32))
    with pytest.raises(ValueError, match="limbs"):
        arena.import_nodes(np.asarray([11, 0, 0, 0, 1, 10 ** 9, 0], dtype=np.int32))
    with pytest.raises(ValueError, match="bad state"):  # remainder 7 not below p = 7
        arena.import_nodes(np.asarray([11, 0, 0, 0, 1, 7, 1, 7], dtype=np.int32))
    ident = arena.import_nodes(np.asarray([11, 2, 0, 0, 1, 25, 0], dtype=np.int32))[0]  # multiples of 0.25
    assert arena.nullable(ident) and arena.derivative(ident, ord("x")) == 0


# ------------------------------------------------------------------ substrings of a text

SUBSTRING_TEXTS = ["a", "abab", "abcbc", "mississippi", "héllo", "€uro€", "𝄞a𝄞b𝄞", "日本語の日本", "aé€𝄞" * 3,
                   "\x00\x7f\x80\u07ff\u0800\uffff\U00010000\U0010ffff", "ÿ\U000e0001"]


def _substring_oracle(text: str, data: bytes) -> bool:
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return decoded != "" and decoded in text


def _leaf_states(leaf: d.Expr) -> list[d.Expr]:
    """Every state the leaf reaches (Python derivatives, all 256 bytes)."""
    seen, todo = {leaf.id: leaf}, [leaf]
    while todo:
        state = todo.pop()
        for byte in range(256):
            nxt = d.derivative(state, byte)
            if nxt is not d.NOTHING and nxt.id not in seen:
                seen[nxt.id] = nxt
                todo.append(nxt)
    return list(seen.values())


@pytest.mark.parametrize("text", SUBSTRING_TEXTS, ids=ascii)
def test_substring_leaf_agrees_state_by_state(text):
    """Every state of the leaf, every byte: the native derivative is the import of the Python
    one; Python's first bytes are exactly the live bytes and its classes hold one derivative
    each; one state per automaton state at a character boundary (at most 2n), nullable iff
    not the start."""
    leaf = substrings.substring_of(text)
    bridge = native.bridge()
    arena = bridge.arena
    states = _leaf_states(leaf)
    automaton = substrings.automaton(text)
    boundary = [s for s in states if not s.args[2]]
    assert len(boundary) == automaton.num_states <= max(2 * len(text) - 1, 2)
    for state in states:
        ours = bridge.to_arena(state)
        assert arena.nullable(ours) == state.nullable == (not state.args[2] and state.args[1] != 0)
        live = 0
        classes = (0,) + d.cuts(state)
        for byte in range(256):
            python = d.derivative(state, byte)
            assert arena.derivative(ours, byte) == (0 if python is d.NOTHING else bridge.to_arena(python)), (state, byte)
            live |= (python is not d.NOTHING) << byte
            start = classes[sum(1 for c in classes if c <= byte) - 1]
            assert python is d.derivative(state, start), (state, byte)
        assert d.first_bytes(state) == live, state


@pytest.mark.parametrize("text", SUBSTRING_TEXTS, ids=ascii)
def test_substring_leaf_agrees_with_the_oracle(text):
    leaf = substrings.substring_of(text)
    rng = random.Random(text)
    pieces = [c.encode() for c in text] + [b"x", b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90"]
    pieces += [c.encode()[:1] for c in text]
    strings = [text[i:j].encode() for i in range(len(text)) for j in range(i, len(text) + 1)]
    strings += [text.encode()[1:], text.encode()[:-1], text.encode() + text.encode()[:1]]
    for _ in range(300):
        strings.append(b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))))
    for data in strings:
        assert _walk(leaf, data) == _substring_oracle(text, data), data


def test_equal_texts_share_the_leaf_and_the_native_automaton():
    arena = _core.ExprArena()
    text = "hello wörld"
    records = np.asarray([12, 0, 0, len(text), *map(ord, text)], dtype=np.int32)
    first = arena.import_nodes(records)[0]
    size = arena.footprint
    assert arena.import_nodes(records)[0] == first and arena.footprint == size  # one automaton per text
    assert arena.footprint - arena.size == substrings.automaton(text).num_states
    assert substrings.substring_of(text) is substrings.substring_of(text.encode())


@pytest.mark.parametrize("pattern", [r"[a-z]{2,4}", r"[^x]*é[^x]*", r"(ab|ba)+"])
def test_substring_leaf_in_intersections_and_differences(pattern):
    text = "abcabé xba"
    leaf, other = substrings.substring_of(text), _regex(pattern)
    both, minus = boolean.intersection(leaf, other), boolean.difference(leaf, other)
    for i in range(len(text)):
        for j in range(i, len(text) + 1):
            for data in (text[i:j].encode(), text[i:j].encode() + b"a"):
                in_other = re.fullmatch(pattern, data.decode()) is not None
                assert _walk(both, data) == (_substring_oracle(text, data) and in_other), data
                assert _walk(minus, data) == (_substring_oracle(text, data) and not in_other), data


def test_malformed_substring_imports_are_refused():
    arena = _core.ExprArena()
    for records, message in [
        ([12, 0, 0, 0], "empty substring"),
        ([12, 0, 0, 1, 0xD800], "surrogates"),
        ([12, 0, 0, 1, 0x110000], "surrogates"),
        ([12, 5, 0, 1, 97], "no such automaton state"),
        ([12, 0, 1 << 24 | 0xC3 << 16, 1, 97], "not live"),  # no é in "a"
        ([12, 0, 1 << 24 | 0x61 << 16, 1, 97], "no proper prefix"),  # "a" is a whole character
        ([12, 0, 1 << 24 | 0xC3 << 16 | 1, 1, 0xE9], "bad pending"),  # a stray bit past the bytes
    ]:
        with pytest.raises(ValueError, match=message):
            arena.import_nodes(np.asarray(records, dtype=np.int32))
    ident = arena.import_nodes(np.asarray([12, 0, 1 << 24 | 0xC3 << 16, 1, 0xE9], dtype=np.int32))[0]
    assert not arena.nullable(ident) and arena.nullable(arena.derivative(ident, 0xA9))
    assert arena.derivative(ident, 0xA8) == 0 and arena.derivative(ident, ord("a")) == 0
