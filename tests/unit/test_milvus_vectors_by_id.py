"""``vectors_by_id`` (one matrix for a query's vectors) equals the per-row conversion it
replaced: same ids, order, dtype and values; last duplicate wins; missing ids left out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hexrag.adapters.milvus._convert import vectors_by_id


def _per_row(rows: list[dict[str, Any]], ids: list[str]) -> dict[str, np.ndarray]:
    found = {row["id"]: dict(row) for row in rows}
    return {rid: np.asarray(found[rid]["vector"], dtype=np.float32)
            for rid in dict.fromkeys(ids) if rid in found}


@pytest.mark.parametrize("seed", range(5))
def test_equals_the_per_row_conversion(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = [{"id": f"c{int(i)}", "vector": [float(x) for x in rng.standard_normal(7)]}
            for i in rng.integers(0, 30, size=40)]  # repeated ids: the last row wins
    ids = [f"c{int(i)}" for i in rng.integers(0, 40, size=25)]  # some missing, some repeated
    got, want = vectors_by_id(rows, ids), _per_row(rows, ids)
    assert list(got) == list(want)
    for rid in want:
        assert got[rid].dtype == np.float32 and got[rid].shape == (7,)
        assert np.array_equal(got[rid], want[rid])


def test_float64_values_round_like_before() -> None:
    rows = [{"id": "a", "vector": [0.1, 1 / 3, 2.0**-140]}]
    assert np.array_equal(vectors_by_id(rows, ["a"])["a"], _per_row(rows, ["a"])["a"])


def test_ragged_rows_and_empty_input() -> None:
    rows = [{"id": "a", "vector": [1.0, 2.0]}, {"id": "b", "vector": [3.0]}]
    got = vectors_by_id(rows, ["b", "a", "x"])
    assert list(got) == ["b", "a"]
    assert got["a"].tolist() == [1.0, 2.0] and got["b"].tolist() == [3.0]
    assert vectors_by_id([], ["a"]) == {}
