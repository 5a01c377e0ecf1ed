"""LightRAG 1.5.7's own Redis layout (``RedisKVStorage``), read and written in place.

LightRAG keeps each KV namespace under the key prefix ``[<workspace>_]<namespace>:`` with one
JSON string per record (``json.dumps`` of the record, which carries ``_id``, ``create_time`` and
``update_time``; a text chunk also ``llm_cache_list``)::

    <ws>_text_chunks:<chunk id>             {"tokens", "content", "chunk_order_index",
                                             "full_doc_id", "file_path", "llm_cache_list", ...}
    <ws>_llm_response_cache:<mode>:<type>:<hash>   {"return", "cache_type", "original_prompt",
                                                    "chunk_id", "queryparam", ...}

:class:`LightRAGRedisChunkStore` is the :class:`~hexrag.ports.ChunkStore` over the text chunks
(LightRAG's record keys other than the chunk fields become :attr:`Chunk.metadata`, as in a
working directory); :class:`LightRAGRedisCache` the :class:`~hexrag.ports.Cache` over the LLM
cache (keys are LightRAG's flattened cache ids, so LightRAG and hexrag share cached keywords).
Writes add LightRAG's bookkeeping fields (``_id``, ``create_time``/``update_time``,
``llm_cache_list``) as ``RedisKVStorage.upsert`` does, so LightRAG reads what hexrag writes.
Reads are one ``MGET``; writes one ``MSET``; scans ``SCAN`` + ``MGET`` per page.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from hexrag.adapters._lightrag_chunk_record import chunk_record
from hexrag.adapters.redis._base import RedisNamespace
from hexrag.adapters.redis._fastjson import fast_decode_object
from hexrag.adapters.redis._scan import scan_page
from hexrag.adapters.redis.chunk_presence import RedisChunks
from hexrag.adapters.redis.convert import decode_object
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import Chunk
from hexrag.ports.cache import CacheTraits
from hexrag.ports.chunk_store import ChunkStoreTraits
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["LightRAGRedisCache", "LightRAGRedisChunkStore", "lightrag_key_prefix"]

_WORKSPACE_RE = re.compile(r"^[A-Za-z0-9_]*$")
_STAMPS = frozenset({"_id", "create_time", "update_time"})
#: ``RedisKVStorage.upsert`` stamps ``_id`` and the times (and ``llm_cache_list`` into a chunk).
_CHUNK_TRAITS = ChunkStoreTraits(stamped_keys=_STAMPS | {"llm_cache_list"})
_CACHE_TRAITS = CacheTraits(stamped_keys=_STAMPS)


def lightrag_key_prefix(namespace: str, workspace: str = "") -> str:
    """The key prefix ``RedisKVStorage`` uses for ``namespace`` in ``workspace``."""
    if not isinstance(workspace, str) or not _WORKSPACE_RE.match(workspace):
        raise ConfigurationError(
            f"LightRAG workspace {workspace!r} is invalid: use letters, digits and '_'"
        )
    return f"{workspace}_{namespace}:" if workspace else f"{namespace}:"


class _LightRAGRedis(RedisNamespace):
    _lightrag_namespace: ClassVar[str]

    def __init__(self, client: Redis, *, workspace: str = "", owns_client: bool = False) -> None:
        namespace = self._lightrag_namespace
        super().__init__(client, workspace="lightrag", namespace=namespace, owns_client=owns_client)
        self._workspace = workspace
        self._prefix = lightrag_key_prefix(namespace, workspace)

    @classmethod
    def from_url(cls, url: str, *, workspace: str = "", **client_options: Any) -> Any:
        """A store on a new client for ``url``; no connection is opened until first use."""
        return cls._with_new_client(url, client_options, workspace=workspace)

    async def _stamped(self, records: Mapping[str, dict[str, Any]], action: str) -> None:
        """``RedisKVStorage.upsert``: ``_id`` and times added, one ``MSET``."""
        if not records:
            return
        now = int(time.time())
        existing = await self._mget(list(records), action)
        mapping: dict[str, str] = {}
        for (key, value), old in zip(records.items(), existing, strict=True):
            value = dict(value)
            if old is None:
                value.setdefault("create_time", now)
            else:
                value.setdefault(
                    "create_time", decode_object(old, key=self.key(key)).get("create_time", now)
                )
            value.setdefault("update_time", now)
            value["_id"] = key
            mapping[self.key(key)] = json.dumps(value)
        await self._mset(mapping, action)


class LightRAGRedisChunkStore(RedisChunks, _LightRAGRedis):
    """``<ws>_text_chunks:*`` (LightRAG's text chunks) as a :class:`~hexrag.ports.ChunkStore`."""

    _lightrag_namespace = "text_chunks"

    @property
    def traits(self) -> ChunkStoreTraits:
        """LightRAG's bookkeeping keys are stamped into every chunk (read back in metadata)."""
        return _CHUNK_TRAITS

    @staticmethod
    def _chunk(chunk_id: str, value: Mapping[str, Any]) -> Chunk:
        fields: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        for key, val in value.items():
            if key in ("content", "full_doc_id", "file_path") and isinstance(val, str):
                fields[key] = val
            elif (
                key in ("tokens", "chunk_order_index")
                and isinstance(val, int)
                and not isinstance(val, bool)
            ):
                fields[key] = val
            else:
                metadata[key] = val
        content = fields.pop("content", "")
        return Chunk(id=chunk_id, content=content, metadata=metadata, **fields)

    def _decode_chunks(self, ids: list[str], raw: list[Any]) -> list[Chunk | None]:
        chunk = self._chunk
        prefix = self._prefix
        return [
            None if value is None else chunk(i, fast_decode_object(value, key=prefix + i))
            for i, value in zip(ids, raw, strict=True)
        ]

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Write chunks as LightRAG's records (one ``MGET`` for the times, one ``MSET``)."""
        records: dict[str, dict[str, Any]] = {}
        for c in chunks:
            out = chunk_record(c)
            out.setdefault("llm_cache_list", [])
            records[c.id] = out
        await self._stamped(records, "upsert_chunks")

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks (one ``SCAN`` and one ``MGET``)."""
        items, nxt = await scan_page(self, cursor, limit, "scan_chunks")
        return Page(
            [self._chunk(i, decode_object(value, key=self.key(i))) for i, value in items], nxt
        )


class LightRAGRedisCache(_LightRAGRedis):
    """``<ws>_llm_response_cache:*`` (LightRAG's LLM cache) as a :class:`~hexrag.ports.Cache`."""

    _lightrag_namespace = "llm_response_cache"

    @property
    def traits(self) -> CacheTraits:
        """LightRAG's ``_id`` and times are stamped into every entry."""
        return _CACHE_TRAITS

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Entries in request order, ``None`` for a missing key (one ``MGET``)."""
        keys = list(keys)
        raw = await self._mget(keys, "get_many")
        return [
            None if value is None else fast_decode_object(value, key=self.key(k))
            for k, value in zip(keys, raw, strict=True)
        ]

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries as LightRAG does (``_id`` and times added)."""
        await self._stamped({str(k): dict(v) for k, v in entries.items()}, "set_many")

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys (one ``DEL``)."""
        await self._delete(list(keys), "delete_many")

    async def scan_entries(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[tuple[str, dict[str, Any]]]:
        """A page of ``(key, entry)`` (one ``SCAN`` and one ``MGET``)."""
        items, nxt = await scan_page(self, cursor, limit, "scan_entries")
        return Page([(k, decode_object(v, key=self.key(k))) for k, v in items], nxt)

    async def count(self) -> int:
        """Number of entries (``SCAN`` of the prefix); not part of the port."""
        return await self._count("count")

    async def clear(self) -> None:
        """Remove every entry of this workspace's cache (``SCAN`` + ``UNLINK``)."""
        await self._clear("clear")
