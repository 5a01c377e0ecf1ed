"""LightRAG's Milvus range search, answered on Milvus Lite by a plain top-k search.

``MilvusVectorIndex._range_by_knn`` replaces LightRAG's ``radius`` search (several times
slower on Milvus Lite) by a plain search of ``limit + 1`` rows filtered by ``distance >
radius``, and falls back to the range search whenever two kept distances are equal (the two
calls may order ties differently). This test writes a LightRAG-layout collection where many
rows tie (scaled copies of a few vectors: equal cosines) and many do not, and checks that
every query answers exactly what the range search itself answers: ids, order and scores.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from hexrag.domain.records import VectorRecord
from tests.services.milvus import new_collection_name, shared_milvus

pytestmark = pytest.mark.backend("milvus")

DIM = 16


def _records(rng: np.random.Generator) -> list[VectorRecord]:
    base = rng.standard_normal((12, DIM)).astype(np.float32)
    out = []
    for _ in range(240):  # distinct vectors: no ties
        out.append(rng.standard_normal(DIM).astype(np.float32))
    for i in range(240):  # twenty scaled copies of each of twelve vectors: equal cosines
        out.append(base[i % 12] * float(1 + i % 5))
    return [
        VectorRecord(id=f"ent-{i:04d}", vector=v, entity_name=f"E{i}", content=f"E{i}",
                     source_id="chunk-1", file_path="f.txt")
        for i, v in enumerate(out)
    ]


def test_range_by_knn_answers_what_the_range_search_answers() -> None:
    from hexrag.adapters.milvus.lightrag_layout import LightRAGMilvusVectorIndex

    uri, _client = shared_milvus()
    ws = new_collection_name("w").replace("-", "_")
    index = LightRAGMilvusVectorIndex.open_uri(uri, namespace="entities", dim=DIM, workspace=ws)
    rng = np.random.default_rng(7)
    used: dict[str, int] = {"knn": 0, "fallback": 0}
    real = index._range_by_knn

    async def counting(q: Any, limit: int, params: Any) -> Any:
        rows = await real(q, limit, params)
        used["knn" if rows is not None else "fallback"] += 1
        return rows

    index._range_by_knn = counting  # type: ignore[method-assign]
    params = index._layout.backend_search_params(index._threshold, index._index_type)

    async def run() -> None:
        await index.upsert(_records(rng))
        for n in range(60):
            q = rng.standard_normal(DIM).astype(np.float32)
            for top_k in (5, 40):
                got = await index.query(q, top_k)
                want = await index._search(q, top_k, expr="", params=params, strong=False)
                assert [(h.record.id, h.score) for h in got] == [
                    (r["id"], float(r["distance"])) for r in want
                ], (n, top_k)
        await index.drop()

    try:
        asyncio.run(run())
    finally:
        asyncio.run(index.close())
    if uri.endswith(".db"):  # Milvus Lite: both paths were taken
        assert used["knn"] > 0 and used["fallback"] > 0, used
    else:  # a server: the range search itself, always
        assert used == {"knn": 0, "fallback": 0}, used
