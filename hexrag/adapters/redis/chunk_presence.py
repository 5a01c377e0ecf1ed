"""One round trip for a few whole chunks and the presence of many: the Redis side of
:class:`~hexrag.ports.chunk_presence.ChunksWithPresence`.

``MGET`` of the whole ones and, in the same pipeline, one ``EVAL`` of a read-only script that
answers ``EXISTS`` for every probed key (one command and one array reply: a pipeline of one
``EXISTS`` per key costs more client time than reading every value). A server that refuses
scripts gets the ``EXISTS`` pipeline instead. :class:`RedisChunks` is the one Redis chunk
store, whatever its layout (hexrag's or LightRAG's), and reads through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hexrag.adapters.redis._base import RedisNamespace, translate_errors
from hexrag.adapters.redis._fastjson import fast_decode_object
from hexrag.adapters.redis._scan import scan_page
from hexrag.adapters.redis.layouts import RedisRecords
from hexrag.domain.records import Chunk
from hexrag.ports.chunk_store import ChunkStoreTraits
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

__all__ = ["EXISTS_SCRIPT", "RedisChunks", "mget_and_presence"]

EXISTS_SCRIPT = (
    "local out = {} for i, k in ipairs(KEYS) do out[i] = redis.call('EXISTS', k) end "
    "return out"
)


async def mget_and_presence(
    ns: RedisNamespace, ids: Sequence[str], probe: Sequence[str], action: str
) -> tuple[list[Any], set[str]]:
    """The raw values of ``ids`` (request order, ``None`` when absent) and the ids of
    ``probe`` whose key exists; one pipelined round trip (no transaction)."""
    from redis.exceptions import ResponseError

    ids = list(ids)
    probed = list(dict.fromkeys(probe))
    if not ids and not probed:
        return [], set()
    keys = ns.keys(probed)
    with translate_errors(action):
        pipe = ns.client.pipeline(transaction=False)
        if ids:
            pipe.mget(ns.keys(ids))
        if keys:
            pipe.eval(EXISTS_SCRIPT, len(keys), *keys)
        try:
            replies = await pipe.execute()
            flags = list(replies[-1]) if keys else []
        except ResponseError:  # scripting refused: one EXISTS per key
            pipe = ns.client.pipeline(transaction=False)
            if ids:
                pipe.mget(ns.keys(ids))
            for key in keys:
                pipe.exists(key)
            replies = await pipe.execute()
            flags = replies[1:] if ids else replies
    raw: list[Any] = list(replies[0]) if ids else []
    present = {i for i, n in zip(probed, flags, strict=True) if n}
    return raw, present


class RedisChunks(RedisRecords):
    """The :class:`~hexrag.ports.ChunkStore` port on Redis, written once for every layout
    (:class:`~hexrag.adapters.redis.layouts.RedisLayout`: the record of a chunk and back, the
    encoding, the stamps, the traits): :meth:`get_chunks` (one ``MGET``),
    :meth:`get_chunks_and_presence` (:func:`mget_and_presence`), :meth:`upsert_chunks` (one
    ``MSET``, after one ``MGET`` in a stamping layout), :meth:`scan_chunks`,
    :meth:`delete_chunks`, :meth:`count` and :meth:`clear`."""

    @property
    def traits(self) -> ChunkStoreTraits:
        """The rules this store declares (its layout's;
        :class:`~hexrag.ports.chunk_store.ChunkStoreTraits`)."""
        return self._layout.chunk_traits()

    def _decode_chunks(self, ids: list[str], raw: list[Any]) -> list[Chunk | None]:
        """The chunks of ``ids`` from their raw values (``None`` where a value is absent)."""
        chunk, prefix = self._layout.chunk, self._prefix
        return [
            None if value is None else chunk(i, fast_decode_object(value, key=prefix + i))
            for i, value in zip(ids, raw, strict=True)
        ]

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by id (the last duplicate id wins): one ``MSET`` (a
        stamping layout reads the stored times first, one ``MGET``)."""
        record = self._layout.chunk_record
        await self._write({c.id: record(c) for c in chunks}, "upsert_chunks")

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order (duplicates repeated), ``None`` for a missing id (one
        ``MGET``)."""
        ids = list(ids)
        return self._decode_chunks(ids, await self._mget(ids, "get_chunks"))

    async def get_chunks_and_presence(
        self, ids: Sequence[str], probe: Sequence[str]
    ) -> tuple[list[Chunk | None], set[str]]:
        """:meth:`get_chunks` of ``ids`` and which of ``probe`` exist, in one pipelined round
        trip (``MGET`` + ``EXISTS``; :class:`~hexrag.ports.chunk_presence.ChunksWithPresence`)."""
        ids = list(ids)
        raw, present = await mget_and_presence(self, ids, probe, "get_chunks_and_presence")
        return self._decode_chunks(ids, raw), present

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks: one ``SCAN`` and one ``MGET``
        (:mod:`hexrag.adapters.redis._scan`, :class:`~hexrag.ports.scan.ScansChunks`)."""
        items, nxt = await scan_page(self, cursor, limit, "scan_chunks")
        chunks = self._decode_chunks([i for i, _ in items], [v for _, v in items])
        return Page([c for c in chunks if c is not None], nxt)

    async def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove chunks by id (one ``DEL``); unknown ids are ignored."""
        await self._delete(list(ids), "delete_chunks")

    async def count(self) -> int:
        """Number of stored chunks (a ``SCAN`` of the namespace: O(keys))."""
        return await self._count("count")

    async def clear(self) -> None:
        """Remove every chunk of this namespace (``SCAN`` + ``UNLINK``: O(keys))."""
        await self._clear("clear")
