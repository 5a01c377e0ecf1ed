"""Mixed stacks from the seeds, and two regressions the mixed stacks found.

* **Seed 001** (:func:`test_seed001_stack`): PostgreSQL vector indexes whose relation record
  carries PostgreSQL array text ``{chunk-…}`` (its ``chunk_ids`` column is ``text[]``), a graph
  with 21 relations between ``Airtable`` and ``n8n`` (PostgreSQL here, Neo4j where one is
  reachable) and a PostgreSQL chunk store. Hybrid (and mix) with the default ``"chunk"`` relation
  lookup return every valid chunk; with ``EngineSettings(relation_lookup={"hybrid": "pair"})``
  the old zero-chunk failure shows, with the missing chunks counted.
* **Seed 000** (:func:`test_seed000_stack_with_redis_cache`): Milvus (Lite) vector indexes, a
  graph (memory here, Neo4j where reachable), Redis chunk store *and* Redis cache: keywords come
  from an LLM (the deterministic fake), the second identical query is served from Redis.
* **Regressions**: a scoped query must never get an unscoped query's cached answer, and a scoped
  hybrid/mix query's chunk-store calls must not depend on which backend answers first.

The backends are ``conftest.py``'s (beside this file), loaded once for this module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from hexrag.adapters.memory import (
    FakeLLM,
    HashingEmbedder,
    MemoryCache,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, EngineSettings, Entity, QueryParam, VectorRecord
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.testing import corpus
from tests.integration.golden import (
    NAMESPACES,
    THRESHOLD,
    GoldenQuery,
)
from tests.integration.mixed_stacks.support import (
    MARKS,
    NEO4J,
    CountedStack,
    RedisHandle,
    _check_budget,
    _first_difference,
    _logical,
    _neo4j_store,
    _pg_indexes,
)

pytestmark = MARKS


# --------------------------------------------------------------------------------------
# (a) seed 001: PostgreSQL vectors with {chunk-…} array text, 21 edges between one pair
# --------------------------------------------------------------------------------------

SEED001_HL = "workflow automation integration"
SEED001_QUERY = "How does n8n work with Airtable?"
SEED001_VALID = (corpus.SEED_001_CHUNK, "chunk-ops-10")


def _seed001_records(embedder: HashingEmbedder) -> dict[str, Any]:
    """Seed 001's data: two entities naming no chunk, the 21 relations of
    :func:`hexrag.testing.corpus.seed001_relations` (only ``rel-an-13`` names existing chunks),
    the two valid chunks, and the canonical relation vector whose ``source_id`` is
    ``{chunk-feb…}``, as PostgreSQL hands back a ``text[]`` read as text."""
    a, b = corpus.SEED_001_PAIR
    chunks = [
        Chunk(
            id=SEED001_VALID[0],
            content="n8n's Airtable node reads and writes Airtable records in workflows.",
            tokens=12,
            full_doc_id="doc-n8n",
            chunk_order_index=0,
            file_path="product_id:n8n:category:automation:source:docs",
            metadata={"product_id": "n8n", "category_id": "automation"},
        ),
        Chunk(
            id=SEED001_VALID[1],
            content="Workflow automation: trigger n8n from Airtable webhooks.",
            tokens=9,
            full_doc_id="doc-n8n",
            chunk_order_index=1,
            file_path="product_id:n8n:category:automation:source:docs",
            metadata={"product_id": "n8n", "category_id": "automation"},
        ),
    ]
    vec = embedder.embed_one
    return {
        "chunks": chunks,
        "entities": [
            Entity(name=n, entity_type="software", description=f"{n} tool") for n in (a, b)
        ],
        "relations": corpus.seed001_relations(),
        "entity_records": [
            VectorRecord(id=entity_id(n), vector=vec(n), entity_name=n, content=n) for n in (a, b)
        ],
        "relation_records": [
            VectorRecord(
                id=relation_id(a, b),
                vector=vec(SEED001_HL),
                src_id=a,
                tgt_id=b,
                content=f"{SEED001_HL}\t{a}\n{b}\nintegration",
                source_id="{" + corpus.SEED_001_CHUNK + "}",
                file_path="product_id:n8n:category:automation:source:docs",
            )
        ],
        "chunk_records": [
            VectorRecord(
                id=c.id,
                vector=vec(c.content),
                content=c.content,
                full_doc_id=c.full_doc_id,
                file_path=c.file_path,
                source_id=c.id,
                metadata=dict(c.metadata),
            )
            for c in chunks
        ],
    }


async def _load_seed001(stores: dict[str, Any], data: dict[str, Any]) -> None:
    await stores["chunk_store"].upsert_chunks(data["chunks"])
    await stores["chunks"].upsert(data["chunk_records"])
    await stores["entities"].upsert(data["entity_records"])
    await stores["relationships"].upsert(data["relation_records"])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seed001_memory(embedder: HashingEmbedder) -> dict[str, Any]:
    """Seed 001 on the memory stack (the reference)."""
    data = _seed001_records(embedder)
    stores: dict[str, Any] = {
        ns: MemoryVectorIndex(ns, embedder.dim, cosine_threshold=THRESHOLD) for ns in NAMESPACES
    }
    stores.update(graph=MemoryGraphStore(), chunk_store=MemoryChunkStore())
    await _load_seed001(stores, data)
    await stores["graph"].upsert_nodes(data["entities"])
    await stores["graph"].upsert_edges(data["relations"])
    return stores


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seed001_pg(pg_pool: Any, pg_schema: str, embedder: HashingEmbedder) -> dict[str, Any]:
    """Seed 001's PostgreSQL vector indexes and chunk store (table prefix ``s001``)."""
    from hexrag.adapters.postgres import PgChunkStore

    stores = _pg_indexes(pg_pool, pg_schema, embedder.dim, "s001")
    stores["chunk_store"] = PgChunkStore(pg_pool, schema=pg_schema, table_prefix="s001")
    await _load_seed001(stores, _seed001_records(embedder))
    return stores


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seed001_postgres_graph(pg_pool: Any, pg_schema: str, embedder: HashingEmbedder) -> Any:
    """Seed 001's graph on PostgreSQL."""
    from hexrag.adapters.postgres import PgGraphStore

    data = _seed001_records(embedder)
    graph = PgGraphStore(pg_pool, schema=pg_schema, table_prefix="s001")
    await graph.upsert_nodes(data["entities"])
    await graph.upsert_edges(data["relations"])
    return graph


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seed001_neo4j_graph(neo4j_driver: Any, embedder: HashingEmbedder) -> AsyncIterator[Any]:
    """Seed 001's graph on Neo4j (own workspace label, dropped at the end)."""
    data = _seed001_records(embedder)
    graph = await _neo4j_store(neo4j_driver)
    try:
        await graph.upsert_nodes(data["entities"])
        await graph.upsert_edges(data["relations"])
        yield graph
    finally:
        await graph.drop()


