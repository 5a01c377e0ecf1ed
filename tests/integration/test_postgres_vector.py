"""PgVectorIndex on a real PostgreSQL + pgvector: what the contract suite cannot see.

Seed 001's ``{chunk-…}`` array text, the HNSW path (index used, ``hnsw.ef_search`` raised per
statement), exact scoped search on a table large enough for the planner to prefer the index,
zero vectors, wide vectors, and an existing table of another dimension.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.postgres import PgVectorIndex
from hexrag.adapters.postgres.vector_index import scope_condition
from hexrag.core.errors import ConfigurationError
from hexrag.core.ingest.ids import relation_id
from hexrag.core.model import QueryScope, VectorRecord
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.reference.oracle import VectorOracle
from hexrag.testing import corpus
from hexrag.testing._helpers import check_hits
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")


def _index(pool: Any, schema: str, **kw: Any) -> PgVectorIndex:
    kw.setdefault("namespace", "relationships")
    kw.setdefault("dim", 8)
    return PgVectorIndex(pool, schema=schema, **kw)


async def _plan(pool: Any, sql: str, *args: Any) -> str:
    rows = await pool.fetch("EXPLAIN (FORMAT JSON) " + sql, *args)
    return json.dumps(json.loads(rows[0][0]))


# ---- seed 001 -----------------------------------------------------------------------------


async def test_seed001_chunk_ids_read_as_text_go_through_the_core_parser(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """PostgreSQL hands ``text[]`` back as ``{chunk-…}`` when read as text (seed 001)."""
    index = _index(pg_pool, pg_schema)
    rid = relation_id(*corpus.SEED_001_PAIR)
    odd = ["chunk a", 'x"y', "chunk,comma", "{brace}", "back\\slash", corpus.SEED_001_CHUNK]
    await index.upsert(
        [
            VectorRecord(
                id=rid,
                vector=np.ones(8),
                src_id="Airtable",
                tgt_id="n8n",
                source_id="{" + corpus.SEED_001_CHUNK + "}",
            ),
            VectorRecord(id="odd", vector=np.arange(1, 9), source_id=odd),
            VectorRecord(id="sep", vector=np.arange(2, 10), source_id="chunk-1<SEP>chunk-10"),
        ]
    )
    raw = {
        row["id"]: row["ids"]
        for row in await pg_pool.fetch(f"SELECT id, chunk_ids::text AS ids FROM {index.table}")
    }
    assert raw[rid] == "{" + corpus.SEED_001_CHUNK + "}"  # the seed's exact form
    assert raw["sep"] == "{chunk-1,chunk-10}"
    assert parse_source_ids(raw[rid]) == [corpus.SEED_001_CHUNK]
    # quoted elements (comma, quote, braces, backslash) come back as the ids of the original
    assert parse_source_ids(raw["odd"]) == parse_source_ids(odd)
    assert parse_source_ids(raw["sep"]) == ["chunk-1", "chunk-10"]
    # what the port returns parses to the same ids
    got = {r.id: r for r in await index.get([rid, "odd", "sep"]) if r is not None}
    assert parse_source_ids(got[rid].source_id) == [corpus.SEED_001_CHUNK]
    assert got["odd"].source_id == odd
    hits = await index.query(np.ones(8), 1)
    assert hits[0].id == rid
    assert parse_source_ids(hits[0].record.source_id) == [corpus.SEED_001_CHUNK]
    # whole-id matching on the array column: chunk-1 is not chunk-10
    ids = await pg_pool.fetch(
        f"SELECT id FROM {index.table} WHERE chunk_ids @> ARRAY[$1::text]", "chunk-1"
    )
    assert [r["id"] for r in ids] == ["sep"]


# ---- HNSW path ----------------------------------------------------------------------------


async def test_unscoped_query_uses_hnsw_with_ef_search_raised(
    pg_dsn: str,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """top_k beyond pgvector's default ef_search (40) still comes back, via the index.

    The pool turns sequential scans off so that the planner takes the HNSW index even on a
    table this small (on a big table it does so by itself).
    """
    import asyncpg

    pool = await asyncpg.create_pool(
        pg_dsn, min_size=1, max_size=2, server_settings={"enable_seqscan": "off"}
    )
    try:
        dim, n = 8, 400
        index = _index(pool, pg_schema, dim=dim, cosine_threshold=0.05)
        vecs = corpus.seeded_vectors(5, n, dim)
        records = [VectorRecord(id=f"v{i:04d}", vector=vecs[i]) for i in range(n)]
        await index.upsert(records)
        q = corpus.seeded_vectors(6, 1, dim)[0]
        vec_text = "[" + ",".join(map(str, q.tolist())) + "]"
        oracle = VectorOracle(dim, 0.05)
        oracle.upsert(records)
        assert sum(s >= 0.05 for s in oracle.scores(q).values()) > 100

        # The adapter's statement scans the HNSW index ...
        plan = await _plan(pool, index._index_sql(), q.tolist(), 0.05, 116, "232", 100)
        assert "Index Scan" in plan and f"{index.table_prefix}_vdb_relationships_hnsw" in plan
        # ... which, left at the default ef_search, stops at 40 rows (the control).
        plain_sql = f"SELECT id FROM {index.table} ORDER BY vector <=> $1::text::vector LIMIT 100"
        assert "Index Scan" in await _plan(pool, plain_sql, vec_text)
        assert len(await pool.fetch(plain_sql, vec_text)) <= 40

        hits = await index.query(q, 100)
        assert len(hits) == 100
        want = [s.id for s in oracle.query(q, 100)]
        assert len(set(want) & {h.id for h in hits}) >= 95  # HNSW is approximate, but close
        assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
        # the setting was local to the statement
        async with pool.acquire() as conn:
            assert await conn.fetchval("SHOW hnsw.ef_search") == "40"
    finally:
        await pool.close()


async def test_scoped_query_is_exact_on_a_large_table(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """Out-of-scope records crowd the query's neighbourhood; the in-scope ones still come back."""
    dim = 16
    index = _index(pg_pool, pg_schema, dim=dim, cosine_threshold=-1.0, namespace="entities")
    rng = np.random.default_rng(9)
    q = rng.standard_normal(dim).astype(np.float32)
    near = q + 0.05 * rng.standard_normal((1000, dim)).astype(np.float32)
    far = rng.standard_normal((12, dim)).astype(np.float32)
    records = [
        VectorRecord(id=f"out-{i:04d}", vector=near[i], metadata={"product_id": "p2"})
        for i in range(1000)
    ] + [
        VectorRecord(id=f"in-{i:02d}", vector=far[i], file_path=corpus.P1_FILE_PATH)
        for i in range(12)
    ]
    await index.upsert(records)
    await pg_pool.execute(f"ANALYZE {index.table}")
    oracle = VectorOracle(dim, -1.0)
    oracle.upsert(records)
    scope = QueryScope(product_id="p1")
    for top_k in (1, 5, 12, 50):
        hits = await index.query(q, top_k, scope=scope)
        check_hits(hits, oracle, q, top_k, scope=scope, tol=1e-5, context=f"top_k {top_k}")
        assert [h.id for h in hits] == [s.id for s in oracle.query(q, top_k, scope=scope)]
    where, params = scope_condition(scope, 4)
    plan = await _plan(pg_pool, index._exact_sql(where), q.tolist(), -1.0, 21, *params)
    assert "hnsw" not in plan


