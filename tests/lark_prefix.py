"""An exact "is this a prefix of some sentence?" oracle for a Lark grammar, built from lark.

lark's Earley parser has no interactive (incremental) mode, so the oracle writes a second
Lark grammar whose language is the prefixes of the first, each followed by a sentinel
character ``E`` (U+10FFFD, a noncharacter), and lets lark parse ``text + E``. Over the BNF
lark derives (``Lark.rules`` / ``Lark.terminals``):

- every terminal ``T`` gets ``P_T = T+ E`` where ``T+`` is the *non-empty* prefixes of its
  regex, written from the ``sre_parse`` tree: ``P(c) = c``; ``P(a b) = P(a) | a P(b)``;
  ``P(a|b) = P(a) | P(b)``; ``P(x{lo,hi}) = x{0,hi-1} P(x)``; scoped flags are kept, so
  ``(?i:...)`` stays caseless;
- a ``cut`` is ``E`` alone or a non-empty prefix of an ignored terminal then ``E``;
- every nonterminal ``A`` gets ``q_A``: for each rule ``A -> X1 .. Xn`` and each ``k``,
  ``X1 .. Xk cut`` (the text stops between lexemes) and ``X1 .. X(k-1) P_Xk`` /
  ``X1 .. X(k-1) q_Xk`` (the text stops inside ``Xk``); the start is ``q_start``.

Because ``E`` occurs once, at the very end, a partial lexeme must reach the end of the text:
lark's leftmost-first regex matching (``re.match``, then shorter matches only inside the
first one) cannot stop a partial lexeme early, and nothing can follow it. Complete lexemes
use the original patterns, so they keep exactly lark's own semantics.

Invariants: ``is_prefix(s)`` is exactly "some ``s + t`` is accepted by the original grammar"
as lark parses it; regexes with anchors, lookarounds or backreferences raise ``ValueError``
(the grammars here have none). ``accepts`` is the original grammar's ``parse`` as a boolean.
"""

from __future__ import annotations

import lark

from grammar_samples import lark_parser, sre_c, sre_parse

__all__ = ["PrefixOracle", "regex_text", "nonempty_prefix_regex"]

_FLAG_LETTERS = (("i", 2), ("m", 8), ("s", 16), ("x", 64), ("a", 256), ("u", 32))
_CATEGORY_TEXT = {
    sre_c.CATEGORY_DIGIT: r"\d", sre_c.CATEGORY_NOT_DIGIT: r"\D",
    sre_c.CATEGORY_SPACE: r"\s", sre_c.CATEGORY_NOT_SPACE: r"\S",
    sre_c.CATEGORY_WORD: r"\w", sre_c.CATEGORY_NOT_WORD: r"\W",
}


def _char(code: int) -> str:
    """One character as regex text that survives lark's literal unescaping: ASCII letters and
    digits as is, other printable ASCII backslash-escaped (``\\/`` included), everything else
    as a ``\\u``/``\\U`` escape (which lark turns into the character itself)."""
    ch = chr(code)
    if ch.isascii() and ch.isalnum():
        return ch
    if 0x20 <= code < 0x7F:
        return "\\" + ch
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _flags(add: int, delete: int) -> str:
    on = "".join(letter for letter, bit in _FLAG_LETTERS if add & bit)
    off = "".join(letter for letter, bit in _FLAG_LETTERS if delete & bit)
    return on + ("-" + off if off else "")


def _class(items) -> str:
    parts = []
    for op, av in items:
        if op is sre_c.NEGATE:
            parts.insert(0, "^")
        elif op is sre_c.LITERAL:
            parts.append(_char(av))
        elif op is sre_c.RANGE:
            parts.append(_char(av[0]) + "-" + _char(av[1]))
        elif op is sre_c.CATEGORY:
            parts.append(_CATEGORY_TEXT[av])
        else:
            raise ValueError(f"unsupported class item {op}")
    return "[" + "".join(parts) + "]"


def _repeat_text(body: str, low: int, high: int) -> str:
    top = "" if high == sre_c.MAXREPEAT else str(high)
    return f"(?:{body}){{{low},{top}}}"


def regex_text(items) -> str:
    """Regex text for a parsed sequence (groups become non-capturing)."""
    out = []
    for op, av in items:
        if op is sre_c.LITERAL:
            out.append(_char(av))
        elif op is sre_c.NOT_LITERAL:
            out.append("[^" + _char(av) + "]")
        elif op is sre_c.ANY:
            out.append(".")
        elif op is sre_c.IN:
            out.append(_class(av))
        elif op is sre_c.BRANCH:
            out.append("(?:" + "|".join(regex_text(b) for b in av[1]) + ")")
        elif op is sre_c.SUBPATTERN:
            _, add, delete, sub = av
            flags = _flags(add, delete)
            out.append(f"(?{flags}:" + regex_text(sub) + ")")
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            low, high, sub = av
            out.append(_repeat_text(regex_text(sub), low, high))
        else:
            raise ValueError(f"unsupported regex operator {op}")
    return "".join(out)


