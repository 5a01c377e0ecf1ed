"""Exact document deletion on the server backends: PostgreSQL (pgvector, graph, chunks,
document store) and Milvus Lite + Redis (vectors; chunks and document store) with the memory
graph. The same three documents as the in-memory deletion tests are ingested, one is deleted:
every store then equals what a fresh in-memory stack built from the other two holds, no query
in any mode returns the deleted document, and re-inserting it gives back the first insert.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.bootstrap import compose_engine
from hexrag.core.model import QueryParam
from tests.integration.test_ingest_lightrag import _view_of
from tests.services.postgres import pg_dsn  # noqa: F401
from tests.unit.test_delete_documents import DIM, DOCS, MODES, _ingestor, _stack_with, _view

PARTS = ("chunks", "nodes", "edges", "vec_entities", "vec_relationships", "vec_chunks")


def _sorted(view: dict[str, Any]) -> dict[str, Any]:
    return {part: dict(sorted(view[part].items())) for part in PARTS}


async def _leaks(stores: Any, deleted_chunks: set[str]) -> list[str]:
    engine = compose_engine(stores, embedder=HashingEmbedder(DIM), cache=None)
    found: list[str] = []
    for q in ("Zapier Slack Sales", "Who notifies Sales?", "Acme CRM Mailchimp Xero",
              "Support in Europe"):
        for mode in MODES:
            data = (await engine.query_data(q, QueryParam(mode=mode, enable_rerank=False)))["data"]
            for c in data.get("chunks", []):
                if c["chunk_id"] in deleted_chunks or "p-zap" in (c.get("file_path") or ""):
                    found.append(c["chunk_id"])
            for e in data.get("entities", []) + data.get("relationships", []):
                if "p-zap" in (e.get("file_path") or "") or e.get("entity_name") == "Zapier":
                    found.append(str(e)[:80])
    return found


async def _exercise(stores: Any) -> None:
    ingestor = _ingestor(stores)
    ids = [(await ingestor.ingest_text(t, metadata={"product_id": p, "source": f"{p}.txt"}))
           .doc_id for t, p in DOCS]
    first = _sorted(await _view_of(stores))
    deleted_chunks = set((await stores.documents.get_docs([ids[1]]))[0].chunks_list)
    assert await _leaks(stores, deleted_chunks), "the canary must see the document first"

    report = await ingestor.delete_documents([ids[1]])
    assert report.deleted == [ids[1]] and report.legacy == 0
    fresh, _, _ = await asyncio.to_thread(_stack_with, [DOCS[0], DOCS[2]])
    want = _sorted(await asyncio.to_thread(_view, fresh))
    got = _sorted(await _view_of(stores))
    for part in PARTS:
        assert got[part] == want[part], part
    assert [d.id for d in await stores.documents.list_docs()] == [ids[0], ids[2]]
    assert await stores.documents.count_fragments() == await fresh.documents.count_fragments()
    assert await _leaks(stores, deleted_chunks) == []

    await ingestor.delete_documents([ids[2]])
    for t, p in (DOCS[1], DOCS[2]):
        await ingestor.ingest_text(t, metadata={"product_id": p, "source": f"{p}.txt"})
    assert _sorted(await _view_of(stores)) == first


def _run(make: Callable[[], Awaitable[tuple[Any, Callable[[], Awaitable[None]]]]]) -> None:
    async def go() -> None:
        stores, close = await make()
        try:
            await _exercise(stores)
        finally:
            await close()

    asyncio.run(go())


@pytest.mark.backend("postgres")
def test_delete_on_postgres(pg_dsn: str) -> None:  # noqa: F811
    from hexrag.adapters.postgres import (
        PgChunkStore,
        PgDocumentStore,
        PgGraphStore,
        PgVectorIndex,
        create_pool,
    )

    async def make() -> tuple[Any, Callable[[], Awaitable[None]]]:
        pool = await create_pool(pg_dsn)
        prefix = "del" + uuid.uuid4().hex[:8]
        stores = SimpleNamespace(
            **{ns: PgVectorIndex(pool, namespace=ns, dim=DIM, table_prefix=prefix)  # type: ignore[arg-type]
               for ns in ("entities", "relationships", "chunks")},
            graph=PgGraphStore(pool, table_prefix=prefix),
            chunk_store=PgChunkStore(pool, table_prefix=prefix),
            documents=PgDocumentStore(pool, table_prefix=prefix),
        )
        return stores, pool.close

    _run(make)


@pytest.mark.backend("milvus")
@pytest.mark.backend("redis")
def test_delete_on_milvus_and_redis() -> None:
    from hexrag.adapters.memory import MemoryGraphStore
    from hexrag.adapters.milvus import MilvusVectorIndex
    from hexrag.adapters.redis import RedisChunkStore, RedisDocumentStore
    from tests.services.milvus import shared_milvus
    from tests.services.redis import redis_server_url

    _uri, client = shared_milvus()
    tag = uuid.uuid4().hex[:8]

    async def make() -> tuple[Any, Callable[[], Awaitable[None]]]:
        chunk_store = RedisChunkStore.from_url(redis_server_url(), workspace="del" + tag)
        documents = RedisDocumentStore.from_url(redis_server_url(), workspace="del" + tag)
        stores = SimpleNamespace(
            **{ns: MilvusVectorIndex(client, collection=f"del_{tag}_{ns}", namespace=ns,  # type: ignore[arg-type]
                                     dim=DIM, index_type="FLAT")
               for ns in ("entities", "relationships", "chunks")},
            graph=MemoryGraphStore(), chunk_store=chunk_store, documents=documents,
        )

        async def close() -> None:
            await chunk_store.clear()
            await documents.clear()
            await chunk_store.aclose()
            await documents.aclose()
            for ns in ("entities", "relationships", "chunks"):
                await getattr(stores, ns).drop()

        return stores, close

    _run(make)
