"""PgGraphStore on a real PostgreSQL: edge order under tricky batches, big batches, indexes."""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.adapters.postgres import PgGraphStore
from hexrag.core.model import Relation
from hexrag.core.reference.oracle import GraphOracle
from hexrag.testing import GraphStoreContract, corpus
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")


def _r(rid: str, a: str, b: str, source_id: str | None = None) -> Relation:
    return Relation(id=rid, src_id=a, tgt_id=b, description=f"{rid} {a}-{b}", source_id=source_id)


# Each scenario: batches applied in order (a batch is a list of relations, or ("del", ids)).
SCENARIOS: dict[str, list[Any]] = {
    # r5 joins A-B while r1 is still there, then r1 leaves: the group keeps its place
    "join-then-leave": [
        [_r("r1", "A", "B")],
        [_r("r2", "A", "C")],
        [_r("r5", "A", "B"), _r("r1", "A", "D")],
    ],
    # r1 leaves A-B (its only relation) before r5 joins: A-B starts again at the end
    "leave-then-join": [
        [_r("r1", "A", "B")],
        [_r("r2", "A", "C")],
        [_r("r1", "A", "D"), _r("r5", "A", "B")],
    ],
    # moved away and back inside one batch: a new place, and a new A-B group
    "away-and-back": [
        [_r("r1", "A", "B"), _r("r2", "A", "C")],
        [_r("r1", "A", "D"), _r("r1", "B", "A")],
    ],
    # away and back while another A-B relation keeps the group alive
    "away-and-back-group-alive": [
        [_r("r1", "A", "B"), _r("r2", "A", "C"), _r("r3", "B", "A")],
        [_r("r1", "A", "D"), _r("r1", "A", "B")],
    ],
    # same id twice in a batch between the same pair (flipped): one relation, first place
    "duplicate-in-batch": [
        [_r("r1", "A", "B", "chunk-1"), _r("r2", "A", "C"), _r("r1", "B", "A", "chunk-10")],
    ],
    # a brand-new pair created twice in one batch, self-loops replaced
    "new-group-in-batch": [
        [_r("s1", "A", "A"), _r("x1", "A", "E"), _r("x2", "E", "A"), _r("s1", "A", "A", "chunk-1")],
        [("del", ["x1"])],
        [_r("x3", "A", "E")],
    ],
    # the first relation of a group deleted, the group stays first
    "delete-first-of-group": [
        [_r("r1", "A", "B"), _r("r2", "A", "C"), _r("r3", "A", "B")],
        [("del", ["r1"])],
        [_r("r4", "A", "D")],
    ],
}


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_tricky_batches_match_the_oracle(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
    name: str,
) -> None:
    store = PgGraphStore(pg_pool, schema=pg_schema)
    contract = GraphStoreContract()
    oracle = contract._oracle(store)  # the oracle of the store's declared traits
    for step in SCENARIOS[name]:
        if isinstance(step[0], tuple):
            await store.delete_edges(step[0][1])
            oracle.delete_edges(step[0][1])
        else:
            await store.upsert_edges(step)
            oracle.upsert_edges(step)
    await contract._assert_matches(store, oracle, ctx=name)


async def test_one_big_batch_keeps_insertion_order(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """Sequence numbers follow the batch order (nextval in ORDER BY order), also for 500 rows."""
    store = PgGraphStore(pg_pool, schema=pg_schema)
    rels = [
        _r(f"e{(i * 7919) % 1000:04d}", "A", "B" if i % 3 else "C", f"chunk-{i % 5}")
        for i in range(500)
    ]
    await store.upsert_edges(rels)
    oracle = GraphOracle()
    oracle.upsert_edges(rels)
    got = await store.get_edges_by_pairs([("B", "A"), ("A", "C")])
    assert [r.id for r in got[("B", "A")]] == [r.id for r in oracle.pair_edges("A", "B")]
    assert [r.id for r in got[("A", "C")]] == [r.id for r in oracle.pair_edges("A", "C")]
    edges = await store.get_node_edges(["A"])
    assert [r.id for r in edges["A"]] == [r.id for r in oracle.node_edges("A")]
    by_chunk = await store.get_edges_by_chunk_ids(["chunk-1", "chunk-0"])
    assert by_chunk == oracle.get_edges_by_chunk_ids(["chunk-1", "chunk-0"])


async def test_seed001_chunk_lookup_uses_the_gin_index(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """The seed-001 carrier is found by whole id through the ``chunk_ids`` GIN index."""
    store = PgGraphStore(pg_pool, schema=pg_schema)
    await store.upsert_edges(corpus.seed001_relations())
    got = await store.get_edges_by_chunk_ids([corpus.SEED_001_CHUNK])
    assert [r.id for r in got[corpus.SEED_001_CHUNK]] == [corpus.SEED_001_CARRIER]
    _, edges = store.tables
    async with pg_pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")
        plan = await conn.fetch(
            f"EXPLAIN SELECT id FROM {edges} WHERE chunk_ids @> ARRAY[$1::text]",
            corpus.SEED_001_CHUNK,
        )
    assert "edges_chunk_ids" in "\n".join(r[0] for r in plan)