@pytest.mark.parametrize(
    "seed001_graph", ["postgres", pytest.param("neo4j", marks=NEO4J)], indirect=True
)
async def test_seed001_stack(
    seed001_graph: Any,
    pg_pool: Any,
    seed001_pg: dict[str, Any],
    seed001_memory: dict[str, Any],
    embedder: HashingEmbedder,
) -> None:
    """Hybrid/mix with the chunk lookup return every valid chunk; the LightRAG pair lookup
    shows seed 001's zero-chunk failure; both exactly as on the memory stack."""
    graph = seed001_graph
    rel_index = seed001_pg["relationships"]
    rid = relation_id(*corpus.SEED_001_PAIR)

    # The relation's chunk ids live in a text[] column: read as text it is {chunk-…} ...
    row = await pg_pool.fetchrow(
        f"SELECT chunk_ids::text AS ids, source_id #>> '{{}}' AS raw FROM {rel_index.table} "
        "WHERE id = $1",
        rid,
    )
    assert row["ids"] == "{" + corpus.SEED_001_CHUNK + "}", row
    # ... and the record the engine reads carries that array text, parsed by the core.
    (record,) = await rel_index.get([rid])
    assert record is not None and record.source_id == "{" + corpus.SEED_001_CHUNK + "}"
    assert parse_source_ids(record.source_id) == [corpus.SEED_001_CHUNK]
    assert await graph.count_edges() == 21
    assert len((await graph.get_edges_by_pairs([corpus.SEED_001_PAIR]))[corpus.SEED_001_PAIR]) == 21

    real = CountedStack.wrap("postgres+graph+postgres", {**seed001_pg, "graph": graph}, embedder)
    ref = CountedStack.wrap("memory", seed001_memory, embedder)
    for lookup in ("chunk", "pair"):
        for mode in ("hybrid", "mix"):
            settings = EngineSettings(relation_lookup={mode: lookup})
            param = QueryParam(
                mode=mode,  # type: ignore[arg-type]
                hl_keywords=[SEED001_HL],
                ll_keywords=[],
                enable_rerank=False,
            )
            result = await real.engine(settings=settings).query_data(SEED001_QUERY, param)
            calls = real.calls()
            expected = await ref.engine(settings=settings).query_data(SEED001_QUERY, param)
            assert _logical(calls) == _logical(ref.calls())
            assert not _check_budget(calls), calls
            assert _first_difference(expected, result) is None, _first_difference(expected, result)

            assert result["status"] == "success", result
            info = result["metadata"]["processing_info"]
            kg_chunks = [c["chunk_id"] for c in result["data"]["chunks"]]
            if lookup == "chunk":
                assert sorted(kg_chunks) == sorted(SEED001_VALID), kg_chunks
                assert info["relations_resolved_by_chunk"] == 1, info
                assert info["missing_chunk_count"] == 0, info
                rels = result["data"]["relationships"]
                assert [r["source_id"] for r in rels] == [
                    f"{corpus.SEED_001_CHUNK}<SEP>chunk-ops-10"
                ], rels
            elif mode == "hybrid":
                # LightRAG's pair lookup keeps the pair's first edge, whose chunk is gone
                assert kg_chunks == [], kg_chunks
                assert info["relations_resolved_by_pair"] >= 1, info
                assert info["missing_chunk_count"] > 0, info
                assert "chunk-an-00" in info["missing_chunk_sample"], info
            else:
                # mix also searches the chunk index directly: only that path finds chunks
                assert info["missing_chunk_count"] > 0, info


