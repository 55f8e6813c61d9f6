"""Token healing with ``canonical=True`` (issue 18 items 1 and 3: canonical mode applies to the
whole output, the healed prefix included), against the tokenizer's own encodings.

A prompt is encoded by the tokenizer, healed (:func:`tokamata.heal`), and the removed bytes
``r`` are given to ``matcher(prefix=r)``. For a finite language every string ``s`` is
enumerated; the matcher must walk exactly the trie of the encodings of ``r + s``
(``tokenizers``, continuation mode): next tokens at every node, EOS where an encoding ends,
``is_accepting`` there and nowhere else. Round trip: the kept prompt ids plus any accepted
walk decode to the prompt followed by a sentence. Byte-level BPE (Llama 3, GPT-2: the native
filter hands healed matchers to the Python filter) and SentencePiece-style BPE (Gemma 3,
Mistral v3).
"""

from __future__ import annotations

import pytest

import real_tokenizers as real
import tokamata
from canonical_checks import check_masks_along_trie, encoding_trie
from test_canonical_masks import enumerate_regex
from test_canonical_sentencepiece import mistral

TOKENIZERS = {"gpt2": real.gpt2, "llama3": real.llama3, "gemma3": real.gemma3, "mistral": mistral}

# (prompt, max_tokens, language after the removed bytes)
CASES = [
    ("Visit https:", 1, r"//(a|b)\.com"),
    ("Visit https:", 1, r"//(a|ab|www)\.(com|org)"),
    ("The answer is (", 1, r"(1|12|a)\)"),
    ("x =", 1, r" (1|10|100|true|tru)"),
    ("Say hel", 1, r"(lo|p|ium)( world)?"),
    ("a list:\n", 1, r"(\n|- )(x|y)"),
    ("price: $", 2, r"(1|12)(\.5)?"),
]


def check_healed(tokenizer, prompt: str, max_tokens: int, pattern: str) -> int:
    vocab = tokenizer.vocab
    prompt_ids = tokenizer.encode(prompt)
    kept, removed = tokamata.heal(vocab, prompt_ids, max_tokens)
    assert vocab.decode(kept) + removed == prompt.encode()
    head = removed.decode("utf-8")
    strings = enumerate_regex(pattern)
    trie = encoding_trie(tokenizer, [head + s for s in strings])
    matcher = tokamata.compile_regex(pattern, vocab, canonical=True).matcher(prefix=removed)
    for node in check_masks_along_trie(matcher, trie, vocab, (prompt, removed, pattern)):
        # round trip: the kept prompt + the output is prompt + a sentence
        text = (vocab.decode(kept) + vocab.decode(list(node))).decode("utf-8")
        assert text[len(prompt):] in strings and text.startswith(prompt)
    return len(trie)


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("case", CASES, ids=[c[0] + " " + c[2] for c in CASES])
def test_healed_matchers_walk_exactly_the_encodings_of_the_whole_output(name, case):
    check_healed(TOKENIZERS[name](), *case)


def test_healing_removes_a_token_the_canonical_output_respells():
    """(the oracle can fail: on Llama 3 "https:" heals its ":" and the canonical output
    begins with the one token "://", never ":" then "//")"""
    t = real.llama3()
    kept, removed = tokamata.heal(t.vocab, t.encode("Visit https:"), 1)
    assert removed == b":"
    m = tokamata.compile_regex(r"//a\.com", t.vocab, canonical=True).matcher(prefix=removed)
    assert m.allowed_tokens().tolist() == [t.encode("://")[0]]
    plain = tokamata.compile_regex(r"//a\.com", t.vocab).matcher(prefix=removed)
    assert t.encode(":")[0] in plain.allowed_tokens().tolist()


def test_prefixes_do_not_share_positions():
    """Healed matchers of one constraint with different prefixes (their first prefix
    positions look alike) and a plain one, asked in turn: each keeps its own masks."""
    t = real.llama3()
    c = tokamata.compile_regex(r"(//a|/b|a)\.com", t.vocab, canonical=True)
    expected = {head: sorted({t.encode(head + s)[0] for s in ("//a.com", "/b.com", "a.com")})
                for head in (":", "/", "")}
    for head in (":", "/", "", ":", "/"):
        got = c.matcher(prefix=head.encode()).allowed_tokens().tolist()
        assert got == expected[head], head
