"""The lexer DFA's table is stored as shapes (cpp/include/tokamata/lazy_dfa.hpp): per state, one
target per own byte interval and an interned map from global class to interval. The table's
lookups are checked against a dense table in the C++ unit tests (test_lazy_dfa.cpp); here, on
Llama 3, with a schema of many long keys (the key-literal states that made MaskBench's largest
tables): masks along an instance equal the ``regex`` oracle's (the masks read the table through
every walk), ``ConstraintCore.table_bytes`` is a small fraction of a dense table (one int32 per
class, one class per non-ASCII byte) and ``Constraint.memory_bytes()`` counts it."""

from __future__ import annotations

import json
import re

import tokamata
from oracle import Oracle
from real_tokenizers import llama3

KEYS = [f"a_rather_long_property_name_number_{i}" for i in range(16)]
SCHEMA = {"type": "object", "properties": {k: {"type": "integer"} for k in KEYS},
          "required": KEYS, "additionalProperties": False}
INSTANCE = {k: i for i, k in enumerate(KEYS)}
# the schema's language in the compact spelling, for the oracle
PATTERN = r"\{" + ",".join(re.escape(json.dumps(k)) + r":-?(?:0|[1-9][0-9]*)" for k in KEYS) + r"\}"


def test_key_heavy_schema_masks_equal_the_oracle_and_the_table_is_compact():
    rt = llama3()
    vocab = rt.vocab
    constraint = tokamata.compile_json_schema(SCHEMA, vocab)
    oracle = Oracle(PATTERN)
    text = json.dumps(INSTANCE, separators=(",", ":"))
    m, prefix = constraint.matcher(), b""
    for step, token in enumerate(rt.encode(text)):
        if step % 7 == 0:  # every seventh position: the whole mask against the oracle
            ours = set(m.allowed_tokens().tolist())
            assert ours == oracle.allowed(vocab, prefix), (prefix, sorted(ours ^ oracle.allowed(vocab, prefix))[:5])
        assert m.consume(token)
        prefix += vocab.token_bytes[token]
    assert m.is_accepting()
    core = constraint._core
    states = core.num_lexer_states
    assert states > 16 * 30  # a state per byte of every key, at least
    # dense: ~200 classes (every non-ASCII byte is its own) * 4 bytes per state
    assert core.table_bytes < states * 200, (core.table_bytes, states)
    assert constraint.memory_bytes() >= core.row_bytes + core.table_bytes