# ---- vectors --------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [-1.0, 0.0, 0.2])
async def test_zero_vectors_have_cosine_zero(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
    threshold: float,
) -> None:
    """pgvector says NaN for a zero vector; the port (and the oracle) say cosine 0."""
    index = _index(pg_pool, pg_schema, dim=4, cosine_threshold=threshold)
    records = [
        VectorRecord(id="zero", vector=np.zeros(4)),
        VectorRecord(id="x", vector=[1.0, 0, 0, 0]),
        VectorRecord(id="minus-x", vector=[-1.0, 0, 0, 0]),
        VectorRecord(id="y", vector=[0, 1.0, 0, 0]),
    ]
    await index.upsert(records)
    oracle = VectorOracle(4, threshold)
    oracle.upsert(records)
    for q in (np.array([1.0, 0.2, 0, 0]), np.zeros(4)):
        hits = await index.query(q, 10)
        assert [(h.id, round(h.score, 6)) for h in hits] == [
            (s.id, round(s.score, 6)) for s in oracle.query(q, 10)
        ]


async def test_vectors_wider_than_hnsw_are_searched_exactly(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """pgvector's HNSW index stops at 2000 dimensions; a 3072-d index has none and still works."""
    dim = 3072
    index = _index(pg_pool, pg_schema, dim=dim, namespace="chunks")
    vecs = corpus.seeded_vectors(1, 5, dim)
    records = [VectorRecord(id=f"w{i}", vector=vecs[i]) for i in range(5)]
    await index.upsert(records)
    oracle = VectorOracle(dim, 0.2)
    oracle.upsert(records)
    check_hits(await index.query(vecs[2], 3), oracle, vecs[2], 3, tol=1e-5)
    indexes = await pg_pool.fetch(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = $1", pg_schema
    )
    assert indexes and not any("hnsw" in r["indexdef"] for r in indexes)
    got = await index.get_vectors(["w1"])
    np.testing.assert_array_equal(got["w1"], vecs[1])


async def test_existing_table_of_another_dimension_is_refused(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    await _index(pg_pool, pg_schema, dim=8).upsert([VectorRecord(id="a", vector=np.ones(8))])
    other = _index(pg_pool, pg_schema, dim=16)
    with pytest.raises(ConfigurationError, match=r"vector\(8\).*dim=16"):
        await other.count()


async def test_non_finite_vectors_are_refused_and_nothing_is_written(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    index = _index(pg_pool, pg_schema, dim=2)
    with pytest.raises(ConfigurationError):
        await index.upsert(
            [VectorRecord(id="ok", vector=[1.0, 0.0]), VectorRecord(id="nan", vector=[np.nan, 1])]
        )
    assert await index.count() == 0
    with pytest.raises(ConfigurationError):
        await index.query([1.0, 2.0, 3.0], 3)


async def test_from_url_owns_its_pool(pg_dsn: str, pg_schema: str) -> None:  # noqa: F811
    index = await PgVectorIndex.from_url(
        pg_dsn, namespace="chunks", dim=3, schema=pg_schema, max_size=2
    )
    await index.upsert([VectorRecord(id="c", vector=[1.0, 2.0, 3.0], content="x")])
    assert [h.id for h in await index.query([1.0, 2.0, 3.0], 5)] == ["c"]
    await index.aclose()
    assert index.pool.is_closing()


async def test_exact_search_switch_bypasses_the_index(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """``set_exact_search`` (migration verification) routes queries to the exact scan and
    back. The index statement is replaced by one that finds nothing, standing for an ANN
    index that misses every neighbour."""
    from hexrag.adapters.postgres.vector_index import _COLUMNS
    from hexrag.ports import ExactSearchSwitch

    dim, n = 8, 60
    index = _index(pg_pool, pg_schema, dim=dim, cosine_threshold=0.05)
    assert isinstance(index, ExactSearchSwitch)
    vecs = corpus.seeded_vectors(7, n, dim)
    records = [VectorRecord(id=f"v{i:03d}", vector=vecs[i]) for i in range(n)]
    await index.upsert(records)
    oracle = VectorOracle(dim, 0.05)
    oracle.upsert(records)
    q = corpus.seeded_vectors(8, 1, dim)[0]
    want = [h.id for h in oracle.query(q, 10)]
    assert len(want) == 10
    blind = (f"SELECT 1::float8 AS score, {_COLUMNS} FROM {index.table} "
             "WHERE $1::real[] IS NOT NULL AND $2::float8 IS NOT NULL AND $3::int IS NOT NULL "
             "AND $4::text IS NOT NULL AND $5::int IS NOT NULL AND false")
    index._index_sql = lambda: blind  # type: ignore[method-assign]
    assert await index.query(q, 10) == []
    assert index.set_exact_search(True) is False
    assert [h.id for h in await index.query(q, 10)] == want
    assert index.set_exact_search(False) is True
    assert await index.query(q, 10) == []
    # an index built exact stays exact
    always = _index(pg_pool, pg_schema, dim=dim, cosine_threshold=0.05, exact_search=True)
    always._index_sql = lambda: blind  # type: ignore[method-assign]
    always.set_exact_search(False)
    assert [h.id for h in await always.query(q, 10)] == want
