"""``format`` as exact regular languages from the RFCs, as JSON string content.

Invariants:
- Each format is the language its RFC's ABNF defines (ABNF literals are case-insensitive,
  RFC 5234 section 2.3, so ``t``/``z`` in date-time and duration letters may be lower case),
  built from character-level regexes and lowered with JSON escapes (so ``\\u0032`` spells a
  digit wherever a digit may be). Only ASCII digits count as digits.
- Calendar dates are real: month lengths, February 29 only in Gregorian leap years. A leap
  second (``:60``) is valid only where the UTC time it denotes is 23:59:60 (local time minus
  the offset), with any offset.
- Length limits of the RFCs are intersections: hostname at most 253 characters, labels at
  most 63; e-mail local part at most 64 octets (UTF-8 octets for ``idn-email``), domain at
  most 255 (RFC 5321 4.5.3.1).
- :func:`format_content` builds each format in either spelling of :data:`SPELLINGS`: ``any``
  (every JSON escape of every character, :func:`~.lexemes.json_char`) or ``natural`` (the one
  ``json.dumps`` writes, :func:`~.natural.natural_char`): the same character-level language
  lowered with the other spelling of characters, so the natural content is exactly the natural
  spellings of the any content, and is built without rewriting it. Both are kept per process
  (a few dozen expressions; :func:`tokamata.clear_caches` keeps them, and their lexer arena
  counterparts live as long as the arena).
- Where a format is not regular or needs tables we do not have (``regex``, ``idn-hostname``),
  :func:`format_content` raises :class:`Unsupported`. Where we enforce a subset, the subset
  is returned with a note for the report (``hostname``: labels with ``--`` in positions 3-4,
  i.e. IDNA A-labels ``xn--``, are not generated, because their validity depends on Punycode
  decoding and IDNA tables; ``idn-email``: RFC 6531 local parts exactly (any non-ASCII
  character in atoms and quoted strings), but only the ASCII domains and address literals of
  ``email``, since U-labels need IDNA tables).
"""

from __future__ import annotations

import functools
from typing import Callable

from ...automata import charset as cs
from ...automata import boolean
from ...automata import derivatives as d
from ...limits import Limits
from . import lexemes as lx
from .natural import natural_char
from .strings import char_regex, length_content

__all__ = ["format_content", "FORMATS", "SPELLINGS"]

_LIMITS = Limits(max_regex_nodes=200_000, max_pattern_length=400_000)

#: the spelling of one code point set inside a JSON string
Char = Callable[[cs.CharSet], d.Expr]
#: the spellings a format's content is built in
SPELLINGS: dict[str, Char] = {"any": lx.json_char, "natural": natural_char}


def _r(pattern: str, char: Char) -> d.Expr:
    return char_regex(pattern, _LIMITS, char)


def _lit(text: str, char: Char) -> d.Expr:
    return d.concat_all(char(((ord(c), ord(c)),)) for c in text)


