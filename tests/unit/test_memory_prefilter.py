"""The int8 prefilter of MemoryVectorIndex: its error bound holds, and a prefiltered search
returns what one full float32 product returns (the same ids in the same order, the scores to
the last bit of float32), under scopes, ties, thresholds and interleaved writes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest

from hexrag.adapters.memory import MemoryVectorIndex
from hexrag.adapters.memory import prefilter as pf_module
from hexrag.adapters.memory.prefilter import MIN_ROWS, Int8Prefilter
from hexrag.core.model import QueryScope, VectorHit, VectorRecord

pytestmark = pytest.mark.skipif(not pf_module.available(), reason="simsimd not installed")


def _normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """Rows around a few centres, so many rows pass the threshold and scores crowd."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((6, dim))
    rows = centres[rng.integers(0, 6, n)] + 0.6 * rng.standard_normal((n, dim))
    return rows.astype(np.float32)


def _matrices() -> Iterator[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(3)
    yield "gaussian-384", rng.standard_normal((3000, 384)).astype(np.float32)
    yield "clustered-64", _clustered(4000, 64, 4)
    spiky = rng.standard_normal((2500, 48)).astype(np.float32) * 0.01
    spiky[np.arange(2500), rng.integers(0, 48, 2500)] = 5.0  # one dominant coordinate
    spiky[:50] = 0.0  # zero rows
    yield "spiky-48", spiky
    yield "small-dim-7", rng.standard_normal((2200, 7)).astype(np.float32)
    yield "gaussian-1024", rng.standard_normal((2100, 1024)).astype(np.float32)


@pytest.mark.parametrize("name,matrix", list(_matrices()), ids=[n for n, _ in _matrices()])
def test_estimates_are_within_the_bound(name: str, matrix: np.ndarray) -> None:
    m = _normalised(matrix)
    pf = Int8Prefilter(m.shape[0], m.shape[1])
    pf.set_rows(0, m)
    rng = np.random.default_rng(11)
    queries = [rng.standard_normal(m.shape[1]), m[7] + 0.01 * rng.standard_normal(m.shape[1])]
    queries.append(np.eye(m.shape[1])[0])  # a one-hot query: quantisation error zero
    for raw in queries:
        q = (raw / np.linalg.norm(raw)).astype(np.float32)
        est, bound = pf.estimates(q, m.shape[0])
        exact = m @ q
        assert est.shape == exact.shape
        worst = float(np.max(np.abs(est - exact.astype(np.float64))))
        assert worst <= bound, (name, worst, bound)
        assert bound < 0.25  # a bound this loose would make the prefilter useless


def _index(matrix: np.ndarray, *, threshold: float = 0.2) -> MemoryVectorIndex:
    records = [
        VectorRecord(
            id=f"id-{i:05d}",
            content=f"c{i}",
            metadata={"product_id": f"p{i % 3}"} if i % 4 else {},
        )
        for i in range(matrix.shape[0])
    ]
    return MemoryVectorIndex.from_arrays(
        "entities", matrix.copy(), records, cosine_threshold=threshold
    )


async def _afull(
    index: MemoryVectorIndex,
    q: np.ndarray,
    top_k: int,
    scope: QueryScope | None,
    monkeypatch: pytest.MonkeyPatch,
) -> list[VectorHit]:
    """The search with the prefilter off: one full float32 product."""
    with monkeypatch.context() as mp:
        mp.setattr(pf_module, "_simsimd", None)
        assert not pf_module.available()
        return await index.query(q, top_k, scope=scope)


def _full(
    index: MemoryVectorIndex,
    q: np.ndarray,
    top_k: int,
    scope: QueryScope | None,
    monkeypatch: pytest.MonkeyPatch,
) -> list[VectorHit]:
    return asyncio.run(_afull(index, q, top_k, scope, monkeypatch))


def _pairs(hits: list[VectorHit]) -> list[tuple[str, float]]:
    return [(h.record.id, h.score) for h in hits]


def _same(got: list[VectorHit], want: list[VectorHit]) -> bool:
    """Same ids in the same order; scores equal up to float32 rounding (OpenBLAS scores a few
    rows at its thread boundaries with another kernel, whose last bit can differ)."""
    return [h.record.id for h in got] == [h.record.id for h in want] and all(
        abs(a.score - b.score) <= 1e-6 for a, b in zip(got, want, strict=True)
    )


@pytest.mark.parametrize("threshold", [0.2, 0.0, -1.0])
@pytest.mark.parametrize("name,matrix", list(_matrices()), ids=[n for n, _ in _matrices()])
def test_prefiltered_search_equals_the_full_product(
    name: str, matrix: np.ndarray, threshold: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _index(matrix, threshold=threshold)
    rng = np.random.default_rng(5)
    dim = matrix.shape[1]
    scopes = [None, QueryScope(product_id=["p1"]), QueryScope(product_id=["p0", "p2"])]
    for trial in range(12):
        if trial % 3 == 0:
            q = rng.standard_normal(dim)
        else:  # near a stored row: a realistic query with close competitors
            q = matrix[rng.integers(0, matrix.shape[0])] + 0.3 * rng.standard_normal(dim)
        top_k = [1, 5, 40, 300][trial % 4]
        scope = scopes[trial % 3]
        got = asyncio.run(index.query(q, top_k, scope=scope))
        want = _full(index, q, top_k, scope, monkeypatch)
        assert _same(got, want), (name, trial, _pairs(got), _pairs(want))


def test_exact_ties_rank_by_id_as_the_full_product_does(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    matrix = rng.standard_normal((3000, 32)).astype(np.float32)
    matrix[1500:1510] = matrix[17]  # ten copies of one row: exact ties
    index = _index(matrix)
    q = matrix[17] + 0.05 * rng.standard_normal(32)
    got = asyncio.run(index.query(q, 5, scope=None))
    want = _full(index, q, 5, None, monkeypatch)
    assert _same(got, want)
    assert len({h.score for h in got}) == 1  # the five best are copies, ranked by id
    assert [h.record.id for h in got] == sorted(h.record.id for h in got)


def test_the_prefilter_decides_most_queries() -> None:
    """The prefilter is not a stub that always falls back: on clustered data most queries are
    answered from a few candidate rows."""
    matrix = _clustered(6000, 64, 9)
    index = _index(matrix)
    rng = np.random.default_rng(2)
    decided = 0
    for _ in range(40):
        raw = matrix[rng.integers(0, 6000)] + 0.3 * rng.standard_normal(64)
        q = (raw / np.linalg.norm(raw)).astype(np.float32)
        rows = index._pf.candidates(q, 6000, 0.2, 40)
        assert rows.size < 6000 // 8
        if index._query_prefiltered(q, 6000, 40, None) is not None:
            decided += 1
    assert decided >= 30


async def test_writes_keep_the_prefilter_in_step(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(13)
    dim = 24
    index = MemoryVectorIndex("relationships", dim)
    ids: list[str] = []
    for step in range(6):
        batch = [
            VectorRecord(id=f"r{step}-{i}", content="x", vector=rng.standard_normal(dim))
            for i in range(900)
        ]
        # overwrite some earlier ids with new vectors
        batch += [
            VectorRecord(id=rid, content="y", vector=rng.standard_normal(dim))
            for rid in ids[: 50 * step]
        ]
        await index.upsert(batch)
        ids += [r.id for r in batch[:900]]
        gone = [ids.pop(int(rng.integers(0, len(ids)))) for _ in range(120)]
        await index.delete(gone)
    n = await index.count()
    assert n >= MIN_ROWS
    matrix, _ = index.export_arrays()
    fresh = Int8Prefilter(n, dim)
    fresh.set_rows(0, matrix)
    assert np.array_equal(index._pf.codes[:n], fresh.codes)
    assert np.array_equal(index._pf.scale[:n], fresh.scale)
    assert np.array_equal(index._pf.resid_norm[:n], fresh.resid_norm)
    for _ in range(5):
        q = rng.standard_normal(dim)
        got = await index.query(q, 20)
        want = await _afull(index, q, 20, None, monkeypatch)
        assert _same(got, want)


def test_without_simsimd_the_search_is_the_full_product(monkeypatch: pytest.MonkeyPatch) -> None:
    matrix = _clustered(2500, 16, 1)
    index = _index(matrix)
    q = matrix[3]
    monkeypatch.setattr(pf_module, "_simsimd", None)
    hits = asyncio.run(index.query(q, 3))
    assert hits[0].record.id == "id-00003"
    with pytest.raises(RuntimeError, match="simsimd"):
        index._pf.estimates(np.ones(16, dtype=np.float32) / 4, 2500)


def test_crowded_scores_switch_the_prefilter_off_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows all close to one direction: every row is within 2B of the k-th estimate, the
    prefilter cannot narrow anything, so after MISSES such searches the index skips it."""
    rng = np.random.default_rng(21)
    base = rng.standard_normal(64)
    matrix = (base + 0.02 * rng.standard_normal((3000, 64))).astype(np.float32)
    index = _index(matrix)
    calls: list[int] = []
    original = index._pf.candidates

    def counting(*args: object, **kwargs: object) -> np.ndarray:
        rows = original(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(rows.size)
        return rows

    monkeypatch.setattr(index._pf, "candidates", counting)
    for i in range(pf_module.MISSES + pf_module.SKIP + 1):
        q = base + 0.05 * rng.standard_normal(64)
        got = asyncio.run(index.query(q, 10))
        with monkeypatch.context() as mp:
            mp.setattr(pf_module, "_simsimd", None)
            want = asyncio.run(index.query(q, 10))
        assert _same(got, want), i
    # MISSES narrowing attempts, then SKIP searches without one, then a new attempt
    assert len(calls) == pf_module.MISSES + 1
    assert all(size > 3000 // 4 for size in calls)


@pytest.mark.parametrize("dim", [3, 7, 64, 384, 1536, 3000])
def test_row_products_are_the_gathered_product(dim: int) -> None:
    """Small single-thread calls give what one product over the gathered rows gives (the
    four-row kernel throughout: bit for bit from 16 dimensions on; OpenBLAS's kernels for
    tinier vectors round differently), for row counts around every block size, and over the
    whole matrix when the rows are a third of it or more."""
    rng = np.random.default_rng(dim)
    matrix = rng.standard_normal((500, dim)).astype(np.float32)
    q = rng.standard_normal(dim).astype(np.float32)
    for m in (0, 1, 3, 4, 5, 19, 20, 21, 23, 24, 25, 97, 400):
        rows = rng.choice(500, m, replace=False)
        got = pf_module.row_products(matrix, rows, q)
        assert got.shape == (m,) and got.dtype == np.float32
        pad = (-m) % 4
        idx = np.concatenate([rows, np.repeat(rows[:1], pad)]) if pad else rows
        want = (matrix[idx] @ q)[:m]
        assert np.allclose(got, want, rtol=0, atol=1e-5)
        if m % 4 == 0 and dim >= 16:
            assert np.array_equal(got, want)
    m64 = matrix.astype(np.float64)
    for rows in (np.arange(0, 500, 3), np.arange(0, 500, 7), np.arange(499, -1, -1)):
        got64 = pf_module.row_products(m64, rows, q.astype(np.float64))
        assert got64.dtype == np.float64
        assert np.allclose(got64, m64[rows] @ q.astype(np.float64), rtol=0, atol=1e-9)
