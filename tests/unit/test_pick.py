"""Chunk picking (spec 7.3, 7.4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hexrag.core.query.pick import cosine_scores, vector_similarity_pick, weighted_polling


def _lists(sizes: list[int]) -> list[list[str]]:
    return [[f"e{i}c{j}" for j in range(n)] for i, n in enumerate(sizes)]


def test_expected_quota_uses_round_half_even() -> None:
    # n=9, max=5: expected [5,4,4,4,3,2,2,2,1] (spec 7.3, verified against LightRAG)
    picked = weighted_polling(_lists([10] * 9), 5, 1)
    per_item = [sum(1 for c in picked if c.startswith(f"e{i}c")) for i in range(9)]
    assert per_item == [5, 4, 4, 4, 3, 2, 2, 2, 1]


def test_single_item_takes_max() -> None:
    assert weighted_polling([["a", "b", "c"]], 2) == ["a", "b"]


def test_leftover_quota_goes_to_first_items_with_chunks() -> None:
    # item0 has 1 chunk (expects 3), item1 expects 1 and has 5: round two gives item1 the 2 extras
    picked = weighted_polling([["a"], ["b1", "b2", "b3", "b4", "b5"]], 3, 1)
    assert picked == ["a", "b1", "b2", "b3"]


def test_empty_and_zero() -> None:
    assert weighted_polling([], 5) == []
    assert weighted_polling([["a"]], 0) == []


@given(
    st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=12),
    st.integers(min_value=1, max_value=8),
)
def test_polling_never_duplicates_and_respects_lists(sizes: list[int], max_related: int) -> None:
    lists = _lists(sizes)
    picked = weighted_polling(lists, max_related, 1)
    assert len(picked) == len(set(picked))
    allowed = {c for ids in lists for c in ids}
    assert set(picked) <= allowed


def _scores(vectors: dict[str, np.ndarray], q: np.ndarray) -> dict[str, float]:
    ids = list(vectors)
    scores = cosine_scores(np.stack([vectors[i] for i in ids]), q).tolist()
    return dict(zip(ids, scores, strict=True))


def test_vector_pick_orders_by_cosine_and_caps() -> None:
    q = np.array([1.0, 0.0])
    vectors = {"a": np.array([0.0, 1.0]), "b": np.array([1.0, 0.1]), "c": np.array([1.0, 1.0])}
    assert vector_similarity_pick([["a", "b"], ["c"]], _scores(vectors, q), 2) == ["b", "c"]


def test_vector_pick_gives_up_when_any_vector_is_missing() -> None:
    q = np.array([1.0, 0.0])
    scores = _scores({"a": np.array([1.0, 0.0])}, q)
    assert vector_similarity_pick([["a", "zz"]], scores, 5) == []
    assert vector_similarity_pick([["a", "zz"]], {**scores, "zz": float("nan")}, 5) == []


def test_vector_pick_zero_norm_scores_zero() -> None:
    q = np.array([1.0, 0.0])
    vectors = {"z": np.zeros(2), "n": np.array([-1.0, 0.0])}
    assert vector_similarity_pick([["n", "z"]], _scores(vectors, q), 2) == ["z", "n"]


def test_cosine_scores_is_lightrags_formula() -> None:
    rng = np.random.default_rng(3)
    m = rng.normal(size=(7, 5)).astype(np.float16)
    q = rng.normal(size=5).astype(np.float32)
    got = cosine_scores(m, q)
    for row, score in zip(m, got, strict=True):
        a, b = row.astype(np.float64), q.astype(np.float64)
        expected = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
        assert score == pytest.approx(expected, rel=1e-12)
    assert cosine_scores(np.array([[np.inf, 0.0]]), q[:2]).tolist() == [0.0]
