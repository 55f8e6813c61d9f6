"""The native lexer DFA (``_core.DerivativeDfa`` over ``_core.ExprArena``) against the Python
derivative engine (``automata.dfa.LazyByteDfa``), its reference: on random expressions over
every kind (byte sets, UTF-8 leaves, concatenation, alternation, bounded and unbounded
repetition, tags, intersection, difference, and the parametric leaves text-until-stop and
decimal divisibility, all derived natively), both DFAs are explored in lockstep over one byte of every class. Each Python
state must have one native state (the arena normalizes as the Python constructors do), with
the same acceptance, the same dead transitions, the same terminals ending there and the
same text depth; keys must be equal exactly when the untagged languages are. (A native state
may stand for two Python states: the arena outlives ``clear_interned()``, after which Python
rebuilds equal expressions as new nodes; each is checked against it in lockstep.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from tokamata import _core
from tokamata.automata import boolean
from tokamata.automata import derivatives as d
from tokamata.automata import native
from tokamata.automata.dfa import DEAD, LazyByteDfa, global_class_starts
from tokamata.grammar.lexer import untagged
from tokamata.errors import LimitExceeded
from tokamata.limits import Limits
from tokamata.automata.analysis import UNLIMITED, text_depth

_BYTE_SETS = [d.byte_set(d.byte_mask(chars)) for chars in ("a", "b", "ab", "0123456789", '"', "\\", "a.")]
_CHARS = [d.utf8_char(((0xE9, 0xE9),)), d.utf8_char(((0x4E00, 0x4E0F), (0x1F600, 0x1F602))),
          d.utf8_char(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)))]
_LEAVES = st.sampled_from(_BYTE_SETS + _CHARS + [d.text_until(b'"'), d.text_until("é!".encode()),
                                                boolean.decimal_multiple(3, 0), boolean.decimal_multiple(5, 1)])


def _expressions():
    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda p: d.concat(*p)),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: d.alternation(*xs)),
            st.tuples(inner, st.integers(0, 2), st.sampled_from([1, 3, d.UNBOUNDED])).map(
                lambda t: d.repeat(t[0], t[1], max(t[1], t[2]) if t[2] != d.UNBOUNDED else t[2])),
            st.tuples(inner, inner).map(lambda p: boolean.intersection(*p)),
            st.tuples(inner, inner).map(lambda p: boolean.difference(*p)),
        )
    return st.recursive(_LEAVES, extend, max_leaves=6)


_BIG_BUDGET = Limits(max_dfa_states=100_000)
_TERMINALS = st.lists(_expressions().filter(lambda e: e is not d.NOTHING), min_size=1, max_size=3)


def _lockstep(tagged: list[d.Expr], max_states: int = 300) -> int:
    """Explore the Python and the native DFA of the alternation of ``tagged`` together;
    returns the number of states compared."""
    root = d.alternation(*tagged)
    python = LazyByteDfa(root, Limits())
    bridge = native.bridge()
    starts = global_class_starts(root)
    dfa = _core.DerivativeDfa(bridge.arena, np.asarray(starts, dtype=np.int32), bridge.key_base, 100_000, 60.0)
    pairs = {0: dfa.intern_state(bridge.to_arena(root))}
    todo = [0]
    while todo and len(pairs) < max_states:
        state = todo.pop()
        mine = pairs[state]
        node = python.states[state]
        assert dfa.accepting(mine) == node.nullable
        assert tuple(dfa.ends(mine)) == d.end_marks(node)
        assert dfa.text_depth(mine) == min(text_depth(node), UNLIMITED)
        for byte in starts:
            theirs = python.step(state, byte)
            ours = dfa.step(mine, byte)
            assert (theirs == DEAD) == (ours == DEAD), (node, byte)
            if theirs == DEAD:
                continue
            known = pairs.get(theirs)
            if known is None:
                pairs[theirs] = ours
                todo.append(theirs)
            else:
                assert known == ours, "one Python state has two native states"
    keys: dict[int, set] = {}
    for state, mine in pairs.items():
        keys.setdefault(untagged(python.states[state]).id, set()).add(dfa.key(mine))
    assert all(len(found) == 1 for found in keys.values())  # one language, one key
    return len(pairs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_TERMINALS)
def test_native_lexer_dfa_matches_the_python_engine(terminals):
    _lockstep([d.tagged(t, i) for i, t in enumerate(terminals)])


def _leaf_cuts_from_scratch(node: d.Expr) -> int:
    """The leaf-cut mask of ``node`` recomputed without any memo: bit b (1..0x7F) when some
    leaf's byte set changes between b - 1 and b, bit 0 when some leaf reads a non-ASCII byte."""
    if node.kind == d.Kind.BYTES:
        mask = node.args[0]
        return sum(1 << b for b in range(1, 0x80) if (mask >> b & 1) != (mask >> (b - 1) & 1)) | (mask >> 0x80 != 0)
    if node.kind == d.Kind.UTF8:
        if node.args[1] != 0:
            return 1
        ascii_bits = [any(lo <= b <= hi for lo, hi in node.args[0]) for b in range(0x80)]
        return 1 | sum(1 << b for b in range(1, 0x80) if ascii_bits[b] != ascii_bits[b - 1])
    if node.kind == d.Kind.UNTIL:
        return 1 | sum(1 << c for c in d.cuts(node) if c < 0x80)
    children = {d.Kind.REPEAT: node.args[:1], d.Kind.TAGGED: node.args[:1]}.get(node.kind, node.args)
    if node.kind == d.Kind.DECMOD:
        children = node.args[5:]
    found = 0
    for child in children:
        found |= _leaf_cuts_from_scratch(child)
    return found


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_TERMINALS, _TERMINALS)
def test_native_emptiness_decisions_agree_with_the_python_search(left, right):
    # the smart constructors decide emptiness in the arena; the Python product search is
    # the oracle (over the raw members: the constructors' normalizations keep the language)
    # (a search past its state budget decides nothing: such examples are left out)
    members = tuple(left + right)
    first, second = d.alternation(*left), d.alternation(*right)
    try:
        assert (boolean.intersection(*members) is not d.NOTHING) == \
            boolean.reference_non_empty(d.Kind.AND, members, _BIG_BUDGET)
        assert (boolean.difference(first, second) is not d.NOTHING) == \
            boolean.reference_non_empty(d.Kind.DIFF, (first, second), _BIG_BUDGET)
    except LimitExceeded:
        reject()


