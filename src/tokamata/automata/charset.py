"""Sets of Unicode code points, and the character classes of Python's ``re``.

Invariants:
- A :data:`CharSet` is a tuple of disjoint, sorted, non-adjacent inclusive ranges
  ``((lo, hi), ...)`` of code points in ``[0, 0x10FFFF]``; equal sets are equal tuples.
- The tables for ``\\d``, ``\\w``, ``\\s`` are computed by Python's own ``re`` engine over
  every code point, so they agree with ``re`` for ``str`` patterns by construction (its
  Unicode tables differ in places from the ``regex`` package's).
- Case-insensitive sets are computed by asking ``re`` itself about every code point that
  takes part in any case mapping; every other code point matches exactly when it matches
  without the flag. Surrogates are kept here; the UTF-8 layer drops them.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from bisect import bisect_left
from typing import Iterable, Tuple

from ..caches import register_process_cache

CharSet = Tuple[Tuple[int, int], ...]

MAX_CODE_POINT = 0x10FFFF
EMPTY: CharSet = ()
ANY: CharSet = ((0, MAX_CODE_POINT),)


def normalize(ranges: Iterable[tuple[int, int]]) -> CharSet:
    """Sort and merge overlapping or adjacent ranges."""
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            continue
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)


def union(*sets: CharSet) -> CharSet:
    return normalize(r for s in sets for r in s)


def complement(charset: CharSet) -> CharSet:
    out = []
    nxt = 0
    for lo, hi in charset:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return tuple(out)


def intersect(charset: CharSet, lo: int, hi: int, highs: tuple[int, ...] | None = None) -> CharSet:
    """The part of ``charset`` inside ``[lo, hi]``; ``highs`` (the ranges' upper ends), when
    given, saves the key calls of the binary search."""
    start = bisect_left(charset, lo, key=_high) if highs is None else bisect_left(highs, lo)
    out = []
    for i in range(start, len(charset)):
        a, b = charset[i]
        if a > hi:
            break
        out.append((a if a > lo else lo, b if b < hi else hi))
    return tuple(out)


def _high(r: tuple[int, int]) -> int:
    return r[1]


def contains(charset: CharSet, code_point: int) -> bool:
    i = bisect_left(charset, code_point, key=_high)
    return i < len(charset) and charset[i][0] <= code_point


def size(charset: CharSet) -> int:
    return sum(hi - lo + 1 for lo, hi in charset)


@functools.lru_cache(maxsize=None)
def _all_code_points() -> str:
    return "".join(map(chr, range(MAX_CODE_POINT + 1)))


@functools.lru_cache(maxsize=None)
def _runs_matching(pattern: str, flags: int) -> CharSet:
    """Code points ``c`` with ``re.fullmatch(pattern, chr(c), flags)``, via one C-speed scan."""
    text = _all_code_points()
    compiled = re.compile(f"(?:{pattern})+", flags)
    return tuple((m.start(), m.end() - 1) for m in compiled.finditer(text))


@functools.lru_cache(maxsize=None)
def category(name: str, ascii_only: bool) -> CharSet:
    """``\\d``, ``\\w``, ``\\s`` (lower case) or their complements (upper case)."""
    base = None
    if not ascii_only:
        from . import unicode_tables

        if unicode_tables.UNICODE_VERSION == unicodedata.unidata_version:
            base = tuple(unicode_tables.TABLES[name.lower()])
    if base is None and ascii_only:
        pattern = re.compile("\\" + name.lower(), re.ASCII)
        base = normalize((c, c) for c in range(128) if pattern.fullmatch(chr(c)))
    if base is None:
        base = _runs_matching("\\" + name.lower(), 0)
    return complement(base) if name.isupper() else base


def cased_code_points() -> list[int]:
    """Every code point ``c`` whose ``re`` lowercase differs from it or that ``re`` calls cased,
    and those lowercases: a scan of every code point through ``re``'s C tables (~250 ms;
    ``unicode_tables.TABLES["cased"]`` holds its answer for one Unicode version)."""
    import _sre  # the C engine's own tables

    related: set[int] = set()
    for c in range(MAX_CODE_POINT + 1):
        low = _sre.unicode_tolower(c)
        if low != c or _sre.unicode_iscased(c):
            related.add(c)
            related.add(low)
    return sorted(related)


@functools.lru_cache(maxsize=None)
def _case_related() -> tuple[int, ...]:
    """Every code point that some case mapping of ``re``'s IGNORECASE touches (from the
    generated table when it is of this Python's Unicode version: the first case-insensitive
    compile of a process took the ~250 ms scan otherwise)."""
    from . import unicode_tables

    related: set[int] = set()
    if unicode_tables.UNICODE_VERSION == unicodedata.unidata_version:
        for lo, hi in unicode_tables.TABLES["cased"]:
            related.update(range(lo, hi + 1))
    else:
        related.update(cased_code_points())
    try:
        from re import _casefix  # type: ignore[attr-defined]

        for key, values in _casefix._EXTRA_CASES.items():
            related.add(key)
            related.update(values)
    except (ImportError, AttributeError):  # pragma: no cover - older Pythons
        pass
    return tuple(sorted(related))


@functools.lru_cache(maxsize=4096)  # (a pattern of 50,000 case-insensitive letters asks 26 questions)
def ignore_case(charset: CharSet, source: str, flags: int) -> CharSet:
    """The set ``re`` matches for the single-character ``source`` under IGNORECASE.

    ``charset`` is what ``source`` matches without the flag. Code points outside every case
    mapping keep their plain membership; each case-related one is asked of ``re`` directly.
    """
    compiled = re.compile(source, (flags | re.IGNORECASE) & ~re.VERBOSE)
    if len(charset) == 1 and charset[0][0] == charset[0][1]:  # one character: ask about its kin only
        matched = [c for c in _case_kin().get(charset[0][0], ()) if compiled.fullmatch(chr(c))]
    else:
        related = _case_related()
        matched = [related[m.start()] for m in compiled.finditer(_case_related_text())]
    plain = _subtract(charset, _case_related_ranges(), _case_related_highs())
    return union(plain, normalize((c, c) for c in matched))


@functools.lru_cache(maxsize=None)
def _case_kin() -> dict[int, tuple[int, ...]]:
    """Case-related code point -> every case-related code point linked to it by a chain of
    lowercase mappings and ``re``'s extra cases (itself included): all a single character can
    match under IGNORECASE besides itself, so asking ``re`` about these few is asking about all."""
    import _sre

    parent = {c: c for c in _case_related()}

    def root(c: int) -> int:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    links = [(c, _sre.unicode_tolower(c)) for c in parent]
    try:
        from re import _casefix  # type: ignore[attr-defined]

        links += [(key, value) for key, values in _casefix._EXTRA_CASES.items() for value in values]
    except (ImportError, AttributeError):  # pragma: no cover - older Pythons
        pass
    for a, b in links:
        parent[root(a)] = root(b)
    groups: dict[int, list[int]] = {}
    for c in parent:
        groups.setdefault(root(c), []).append(c)
    return {c: tuple(groups[root(c)]) for c in parent}


@functools.lru_cache(maxsize=None)
def _case_related_text() -> str:
    return "".join(map(chr, _case_related()))


@functools.lru_cache(maxsize=None)
def _case_related_ranges() -> CharSet:
    return normalize((c, c) for c in _case_related())


@functools.lru_cache(maxsize=None)
def _case_related_highs() -> tuple[int, ...]:
    return tuple(hi for _, hi in _case_related_ranges())


def _subtract(a: CharSet, b: CharSet, b_highs: tuple[int, ...]) -> CharSet:
    """``a`` minus ``b`` (``b_highs``: the upper ends of ``b``'s ranges), in time linear in
    ``a`` plus the ranges of ``b`` that meet it (``a`` is a handful of ranges, ``b`` ~1,400)."""
    out: list[tuple[int, int]] = []
    for lo, hi in a:
        i = bisect_left(b_highs, lo)  # the first range of b that ends at or after lo
        while i < len(b) and b[i][0] <= hi:
            if b[i][0] > lo:
                out.append((lo, b[i][0] - 1))
            lo = max(lo, b[i][1] + 1)
            i += 1
        if lo <= hi:
            out.append((lo, hi))
    return normalize(out)


register_process_cache("case-insensitive character sets", ignore_case.cache_clear)


# ------------------------------------------------------------------ named character sets

#: The named sets of the ``characters=`` filter. Each script set is all of ASCII (what numbers,
#: JSON, keywords and most grammars' structure are written in) plus the script's own blocks, so
#: that generated text cannot wander into other scripts.
NAMED_SETS: dict[str, CharSet] = {
    "ascii": ((0x00, 0x7F),),
    # Latin-1 Supplement, Latin Extended-A and -B, Latin Extended Additional
    "latin": normalize([(0x00, 0x7F), (0xA0, 0x24F), (0x1E00, 0x1EFF)]),
    # Hangul Jamo, CJK punctuation, Compatibility Jamo, Jamo Extended-A/-B, Hangul Syllables
    "hangul": normalize([(0x00, 0x7F), (0x1100, 0x11FF), (0x3000, 0x303F), (0x3130, 0x318F),
                         (0xA960, 0xA97F), (0xAC00, 0xD7A3), (0xD7B0, 0xD7FF)]),
    # CJK punctuation, Hiragana, Katakana, CJK Unified Ideographs (Extension A and B too), the
    # compatibility ideographs, half- and full-width forms
    "cjk": normalize([(0x00, 0x7F), (0x3000, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
                      (0xF900, 0xFAFF), (0xFF00, 0xFFEF), (0x20000, 0x2A6DF)]),
}
