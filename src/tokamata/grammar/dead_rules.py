"""Dead-rule removal: the pass :class:`~tokamata.grammar.builder.GrammarBuilder` runs on every
grammar it builds, before :func:`~tokamata.grammar.ir.check_grammar`.

A rule is *dead* when no sentence's derivation can use it: its left-hand side is unreachable
from the start symbol, or it mentions an unproductive nonterminal (one that derives no finite
string). :func:`drop_dead_rules` removes dead rules and then the nonterminals and terminals no
live rule mentions, renumbering what is left.

Invariants:
- The language is unchanged: a derivation of a sentence uses only live rules.
- Rules that mention an unproductive nonterminal are dropped silently when they are
  unreachable anyway, or when the front end says such rules are expected
  (``drop_unproductive``: a JSON Schema with an empty subschema). Otherwise a reachable rule
  that mentions one is a mistake in the user's grammar: the grammar is returned untouched, so
  that ``check_grammar`` reports it with its line and column.
- Ignored terminals are kept (they are used between lexemes, not by rules); the start symbol
  keeps its name; nonterminals and terminals keep their relative order and names, so a
  grammar without dead rules comes back as the same object.
- The grammar returned when something was dropped carries its live symbols (all of them:
  see :func:`~.ir.set_live_symbols`), so the checks after this pass do not compute them again.
- :func:`start_is_productive` tells the front end whether the language is empty before
  anything is dropped (the caller raises its own error: a schema that allows no value is a
  :class:`~tokamata.errors.SchemaError`, not a syntax error).

What it does not do: report errors (``check_grammar`` does), or merge anything.
"""

from __future__ import annotations

from .ir import Grammar, Rule, Terminal, live_symbols, set_live_symbols

__all__ = ["drop_dead_rules", "start_is_productive"]


def start_is_productive(grammar: Grammar) -> bool:
    """Does the start symbol derive some finite string (is the language non-empty)?"""
    return bool(live_symbols(grammar)[0][grammar.start])


def drop_dead_rules(grammar: Grammar, drop_unproductive: bool) -> Grammar:
    """``grammar`` without dead rules, and without the symbols only dead rules mention.

    >>> from tokamata.automata import derivatives as d
    >>> from tokamata.grammar.ir import Terminal
    >>> a, b = (Terminal(c, d.byte_set(1 << ord(c))) for c in "ab")
    >>> g = Grammar((a, b), ("start", "loop", "unused"),
    ...             (Rule(0, (0,)), Rule(0, (-2,)), Rule(1, (-2, 1)), Rule(2, (1,))), 0)
    >>> live = drop_dead_rules(g, drop_unproductive=True)
    >>> [t.name for t in live.terminals], live.nonterminals, live.rules
    (['a'], ('start',), (Rule(lhs=0, rhs=(0,), origin=None),))
    """
    productive, reachable = live_symbols(grammar)  # (reachable: through productive rules only)
    if not productive[grammar.start]:
        return grammar  # (an empty language: check_grammar names it)
    rules = grammar.rules
    if 0 in productive:
        unproductive = {-index - 1 for index in range(len(grammar.nonterminals)) if not productive[index]}
        live = []
        for rule in rules:
            if reachable[rule.lhs]:
                if unproductive.isdisjoint(rule.rhs):
                    live.append(rule)
                elif not drop_unproductive:
                    return grammar  # a mistake: check_grammar reports it where it was written
        rules = tuple(live)
    elif 0 in reachable:
        rules = tuple(rule for rule in rules if reachable[rule.lhs])
    mentioned = set(grammar.ignore)
    for rule in rules:
        mentioned.update(rule.rhs)
    used_terminals = [index in mentioned for index in range(len(grammar.terminals))]
    if rules is grammar.rules and all(used_terminals):
        return grammar
    terminal_map: list[int] = []
    terminals: list[Terminal] = []
    for index, used in enumerate(used_terminals):
        terminal_map.append(len(terminals))
        if used:
            terminals.append(grammar.terminals[index])
    nonterminal_map: list[int] = []
    nonterminals: list[str] = []
    for index, name in enumerate(grammar.nonterminals):
        nonterminal_map.append(len(nonterminals))
        if reachable[index]:
            nonterminals.append(name)
    # symbols below the first dropped terminal and nonterminal keep their numbers: a rule that
    # mentions only those is kept as it is (max and min run in C; most rules are such)
    terminal_cut = used_terminals.index(False) if False in used_terminals else len(used_terminals)
    nonterminal_cut = len(grammar.nonterminals)
    for index in range(len(grammar.nonterminals)):
        if not reachable[index]:
            nonterminal_cut = index
            break
    moved = []
    for rule in rules:
        rhs = rule.rhs
        if rule.lhs < nonterminal_cut and (not rhs or (max(rhs) < terminal_cut and min(rhs) >= -nonterminal_cut)):
            moved.append(rule)
        else:
            moved.append(Rule(nonterminal_map[rule.lhs],
                              tuple([terminal_map[s] if s >= 0 else -nonterminal_map[-s - 1] - 1 for s in rhs]),
                              rule.origin))
    kept = Grammar(tuple(terminals), tuple(nonterminals), tuple(moved), nonterminal_map[grammar.start],
                   tuple(terminal_map[i] for i in grammar.ignore), grammar.source)
    # every nonterminal left is productive and reachable: each was reached through a rule whose
    # symbols are all productive, and that rule (or another productive one) of it was kept
    everything = b"\x01" * len(nonterminals)
    set_live_symbols(kept, everything, everything)
    return kept

