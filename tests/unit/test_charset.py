"""Character classes agree with Python's ``re`` over every code point."""

from __future__ import annotations

import functools
import re

import pytest

from tokamata.automata import charset as cs
from tokamata.limits import Limits
from tokamata.syntax.regex import Chars, parse_regex


def matching_set(pattern: str) -> cs.CharSet:
    """What ``re`` matches as one character, over all code points (C-speed scan)."""
    flags = re.match(r"\(\?[aiLmsux]+\)", pattern)
    prefix = flags.group(0) if flags else ""
    compiled = re.compile(f"{prefix}(?:{pattern[len(prefix):]})+")
    return cs.normalize((m.start(), m.end() - 1) for m in compiled.finditer(all_code_points()))


@functools.lru_cache(maxsize=1)
def all_code_points() -> str:
    return "".join(map(chr, range(cs.MAX_CODE_POINT + 1)))


@pytest.mark.parametrize("pattern", [
    r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", r"(?a)\w", r"(?a)\s", r"(?a)\D", r".", r"(?s).",
    r"[^\s\"\\]", r"[\w\-]", r"[^a-z\d]", r"[\u0100-\u024f]",
    r"(?i)k", r"(?i)s", r"(?i)[a-z]", r"(?i)[^a-z]", r"(?i)\w", r"(?i)[\W]", r"(?i)ß", r"(?i)[İı]",
    r"(?i)[\u0100-\u01ff]", r"(?ia)[a-z]", r"(?i)[σς]", r"(?i)Ω", r"(?i)[\U00010400-\U0001044f]",
])
def test_single_character_classes_match_re_everywhere(pattern):
    node = parse_regex(pattern, Limits())
    assert isinstance(node, Chars)
    assert node.charset == matching_set(pattern)


#: one character under IGNORECASE (ignore_case asks re only about the character's case kin):
#: ASCII letters and others, and letters whose case partners lie outside their own pair
CASE_KIN = (["(?i)" + re.escape(c) for c in "aksyzAKSZ0_-."]
            + ["(?i)" + c for c in "ßẞſİıΣσςµÅǅΘϑιͅΩﬀﬅẛṡ\u212a\U00010400\U0001e900"]
            + ["(?ia)" + c for c in "kKsSİſ\u212a"])


@pytest.mark.parametrize("pattern", CASE_KIN, ids=ascii)
def test_one_case_insensitive_character_matches_re_everywhere(pattern):
    node = parse_regex(pattern, Limits())
    assert isinstance(node, Chars)
    assert node.charset == matching_set(pattern)


def test_generated_cased_table_is_res_own_case_mapping():
    """unicode_tables.TABLES["cased"] (what spares the first case-insensitive compile its scan of
    every code point) is exactly that scan, on this Python's Unicode version."""
    import unicodedata

    from tokamata.automata import unicode_tables

    if unicode_tables.UNICODE_VERSION != unicodedata.unidata_version:
        pytest.skip("the generated tables are of another Unicode version (charset scans instead)")
    table = [c for lo, hi in unicode_tables.TABLES["cased"] for c in range(lo, hi + 1)]
    assert table == cs.cased_code_points()


def test_set_operations():
    a = cs.normalize([(5, 10), (1, 3), (4, 4), (20, 30)])
    assert a == ((1, 10), (20, 30))
    assert cs.complement(cs.complement(a)) == a
    assert cs.intersect(a, 8, 25) == ((8, 10), (20, 25))
    assert cs.contains(a, 4) and not cs.contains(a, 15)
    assert cs.size(a) == 21
