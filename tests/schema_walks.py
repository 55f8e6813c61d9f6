"""Random walks through a JSON Schema constraint's masks, judged by ``jsonschema``.

Used by tests/property/test_json_schema_walks.py and by benchmarks/bench_json_schema.py
(``--walks``). A walk starts from a fresh matcher and takes one allowed token per step until
it takes EOS; the text it spelled must then be JSON that ``jsonschema`` validates against the
schema. A walk cut by its step cap is not judged, nor one stopped by ``LimitExceeded``.

- Picking (``Walker.pick``): before the walk's *budget* (drawn per walk, so walks stop at many
  depths) a token is drawn by the class of its first byte (uniform over the classes present:
  each ASCII punctuation byte, letters, digits, whitespace, non-ASCII), then within the class
  uniformly half the time, else weighted by 1/len^2 (short tokens); EOS is taken with
  probability ``eos_rate`` when allowed. From the budget on the walk heads for the end: EOS
  when allowed, else (inside a string) a token starting with ``"``, (outside) one starting
  with ``]``/``}``, else with ``"``, else a short token.
- Judging (``judge``): the bytes must be UTF-8, then JSON (no NaN/Infinity), then valid
  against the schema. A number with a fraction or exponent becomes a Python float, except an
  integral one of magnitude >= 2**53 (up to 4,000 digits), which becomes the exact int: a float
  would round it, or overflow to infinity, and change ``multipleOf`` or ``integer`` verdicts
  (in draft 4, where 1.0 is not an integer, this one case is judged as an integer).
  ``multipleOf`` is judged on the decimals the JSON spells (``609.82`` is a multiple of
  ``0.01``, which float division denies). Objects with a repeated key are reported as ``duplicate-key`` and not
  judged further: tokamata does not enforce unique keys (documented in
  ``tokamata.syntax.json_schema``) and Python's ``json`` would silently keep the last value.
- Validation: ``jsonschema.validators.validator_for(schema)`` (``$schema`` decides, default
  2020-12, tokamata's default too; a root without ``$schema`` whose embedded declarations
  agree on a draft is validated in that draft, as tokamata reads it), formats asserted with the validator's ``FORMAT_CHECKER``
  (formats whose checker needs a missing optional package pass unchecked), and a reference
  registry that never goes to the network (remote references fail to resolve). ``pattern``
  and ``patternProperties`` match with ECMA-262's ``\\d``, ``\\w``, ``\\s`` (the
  specification's regex dialect; ``jsonschema`` would use Python's, whose ``\\s`` differs).

Invariants: every walk is a pure function of (constraint, vocabulary, seed, caps); nothing
here touches the network.
"""

from __future__ import annotations

import json
import math
import random
from decimal import Decimal
from fractions import Fraction
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: verdicts of ``judge``; only "valid" counts as sound, "duplicate-key" is not judged
VERDICTS = ("valid", "not-utf8", "not-json", "duplicate-key", "schema-invalid", "validator-error")


@dataclass
class Walk:
    status: str  # "eos" (ended by EOS), "cut" (step cap reached), "dead-end" (nothing allowed),
    #              "limit" (a matcher call raised LimitExceeded: compile is lazy, so a blow-up
    #              surfaces where decoding reaches it, as docs/engine.md says)
    tokens: list[int] = field(default_factory=list)  # EOS not included
    data: bytes = b""
    note: str = ""


