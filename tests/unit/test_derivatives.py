"""Byte-level derivatives: hash-consing, normalization, byte classes, UTF-8 leaves."""

from __future__ import annotations

import pytest

from tokamata.automata import charset as cs
from tokamata.automata import derivatives as d

SETS = {
    "digits": cs.category("d", False),
    "word": cs.category("w", False),
    "not quote or backslash": cs.complement(((34, 34), (92, 92))),
    "cjk": ((0x4E00, 0x9FFF),),
    "non-ascii": ((0x80, 0x10FFFF),),
    "three emoji": ((0x1F600, 0x1F602),),
    "2/3-byte border": ((0x7FF, 0x801),),
    "below surrogates": ((0xD000, 0xD7FF),),
    "spaces": cs.category("s", False),
    "mixed": ((0x41, 0x5A), (0xE9, 0xE9), (0x10000, 0x10000)),
}


@pytest.mark.parametrize("name", list(SETS))
def test_utf8_leaf_classes_refine_true_classes(name):
    """Analytic cuts of every UTF-8 leaf reachable from the set separate every pair of bytes
    whose derivatives differ (checked by deriving all 256 bytes)."""
    root = d.utf8_char(SETS[name])
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if node.id in seen or node.kind != d._UTF8:
            continue
        seen.add(node.id)
        derived = [d._utf8_derivative(node.args[0], node.args[1], b) for b in range(256)]
        true_cuts = {b for b in range(1, 256) if derived[b] is not derived[b - 1]}
        assert true_cuts <= set(d.cuts(node)), (name, node)
        stack.extend(derived)
    assert seen


def test_byte_set_cuts():
    assert d.cuts(d.byte_set(sum(1 << b for b in range(48, 58)))) == (48, 58)
    assert d.cuts(d.byte_set(1 << 0)) == (1,)
    assert d.cuts(d.byte_set(1 << 255)) == (255,)


def test_hash_consing_and_normalization():
    a, b = d.byte_set(1 << 97), d.byte_set(1 << 98)
    assert d.alternation(a, b) is d.alternation(b, a) is d.alternation(a, b, a)
    assert d.concat(d.concat(a, b), a) is d.concat(a, d.concat(b, a))
    assert d.concat(a, d.NOTHING) is d.NOTHING and d.concat(d.EPSILON, a) is a
    assert d.repeat(a, 1, 1) is a and d.repeat(d.NOTHING, 0, 3) is d.EPSILON
    star = d.repeat(a, 0, d.UNBOUNDED)
    assert d.repeat(star, 0, d.UNBOUNDED) is star
    assert d.derivative(star, 97) is star and d.derivative(star, 98) is d.NOTHING


def test_derivatives_of_utf8_follow_the_encoding():
    e_acute = d.utf8_char(((0xE9, 0xE9),))
    after_lead = d.derivative(e_acute, 0xC3)
    assert after_lead is not d.NOTHING and not after_lead.nullable
    assert d.derivative(after_lead, 0xA9) is d.EPSILON
    assert d.derivative(after_lead, 0xA8) is d.NOTHING
    assert d.utf8_char(((0xD800, 0xDFFF),)) is d.NOTHING  # surrogates have no UTF-8 form
