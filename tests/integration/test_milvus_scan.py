"""MilvusVectorIndex.scan_records on Milvus Lite: ordered keyset pages over many segments.

A plain Milvus ``query`` with a ``limit`` returns arbitrary rows, not the smallest ids, so a
naive ``id > cursor`` pagination skips records; the adapter pages in Milvus's iterator mode.
Ids with quotes, backslashes and non-ASCII characters go through the escaped cursor.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from hexrag.core.model import VectorRecord
from hexrag.ports.scan import scan_all
from tests.services.milvus import milvus_client, milvus_index_factory  # noqa: F401

pytestmark = pytest.mark.backend("milvus")


async def test_scan_lists_every_record_once_in_id_order(milvus_index_factory: Any) -> None:  # noqa: F811
    index = milvus_index_factory(dim=4)
    rng = random.Random(3)
    ids = list(dict.fromkeys(f"id-{rng.randrange(10**9):09d}" for _ in range(2500)))
    ids += ['q"uote', "back\\slash", "é-中文-🚀", "new\nline", "x" * 200]
    rng.shuffle(ids)
    vectors = np.random.default_rng(1).random((len(ids), 4)).astype(np.float32) + 0.01
    for start in range(0, len(ids), 400):  # several inserts: several segments
        await index.upsert(
            [VectorRecord(id=i, vector=vectors[k], content=i) for k, i in
             enumerate(ids[start : start + 400], start)]
        )
    gone = set(ids[:7])
    await index.delete(sorted(gone))
    listed: list[str] = []
    async for page in scan_all(index.scan_records, limit=333):
        assert len(page.items) <= 333
        listed.extend(r.id for r in page.items)
        for r in page.items:
            assert r.content == r.id and r.vector is not None
    assert listed == sorted(set(ids) - gone)
