"""The JSON Schema benchmark's workload: MaskBench schemas, their instances, the sample.

Holds ``SchemaCase`` (one MaskBench record: schema, tests, the tokens of each test),
``load_cases`` (reads ../shared/data/jsonschemabench/maskbench/*.jsonl and draws the sample),
``published_llguidance`` (llguidance's published per-schema results) and ``error_key`` (a short,
stable name for an engine's compile error, to count errors by kind).

Invariants

* A test's text is ``json.dumps(data, separators=(",", ":"), ensure_ascii=False,
  allow_nan=False)``: compact, what llguidance's own MaskBench runner feeds (serde_json's
  ``to_string``); every engine sees the same text and the same tokens (the Llama 3
  ``tokenizer.json`` through ``tokenizers``, no special tokens). A test whose data cannot be
  serialized as JSON (a number that overflowed to infinity) is dropped and counted.
* The sample is stratified per file: ``ceil(fraction * n)`` schemas of a file of n (at least
  ``min(minimum, n)``), drawn with a seeded ``random.Random`` and kept in file order; so every
  run with the same options measures the same schemas. ``weight`` = n / sampled scales a
  file's counts to estimates for the whole file.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from dataclasses import dataclass, field
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
MASKBENCH_DIR = os.path.join(DATA, "jsonschemabench", "maskbench")
PUBLISHED = os.path.join(DATA, "llguidance-baselines", "expected_maskbench.json")

#: llguidance's published count of passing MaskBench schemas (expected_maskbench.json)
PUBLISHED_PASSING = 9489


@dataclass
class Test:
    valid: bool
    text: str
    tokens: list[int] = field(default_factory=list)


@dataclass
class SchemaCase:
    id: str
    file: str  # the .jsonl file's stem (the split)
    schema: Any
    tests: list[Test]
    features: list[str]
    dropped: int = 0  # tests whose data is not serializable JSON (NaN / Infinity)
    schema_text: str = ""  # what every engine compiles: json.dumps(schema, ensure_ascii=False)


@dataclass
class FileInfo:
    name: str
    total: int  # schemas in the file
    sampled: int

    @property
    def weight(self) -> float:
        return self.total / self.sampled if self.sampled else 0.0


class NoData(Exception):
    """MaskBench is not available (the message says where it was looked for)."""


def serialize(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def files_available(directory: str = MASKBENCH_DIR) -> list[str]:
    if not os.path.isdir(directory):
        raise NoData(f"MaskBench not found at {directory} (see ../shared/README.md)")
    return sorted(f[:-6] for f in os.listdir(directory) if f.endswith(".jsonl"))


def _case(record: dict, file: str) -> SchemaCase:
    tests, dropped = [], 0
    for t in record.get("tests", []):
        try:
            tests.append(Test(bool(t["valid"]), serialize(t["data"])))
        except ValueError:
            dropped += 1
    return SchemaCase(record["id"], file, record["schema"], tests, record.get("meta", {}).get("features", []), dropped,
                      json.dumps(record["schema"], ensure_ascii=False))


def load_cases(files: list[str], fraction: float, minimum: int, limit: int | None, seed: int = 0,
               directory: str = MASKBENCH_DIR) -> tuple[list[SchemaCase], list[FileInfo]]:
    """The sample: per file, ``ceil(fraction * n)`` schemas (at least ``min(minimum, n)``;
    ``fraction >= 1`` takes all), then at most ``limit`` of them."""
    cases: list[SchemaCase] = []
    infos: list[FileInfo] = []
    for name in files:
        path = os.path.join(directory, name + ".jsonl")
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f.read().split("\n") if line.strip()]  # not splitlines(): U+2028 in strings
        n = len(lines)
        k = n if fraction >= 1 else min(n, max(math.ceil(fraction * n), minimum))
        chosen = list(range(n)) if k == n else random.Random(f"{seed}/{name}").sample(range(n), k)
        if limit is not None:
            chosen = chosen[:limit]
        chosen.sort()
        infos.append(FileInfo(name, n, len(chosen)))
        cases += [_case(json.loads(lines[i]), name) for i in chosen]
    return cases, infos


def tokenize(path: str, cases: list[SchemaCase]) -> None:
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(path)
    tests = [t for c in cases for t in c.tests]
    for t, e in zip(tests, tk.encode_batch([t.text for t in tests], add_special_tokens=False)):
        t.tokens = e.ids


def published_llguidance(path: str = PUBLISHED) -> dict[str, str]:
    """id -> "pass" | "json_error" | "validation_error" | "parser_error" (llguidance's CI
    baseline, keyed by MaskBench file name)."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    out = {}
    for name, r in raw.items():
        key = name[:-5] if name.endswith(".json") else name
        out[key] = next((k for k in ("json_error", "parser_error", "validation_error") if k in r), "pass")
    return out


_POINTER = re.compile(r" at (?:#?/[^\s:,;)]*|/)")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_NUMBER = re.compile(r"\b\d+\b")


def error_key(engine: str, exc_class: str, message: str, feature: str | None = None) -> str:
    """A short name for a compile error, stable across schemas: pointers, quoted values and
    numbers removed. tokamata's ``Unsupported`` is keyed by its keyword (and, for patterns, the
    regex feature), ``LimitExceeded`` by the limit."""
    if engine == "tokamata" and exc_class == "Unsupported" and feature:
        head, _, rest = feature.partition(" at ")
        reason = rest.split(": ", 1)[1] if ": " in rest else ""
        if head.startswith("pattern"):  # "pattern '...' at /p: <regex feature>"
            return "Unsupported: pattern: " + _NUMBER.sub("N", rest.rsplit(": ", 1)[-1])[:60]
        if head == "format":  # keep the format's name
            return "Unsupported: format: " + reason.split(" (")[0][:60]
        reason = _NUMBER.sub("N", _QUOTED.sub("…", reason)).strip()
        return "Unsupported: " + head[:40] + (f": {reason[:50]}" if reason else "")
    if engine == "tokamata" and exc_class == "LimitExceeded":
        return "LimitExceeded: " + (feature or message)[:60]
    text = _POINTER.sub("", message.splitlines()[0] if message else "")
    text = _NUMBER.sub("N", _QUOTED.sub(_short_quote, text)).strip()
    return f"{exc_class}: {text[:90]}"


def _short_quote(m: re.Match) -> str:
    """Short quoted words (keyword and format names) stay, longer quoted values go."""
    return m.group(0) if len(m.group(0)) <= 24 else "…"
