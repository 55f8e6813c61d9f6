"""Where a command's vocabulary comes from: ``--tokenizer-json PATH``, ``--gguf PATH`` or
``--hf DIR`` (a local transformers tokenizer folder; nothing is downloaded).

Invariants:
- A missing file or folder is a :class:`~.constraints.CliError` naming it.
- ``check`` may run without a vocabulary: it then compiles over :func:`byte_vocabulary`, the
  256 single bytes plus one EOS, which every constraint compiles against exactly as it would
  against a real one (errors about the constraint's text do not depend on the vocabulary).
"""

from __future__ import annotations

import argparse
import os

from .constraints import CliError
from .progress import Progress

__all__ = ["add_vocabulary_options", "load_vocabulary", "byte_vocabulary"]


def add_vocabulary_options(parser: argparse.ArgumentParser, required: bool) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--tokenizer-json", metavar="PATH", help="a Hugging Face tokenizer.json")
    group.add_argument("--gguf", metavar="PATH", help="a GGUF file (model or vocab-only)")
    group.add_argument("--hf", metavar="DIR", help="a local transformers tokenizer folder")


def byte_vocabulary():
    """The 256 single bytes and an EOS (id 256)."""
    import tokamata

    return tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])


def load_vocabulary(args: argparse.Namespace, progress: Progress):
    """(vocabulary, its source, an encoder ``text -> ids`` or None) from the options; (None,
    None, None) when none is given."""
    import tokamata

    if args.tokenizer_json:
        path = _existing(args.tokenizer_json, "tokenizer.json")
        with progress.step(f"reading {path}"):
            vocab = tokamata.Vocabulary.from_tokenizer_json(path)
        return vocab, path, _tokenizers_encoder(path)
    if args.gguf:
        path = _existing(args.gguf, "GGUF")
        with progress.step(f"reading the vocabulary of {path}"):
            vocab = tokamata.Vocabulary.from_gguf(path)
        return vocab, path, None
    if getattr(args, "hf", None):
        path = args.hf
        if not os.path.isdir(path):
            raise CliError(f"the tokenizer folder {path!r} does not exist")
        try:
            from transformers import AutoTokenizer
        except ImportError:
            raise CliError("--hf needs transformers: pip install transformers") from None
        with progress.step(f"loading the tokenizer in {path}"):
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            vocab = tokamata.Vocabulary.from_hf(tokenizer)
        return vocab, path, lambda text: tokenizer.encode(text, add_special_tokens=False)
    return None, None, None


def _existing(path: str, what: str) -> str:
    if not os.path.isfile(path):
        raise CliError(f"the {what} file {path!r} does not exist")
    return path


def _tokenizers_encoder(path: str):
    try:
        import tokenizers
    except ImportError:
        return None
    tokenizer = tokenizers.Tokenizer.from_file(path)
    return lambda text: tokenizer.encode(text, add_special_tokens=False).ids
