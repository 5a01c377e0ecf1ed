"""hexrag's own PostgreSQL layout: the statements ranked by the server return exactly what the
memory stack returns (ties by id, inclusive threshold, top_k cut inside a tie), the HNSW path
reads enough candidates for top_k, a table of the older layout (vectors in the TOAST table) is
converted on open without changing a bit, the pair-narrowed chunk lookup and the degree
counts equal the memory graph's, and hexrag's pool releases a connection without a reset
round trip.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.memory import MemoryGraphStore, MemoryVectorIndex
from hexrag.adapters.postgres import PgGraphStore, PgVectorIndex, create_pool
from hexrag.core.model import QueryScope, Relation, VectorRecord
from hexrag.core.reference.oracle import VectorOracle
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")


def _tied_records(dim: int, seed: int) -> list[VectorRecord]:
    """Random records, plus exact ties: copies of some vectors scaled by powers of two (the
    same cosine in any float arithmetic) under ids that sort before and after the original,
    and scope metadata on a third of them."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((120, dim)).astype(np.float32)
    records: list[VectorRecord] = []
    for i, v in enumerate(base):
        meta = {"product_id": f"p{i % 3}"} if i % 3 else {}
        records.append(VectorRecord(id=f"r{i:03d}", vector=v, metadata=meta))
    for i in range(0, 120, 7):
        for tag, scale in (("a", 2.0), ("z", 0.5), ("é", 4.0)):
            records.append(VectorRecord(id=f"{tag}{i:03d}", vector=base[i] * np.float32(scale)))
    return records


async def _both(pool: Any, schema: str, records: list[VectorRecord], dim: int,
                threshold: float) -> tuple[PgVectorIndex, MemoryVectorIndex]:
    pg = PgVectorIndex(pool, namespace="entities", dim=dim, schema=schema,
                       cosine_threshold=threshold, exact_search=True)
    mem = MemoryVectorIndex("entities", dim, cosine_threshold=threshold)
    await pg.upsert(records)
    await mem.upsert(records)
    return pg, mem


def _runs(ids: list[str], score: dict[str, float]) -> list[frozenset[str]]:
    """``ids`` cut into runs of equal (exact, float64) score."""
    runs: list[frozenset[str]] = []
    for _, group in itertools.groupby(ids, key=lambda i: score[i]):
        runs.append(frozenset(group))
    return runs


@pytest.mark.parametrize("threshold", [-1.0, 0.0, 0.2])
async def test_exact_search_gives_the_reference_lists(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
    threshold: float,
) -> None:
    """The server-ranked exact search returns the float64 oracle's lists exactly (exact ties
    broken by id, also at the top_k cut), and the memory stack's lists up to the order
    inside a tie: the memory stack's float32 matrix product (BLAS) may score two copies of a
    direction one ulp apart, depending on their rows."""
    dim = 24
    records = _tied_records(dim, 3)
    pg, mem = await _both(pg_pool, pg_schema, records, dim, threshold)
    oracle = VectorOracle(dim, threshold)
    oracle.upsert(records)
    rng = np.random.default_rng(4)
    queries = [records[i].vector for i in (0, 7, 14)] + list(rng.standard_normal((4, dim)))
    ties_seen = 0
    for q, top_k in itertools.product(queries, (1, 3, 4, 10, 50, 500)):
        for scope in (None, QueryScope(product_id="p1")):
            exact = {s.id: s.score for s in oracle.query(q, 10_000, scope=scope)}
            want = [s.id for s in oracle.query(q, top_k, scope=scope)]
            got = await pg.query(q, top_k, scope=scope)
            assert [h.id for h in got] == want, (top_k, scope)
            for h in got:
                assert h.score == pytest.approx(exact[h.id], abs=1e-6)
                assert h.score >= threshold
                assert h.record.vector is None
            mem_ids = [h.id for h in await mem.query(q, 10_000, scope=scope)]
            cut = _runs(mem_ids, exact)
            full = _runs(want, exact)
            if len(want) == sum(len(r) for r in cut[: len(full)]):
                assert cut[: len(full)] == full  # same lists, up to the order inside a tie
            ties_seen += sum(exact[a] == exact[b] for a, b in itertools.pairwise(want))
    assert ties_seen > 0  # the tie-breaks were exercised


