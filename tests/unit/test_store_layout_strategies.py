"""One way to write a chunk store, a cache or a graph store: a LightRAG layout is a strategy
the one class family takes, not a second family. The named classes implement no port method of
their own (the shared implementation does, on the layout), and the Redis layouts encode exactly
what the stores wrote before they were strategies (``chunk_to_json``; LightRAG's ``json.dumps``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from hexrag.adapters.postgres.cache import PgCache
from hexrag.adapters.postgres.chunk_rows import PgChunks
from hexrag.adapters.postgres.chunk_store import PgChunkStore
from hexrag.adapters.postgres.graph_rows import PgGraph
from hexrag.adapters.postgres.graph_store import PgGraphStore
from hexrag.adapters.postgres.kv_rows import PgKV
from hexrag.adapters.postgres.lightrag_cache import LightRAGPgCache
from hexrag.adapters.postgres.lightrag_chunk_store import LightRAGPgChunkStore
from hexrag.adapters.postgres.lightrag_graph_store import LightRAGPgGraphStore
from hexrag.adapters.postgres.lightrag_kv import LightRAGPgKV
from hexrag.adapters.redis.cache import RedisCache, RedisKV
from hexrag.adapters.redis.chunk_presence import RedisChunks
from hexrag.adapters.redis.chunk_store import RedisChunkStore
from hexrag.adapters.redis.convert import chunk_to_json
from hexrag.adapters.redis.layouts import HEXRAG_LAYOUT, LightRAGRedisLayout
from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV
from hexrag.adapters.redis.lightrag_layout import LightRAGRedisCache, LightRAGRedisChunkStore
from hexrag.domain.records import Chunk
from hexrag.ports.cache import PORT_CACHE_TRAITS
from hexrag.ports.chunk_store import PORT_CHUNK_TRAITS

CHUNK_METHODS = ("get_chunks", "get_chunks_and_presence", "upsert_chunks", "delete_chunks",
                 "count", "scan_chunks", "traits")
CACHE_METHODS = ("get_many", "set_many", "delete_many", "clear", "scan_entries")
REDIS_CACHE_METHODS = (*CACHE_METHODS, "traits")
GRAPH_METHODS = ("upsert_nodes", "upsert_edges", "delete_nodes", "delete_edges", "get_nodes",
                 "get_nodes_with_degrees", "node_degrees", "edge_degrees", "get_node_edges",
                 "get_node_edges_with_degrees", "get_edges_by_pairs", "get_edges_by_chunk_ids",
                 "get_edges_by_chunk_ids_of_pairs", "scan_nodes", "scan_edges", "count_nodes",
                 "count_edges", "traits")


def _own(cls: type, shared: type, names: tuple[str, ...]) -> list[str]:
    """The port methods defined by ``cls`` or a base that comes before ``shared`` in its MRO."""
    mro = cls.__mro__
    before = mro[: mro.index(shared)]
    return [n for n in names if any(n in vars(k) for k in before)]


@pytest.mark.parametrize(
    ("cls", "shared", "names"),
    [
        (PgChunkStore, PgChunks, CHUNK_METHODS),
        (LightRAGPgChunkStore, PgChunks, CHUNK_METHODS),
        (PgCache, PgKV, CACHE_METHODS),
        (LightRAGPgCache, PgKV, CACHE_METHODS),
        (LightRAGPgKV, PgKV, CACHE_METHODS),
        (RedisChunkStore, RedisChunks, CHUNK_METHODS),
        (LightRAGRedisChunkStore, RedisChunks, CHUNK_METHODS),
        (RedisCache, RedisKV, REDIS_CACHE_METHODS),
        (LightRAGRedisCache, RedisKV, REDIS_CACHE_METHODS),
        (LightRAGRedisKV, RedisKV, REDIS_CACHE_METHODS),
        (PgGraphStore, PgGraph, GRAPH_METHODS),
        (LightRAGPgGraphStore, PgGraph, GRAPH_METHODS),
    ],
)
def test_named_stores_only_construct(cls: type, shared: type, names: tuple[str, ...]) -> None:
    assert issubclass(cls, shared)
    assert _own(cls, shared, names) == []
    for name in names:
        assert name in vars(shared), f"{shared.__name__} lacks {name}"


def test_a_second_family_would_be_caught() -> None:
    class Parallel(LightRAGRedisCache):
        async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
            return []

    assert _own(Parallel, RedisKV, CACHE_METHODS) == ["get_many"]


def _chunk(**metadata: object) -> Chunk:
    return Chunk(id="c1", content="é text", tokens=3, full_doc_id="d", chunk_order_index=0,
                 file_path="a.txt", metadata=dict(metadata))


def test_hexrag_redis_layout_writes_chunk_to_json() -> None:
    chunk = _chunk(heading={"h": 1}, none=None)
    assert HEXRAG_LAYOUT.encode(HEXRAG_LAYOUT.chunk_record(chunk)) == chunk_to_json(chunk)
    assert HEXRAG_LAYOUT.chunk("c1", json.loads(chunk_to_json(chunk))) == chunk
    assert HEXRAG_LAYOUT.stamps is False
    assert HEXRAG_LAYOUT.chunk_traits() == PORT_CHUNK_TRAITS
    assert HEXRAG_LAYOUT.cache_traits() == PORT_CACHE_TRAITS


def test_lightrag_redis_layout_writes_lightrags_record() -> None:
    layout = LightRAGRedisLayout(stamps=True)
    record = layout.chunk_record(_chunk(heading={"h": 1}))
    assert list(record) == ["tokens", "content", "chunk_order_index", "full_doc_id",
                            "file_path", "heading", "llm_cache_list"]
    assert layout.encode(record) == json.dumps(record)  # LightRAG's own serialisation
    back = layout.chunk("c1", {**record, "tokens": True})
    assert back.tokens is None and back.metadata["tokens"] is True  # a bool is no count
    assert "llm_cache_list" in layout.chunk_traits().stamped_keys
    assert layout.cache_traits().stamped_keys == {"_id", "create_time", "update_time"}
    assert LightRAGRedisLayout(stamps=False).cache_traits() == PORT_CACHE_TRAITS


def test_chunk_metadata_columns_leave_the_text_out() -> None:
    """The metadata read selects every chunk column but the text (derived from ``columns`` by
    replacement: a changed column list must not silently read the text again)."""
    from hexrag.adapters.postgres.chunk_rows import HexragChunkRows, LightRAGChunkRows

    for layout in (HexragChunkRows, LightRAGChunkRows):
        light = layout.metadata_columns
        assert light != layout.columns and "content" in layout.columns.replace(" AS content", "")
        # the only mention of the text left is the name of the empty column standing in for it
        assert light.count("AS content") == 1 and "content" not in light.replace(
            "AS content", ""), layout
