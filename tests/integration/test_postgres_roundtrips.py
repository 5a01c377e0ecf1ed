"""Every port method of the PostgreSQL adapters is one statement, whatever the batch size.

A thin wrapper around the real pool counts the statements the adapters send.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hexrag.adapters.postgres import PgCache, PgChunkStore, PgGraphStore, PgVectorIndex
from hexrag.core.model import Chunk, Entity, QueryScope, Relation, VectorRecord
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")


class CountingPool:
    """Delegates to an asyncpg pool and records each statement sent through it."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.statements: list[str] = []

    async def fetch(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.statements.append(sql)
        return await self._pool.fetch(sql, *args, **kwargs)

    async def fetchval(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.statements.append(sql)
        return await self._pool.fetchval(sql, *args, **kwargs)

    async def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self.statements.append(sql)
        return await self._pool.execute(sql, *args, **kwargs)

    def acquire(self, **kwargs: Any) -> Any:
        self.statements.append("<acquire: DDL>")
        return self._pool.acquire(**kwargs)

    def take(self) -> list[str]:
        out, self.statements = self.statements, []
        return out


@pytest.mark.parametrize("n", [1, 300])
async def test_one_statement_per_call(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
    n: int,
) -> None:
    counting = CountingPool(pg_pool)
    index = PgVectorIndex(counting, namespace="entities", dim=4, schema=pg_schema)  # type: ignore[arg-type]
    graph = PgGraphStore(counting, schema=pg_schema)  # type: ignore[arg-type]
    chunks = PgChunkStore(counting, schema=pg_schema)  # type: ignore[arg-type]
    cache = PgCache(counting, schema=pg_schema)  # type: ignore[arg-type]
    for adapter in (index, graph, chunks, cache):
        await adapter.ensure_tables()
        await adapter.ensure_tables()
    assert counting.take() == ["<acquire: DDL>"] * 4  # tables created once per adapter

    names = [f"n{i}" for i in range(n)]
    ids = [f"id{i}" for i in range(n)]
    pairs = [(names[i], names[(i + 1) % n]) for i in range(n)]
    rng = np.random.default_rng(0)
    calls: list[tuple[str, Any]] = [
        ("upsert", index.upsert([VectorRecord(id=i, vector=rng.standard_normal(4)) for i in ids])),
        ("query", index.query(np.ones(4), n)),
        ("scoped query", index.query(np.ones(4), n, scope=QueryScope(product_id="p"))),
        ("get", index.get(ids)),
        ("get_vectors", index.get_vectors(ids)),
        ("count", index.count()),
        ("delete", index.delete(ids)),
        ("upsert_nodes", graph.upsert_nodes([Entity(name=x) for x in names])),
        (
            "upsert_edges",
            graph.upsert_edges(
                [
                    Relation(id=f"r{i}", src_id=a, tgt_id=b, source_id=f"c{i}")
                    for i, (a, b) in enumerate(pairs)
                ]
            ),
        ),
        ("get_nodes", graph.get_nodes(names)),
        ("node_degrees", graph.node_degrees(names)),
        ("edge_degrees", graph.edge_degrees(pairs)),
        ("get_node_edges", graph.get_node_edges(names)),
        ("get_edges_by_pairs", graph.get_edges_by_pairs(pairs)),
        ("get_edges_by_chunk_ids", graph.get_edges_by_chunk_ids([f"c{i}" for i in range(n)])),
        (
            "get_edges_by_chunk_ids_of_pairs",
            graph.get_edges_by_chunk_ids_of_pairs([f"c{i}" for i in range(n)], pairs),
        ),
        ("get_node_edges_with_degrees", graph.get_node_edges_with_degrees(names)),
        ("get_nodes_with_degrees", graph.get_nodes_with_degrees(names)),
        ("count_nodes", graph.count_nodes()),
        ("count_edges", graph.count_edges()),
        ("delete_edges", graph.delete_edges([f"r{i}" for i in range(n)])),
        ("delete_nodes", graph.delete_nodes(names)),
        ("upsert_chunks", chunks.upsert_chunks([Chunk(id=i, content=i) for i in ids])),
        ("get_chunks", chunks.get_chunks(ids)),
        ("chunk count", chunks.count()),
        ("delete_chunks", chunks.delete_chunks(ids)),
        ("set_many", cache.set_many({i: {"v": i} for i in ids})),
        ("get_many", cache.get_many(ids)),
        ("delete_many", cache.delete_many(ids)),
        ("clear", cache.clear()),
    ]
    for name, coro in calls:
        await coro
        sent = counting.take()
        assert len(sent) == 1, f"{name} sent {len(sent)} statements for a batch of {n}"
