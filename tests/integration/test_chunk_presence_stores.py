"""Every chunk store with :class:`~hexrag.ports.chunk_presence.ChunksWithPresence` answers
``get_chunks_and_presence(ids, probe)`` exactly as ``get_chunks(ids)`` and a presence check
of ``probe`` would, on real servers (PostgreSQL both layouts, Redis both layouts) and in
memory: duplicates, missing ids, ids in both lists, empty lists, ``None`` fields and metadata.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hexrag.domain.records import Chunk
from hexrag.ports.chunk_metadata import ChunkMetadata
from hexrag.ports.chunk_presence import ChunksWithPresence
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401
from tests.services.redis import redis_client, redis_server  # noqa: F401

CHUNKS = [
    Chunk(id=f"chunk-{i}", content=f"text {i} ünïcode \"quoted\" \\ back", tokens=i,
          full_doc_id=f"doc-{i % 3}", chunk_order_index=i,
          file_path=None if i % 4 == 0 else f"f{i}.md",
          metadata={"heading": {"path": ["A", f"B{i}"]}} if i % 2 else {})
    for i in range(12)
]
STORED = {c.id for c in CHUNKS}
IDS = [*sorted(STORED), "nope-1", "nope-2", "chunk-99"]


def _any(value: Any) -> Any:
    return value


async def _check(store: Any, *, metadata: bool = False) -> None:
    assert isinstance(store, ChunksWithPresence), type(store)
    assert isinstance(store, ChunkMetadata) == metadata, type(store)
    store = _any(store)
    await store.upsert_chunks(CHUNKS)
    rng = random.Random(7)
    cases: list[tuple[list[str], list[str]]] = [([], []), ([], IDS), (IDS, []),
                                                 (["chunk-1", "chunk-1"], ["chunk-1", "nope-1"])]
    for _ in range(25):
        ids = rng.choices(IDS, k=rng.randint(0, 6))
        cases.append((ids, rng.choices(IDS, k=rng.randint(0, 14))))
    for ids, probe in cases:
        records, present = await store.get_chunks_and_presence(ids, probe)
        assert records == await store.get_chunks(ids), (ids, probe)
        assert present == {p for p in probe if p in STORED}, (ids, probe)
        if metadata:  # the metadata read: the records' metadata, without the texts
            assert await store.get_chunk_metadata([*ids, *probe]) == [
                None if r is None else r.metadata
                for r in await store.get_chunks([*ids, *probe])
            ], (ids, probe)


async def test_memory_chunk_store() -> None:
    from hexrag.adapters.memory import MemoryChunkStore

    await _check(MemoryChunkStore(), metadata=True)


async def test_postgres_chunk_store(pg_pool: Any, pg_schema: str) -> None:  # noqa: F811
    from hexrag.adapters.postgres import PgChunkStore

    await _check(PgChunkStore(pg_pool, schema=pg_schema), metadata=True)


@pytest.fixture
def lightrag_tables(pg_dsn: str) -> None:  # noqa: F811
    """LightRAG's own tables, created by LightRAG (synchronously, outside the test's loop)."""
    pytest.importorskip("lightrag")
    from tests.contract.test_lightrag_pg_contract import _lightrag_tables

    _lightrag_tables(pg_dsn)


async def test_lightrag_postgres_chunk_store(lightrag_tables: None, pg_pool: Any) -> None:  # noqa: F811
    from hexrag.adapters.postgres.lightrag_layout import LightRAGPgChunkStore
    from tests.contract.test_lightrag_pg_contract import _workspace

    await _check(LightRAGPgChunkStore(pg_pool, workspace=_workspace()), metadata=True)


async def test_lightrag_postgres_presence_is_per_workspace(
    lightrag_tables: None, pg_pool: Any  # noqa: F811
) -> None:
    """A chunk stored under another workspace of the same table is not present here."""
    from hexrag.adapters.postgres.lightrag_layout import LightRAGPgChunkStore
    from tests.contract.test_lightrag_pg_contract import _workspace

    mine, theirs = (LightRAGPgChunkStore(pg_pool, workspace=_workspace()) for _ in range(2))
    await theirs.upsert_chunks(CHUNKS[:6])
    await mine.upsert_chunks(CHUNKS[6:8])
    records, present = await mine.get_chunks_and_presence(["chunk-0", "chunk-6"], sorted(STORED))
    assert [r.id if r else None for r in records] == [None, "chunk-6"]
    assert present == {"chunk-6", "chunk-7"}


@pytest.fixture
async def redis_prefix(redis_client: Any) -> AsyncIterator[str]:  # noqa: F811
    """A fresh workspace name; every key naming it is deleted afterwards."""
    ws = f"t{uuid.uuid4().hex[:12]}"
    yield ws
    keys = [k async for k in redis_client.scan_iter(match=f"*{ws}*", count=1000)]
    if keys:
        await redis_client.delete(*keys)


async def test_redis_chunk_store(redis_client: Any, redis_prefix: str) -> None:  # noqa: F811
    from hexrag.adapters.redis.chunk_store import RedisChunkStore

    await _check(RedisChunkStore(redis_client, workspace=redis_prefix))


async def test_lightrag_redis_chunk_store(redis_client: Any, redis_prefix: str) -> None:  # noqa: F811
    from hexrag.adapters.redis.lightrag_layout import LightRAGRedisChunkStore

    await _check(LightRAGRedisChunkStore(redis_client, workspace=redis_prefix))
