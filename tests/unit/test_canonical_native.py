"""The native canonical filter (tokamata.canonical_native) against the Python filter, its
oracle, on real tokenizers (GPT-2, Llama 3, Qwen 2).

- The C++ pretokenizer scanners and open regions equal ``pretoken_region.text_region`` (which
  the `regex` module runs) on random texts built from the characters the split patterns treat
  differently; the C++ encoder equals ``TokenizerModel.encode``; the bigram test equals
  ``bigram_canonical``.
- Masks: on random walks through a regex, a JSON Schema and a Lark grammar, the native mask
  equals the Python filter's mask at every step, and consume agrees with it.
- Which filter a tokenizer gets is the documented strategy (native for the byte-level
  families, the Python filter otherwise).
"""

from __future__ import annotations

import random
import re

import pytest

import real_tokenizers as real
from canonical_checks import check_masks_along_trie, compile_canonical, encoding_trie
import tokamata
from tokamata import _core
from tokamata.canonical_core import CanonicalCore
from tokamata.canonical_native import NativeCanonicalFilter, native_tokenizer
from tokamata.vocab.canonical import bigram_canonical
from tokamata.vocab.canonical_filter import CanonicalFilter
from tokamata.vocab.pretoken_region import region_family, text_region

TOKENIZERS = {"gpt2": real.gpt2, "llama3": real.llama3, "qwen2": real.qwen2}

# characters each split pattern treats differently: letters (ASCII, Latin-1, CJK, long s),
# digits (ASCII, Arabic-Indic, full-width), apostrophes and contraction letters, spaces,
# tabs, CR/LF, no-break and ideographic spaces, punctuation, symbols
ALPHABET = list("aAsStTrReEvVmMlLdD") + ["é", "中", "ſ", "١", "１", "0", "7", "'", "'", " ", " ", " ", "\t", "\n",
                                          "\r", "\u00a0", "\u3000", ".", ",", "!", "{", "\"", "-", "€", "😀", "[", "P"]


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 14)))


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_native_regions_and_encodings_match_python(name):
    vocab = TOKENIZERS[name]().vocab
    model = vocab.exact_tokenizer()
    native = native_tokenizer(vocab, region_family(model))
    rng = random.Random(name)
    texts = [_random_text(rng) for _ in range(1500)] + ["[PAD151646]x", "a [PAD1516", "x\r\n\t \n", "12345 'S"]
    for text in texts:
        region = text_region(model, text)
        spans, open_start = native.region(text.encode("utf-8"))
        expected = [(s.start, s.end, -1 if s.added is None else s.added) for s in region.spans]
        assert (spans, open_start) == (expected, region.open_start), text
        assert native.encode(text.encode("utf-8")) == model.encode(text), text
    assert native.region(b"\xc3") is None and native.region(b"\xed\xa0\x80") is None  # not UTF-8
    ids = [i for i, b in enumerate(vocab.token_bytes) if b]
    for _ in range(400):
        a, b = rng.choice(ids), rng.choice(ids)
        assert native.bigram(a, b) == bigram_canonical(vocab, a, b), (a, b)
    index = {b: i for i, b in enumerate(vocab.token_bytes) if b}
    splits = [(index[w[:k]], index[w[k:]]) for w in (b"true", b"hello", b" world", b"1234")
              for k in range(1, len(w)) if w[:k] in index and w[k:] in index]
    assert splits
    for a, b in splits:  # (mostly False: the merges rebuild the whole word)
        assert native.bigram(a, b) == bigram_canonical(vocab, a, b), (a, b)


CASES = [
    ("regex", r"(true|false|null|[0-9]{1,5})( (and|or) (true|false|it's|[0-9]{2,4}))*\.?"),
    ("json_schema", {"type": "object", "properties": {"n": {"type": "integer"}, "b": {"type": "boolean"},
                                                      "c": {"enum": ["red", "green", "dark blue"]}},
                     "required": ["n", "b", "c"], "additionalProperties": False}),
    ("grammar", 'start: expr\nexpr: NUMBER | expr OP expr | "(" expr ")"\nOP: " + " | " * " | "-"\n'
                'NUMBER: /[0-9]{1,6}/'),
    # words that grow token by token (the in-pretoken shortcut), apostrophes before r and e
    # (GPT-2's 're), whitespace runs
    ("regex", r"[a-er' ]{0,10}[.!]"),
]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_native_masks_equal_python_masks_on_random_walks(name, case):
    vocab = TOKENIZERS[name]().vocab
    constraint = compile_canonical(*CASES[case], vocab)
    assert isinstance(constraint.canonical, NativeCanonicalFilter)
    oracle = CanonicalFilter(vocab, constraint.limits)
    eos = set(vocab.eos_token_ids)
    rng = random.Random(f"{name}{case}")
    for _ in range(4):
        m = constraint.matcher()
        python = CanonicalCore(_core.MatcherCore(constraint._core, b""), oracle)
        for _step in range(40):
            allowed = m.allowed_tokens().tolist()
            assert allowed == python.allowed_tokens(), (name, case, _step)
            refused = rng.randrange(vocab.size)
            assert (refused in allowed) == (python.copy().consume(refused) == 0) == m.copy().consume(refused)
            t = rng.choice(allowed)
            if t in eos:
                break
            # (lean to longer tokens half the time)
            if rng.random() < 0.5:
                t = max(rng.sample(allowed, min(4, len(allowed))), key=lambda i: len(vocab.token_bytes[i] or b""))
            assert m.consume(t) and python.consume(t) == 0
            assert m.is_accepting() == python.is_accepting()


