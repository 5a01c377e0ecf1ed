"""ChunkStore port: chunk text and metadata by id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hexrag.domain.records import Chunk


@runtime_checkable
class ChunkStore(Protocol):
    """A key-value store of :class:`Chunk` records; one round trip per call."""

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by id (idempotent; read-your-writes)."""
        ...

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order (duplicates repeated), ``None`` for a missing id.

        Every stored field round-trips unchanged: ``content``, ``tokens``, ``full_doc_id``,
        ``chunk_order_index``, ``file_path`` and every ``metadata`` key with JSON values
        (``None`` values included).
        """
        ...

    async def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove chunks by id; unknown ids are ignored."""
        ...

    async def count(self) -> int:
        """Number of stored chunks."""
        ...
