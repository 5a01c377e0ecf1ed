"""Documents into chunks: LightRAG 1.5.7's fixed token-window chunker, stated plainly.

:func:`chunk_by_tokens` is LightRAG's ``chunking_by_token_size`` (``lightrag/chunker/
token_size.py``), the default of its ``chunking_func`` (``CHUNK_SIZE`` 1200 tokens,
``CHUNK_OVERLAP_SIZE`` 100):

* without ``split_by_character``: the whole text is encoded once; windows of
  ``chunk_token_size`` tokens start every ``chunk_token_size - chunk_overlap_token_size``
  tokens; each window is decoded, and its ``tokens`` is ``min(size, remaining)``;
* with ``split_by_character``: the text is split on it; with ``split_by_character_only`` every
  segment is one chunk and a segment over the limit is refused
  (:class:`~hexrag.core.errors.InvalidDocument`, LightRAG's ``ChunkTokenLimitExceededError``);
  otherwise a segment over the limit is cut into windows as above, the others kept whole;
* every chunk's content is ``.strip()``-ped (its ``tokens`` count is not recomputed) and
  chunks are numbered ``0, 1, ...`` in order (empty ones included, as LightRAG numbers them).

``tests/unit/test_chunking.py`` proves it equal to LightRAG's own function on generated texts.
"""

from __future__ import annotations

from dataclasses import dataclass

from hexrag.core.tokenizer import Tokenizer
from hexrag.domain.errors import InvalidDocument

__all__ = ["DEFAULT_CHUNK_OVERLAP", "DEFAULT_CHUNK_SIZE", "TextChunk", "chunk_by_tokens"]

DEFAULT_CHUNK_SIZE = 1200
"""LightRAG's ``CHUNK_SIZE``."""
DEFAULT_CHUNK_OVERLAP = 100
"""LightRAG's ``CHUNK_OVERLAP_SIZE``."""


@dataclass(frozen=True, slots=True)
class TextChunk:
    """One chunk as LightRAG's chunker returns it (``tokens``, ``content``,
    ``chunk_order_index``)."""

    content: str
    tokens: int
    order: int


def _step(size: int, overlap: int) -> int:
    if overlap >= size:
        raise InvalidDocument(
            f"chunk_overlap_token_size ({overlap}) must be < chunk_token_size ({size})"
        )
    return size - overlap


def _windows(
    tokenizer: Tokenizer, tokens: list[int], size: int, overlap: int
) -> list[tuple[int, str]]:
    out = []
    for start in range(0, len(tokens), _step(size, overlap)):
        end = min(start + size, len(tokens))
        out.append((min(size, len(tokens) - start), tokenizer.decode(tokens[start:end])))
    return out


def chunk_by_tokens(
    text: str,
    tokenizer: Tokenizer,
    *,
    chunk_token_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap_token_size: int = DEFAULT_CHUNK_OVERLAP,
    split_by_character: str | None = None,
    split_by_character_only: bool = False,
) -> list[TextChunk]:
    """LightRAG's chunks of ``text`` (see the module docstring)."""
    if chunk_overlap_token_size < 0:
        raise InvalidDocument(
            f"chunk_overlap_token_size must be non-negative, got {chunk_overlap_token_size}"
        )
    pieces: list[tuple[int, str]] = []
    if split_by_character:
        for segment in text.split(split_by_character):
            tokens = tokenizer.encode(segment)
            if len(tokens) <= chunk_token_size:
                pieces.append((len(tokens), segment))
            elif split_by_character_only:
                raise InvalidDocument(
                    f"a segment split by {split_by_character!r} has {len(tokens)} tokens, more "
                    f"than chunk_token_size {chunk_token_size}: {segment.strip()[:80]!r}"
                )
            else:
                pieces += _windows(tokenizer, tokens, chunk_token_size, chunk_overlap_token_size)
    else:
        pieces = _windows(
            tokenizer, tokenizer.encode(text), chunk_token_size, chunk_overlap_token_size
        )
    return [
        TextChunk(content=content.strip(), tokens=n, order=i)
        for i, (n, content) in enumerate(pieces)
    ]