# --------------------------------------------------------------------------------------
# (b) seed 000: Milvus + graph + Redis chunk store and Redis cache
# --------------------------------------------------------------------------------------


def _seed000_stacks(
    graph: Any,
    milvus_vectors: dict[str, Any],
    redis_chunks: Any,
    real_cache: Any,
    memory_vectors: dict[str, Any],
    memory_graph: MemoryGraphStore,
    memory_chunks: MemoryChunkStore,
    embedder: HashingEmbedder,
) -> tuple[CountedStack, CountedStack]:
    real = CountedStack.wrap(
        "milvus+graph+redis",
        {**milvus_vectors, "graph": graph, "chunk_store": redis_chunks, "cache": real_cache},
        embedder,
    )
    ref = CountedStack.wrap(
        "memory",
        {
            **memory_vectors,
            "graph": memory_graph,
            "chunk_store": memory_chunks,
            "cache": MemoryCache(),
        },
        embedder,
    )
    return real, ref


@pytest.mark.parametrize(
    "graph_of_kind", ["memory", pytest.param("neo4j", marks=NEO4J)], indirect=True
)
async def test_seed000_stack_with_redis_cache(
    graph_of_kind: Any,
    milvus_vectors: dict[str, Any],
    redis_chunks: Any,
    redis: RedisHandle,
    memory_vectors: dict[str, Any],
    memory_graph: MemoryGraphStore,
    memory_chunks: MemoryChunkStore,
    embedder: HashingEmbedder,
    queries: list[GoldenQuery],
) -> None:
    """Keywords from an LLM, answers cached: the Redis-cached seed-000 stack gives the memory
    stack's data, answers and cache entries, and serves repeats from Redis. The scoped variant
    of a question reuses its cached keywords but gets its own answer."""
    from hexrag.adapters.redis import RedisCache

    ws = redis.new_workspace()
    real_cache = RedisCache(redis.client, workspace=ws)
    real, ref = _seed000_stacks(
        graph_of_kind,
        milvus_vectors,
        redis_chunks,
        real_cache,
        memory_vectors,
        memory_graph,
        memory_chunks,
        embedder,
    )
    real_llm, ref_llm = FakeLLM(), FakeLLM()
    real_engine = real.engine(llm=real_llm)
    ref_engine = ref.engine(llm=ref_llm)
    for q in queries[:3]:
        for mode, scoped in (("hybrid", False), ("mix", False), ("hybrid", True), ("mix", True)):
            param = QueryParam(
                mode=mode,  # type: ignore[arg-type]
                scope=q.scope if scoped else None,
                enable_rerank=False,
            )
            before = len(real_llm.calls)
            first = await real_engine.query_result(q.query, param)
            first_calls = real.calls()
            expected = await ref_engine.query_result(q.query, param)
            assert _logical(first_calls) == _logical(ref.calls())
            assert first.content == expected.content
            assert first.raw_data is not None and expected.raw_data is not None
            diff = _first_difference(expected.raw_data, first.raw_data)
            assert diff is None, diff
            assert first.raw_data["metadata"]["keywords"]["high_level"]
            assert first.raw_data["data"]["chunks"]
            # unscoped: keyword extraction and the answer, both cached now; scoped: the same
            # question's keywords come from the cache, the answer is new
            llm_calls = 1 if scoped else 2
            assert len(real_llm.calls) == before + llm_calls
            assert not first.cache_hit
            assert not real_llm.calls[-1].json_mode  # the last call was the answer
            assert first_calls[("cache", "set_many")] == llm_calls

            again = await real_engine.query_result(q.query, param)
            assert again.cache_hit and again.content == first.content
            assert len(real_llm.calls) == before + llm_calls, "the repeat called the LLM"
            assert real.calls().get(("cache", "set_many"), 0) == 0
    prefix = f"{ws}:llm_response_cache:"
    redis_keys = sorted(
        [k.decode()[len(prefix) :] async for k in redis.client.scan_iter(match=prefix + "*")]
    )
    ref_cache = ref.stores["cache"]._inner
    memory_keys = sorted(k for k, _ in ref_cache.items())
    # per question: one keywords entry per mode, one answer per (mode, scoped)
    assert redis_keys == memory_keys and len(redis_keys) == 3 * (2 + 4)
    entries = await real_cache.get_many(redis_keys)
    expected_entries = await ref_cache.get_many(redis_keys)
    for got, exp in zip(entries, expected_entries, strict=True):
        assert got is not None and exp is not None
        assert got["return"] == exp["return"] and got["cache_type"] == exp["cache_type"]


