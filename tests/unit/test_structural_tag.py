"""Structural tags (issue 22 item 3): tables of (spec, accepted, rejected) replayed byte by byte,
an independent checker of the triggered-tags semantics (``str.find``, ``json.loads``,
``jsonschema``) against random walks on Llama 3 and hypothesis texts, token formats, and the
errors of bad specs with their pointers.
"""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokamata
from mask_walk import random_walk
from real_tokenizers import llama3

EOS = 256
BYTES = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[EOS])


def accepts(constraint, text: str) -> bool:
    m = constraint.matcher()
    for b in text.encode("utf-8"):
        if not m.consume(b):
            return False
    return m.consume(EOS)


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
           "required": ["city"], "additionalProperties": False}
TIME = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"],
        "additionalProperties": False}
TOOLS = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<function="], "tags": [
    {"type": "tag", "begin": "<function=weather>", "content": {"type": "json_schema", "json_schema": WEATHER},
     "end": "</function>"},
    {"type": "tag", "begin": "<function=time>", "content": {"type": "json_schema", "json_schema": TIME},
     "end": "</function>"}]}}
LEGACY = {"type": "structural_tag", "structures": [
    {"begin": "<function=weather>", "schema": WEATHER, "end": "</function>"}], "triggers": ["<function="]}


def fmt(format_: dict) -> dict:
    return {"type": "structural_tag", "format": format_}


