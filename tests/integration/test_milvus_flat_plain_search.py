"""A ``FLAT`` MilvusVectorIndex searches without a range radius: the same hits as the range
search it replaced, and as the brute-force oracle, on real Milvus Lite."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hexrag.core.model import QueryScope, VectorRecord
from hexrag.core.reference.oracle import VectorOracle
from tests.services import milvus as service

milvus_client = service.milvus_client
milvus_index_factory = service.milvus_index_factory

pytestmark = pytest.mark.backend("milvus")

DIM = 16


class _WithRadius:
    """The index's search as it was: the range radius ``threshold - eps`` sent to Milvus."""

    def __init__(self, index: Any) -> None:
        self._index = index
        self._plain = index._search_params_for

    def __call__(self, limit: int) -> dict[str, Any]:
        from hexrag.adapters.milvus.index import _SCORE_EPS

        params = self._plain(limit)
        params["params"]["radius"] = self._index.cosine_threshold - _SCORE_EPS
        return params


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_plain_search_equals_the_range_search_and_the_oracle(
    milvus_index_factory: Any, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    threshold = 0.15
    index = milvus_index_factory(namespace="chunks", dim=DIM, cosine_threshold=threshold)
    centre = rng.standard_normal(DIM).astype(np.float32)
    records = []
    for i in range(300):
        v = centre * rng.uniform(0, 1.5) + rng.standard_normal(DIM).astype(np.float32)
        if i % 25 == 0:
            v = records[i - 1].vector if i else v  # duplicate vectors: ties broken by id
        records.append(VectorRecord(id=f"c{i:04d}", vector=np.asarray(v, np.float32),
                                    content=f"text {i}", full_doc_id=f"doc-{i % 7}"))
    await index.upsert(records)
    oracle = VectorOracle(DIM, threshold)
    oracle.upsert(records)
    scopes = [None, QueryScope(doc_ids=["doc-1", "doc-3"])]
    checked = 0
    for q_i in range(12):
        q = (centre * rng.uniform(0, 1) + rng.standard_normal(DIM)).astype(np.float32)
        for top_k in (1, 5, 40, 200):
            for scope in scopes:
                plain = await index.query(q, top_k, scope=scope)
                index._search_params_for = _WithRadius(index)
                try:
                    ranged = await index.query(q, top_k, scope=scope)
                finally:
                    del index._search_params_for
                want = oracle.query(q, top_k, scope=scope)
                ids = [h.record.id for h in plain]
                assert ids == [h.record.id for h in ranged], (q_i, top_k, scope)
                assert ids == [h.id for h in want], (q_i, top_k, scope)
                assert [h.score for h in plain] == [h.score for h in ranged]
                checked += len(ids)
    assert checked > 500, "the queries must find something"