def test_filter_strategy():
    """Byte-level families run natively; a tokenizer the native filter cannot follow keeps the
    Python filter (SentencePiece models are refused by both today)."""
    for name in TOKENIZERS:
        c = tokamata.compile_regex("a", TOKENIZERS[name]().vocab, canonical=True)
        assert isinstance(c.canonical, NativeCanonicalFilter), name
    assert tokamata.compile_regex("a", real.llama3().vocab).canonical is None


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_single_token_facts_equal_python_steps_and_closes(name):
    """The tokenizer's per-token facts of the single-token state (solo_alive, solo_complete,
    solo_closes by character key) equal the Python filter's step from nothing open, its
    complete() and its closes(), for
    random tokens and every ASCII character (so one character per key answers for all)."""
    vocab = TOKENIZERS[name]().vocab
    model = vocab.exact_tokenizer()
    native = native_tokenizer(vocab, region_family(model))
    oracle = CanonicalFilter(vocab, tokamata.Limits())
    rng = random.Random(f"solo{name}")
    ids = [i for i, b in enumerate(vocab.token_bytes) if b]
    picked = rng.sample(ids, 300) + [i for i, b in enumerate(vocab.token_bytes)
                                     if b in (b"'", b" '", b"hello", b" \n", b"  ", b"\n", b"123", b"\xe4")]
    for t in picked:
        alone = oracle.step(oracle.initial_state, t)
        assert native.solo_alive(t) == (alone is not None), t
        assert native.solo_complete(t) == oracle.complete((vocab.token_bytes[t], (t,))), t
        assert alone is None or alone == (vocab.token_bytes[t], (t,)), t
        for c in range(128):
            assert native.solo_closes(t, c) == oracle.closes((vocab.token_bytes[t], (t,)), bytes([c])), (t, c)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_a_closing_first_character_starts_from_nothing_open(name):
    """The native step's shortcut, checked on the Python filter: after a state whose text is
    complete and does not end in an apostrophe, a token whose ASCII first character closes the
    state steps exactly as from nothing open (random token pairs, weighted to short ones)."""
    vocab = TOKENIZERS[name]().vocab
    oracle = CanonicalFilter(vocab, tokamata.Limits())
    rng = random.Random(f"shortcut{name}")
    short = [i for i, b in enumerate(vocab.token_bytes) if b and len(b) <= 3]
    every = [i for i, b in enumerate(vocab.token_bytes) if b]
    checked = 0
    for _ in range(3000):
        a, b = rng.choice(short if rng.random() < 0.5 else every), rng.choice(short if rng.random() < 0.5 else every)
        state = oracle.step(oracle.initial_state, a)
        data = vocab.token_bytes[b]
        if state is None or data[0] >= 0x80 or state[0].endswith(b"'"):
            continue
        try:
            state[0].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if oracle.closes(state, data[:1]):
            checked += 1
            assert oracle.step(state, b) == oracle.step(oracle.initial_state, b), (a, b)
    assert checked > 300


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_trace_bigram_equals_the_merge_bigram(name):
    """bigram_traces (the two tokens' merge traces interleaved by rank, the junction pair
    checked at each state) equals the bigram test that runs the merges on both tokens' symbols,
    on random pairs, pairs of short tokens (where junction merges are common) and the splits of
    words into two tokens. (Llama 3's merges are not in rank order of their parts: 51,651
    merges use a part made by a later merge, e.g. three spaces; the traces need no such order.)"""
    vocab = TOKENIZERS[name]().vocab
    native = native_tokenizer(vocab, region_family(vocab.exact_tokenizer()))
    rng = random.Random(f"spines{name}")
    ids = [i for i, b in enumerate(vocab.token_bytes) if b]
    short = [i for i in ids if len(vocab.token_bytes[i]) <= 2]
    index = {b: i for i, b in enumerate(vocab.token_bytes) if b}
    pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(3000)]
    pairs += [(rng.choice(short), rng.choice(short)) for _ in range(3000)]
    for _ in range(2000):
        w = vocab.token_bytes[rng.choice(ids)]
        k = rng.randrange(1, len(w)) if len(w) > 1 else 0
        if k and w[:k] in index and w[k:] in index:
            pairs.append((index[w[:k]], index[w[k:]]))
    agree = [native.bigram_traces(a, b) == native.bigram(a, b) for a, b in pairs]
    assert all(agree), [p for p, ok in zip(pairs, agree) if not ok][:5]
    assert any(native.bigram(a, b) for a, b in pairs) and not all(native.bigram(a, b) for a, b in pairs)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_pairs_decide_the_encoding_of_one_pretoken(name):
    """The rule the native filter's in-pretoken shortcut relies on (docs/tokenization.md, "One
    pretoken: pairs decide"): for tokens whose bytes form one pretoken, the pretoken's encoding
    is exactly those tokens iff every adjacent pair passes the bigram test and (ignore_merges)
    the bytes are not a piece themselves. Brute force (the encoder) against the rule on random
    sequences of 2-4 tokens and on splits of tokens and of two-token words into 2-4 tokens
    (where the merges rebuild something else), keeping the one-pretoken texts."""
    vocab = TOKENIZERS[name]().vocab
    model = vocab.exact_tokenizer()
    native = native_tokenizer(vocab, region_family(model))
    tb = vocab.token_bytes
    index = {b: i for i, b in enumerate(tb) if b}
    ids = [i for i, b in enumerate(tb) if b]
    short = [i for i in ids if len(tb[i]) <= 3]
    rng = random.Random(f"pairs{name}")

    def split(text: bytes) -> list[int] | None:  # a random cut of text into 2-4 tokens
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 3))))
        parts = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
        return [index[p] for p in parts] if all(p in index for p in parts) else None

    seqs: list[list[int]] = []
    while len(seqs) < 6000:
        pool = short if rng.random() < 0.5 else ids
        seqs.append([rng.choice(pool) for _ in range(rng.randint(2, 4))])
    for _ in range(20000):
        text = tb[rng.choice(ids)] + (tb[rng.choice(short)] if rng.random() < 0.5 else b"")
        seq = split(text) if len(text) > 1 else None
        if seq:
            seqs.append(seq)
    checked = canonical = 0
    for seq in seqs:
        text = b"".join(tb[t] for t in seq)
        region = native.region(text)
        if region is None or len(region[0]) != 1:
            continue
        rule = all(native.bigram(a, b) for a, b in zip(seq, seq[1:])) and not (model.ignore_merges and text in index)
        exact = native.encode(text) == seq
        assert rule == exact, (seq, text)
        checked += 1
        canonical += exact
    assert checked > 5000 and 0 < canonical < checked


