"""The mixed-stack tests' backends: the golden dataset, each backend loaded once per test
module into its own namespace (a PostgreSQL schema, Milvus collections, a Redis key prefix, a
Neo4j workspace label), removed at the end, and the memory stack's reference results.

Neo4j variants skip unless ``NEO4J_URI`` is set (or a testcontainers Neo4j can start); the other
backends skip locally, or fail under ``HEXRAG_REQUIRE_BACKENDS=1``, when they cannot start.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from hexrag.adapters.memory import (
    HashingEmbedder,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from tests.integration.golden import (
    MODES,
    NAMESPACES,
    THRESHOLD,
    GoldenDataset,
    GoldenQuery,
    build_dataset,
    golden_queries,
    load_chunks,
    load_graph,
    load_vectors,
    near_ties,
)
from tests.integration.mixed_stacks.support import (
    CHUNK_FIXTURES,
    GRAPH_FIXTURES,
    N_ENTITIES,
    SEED,
    VECTOR_FIXTURES,
    Case,
    CountedStack,
    RedisHandle,
    _neo4j_store,
    _pg_indexes,
    _run_mode,
    _uid,
)


@pytest.fixture(scope="module")
def dataset() -> GoldenDataset:
    """The generated dataset, checked free of near-ties for the golden queries."""
    ds = build_dataset(N_ENTITIES, seed=SEED)
    problems = near_ties(ds, golden_queries(ds))
    assert not problems, f"dataset has near-ties, pick another SEED: {problems}"
    return ds


@pytest.fixture(scope="module")
def queries(dataset: GoldenDataset) -> list[GoldenQuery]:
    """The golden query set."""
    return golden_queries(dataset)


@pytest.fixture(scope="module")
def embedder(dataset: GoldenDataset) -> HashingEmbedder:
    """The deterministic query embedder (the stored vectors came from it, plus jitter)."""
    return HashingEmbedder(dataset.dim)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pg_pool() -> AsyncIterator[Any]:
    """An asyncpg pool on the test PostgreSQL (pgserver, or HEXRAG_POSTGRES_DSN)."""
    import asyncpg

    from tests.services.postgres import postgres_dsn

    pool = await asyncpg.create_pool(postgres_dsn(), min_size=1, max_size=8)
    try:
        yield pool
    finally:
        await pool.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pg_schema(pg_pool: Any) -> AsyncIterator[str]:
    """This module's schema, dropped at the end."""
    schema = f"hx_mixed_{_uid()}"
    await pg_pool.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema
    finally:
        await pg_pool.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def memory_vectors(dataset: GoldenDataset) -> dict[str, Any]:
    """The three memory vector indexes, loaded."""
    out = {}
    for ns in NAMESPACES:
        index = MemoryVectorIndex(ns, dataset.dim, cosine_threshold=THRESHOLD)
        await load_vectors(index, dataset, ns, batch=100)
        out[ns] = index
    return out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pg_vectors(pg_pool: Any, pg_schema: str, dataset: GoldenDataset) -> dict[str, Any]:
    """The three PostgreSQL vector indexes (pgvector, HNSW), loaded in batches."""
    out = _pg_indexes(pg_pool, pg_schema, dataset.dim, "gold")
    for ns, index in out.items():
        await load_vectors(index, dataset, ns, batch=100)
    return out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def milvus_vectors(dataset: GoldenDataset) -> AsyncIterator[dict[str, Any]]:
    """The three Milvus (Lite) vector indexes (exact ``FLAT`` index), loaded and flushed.

    Not ``AUTOINDEX``: on Milvus Lite 3.2 it is approximate once the background index build
    has run (seconds after a flush, even at a few hundred rows), so results would depend on
    timing.
    """
    import asyncio

    from hexrag.adapters.milvus import MilvusVectorIndex
    from tests.services.milvus import shared_milvus

    _, client = shared_milvus()
    out = {
        ns: MilvusVectorIndex(
            client,
            collection=f"mixed_{ns}_{_uid()}",
            namespace=ns,  # type: ignore[arg-type]
            dim=dataset.dim,
            cosine_threshold=THRESHOLD,
            index_type="FLAT",
        )
        for ns in NAMESPACES
    }
    try:
        for ns, index in out.items():
            await load_vectors(index, dataset, ns, batch=100)
            # Lite searches unflushed rows slowly (see hexrag.adapters.milvus)
            await asyncio.to_thread(client.flush, index.collection)
        yield out
    finally:
        for index in out.values():
            client.drop_collection(index.collection)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def memory_graph(dataset: GoldenDataset) -> MemoryGraphStore:
    """The memory graph, loaded."""
    graph = MemoryGraphStore()
    await load_graph(graph, dataset, batch=100)
    return graph


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pg_graph(pg_pool: Any, pg_schema: str, dataset: GoldenDataset) -> Any:
    """The PostgreSQL graph (nodes and edges tables), loaded in batches."""
    from hexrag.adapters.postgres import PgGraphStore

    graph = PgGraphStore(pg_pool, schema=pg_schema, table_prefix="gold")
    await load_graph(graph, dataset, batch=100)
    return graph


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def neo4j_driver() -> AsyncIterator[Any]:
    """An async driver on the test Neo4j; skips (with how to run it) when there is none."""
    from neo4j import AsyncGraphDatabase

    from tests.services.neo4j import target

    t = target()
    driver = AsyncGraphDatabase.driver(t.uri, auth=(t.user, t.password or "") if t.user else None)
    try:
        yield driver
    finally:
        await driver.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def neo4j_graph(neo4j_driver: Any, dataset: GoldenDataset) -> AsyncIterator[Any]:
    """The Neo4j graph in its own workspace label, loaded in batches, dropped at the end."""
    graph = await _neo4j_store(neo4j_driver)
    try:
        await load_graph(graph, dataset, batch=100)
        yield graph
    finally:
        await graph.drop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def memory_chunks(dataset: GoldenDataset) -> MemoryChunkStore:
    """The memory chunk store, loaded."""
    store = MemoryChunkStore()
    await load_chunks(store, dataset, batch=100)
    return store


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pg_chunks(pg_pool: Any, pg_schema: str, dataset: GoldenDataset) -> Any:
    """The PostgreSQL chunk store, loaded in batches."""
    from hexrag.adapters.postgres import PgChunkStore

    store = PgChunkStore(pg_pool, schema=pg_schema, table_prefix="gold")
    await load_chunks(store, dataset, batch=100)
    return store


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def redis() -> AsyncIterator[RedisHandle]:
    """A client on the test redis-server; every key of this module is deleted at the end."""
    from redis.asyncio import Redis

    from tests.services.redis import redis_server_url

    handle = RedisHandle(Redis.from_url(redis_server_url()), [])
    try:
        yield handle
    finally:
        for ws in handle.workspaces:
            keys = [k async for k in handle.client.scan_iter(match=f"{ws}:*", count=1000)]
            if keys:
                await handle.client.delete(*keys)
        await handle.client.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def redis_chunks(redis: RedisHandle, dataset: GoldenDataset) -> Any:
    """The Redis chunk store under its own key prefix, loaded in batches."""
    from hexrag.adapters.redis import RedisChunkStore

    store = RedisChunkStore(redis.client, workspace=redis.new_workspace())
    await load_chunks(store, dataset, batch=100)
    return store


