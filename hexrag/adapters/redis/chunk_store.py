"""``RedisChunkStore``: the ChunkStore port on Redis string keys holding JSON."""

from __future__ import annotations

from collections.abc import Sequence

from hexrag.adapters.redis._base import RedisStore
from hexrag.adapters.redis._fastjson import fast_decode_object
from hexrag.adapters.redis._scan import scan_page
from hexrag.adapters.redis.convert import chunk_from_json, chunk_to_json
from hexrag.domain.records import Chunk
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

__all__ = ["RedisChunkStore"]


class RedisChunkStore(RedisStore):
    """Chunks under ``f"{workspace}:{namespace}:{chunk_id}"`` as flat JSON records.

    :func:`~hexrag.adapters.redis.convert.chunk_to_json` describes the value shape.
    ``get_chunks`` is one ``MGET``, ``upsert_chunks`` one ``MSET``, ``delete_chunks`` one
    ``DEL``. ``count`` walks the namespace with ``SCAN`` (O(number of keys in the
    database), several round trips; never ``KEYS``).
    """

    _default_namespace = "text_chunks"

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by id (one ``MSET``; the last duplicate id wins)."""
        mapping = {self.key(c.id): chunk_to_json(c) for c in chunks}
        await self._mset(mapping, "upsert_chunks")

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order (duplicates repeated), ``None`` for a missing id."""
        ids = list(ids)
        raw = await self._mget(ids, "get_chunks")
        return [
            None if value is None else chunk_from_json(i, fast_decode_object(value, key=i))
            for i, value in zip(ids, raw, strict=True)
        ]

    async def get_chunks_and_presence(
        self, ids: Sequence[str], probe: Sequence[str]
    ) -> tuple[list[Chunk | None], set[str]]:
        """:meth:`get_chunks` of ``ids`` and which of ``probe`` exist, in one pipelined round
        trip (``MGET`` + ``EXISTS``; :class:`~hexrag.ports.chunk_presence.ChunksWithPresence`)."""
        from hexrag.adapters.redis.chunk_presence import mget_and_presence

        ids = list(ids)
        raw, present = await mget_and_presence(self, ids, probe, "get_chunks_and_presence")
        return [
            None if value is None else chunk_from_json(i, fast_decode_object(value, key=i))
            for i, value in zip(ids, raw, strict=True)
        ], present

    async def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove chunks by id (one ``DEL``); unknown ids are ignored."""
        await self._delete(list(ids), "delete_chunks")

    async def count(self) -> int:
        """Number of stored chunks (a ``SCAN`` of the namespace: O(keys))."""
        return await self._count("count")

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks: one ``SCAN`` and one ``MGET``
        (:mod:`hexrag.adapters.redis._scan`, :class:`~hexrag.ports.scan.ScansChunks`)."""
        items, nxt = await scan_page(self, cursor, limit, "scan_chunks")
        return Page([chunk_from_json(i, value) for i, value in items], nxt)

    async def clear(self) -> None:
        """Remove every chunk of this namespace (``SCAN`` + ``UNLINK``: O(keys))."""
        await self._clear("clear")
