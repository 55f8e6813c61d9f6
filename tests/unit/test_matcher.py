"""The Matcher / Constraint API surface: consume, rollback, EOS, copies, bitmask buffers,
padding, argument errors, and thread safety. Small vocabularies here; real ones in property/."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tokamata

TOKENS = [b"a", b"b", b"ab", b"abc", None, b"c", b"\xc3", b"\xa9", "é".encode(), b"", b"ca"]
EOS = 4


@pytest.fixture(scope="module")
def vocab():
    return tokamata.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[EOS], size=70)


def allowed(m):
    return m.allowed_tokens().tolist()


def test_allowed_consume_and_eos(vocab):
    m = tokamata.compile_regex("a+b?c|é", vocab).matcher()
    assert allowed(m) == [0, 2, 3, 6, 8]  # b"\xc3" alone can still become "é"
    assert not m.is_accepting()
    assert m.consume(0)
    assert allowed(m) == [0, 1, 2, 3, 5]
    assert not m.consume(10)  # "ca" would leave the language; state unchanged
    assert allowed(m) == [0, 1, 2, 3, 5]
    assert m.consume(3)       # "abc": output "aabc" is a full match
    assert m.is_accepting() and allowed(m) == [EOS]
    assert not m.consume(0)
    assert m.consume(EOS) and m.is_terminated()
    assert allowed(m) == [] and not m.consume(EOS)


def test_partial_utf8_tokens(vocab):
    m = tokamata.compile_regex("é", vocab).matcher()
    assert m.consume(6)                    # first byte of "é"
    assert allowed(m) == [7]               # only its continuation byte
    assert not m.is_accepting()
    assert m.consume(7) and m.is_accepting()


def test_rollback_and_copy(vocab):
    m = tokamata.compile_regex("(ab|c)*", vocab).matcher()
    assert m.consume_many([2, 5, 2, 1, 0]) == 3  # "b" cannot follow "abcab"
    assert m.num_consumed == 3
    snapshot = allowed(m)
    twin = m.copy()
    assert m.consume(EOS) and m.is_terminated()
    m.rollback(1)
    assert not m.is_terminated() and allowed(m) == snapshot
    m.rollback(3)
    assert m.num_consumed == 0 and allowed(m) == allowed(tokamata.compile_regex("(ab|c)*", vocab).matcher())
    assert twin.num_consumed == 3 and allowed(twin) == snapshot
    with pytest.raises(tokamata.InvalidArgument):
        m.rollback(1)
    with pytest.raises(tokamata.InvalidArgument):
        m.rollback(-1)


def test_padding_and_special_tokens_never_allowed(vocab):
    m = tokamata.compile_regex("(?s).*", vocab).matcher()
    ids = allowed(m)
    assert EOS in ids
    assert 9 not in ids                       # empty token
    assert all(t < len(TOKENS) for t in ids)  # padded ids 11..69 never
    bitmask = np.full((2, 3), -1, dtype=np.int32)
    m.fill_bitmask(bitmask, 1)
    assert (bitmask[0] == -1).all()           # other rows untouched
    bits = np.unpackbits(bitmask[1].view(np.uint8), bitorder="little")
    assert np.flatnonzero(bits).tolist() == ids


def test_bitmask_wider_than_vocab_is_cleared(vocab):
    m = tokamata.compile_regex("a", vocab).matcher()
    bitmask = np.full((1, 10), -1, dtype=np.int32)
    m.fill_bitmask(bitmask)
    assert bitmask[0, 3:].tolist() == [0] * 7
    assert bitmask[0, 0] == (1 << 0)


@pytest.mark.parametrize("bad,message", [
    (np.zeros((1, 3), dtype=np.int64), "int32"),
    (np.zeros((3,), dtype=np.int32), "2-D"),
    (np.zeros((1, 2), dtype=np.int32), "words per row"),
    (np.zeros((3, 1, 3), dtype=np.int32), "2-D"),
    (np.zeros((1, 6), dtype=np.int32)[:, ::2], "contiguous"),
    ([[0, 0, 0]], "numpy array or torch tensor"),
])
def test_bad_bitmask_buffers(vocab, bad, message):
    m = tokamata.compile_regex("a", vocab).matcher()
    with pytest.raises(tokamata.InvalidArgument, match=message):
        m.fill_bitmask(bad)


def test_read_only_bitmask_and_bad_index(vocab):
    m = tokamata.compile_regex("a", vocab).matcher()
    frozen = np.zeros((1, 3), dtype=np.int32)
    frozen.flags.writeable = False
    with pytest.raises(tokamata.InvalidArgument, match="read-only"):
        m.fill_bitmask(frozen)
    with pytest.raises(tokamata.InvalidArgument, match="index"):
        m.fill_bitmask(np.zeros((2, 3), dtype=np.int32), 2)
    with pytest.raises(tokamata.InvalidArgument, match="index"):
        m.fill_bitmask(np.zeros((2, 3), dtype=np.int32), -1)


@pytest.mark.parametrize("token", [-1, 70, 10**12, "a", 1.5, None, True])
def test_invalid_token_ids(vocab, token):
    m = tokamata.compile_regex("a", vocab).matcher()
    with pytest.raises(tokamata.InvalidArgument):
        m.consume(token)
    assert m.num_consumed == 0


def test_numpy_integer_tokens_accepted(vocab):
    m = tokamata.compile_regex("ab", vocab).matcher()
    assert m.consume(np.int64(0)) and m.consume(np.int32(1))
    assert m.is_accepting()


def test_empty_language_and_bad_arguments(vocab):
    with pytest.raises(tokamata.InvalidSyntax):
        tokamata.compile_regex("[^\\x00-\\U0010ffff]", vocab)
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_regex("a", vocab, limits={"max_dfa_states": 3})
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_regex("a", object())
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.allocate_bitmask(0, 10)
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.allocate_bitmask(1, -5)


def test_apply_bitmask_numpy(vocab):
    m = tokamata.compile_regex("a|b", vocab).matcher()
    bitmask = tokamata.allocate_bitmask(1, vocab.size)
    m.fill_bitmask(bitmask)
    logits = np.zeros((1, vocab.size), dtype=np.float32)
    tokamata.apply_bitmask(logits, bitmask)
    assert np.flatnonzero(np.isfinite(logits[0])).tolist() == [0, 1]
    flat = np.zeros(vocab.size, dtype=np.float32)
    tokamata.apply_bitmask(flat, bitmask[0])
    assert np.flatnonzero(np.isfinite(flat)).tolist() == [0, 1]
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.apply_bitmask(np.zeros((2, vocab.size), dtype=np.float32), bitmask)


def test_torch_tensors():
    torch = pytest.importorskip("torch")
    vocab = tokamata.Vocabulary.from_token_bytes(TOKENS, eos_token_ids=[EOS], size=70)
    m = tokamata.compile_regex("a|b", vocab).matcher()
    bitmask = torch.zeros((2, 3), dtype=torch.int32)
    m.fill_bitmask(bitmask, 1)
    assert bitmask[0].tolist() == [0, 0, 0] and bitmask[1, 0].item() == 0b11
    logits = torch.zeros((2, 70))
    tokamata.apply_bitmask(logits, bitmask)
    assert torch.isinf(logits[0]).all()
    assert torch.isfinite(logits[1]).nonzero().flatten().tolist() == [0, 1]
    with pytest.raises(tokamata.InvalidArgument, match="int32"):
        m.fill_bitmask(torch.zeros((1, 3), dtype=torch.int64))
    with pytest.raises(tokamata.InvalidArgument, match="contiguous"):
        m.fill_bitmask(torch.zeros((3, 2), dtype=torch.int32).t())
    assert m.consume(torch.tensor(0))


def test_lazy_limit_during_decoding(vocab):
    """The blow-up is caught when decoding reaches it, with the limit named."""
    import itertools

    words = [bytes(w) for n in range(1, 6) for w in itertools.product(b"ab", repeat=n)]
    small = tokamata.Vocabulary.from_token_bytes(words + [None], eos_token_ids=[len(words)])
    c = tokamata.compile_regex(r"(a|b)*a(a|b){30}", small, limits=tokamata.Limits(max_dfa_states=500))
    m = c.matcher()
    with pytest.raises(tokamata.LimitExceeded) as info:
        for i in range(40):
            assert m.consume(len(words) - 1 - i % 7)
    assert info.value.limit == "max_dfa_states"


def test_threads_share_a_constraint():
    from real_tokenizers import llama3

    tok = llama3()
    constraint = tokamata.compile_regex(r"[a-z ]{1,40}\.", tok.vocab)
    text_ids = tok.encode("the quick brown fox jumps over the dog.")
    errors = []

    def run():
        try:
            for _ in range(20):
                m = constraint.matcher()
                bitmask = tokamata.allocate_bitmask(1, tok.vocab.size)
                for t in text_ids:
                    m.fill_bitmask(bitmask)
                    assert (bitmask[0, t >> 5] >> (t & 31)) & 1
                    assert m.consume(t)
                assert m.is_accepting()
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_import_is_light():
    import subprocess
    import sys

    code = "import sys, tokamata; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_fill_bitmasks_batch(vocab):
    c1 = tokamata.compile_regex("a|b", vocab)
    c2 = tokamata.compile_regex("c", vocab)
    m1, m2 = c1.matcher(), c2.matcher()
    bitmask = tokamata.allocate_bitmask(3, vocab.size)
    tokamata.fill_bitmasks([m1, m2], bitmask, [2, 0])
    single = tokamata.allocate_bitmask(3, vocab.size)
    m1.fill_bitmask(single, 2)
    m2.fill_bitmask(single, 0)
    assert (bitmask == single).all() and bitmask[1].sum() == 0
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.fill_bitmasks([m1], bitmask, [3])
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.fill_bitmasks([m1, m2], bitmask, [0])
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.fill_bitmasks([m1], np.zeros((1, 1), dtype=np.int32))


def test_rows_shared_across_constraints_by_structure():
    """A second constraint reaching the same expression reuses the row (no new walk) and
    still consumes exactly, expanding its own DFA along the token."""
    from oracle import python_dfa
    from tokamata.automata.reference import reference_allowed
    from tokamata.trie import shared_rows

    words = [b"x", b'"', b"a", b"ab", b'a"', b'"a', b"\\", None]
    vocab = tokamata.Vocabulary.from_token_bytes(words, eos_token_ids=[7])
    cache = shared_rows(vocab)
    first = tokamata.compile_regex(r'"[a-b]*"', vocab).matcher()
    assert first.consume(1)  # '"'
    inside = first.allowed_tokens().tolist()
    before = cache.size
    second = tokamata.compile_regex(r'x"[a-b]*"', vocab)
    m = second.matcher()
    assert m.consume(0) and m.consume(5)  # 'x' then '"a': now inside the same string state
    assert cache.size >= before
    assert m.allowed_tokens().tolist() == inside
    dfa = python_dfa(r'x"[a-b]*"')
    assert m.allowed_tokens().tolist() == reference_allowed(dfa, vocab, dfa.run(b'x"a')).tolist()
    assert m.consume(3) and m.consume(4)  # "ab" then 'a"'
    assert m.is_accepting()


def test_vocabulary_the_core_cannot_index():
    vocab = tokamata.Vocabulary.from_token_bytes([b"a" * 70000, None], eos_token_ids=[1])
    with pytest.raises(tokamata.VocabularyError, match="longer"):
        tokamata.compile_regex("a+", vocab)


def test_clear_caches_keeps_existing_constraints_working(vocab):
    c = tokamata.compile_regex("(ab|c)+", vocab)
    m = c.matcher()
    assert m.consume(2)
    tokamata.clear_caches(vocab)
    fresh = tokamata.compile_regex("(ab|c)+", vocab).matcher()
    assert m.consume(5) and fresh.consume(2) and fresh.consume(5)
    assert allowed(m) == allowed(fresh)
    assert m.is_accepting() and fresh.is_accepting()


def test_token_bitmask_row():
    from tokamata.bitmask import token_bitmask_row

    row = token_bitmask_row([0, 33, 69], 70)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    assert np.flatnonzero(bits).tolist() == [0, 33, 69] and row.dtype == np.int32 and row.shape == (3,)
    with pytest.raises(tokamata.InvalidArgument):
        token_bitmask_row([70], 70)


def test_trie_layout_is_dfs_order_with_subtree_sizes_and_pops():
    """The trie arrays follow seed 001's layout: walking them rebuilds every token's bytes."""
    from tokamata.trie import core_trie

    words = [b"a", b"ab", b"abc", b"b", b"ba", b"c", b"ab", None, b""]
    vocab = tokamata.Vocabulary.from_token_bytes(words, eos_token_ids=[7])
    byte, begin, count, subtree, parents, token_ids = core_trie(vocab).arrays()
    n = len(byte)
    assert subtree[0] == n
    # rebuild the path of every node from levels implied by the pop counts
    spelled, path, level = {}, [], 0
    for p in range(1, n):
        path = path[: level]
        path.append(byte[p])
        for k in range(count[p]):
            spelled[token_ids[begin[p] + k]] = bytes(path)
        assert p + subtree[p] <= n
        # a node with children is followed by its first child; after a leaf, pop its parents
        level = len(path) if subtree[p] > 1 else len(path) - parents[p]
    assert spelled == {0: b"a", 1: b"ab", 2: b"abc", 3: b"b", 4: b"ba", 5: b"c", 6: b"ab"}
    assert [bytes([b]) for b in byte[1:]] == [b"a", b"b", b"c", b"b", b"a", b"c"]  # DFS, sorted


def test_rows_are_cached_per_state(vocab):
    c = tokamata.compile_regex("(ab|c)*x", vocab)
    m = c.matcher()
    m.allowed_tokens()
    assert c._core.num_cached_rows == 1
    assert m.consume(2) and m.consume(5)  # "ab" then "c": the derivative is the start again
    m.allowed_tokens()
    m.rollback(2)
    m.allowed_tokens()
    assert c._core.num_cached_rows == 1  # revisiting a state costs a lookup, not a walk