async def test_scoped_answer_is_not_served_from_an_unscoped_cache_entry(
    milvus_vectors: dict[str, Any],
    memory_graph: MemoryGraphStore,
    redis_chunks: Any,
    redis: RedisHandle,
    embedder: HashingEmbedder,
    queries: list[GoldenQuery],
) -> None:
    """On the seed-000 stack: the same question unscoped, then scoped to one product."""
    from hexrag.adapters.redis import RedisCache

    stack = CountedStack.wrap(
        "milvus+memory+redis",
        {
            **milvus_vectors,
            "graph": memory_graph,
            "chunk_store": redis_chunks,
            "cache": RedisCache(redis.client, workspace=redis.new_workspace()),
        },
        embedder,
    )
    engine = stack.engine(llm=FakeLLM())
    q = queries[0]
    unscoped = await engine.query_result(q.query, QueryParam(mode="hybrid", enable_rerank=False))
    scoped = await engine.query_result(
        q.query, QueryParam(mode="hybrid", enable_rerank=False, scope=q.scope)
    )
    assert unscoped.raw_data != scoped.raw_data  # the scope changes the context ...
    assert not scoped.cache_hit  # ... so the unscoped answer must not be reused


# --------------------------------------------------------------------------------------
# Regressions: scoped round trips independent of timing; scope in the answer-cache key
# --------------------------------------------------------------------------------------


class _Delayed:
    """Forwards to ``inner``; every coroutine method first sleeps ``delay`` seconds."""

    def __init__(self, inner: Any, delay: float) -> None:
        self._inner = inner
        self._delay = delay

    def __getattr__(self, attr: str) -> Any:
        import asyncio
        import inspect

        value = getattr(self._inner, attr)
        if not inspect.iscoroutinefunction(value):
            return value

        async def delayed(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(self._delay)
            return await value(*args, **kwargs)

        return delayed


async def test_scoped_chunk_fetches_do_not_depend_on_timing(
    memory_vectors: dict[str, Any],
    memory_graph: MemoryGraphStore,
    memory_chunks: MemoryChunkStore,
    embedder: HashingEmbedder,
    queries: list[GoldenQuery],
) -> None:
    """The same scoped hybrid queries on the memory stack, once with a slow entity index and
    once with a slow relation index (deterministic: memory stores never suspend otherwise),
    cost the same chunk-store calls."""
    counts = []
    for slow in ("entities", "relationships"):
        raw = {**memory_vectors, "graph": memory_graph, "chunk_store": memory_chunks}
        raw[slow] = _Delayed(raw[slow], 0.002)
        stack = CountedStack.wrap(f"slow-{slow}", raw, embedder)
        engine = stack.engine()
        per_query = []
        for q in queries:
            param = QueryParam(mode="hybrid", **q.param_fields(scoped=True))
            await engine.query_data(q.query, param)
            per_query.append(stack.calls().get(("chunk_store", "get_chunks"), 0))
        counts.append(per_query)
    assert counts[0] == counts[1], counts