async def test_threshold_is_inclusive_and_ties_cut_by_id(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """cosine exactly 0.5 is kept, 0.487 is not; a top_k cut inside a tie keeps the smaller
    ids (code-point order), as the memory stack does."""
    d = 8

    def basis(*pairs: tuple[int, float]) -> np.ndarray:
        v = np.zeros(d, dtype=np.float32)
        for i, x in pairs:
            v[i] = x
        return v

    records = [
        VectorRecord(id="at", vector=basis((0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0))),
        VectorRecord(id="below", vector=basis((0, 1.0), (1, 1.0), (2, 1.0), (3, 1.1))),
        *[VectorRecord(id=t, vector=basis((0, 1.0), (1, 0.5)))
          for t in ("中文", "b", "B", "é", "a1", "a10", "a2")],
    ]
    for exact in (True, False):
        pg = PgVectorIndex(pg_pool, namespace="chunks", dim=d, schema=pg_schema,
                           cosine_threshold=0.5, exact_search=exact)
        mem = MemoryVectorIndex("chunks", d, cosine_threshold=0.5)
        await pg.upsert(records)
        await mem.upsert(records)
        q = basis((0, 2.0))
        for top_k in (1, 3, 7, 8, 20):
            want = [h.id for h in await mem.query(q, top_k)]
            assert [h.id for h in await pg.query(q, top_k)] == want
        assert [h.id for h in await pg.query(q, 20)][-1] == "at"
        assert "below" not in [h.id for h in await pg.query(q, 20)]


async def test_hnsw_search_reads_enough_candidates_for_top_k(pg_dsn: str, pg_schema: str) -> None:  # noqa: F811
    """``hnsw.ef_search`` follows top_k: 150 hits come back through the index (pgvector's
    default of 40 would stop at 40), ordered by (-score, id)."""
    pool = await create_pool(pg_dsn, max_size=2, server_settings={"enable_seqscan": "off"})
    try:
        dim = 8
        index = PgVectorIndex(pool, namespace="relationships", dim=dim, schema=pg_schema,
                              cosine_threshold=0.01)
        # positive components: every cosine is above the threshold
        vecs = np.abs(np.random.default_rng(5).standard_normal((400, dim))).astype(np.float32)
        await index.upsert([VectorRecord(id=f"v{i:03d}", vector=v) for i, v in enumerate(vecs)])
        plan = await pool.fetch(
            "EXPLAIN (FORMAT TEXT) " + index._index_sql(), vecs[0].tolist(), 0.01, 166, "166", 150
        )
        assert "_hnsw" in "\n".join(r[0] for r in plan)
        hits = await index.query(vecs[0], 150)
        assert len(hits) == 150
        assert all(a.score > b.score or (a.score == b.score and a.id < b.id)
                   for a, b in itertools.pairwise(hits))
    finally:
        await pool.close()


async def test_a_table_of_the_older_layout_is_converted_on_open(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """Vectors stored out of line (pgvector's default storage, the layout before) move back
    into the rows when an adapter that may run DDL opens the table; nothing changes."""
    dim = 700  # 2.8 KB: toasted under EXTERNAL storage
    vecs = np.random.default_rng(6).standard_normal((30, dim)).astype(np.float32)
    records = [VectorRecord(id=f"c{i:02d}", vector=v, content=f"text {i}")
               for i, v in enumerate(vecs)]
    first = PgVectorIndex(pg_pool, namespace="chunks", dim=dim, schema=pg_schema,
                          exact_search=True)
    await first.ensure_tables()
    table = first.table
    # the older layout: pgvector's default storage, rows written under it
    await pg_pool.execute(f"ALTER TABLE {table} ALTER COLUMN vector SET STORAGE EXTERNAL")
    await first.upsert(records)
    storage = ("SELECT attstorage FROM pg_attribute WHERE attrelid = $1::regclass "
               "AND attname = 'vector'")
    toast = ("SELECT pg_relation_size(reltoastrelid) FROM pg_class "
             "WHERE oid = $1::regclass")
    assert await pg_pool.fetchval(storage, table) == b"e"
    assert await pg_pool.fetchval(toast, table) > 0
    before = [(h.id, h.score) for h in await first.query(vecs[3], 10)]

    readonly = PgVectorIndex(pg_pool, namespace="chunks", dim=dim, schema=pg_schema,
                             exact_search=True, create_tables=False)
    assert [(h.id, h.score) for h in await readonly.query(vecs[3], 10)] == before
    assert await pg_pool.fetchval(storage, table) == b"e"  # no DDL rights asked: untouched

    reopened = PgVectorIndex(pg_pool, namespace="chunks", dim=dim, schema=pg_schema,
                             exact_search=True)
    assert await reopened.count() == 30
    assert await pg_pool.fetchval(storage, table) == b"p"
    assert await pg_pool.fetchval(toast, table) == 0
    assert [(h.id, h.score) for h in await reopened.query(vecs[3], 10)] == before
    stored = await reopened.get_vectors([r.id for r in records])
    for r in records:
        assert stored[r.id].tobytes() == np.asarray(r.vector, dtype=np.float32).tobytes()
    got = await reopened.get(["c05"])
    assert got[0] is not None and got[0].content == "text 5"


def _graph() -> list[Relation]:
    """Multi-edges per pair (both orientations), self-loops, chunk ids shared across pairs."""
    rels = []
    names = [f"n{i}" for i in range(12)] + ["Émile", "zed"]
    k = 0
    for i, a in enumerate(names):
        for b in names[i:i + 3]:
            for rep in range(1 + (i + len(b)) % 3):
                src, tgt = (a, b) if rep % 2 == 0 else (b, a)
                chunks = [f"c{(k + j) % 9}" for j in range(1 + k % 3)]
                rels.append(Relation(id=f"rel-{k:03d}", src_id=src, tgt_id=tgt,
                                     source_id="<SEP>".join(chunks), weight=float(k % 4)))
                k += 1
    return rels


async def _graphs(pool: Any, schema: str) -> tuple[PgGraphStore, MemoryGraphStore, list[Relation]]:
    rels = _graph()
    pg, mem = PgGraphStore(pool, schema=schema), MemoryGraphStore()
    for store in (pg, mem):
        await store.upsert_edges(rels[:40])
        await store.upsert_edges(rels[40:])
        await store.delete_edges([rels[5].id, rels[17].id])
    return pg, mem, rels


async def test_degrees_and_node_edges_equal_the_memory_graph(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    pg, mem, rels = await _graphs(pg_pool, pg_schema)
    names = [*sorted({r.src_id for r in rels} | {r.tgt_id for r in rels}), "absent"]
    assert await pg.node_degrees(names) == await mem.node_degrees(names)
    for some in (names, [*names[2:5], "absent", names[2]], ["absent"]):
        nodes, degrees = await pg.get_nodes_with_degrees(some)
        assert nodes == await mem.get_nodes(some)
        assert list(nodes) == [n for n in dict.fromkeys(some) if n != "absent"]
        assert degrees == await mem.node_degrees(some)
    pairs = [(r.src_id, r.tgt_id) for r in rels] + [("absent", "n1")]
    assert await pg.edge_degrees(pairs) == await mem.edge_degrees(pairs)
    want = await mem.get_node_edges(names)
    got = await pg.get_node_edges(names)
    assert {n: [r.id for r in v] for n, v in got.items()} == {
        n: [r.id for r in v] for n, v in want.items()
    }
    assert any(r.src_id == r.tgt_id for v in got.values() for r in v)  # self-loops exercised
    for some in (names, names[3:6], ["n5"], ["absent"]):
        edges, degrees = await pg.get_node_edges_with_degrees(some)
        want_edges = await mem.get_node_edges(some)
        assert {n: [r.id for r in v] for n, v in edges.items()} == {
            n: [r.id for r in v] for n, v in want_edges.items()
        }
        ends = sorted({x for v in want_edges.values() for r in v for x in (r.src_id, r.tgt_id)})
        assert degrees == await mem.node_degrees(ends)


async def test_chunk_lookup_narrowed_to_pairs_equals_the_filtered_lookup(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    pg, mem, rels = await _graphs(pg_pool, pg_schema)
    chunks = [f"c{i}" for i in range(10)] + ["c3", "nope"]
    pair_sets = [
        [("n1", "n2")],
        [("n2", "n1"), ("n5", "n5"), ("Émile", "zed")],
        [(r.src_id, r.tgt_id) for r in rels[::4]],
        [("absent", "n1")],
    ]
    full = await mem.get_edges_by_chunk_ids(chunks)
    for pairs in pair_sets:
        wanted = {tuple(sorted(p)) for p in pairs}
        expected = {
            cid: kept for cid, rs in full.items()
            if (kept := [r.id for r in rs if r.pair in wanted])
        }
        got = await pg.get_edges_by_chunk_ids_of_pairs(chunks, pairs)
        assert {cid: [r.id for r in rs] for cid, rs in got.items()} == expected
        assert list(got) == [c for c in dict.fromkeys(chunks) if c in expected]
    assert await pg.get_edges_by_chunk_ids_of_pairs([], [("n1", "n2")]) == {}
    assert await pg.get_edges_by_chunk_ids_of_pairs(["c1"], []) == {}


async def test_pool_releases_without_a_reset_round_trip(pg_dsn: str) -> None:  # noqa: F811
    """hexrag's pool sends no ``RESET ALL; UNLISTEN *; ...`` after each statement; a
    connection released inside a transaction is still rolled back."""
    pool = await create_pool(pg_dsn, min_size=1, max_size=1)
    try:
        sent: list[str] = []
        async with pool.acquire() as conn:
            conn.add_query_logger(lambda record: sent.append(record.query))
        for _ in range(3):
            assert await pool.fetchval("SELECT 1") == 1
        assert sent == ["SELECT 1"] * 3
        conn = await pool.acquire()
        await conn.execute("BEGIN")
        await conn.execute("CREATE TEMP TABLE hexrag_left_open (x int)")
        await pool.release(conn)
        async with pool.acquire() as again:
            assert not again.is_in_transaction()
            assert await again.fetchval("SELECT to_regclass('pg_temp.hexrag_left_open')") is None
    finally:
        await pool.close()
