"""In-memory :class:`~hexrag.ports.ChunkStore`."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from hexrag.domain.records import Chunk
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

from ._scan import InsertionOrder


def _detached(chunk: Chunk) -> Chunk:
    # The caller keeps its metadata dict; the store must not change when the caller mutates it.
    return replace(chunk, metadata=copy.deepcopy(dict(chunk.metadata)))


class MemoryChunkStore:
    """A dict of :class:`Chunk` by id (insertion order; a replaced chunk keeps its place).

    Metadata is deep-copied on write, so callers cannot change stored chunks by mutating
    what they passed in.
    """

    def __init__(self, chunks: Iterable[Chunk] = ()) -> None:
        self._chunks: dict[str, Chunk] = {c.id: _detached(c) for c in chunks}
        self._order = InsertionOrder(self._chunks)

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by id."""
        for c in chunks:
            self._chunks[c.id] = _detached(c)
            self._order.add(c.id)

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order (duplicates repeated); ``None`` for a missing id."""
        return [self._chunks.get(i) for i in ids]

    async def get_chunk_metadata(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        """The ``metadata`` of :meth:`get_chunks`' records
        (:class:`~hexrag.ports.chunk_metadata.ChunkMetadata`)."""
        return [None if (c := self._chunks.get(i)) is None else c.metadata for i in ids]

    async def get_chunks_and_presence(
        self, ids: Sequence[str], probe: Sequence[str]
    ) -> tuple[list[Chunk | None], set[str]]:
        """:meth:`get_chunks` of ``ids`` and which of ``probe`` are stored
        (:class:`~hexrag.ports.chunk_presence.ChunksWithPresence`)."""
        return [self._chunks.get(i) for i in ids], {i for i in probe if i in self._chunks}

    async def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove chunks by id; unknown ids are ignored."""
        for i in ids:
            self._chunks.pop(i, None)
            self._order.remove(i)

    async def count(self) -> int:
        """Number of stored chunks."""
        return len(self._chunks)

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks in insertion order (:class:`~hexrag.ports.scan.ScansChunks`)."""
        ids, nxt = self._order.page(cursor, limit)
        return Page([_detached(self._chunks[i]) for i in ids], nxt)

    def iter_chunks(self) -> Iterator[Chunk]:
        """Every chunk in insertion order."""
        return iter(list(self._chunks.values()))

    def __repr__(self) -> str:
        return f"MemoryChunkStore(count={len(self._chunks)})"
