"""MemoryVectorIndex specifics: zero-copy loading, export, the lazy scope index, and a
hypothesis comparison with the oracle over interleaved writes and scoped queries."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.memory import MemoryVectorIndex
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import QueryScope, VectorRecord
from hexrag.core.reference.oracle import VectorOracle, rank_records
from hexrag.testing import corpus
from hexrag.testing._helpers import check_hits


def _records(n: int, dim: int, seed: int = 0) -> tuple[np.ndarray, list[VectorRecord]]:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dim)).astype(np.float32) * 3
    records = [
        VectorRecord(
            id=f"id-{i:05d}",
            content=f"c{i}",
            file_path=corpus.P1_FILE_PATH if i % 3 == 0 else None,
            metadata={"product_id": "p2"} if i % 3 == 1 else {},
        )
        for i in range(n)
    ]
    return matrix, records


async def test_from_arrays_adopts_the_matrix_without_copy() -> None:
    matrix, records = _records(50, 8)
    raw = matrix.copy()
    index = MemoryVectorIndex.from_arrays("entities", matrix, records)
    exported, exported_records = index.export_arrays()
    assert np.shares_memory(exported, matrix)
    # normalised in place
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(matrix, raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-5)
    assert [r.id for r in exported_records] == [r.id for r in records]
    assert all(r.vector is None for r in exported_records)
    assert await index.count() == 50
    hits = await index.query(raw[7], 1)
    assert hits[0].id == "id-00007"
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


async def test_from_arrays_normalized_true_leaves_rows_alone() -> None:
    matrix, records = _records(5, 4)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    before = matrix.copy()
    index = MemoryVectorIndex.from_arrays("chunks", matrix, records, normalized=True)
    assert np.array_equal(matrix, before)
    assert index.cosine_threshold == 0.2
    assert index.dim == 4


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda m: m.astype(np.float64), id="float64"),
        pytest.param(lambda m: np.asfortranarray(m), id="fortran"),
        pytest.param(lambda m: m[:-1], id="row-count"),
        pytest.param(lambda m: m[:, 0].copy(), id="1-d"),
    ],
)
def test_from_arrays_rejects_bad_matrices(bad: object) -> None:
    matrix, records = _records(4, 3)
    with pytest.raises(ConfigurationError):
        MemoryVectorIndex.from_arrays("entities", bad(matrix), records)  # type: ignore[operator]


def test_from_arrays_rejects_duplicate_ids() -> None:
    matrix, records = _records(3, 3)
    records[2] = VectorRecord(id=records[0].id)
    with pytest.raises(ConfigurationError):
        MemoryVectorIndex.from_arrays("entities", matrix, records)


async def test_from_arrays_then_writes_and_export_round_trip() -> None:
    matrix, records = _records(40, 6, seed=2)
    raw = matrix.copy()
    index = MemoryVectorIndex.from_arrays("entities", matrix, records, cosine_threshold=-1.0)
    extra = VectorRecord(id="extra", vector=np.ones(6, np.float32), content="x")
    await index.upsert([extra])  # grows past the adopted matrix
    await index.delete(["id-00003", "id-00039", "nope"])
    oracle = VectorOracle(6, -1.0)
    oracle.upsert(
        [VectorRecord(id=r.id, vector=raw[i], content=r.content, file_path=r.file_path,
                      metadata=r.metadata) for i, r in enumerate(records)]
    )
    oracle.upsert([extra])
    oracle.delete(["id-00003", "id-00039"])
    q = raw[10]
    for scope in (None, QueryScope(product_id="p1")):
        check_hits(await index.query(q, 50, scope=scope), oracle, q, 50, scope=scope)

    exported, exported_records = index.export_arrays()
    assert exported.shape == (39, 6)
    assert sorted(r.id for r in exported_records) == sorted(oracle.records)
    clone = MemoryVectorIndex.from_arrays(
        "entities", exported.copy(), exported_records, cosine_threshold=-1.0, normalized=True
    )
    assert [(h.id, h.score) for h in await clone.query(q, 50)] == [
        (h.id, h.score) for h in await index.query(q, 50)
    ]


async def test_get_vectors_returns_normalised_copies() -> None:
    index = MemoryVectorIndex("entities", 3)
    await index.upsert([VectorRecord(id="a", vector=[3.0, 0.0, 4.0])])
    v = (await index.get_vectors(["a"]))["a"]
    np.testing.assert_allclose(v, [0.6, 0.0, 0.8], rtol=1e-6)
    v[:] = 0  # a copy: the index is unchanged
    assert (await index.query([0.6, 0.0, 0.8], 1))[0].score == pytest.approx(1.0, abs=1e-6)


async def test_zero_vectors_and_query_edge_cases() -> None:
    index = MemoryVectorIndex("entities", 3, cosine_threshold=-1.0)
    await index.upsert(
        [VectorRecord(id="zero", vector=[0.0, 0.0, 0.0]), VectorRecord(id="x", vector=[1, 0, 0])]
    )
    hits = await index.query([0.0, 0.0, 0.0], 5)
    assert [(h.id, h.score) for h in hits] == [("x", 0.0), ("zero", 0.0)]
    assert await index.query([1.0, 0.0, 0.0], 0) == []
    with pytest.raises(ConfigurationError):
        await index.query([1.0, 0.0], 1)
    with pytest.raises(ConfigurationError):
        MemoryVectorIndex("entities", 0)


async def test_scope_index_is_lazy_and_then_maintained() -> None:
    index = MemoryVectorIndex("entities", 2, cosine_threshold=-1.0)
    await index.upsert(
        [
            VectorRecord(id="p1", vector=[1, 0], metadata={"product_id": "p1"}),
            VectorRecord(id="p2", vector=[1, 0.1], metadata={"product_id": "p2"}),
        ]
    )
    assert index._scope is None  # bulk writes do not pay for it
    scope = QueryScope(product_id="p1")
    assert [h.id for h in await index.query([1, 0], 5, scope=scope)] == ["p1"]
    assert index._scope is not None
    # writes after the build keep the scope index in step (rows move on delete)
    await index.upsert([VectorRecord(id="p1b", vector=[0, 1], file_path=corpus.P1_FILE_PATH)])
    await index.delete(["p1"])
    await index.upsert([VectorRecord(id="p2", vector=[1, 0.2], metadata={"product_id": "p1"})])
    assert sorted(h.id for h in await index.query([1, 0], 5, scope=scope)) == ["p1b", "p2"]
    await index.delete(["p2", "p1b"])
    assert await index.query([1, 0], 5, scope=scope) == []


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), st.integers(1, 12), st.integers(0, 2**31 - 1)),
        st.tuples(st.just("delete"), st.integers(1, 6), st.integers(0, 2**31 - 1)),
        st.tuples(st.just("query"), st.integers(1, 15), st.integers(0, 2**31 - 1)),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ops=_ops, threshold=st.sampled_from([-1.0, 0.0, 0.3]))
def test_interleaved_writes_and_scoped_queries_match_oracle(
    ops: list[tuple[str, int, int]], threshold: float
) -> None:
    """Invariant: whatever the write history, a (scoped) query equals the oracle's answer."""

    async def run() -> None:
        dim = 6
        index = MemoryVectorIndex("chunks", dim, cosine_threshold=threshold)
        oracle = VectorOracle(dim, threshold)
        for kind, size, seed in ops:
            rng = np.random.default_rng(seed)
            if kind == "upsert":
                batch = corpus.random_vector_records(rng, size, dim)
                await index.upsert(batch)
                oracle.upsert(batch)
            elif kind == "delete":
                ids = sorted(oracle.records)
                victims = [ids[int(i)] for i in rng.integers(0, len(ids), size)] if ids else []
                victims.append("never-there")
                await index.delete(victims)
                oracle.delete(victims)
            else:
                scope = corpus.SCOPES[int(rng.integers(len(corpus.SCOPES)))]
                q = rng.standard_normal(dim).astype(np.float32)
                hits = await index.query(q, size, scope=scope)
                check_hits(hits, oracle, q, size, scope=scope, tol=1e-4)
            assert await index.count() == len(oracle.records)

    asyncio.run(run())


def test_oracle_rank_records_rule() -> None:
    """The oracle itself: threshold inclusive, ties by id, scope before top_k."""
    recs = [
        VectorRecord(id="b", vector=[1, 1]),
        VectorRecord(id="a", vector=[2, 2]),
        VectorRecord(id="c", vector=[1, 0], metadata={"product_id": "p2"}),
        VectorRecord(id="d", vector=[0, 1]),
    ]
    got = rank_records(recs, [1, 1], 2, cosine_threshold=0.0)
    assert [s.id for s in got] == ["a", "b"]
    got = rank_records(recs, [1, 0], None, cosine_threshold=0.0, scope=QueryScope(product_id="p1"))
    assert [s.id for s in got] == ["a", "b", "d"]
    assert got[-1].score == pytest.approx(0.0)
