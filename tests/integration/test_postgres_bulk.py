"""PgVectorIndex's bulk path: ``COPY`` upserts and the HNSW index built once after a bulk load."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.postgres import PgVectorIndex
from hexrag.adapters.postgres.vector_index import COPY_MIN_ROWS
from hexrag.core.model import VectorRecord
from hexrag.core.reference.oracle import VectorOracle
from hexrag.ports import BulkLoads
from hexrag.testing._helpers import check_hits
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")

DIM = 16


def _records(n: int, seed: int = 0, prefix: str = "r") -> list[VectorRecord]:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return [
        VectorRecord(
            id=f"{prefix}{i:05d}",
            vector=m[i],
            content=f"text {i} é \"q\" \\\\",
            source_id=["chunk-1", "chunk-10"] if i % 2 else "chunk-a<SEP>chunk-b",
            file_path="product_id:p1:category:crm:source:s" if i % 3 else None,
            metadata={"product_id": "p2", "n": i, "nested": {"x": [1, None]}} if i % 5 == 0 else {},
        )
        for i in range(n)
    ]


async def _hnsw_indexes(pool: Any, schema: str) -> list[str]:
    rows = await pool.fetch(
        "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexdef LIKE '%hnsw%'",
        schema,
    )
    return [r["indexname"] for r in rows]


async def test_copy_upsert_equals_the_statement_upsert(pg_pool: Any, pg_schema: str) -> None:  # noqa: F811
    records = _records(COPY_MIN_ROWS + 10)
    small = PgVectorIndex(
        pg_pool, namespace="entities", dim=DIM, schema=pg_schema, table_prefix="a"
    )
    bulk = PgVectorIndex(pg_pool, namespace="entities", dim=DIM, schema=pg_schema, table_prefix="b")
    for i in range(0, len(records), 10):  # batches under COPY_MIN_ROWS: the statement path
        await small.upsert(records[i : i + 10])
    await bulk.upsert(records)  # one batch: the COPY path
    ids = [r.id for r in records]
    for a, b in zip(await small.get(ids), await bulk.get(ids), strict=True):
        assert a is not None and b is not None
        assert replace(a, vector=None) == replace(b, vector=None)
        np.testing.assert_array_equal(a.vector, b.vector)
    # last write wins inside a COPY batch too, and a second COPY replaces rows
    changed = [VectorRecord(id=r.id, vector=-np.asarray(r.vector), content="new") for r in records]
    await bulk.upsert([*records, *changed])
    got = await bulk.get(ids)
    assert all(g is not None and g.content == "new" for g in got)
    assert await bulk.count() == len(records)


async def test_bulk_load_builds_the_index_once(pg_pool: Any, pg_schema: str) -> None:  # noqa: F811
    index = PgVectorIndex(pg_pool, namespace="chunks", dim=DIM, schema=pg_schema)
    assert isinstance(index, BulkLoads)
    await index.ensure_tables()
    assert len(await _hnsw_indexes(pg_pool, pg_schema)) == 1
    await index.begin_bulk_load()  # empty table: the index goes
    assert await _hnsw_indexes(pg_pool, pg_schema) == []
    records = _records(300)
    oracle = VectorOracle(DIM, index.cosine_threshold)
    oracle.upsert(records)
    for i in range(0, 300, 100):
        await index.upsert(records[i : i + 100])
    q = np.asarray(records[7].vector)
    check_hits(await index.query(q, 10), oracle, q, 10)  # exact meanwhile
    await index.end_bulk_load()
    await index.end_bulk_load()  # idempotent
    assert len(await _hnsw_indexes(pg_pool, pg_schema)) == 1
    check_hits(await index.query(q, 10), oracle, q, 10)
    await index.begin_bulk_load()  # not empty: the index stays
    assert len(await _hnsw_indexes(pg_pool, pg_schema)) == 1
