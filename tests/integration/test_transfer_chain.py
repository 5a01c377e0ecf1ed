"""The migration chain of the data-reach issue, judged by LightRAG 1.5.7 itself:

LightRAG working directory -> PostgreSQL (vectors, graph, chunks, cache) -> Milvus Lite
(vectors) + Redis (chunks, cache) + PostgreSQL graph -> archive -> LightRAG working directory.

Each hop is ``migrate_stack`` (or export/import) through the ports, with no re-embedding.
LightRAG then opens the final directory and answers every parity query in every mode exactly
as it answers on the original (WEIGHT: everything in order; VECTOR: chunks as sets). The
dataset is ``flat300`` (no exact score ties: every backend ranks ties its own way).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.workdir import empty_workdir_stack, load_workdir, save_workdir
from hexrag.devtools.lightrag_data import LightRAGDir, require_lightrag
from hexrag.transfer import StackStores, export_stack, import_archive
from hexrag.transfer.migrate import migrate_stack
from tests.integration.test_transfer_roundtrip import _compare
from tests.services.milvus import milvus_client, milvus_index_factory  # noqa: F401
from tests.services.postgres import pg_dsn  # noqa: F401
from tests.services.redis import redis_server  # noqa: F401

pytestmark = [
    pytest.mark.parity,
    pytest.mark.backend("postgres"),
    pytest.mark.backend("milvus"),
    pytest.mark.backend("redis"),
]

require_lightrag()

KEY = "flat300"


def test_workdir_postgres_milvus_redis_archive_workdir(
    parity_world: Any,
    pg_dsn: str,  # noqa: F811
    milvus_index_factory: Any,  # noqa: F811
    redis_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    from hexrag.adapters.postgres import (
        PgCache,
        PgChunkStore,
        PgGraphStore,
        PgVectorIndex,
        create_pool,
    )
    from hexrag.adapters.redis import RedisCache, RedisChunkStore

    embedder = parity_world.embedders[KEY]
    dim = embedder.dim
    model = embedder.model_name
    source_dir = parity_world.dirs[KEY]
    original = load_workdir(source_dir.path, embedder_dim=dim)
    milvus = {ns: milvus_index_factory(namespace=ns, dim=dim) for ns in
              ("entities", "relationships", "chunks")}

    async def chain() -> None:
        pool = await create_pool(pg_dsn)
        redis_chunks = RedisChunkStore.from_url(redis_server, workspace="chain")
        redis_cache = RedisCache.from_url(redis_server, workspace="chain")
        try:
            opts: dict[str, Any] = {"table_prefix": "chain"}
            pg = StackStores(
                entities=PgVectorIndex(pool, namespace="entities", dim=dim, **opts),
                relationships=PgVectorIndex(pool, namespace="relationships", dim=dim, **opts),
                chunks=PgVectorIndex(pool, namespace="chunks", dim=dim, **opts),
                graph=PgGraphStore(pool, **opts),
                chunk_store=PgChunkStore(pool, **opts),
                cache=PgCache(pool, **opts),
                embedding_model=model,
            )
            source = StackStores(**original.engine_stores(), embedding_model=model)
            await migrate_stack(
                source, pg, state_path=tmp_path / "1.json", page_size=200, overwrite=True
            )
            mixed = StackStores(
                entities=milvus["entities"],
                relationships=milvus["relationships"],
                chunks=milvus["chunks"],
                graph=PgGraphStore(pool, table_prefix="chain2"),
                chunk_store=redis_chunks,
                cache=redis_cache,
                embedding_model=model,
            )
            await migrate_stack(
                pg, mixed, state_path=tmp_path / "2.json", page_size=150, overwrite=True
            )
            await export_stack(mixed, tmp_path / "archive", page_size=170)
            final = empty_workdir_stack(dim)
            await import_archive(tmp_path / "archive", StackStores(**final.engine_stores()))
            final.extra_files = dict(original.extra_files)
            save_workdir(final, tmp_path / "final", workspace=KEY)
        finally:
            await redis_chunks.clear()
            await redis_cache.clear()
            await redis_chunks.aclose()
            await redis_cache.aclose()
            await pool.close()

    asyncio.run(chain())
    from lightrag.kg.shared_storage import finalize_share_data

    finalize_share_data()
    copy = LightRAGDir(tmp_path / "final", KEY)
    for pick in ("WEIGHT", "VECTOR"):
        diffs = parity_world.run(_compare(parity_world, KEY, source_dir, copy, pick))
        assert not diffs, "\n".join(diffs[:20])
