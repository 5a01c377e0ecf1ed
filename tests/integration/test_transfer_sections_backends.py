"""Every section travels to every target kind, and verification tells the truth there.

A stack that hexrag's ingestion filled (every section holds records: vectors, graph, chunks,
the extraction cache, document status rows, description fragments, LightRAG's five
key-value namespaces) is migrated into PostgreSQL (hexrag's tables, LightRAG's key-value
tables), into Milvus Lite (vectors) + Redis (chunks, cache, documents, key-value
namespaces) + PostgreSQL (graph), and back into a working directory written to disk and
read again. On each: the digests of every section equal the source's, ``verify_migration``
passes an exact copy, and fails a copy with one vector row missing, one chunk text changed
or one fragment missing.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.adapters.workdir import empty_workdir_stack, load_workdir, save_workdir
from hexrag.bootstrap import compose_engine
from hexrag.ports.cache import KV_NAMESPACES
from hexrag.transfer import StackStores
from hexrag.transfer.digests import compare_digests, stack_digests
from hexrag.transfer.migrate import migrate_stack, sample_queries, verify_migration
from hexrag.transfer.sections import SECTIONS
from tests.services.milvus import milvus_client, milvus_index_factory  # noqa: F401
from tests.services.postgres import pg_dsn  # noqa: F401
from tests.services.redis import redis_server  # noqa: F401
from tests.unit.test_transfer_sections import DIM, _full_stack, _stores

pytestmark = [pytest.mark.backend("postgres"), pytest.mark.backend("milvus"),
              pytest.mark.backend("redis")]


async def _check(source: StackStores, target: StackStores, damage: Any) -> None:
    """Migrate, compare digests, verify; then damage the target three ways."""
    want = await stack_digests(source)
    assert set(want) == set(SECTIONS) and all(d["count"] for d in want.values())
    uid = uuid.uuid4().hex[:6]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        await migrate_stack(source, target, state_path=Path(tmp) / f"{uid}.json",
                            page_size=7)
    assert compare_digests(want, await stack_digests(target)) == []
    embedder = HashingEmbedder(DIM)
    src = compose_engine(source, embedder=embedder, store_cache=False)
    dst = compose_engine(target, embedder=embedder, store_cache=False)
    queries = await sample_queries(source, 4)
    report = await verify_migration(source, target, src, dst, queries=queries)
    assert report["ok"], report["mismatches"]
    assert report["queries"] > 0
    await damage(target, source, src, dst, queries)


async def _damages(target: StackStores, source: StackStores, src: Any, dst: Any,
                   queries: Any) -> None:
    async def fails(prefix: str) -> None:
        bad = await verify_migration(source, target, src, dst, queries=queries)
        assert not bad["ok"]
        assert any(m.startswith(prefix) for m in bad["mismatches"]), bad["mismatches"]

    rec = (await source.entities.scan_records(None, limit=1)).items[0]  # type: ignore[attr-defined]
    await target.entities.delete([rec.id])
    await fails("entities: ")
    await target.entities.upsert([rec])
    chunk = (await source.chunk_store.scan_chunks(None, limit=1)).items[0]  # type: ignore[attr-defined]
    await target.chunk_store.upsert_chunks([replace(chunk, content=chunk.content + "!")])
    await fails("text_chunks: same count")
    await target.chunk_store.upsert_chunks([chunk])
    assert target.documents is not None and source.documents is not None
    frag = (await source.documents.scan_fragments(None, limit=1)).items[0]
    await target.documents.delete_fragments_of_chunks([frag.chunk_id])
    await fails("fragments: ")
    await target.documents.add_fragments(
        await source.documents.fragments_of_chunks([frag.chunk_id]))
    assert (await verify_migration(source, target, src, dst, queries=queries))["ok"]


def test_postgres_target(pg_dsn: str) -> None:  # noqa: F811
    from hexrag.adapters.postgres import (
        PgCache,
        PgChunkStore,
        PgDocumentStore,
        PgGraphStore,
        PgVectorIndex,
        create_pool,
    )
    async def run() -> None:
        source = _stores(await _full_stack())
        pool = await create_pool(pg_dsn)
        prefix = "sec" + uuid.uuid4().hex[:6]
        try:
            opts: dict[str, Any] = {"table_prefix": prefix}
            target = StackStores(
                entities=PgVectorIndex(pool, namespace="entities", dim=DIM, **opts),
                relationships=PgVectorIndex(pool, namespace="relationships", dim=DIM, **opts),
                chunks=PgVectorIndex(pool, namespace="chunks", dim=DIM, **opts),
                graph=PgGraphStore(pool, **opts),
                chunk_store=PgChunkStore(pool, **opts),
                cache=PgCache(pool, **opts),
                documents=PgDocumentStore(pool, **opts),
                kv={ns: PgCache(pool, namespace=ns, table_prefix=prefix)
                    for ns in KV_NAMESPACES},
                embedding_model="hexrag-hashing",
            )
            await _check(source, target, _damages)
            # and back into a working directory, written and read again
            back = empty_workdir_stack(DIM)
            await migrate_stack(target, _stores(back), state_path=Path(f"/tmp/{prefix}.json"))
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                save_workdir(back, tmp)
                again = _stores(load_workdir(tmp))
                assert compare_digests(await stack_digests(source),
                                       await stack_digests(again)) == []
        finally:
            Path(f"/tmp/{prefix}.json").unlink(missing_ok=True)
            await pool.close()

    asyncio.run(run())


def test_milvus_redis_target(
    pg_dsn: str,  # noqa: F811
    milvus_index_factory: Any,  # noqa: F811
    redis_server: str,  # noqa: F811
) -> None:
    from hexrag.adapters.postgres import PgGraphStore, create_pool
    from hexrag.adapters.redis import RedisCache, RedisChunkStore, RedisDocumentStore
    from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV

    milvus = {ns: milvus_index_factory(namespace=ns, dim=DIM)
              for ns in ("entities", "relationships", "chunks")}

    async def run() -> None:
        source = _stores(await _full_stack())
        pool = await create_pool(pg_dsn)
        ws = "sec" + uuid.uuid4().hex[:6]
        redis_stores: list[Any] = [
            RedisChunkStore.from_url(redis_server, workspace=ws),
            RedisCache.from_url(redis_server, workspace=ws),
            RedisDocumentStore.from_url(redis_server, workspace=ws),
        ]
        kv = {ns: LightRAGRedisKV.from_url(redis_server, namespace=ns, workspace=ws)
              for ns in KV_NAMESPACES}
        try:
            target = StackStores(
                **milvus,
                graph=PgGraphStore(pool, table_prefix=ws),
                chunk_store=redis_stores[0],
                cache=redis_stores[1],
                documents=redis_stores[2],
                kv=dict(kv),
                embedding_model="hexrag-hashing",
            )
            await _check(source, target, _damages)
        finally:
            for store in [*redis_stores, *kv.values()]:
                await store.clear()
                await store.aclose()
            await pool.close()

    asyncio.run(run())


def test_working_directory_target(tmp_path: Path) -> None:
    """Into a working directory saved to disk and read back: every section, the vectors as
    stored, and verification catches the same damages there."""

    async def run() -> None:
        source = _stores(await _full_stack())
        staging = empty_workdir_stack(DIM)
        await migrate_stack(source, _stores(staging), state_path=tmp_path / "s.json")
        save_workdir(staging, tmp_path / "wd")
        copy = load_workdir(tmp_path / "wd")
        target = _stores(copy)
        assert compare_digests(await stack_digests(source), await stack_digests(target)) == []
        embedder = HashingEmbedder(DIM)
        src = compose_engine(source, embedder=embedder, store_cache=False)
        dst = compose_engine(target, embedder=embedder, store_cache=False)
        queries = await sample_queries(source, 4)
        report = await verify_migration(source, target, src, dst, queries=queries)
        assert report["ok"], report["mismatches"]
        await _damages(target, source, src, dst, queries)

    asyncio.run(run())


def test_a_lossy_milvus_lightrag_layout_target_fails_verification(
    milvus_client: Any, tmp_path: Path  # noqa: F811
) -> None:
    """LightRAG's Milvus collections have no column for a record's scope metadata
    (``product_id`` ...): a copy there loses it, so scoped answers would differ. The old
    verification (counts and four sample queries) reported such a copy ok; the digests
    name the sections whose content differs."""
    from hexrag.adapters.milvus.lightrag_layout import LightRAGMilvusVectorIndex

    async def run() -> None:
        source = _stores(await _full_stack())
        target = _stores(empty_workdir_stack(DIM))
        ws = "lossy" + uuid.uuid4().hex[:6]
        indexes = {ns: LightRAGMilvusVectorIndex.open(milvus_client, namespace=ns,  # type: ignore[arg-type]
                                                      dim=DIM, workspace=ws)
                   for ns in ("entities", "relationships", "chunks")}
        for ns, index in indexes.items():
            setattr(target, ns, index)
        try:
            await migrate_stack(source, target, state_path=tmp_path / "s.json")
            embedder = HashingEmbedder(DIM)
            report = await verify_migration(
                source, target, compose_engine(source, embedder=embedder, store_cache=False),
                compose_engine(target, embedder=embedder, store_cache=False),
                queries=await sample_queries(source, 4))
            assert not report["ok"]
            assert any(m.startswith("entities: same count") for m in report["mismatches"]), (
                report["mismatches"])
        finally:
            for index in indexes.values():
                milvus_client.drop_collection(index._collection)

    asyncio.run(run())