def test_a_word_that_is_a_whole_piece_is_not_closed_in_pieces():
    """Llama 3 (ignore_merges): a pretoken that is a piece encodes to that piece even where
    its pieces pass every bigram test (`" việc"` is never `[" vi", "ệ", "c"]`). Finite
    languages {word + ".", its first two pieces + "q."}: at the node after those two pieces
    the mask is exactly the encodings' next tokens (the in-pretoken shortcut must not close
    the word in three pieces)."""
    tokenizer = real.llama3()
    vocab = tokenizer.vocab
    native = native_tokenizer(vocab, region_family(vocab.exact_tokenizer()))
    tb = vocab.token_bytes
    index = {b: i for i, b in enumerate(tb) if b}
    cases = []
    for word in (" việc", " hợp", " điều", " jeho", "ektedir"):
        w = word.encode()
        assert w in index and tokenizer.encode(word) == [index[w]]
        splits = [(w[:i], w[i:j], w[j:]) for i in range(1, len(w) - 1) for j in range(i + 1, len(w))]
        for x, y, z in splits:
            if not all(s in index for s in (x, y, z)):
                continue
            if native.bigram(index[x], index[y]) and native.bigram(index[y], index[z]):
                prefix = (x + y).decode()  # (the tests' words split on characters)
                if tokenizer.encode(prefix + "q.")[:2] == [index[x], index[y]]:
                    cases.append((word, prefix, index[z]))
                    break
    assert len(cases) >= 3, cases
    for word, prefix, last in cases:
        strings = [word + ".", prefix + "q."]
        constraint = compile_canonical("regex", "|".join(re.escape(s) for s in strings), vocab)
        trie = encoding_trie(tokenizer, strings)
        check_masks_along_trie(constraint.matcher(), trie, vocab, word)
        node = tuple(tokenizer.encode(prefix + "q."))[:2]
        assert last not in trie[node]