class Walker:
    """Random walks over one vocabulary (its per-token tables are computed once)."""

    def __init__(self, vocab: Any) -> None:
        token_bytes = vocab.token_bytes
        self.token_bytes = token_bytes
        self.eos = np.array(sorted(vocab.eos_token_ids), dtype=np.int32)
        n = len(token_bytes)
        self.lengths = np.array([len(b) if b else 0 for b in token_bytes], dtype=np.float64)
        classes = np.full(n, 300, dtype=np.int32)  # 300: special / empty
        byte_class = np.arange(256, dtype=np.int32)
        for b in range(256):
            ch = chr(b)
            if b >= 0x80:
                byte_class[b] = 259
            elif ch.isalpha():
                byte_class[b] = 256
            elif ch.isdigit():
                byte_class[b] = 257
            elif ch.isspace():
                byte_class[b] = 258
        for i, b in enumerate(token_bytes):
            if b:
                classes[i] = byte_class[b[0]]
        self.classes = classes
        self.closers = self._ids_starting(b"]}")
        self.quotes = self._ids_starting(b'"')

    def _ids_starting(self, first: bytes) -> np.ndarray:
        return np.array([i for i, b in enumerate(self.token_bytes) if b and b[0] in first and len(b) <= 2],
                        dtype=np.int32)

    def _short(self, rng: random.Random, allowed: np.ndarray) -> int:
        cumulative = np.cumsum(1.0 / np.maximum(self.lengths[allowed], 1.0) ** 2)
        index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
        return int(allowed[min(index, len(allowed) - 1)])

    def pick(self, rng: random.Random, allowed: np.ndarray, closing: bool, in_string: bool = False) -> int:
        """One token of ``allowed`` (sorted ids, EOS excluded); when closing, a quote first inside
        a string, a closing bracket first outside."""
        if closing:
            for wanted in ((self.quotes,) if in_string else (self.closers, self.quotes)):
                hits = np.intersect1d(allowed, wanted, assume_unique=True)
                if len(hits):
                    return int(hits[rng.randrange(len(hits))])
            return self._short(rng, allowed)
        kinds = self.classes[allowed]
        choices = np.unique(kinds)
        allowed = allowed[kinds == choices[rng.randrange(len(choices))]]
        if rng.random() < 0.5:
            return int(allowed[rng.randrange(len(allowed))])
        return self._short(rng, allowed)

    def walk(self, constraint: Any, seed: int, max_steps: int = 400, max_budget: int = 80,
             eos_rate: float = 0.3) -> Walk:
        rng = random.Random(seed)
        budget = rng.randint(0, max_budget)
        from tokamata import LimitExceeded

        m = constraint.matcher()
        w = Walk("cut")
        in_string = escaped = False
        for step in range(max_steps):
            try:
                allowed = m.allowed_tokens()
            except LimitExceeded as e:
                w.status, w.note = "limit", str(e)
                break
            is_eos = np.isin(allowed, self.eos, assume_unique=True)
            eos_allowed = bool(is_eos.any())
            others = allowed[~is_eos]
            if eos_allowed and (step >= budget or rng.random() < eos_rate or not len(others)):
                w.status = "eos"
                break
            if not len(others):
                w.status = "dead-end"
                break
            t = self.pick(rng, others, step >= budget, in_string)
            if not m.consume(t):
                raise AssertionError(f"consume({t}) refused a token the mask allowed (after {w.tokens})")
            w.tokens.append(t)
            for byte in self.token_bytes[t]:  # where we are: inside a JSON string or not
                if escaped:
                    escaped = False
                elif in_string and byte == 0x5C:
                    escaped = True
                elif byte == 0x22:
                    in_string = not in_string
        w.data = b"".join(self.token_bytes[t] for t in w.tokens)
        return w


def _refuse_remote(uri: str):
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)


def validator(schema: Any) -> Any:
    """A ``jsonschema`` validator for ``schema`` (parsed, or its JSON text): its draft from
    ``$schema`` (else the draft its embedded declarations agree on, else 2020-12), formats
    asserted, no network. Its numbers are read as instances are (:func:`_number`): an integral
    one of magnitude >= 2**53 is the exact int, so ``enum: [1e308]`` is 10**308, as JSON
    Schema means, not the float nearest to it (which no instance spelled ``1`` and 308 zeros
    would equal)."""
    import referencing

    schema = json.loads(schema, parse_float=_number) if isinstance(schema, (str, bytes)) else _exact_numbers(schema)
    from jsonschema.validators import validator_for
    from jsonschema_specifications import REGISTRY

    cls = validator_for(schema)
    if isinstance(schema, dict) and "$schema" not in schema:  # the draft tokamata reads it in
        import jsonschema
        from tokamata.errors import TokamataError
        from tokamata.syntax.json_schema.refs import Document
        try:
            draft = Document(schema).draft
        except TokamataError:
            draft = 2020
        cls = {4: jsonschema.Draft4Validator, 6: jsonschema.Draft6Validator, 7: jsonschema.Draft7Validator,
               2019: jsonschema.Draft201909Validator}.get(draft, cls)
    registry = REGISTRY.combine(referencing.Registry(retrieve=_refuse_remote))
    cls = _with_ecma_patterns(cls)
    return cls(schema, format_checker=cls.FORMAT_CHECKER, registry=registry)


#: ECMA-262's WhiteSpace and LineTerminator code points (what ``\s`` matches in a JSON Schema
#: pattern), from the specification: TAB, VT, FF, SP, NBSP, ZWNBSP (U+FEFF), the Zs category,
#: LF, CR, LS, PS. Python's ``\s`` differs: it has U+001C..U+001F and U+0085, not U+FEFF.
_ECMA_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
#: what ECMA-262's ``.`` does not match (no ``s`` flag); Python's ``.`` only skips LF
_ECMA_LINE_TERMINATORS = "\n\r\u2028\u2029"


