"""Mixed stacks: the seeds' real backends behind the ports give the memory stack's answers.

* **Seed 001** (:func:`test_seed001_stack`): PostgreSQL vector indexes whose relation record
  carries PostgreSQL array text ``{chunk-…}`` (its ``chunk_ids`` column is ``text[]``), a graph
  with 21 relations between ``Airtable`` and ``n8n`` (PostgreSQL here, Neo4j where one is
  reachable) and a PostgreSQL chunk store. Hybrid (and mix) with the default ``"chunk"`` relation
  lookup return every valid chunk; with ``EngineSettings(relation_lookup={"hybrid": "pair"})``
  the old zero-chunk failure shows, with the missing chunks counted.
* **Seed 000** (:func:`test_seed000_stack_with_redis_cache`): Milvus (Lite) vector indexes, a
  graph (memory here, Neo4j where reachable), Redis chunk store *and* Redis cache: keywords come
  from an LLM (the deterministic fake), the second identical query is served from Redis.
* **Equivalence** (:func:`test_stack_matches_memory`): on a generated dataset
  (:mod:`tests.integration.golden`: products and categories, multi-chunk relations, multi-edge
  pairs, non-ASCII names, dangling chunk ids, ``{a,b}`` source ids), every stack returns exactly
  the memory stack's ``query_data`` result - ordered entities, relationships, chunks,
  references and metadata - for the golden queries in every mode, scoped and unscoped, with
  both chunk pick methods. Backends compute cosines with different float32 rounding, so the
  dataset is built (jittered vectors, checked by :func:`golden.near_ties`) so that no score the
  queries meet is within ``TIE_GAP`` of another or of the threshold: equality stays exact.
  Vector search must be exact for that: Milvus uses a ``FLAT`` index (``AUTOINDEX`` on Milvus
  Lite turns approximate after its background index build), pgvector its HNSW index with
  ``ef_search`` above the row count (an exhaustive scan of the graph).

Round trips: every store (and the embedder) is wrapped in
:class:`hexrag.adapters.instrumented.Counting`; each query's per-``(store, method)`` call counts
must equal the memory stack's and stay within ``tests/unit/test_round_trips.BUDGET`` (plus
``SCOPED_EXTRA`` chunk-store calls for a scoped query). Two regression tests pin defects this
module found: a scoped hybrid/mix query's chunk-store calls must not depend on which backend
answers first, and a scoped query must never get an unscoped query's cached answer.

Every backend is loaded once per module (module-scoped fixtures, one event loop for the module)
into its own namespace - a PostgreSQL schema, Milvus collections, a Redis key prefix, a Neo4j
workspace label - removed at the end. Neo4j variants skip unless ``NEO4J_URI`` is set (or a
testcontainers Neo4j can start); the other backends skip locally, or fail under
``HEXRAG_REQUIRE_BACKENDS=1``, when they cannot start.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from hexrag.adapters.instrumented import Counting, RoundTrips
from hexrag.adapters.memory import (
    FakeLLM,
    HashingEmbedder,
    MemoryCache,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, EngineSettings, Entity, QueryParam, VectorRecord
from hexrag.core.query.engine import QueryEngine
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.scope import chunk_in_scope
from hexrag.testing import corpus
from tests.integration.golden import (
    MODES,
    NAMESPACES,
    PICK_METHODS,
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
from tests.unit.test_round_trips import BUDGET, SCOPED_EXTRA

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.backend("postgres"),
    pytest.mark.backend("milvus"),
    pytest.mark.backend("redis"),
]
NEO4J = pytest.mark.backend("neo4j")

N_ENTITIES = 150
SEED = 2  # a seed whose golden queries meet no near-tie (near_ties() is asserted)

Case = tuple[str, str, bool, str]  # (query label, mode, scoped, pick method)


def _uid() -> str:
    return uuid.uuid4().hex[:10]


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Backends: one namespace each, loaded once per module
# --------------------------------------------------------------------------------------


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


def _pg_indexes(pool: Any, schema: str, dim: int, prefix: str) -> dict[str, Any]:
    from hexrag.adapters.postgres import PgVectorIndex
    from hexrag.adapters.postgres.vector_index import EF_SEARCH_MAX

    return {
        ns: PgVectorIndex(
            pool,
            namespace=ns,  # type: ignore[arg-type]
            dim=dim,
            cosine_threshold=THRESHOLD,
            schema=schema,
            table_prefix=prefix,
            ef_search=EF_SEARCH_MAX,  # above the row count: the HNSW scan is exhaustive
        )
        for ns in NAMESPACES
    }


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


async def _neo4j_store(driver: Any) -> Any:
    from hexrag.adapters.neo4j import Neo4jGraphStore
    from tests.services.neo4j import new_workspace, target

    return Neo4jGraphStore(driver, workspace=new_workspace(), database=target().database)


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


@dataclass
class RedisHandle:
    """The module's redis.asyncio client and the key prefixes (workspaces) it handed out."""

    client: Any
    workspaces: list[str]

    def new_workspace(self) -> str:
        """A fresh key prefix, deleted when the module ends."""
        ws = f"mixed{_uid()}"
        self.workspaces.append(ws)
        return ws


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


