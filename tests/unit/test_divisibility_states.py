"""``multipleOf`` automata are residue automata: their states are remainders (times a few
phases for fraction digits), never a product with the number of digits read.

The bound checked is structural (no timing): for a schema whose divisors are ``p / 10**k``
the number language has at most
``(K + 2) * L + C`` derivative states, where ``L`` is the lcm of the ``p`` and ``K`` the
largest ``k``: phase 0 (integer digits) holds ``L`` remainders, phase 1 one set per fraction
digit read, phase 2 (trailing zeros) one, and ``C`` counts the sign, the leading zero and the
natural spelling's trailing-digit state. Before the fix the 309-digit overflow counter of
plain numbers multiplied every remainder (``multipleOf: 3`` reached 212 to 279 lexer states in
20 walks; ``if 9 then 4 else 11`` hit ``max_dfa_states`` on the fourth walk; ``multipleOf:
840`` on the first). Walks use the real Llama 3 vocabulary, whose digit tokens read up to
three digits at a time, so a few masks reach every remainder.
"""

from __future__ import annotations

import json
import math
import random
import zlib
from decimal import Decimal

import pytest

import real_tokenizers
import tokamata
from schema_walks import Walker, validator
from tokamata.automata import boolean
from tokamata.automata import derivatives as d
from tokamata.syntax.json_schema import numbers as nm

_SLACK = 32  # C: sign, leading zero, natural spelling's last-digit state, the value's end

#: (name, schema, lcm of the p of its divisors p/10**k, largest k)
SCHEMAS = [
    ("integer multiple of 3", {"type": "integer", "multipleOf": 3}, 3, 0),
    ("integer multiple of 840", {"type": "integer", "multipleOf": 840}, 840, 0),
    ("number multiple of 840", {"type": "number", "multipleOf": 840}, 840, 0),
    ("if 9 then 4 else 11", {"type": "integer", "if": {"multipleOf": 9}, "then": {"multipleOf": 4},
                             "else": {"multipleOf": 11}}, 396, 0),
    ("6 and not 4", {"type": "integer", "allOf": [{"multipleOf": 6}, {"not": {"multipleOf": 4}}]}, 12, 0),
    ("number not multiple of 7", {"type": "number", "not": {"multipleOf": 7}}, 7, 0),
    ("multiple of 0.01", {"type": "number", "multipleOf": 0.01}, 1, 2),
    ("multiple of 0.25", {"type": "number", "multipleOf": 0.25}, 25, 2),
    ("0.75 and not 0.5", {"type": "number", "allOf": [{"multipleOf": 0.75}, {"not": {"multipleOf": 0.5}}]}, 75, 2),
    ("bounded multiple of 7", {"type": "integer", "multipleOf": 7, "minimum": -100, "maximum": 10 ** 6}, 7, 0),
    ("MaskBench allone4", {"type": "number", "allOf": [
        {"minimum": 1}, {"oneOf": [{"multipleOf": 3}, {"multipleOf": 5}, {"multipleOf": 7}]},
        {"oneOf": [{"allOf": [{"not": {"multipleOf": 5}}, {"not": {"multipleOf": 7}}]}, {"multipleOf": 24}]},
        {"oneOf": [{"not": {"multipleOf": 8}}, {"multipleOf": 11}]}, {"not": {"multipleOf": 8}}]}, 9240, 0),
]

WALKS = 8


def _bound(lcm: int, k: int) -> int:
    return (k + 2) * lcm + _SLACK


@pytest.mark.parametrize("spelling", ["natural", "any"])
@pytest.mark.parametrize("name,schema,lcm,k", SCHEMAS, ids=[s[0] for s in SCHEMAS])
def test_walks_stay_within_the_remainders(name, schema, lcm, k, spelling):
    vocab = real_tokenizers.llama3().vocab
    walker = Walker(vocab)
    constraint = tokamata.compile_json_schema(schema, vocab, spelling=spelling)
    exact = json.loads(json.dumps(schema), parse_float=Decimal)  # (judged exactly: floats would round)
    check = validator(exact)
    for n in range(WALKS):
        walk = walker.walk(constraint, zlib.crc32(f"{name}/{n}".encode()), max_steps=60)
        assert walk.status != "limit", f"{name}: walk {n}: {walk.note}"
        if walk.status == "eos":
            assert check.is_valid(json.loads(walk.data, parse_float=Decimal)), (name, walk.data)
    assert constraint.num_lexer_states <= _bound(lcm, k), \
        f"{name}: {constraint.num_lexer_states} lexer states, the remainders allow {_bound(lcm, k)}"


def _derivative_states(expr: d.Expr, cap: int) -> int:
    """Distinct derivatives of ``expr`` (stops past ``cap``)."""
    seen = {expr.id}
    todo = [expr]
    while todo and len(seen) <= cap:
        node = todo.pop()
        for byte in set(d.cuts(node)) | {0}:
            nxt = d.derivative(node, byte)
            if nxt is not d.NOTHING and nxt.id not in seen:
                seen.add(nxt.id)
                todo.append(nxt)
    return len(seen)


def _multiple(step: str) -> d.Expr:
    return nm.multiple_of(Decimal(step), tokamata.Limits())


@pytest.mark.parametrize("steps", [("3",), ("840",), ("9", "4", "11"), ("0.25",), ("0.03", "7")])
@pytest.mark.parametrize("integer", [True, False])
def test_number_languages_are_residue_automata(steps, integer):
    """The final number languages themselves (before any vocabulary): every step, all steps,
    and each step without the others, as ``allOf``/``not`` build them."""
    limits = tokamata.Limits()
    universe = nm.INTEGER_ANY if integer else nm.PLAIN_ANY
    multiples = [_multiple(s) for s in steps]
    lcm, k = 1, 0
    for s in steps:
        places = max(0, -Decimal(s).normalize().as_tuple().exponent)
        p = int(Decimal(s).scaleb(places))
        lcm, k = lcm * p // math.gcd(lcm, p), max(k, places)
    languages = [boolean.intersection(universe, *multiples, limits=limits)]
    for i, m in enumerate(multiples):
        others = [boolean.difference(nm.PLAIN_ANY, o, limits) for j, o in enumerate(multiples) if j != i]
        languages.append(boolean.intersection(universe, m, *others, limits=limits))
    for language in languages:
        if language is d.NOTHING:
            continue
        final = nm.overflow_safe(language, limits)
        assert _derivative_states(final, _bound(lcm, k)) <= _bound(lcm, k), (steps, integer, d.describe(final))


def test_integral_multiples_lose_only_their_fraction_spellings():
    """Exact on values: a random sample of integers against the oracle, fractions refused."""
    limits = tokamata.Limits()
    language = nm.overflow_safe(boolean.intersection(
        nm.INTEGER_ANY, _multiple("9"), boolean.difference(nm.PLAIN_ANY, _multiple("4"), limits), limits=limits),
        limits)
    rng = random.Random(20)
    for value in [0, 9, -9, 36, 45, 10 ** 40 * 9 + 9] + [rng.randrange(-10 ** 12, 10 ** 12) for _ in range(300)]:
        text = str(value).encode()
        node = language
        for byte in text:
            node = d.derivative(node, byte)
        assert node.nullable == (value % 9 == 0 and value % 4 != 0), value
        for byte in b".0":
            node = d.derivative(node, byte)
        assert not node.nullable, value
