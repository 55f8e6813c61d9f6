"""A naive recognizer for the grammar IR, as a test oracle for front ends (no engine needed).

``accepts(grammar, data)`` decides whether ``data`` is in the grammar's language: a sequence
of lexemes derived from the start symbol, with ``%ignore`` lexemes allowed between any two
lexemes and at both ends. It computes, by fixpoint, every span ``(i, j)`` of ``data`` each
symbol derives (terminals by running their byte DFA, ``tokamata.automata.dfa.LazyByteDfa``),
so it costs about ``len(data) ** 3`` per rule per round: use it on short strings only.
Special-token terminals never match bytes.
"""

from __future__ import annotations

from tokamata.automata.dfa import DEAD, LazyByteDfa
from tokamata.automata import derivatives as d
from tokamata.grammar.ir import Grammar, is_terminal, nonterminal_index
from tokamata.limits import Limits

_LIMITS = Limits()


def matches(expr: d.Expr, data: bytes) -> bool:
    """Does the byte expression match all of ``data``?"""
    dfa = LazyByteDfa(expr, _LIMITS)
    if dfa.is_empty:
        return False
    state = dfa.run(data)
    return state != DEAD and dfa.accepting(state)


def _terminal_spans(expr: d.Expr, data: bytes) -> set[tuple[int, int]]:
    dfa = LazyByteDfa(expr, _LIMITS)
    spans: set[tuple[int, int]] = set()
    if dfa.is_empty:
        return spans
    for i in range(len(data)):
        state = 0
        for j in range(i, len(data)):
            state = dfa.step(state, data[j])
            if state == DEAD:
                break
            if dfa.accepting(state):
                spans.add((i, j + 1))
    return spans


def accepts(grammar: Grammar, data: bytes) -> bool:
    n = len(data)
    terminal_spans = [set() if t.expr is None else _terminal_spans(t.expr, data) for t in grammar.terminals]
    # gap[i]: positions reachable from i through zero or more ignored lexemes
    ignored = set().union(*(terminal_spans[i] for i in grammar.ignore)) if grammar.ignore else set()
    gap: list[set[int]] = []
    for i in range(n + 1):
        reach, todo = {i}, [i]
        while todo:
            p = todo.pop()
            for a, b in ignored:
                if a == p and b not in reach:
                    reach.add(b)
                    todo.append(b)
        gap.append(reach)
    spans: list[set[tuple[int, int]]] = [set() for _ in grammar.nonterminals]

    def symbol_spans(symbol: int) -> set[tuple[int, int]]:
        return terminal_spans[symbol] if is_terminal(symbol) else spans[nonterminal_index(symbol)]

    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            current = {(i, i) for i in range(n + 1)}
            for symbol in rule.rhs:
                by_start: dict[int, list[int]] = {}
                for a, b in symbol_spans(symbol):
                    by_start.setdefault(a, []).append(b)
                current = {(i, k) for i, j in current for g in gap[j] for k in by_start.get(g, ())}
                if not current:
                    break
            target = spans[rule.lhs]
            if not current <= target:
                target |= current
                changed = True
    return any(a in gap[0] and n in gap[b] for a, b in spans[grammar.start])
