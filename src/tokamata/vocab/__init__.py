"""The vocabulary: token id -> the exact bytes that token appends to the output text.

- :mod:`tokamata.vocab.vocabulary`: the :class:`Vocabulary` class and its invariants, the EOS
  names (:data:`WELL_KNOWN_EOS_NAMES`), the kinds; no file format.
- :mod:`tokamata.vocab.huggingface`: a ``tokenizer.json`` or a transformers fast tokenizer ->
  ``Vocabulary`` (``Vocabulary.from_tokenizer_json``, ``Vocabulary.from_hf``).
- :mod:`tokamata.vocab.gguf`: the tokenizer metadata of a GGUF file -> ``Vocabulary``
  (``Vocabulary.from_gguf``).
- :mod:`tokamata.vocab.tokenizer_model`: :class:`TokenizerModel`, how the tokenizer *encodes*
  text (``vocab.tokenizer_model``), with an exact reference encoder built from
  :mod:`~tokamata.vocab.normalize`, :mod:`~tokamata.vocab.pretokenize` and
  :mod:`~tokamata.vocab.bpe`; :mod:`tokamata.vocab.canonical`: the facts canonical token
  sequences rest on (unreachable tokens, canonical bigrams).

Invariants: importing the package (which Python does before any of its modules) registers both
readers, so every ``Vocabulary.from_*`` works whichever module is imported first; the readers
import ``vocabulary``, never the reverse, and nothing here imports torch, transformers,
tokenizers, numpy or the ``gguf`` package.

>>> from tokamata.vocab import Vocabulary
>>> Vocabulary.from_token_bytes([b"Y", b"es", None], eos_token_ids=[2]).decode([0, 1, 2])
b'Yes'
"""

from . import gguf, huggingface  # noqa: F401  (importing them registers the readers)
from .tokenizer_model import TokenizerModel
from .vocabulary import (KIND_BYTE_LEVEL, KIND_BYTES, KIND_SENTENCEPIECE, KINDS,  # noqa: F401
                         WELL_KNOWN_EOS_NAMES, Vocabulary)

__all__ = ["TokenizerModel", "Vocabulary", "WELL_KNOWN_EOS_NAMES"]