CASES = [
    (TOOLS,
     ["", "Hello there.", 'Sure. <function=weather>{"city":"Paris"}</function>',
      '<function=time>{"zone":"UTC"}</function> and <function=weather>{"city":"Oslo","days":3}</function> done',
      "a < b, function = f, <functio"],
     ['<function=weather>{"city":1}</function>', '<function=weather>{"town":"x"}</function>',
      "<function=other>{}</function>", '<function=time>{"zone":"UTC"}', "x <function=", "<function=weather>"]),
    (LEGACY, ['<function=weather>{"city":"Rome"}</function>', "no call"], ['<function=weather>{}</function>']),
    (fmt({"type": "triggered_tags", "triggers": ["<f>"], "at_least_one": True, "stop_after_first": True,
          "tags": [{"begin": "<f>", "content": {"type": "regex", "pattern": "[0-9]+"}, "end": "</f>"}]}),
     ["<f>1</f>", "think first <f>42</f>"], ["", "plain", "<f>1</f> more", "<f>1</f><f>2</f>"]),
    (fmt({"type": "triggered_tags", "triggers": ["<f>"], "at_least_one": True,
          "tags": [{"begin": "<f>", "content": {"type": "regex", "pattern": "[0-9]+"}, "end": "</f>"}]}),
     ["<f>1</f>", "a<f>1</f>b<f>2</f>c"], ["", "plain", "<f>x</f>"]),
    # the trigger overlaps itself: the tag starts at its first occurrence
    (fmt({"type": "triggered_tags", "triggers": ["aa"],
          "tags": [{"begin": "aab", "content": {"type": "const_string", "value": ""}, "end": "!"}]}),
     ["xaab!", "aab!aab!", "b", "a"], ["xaaab!", "aa", "aab"]),
    (fmt({"type": "triggered_tags", "triggers": ["<f>"], "excludes": ["BAD"],
          "tags": [{"begin": "<f>", "content": {"type": "const_string", "value": "ok"}, "end": "</f>"}]}),
     ["fine <f>ok</f> fine"], ["BAD <f>ok</f>", "<f>ok</f> BAD", "BAD"]),
    # reasoning, then a JSON answer
    (fmt({"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        {"type": "json_schema", "json_schema": {"type": "array", "items": {"type": "integer"}}}]}),
     ["<think>hmm, 1 < 2</think>[1,2]", "<think></think>[]"],
     ["<think>a</think>b</think>[1]", "<think>x</think>", "[1]", "<think>x</think> [1]"]),
    # the first end string ends any_text content
    (fmt({"type": "tag", "begin": "(", "content": {"type": "any_text"}, "end": ["))", "]"]}),
     ["(a))", "(a]", "())", "(a)b))"], ["(a))b))", "(a]]", "(a", "(a)", "(a)))"]),
    (fmt({"type": "tags_with_separator", "separator": ",", "tags": [
        {"begin": "<a>", "content": {"type": "const_string", "value": "1"}, "end": "</a>"},
        {"begin": "<b>", "content": {"type": "regex", "pattern": "x*"}, "end": "</b>"}]}),
     ["", "<a>1</a>", "<a>1</a>,<b></b>,<b>xx</b>"], ["<a>1</a><b></b>", "text", "<a>1</a>,"]),
    (fmt({"type": "tags_with_separator", "separator": ",", "at_least_one": True, "stop_after_first": True,
          "tags": [{"begin": "<a>", "content": {"type": "const_string", "value": "1"}, "end": "</a>"}]}),
     ["<a>1</a>"], ["", "<a>1</a>,<a>1</a>"]),
    (fmt({"type": "or", "elements": [{"type": "const_string", "value": "yes"},
                                     {"type": "repeat", "min": 2, "max": 3, "content": {"type": "const_string",
                                                                                         "value": "ab"}}]}),
     ["yes", "abab", "ababab"], ["ab", "abababab", "no"]),
    (fmt({"type": "sequence", "elements": [{"type": "optional", "content": {"type": "const_string", "value": "-"}},
                                           {"type": "plus", "content": {"type": "regex", "pattern": "[0-9]"}},
                                           {"type": "star", "content": {"type": "const_string", "value": "!"}}]}),
     ["1", "-12!!"], ["-", "!", "1-"]),
    (fmt({"type": "any_text", "max_chars": 3, "excludes": ["z"]}), ["", "abc", "é€😀"], ["abcd", "az"]),
    (fmt({"type": "grammar", "grammar": 'root ::= "x" [0-9]+'}), ["x1", "x42"], ["x", "y1"]),
    (fmt({"type": "dispatch", "rules": [["call:", {"type": "regex", "pattern": " [a-z]+;"}]], "loop": True}),
     ["hi call: go; then call: stop; bye", "nothing"], ["call:go;", "call: 1;"]),
    (fmt({"type": "dispatch", "rules": [["call:", {"type": "regex", "pattern": " [a-z]+;"}]], "loop": False}),
     ["hi call: go;", "nothing"], ["call: a; call: b;", "call: a; x"]),
    (fmt({"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
          "max_whitespace_cnt": 2}), ['{ "a": 1 }', '{"a":1}'], ['{   "a":1}']),
]


@pytest.mark.parametrize("spec, accepted, rejected", CASES)
def test_table(spec, accepted, rejected):
    constraint = tokamata.compile_structural_tag(spec, BYTES)
    for text in accepted:
        assert accepts(constraint, text), text
    for text in rejected:
        assert not accepts(constraint, text), text


def test_json_text_and_bare_format():
    as_text = tokamata.compile_structural_tag(json.dumps(TOOLS), BYTES)
    bare = tokamata.compile_structural_tag(TOOLS["format"], BYTES)
    for text in CASES[0][1]:
        assert accepts(as_text, text) and accepts(bare, text)


# ------------------------------------------------------------ the independent checker


def check_tools(text: str) -> bool:
    """The triggered-tags semantics of TOOLS, written out by hand."""
    schemas = {"weather": WEATHER, "time": TIME}
    while True:
        at = text.find("<function=")
        if at < 0:
            return True
        text = text[at + len("<function="):]
        name, sep, rest = text.partition(">")
        if not sep or name not in schemas:
            return False
        body, sep, text = rest.partition("</function>")
        if not sep:
            return False
        try:
            value = json.loads(body)
        except ValueError:
            return False
        if json.dumps(value, ensure_ascii=False, separators=(",", ":")) != body:  # natural spelling
            return False
        try:
            jsonschema.validate(value, schemas[name])
        except jsonschema.ValidationError:
            return False


def test_walks_on_llama3_are_sound():
    vocab = llama3().vocab
    constraint = tokamata.compile_structural_tag(TOOLS, vocab)
    rng = random.Random(7)
    calls = 0
    for _ in range(25):
        m = constraint.matcher()
        # steer into a tag half of the time, as a model calling a tool would
        if rng.random() < 0.5:
            head = "Let me check. <function=" + rng.choice(["weather>", "time>"])
            for b in head.encode():
                ids = [i for i, t in enumerate(vocab.token_bytes) if t == bytes([b])]
                assert m.consume(ids[0])
            prefix = head.encode()
        else:
            prefix = b""
        out = prefix + random_walk(m, vocab, rng, steps=60, stop_after=40, stop_chance=0.05)
        if m.is_accepting():
            text = out.decode("utf-8")
            assert check_tools(text), text
            calls += text.count("</function>")
    assert calls > 0


free_text = st.text(st.characters(codec="utf-8"), max_size=12).filter(lambda s: "<function=" not in s)
calls = st.one_of(
    st.builds(lambda c, d: ("weather", {"city": c} if d is None else {"city": c, "days": d}),
              st.text(max_size=6), st.one_of(st.none(), st.integers(1, 10**6))),
    st.sampled_from([("time", {"zone": "UTC"}), ("time", {"zone": "CET"})]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(free_text, calls), max_size=3), free_text)
def test_generated_texts_are_accepted(parts, tail):
    constraint = tokamata.compile_structural_tag(TOOLS, BYTES)
    text = "".join(f"{free}<function={name}>{json.dumps(args, ensure_ascii=False, separators=(',', ':'))}"
                   "</function>" for free, (name, args) in parts) + tail
    # a free part ending in a prefix of the trigger may complete it early: the checker decides
    assert accepts(constraint, text) == check_tools(text), text


# ------------------------------------------------------------------------------ tokens


def test_token_formats_on_llama3():
    vocab = llama3().vocab
    eot = vocab.special_token_names["<|eot_id|>"][0]
    start = vocab.special_token_names["<|start_header_id|>"][0]
    spec = fmt({"type": "token_triggered_tags", "trigger_tokens": ["<|start_header_id|>"], "at_least_one": True,
                "stop_after_first": True,
                "tags": [{"begin": {"type": "token", "token": "<|start_header_id|>"},
                          "content": {"type": "const_string", "value": "ok"},
                          "end": {"type": "token", "token": eot}}]})
    m = tokamata.compile_structural_tag(spec, vocab).matcher()
    hello = vocab.token_bytes.index(b"hello")
    assert m.consume(hello) and m.consume(start)
    assert not m.consume(start)
    assert m.consume(vocab.token_bytes.index(b"ok"))
    assert m.allowed_tokens().tolist() == [eot]
    assert m.consume(eot) and m.is_accepting()
    any_tokens = tokamata.compile_structural_tag(
        fmt({"type": "any_tokens", "exclude_tokens": ["hello"], "max_tokens": 2}), vocab).matcher()
    assert hello not in any_tokens.allowed_tokens().tolist()
    assert any_tokens.consume(start) and any_tokens.consume(start)
    assert set(any_tokens.allowed_tokens().tolist()) == set(vocab.eos_token_ids)


# ------------------------------------------------------------------------- bad specs

BAD = [
    ("not json", tokamata.InvalidSyntax, None),
    ([], tokamata.InvalidSyntax, ""),
    (fmt({"type": "nope"}), tokamata.InvalidSyntax, "/format/type"),
    (fmt({"type": "sequence"}), tokamata.InvalidSyntax, "/format"),
    (fmt({"type": "sequence", "elements": [{"type": "const_string", "value": 3}]}), tokamata.InvalidSyntax,
     "/format/elements/0/value"),
    (fmt({"type": "triggered_tags", "triggers": ["<a", "<ab"], "tags": [
        {"begin": "<abc>", "content": {"type": "const_string", "value": "x"}, "end": "</a>"}]}),
     tokamata.InvalidSyntax, "/format/tags/0/begin"),
    (fmt({"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "nope"}}}}),
     tokamata.SchemaError, "/format/json_schema/properties/a/type"),
    (fmt({"type": "json_schema", "json_schema": {}, "style": "qwen_xml"}), tokamata.Unsupported, "/format/style"),
    (fmt({"type": "any_text", "max_tokens": 5}), tokamata.Unsupported, "/format/max_tokens"),
    (fmt({"type": "regex", "pattern": "(a"}), tokamata.InvalidSyntax, "/format/pattern"),
    (fmt({"type": "regex", "pattern": r"(a)\1"}), tokamata.Unsupported, "/format/pattern"),
    (fmt({"type": "grammar", "grammar": 'root ::= ("x"'}), tokamata.InvalidSyntax, "/format/grammar"),
    (fmt({"type": "repeat", "min": 3, "max": 2, "content": {"type": "const_string", "value": "a"}}),
     tokamata.InvalidSyntax, "/format"),
    (fmt({"type": "token", "token": 10**6}), tokamata.InvalidSyntax, "/format/token"),
    (fmt({"type": "token", "token": "no such token"}), tokamata.InvalidSyntax, "/format/token"),
]


@pytest.mark.parametrize("spec, error, pointer", BAD)
def test_bad_specs(spec, error, pointer):
    with pytest.raises(error) as caught:
        tokamata.compile_structural_tag(spec, BYTES)
    assert caught.value.pointer == pointer


def test_deep_nesting_is_a_limit():
    node: dict = {"type": "const_string", "value": "a"}
    for _ in range(400):
        node = {"type": "optional", "content": node}
    with pytest.raises(tokamata.LimitExceeded):
        tokamata.compile_structural_tag(fmt(node), BYTES)


def test_pickles_by_recipe():
    import pickle

    constraint = tokamata.compile_structural_tag(TOOLS, BYTES)
    again = pickle.loads(pickle.dumps(constraint))
    assert accepts(again, CASES[0][1][2])
