"""``MemoryVectorIndex(tie_order="nanovectordb")`` ranks exactly as NanoVectorDB 0.0.4.3.

LightRAG's file vector storage is NanoVectorDB; an index loaded from a LightRAG working
directory must return the same ids in the same order for every unscoped query, ties included
(hashing or quantised embedders, duplicated texts), also after upserts and deletes. Vectors
here are small integers, so exact cosine ties (and zero rows) are everywhere; the int8
prefilter is exercised from 2048 rows on.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from hexrag.adapters.memory import MemoryVectorIndex
from hexrag.adapters.memory import prefilter as _prefilter
from hexrag.core.model import QueryScope, VectorRecord

nano_vectordb = pytest.importorskip(
    "nano_vectordb", reason="NanoVectorDB comes with the parity extra: pip install -e '.[parity]'"
)


@pytest.fixture(autouse=True)
def _quiet() -> None:
    logging.getLogger("nano-vectordb").setLevel(logging.ERROR)


def _nano(dim: int, tmp_path: object) -> object:
    return nano_vectordb.NanoVectorDB(dim, storage_file=f"{tmp_path}/absent.json")


def _ids(results: list[dict[str, object]]) -> list[object]:
    return [r["__id__"] for r in results]


def _tie_heavy(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.integers(-2, 3, size=(n, dim)).astype(np.float32)
    dup = rng.integers(0, n, size=max(1, n // 8))
    m[dup] = m[rng.integers(0, n)]  # duplicated texts: identical rows
    return m


@pytest.mark.parametrize("n", [1, 7, 300, 2500])
@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_unscoped_queries_rank_as_nanovectordb(n: int, seed: int, tmp_path: object) -> None:
    rng = np.random.default_rng(seed * 1000 + n)
    dim = int(rng.choice([4, 8, 24]))
    matrix = _tie_heavy(rng, n, dim)
    db = _nano(dim, tmp_path)
    with np.errstate(invalid="ignore"):
        db.upsert([{"__id__": f"r{i:05d}", "__vector__": matrix[i]} for i in range(n)])
    index = MemoryVectorIndex("entities", dim, cosine_threshold=0.2, tie_order="nanovectordb")
    await index.upsert([VectorRecord(id=f"r{i:05d}", vector=matrix[i]) for i in range(n)])

    async def same(rounds: int) -> int:
        ties = 0
        for _ in range(rounds):
            q = rng.integers(-2, 3, size=dim).astype(np.float32)
            k = int(rng.integers(1, 80))
            with np.errstate(invalid="ignore"):
                want = _ids(db.query(q, top_k=k, better_than_threshold=0.2))
            hits = await index.query(q, k)
            got = [h.record.id for h in hits]
            assert got == want, f"n={n} k={k}"
            scores = [h.score for h in hits]
            ties += len(scores) - len(set(scores))
        return ties

    ties = await same(12)
    # writes: updates in place, new rows appended, deletes closing the gaps (np.delete)
    gone = [f"r{i:05d}" for i in rng.integers(0, n, size=max(1, n // 5))]
    with np.errstate(invalid="ignore"):
        db.delete(gone)
    await index.delete(gone)
    fresh = _tie_heavy(rng, max(1, n // 4), dim)
    fresh_ids = [f"r{int(i):05d}" for i in rng.integers(0, 2 * n, size=fresh.shape[0])]
    with np.errstate(invalid="ignore"):
        db.upsert(
            [{"__id__": rid, "__vector__": v} for rid, v in zip(fresh_ids, fresh, strict=True)]
        )
    await index.upsert(
        [VectorRecord(id=rid, vector=v) for rid, v in zip(fresh_ids, fresh, strict=True)]
    )
    assert await index.count() == len(db)
    ties += await same(12)
    if n >= 300:
        assert ties > 0, "the data must actually produce ties"


async def test_the_id_order_differs_on_ties(tmp_path: object) -> None:
    """The default order (by id) is another order: the test above can fail."""
    dim = 4
    vectors = [np.array([1, 0, 0, 0], np.float32)] * 5
    ids = ["e", "b", "d", "a", "c"]
    db = _nano(dim, tmp_path)
    db.upsert([{"__id__": i, "__vector__": v} for i, v in zip(ids, vectors, strict=True)])
    want = _ids(db.query(vectors[0], top_k=3, better_than_threshold=0.2))
    by_id = MemoryVectorIndex("entities", dim)
    nano = MemoryVectorIndex("entities", dim, tie_order="nanovectordb")
    for index in (by_id, nano):
        await index.upsert(
            [VectorRecord(id=i, vector=v) for i, v in zip(ids, vectors, strict=True)]
        )
    assert [h.record.id for h in await by_id.query(vectors[0], 3)] == ["a", "b", "c"]
    assert [h.record.id for h in await nano.query(vectors[0], 3)] == want
    assert want != ["a", "b", "c"]


async def test_prefilter_answers_when_no_tie_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct scores: the prefilter path answers (same result), the full product is not run."""
    if not _prefilter.available():
        pytest.skip("simsimd is not installed")
    rng = np.random.default_rng(5)
    n, dim = 5000, 64
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    index = MemoryVectorIndex("entities", dim, tie_order="nanovectordb")
    await index.upsert([VectorRecord(id=f"r{i}", vector=matrix[i]) for i in range(n)])
    q = matrix[17] + 0.1 * rng.standard_normal(dim).astype(np.float32)
    full = await index.query(q, 10)  # first call: reference via the normal path
    calls = []
    real = MemoryVectorIndex._query_prefiltered

    def spy(self: MemoryVectorIndex, *args: object) -> object:
        out = real(self, *args)  # type: ignore[arg-type]
        calls.append(out is not None)
        return out

    monkeypatch.setattr(MemoryVectorIndex, "_query_prefiltered", spy)
    again = await index.query(q, 10)
    assert calls == [True]
    assert [h.record.id for h in again] == [h.record.id for h in full]


