"""Fuzzing the matcher API: random programs of ``consume`` / ``consume_many`` / ``rollback`` /
``copy`` / ``fill_bitmask`` (with and without ``max_tokens``) / ``fill_bitmasks`` /
``allowed_tokens`` calls with random ids
(allowed ones, refused ones, out of range, negative, huge, bools, floats, numpy scalars and
arrays, ``None``), random bitmask buffers (wrong dtype, rank, width, order, read-only, not
arrays) and random rows, on one constraint per front end (regex, Lark, GBNF, JSON, JSON
Schema) over ``fuzz_checks.VOCAB``.

Checked for every call, in a capped worker process (``fuzz_harness``), against a model kept
beside the matchers (the mask seen at each history length):
- a call returns or raises :class:`tokamata.InvalidArgument` (a limit: ``LimitExceeded``);
  a call that raised changed nothing (same history length, same mask);
- ``fill_bitmask`` / ``fill_bitmasks`` into a good buffer set exactly ``allowed_tokens()``
  in the row asked for, and no other row changes;
- a token the mask allows is consumed; one it does not allow is refused (never a matcher
  that allows a token that ``consume`` then refuses); ``consume_many`` reports how many it
  consumed, the prefix the masks allow;
- a budget row (``max_tokens``: an int in [1, 2**31 - 1), else InvalidArgument) is a subset
  of the mask, not empty from ``budget_needed()`` on;
- ``rollback(n)`` brings back the mask seen ``n`` tokens earlier; a copy has its original's
  mask and history and moves independently.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tokamata
from fuzz_checks import LIMITS, VOCAB
from fuzz_harness import fuzz_settings
from tokamata.bitmask import unpack_bitmask

# ------------------------------------------------------------------ the worker side

_CONSTRAINTS: list[tokamata.Constraint] = []


def constraints() -> list[tokamata.Constraint]:
    if not _CONSTRAINTS:
        _CONSTRAINTS.extend([
            tokamata.compile_regex(r"(ab|é|[0-9]{1,3}\.)+c?", VOCAB, LIMITS),
            tokamata.compile_grammar('start: item+\nitem: "a" | "[" start? "]" | /[0-9]+/ | "yes" <|eot_id|>\n'
                                     '%ignore " "', VOCAB, limits=LIMITS),
            tokamata.compile_gbnf('root ::= ("x" [a-c]* | "(" root ")")+ <[274]>?', VOCAB, limits=LIMITS),
            tokamata.compile_json(VOCAB, whitespace="flexible", limits=LIMITS),
            tokamata.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"},
                                                                           "b": {"enum": ["x", [1, 2]]}},
                                          "required": ["a"]}, VOCAB, limits=LIMITS),
        ])
    return _CONSTRAINTS


def _allowed(m: tokamata.Matcher) -> list[int]:
    return m.allowed_tokens().tolist()


def _odd_id(kind: str, rng: random.Random, size: int) -> Any:
    return {"negative": -1, "size": size, "int32": 2**31, "int64": 2**63, "bool": True, "float": 97.0,
            "float_half": 97.5, "np_int": np.int64(rng.randrange(size)), "np_uint8": np.uint8(97),
            "np_0d": np.array(rng.randrange(size)), "np_0d_float": np.array(97.5), "np_1d": np.array([97]),
            "none": None, "str": "a", "bytes": b"a", "big_negative": -2**70}[kind]


def _buffer(spec: tuple, size: int) -> tuple[Any, bool]:
    """A bitmask buffer from ``spec``, and whether it is a good one."""
    kind, batch, extra = spec
    width = (size + 31) // 32 + extra
    if kind in ("good", "wide"):
        return np.zeros((batch, width), dtype=np.int32), width >= (size + 31) // 32
    return {"int64": lambda: np.zeros((batch, width), dtype=np.int64),
            "uint32": lambda: np.zeros((batch, width), dtype=np.uint32),
            "1d": lambda: np.zeros(width, dtype=np.int32),
            "3d": lambda: np.zeros((batch, 1, width), dtype=np.int32),
            "fortran": lambda: np.zeros((max(batch, 2), width), dtype=np.int32, order="F"),
            "strided": lambda: np.zeros((batch, 2 * width), dtype=np.int32)[:, ::2],
            "readonly": lambda: np.lib.stride_tricks.as_strided(np.zeros((batch, width), dtype=np.int32),
                                                                writeable=False),
            "list": lambda: [[0] * width] * batch,
            "empty": lambda: np.zeros((0, width), dtype=np.int32)}[kind](), False


def run_input(value: tuple[int, list[tuple], int]) -> str:
    which, program, seed = value
    constraint = constraints()[which]
    size = constraint.vocab_size
    rng = random.Random(seed)
    matchers = [constraint.matcher()]
    history: list[list[list[int]]] = [[_allowed(matchers[0])]]  # per matcher: the mask at each length
    current = 0
    calls = 0
    for op in program:
        m = matchers[current]
        masks = history[current]
        before = (m.num_consumed, _allowed(m))
        assert before[0] == len(masks) - 1 and before[1] == masks[-1], "the model lost track"
        name = op[0]
        try:
            calls += 1
            if name == "consume_allowed":
                if not before[1] or m.is_terminated():
                    continue
                token = before[1][op[1] % len(before[1])]
                assert m.consume(token), f"token {token} is allowed but consume refused it"
                masks.append(_allowed(m))
            elif name == "consume":
                token = op[1] % size
                expected = token in before[1]
                assert m.consume(token) == expected, f"consume({token}) disagrees with the mask ({expected})"
                if expected:
                    masks.append(_allowed(m))
            elif name == "consume_odd":
                m.consume(_odd_id(op[1], rng, size))
                if m.num_consumed != before[0]:  # (an odd id that is a valid int: np_int, np_0d, np_uint8)
                    masks.append(_allowed(m))
            elif name == "consume_many":
                tokens = []
                probe = m.copy()
                for pick in op[1]:
                    allowed = _allowed(probe)
                    token = allowed[pick % len(allowed)] if allowed and pick >= 0 else (-pick) % size
                    tokens.append(token)
                    probe.consume(token)
                count = m.consume_many(tokens)
                assert 0 <= count <= len(tokens) and m.num_consumed == before[0] + count
                # the masks along the consumed prefix: roll back and redo one token at a time
                m.rollback(count)
                assert _allowed(m) == masks[-1]
                for t in tokens[:count]:
                    assert m.consume(t), f"consume_many took {t} that consume refuses"
                    masks.append(_allowed(m))
                if count < len(tokens):
                    assert tokens[count] not in masks[-1], "consume_many stopped at an allowed token"
            elif name == "consume_many_odd":
                m.consume_many([0, _odd_id(op[1], rng, size)] if op[1] != "none" else None)  # type: ignore[arg-type]
                raise AssertionError(f"consume_many with {op[1]} was accepted")
            elif name == "rollback":
                n = op[1] % (len(masks) + 1) if op[1] >= 0 else op[1]
                m.rollback(n)
                del masks[len(masks) - n:]
                assert _allowed(m) == masks[-1], f"rollback({n}) did not restore the mask"
            elif name == "rollback_odd":
                m.rollback({"float": 1.0, "bool": True, "none": None, "huge": 2**40}[op[1]])
                raise AssertionError(f"rollback({op[1]}) was accepted")
            elif name == "copy":
                matchers.append(m.copy())
                history.append([list(x) for x in masks])
                current = len(matchers) - 1
                assert _allowed(matchers[current]) == masks[-1]
            elif name == "switch":
                current = op[1] % len(matchers)
            elif name == "fill":
                buffer, good = _buffer(op[1], size)
                row = op[2]
                if isinstance(buffer, np.ndarray) and buffer.ndim == 2 and buffer.flags.writeable:
                    buffer[:] = 0x5A5A5A5A
                m.fill_bitmask(buffer, row)
                assert good and 0 <= row < len(buffer), f"fill_bitmask into {op[1]} row {row} was accepted"
                _check_rows(buffer, {row: m}, size)
            elif name == "fill_many":
                buffer, good = _buffer(op[1], size)
                chosen = [matchers[i % len(matchers)] for i in op[2]]
                rows = op[3]
                if isinstance(buffer, np.ndarray) and buffer.ndim == 2 and buffer.flags.writeable:
                    buffer[:] = 0x5A5A5A5A
                tokamata.fill_bitmasks(chosen, buffer, rows, threads=op[4])
                # (with no matcher, no vocabulary says how wide a row must be)
                assert good or (not chosen and op[1][0] in ("wide", "empty")), f"fill_bitmasks into {op[1]} was accepted"
                rows = list(range(len(chosen))) if rows is None else rows
                _check_rows(buffer, dict(zip(rows, chosen)), size)
            elif name == "fill_budget":
                buffer, good = _buffer(op[1], size)
                row, budget = op[2], op[3]
                if isinstance(buffer, np.ndarray) and buffer.ndim == 2 and buffer.flags.writeable:
                    buffer[:] = 0x5A5A5A5A
                m.fill_bitmask(buffer, row, max_tokens=budget)
                assert good and 0 <= row < len(buffer), f"fill_bitmask into {op[1]} row {row} was accepted"
                assert isinstance(budget, (int, np.integer)) and not isinstance(budget, bool) and 1 <= budget < 2**31 - 1, \
                    f"max_tokens={budget!r} was accepted"
                bits = set(np.flatnonzero(unpack_bitmask(buffer[row:row + 1], size)[0]).tolist())
                if m.is_terminated():
                    assert bits <= set(m.constraint.vocab.eos_token_ids)
                else:
                    assert bits <= set(before[1]), f"a budget row sets {sorted(bits - set(before[1]))[:8]}"
                    if budget >= m.budget_needed():
                        assert bits, f"an empty row for {budget} >= budget_needed() {m.budget_needed()}"
                for other in range(len(buffer)):
                    assert other == row or (buffer[other] == 0x5A5A5A5A).all(), f"row {other} was written"
            else:
                raise AssertionError(f"unknown operation {name}")
        except (tokamata.InvalidArgument, tokamata.LimitExceeded):
            after = (m.num_consumed, _allowed(m))
            assert after == before, f"{op} raised but changed the matcher: {before[0]} -> {after[0]}"
    return f"ran {calls} calls on {len(matchers)} matchers"


def _check_rows(buffer: np.ndarray, rows: dict[int, tokamata.Matcher], size: int) -> None:
    for row in range(len(buffer)):
        if row in rows:
            m = rows[row]
            bits = np.flatnonzero(unpack_bitmask(buffer[row:row + 1], size)[0]).tolist()
            expected = [e for e in m.constraint.vocab.eos_token_ids] if m.is_terminated() else _allowed(m)
            if m.is_terminated():
                assert set(bits) <= set(expected), f"row {row} of a terminated matcher sets {bits[:8]}"
            else:
                assert bits == expected, f"row {row} sets {sorted(set(bits) ^ set(expected))[:8]} wrongly"
        else:
            assert (buffer[row] == 0x5A5A5A5A).all(), f"row {row} was written but not asked for"


# ------------------------------------------------------------------ inputs

_ODD_IDS = ["negative", "size", "int32", "int64", "bool", "float", "float_half", "np_int", "np_uint8", "np_0d",
            "np_0d_float", "np_1d", "none", "str", "bytes", "big_negative"]
_BUFFERS = st.one_of(
    st.tuples(st.just("good"), st.integers(1, 3), st.just(0)),
    st.tuples(st.just("wide"), st.integers(1, 3), st.integers(-2, 2)),
    st.tuples(st.sampled_from(["int64", "uint32", "1d", "3d", "fortran", "strided", "readonly", "list", "empty"]),
              st.integers(1, 3), st.just(0)))
_ROWS = st.one_of(st.integers(0, 3), st.sampled_from([-1, 2**31, 2**63]))

operations = st.one_of(
    st.tuples(st.just("consume_allowed"), st.integers(0, 1000)),
    st.tuples(st.just("consume_allowed"), st.integers(0, 1000)),
    st.tuples(st.just("consume"), st.integers(0, 10**6)),
    st.tuples(st.just("consume_odd"), st.sampled_from(_ODD_IDS)),
    st.tuples(st.just("consume_many"), st.lists(st.integers(-400, 1000), max_size=6)),
    st.tuples(st.just("consume_many_odd"), st.sampled_from(["negative", "size", "int64", "bool", "float", "none",
                                                             "str", "np_1d", "np_0d_float"])),
    st.tuples(st.just("rollback"), st.integers(-2, 10)),
    st.tuples(st.just("rollback_odd"), st.sampled_from(["float", "bool", "none", "huge"])),
    st.tuples(st.just("copy")),
    st.tuples(st.just("switch"), st.integers(0, 10)),
    st.tuples(st.just("fill"), _BUFFERS, _ROWS),
    st.tuples(st.just("fill_budget"), _BUFFERS, _ROWS,
              st.one_of(st.integers(-1, 30), st.sampled_from([True, 1.5, 2**31, 2**31 - 1, np.int64(5), "3"]))),
    st.tuples(st.just("fill_many"), _BUFFERS, st.lists(st.integers(0, 10), max_size=3),
              st.one_of(st.none(), st.lists(st.integers(0, 2), max_size=3, unique=True)), st.integers(1, 3)),
)

# ------------------------------------------------------------------ tests


@fuzz_settings(150)
@given(which=st.integers(0, 4), program=st.lists(operations, min_size=4, max_size=40), seed=st.integers(0, 2**32 - 1))
def test_random_programs(worker, which: int, program: list[tuple], seed: int) -> None:
    worker.run((which, program, seed))