@pytest.fixture
def stack_stores(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The loaded stores of the stack ``request.param`` (``(vectors, graph, chunks)`` kinds).

    A sync fixture, so that only the backends the stack needs are started (a missing Neo4j
    skips only its stacks) and their async fixtures resolve outside the test's running loop.
    """
    vectors_kind, graph_kind, chunks_kind = request.param
    vectors = request.getfixturevalue(VECTOR_FIXTURES[vectors_kind])
    return {
        **vectors,
        "graph": request.getfixturevalue(GRAPH_FIXTURES[graph_kind]),
        "chunk_store": request.getfixturevalue(CHUNK_FIXTURES[chunks_kind]),
    }


@pytest.fixture
def graph_of_kind(request: pytest.FixtureRequest) -> Any:
    """The loaded golden-dataset graph of kind ``request.param``."""
    return request.getfixturevalue(GRAPH_FIXTURES[request.param])


@pytest.fixture
def seed001_graph(request: pytest.FixtureRequest) -> Any:
    """Seed 001's graph of kind ``request.param`` (``postgres`` or ``neo4j``)."""
    return request.getfixturevalue(f"seed001_{request.param}_graph")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def memory_results(
    memory_vectors: dict[str, Any],
    memory_graph: MemoryGraphStore,
    memory_chunks: MemoryChunkStore,
    embedder: HashingEmbedder,
    queries: list[GoldenQuery],
) -> dict[Case, tuple[dict[str, Any], dict[tuple[str, str], int]]]:
    """The reference: every golden case on the memory stack, with its call counts."""
    stack = CountedStack.wrap(
        "memory", {**memory_vectors, "graph": memory_graph, "chunk_store": memory_chunks}, embedder
    )
    out: dict[Case, tuple[dict[str, Any], dict[tuple[str, str], int]]] = {}
    for mode in MODES:
        out.update(await _run_mode(stack, queries, mode))
    return out
