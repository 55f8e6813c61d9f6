"""Facts about canonical token sequences: the ones a tokenizer itself produces.

A token sequence ``ids`` is *canonical* when ``ids == encode(decode(ids))`` (the encoder of
:class:`~tokamata.vocab.tokenizer_model.TokenizerModel`, continuation mode). Canonical masks
need that property as something local, checkable token by token; this module states the local
rules and the facts they use, and the tests check them against the encoder on real tokenizers.

- :func:`unreachable_tokens`: tokens no text ever encodes to. A token is *reachable* when it
  is an added token; or its piece's merges rebuild it (``merge(symbols(t)) == [t]``, so it can
  sit inside a longer pretoken), its piece is what normalization writes, and its text contains
  no added token's text (added tokens are cut out of the text before anything else); or, with
  ``ignore_merges``, its text alone is one pretoken equal to its piece; or it is a byte-fallback
  ``<0xNN>`` token and some character that is no piece has the byte ``NN`` in its UTF-8.
- :func:`bigram_canonical`: the merges alone (no pre-tokenizer, no ``ignore_merges``) turn the
  symbols of ``a`` followed by those of ``b`` into exactly ``[a, b]``.
- :func:`local_violation`: the local rules. ``ids`` is canonical iff all hold:

  0. the tokens spell the normalized text (no token holds what normalization removes);
  1. every added-token match of the text is one token, the added token;
  2. every pretoken boundary is a token boundary (no token crosses a pretoken split);
  3. inside one pretoken ``P``: with ``ignore_merges`` and ``P`` a piece, the only token is
     ``P`` itself; otherwise every token is merge-reachable, every adjacent pair is
     :func:`bigram_canonical`, and every maximal run of byte-fallback tokens spells whole
     characters none of which is a piece (a character in the vocabulary is never spelled in
     bytes).

  With ``literal=True`` it checks only the rules as first stated (2, the bigram test inside
  pretokens, and no unreachable token), to measure what the refinements (0, 1, the
  ``ignore_merges`` rule, the byte runs) add. See docs/tokenization.md for the results.

All functions take a :class:`~tokamata.vocab.vocabulary.Vocabulary` whose ``tokenizer_model``
is exact (:class:`~tokamata.Unsupported` otherwise).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from .tokenizer_model import TokenizerModel
from .vocabulary import Vocabulary

__all__ = ["bigram_canonical", "local_violation", "merge_reachable", "unreachable_tokens"]


def _model(vocab: Vocabulary) -> TokenizerModel:
    return vocab.exact_tokenizer()


def merge_reachable(vocab: Vocabulary, token_id: int) -> bool:
    """The merges rebuild ``token_id`` from its piece's initial symbols (byte tokens: True)."""
    model = _model(vocab)
    if model.is_byte_token(token_id):
        return True
    symbols = model.token_symbols(token_id)
    return bool(symbols) and model.merge(symbols) == [token_id]


def bigram_canonical(vocab: Vocabulary, a: int, b: int) -> bool:
    """The merges alone give exactly ``[a, b]`` for the symbols of ``a`` then ``b``.

    >>> from tokamata.vocab import TokenizerModel, Vocabulary
    >>> model = TokenizerModel.from_pieces({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
    >>> v = Vocabulary([b"a", b"b", b"ab", None], [3], tokenizer_model=model)
    >>> bigram_canonical(v, 0, 1), bigram_canonical(v, 2, 0), bigram_canonical(v, 1, 0)
    (False, True, True)
    """
    model = _model(vocab)
    sa, sb = model.token_symbols(a), model.token_symbols(b)
    return bool(sa) and bool(sb) and model.merge(sa + sb) == [a, b]


def _fallback_bytes(model: TokenizerModel) -> set[int]:
    """Bytes that occur in the UTF-8 of some character that is no piece (a scan of the code
    points in order, stopped once every byte that UTF-8 uses is found)."""
    pieces = model.tables().pieces
    missing = set(range(256)) - {0xC0, 0xC1} - set(range(0xF5, 0x100))  # never in UTF-8
    found: set[int] = set()
    for cp in itertools.chain(range(0xD800), range(0xE000, 0x110000)):
        if not missing:
            break
        ch = chr(cp)
        if ch not in pieces:
            data = ch.encode("utf-8")
            if not missing.isdisjoint(data):
                found.update(data)
                missing.difference_update(data)
    return found


