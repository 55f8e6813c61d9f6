"""Byte-level derivatives: hash-consing, normalization, byte classes, UTF-8 leaves."""

from __future__ import annotations

import pytest

from tokamata.automata import charset as cs
from tokamata.automata import boolean
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
        if node.id in seen or node.kind != d.Kind.UTF8:
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


def _matches(node, data: bytes) -> bool:
    for byte in data:
        node = d.derivative(node, byte)
    return node.nullable


def test_tagged_keeps_its_tag_through_derivatives():
    word = d.concat(d.byte_set(1 << ord("a")), d.repeat(d.byte_set(1 << ord("b")), 0, d.UNBOUNDED))
    other = d.concat(d.byte_set(1 << ord("a")), d.byte_set(1 << ord("c")))
    state = d.alternation(d.tagged(word, 3), d.tagged(other, 5))
    assert d.tagged(d.NOTHING, 1) is d.NOTHING
    assert d.end_marks(state) == ()
    after_a = d.derivative(state, ord("a"))
    assert d.end_marks(after_a) == (3,)  # "a" ends word, not other
    assert d.derivative(after_a, ord("c")) is d.tagged(d.EPSILON, 5)
    assert d.end_marks(d.derivative(after_a, ord("c"))) == (5,)
    assert d.end_marks(d.derivative(after_a, ord("b"))) == (3,)
    assert d.derivative(after_a, ord("x")) is d.NOTHING


def test_global_class_starts_separate_every_leaf_class():
    """Every pair of bytes that some reachable state derives differently lies in different
    global classes (checked by deriving all 256 bytes of every state of small DFAs)."""
    from tokamata.automata.dfa import global_class_starts
    from tokamata.syntax.json_schema import lexemes as lx

    roots = [lx.ANY_STRING, lx.NUMBER, d.alternation(d.tagged(lx.string_literals(["ab", "a\\c"]), 0),
                                                     d.tagged(lx.NUMBER, 1)),
             d.concat(d.utf8_char(SETS["mixed"]), d.text_until(b"*/")),
             boolean.intersection(lx.INTEGER, d.concat(lx.DIGIT, boolean.decimal_multiple(3, 0)))]
    for root in roots:
        starts = global_class_starts(root)
        assert starts[0] == 0 and list(starts) == sorted(set(starts))
        class_of = [max(i for i, s in enumerate(starts) if s <= b) for b in range(256)]
        stack, seen = [root], set()
        while stack and len(seen) < 200:
            node = stack.pop()
            if node.id in seen or node is d.NOTHING:
                continue
            seen.add(node.id)
            derived = [d.derivative(node, b) for b in range(256)]
            for b in range(1, 256):
                if class_of[b] == class_of[b - 1]:
                    assert derived[b] is derived[b - 1], (root, node, b)
            stack.extend(derived)


def test_string_literals_is_a_trie_of_string_literal():
    from tokamata.syntax.json_schema import lexemes as lx

    assert lx.string_literals(["abc"]) is lx.string_literal("abc")
    texts = ["ab", "a", "a\"b", "é😀", ""]
    union = lx.string_literals(texts)
    single = d.alternation(*(lx.string_literal(t) for t in texts))
    assert boolean.difference(union, single) is d.NOTHING and boolean.difference(single, union) is d.NOTHING
    assert _matches(union, b'"a\\u0022b"') and not _matches(union, b'"abc"')


@pytest.mark.parametrize("text", ["", "a", "key", "a\"b\\c", "é😀\n", "x" * 300])
def test_string_literal_then_is_the_literal_followed_by_the_suffix(text):
    """Building a key with its colon from the end gives the very node that appending the
    colon to the built literal gives (hash-consed), whatever the layout's colon is."""
    from tokamata.syntax.json_schema import lexemes as lx

    for layout in (lx.Layout("compact"), lx.Layout("flexible", max_whitespace=3), lx.Layout("pretty", indent=2)):
        colon = layout.colon()
        assert lx.string_literal_then(text, colon) is d.concat(lx.string_literal(text), colon)
    assert lx.string_literal_then(text, d.EPSILON) is lx.string_literal(text)


def test_name_accepts_any_string_shortcut_agrees_with_the_walk():
    import json

    from tokamata.syntax.json_schema import lexemes as lx
    from tokamata.syntax.json_schema.strings import name_accepts

    for name in ["a", "", 'a"b', "x\\y", "\x01\n\x7f", "\ud800", "é", "😀"]:
        spelled = json.dumps(name, ensure_ascii=False).encode("utf-8", "surrogatepass")
        assert name_accepts(lx.ANY_STRING, name) == _matches(lx.ANY_STRING, spelled), name
    assert not name_accepts(lx.ANY_STRING, "\udc00x")


def test_equal_is_structural_across_clear_interned():
    def build(step: int, tail: int):
        digits = d.byte_set(sum(1 << b for b in range(0x30, 0x3A)))
        minus = d.repeat(d.byte_set(1 << 0x2D), 0, 1)
        return d.concat(minus, boolean.intersection(d.repeat(digits, 1, d.UNBOUNDED),
                                                    boolean.decimal_multiple(step, 0),
                                                    d.repeat(digits, 0, tail)))

    before, other = build(7, 5), build(7, 6)
    assert d.equal(before, build(7, 5)) and before is build(7, 5)  # (interned: one node)
    d.clear_interned()
    after = build(7, 5)
    assert after is not before and d.equal(after, before) and d.equal(before, after)
    assert not d.equal(build(7, 6), build(11, 6)) and not d.equal(after, other)
    assert d.equal(build(7, 6), other)