def _ci(text: str) -> str:
    """A regex for ``text``, ASCII letters in either case."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in text)


_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_DATE = (r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
         r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
         r"|" + _LEAP_YEAR + r"-02-29)")
_FRACTION = r"(?:\.[0-9]+)?"
_OFFSET = r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_ORDINARY_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]" + _FRACTION + _OFFSET


def _leap_second_time(char: Char) -> d.Expr:
    """``HH:MM:60[.frac]offset`` where local time minus offset is 23:59 UTC."""
    fraction = _r(_FRACTION, char)
    by_hour = []
    for hour in range(24):
        by_minute = []
        for minute in range(60):
            local = hour * 60 + minute
            plus = (local - 1439) % 1440
            minus = (1439 - local) % 1440
            offsets = [_lit("+%02d:%02d" % divmod(plus, 60), char), _lit("-%02d:%02d" % divmod(minus, 60), char)]
            if local == 1439:
                offsets.append(_r("[Zz]", char))
            by_minute.append(d.concat_all((_lit("%02d:60" % minute, char), fraction, d.alternation(*offsets))))
        by_hour.append(d.concat(_lit("%02d:" % hour, char), d.alternation(*by_minute)))
    return d.alternation(*by_hour)


def _time(char: Char) -> d.Expr:
    return d.alternation(_r(_ORDINARY_TIME, char), _leap_second_time(char))


def _date_time(char: Char) -> d.Expr:
    return d.concat_all((_r(_DATE, char), _r("[Tt]", char), _time(char)))


def _duration(char: Char) -> d.Expr:
    n = "[0-9]+"
    second = f"{n}{_ci('S')}"
    minute = f"{n}{_ci('M')}(?:{second})?"
    hour = f"{n}{_ci('H')}(?:{minute})?"
    time = f"{_ci('T')}(?:{hour}|{minute}|{second})"
    day = f"{n}{_ci('D')}"
    week = f"{n}{_ci('W')}"
    month = f"{n}{_ci('M')}(?:{day})?"
    year = f"{n}{_ci('Y')}(?:{month})?"
    date = f"(?:{day}|{month}|{year})(?:{time})?"
    return _r(f"{_ci('P')}(?:{date}|{time}|{week})", char)


_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"


def _ipv6_regex() -> str:
    """RFC 3986 IPv6address (RFC 4291 section 2.2 text forms)."""
    forms = [rf"(?:{_H16}:){{6}}{_LS32}", rf"::(?:{_H16}:){{5}}{_LS32}"]
    for left, right in ((0, 4), (1, 3), (2, 2), (3, 1)):
        forms.append(rf"(?:(?:{_H16}:){{0,{left}}}{_H16})?::(?:{_H16}:){{{right}}}{_LS32}")
    forms.append(rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}")
    forms.append(rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}")
    forms.append(rf"(?:(?:{_H16}:){{0,6}}{_H16})?::")
    return "(?:" + "|".join(forms) + ")"


def _ipv6_smtp_regex() -> str:
    """RFC 5321 IPv6-addr: full or compressed forms with at most 6 (4 with IPv4) groups
    besides ``::``."""
    hexes = lambda k: "" if k == 0 else rf"{_H16}(?::{_H16}){{{k - 1}}}"  # noqa: E731
    forms = [rf"{_H16}(?::{_H16}){{7}}", rf"{_H16}(?::{_H16}){{5}}:{_IPV4}"]
    for left in range(7):
        for right in range(7 - left):
            forms.append(hexes(left) + "::" + hexes(right))
    for left in range(5):
        for right in range(5 - left):
            forms.append(hexes(left) + "::" + (hexes(right) + ":" if right else "") + _IPV4)
    return "(?:" + "|".join(forms) + ")"


def _hostname(char: Char) -> d.Expr:
    label = _r("[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", char)
    reserved = _r("[A-Za-z0-9-]{2}--[A-Za-z0-9-]*", char)  # RFC 5891 4.2.3.1; A-labels need IDNA
    label = boolean.difference(label, reserved, _LIMITS)
    host = d.concat(label, d.repeat(d.concat(_lit(".", char), label), 0, d.UNBOUNDED))
    return boolean.intersection(host, length_content(1, 253, char), limits=_LIMITS)


def _utf8_octets_at_most(limit: int, char: Char) -> d.Expr:
    """Contents of at most ``limit`` octets in UTF-8 (a character takes 1 to 4)."""
    widths = [char(((lo, hi),)) for lo, hi in ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF),
                                                        (0x10000, cs.MAX_CODE_POINT))]
    at_most = [d.EPSILON]
    for k in range(1, limit + 1):
        at_most.append(d.alternation(d.EPSILON, *(d.concat(char, at_most[k - j])
                                                  for j, char in enumerate(widths, 1) if j <= k)))
    return at_most[limit]


def _email(char: Char, international: bool = False) -> d.Expr:
    """RFC 5321 Mailbox; RFC 6531's when ``international`` (UTF8-non-ascii in atext and
    qtextSMTP, the 64-octet local part in UTF-8), with ASCII domains either way."""
    non_ascii = r"\x80-\U0010ffff" if international else ""
    atext = rf"[A-Za-z0-9!#$%&'*+\-/=?^_`{{|}}~{non_ascii}]"
    dot_string = rf"{atext}+(?:\.{atext}+)*"
    quoted = rf'"(?:[\x20\x21\x23-\x5b\x5d-\x7e{non_ascii}]|\\[\x20-\x7e])*"'
    octets = _utf8_octets_at_most(64, char) if international else length_content(1, 64, char)
    local = boolean.intersection(_r(f"(?:{dot_string}|{quoted})", char), octets, limits=_LIMITS)
    domain = boolean.intersection(_r(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                                     r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*", char),
                                  length_content(1, 255, char), limits=_LIMITS)
    literal = _r(rf"\[(?:{_IPV4}|{_ci('IPv6')}:{_ipv6_smtp_regex()})\]", char)
    return d.concat_all((local, _lit("@", char), d.alternation(domain, literal)))


_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_UCSCHAR = (r"\xa0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef\U00010000-\U0001fffd\U00020000-\U0002fffd"
            r"\U00030000-\U0003fffd\U00040000-\U0004fffd\U00050000-\U0005fffd\U00060000-\U0006fffd"
            r"\U00070000-\U0007fffd\U00080000-\U0008fffd\U00090000-\U0009fffd\U000a0000-\U000afffd"
            r"\U000b0000-\U000bfffd\U000c0000-\U000cfffd\U000d0000-\U000dfffd\U000e1000-\U000efffd")
_IPRIVATE = r"\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"


def _uri_regex(reference: bool, iri: bool) -> str:
    """RFC 3986 URI / URI-reference; RFC 3987 IRI / IRI-reference when ``iri``."""
    unreserved = _UNRESERVED + (_UCSCHAR if iri else "")
    pchar = rf"(?:[{unreserved}{_SUB_DELIMS}:@]|{_PCT})"
    segment = f"{pchar}*"
    segment_nz = f"{pchar}+"
    segment_nz_nc = rf"(?:[{unreserved}{_SUB_DELIMS}@]|{_PCT})+"
    query_chars = rf"(?:[{unreserved}{_SUB_DELIMS}:@/?{_IPRIVATE if iri else ''}]|{_PCT})*"
    fragment_chars = rf"(?:[{unreserved}{_SUB_DELIMS}:@/?]|{_PCT})*"
    scheme = r"[A-Za-z][A-Za-z0-9+\-.]*"
    userinfo = rf"(?:[{unreserved}{_SUB_DELIMS}:]|{_PCT})*"
    ip_future = rf"[vV][0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+"
    host = rf"(?:\[(?:{_ipv6_regex()}|{ip_future})\]|(?:[{unreserved}{_SUB_DELIMS}]|{_PCT})*)"
    authority = rf"(?:{userinfo}@)?{host}(?::[0-9]*)?"
    path_abempty = f"(?:/{segment})*"
    path_absolute = f"/(?:{segment_nz}(?:/{segment})*)?"
    path_rootless = f"{segment_nz}(?:/{segment})*"
    path_noscheme = f"{segment_nz_nc}(?:/{segment})*"
    tail = rf"(?:\?{query_chars})?(?:#{fragment_chars})?"
    hier = f"(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|)"
    uri = f"{scheme}:{hier}{tail}"
    if not reference:
        return uri
    relative = f"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme}|){tail}"
    return f"(?:{uri}|{relative})"


def _uri_template(char: Char) -> d.Expr:
    literal = rf"(?:[\x21\x23\x24\x26-\x3b\x3d\x3f-\x5b\x5d\x5f\x61-\x7a\x7e{_UCSCHAR}{_IPRIVATE}]|{_PCT})"
    varchar = rf"(?:[A-Za-z0-9_]|{_PCT})"
    varname = rf"{varchar}(?:\.?{varchar})*"
    varspec = rf"{varname}(?::[1-9][0-9]{{0,3}}|\*)?"
    expression = rf"\{{[+#./;?&=,!@|]?{varspec}(?:,{varspec})*\}}"
    return _r(f"(?:{literal}|{expression})*", char)


_JSON_POINTER = r"(?:/(?:[^~/]|~[01])*)*"

#: each format's content, built with a spelling of characters
FORMATS: dict[str, Callable[[Char], d.Expr]] = {
    "date": lambda char: _r(_DATE, char),
    "time": _time,
    "date-time": _date_time,
    "duration": _duration,
    "email": _email,
    "idn-email": lambda char: _email(char, international=True),
    "hostname": _hostname,
    "ipv4": lambda char: _r(_IPV4, char),
    "ipv6": lambda char: _r(_ipv6_regex(), char),
    "uuid": lambda char: _r(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}", char),
    "uri": lambda char: _r(_uri_regex(False, False), char),
    "uri-reference": lambda char: _r(_uri_regex(True, False), char),
    "iri": lambda char: _r(_uri_regex(False, True), char),
    "iri-reference": lambda char: _r(_uri_regex(True, True), char),
    "uri-template": _uri_template,
    "json-pointer": lambda char: _r(_JSON_POINTER, char),
    "relative-json-pointer": lambda char: _r(rf"(?:0|[1-9][0-9]*)(?:#|{_JSON_POINTER})", char),
}

#: formats we know but cannot enforce exactly: the reason, for Unsupported
NOT_REGULAR = {
    "regex": "format 'regex' (the language of ECMA-262 regexes is not regular)",
    "idn-hostname": "format 'idn-hostname' (needs IDNA tables)",
}

#: what a format leaves out, for the report
SUBSETS = {
    "hostname": "IDNA A-labels (xn--...) and other labels with '--' in positions 3-4 are not generated",
    "idn-email": "internationalized domain names (U-labels) are not generated: domains are ASCII",
}


@functools.lru_cache(maxsize=None)
def format_content(name: str, spelling: str = "any") -> d.Expr:
    """The content language of format ``name`` (a key of :data:`FORMATS`) in ``spelling`` (a
    key of :data:`SPELLINGS`).

    >>> from tokamata.syntax.json_schema.strings import name_accepts
    >>> from tokamata.syntax.json_schema.lexemes import string_of
    >>> [name_accepts(string_of(format_content("date", spelling)), "2024-02-29") for spelling in SPELLINGS]
    [True, True]
    """
    return FORMATS[name](SPELLINGS[spelling])