def unreachable_tokens(vocab: Vocabulary, candidates: Iterable[int] | None = None) -> list[int]:
    """Sorted ids (among ``candidates``, default: every id whose ``token_bytes`` is text) that
    no text encodes to (see the module docstring for what reaches a token)."""
    model = _model(vocab)
    tables = model.tables()
    if candidates is None:
        candidates = [i for i, b in enumerate(vocab.token_bytes) if b is not None]
    added_ids = {i for _, i in model.added_tokens}
    added_texts = [t for t, _ in model.added_tokens if t]
    fallback = _fallback_bytes(model) if model.byte_fallback else set()
    out = []
    for t in candidates:
        if t in added_ids:
            continue
        b = tables.byte_of.get(t)
        if b is not None:
            if b not in fallback:
                out.append(t)
            continue
        piece = tables.piece_of.get(t)
        raw = vocab.token_bytes[t] if t < len(vocab.token_bytes) else None
        if piece is None or raw is None:
            out.append(t)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and any(a in text for a in added_texts):
            out.append(t)
            continue
        reachable = False
        if text is None or model.normalize(text).encode("utf-8") == model.token_text_bytes(t):
            symbols = model.token_symbols(t)
            reachable = bool(symbols) and model.merge(symbols) == [t]
        if not reachable and model.ignore_merges and text is not None:
            reachable = model.pretokenize(text) == [piece]
        if not reachable:
            out.append(t)
    return out


def _boundaries(model: TokenizerModel, text: str) -> tuple[bytes, list[tuple[int, int, int | None]]]:
    """The normalized text as bytes and its pretokens as ``(start, end, added id)`` byte spans
    of it (``added id`` set for an added-token match)."""
    spans: list[tuple[int, int, int | None]] = []
    parts: list[bytes] = []
    at = 0
    for stretch, added in model.split_added(text):
        if added is not None:
            data = stretch.encode("utf-8")
            spans.append((at, at + len(data), added))
            parts.append(data)
            at += len(data)
            continue
        for piece in model.pretokenize(stretch):
            data = model.piece_bytes(piece) or b""
            spans.append((at, at + len(data), None))
            parts.append(data)
            at += len(data)
    return b"".join(parts), spans


def local_violation(vocab: Vocabulary, ids: Sequence[int], *, literal: bool = False,
                    unreachable: set[int] | None = None) -> str | None:
    """``None`` if ``ids`` satisfies the local rules (module docstring), else the name of the
    first rule it breaks. ``unreachable`` is :func:`unreachable_tokens`' result (computed when
    not given; pass it when checking many sequences). ``decode(ids)`` must be UTF-8."""
    model = _model(vocab)
    tables = model.tables()
    text = vocab.decode(ids).decode("utf-8")
    if literal and unreachable is None:
        unreachable = set(unreachable_tokens(vocab))
    normalized, spans = _boundaries(model, text)
    token_bytes = [model.token_text_bytes(t) or b"" for t in ids]
    if b"".join(token_bytes) != normalized:
        return "spelling"
    starts = {}
    at = 0
    for k, data in enumerate(token_bytes):
        starts[at] = k
        at += len(data)
    starts[at] = len(ids)
    for start, end, added in spans:
        if start not in starts or end not in starts:
            return "pretoken boundary"
        inside = list(ids[starts[start]:starts[end]])
        if literal:
            if any(t in unreachable for t in inside):  # type: ignore[operator]
                return "unreachable token"
            if any(not bigram_canonical(vocab, a, b) for a, b in zip(inside, inside[1:])):
                return "bigram"
            continue
        if added is not None:
            if inside != [added]:
                return "added token"
            continue
        if model.ignore_merges:
            whole = tables.pieces.get(model.bytes_piece(normalized[start:end]))
            if whole is not None:
                if inside != [whole]:
                    return "ignore_merges pretoken"
                continue
        if any(not merge_reachable(vocab, t) for t in inside):
            return "unreachable token"
        if any(not bigram_canonical(vocab, a, b) for a, b in zip(inside, inside[1:])):
            return "bigram"
        run: list[int] = []
        for t in inside + [-1]:
            if t >= 0 and model.is_byte_token(t):
                run.append(tables.byte_of[t])
                continue
            if run:
                try:
                    chars = bytes(run).decode("utf-8")
                except UnicodeDecodeError:
                    return "byte run"
                if any(c in tables.pieces for c in chars):
                    return "byte run"
                run = []
    return None