def _ecma_regex(pattern: str) -> Any:
    r"""``pattern`` compiled with ECMA-262's meaning of ``\d``, ``\w``, ``\b`` (ASCII, through
    ``re.ASCII``), ``\s``, ``\S``, ``.`` and ``$`` (spelled out), which JSON Schema specifies
    and Python's ``re`` reads differently; any other construct keeps Python's reading."""
    import re

    out = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            escape = pattern[i + 1]
            if escape == "s":
                out.append(_ECMA_SPACE if in_class else f"[{_ECMA_SPACE}]")
            elif escape == "S" and not in_class:
                out.append(f"[^{_ECMA_SPACE}]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1:i + 2] == "]":  # Python reads a leading "]" as a member: so does this scan
                out.append("\\]")
                i += 1
        elif c == "]" and in_class:
            in_class = False
            out.append(c)
        elif c == "." and not in_class:
            out.append(f"[^{_ECMA_LINE_TERMINATORS}]")
        elif c == "$" and not in_class:
            out.append("\\Z")  # the end only: Python's $ also matches before a final newline
        else:
            out.append(c)
        i += 1
    return re.compile("".join(out), re.ASCII)


def _with_ecma_patterns(cls: Any) -> Any:
    """``cls`` with ``pattern`` and ``patternProperties`` matched as ECMA-262 regexes (see
    :func:`_ecma_regex`), as the specification asks (``jsonschema`` uses Python's ``re``)."""
    import functools

    from jsonschema import ValidationError
    from jsonschema.validators import extend

    compiled = functools.lru_cache(maxsize=1024)(_ecma_regex)

    def pattern(validator: Any, value: str, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string") and not compiled(value).search(instance):
            yield ValidationError(f"{instance!r} does not match {value!r}")

    def pattern_properties(validator: Any, value: dict, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        for regex, subschema in value.items():
            for key, item in instance.items():
                if compiled(regex).search(key):
                    yield from validator.descend(item, subschema, path=key, schema_path=regex)

    def multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "number") and not _exact_multiple(instance, divisor):
            yield ValidationError(f"{instance!r} is not a multiple of {divisor!r}")

    return extend(cls, {"pattern": pattern, "patternProperties": pattern_properties, "multipleOf": multiple_of})


def _exact_multiple(instance: Any, divisor: Any) -> bool:
    """Whether ``instance`` is an integer multiple of ``divisor``, both read as the decimals
    their JSON spells (:class:`_Lexeme` keeps it; ints and Decimals are exact), not as the nearest floats
    (``609.82 / 0.01`` is not an integer in floats). Exponents past 10,000 (fractions of
    unbounded size) fall back to float arithmetic, as ``jsonschema`` does."""
    def exact(x: Any) -> Fraction | None:
        if isinstance(x, Decimal):  # (a caller's exact numbers)
            return Fraction(x) if x.is_finite() and abs(x.adjusted()) <= 10_000 else None
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            return None
        text = x.lexeme if isinstance(x, _Lexeme) else repr(x) if isinstance(x, float) else None
        if text is None:
            return Fraction(x)
        mantissa, _, exponent = text.lower().partition("e")
        if exponent and abs(int(exponent)) > 10_000:
            return None
        return Fraction(text)

    a, b = exact(instance), exact(divisor)
    if a is None or b is None or b == 0:
        quotient = float(instance) / float(divisor)
        return math.isfinite(quotient) and quotient == int(quotient)
    return (a / b).denominator == 1


class _DuplicateKey(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _DuplicateKey(next(k for i, (k, _) in enumerate(pairs) if k in dict(pairs[:i])))
    return d


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _exact_numbers(value: Any) -> Any:
    """``value`` with its floats read as :func:`_number` reads their shortest spelling."""
    if isinstance(value, float):
        return _number(repr(value))
    if isinstance(value, dict):
        return {key: _exact_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_exact_numbers(item) for item in value]
    return value


class _Lexeme(float):
    """A JSON number read as a float that remembers how it was spelled (for exact
    ``multipleOf`` verdicts: :func:`_exact_multiple`)."""

    __slots__ = ("lexeme",)

    def __new__(cls, lexeme: str) -> "_Lexeme":
        value = super().__new__(cls, lexeme)
        value.lexeme = lexeme
        return value


def _number(lexeme: str) -> float | int:
    value = float(lexeme)
    if math.isinf(value) or (value.is_integer() and abs(value) >= 2**53):
        try:
            exact = Decimal(lexeme)
            if exact.adjusted() < 4000 and exact == exact.to_integral_value():
                return int(exact)
        except ArithmeticError:  # an exponent beyond Decimal's range: leave the float
            pass
    return _Lexeme(lexeme)


def judge(data: bytes, check: Any) -> tuple[str, str]:
    """(verdict, detail) for the bytes of an ended walk; ``check`` from :func:`validator`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return "not-utf8", str(e)
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant, parse_float=_number)
    except _DuplicateKey as e:
        return "duplicate-key", f"key {e.args[0]!r}"
    except ValueError as e:
        return "not-json", str(e)
    try:
        error = next(iter(check.iter_errors(value)), None)
    except Exception as e:  # noqa: BLE001 - a validator crash (e.g. an unresolvable $ref)
        return "validator-error", f"{type(e).__name__}: {e}"
    if error is not None:
        return "schema-invalid", f"{error.message} at {error.json_path}"
    return "valid", ""