def nonempty_prefix_regex(items) -> str | None:
    """Regex text for the non-empty prefixes of a parsed sequence; None if it has none."""
    alternatives = []
    for k, (op, av) in enumerate(items):
        tail = _item_prefix(op, av)
        if tail is not None:
            alternatives.append(regex_text(items[:k]) + tail)
    return "(?:" + "|".join(alternatives) + ")" if alternatives else None


def _item_prefix(op, av) -> str | None:
    if op in (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY, sre_c.IN):
        return regex_text([(op, av)])
    if op is sre_c.BRANCH:
        found = [p for p in (nonempty_prefix_regex(b) for b in av[1]) if p is not None]
        return "(?:" + "|".join(found) + ")" if found else None
    if op is sre_c.SUBPATTERN:
        _, add, delete, sub = av
        inner = nonempty_prefix_regex(sub)
        return None if inner is None else f"(?{_flags(add, delete)}:{inner})"
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
        low, high, sub = av
        inner = nonempty_prefix_regex(sub)
        if high == 0 or inner is None:
            return None
        top = high if high == sre_c.MAXREPEAT else high - 1
        return _repeat_text(regex_text(sub), 0, top) + inner
    raise ValueError(f"unsupported regex operator {op}")


SENTINEL = "\U0010fffd"  # a noncharacter: appended to a prefix, never inside one


class PrefixOracle:
    """``accepts(text)``: the grammar parses ``text``; ``is_prefix(text)``: some extension
    of ``text`` is parsed by the grammar (exact, by lark on the prefix grammar)."""

    def __init__(self, text: str, start: str = "start") -> None:
        self.parser = lark_parser(text, start)
        self.prefix_grammar = self._prefix_grammar(start)
        self.prefix_parser = lark.Lark(self.prefix_grammar, parser="earley",
                                       lexer="dynamic_complete", start="start")

    def _prefix_grammar(self, start: str) -> str:
        end = _char(ord(SENTINEL))
        terminals = {t.name: t for t in self.parser.terminals}
        t_index = {name: i for i, name in enumerate(terminals)}
        lines = [f"END: /{end}/"]
        has_prefix: dict[str, bool] = {}
        for name, term in terminals.items():
            tree = list(sre_parse.parse(term.pattern.to_regexp()))
            lines.append(f"T{t_index[name]}: /{regex_text(tree)}/")
            prefix = nonempty_prefix_regex(tree)
            has_prefix[name] = prefix is not None
            if prefix is not None:
                lines.append(f"P{t_index[name]}: /{prefix}{end}/")

        rules: dict[str, list[list[tuple[bool, str]]]] = {}
        for rule in self.parser.rules:
            rhs = [(isinstance(s, lark.grammar.Terminal), s.name) for s in rule.expansion]
            rules.setdefault(rule.origin.name, []).append(rhs)
        n_index = {name: i for i, name in enumerate(rules)}

        def full(symbol: tuple[bool, str]) -> str:
            is_t, name = symbol
            return f"T{t_index[name]}" if is_t else f"n{n_index[name]}"

        def cut(symbol: tuple[bool, str]) -> str | None:
            is_t, name = symbol
            if is_t:
                return f"P{t_index[name]}" if has_prefix[name] else None
            return f"q{n_index[name]}"

        for name, alternatives in rules.items():
            lines.append(f"n{n_index[name]}: " + " | ".join(
                " ".join(full(s) for s in rhs) for rhs in alternatives))
            own = f"q{n_index[name]}"
            options = ["cut"]
            for rhs in alternatives:
                for k in range(len(rhs) + 1):
                    head = [full(s) for s in rhs[:k]]
                    options.append(" ".join(head + ["cut"]))
                    tail = cut(rhs[k]) if k < len(rhs) else None
                    if tail is not None and (k or tail != own):  # skip the cycle q -> q
                        options.append(" ".join(head + [tail]))
            lines.append(f"{own}: " + " | ".join(dict.fromkeys(options)))

        ignored = [f"P{t_index[name]}" for name in self.parser.ignore_tokens if has_prefix[name]]
        lines.append("cut: " + " | ".join(["END"] + ignored))
        lines.append(f"start: q{n_index[start]}")
        for name in self.parser.ignore_tokens:
            lines.append(f"%ignore T{t_index[name]}")
        return "\n".join(lines) + "\n"

    @staticmethod
    def _parses(parser: lark.Lark, text: str) -> bool:
        try:
            parser.parse(text)
        except lark.exceptions.LarkError:
            return False
        return True

    def accepts(self, text: str) -> bool:
        return self._parses(self.parser, text)

    def is_prefix(self, text: str) -> bool:
        if SENTINEL in text:
            raise ValueError("is_prefix: the text holds the sentinel character U+10FFFD")
        return self._parses(self.prefix_parser, text + SENTINEL)
