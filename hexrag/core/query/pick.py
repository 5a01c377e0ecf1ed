"""Chunk selection for entity and relation chunks (stage 3): WEIGHT and VECTOR methods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np

from hexrag.core.reference.polling import first_round
from hexrag.ports import VectorIndex

T = TypeVar("T")

__all__ = [
    "cosine_from_dots",
    "cosine_scores",
    "row_norms",
    "score_ids",
    "vector_similarity_pick",
    "weighted_polling",
]


def weighted_polling(
    sorted_chunk_lists: Sequence[Sequence[T]], max_related: int, min_related: int = 1
) -> list[T]:
    """LightRAG's ``pick_by_weighted_polling`` (plain form: :mod:`hexrag.core.reference.polling`):
    quotas falling linearly from max to min.

    Item ``i`` of ``n`` expects ``round(max - i/(n-1) * (max - min))`` chunks (Python's
    round-half-to-even; the quota pass is the plain form's
    :func:`~hexrag.core.reference.polling.first_round`). Unused quota is then handed out one
    chunk at a time, always to the first item that still has chunks. Output: round-one picks
    in item order, then the extras.
    """
    selected, used, remaining = first_round(sorted_chunk_lists, max_related, min_related)
    # LightRAG hands the unused quota out one chunk at a time, always to the first item that
    # still has chunks (hexrag.core.reference.polling): the first item takes all it can, then
    # the next... one pass instead of a scan from the first item per chunk
    for i, chunks in enumerate(sorted_chunk_lists):
        if remaining <= 0:
            break
        take = min(remaining, len(chunks) - used[i])
        if take > 0:
            selected.extend(chunks[used[i] : used[i] + take])
            remaining -= take
    return selected


def row_norms(matrix: np.ndarray) -> np.ndarray:
    """The float64 Euclidean norm of each row (what :func:`cosine_scores` divides by)."""
    m = np.asarray(matrix, dtype=np.float64)
    return np.sqrt(np.einsum("ij,ij->i", m, m))


def cosine_scores(
    matrix: np.ndarray, vector: np.ndarray | Sequence[float], norms: np.ndarray | None = None
) -> np.ndarray:
    """LightRAG's ``cosine_similarity`` of each row of ``matrix`` with ``vector``, in float64.

    ``dot / (|row| * |vector|)``; a zero or non-finite norm, or a non-finite result, scores
    0.0. LightRAG scores with Python floats (float64), so the rows are converted first.
    ``norms``: the rows' :func:`row_norms`, when the caller keeps them (an index computes them
    once at load instead of per query).
    """
    m = np.asarray(matrix, dtype=np.float64)
    q = np.asarray(vector, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        return np.zeros(0 if m.ndim != 2 else m.shape[0], dtype=np.float64)
    if norms is None:
        norms = row_norms(m)
    return cosine_from_dots(m @ q, norms, q)


def cosine_from_dots(dots: np.ndarray, norms: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """:func:`cosine_scores` from the rows' dot products with ``vector`` and their norms."""
    q = np.asarray(vector, dtype=np.float64)
    with np.errstate(all="ignore"):
        denom = norms * np.sqrt(np.dot(q, q))
        scores = dots / denom
    return np.where(np.isfinite(scores) & (denom != 0), scores, 0.0)


async def score_ids(index: VectorIndex, ids: Sequence[str], vector: np.ndarray) -> np.ndarray:
    """Cosines of ``ids``' stored vectors with ``vector`` (NaN for a missing id), one call.

    Uses the index's :class:`~hexrag.ports.ScoresIds` capability when it has one, else one
    :meth:`~hexrag.ports.VectorIndex.get_vectors` call scored here: the same numbers.
    """
    scorer = getattr(index, "score_ids", None)
    if scorer is not None:
        result: np.ndarray = await scorer(ids, vector)
        return result
    out = np.full(len(ids), np.nan, dtype=np.float64)
    if not ids:
        return out
    vectors = await index.get_vectors(ids)
    pos = [i for i, cid in enumerate(ids) if cid in vectors]
    if pos:
        out[pos] = cosine_scores(np.stack([vectors[ids[i]] for i in pos]), vector)
    return out


def vector_similarity_pick(
    sorted_chunk_lists: Sequence[Sequence[str]],
    scores: Mapping[str, float],
    num_of_chunks: int,
) -> list[str]:
    """LightRAG's ``pick_by_vector_similarity``: candidates ranked by cosine with the query.

    ``scores`` maps a chunk id to its cosine with the query (:func:`score_ids`); an id that is
    absent or ``NaN`` has no vector. Candidates are the union of all lists, in
    first-appearance order (LightRAG iterates a Python ``set`` here, so its tie order is not
    reproducible; ours is). Returns ``[]`` when there is nothing to rank or when **any**
    candidate lacks a vector (the caller then falls back to WEIGHT, as LightRAG does).
    """
    if not sorted_chunk_lists or num_of_chunks <= 0:
        return []
    candidates = list(dict.fromkeys(c for chunks in sorted_chunk_lists for c in chunks))
    if not candidates or not scores:
        return []
    nan = float("nan")
    values = np.fromiter(
        (scores.get(c, nan) for c in candidates), dtype=np.float64, count=len(candidates)
    )
    if np.isnan(values).any():
        return []
    order = np.argsort(-values, kind="stable")
    return [candidates[i] for i in order[:num_of_chunks].tolist()]