def test_native_emptiness_search_honours_the_callers_budget():
    big = d.repeat(d.byte_set(1 << 97), 0, 5000)
    with pytest.raises(LimitExceeded) as caught:
        boolean.intersection(big, d.concat(d.repeat(d.byte_set(1 << 97), 0, d.UNBOUNDED), d.byte_set(1 << 98)),
                             limits=Limits(max_dfa_states=10))
    assert (caught.value.limit, caught.value.bound) == ("max_dfa_states", 10)
    # the default budget is back for the next search
    assert boolean.intersection(big, d.repeat(d.byte_set(1 << 97), 3, 3)) is not d.NOTHING


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_TERMINALS)
def test_leaf_cuts_set_when_built_match_a_walk_from_scratch(terminals):
    """Nodes get their leaf cuts when built (except above text-until leaves, which the walk
    fills in); either way they equal a recomputation from scratch."""
    from tokamata.automata.dfa import _leaf_cuts

    for root in terminals:
        stack = [root]
        while stack:
            node = stack.pop()
            if node._leaf_cuts is None:
                assert any(leaf.kind == d.Kind.UNTIL for leaf in _nodes_below(node)), node
            assert _leaf_cuts(node) == _leaf_cuts_from_scratch(node), node
            if node.kind not in (d.Kind.BYTES, d.Kind.UTF8, d.Kind.UNTIL, d.Kind.DECMOD):
                stack.extend(node.args[:1] if node.kind in (d.Kind.REPEAT, d.Kind.TAGGED) else node.args)


