"""``RedisChunkStore``: the ChunkStore port on Redis string keys holding JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hexrag.adapters.redis._base import RedisStore
from hexrag.adapters.redis._fastjson import fast_decode_object
from hexrag.adapters.redis._scan import scan_page
from hexrag.adapters.redis.chunk_presence import RedisChunks
from hexrag.adapters.redis.convert import chunk_from_json, chunk_to_json
from hexrag.domain.records import Chunk
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

__all__ = ["RedisChunkStore"]


class RedisChunkStore(RedisChunks, RedisStore):
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

    def _decode_chunks(self, ids: list[str], raw: list[Any]) -> list[Chunk | None]:
        return [
            None if value is None else chunk_from_json(i, fast_decode_object(value, key=i))
            for i, value in zip(ids, raw, strict=True)
        ]

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks: one ``SCAN`` and one ``MGET``
        (:mod:`hexrag.adapters.redis._scan`, :class:`~hexrag.ports.scan.ScansChunks`)."""
        items, nxt = await scan_page(self, cursor, limit, "scan_chunks")
        return Page([chunk_from_json(i, value) for i, value in items], nxt)
