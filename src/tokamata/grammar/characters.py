"""The ``characters=`` filter (seed 003 section 4.2): every byte of the output spells a
character of one set. A pass over the grammar IR, so every front end gets it the same way and
the filter lives in the automata, never patched into masks.

Invariants:
- Each text terminal ``T`` (ignored ones too) becomes ``T & C*``, ``C`` one UTF-8 character of
  the set; a token-set terminal (a wildcard such as TEXT_TOKEN) keeps the ids of tokens whose
  bytes spell characters of the set, and the ids of tokens without bytes (special tokens,
  which are not text). The output is the concatenation of lexemes and token-set tokens, so
  the filtered grammar's language is exactly the original's restricted to ``C*``: sound and
  complete by construction.
- The constraint's own literals must survive: a text terminal that is one fixed string, or a
  fixed string of two characters or more among the options of an alternation inside a
  terminal (outside any repetition: a Lark literal, a regex ``yes|no``, a JSON Schema
  ``enum``), with a character outside the set is an
  :class:`~tokamata.errors.InvalidArgument` naming the literal, its characters outside the
  set and where it was written (``line``/``column`` when the front end recorded it). Other
  parts of a terminal (classes, repetitions) are filtered silently, as the filter's purpose
  is; a terminal that vanishes takes the rules that need it with it, an ignored one is no
  longer ignored; if no sentence is left the error says so.
- Emptiness is decided by the native product search (:func:`..automata.boolean.intersection`),
  bounded by ``Limits.max_dfa_states``; the deadline of the compile applies.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..automata import boolean
from ..automata import charset as cs
from ..automata import derivatives as d
from ..errors import InvalidArgument
from ..limits import Limits
from .dead_rules import drop_dead_rules, start_is_productive
from .ir import Grammar, Terminal

__all__ = ["restrict_characters", "single_string"]


def single_string(node: d.Expr) -> bytes | None:
    """The one string ``node`` matches when it is a plain sequence of single bytes and single
    code points (how front ends spell literals), else None.

    >>> single_string(d.concat(d.byte_set(1 << ord("h")), d.utf8_char(((0xE9, 0xE9),))))
    b'h\\xc3\\xa9'
    """
    out = bytearray()
    stack = [node]
    while stack:
        item = stack.pop()
        kind = item.kind
        if kind == d.Kind.EPSILON:
            continue
        if kind == d.Kind.CONCAT:
            stack.extend(reversed(item.args))
        elif kind == d.Kind.BYTES:
            mask = item.args[0]
            if mask & (mask - 1):
                return None
            out.append(mask.bit_length() - 1)
        elif kind == d.Kind.UTF8:
            charset, pending = item.args
            if pending or len(charset) != 1 or charset[0][0] != charset[0][1]:
                return None
            out += chr(charset[0][0]).encode("utf-8", "surrogatepass")
        else:
            return None
    return bytes(out)


def restrict_characters(grammar: Grammar, allowed: cs.CharSet, limits: Limits, spelled: str,
                        token_bytes: Sequence[bytes | None] = ()) -> Grammar:
    """``grammar`` with every text terminal restricted to characters of ``allowed``
    (``spelled`` is how the caller wrote the set, for messages); ``token_bytes`` (the
    vocabulary's) filters the ids of token-set terminals.

    >>> from tokamata.grammar.ir import lexeme_grammar
    >>> g = lexeme_grammar("WORD", d.repeat(d.byte_set(d.byte_mask("abc")), 1, d.UNBOUNDED))
    >>> restricted = restrict_characters(g, ((ord("a"), ord("b")),), Limits(), "[ab]")
    >>> d.derivative(restricted.terminals[0].expr, ord("c")) is d.NOTHING
    True
    """
    if allowed == cs.ANY:
        return grammar
    text = d.repeat(d.utf8_char(allowed), 0, d.UNBOUNDED)
    terminals: list[Terminal] = []
    vanished: set[int] = set()
    for index, terminal in enumerate(grammar.terminals):
        if terminal.expr is None:
            ids = tuple(i for i in terminal.token_ids if _token_within(token_bytes, i, allowed))
            if not ids:
                vanished.add(index)
            terminals.append(terminal if len(ids) == len(terminal.token_ids) else
                             Terminal(terminal.name, None, ids, terminal.origin))
            continue
        for literal in _literals(terminal.expr):
            if not _within(literal, allowed):
                raise _literal_error(grammar, terminal, literal, allowed, spelled)
        kept = boolean.intersection(terminal.expr, text, limits=limits)
        if kept is d.NOTHING:
            vanished.add(index)
            terminals.append(terminal)  # (unused below: every rule that needs it is dropped)
        else:
            terminals.append(terminal if kept is terminal.expr else
                             Terminal(terminal.name, kept, terminal.token_ids, terminal.origin))
    rules = grammar.rules
    if vanished:
        rules = tuple(rule for rule in rules if vanished.isdisjoint(rule.rhs))
    ignore = tuple(i for i in grammar.ignore if i not in vanished)
    restricted = Grammar(tuple(terminals), grammar.nonterminals, rules, grammar.start, ignore, grammar.source)
    if vanished:
        if not start_is_productive(restricted):
            raise InvalidArgument(f"no output of this constraint uses only the characters {spelled}")
        # (drops the vanished terminals too: no rule or ignore mentions them any more)
        restricted = drop_dead_rules(restricted, drop_unproductive=True)
    return restricted


def _literals(expr: d.Expr) -> list[bytes]:
    """The literals of a terminal (see the module docstring): the whole terminal when it is one
    string, else the options of alternations (reached through concatenations and alternations
    only) that are one string of two characters or more."""
    whole = single_string(expr)
    if whole is not None:
        return [whole]
    found: list[bytes] = []
    stack = [expr]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.kind == d.Kind.CONCAT:
            stack.extend(node.args)
        elif node.kind == d.Kind.ALT:
            for option in node.args:
                literal = single_string(option)
                if literal is None:
                    stack.append(option)
                elif len(literal.decode("utf-8", "surrogatepass")) >= 2:
                    found.append(literal)
    return found


def _token_within(token_bytes: Sequence[bytes | None], token: int, allowed: cs.CharSet) -> bool:
    """Token ``token`` spells only characters of ``allowed`` (a token without bytes: special,
    not text, always kept)."""
    data = token_bytes[token] if token < len(token_bytes) else None
    return data is None or _within(data, allowed)


def _within(literal: bytes, allowed: cs.CharSet) -> bool:
    try:
        text = literal.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # (a token that splits a character: not within any set of characters)
        return False
    return all(cs.contains(allowed, ord(c)) for c in text)


def _literal_error(grammar: Grammar, terminal: Terminal, literal: bytes, allowed: cs.CharSet,
                   spelled: str) -> InvalidArgument:
    text = literal.decode("utf-8", "replace")
    outside = sorted({c for c in text if not cs.contains(allowed, ord(c))})
    shown = "".join(outside)
    line, column = terminal.origin if terminal.origin is not None else (None, None)
    return InvalidArgument(f"the literal {text!r} ({terminal.name}) uses {shown!r}, outside characters={spelled}",
                           line=line, column=column, text=grammar.source or None)
