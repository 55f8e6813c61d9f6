"""``apply_bitmask`` on CPU logits (issue 20, per-token path): the C++ masking of numpy and
torch CPU logits (float16, float32, float64, bfloat16) against an oracle written here from
the bitmask's definition (bit ``j % 32`` of word ``j // 32``; columns at or past ``32 * W``
disallowed), over hypothesis-chosen shapes (widths not multiples of 32, bitmasks narrower and
wider than the logits), random masks and strided rows; layouts the core does not take
(strided columns, autograd) go through the torch/numpy ops with the same result.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokamata


def expected(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The oracle: a copy of ``logits`` (2-D) with the disallowed columns at -inf."""
    rows, cols = logits.shape
    out = logits.copy()
    for r in range(rows):
        for j in range(cols):
            word = j // 32
            allowed = word < mask.shape[1] and (int(mask[r, word]) >> (j % 32)) & 1
            if not allowed:
                out[r, j] = -np.inf
    return out


def random_mask(rng: np.random.Generator, rows: int, words: int, style: str) -> np.ndarray:
    if style == "dense":
        bits = rng.integers(0, 2**32, size=(rows, words), dtype=np.uint64)
    else:  # words that are all ones, all zeros or mixed, as real masks have
        bits = rng.choice(np.array([0, 0xFFFFFFFF, 0x80000001, 0x0000FFFF], dtype=np.uint64), size=(rows, words))
        mixed = rng.random((rows, words)) < 0.2
        bits[mixed] = rng.integers(0, 2**32, size=int(mixed.sum()), dtype=np.uint64)
    return bits.astype(np.uint32).view(np.int32)


SHAPES = st.tuples(st.integers(1, 4), st.integers(1, 300), st.integers(-3, 3), st.integers(0, 2**32 - 1),
                   st.sampled_from(["dense", "blocks"]))


def case(rows: int, cols: int, extra_words: int, seed: int, style: str, dtype):
    rng = np.random.default_rng(seed)
    words = max(0, (cols + 31) // 32 + extra_words)
    mask = random_mask(rng, rows, words, style)
    logits = rng.standard_normal((rows, cols)).astype(dtype)
    return logits, mask


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@settings(max_examples=60, deadline=None)
@given(shape=SHAPES)
def test_numpy_agrees_with_the_oracle(dtype, shape):
    logits, mask = case(*shape, dtype)
    want = expected(logits, mask)
    got = logits.copy()
    assert tokamata.apply_bitmask(got, mask) is got
    np.testing.assert_array_equal(got, want)
    if logits.shape[0] == 1:  # a [V] row with a [W] mask
        flat = logits[0].copy()
        tokamata.apply_bitmask(flat, mask[0])
        np.testing.assert_array_equal(flat, want[0])
    # rows that are not adjacent (a slice of a wider array), and a strided bitmask
    wide = np.zeros((logits.shape[0], logits.shape[1] + 5), dtype=dtype)
    wide[:, : logits.shape[1]] = logits
    view = wide[:, : logits.shape[1]]
    tokamata.apply_bitmask(view, np.repeat(mask, 2, axis=0)[::2])
    np.testing.assert_array_equal(view, want)
    assert (wide[:, logits.shape[1]:] == 0).all()
    # strided columns: a field of an array of records (llama.cpp's token data: id, logit, p),
    # masked in place by the core; the other fields are not touched
    records = np.zeros(logits.shape, dtype=np.dtype([("id", np.intc), ("logit", dtype), ("p", np.single)], align=True))
    records["logit"] = logits
    records["id"] = 7
    field = records["logit"]
    assert field.strides[1] != field.itemsize or logits.shape[1] < 2
    assert tokamata.apply_bitmask(field, mask) is field
    np.testing.assert_array_equal(records["logit"], want)
    assert (records["id"] == 7).all() and (records["p"] == 0).all()


def test_numpy_other_layouts_and_types():
    """Columns a positive number of elements apart (the core) and long doubles (numpy's
    path): same result."""
    rng = np.random.default_rng(3)
    mask = random_mask(rng, 2, 4, "dense")
    logits = rng.standard_normal((2, 200))
    want = expected(logits, mask)
    strided = np.zeros((2, 400))
    strided[:, ::2] = logits
    tokamata.apply_bitmask(strided[:, ::2], mask)
    np.testing.assert_array_equal(strided[:, ::2], want)
    long = logits.astype(np.longdouble)
    tokamata.apply_bitmask(long, mask)
    np.testing.assert_array_equal(long, want.astype(np.longdouble))
    readonly = logits.copy()
    readonly.setflags(write=False)
    with pytest.raises(tokamata.InvalidArgument, match="read-only"):
        tokamata.apply_bitmask(readonly, mask)


def test_numpy_bad_input():
    logits = np.zeros((2, 40), dtype=np.float32)
    for mask in (np.zeros((3, 2), dtype=np.int32), np.zeros((2, 2), dtype=np.int64), np.zeros((2, 2, 1), dtype=np.int32)):
        with pytest.raises(tokamata.InvalidArgument):
            tokamata.apply_bitmask(logits, mask)
    assert (logits == 0).all()


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64"])
@settings(max_examples=40, deadline=None)
@given(shape=SHAPES)
def test_torch_cpu_agrees_with_the_oracle(name, shape):
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, name)
    logits64, mask = case(*shape, np.float64)
    logits = torch.from_numpy(logits64).to(dtype)
    want = torch.from_numpy(expected(logits.to(torch.float64).numpy(), mask)).to(dtype)
    for bitmask in (torch.from_numpy(mask), mask):  # a torch bitmask, or a numpy one
        got = logits.clone()
        assert tokamata.apply_bitmask(got, bitmask) is got
        assert torch.equal(got, want)
    # strided columns (the torch ops) and a tensor autograd tracks (the torch ops)
    strided = torch.zeros(logits.shape[0], 2 * logits.shape[1], dtype=dtype)
    strided[:, ::2] = logits
    tokamata.apply_bitmask(strided[:, ::2], torch.from_numpy(mask))
    assert torch.equal(strided[:, ::2], want) and (strided[:, 1::2] == 0).all()
    tracked = logits.clone().requires_grad_(True)
    with torch.no_grad():
        tokamata.apply_bitmask(tracked, torch.from_numpy(mask))
    assert torch.equal(tracked.detach(), want)


def test_torch_one_row_and_bad_batch():
    torch = pytest.importorskip("torch")
    mask = np.array([[0b1011]], dtype=np.int32)
    flat = torch.zeros(5)
    tokamata.apply_bitmask(flat, torch.from_numpy(mask[0]))
    assert torch.isfinite(flat).tolist() == [True, True, False, True, False]
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.apply_bitmask(torch.zeros(2, 5), torch.from_numpy(mask))
