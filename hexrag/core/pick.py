"""Chunk selection for entity and relation chunks (stage 3): WEIGHT and VECTOR methods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["vector_similarity_pick", "weighted_polling"]


def weighted_polling(
    sorted_chunk_lists: Sequence[Sequence[str]], max_related: int, min_related: int = 1
) -> list[str]:
    """LightRAG's ``pick_by_weighted_polling``: quotas falling linearly from max to min.

    Item ``i`` of ``n`` expects ``round(max - i/(n-1) * (max - min))`` chunks (Python's
    round-half-to-even). Unused quota is then handed out one chunk at a time, always to the
    first item that still has chunks. Output: round-one picks in item order, then the extras.
    """
    n = len(sorted_chunk_lists)
    if n == 0 or max_related <= 0:
        return []
    if n == 1:
        return list(sorted_chunk_lists[0][:max_related])
    selected: list[str] = []
    used: list[int] = []
    remaining = 0
    for i, chunks in enumerate(sorted_chunk_lists):
        expected = round(max_related - (i / (n - 1)) * (max_related - min_related))
        actual = min(expected, len(chunks))
        selected.extend(chunks[:actual])
        used.append(actual)
        if expected > actual:
            remaining += expected - actual
    for _ in range(remaining):
        for i, chunks in enumerate(sorted_chunk_lists):
            if used[i] < len(chunks):
                selected.append(chunks[used[i]])
                used[i] += 1
                break
        else:
            break
    return selected


def vector_similarity_pick(
    sorted_chunk_lists: Sequence[Sequence[str]],
    query_vector: np.ndarray | None,
    vectors: Mapping[str, np.ndarray],
    num_of_chunks: int,
) -> list[str]:
    """LightRAG's ``pick_by_vector_similarity``: candidates ranked by cosine with the query.

    Candidates are the union of all lists, in first-appearance order (LightRAG iterates a
    Python ``set`` here, so its tie order is not reproducible; ours is). Returns ``[]`` when
    there is nothing to rank or when **any** candidate lacks a vector (the caller then falls
    back to WEIGHT, as LightRAG does). Zero or non-finite norms score 0.
    """
    if not sorted_chunk_lists or num_of_chunks <= 0 or query_vector is None:
        return []
    candidates = list(dict.fromkeys(c for chunks in sorted_chunk_lists for c in chunks))
    if not candidates or not vectors:
        return []
    if any(c not in vectors for c in candidates):
        return []
    # LightRAG scores with Python floats (float64): convert once, after stacking
    matrix = np.stack([vectors[c] for c in candidates]).astype(np.float64)
    q = np.asarray(query_vector, dtype=np.float64)
    with np.errstate(all="ignore"):
        denom = np.linalg.norm(matrix, axis=1) * np.linalg.norm(q)
        scores = (matrix @ q) / denom
    scores = np.where(np.isfinite(scores) & (denom != 0), scores, 0.0)
    order = np.argsort(-scores, kind="stable")
    return [candidates[i] for i in order[:num_of_chunks]]
