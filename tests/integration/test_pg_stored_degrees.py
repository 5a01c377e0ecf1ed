"""PgGraphStore's stored node degrees (``<prefix>_node_degrees``, kept by edge triggers).

The table must always equal the degrees counted from the edges: after random batches of
upserts (pairs moved, self-loops, ids repeated in a batch), deletions of edges and nodes;
under concurrent writers (no deadlock, no lost count); and on a table set made before the
table existed (counted at read time without DDL rights, created and filled once with them).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any

import pytest

from hexrag.adapters.postgres import PgGraphStore
from hexrag.core.reference.oracle import GraphOracle
from hexrag.domain.records import Entity, Relation
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")

NAMES = ["A", "B", "C", "D", "E"]


async def _stored(pool: Any, store: PgGraphStore) -> dict[str, int]:
    table = store._degree_table  # the table under test
    rows = await pool.fetch(f"SELECT name, degree FROM {table}")
    return {r["name"]: int(r["degree"]) for r in rows}


async def _counted(pool: Any, store: PgGraphStore) -> dict[str, int]:
    _, edges = store.tables
    rows = await pool.fetch(
        f"""SELECT name, count(*) AS degree FROM (
                SELECT src AS name FROM {edges} UNION ALL SELECT tgt FROM {edges}
            ) AS x GROUP BY name"""
    )
    return {r["name"]: int(r["degree"]) for r in rows}


def _rel(rid: int, a: str, b: str) -> Relation:
    return Relation(id=f"r{rid}", src_id=a, tgt_id=b, description=f"{a}-{b}")


def _random_ops(rng: random.Random) -> list[tuple[str, Any]]:
    ops: list[tuple[str, Any]] = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.choice(["upsert", "upsert", "delete_edges", "delete_nodes", "upsert_nodes"])
        if kind == "upsert":
            arg: Any = [
                (rng.randint(0, 7), rng.choice(NAMES), rng.choice(NAMES))
                for _ in range(rng.randint(1, 6))
            ]
        elif kind == "delete_edges":
            arg = [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]
        else:
            arg = rng.sample(NAMES, rng.randint(0, 2))
        ops.append((kind, arg))
    return ops


@pytest.mark.parametrize("seed", range(40))
async def test_stored_degrees_equal_counted_after_random_writes(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
    seed: int,
) -> None:
    """Random batches (pairs moved, self-loops, ids repeated in a batch), deletions of
    edges and nodes: after each, the table equals the counts and the memory oracle."""
    ops = _random_ops(random.Random(seed))
    store = PgGraphStore(pg_pool, schema=pg_schema, table_prefix="deg")
    await store.ensure_tables()
    oracle = GraphOracle()
    for kind, arg in ops:
        if kind == "upsert":
            rels = [_rel(i, a, b) for i, a, b in arg]
            await store.upsert_edges(rels)
            oracle.upsert_edges(rels)
        elif kind == "delete_edges":
            ids = [f"r{i}" for i in arg]
            await store.delete_edges(ids)
            oracle.delete_edges(ids)
        elif kind == "delete_nodes":
            await store.delete_nodes(arg)
            oracle.delete_nodes(arg)
        else:
            nodes = [Entity(name=n, description="d") for n in arg]
            await store.upsert_nodes(nodes)
            oracle.upsert_nodes(nodes)
        counted = await _counted(pg_pool, store)
        assert await _stored(pg_pool, store) == counted
        want = oracle.node_degrees(NAMES)
        assert await store.node_degrees(NAMES) == want
        _, degrees = await store.get_nodes_with_degrees(NAMES)
        assert degrees == want


async def test_concurrent_writers_neither_deadlock_nor_lose_counts(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """Writers touching the same nodes in opposite orders, 8 at a time."""
    store = PgGraphStore(pg_pool, schema=pg_schema)
    names = [f"n{i:02d}" for i in range(12)]

    async def writer(w: int) -> None:
        order = names if w % 2 else list(reversed(names))
        for step in range(6):
            rels = [
                Relation(id=f"w{w}-{step}-{i}", src_id=a, tgt_id=b, description="x")
                for i, (a, b) in enumerate(itertools.pairwise(order))
            ]
            await store.upsert_edges(rels)
            if step % 2:
                await store.delete_edges([r.id for r in rels[::3]])

    await asyncio.gather(*(writer(w) for w in range(8)))
    counted = await _counted(pg_pool, store)
    assert await _stored(pg_pool, store) == counted
    assert sum(counted.values()) == 2 * await store.count_edges()


async def test_a_table_set_from_before_gets_its_degrees_once(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    first = PgGraphStore(pg_pool, schema=pg_schema, table_prefix="old")
    rels = [_rel(i, a, b) for i, (a, b) in enumerate([("A", "B"), ("A", "C"), ("C", "C")])]
    await first.upsert_edges(rels)
    # the layout as an older hexrag left it: no degrees table, no triggers
    await pg_pool.execute(f"DROP TABLE {first._degree_table}")
    await pg_pool.execute(f'DROP FUNCTION "{pg_schema}"."old_edges_count_degrees"() CASCADE')
    want = {"A": 2, "B": 1, "C": 3, "D": 0}

    reader = PgGraphStore(pg_pool, schema=pg_schema, table_prefix="old", create_tables=False)
    assert await reader.node_degrees(list(want)) == want  # counted at read time
    edges, degrees = await reader.get_node_edges_with_degrees(["C"])
    assert [r.id for r in edges["C"]] == ["r1", "r2"]
    assert degrees == {"A": 2, "C": 3}
    exists = await pg_pool.fetchval("SELECT to_regclass($1)", f"{pg_schema}.old_node_degrees")
    assert exists is None  # a reader without DDL rights created nothing

    writer = PgGraphStore(pg_pool, schema=pg_schema, table_prefix="old")
    assert await writer.node_degrees(list(want)) == want
    assert await _stored(pg_pool, writer) == {"A": 2, "B": 1, "C": 3}
    await writer.upsert_edges([_rel(9, "D", "A")])  # the triggers are back
    assert await _stored(pg_pool, writer) == {"A": 3, "B": 1, "C": 3, "D": 1}