async def test_scoped_queries_keep_the_id_order() -> None:
    dim = 4
    index = MemoryVectorIndex("entities", dim, tie_order="nanovectordb")
    v = np.array([1, 0, 0, 0], np.float32)
    await index.upsert(
        [
            VectorRecord(id=i, vector=v, metadata={"product_id": "p1"})
            for i in ["e", "b", "d", "a", "c"]
        ]
    )
    hits = await index.query(v, 3, scope=QueryScope(product_id="p1"))
    assert [h.record.id for h in hits] == ["a", "b", "c"]


async def test_float64_query_scores_in_float64(tmp_path: object) -> None:
    """A float64 query (an embedder returning float64) is scored in float64, as there."""
    rng = np.random.default_rng(3)
    dim, n = 16, 400
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    db = _nano(dim, tmp_path)
    db.upsert([{"__id__": f"r{i}", "__vector__": matrix[i]} for i in range(n)])
    index = MemoryVectorIndex("entities", dim, tie_order="nanovectordb")
    await index.upsert([VectorRecord(id=f"r{i}", vector=matrix[i]) for i in range(n)])
    q = rng.standard_normal(dim)
    want = db.query(q, top_k=20, better_than_threshold=0.2)
    got = await index.query(q, 20)
    assert [h.record.id for h in got] == _ids(want)
    assert [h.score for h in got] == [float(r["__metrics__"]) for r in want]


def test_linear_top_equals_the_full_argsort() -> None:
    """The linear-time path of the NanoVectorDB ranking returns exactly
    ``np.argsort(scores)[-k:][::-1]``: distinct scores, heavy ties, NaN, any ``k``."""
    from hexrag.adapters.memory.vector_index import _nano_top

    rng = np.random.default_rng(0)
    for trial in range(2000):
        n = int(rng.integers(1, 400))
        k = int(rng.integers(1, 60))
        if trial % 2:
            scores = (rng.integers(-3, 4, size=n) / 7).astype(np.float32)  # many ties
        else:
            scores = rng.standard_normal(n).astype(np.float32)
        if trial % 5 == 0 and n > 3:
            scores[rng.integers(0, n)] = np.nan
        want = np.argsort(scores)[-k:][::-1]
        assert np.array_equal(_nano_top(scores, k), want), (trial, n, k)
