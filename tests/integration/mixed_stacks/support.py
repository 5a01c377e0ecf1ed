"""What the mixed-stack tests share besides their fixtures (``conftest.py``): the golden
dataset's settings, the stack combinations, the call-counting stack wrapper, the memory
stack's reference run, the diff and round-trip helpers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from hexrag.adapters.instrumented import Counting, RoundTrips
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.model import EngineSettings, QueryParam
from hexrag.core.query.engine import QueryEngine
from tests.integration.golden import (
    NAMESPACES,
    PICK_METHODS,
    THRESHOLD,
    GoldenQuery,
)
from tests.unit.test_round_trips import BUDGET, SCOPED_EXTRA

#: every mixed-stack test module's marks: one event loop per module, the servers it needs
MARKS = [
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


async def _neo4j_store(driver: Any) -> Any:
    from hexrag.adapters.neo4j import Neo4jGraphStore
    from tests.services.neo4j import new_workspace, target

    return Neo4jGraphStore(driver, workspace=new_workspace(), database=target().database)


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