# --------------------------------------------------------------------------------------
# Stacks
# --------------------------------------------------------------------------------------

VECTOR_FIXTURES = {"memory": "memory_vectors", "postgres": "pg_vectors", "milvus": "milvus_vectors"}
GRAPH_FIXTURES = {"memory": "memory_graph", "postgres": "pg_graph", "neo4j": "neo4j_graph"}
CHUNK_FIXTURES = {"memory": "memory_chunks", "postgres": "pg_chunks", "redis": "redis_chunks"}

# (vector indexes, graph, chunk store)
STACKS: tuple[tuple[str, str, str], ...] = (
    ("postgres", "postgres", "postgres"),  # seed 001's stack, graph on PostgreSQL
    ("postgres", "neo4j", "postgres"),  # seed 001's stack exactly
    ("milvus", "memory", "redis"),  # seed 000's stack, graph in memory
    ("milvus", "neo4j", "redis"),  # seed 000's stack exactly
    ("postgres", "memory", "redis"),
    ("milvus", "postgres", "postgres"),
)


def stack_id(combo: tuple[str, str, str]) -> str:
    """``vectors+graph+chunks``."""
    return "+".join(combo)


@dataclass
class CountedStack:
    """Stores wrapped in call counters that share one ledger."""

    name: str
    stores: dict[str, Any]
    embedder: Any
    ledger: RoundTrips

    @classmethod
    def wrap(cls, name: str, raw: dict[str, Any], embedder: Any) -> CountedStack:
        ledger = RoundTrips()
        stores = {k: Counting(v, k, ledger) for k, v in raw.items()}
        return cls(name, stores, Counting(embedder, "embedder", ledger), ledger)

    def engine(self, **options: Any) -> QueryEngine:
        return QueryEngine(
            **self.stores, embedder=self.embedder, tokenizer=default_tokenizer(), **options
        )

    def calls(self) -> dict[tuple[str, str], int]:
        """This query's calls per (store, method), then reset."""
        out = dict(sorted(self.ledger.items()))
        self.ledger.clear()
        return out


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


def _cases(queries: list[GoldenQuery]) -> Iterator[tuple[GoldenQuery, bool, str]]:
    for method in PICK_METHODS:
        for q in queries:
            for scoped in (False, True):
                yield q, scoped, method


async def _run_mode(
    stack: CountedStack, queries: list[GoldenQuery], mode: str
) -> dict[Case, tuple[dict[str, Any], dict[tuple[str, str], int]]]:
    out: dict[Case, tuple[dict[str, Any], dict[tuple[str, str], int]]] = {}
    engines = {
        m: stack.engine(settings=EngineSettings(kg_chunk_pick_method=m))  # type: ignore[arg-type]
        for m in PICK_METHODS
    }
    stack.ledger.clear()
    for q, scoped, method in _cases(queries):
        param = QueryParam(mode=mode, **q.param_fields(scoped=scoped))  # type: ignore[arg-type]
        result = await engines[method].query_data(q.query, param)
        out[(q.label, mode, scoped, method)] = (result, stack.calls())
    return out


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


# --------------------------------------------------------------------------------------
# Diff helpers
# --------------------------------------------------------------------------------------


def _first_difference(expected: Any, got: Any, path: str = "") -> str | None:
    """Where two JSON-like values first differ, as ``path: expected != got``."""
    if isinstance(expected, dict) and isinstance(got, dict):
        if list(expected) != list(got):
            return f"{path or '<root>'}: keys {list(expected)} != {list(got)}"
        for k in expected:
            found = _first_difference(expected[k], got[k], f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(expected, got, strict=False)):
            found = _first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(expected) != len(got):
            return f"{path}: length {len(expected)} != {len(got)}"
        return None
    if expected != got or type(expected) is not type(got):
        return f"{path}: {expected!r} != {got!r}"
    return None


#: Optional port methods and the calls each one replaces.
_REPLACES = {
    "score_ids": ("get_vectors",),
    "get_edges_by_chunk_ids_of_pairs": ("get_edges_by_chunk_ids",),
    "get_node_edges_with_degrees": ("get_node_edges", "edge_degrees"),
    "get_nodes_with_degrees": ("get_nodes", "node_degrees"),
    "get_chunk_metadata": ("get_chunks",),
}