def _first_characters(vocab) -> list[bytes]:
    """The distinct non-ASCII first characters of the vocabulary's tokens, as bytes (valid ones,
    then the malformed leads a byte-level vocabulary also has)."""
    out: set[bytes] = set()
    for b in vocab.token_bytes:
        if b and b[0] >= 0x80:
            need = 2 if b[0] < 0xE0 else 3 if b[0] < 0xF0 else 4
            if len(b) >= need:
                out.add(b[:need])
    return sorted(out)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_characters_of_one_group_cut_every_text_alike(name):
    """CanonicalTokenizer.char_group, the rule the native filter uses to try one non-ASCII
    next character per group: two characters of one group, each ending the same random text,
    give the same pretokens and open region (the `regex`-driven pretoken_region.text_region is
    the oracle) and the Python filter's closes() gives them one answer on random states; bytes
    that are no valid character (group -2) close no state."""
    vocab = TOKENIZERS[name]().vocab
    model = vocab.exact_tokenizer()
    native = native_tokenizer(vocab, region_family(model))
    oracle = CanonicalFilter(vocab, tokamata.Limits())
    rng = random.Random(f"groups{name}")
    chars = _first_characters(vocab)
    groups: dict[int, list[bytes]] = {}
    for ch in chars:
        groups.setdefault(native.char_group(ch), []).append(ch)
    assert native.char_group("ſ".encode()) == -1 and native.char_group(b"a") == -2
    assert len(groups) >= 4 and len(groups.get(-2, [])) > 10, sorted(groups)
    grouped = [g for g in groups if g >= 0 and len(groups[g]) >= 2]

    def shape(text: str, ch: bytes):  # the cut of text + ch, the character's bytes as one offset
        region = text_region(model, text + ch.decode("utf-8"))
        end = len(text.encode("utf-8"))
        at = [min(o, end + 1) for s in region.spans for o in (s.start, s.end)]
        return at, [s.added for s in region.spans], min(region.open_start, end + 1)

    for _ in range(1500):
        text = _random_text(rng)
        g = rng.choice(grouped)
        c1, c2 = rng.sample(groups[g], 2)
        assert shape(text, c1) == shape(text, c2), (text, c1, c2)
    ids = [i for i, b in enumerate(vocab.token_bytes) if b]
    checked = 0
    for _ in range(600):
        state = oracle.initial_state
        for _ in range(rng.randint(1, 3)):
            t = rng.choice(ids)
            nxt = oracle.step(state, t)
            if nxt is None:
                break
            state = nxt
        if not state[0]:
            continue
        g = rng.choice(grouped)
        c1, c2 = rng.sample(groups[g], 2)
        assert oracle.closes(state, c1) == oracle.closes(state, c2), (state, c1, c2)
        assert not oracle.closes(state, rng.choice(groups[-2])), state
        checked += 1
    assert checked > 300


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_bigram_rows_equal_the_merge_bigram(name):
    """bigram_cached (per first token, a row of known / passing bits shared by every filter of
    the model) equals the bigram test that runs the merges, asked twice per pair (the second
    answer comes from the row), on thousands of random pairs with first tokens drawn from a
    small set (rows fill up), short tokens, contractions (GPT-2's 's 're) and splits of words."""
    vocab = TOKENIZERS[name]().vocab
    native = native_tokenizer(vocab, region_family(vocab.exact_tokenizer()))
    rng = random.Random(f"rows{name}")
    tb = vocab.token_bytes
    ids = [i for i, b in enumerate(tb) if b]
    index = {b: i for i, b in enumerate(tb) if b}
    short = [i for i in ids if len(tb[i]) <= 2]
    named = [index[w] for w in (b"'", b"'s", b"'re", b"s", b"re", b"t", b" it", b"it", b"  ", b" ", b"\n", b"12")
             if w in index]
    firsts = rng.sample(ids, 20) + rng.sample(short, 20) + named
    pairs = [(rng.choice(firsts), rng.choice(ids if rng.random() < 0.5 else short)) for _ in range(6000)]
    pairs += [(a, b) for a in named for b in named]
    for _ in range(3000):
        w = tb[rng.choice(ids)]
        k = rng.randrange(1, len(w)) if len(w) > 1 else 0
        if k and w[:k] in index and w[k:] in index:
            pairs.append((index[w[:k]], index[w[k:]]))
    for round_ in range(2):
        got = [native.bigram_cached(a, b) for a, b in pairs]
        want = [native.bigram(a, b) for a, b in pairs]
        assert got == want, ([p for p, x, y in zip(pairs, got, want) if x != y][:5], round_)
    assert 0 < sum(want) < len(want)