def _live_states_at_depth(root: d.Expr, depth: int, max_states: int = 400) -> list[d.Expr]:
    """The non-NOTHING derivatives of ``root`` by strings of exactly ``depth`` bytes (one byte
    per byte class), or fewer when more than ``max_states`` turn up (then the check is lax)."""
    layer = {root.id: root}
    for _ in range(depth):
        following = {}
        for node in layer.values():
            for byte in d.cuts(node):
                after = d.derivative(node, byte)
                if after is not d.NOTHING:
                    following[after.id] = after
        layer = dict(list(following.items())[:max_states])
    return list(layer.values())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_TERMINALS)
def test_length_facts_set_when_built_are_sound(terminals):
    """A node's longest-string bound holds (nothing longer is accepted) and a node said to be
    infinite has strings of any length (facts set by ``derivatives._set_facts``)."""
    from tokamata.automata.analysis import infinite as _infinite, max_length as _max_length

    for root in terminals:
        longest = _max_length(root)
        if longest is not None and longest < 12:
            assert not _live_states_at_depth(root, longest + 1), root
        if _infinite(root):
            assert _max_length(root) is None
            assert _live_states_at_depth(root, 9), root


def _nodes_below(node: d.Expr) -> list[d.Expr]:
    found, stack = [], [node]
    while stack:
        top = stack.pop()
        found.append(top)
        if top.kind not in (d.Kind.BYTES, d.Kind.UTF8, d.Kind.UNTIL, d.Kind.DECMOD):
            stack.extend(top.args[:1] if top.kind in (d.Kind.REPEAT, d.Kind.TAGGED) else top.args)
    return found


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}},
     "additionalProperties": {"type": "integer", "multipleOf": 7}},
    {"type": "string", "pattern": "^[a-c]+$", "minLength": 2, "maxLength": 5},
    {"type": "string", "not": {"enum": ["ab", "abc"]}},
    {"type": "number", "minimum": -2.5, "maximum": 1000, "multipleOf": 0.25},
    {"type": "array", "items": {"type": "string", "format": "email"}},
    {"type": "number", "multipleOf": 0.01, "minimum": 0, "exclusiveMaximum": 100},
    {"type": "integer", "not": {"multipleOf": 3}, "maximum": 1000},
    {"type": "number", "multipleOf": 123456789012345678901},
])
def test_native_lexers_of_json_schemas_match_the_python_engine(schema):
    """The terminals a JSON Schema compiles to (formats, patterns with lengths, complements,
    divisibility), explored from the start state of every terminal alone and of all."""
    from tokamata.syntax.json_schema import schema_to_grammar

    grammar = schema_to_grammar(schema)
    grammar = grammar[0] if isinstance(grammar, tuple) else grammar
    tagged = [d.tagged(t.expr, i) for i, t in enumerate(grammar.terminals) if t.expr is not None]
    for one in tagged:
        assert _lockstep([one], max_states=400) > 0
    assert _lockstep(tagged, max_states=400) > 0


def test_import_is_memoized_per_generation_and_survives_a_new_arena():
    text = d.concat(d.byte_set(d.byte_mask('"')), d.text_until(b'"'))
    bridge = native.bridge()
    first = bridge.to_arena(text)
    assert bridge.to_arena(text) == first and bridge.arena.size >= 3
    native.reset(force=True)
    fresh = native.bridge()
    assert fresh is not bridge and fresh.key_base != bridge.key_base
    ident = fresh.to_arena(text)  # imported again into the new arena
    assert fresh.arena.nullable(ident) is False and fresh.arena.derivative(ident, ord('"')) != 0
    # the old arena keeps working for the lexers that hold it
    assert bridge.arena.derivative(first, ord('"')) != 0


def test_malformed_imports_are_refused():
    arena = _core.ExprArena()
    with pytest.raises(ValueError, match="unknown record kind"):
        arena.import_nodes(np.asarray([99], dtype=np.int32))
    with pytest.raises(ValueError, match="later record"):
        arena.import_nodes(np.asarray([4, -1, -2], dtype=np.int32))
    with pytest.raises(ValueError, match="sorted, disjoint"):
        arena.import_nodes(np.asarray([3, 0, 2, 0x100, 0x200, 0x150, 0x300], dtype=np.int32))
    with pytest.raises(ValueError, match="truncated"):
        arena.import_nodes(np.asarray([2, 1, 2], dtype=np.int32))
    with pytest.raises(IndexError):
        arena.derivative(12345, 0)
