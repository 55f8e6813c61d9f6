"""An independent oracle for token masks: Python's ``regex`` package with partial matching.

``allowed_by_oracle(pattern, vocab, prefix)`` is the set of text tokens ``t`` such that
``prefix + bytes(t)`` can still be extended to a full match, decided on decoded text by
``regex.fullmatch(..., partial=True)``; EOS ids are in it when ``re.fullmatch`` accepts the
prefix. tokamata's automata are not used.

- ``\\d \\w \\s`` (and complements) are spelled out as explicit classes computed with ``re``,
  because the ``regex`` package's Unicode tables differ from ``re``'s in places.
- A token that ends inside a UTF-8 character is allowed if some completion of that character
  can continue. Completions are tried through representatives: the code points on both sides
  of every class boundary and literal in the pattern, plus the ends of the completion range;
  within one gap between boundaries every code point behaves alike.
"""

from __future__ import annotations

import functools
import re
from re import _parser as sre_parse  # type: ignore[attr-defined]

import regex

_CATEGORY = {"d": r"\d", "w": r"\w", "s": r"\s"}


@functools.lru_cache(maxsize=None)
def _category_ranges(letter: str, ascii_only: bool = False) -> tuple[tuple[int, int], ...]:
    text = "".join(map(chr, range(0x110000)))
    flags = re.ASCII if ascii_only else 0
    base = tuple((m.start(), m.end() - 1) for m in re.finditer(f"{_CATEGORY[letter.lower()]}+", text, flags))
    if letter.islower():
        return base
    out, nxt = [], 0
    for lo, hi in base:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= 0x10FFFF:
        out.append((nxt, 0x10FFFF))
    return tuple(out)


def _ranges_text(ranges) -> str:
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


def spell_out(pattern: str) -> str:
    """``pattern`` with ``\\d \\w \\s \\D \\W \\S`` replaced by explicit code point classes
    and lazy quantifiers made greedy."""
    ascii_only = bool(re.compile(pattern).flags & re.ASCII)
    out = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in "dwsDWS":
                ranges = _ranges_text(_category_ranges(nxt, ascii_only))
                out.append(ranges if in_class else f"[{ranges}]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if not in_class and c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < len(pattern) and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < len(pattern) and pattern[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if in_class and c == "]":
            in_class = False
        out.append(c)
        i += 1
        if not in_class and i < len(pattern) and pattern[i] == "?" and _ends_quantifier(out):
            i += 1  # lazy -> greedy: same language, and the regex package's partial
            #         matching is unreliable with lazy quantifiers
    return "".join(out)


def _ends_quantifier(out: list[str]) -> bool:
    text = "".join(out[-12:])
    if text.endswith(("*", "+")) and not text.endswith(("\\*", "\\+")):
        return True
    if text.endswith("?") and not text.endswith(("(?", "\\?")):
        return True
    return re.search(r"(?<!\\)\{\d*,?\d*\}$", text) is not None


def _boundaries(spelled: str) -> list[int]:
    """Every literal code point and range end in the (spelled-out) pattern."""
    points: set[int] = {0x0A}
    stack = [sre_parse.parse(spelled)]
    while stack:
        item = stack.pop()
        for op, av in (item.data if hasattr(item, "data") else item):
            name = str(op)
            if name in ("LITERAL", "NOT_LITERAL"):
                points.add(av)
            elif name == "RANGE":
                points.update(av)
            elif name == "IN":
                stack.append(av)
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                stack.append(av[2])
            elif name == "SUBPATTERN":
                stack.append(av[3])
            elif name == "BRANCH":
                stack.extend(av[1])
    return sorted(points)


class Oracle:
    """Decides allowed tokens for one pattern with the ``regex`` package."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.spelled = spell_out(pattern)
        self.compiled = regex.compile(self.spelled, flags=regex.V0)
        self.full = re.compile(pattern)
        self.points = _boundaries(self.spelled)

    def viable(self, text: str) -> bool:
        return self.compiled.fullmatch(text, partial=True) is not None

    def viable_bytes(self, data: bytes) -> bool:
        """Can ``data`` (UTF-8, maybe ending inside a character) be extended to a full match?"""
        try:
            return self.viable(data.decode("utf-8"))
        except UnicodeDecodeError as error:
            if error.end != len(data) and error.reason != "unexpected end of data":
                return False
            head, tail = data[:error.start], data[error.start:]
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError:
            return False
        for c in self._completions(tail):
            if self.viable(text + chr(c)):
                return True
        return False

    def _completions(self, tail: bytes) -> list[int]:
        """Representative code points whose UTF-8 encoding starts with ``tail`` (1-3 bytes)."""
        lead = tail[0]
        need = 1 if 0xC2 <= lead <= 0xDF else 2 if 0xE0 <= lead <= 0xEF else 3 if 0xF0 <= lead <= 0xF4 else 0
        if need == 0 or len(tail) > need:
            return []
        # smallest and largest completions: pad with the lowest / highest continuation byte,
        # the second byte clamped to what the lead allows (E0, ED, F0 and F4 restrict it)
        second_lo, second_hi = _SECOND_BYTE.get(lead, (0x80, 0xBF))
        if len(tail) == 1:
            low, high = tail + bytes([second_lo]), tail + bytes([second_hi])
        else:
            low = high = tail
        low += b"\x80" * (need + 1 - len(low))
        high += b"\xbf" * (need + 1 - len(high))
        lo_char, hi_char = _decode_or_none(low), _decode_or_none(high)
        if lo_char is None or hi_char is None:
            return []
        lo, hi = ord(lo_char), ord(hi_char)
        candidates = {lo, hi}
        for p in self.points:
            for q in (p - 1, p, p + 1):
                if lo <= q <= hi:
                    candidates.add(q)
        return sorted(c for c in candidates if not 0xD800 <= c <= 0xDFFF)

    def allowed(self, vocab, prefix: bytes) -> set[int]:
        """Token ids allowed after ``prefix`` (EOS ids included when it is a full match)."""
        by_first: dict[int, bool] = {}
        allowed = set()
        for token_id, data in enumerate(vocab.token_bytes):
            if not data:
                continue
            first = data[0]
            if first < 0x80:  # prune: if prefix + this ASCII byte is not viable, nothing after is
                ok = by_first.get(first)
                if ok is None:
                    ok = by_first[first] = self.viable_bytes(prefix + bytes([first]))
                if not ok:
                    continue
            if self.viable_bytes(prefix + data):
                allowed.add(token_id)
        try:
            if self.full.fullmatch(prefix.decode("utf-8")):
                allowed.update(vocab.eos_token_ids)
        except UnicodeDecodeError:
            pass
        return allowed


_SECOND_BYTE = {0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F)}


def _decode_or_none(data: bytes):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if len(text) == 1 else None


def python_dfa(pattern: str):
    """The Python oracle's lazy byte DFA of ``pattern`` (Python derivatives, no C++), whose
    start state is 0: the independent counterpart of the native lexer a regex compiles to."""
    from tokamata.automata.dfa import LazyByteDfa
    from tokamata.syntax.regex_lower import lower
    from tokamata.limits import DEFAULT_LIMITS
    from tokamata.syntax.regex import parse_regex

    return LazyByteDfa(lower(parse_regex(pattern, DEFAULT_LIMITS)), DEFAULT_LIMITS)