def _logical(calls: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """Calls per store and method, with an optional method (``ScoresIds.score_ids``, the
    graph's combined reads, the chunk store's metadata read) counted as the calls it
    replaces (the memory index scores in place, the memory graph offers no combined reads)."""
    out: dict[tuple[str, str], int] = {}
    for (store, method), n in calls.items():
        for name in _REPLACES.get(method, (method,)):
            out[(store, name)] = out.get((store, name), 0) + n
    return out


def _check_budget(calls: dict[tuple[str, str], int], *, scoped: bool = False) -> list[str]:
    per_store: dict[str, int] = {}
    for (store, _), n in calls.items():
        per_store[store] = per_store.get(store, 0) + n
    out = []
    for store, n in per_store.items():
        budget = BUDGET[store] + (SCOPED_EXTRA if scoped and store == "chunk_store" else 0)
        if n > budget:
            out.append(f"{store}: {n} calls > budget {budget}")
    return out


# --------------------------------------------------------------------------------------
# (c) equivalence and round trips
# --------------------------------------------------------------------------------------


async def test_golden_set_exercises_the_pipeline(
    memory_results: dict[Case, tuple[dict[str, Any], dict[tuple[str, str], int]]],
    dataset: GoldenDataset,
    queries: list[GoldenQuery],
) -> None:
    """The reference results are not trivially equal: they find data, scopes filter it, and
    the nasty cases of the dataset are reached. (Otherwise equivalence would prove little.)"""
    chunks = dataset.chunk_by_id()
    scope_of = {q.label: q.scope for q in queries}
    a, b = dataset.multi_edge_pair
    seen = {"missing": 0, "by_chunk": 0, "pick_fallback": 0, "scope_changed": 0, "multi": 0}
    for (label, mode, scoped, method), (result, calls) in memory_results.items():
        assert not _check_budget(calls, scoped=scoped), (label, mode, scoped, method, calls)
        data = result.get("data", {})
        info = result["metadata"].get("processing_info", {})
        if not scoped:
            assert result["status"] == "success", (label, mode, method, result)
            assert data["chunks"], (label, mode, method)
            if mode != "naive":
                assert data["entities"] and data["relationships"], (label, mode, method)
            twin = memory_results[(label, mode, True, method)][0]
            seen["scope_changed"] += twin.get("data") != data
        else:
            for c in data.get("chunks", []):
                assert chunk_in_scope(scope_of[label], chunks[c["chunk_id"]]), (label, mode, c)
        seen["missing"] += info.get("missing_chunk_count", 0) > 0
        seen["by_chunk"] += info.get("relations_resolved_by_chunk", 0) > 0
        seen["pick_fallback"] += info.get("chunk_pick_fallbacks", 0) > 0
        pairs = [tuple(sorted((r["src_id"], r["tgt_id"]))) for r in data.get("relationships", [])]
        seen["multi"] += pairs.count(tuple(sorted((a, b)))) > 1
    assert all(n > 0 for n in seen.values()), seen
    # both pick methods matter on this data
    assert any(
        memory_results[(q.label, m, s, "VECTOR")][0] != memory_results[(q.label, m, s, "WEIGHT")][0]
        for q in queries
        for m in ("local", "hybrid")
        for s in (False, True)
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "stack_stores",
    [pytest.param(c, id=stack_id(c), marks=[NEO4J] if "neo4j" in c else []) for c in STACKS],
    indirect=True,
)
async def test_stack_matches_memory(
    stack_stores: dict[str, Any],
    mode: str,
    request: pytest.FixtureRequest,
    embedder: HashingEmbedder,
    queries: list[GoldenQuery],
    memory_results: dict[Case, tuple[dict[str, Any], dict[tuple[str, str], int]]],
) -> None:
    """Same ``query_data`` result (ordered entities, relationships, chunks, references and
    metadata) as the memory stack, for every golden query, scoped and unscoped, under both chunk
    pick methods; the same calls per store and method (``score_ids`` standing for
    ``get_vectors``), within the round-trip budget."""
    name = request.node.callspec.id.split("-")[0]
    stack = CountedStack.wrap(name, stack_stores, embedder)
    got = await _run_mode(stack, queries, mode)
    problems: list[str] = []
    for case, (result, calls) in got.items():
        expected, expected_calls = memory_results[case]
        diff = _first_difference(expected, result)
        if diff:
            problems.append(f"{case}: result differs at {diff}")
        if _logical(calls) != _logical(expected_calls):
            problems.append(f"{case}: calls {calls} != memory's {expected_calls}")
        problems += [f"{case}: {p}" for p in _check_budget(calls, scoped=case[2])]
    assert not problems, f"{len(problems)} problem(s) on {stack.name}:\n" + "\n".join(problems[:8])


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
