"""Token healing (seed 003, section 4.4): give the prompt's last token(s) back to the output,
so that the model may choose a token that spans the prompt's end.

A prompt that ends in ``"https:"`` is encoded with ``":"`` as its own token, while the text
the model saw in training spells ``"://"`` as one token; constraining the output to start
after ``":"`` forbids that token forever. :func:`heal` removes such tail tokens and returns
their bytes; ``constraint.matcher(prefix=removed)`` then requires the output to begin with
exactly those bytes (tokens may span the junction: ``cpp/include/tokamata/matcher_core.hpp``,
the prefix phase).

Invariants:
- The rule: ``heal(vocab, ids, k)`` removes the last ``j`` tokens for the largest ``j <= k``
  such that for every ``i <= j`` the bytes of the last ``i`` tokens are a proper prefix of
  some text token (a vocabulary token begins with them and is longer): removing a token no
  longer token could replace gains nothing. It never removes a special token (EOS, control,
  padding ids): healing stops at the first one.
- ``vocab.decode(kept) + removed == vocab.decode(ids)``, and ``kept`` is ``ids[:len(ids) - j]``.
- Bad input (a prompt that is not a sequence of ints, ids outside ``[0, vocab.size)``, an
  empty prompt, ``max_tokens`` not an int in ``[0, len(ids)]``) raises
  :class:`~tokamata.InvalidArgument` before anything is computed.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from .errors import InvalidArgument
from .trie import core_trie
from .vocab import Vocabulary

__all__ = ["heal"]


def heal(vocab: Vocabulary, prompt_ids: Sequence[int], max_tokens: int = 1) -> tuple[list[int], bytes]:
    """Remove up to ``max_tokens`` last prompt tokens that a longer token could replace;
    return the kept ids and the removed bytes (see the module docstring for the rule).

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"https", b":", b"://", b"//", b"a", None],
    ...                                              eos_token_ids=[5])
    >>> kept, removed = tokamata.heal(vocab, [0, 1])          # "https" ":"
    >>> kept, removed
    ([0], b':')
    >>> m = tokamata.compile_regex(r"//a+", vocab).matcher(prefix=removed)
    >>> m.allowed_tokens().tolist()                           # ":" or "://" (spans the junction)
    [1, 2]
    """
    if not isinstance(vocab, Vocabulary):
        raise InvalidArgument(f"heal takes a tokamata.Vocabulary, got {type(vocab).__name__}")
    ids = _prompt_ids(prompt_ids, vocab.size)
    if not ids:
        raise InvalidArgument("cannot heal an empty prompt")
    if isinstance(max_tokens, bool):
        raise InvalidArgument(f"max_tokens must be an int, got {max_tokens!r}")
    try:
        limit = operator.index(max_tokens)
    except TypeError:
        raise InvalidArgument(f"max_tokens must be an int, got {max_tokens!r}") from None
    if not 0 <= limit <= len(ids):
        raise InvalidArgument(f"max_tokens must be in [0, {len(ids)}] (the prompt's length), got {limit}")
    trie = core_trie(vocab)
    tokens = vocab.token_bytes
    removed = b""
    kept = len(ids)
    while len(ids) - kept < limit:
        token = ids[kept - 1]
        data = tokens[token] if token < len(tokens) else None
        if data is None or not trie.has_longer_token(data + removed):
            break
        removed = data + removed
        kept -= 1
    return ids[:kept], removed


def _prompt_ids(prompt_ids: object, size: int) -> list[int]:
    """``prompt_ids`` as a list of ints in ``[0, size)``, or InvalidArgument."""
    if isinstance(prompt_ids, (str, bytes, bytearray, memoryview)):
        raise InvalidArgument(f"prompt ids must be a sequence of ints, got {type(prompt_ids).__name__}")
    try:
        items = list(prompt_ids)  # type: ignore[call-overload]
    except TypeError:
        raise InvalidArgument(f"prompt ids must be a sequence of ints, got {type(prompt_ids).__name__}") from None
    ids = []
    for item in items:
        if isinstance(item, bool):
            raise InvalidArgument("prompt ids must be ints, got a bool")
        try:
            token = operator.index(item)
        except TypeError:
            raise InvalidArgument(f"prompt ids must be ints, got {type(item).__name__} {item!r}") from None
        if not 0 <= token < size:
            raise InvalidArgument(f"token id {token} out of range [0, {size})")
        ids.append(token)
    return ids
