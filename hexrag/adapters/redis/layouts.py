"""How a Redis key-value store names its keys and encodes its records: hexrag's layout and
LightRAG 1.5.7's (``RedisKVStorage``), as strategies, with the write both use.

A layout (:class:`RedisLayout`) says how a chunk becomes a stored record and back, how a record
is serialised, whether writes stamp LightRAG's bookkeeping fields, and the rules the stores
declare (:class:`~hexrag.ports.chunk_store.ChunkStoreTraits`,
:class:`~hexrag.ports.cache.CacheTraits`). Keys are ``<prefix><id>``: hexrag's prefix is
``<workspace>:<namespace>:`` (:class:`~hexrag.adapters.redis._base.RedisNamespace`),
LightRAG's :func:`lightrag_key_prefix`. :class:`RedisRecords` holds the layout and writes
through it; the port methods are written once on top of it -
:class:`~hexrag.adapters.redis.chunk_presence.RedisChunks` (every chunk store) and
:class:`~hexrag.adapters.redis.cache.RedisKV` (every cache and KV namespace) - and the named
stores (:class:`~hexrag.adapters.redis.RedisChunkStore`,
:class:`~hexrag.adapters.redis.lightrag_layout.LightRAGRedisChunkStore`, ...) only construct
(client, workspace, namespace) and pick their layout.

A new layout is a :class:`RedisLayout` subclass overriding what differs.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

from hexrag.adapters._lightrag_chunk_record import chunk_record
from hexrag.adapters.redis._base import RedisNamespace
from hexrag.adapters.redis.convert import (
    chunk_from_json,
    chunk_to_record,
    decode_object,
    encode_object,
)
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import Chunk
from hexrag.ports.cache import PORT_CACHE_TRAITS, CacheTraits
from hexrag.ports.chunk_store import PORT_CHUNK_TRAITS, ChunkStoreTraits

__all__ = [
    "HEXRAG_LAYOUT",
    "LightRAGRedisLayout",
    "RedisLayout",
    "RedisRecords",
    "lightrag_key_prefix",
]

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


class RedisLayout:
    """hexrag's layout: a chunk is one flat JSON object (its fields, then its metadata; see
    :mod:`hexrag.adapters.redis.convert`), records are compact UTF-8 JSON stored as given, and
    the stores keep the port's rules."""

    #: writes stamp ``_id``, ``create_time`` and ``update_time`` as ``RedisKVStorage.upsert``
    stamps = False

    def encode(self, record: Mapping[str, Any]) -> str:
        """The stored text of a record."""
        return encode_object(record)

    def chunk_record(self, chunk: Chunk) -> dict[str, Any]:
        """The record stored for ``chunk``
        (:func:`~hexrag.adapters.redis.convert.chunk_to_record`)."""
        return chunk_to_record(chunk)

    def chunk(self, chunk_id: str, record: Mapping[str, Any]) -> Chunk:
        """The chunk of a decoded record
        (:func:`~hexrag.adapters.redis.convert.chunk_from_json`)."""
        return chunk_from_json(chunk_id, record)

    def chunk_traits(self) -> ChunkStoreTraits:
        """The rules a chunk store of this layout declares."""
        return PORT_CHUNK_TRAITS

    def cache_traits(self) -> CacheTraits:
        """The rules a cache of this layout declares."""
        return PORT_CACHE_TRAITS


#: hexrag's layout (it holds no state).
HEXRAG_LAYOUT = RedisLayout()


class LightRAGRedisLayout(RedisLayout):
    """LightRAG's ``RedisKVStorage`` layout: ``json.dumps`` of the record; a chunk is LightRAG's
    text-chunk record (``llm_cache_list`` added), read back with every key other than the
    chunk fields as metadata. With ``stamps`` (the text chunks and the LLM cache) writes add
    ``_id`` and the times as ``RedisKVStorage.upsert`` does; without (the document-side
    namespaces) records are stored exactly as given."""

    def __init__(self, *, stamps: bool) -> None:
        self.stamps = stamps

    def encode(self, record: Mapping[str, Any]) -> str:
        """``json.dumps`` of the record, as LightRAG writes it."""
        return json.dumps(dict(record))

    def chunk_record(self, chunk: Chunk) -> dict[str, Any]:
        """LightRAG's text-chunk record, ``llm_cache_list`` defaulting to ``[]``."""
        out = chunk_record(chunk)
        out.setdefault("llm_cache_list", [])
        return out

    def chunk(self, chunk_id: str, record: Mapping[str, Any]) -> Chunk:
        """``content``/``full_doc_id``/``file_path`` (strings) and ``tokens``/
        ``chunk_order_index`` (ints, not bools) as fields; every other key as metadata."""
        fields: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        for key, val in record.items():
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

    def chunk_traits(self) -> ChunkStoreTraits:
        """LightRAG's bookkeeping keys (and ``llm_cache_list``) are stamped into every chunk
        (read back in metadata)."""
        return _CHUNK_TRAITS

    def cache_traits(self) -> CacheTraits:
        """With ``stamps``, ``_id`` and the times are stamped into every entry; else the
        port's own rule (records stored as given)."""
        return _CACHE_TRAITS if self.stamps else PORT_CACHE_TRAITS


class RedisRecords(RedisNamespace):
    """A :class:`~hexrag.adapters.redis._base.RedisNamespace` of records in a
    :class:`RedisLayout` (``_layout``, hexrag's unless a store picks another)."""

    _layout: RedisLayout = HEXRAG_LAYOUT

    async def _write(self, records: Mapping[str, Mapping[str, Any]], action: str) -> None:
        """Store ``records`` by id, encoded by the layout (one ``MSET``); a stamping layout
        first reads the stored ones (one ``MGET``) and adds ``_id`` and the times as
        ``RedisKVStorage.upsert`` does (``create_time`` kept from a stored record)."""
        if not records:
            return
        layout = self._layout
        if not layout.stamps:
            await self._mset({self.key(k): layout.encode(v) for k, v in records.items()}, action)
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
            mapping[self.key(key)] = layout.encode(value)
        await self._mset(mapping, action)
