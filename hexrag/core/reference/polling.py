"""LightRAG 1.5.7's ``pick_by_weighted_polling``, stated plainly (the readable reference of
:func:`hexrag.core.query.pick.weighted_polling`, which hands out the unused quota in one pass;
``tests/unit/test_weighted_polling.py`` proves the two equal)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

__all__ = ["first_round", "weighted_polling"]


def first_round(
    sorted_chunk_lists: Sequence[Sequence[T]], max_related: int, min_related: int = 1
) -> tuple[list[T], list[int], int]:
    """The quota pass of ``pick_by_weighted_polling``: the round-one picks in item order, how
    many chunks each item gave, and the unused quota left to hand out.

    Item ``i`` of ``n`` expects ``round(max - i/(n-1) * (max - min))`` chunks (Python's
    round-half-to-even) and gives as many as it has. No items or ``max_related <= 0``: nothing;
    one item: its first ``max_related`` chunks and no unused quota. The engine's fast form
    (:func:`hexrag.core.query.pick.weighted_polling`) shares this pass.
    """
    n = len(sorted_chunk_lists)
    if n == 0 or max_related <= 0:
        return [], [], 0
    if n == 1:
        first = list(sorted_chunk_lists[0][:max_related])
        return first, [len(first)], 0
    selected: list[T] = []
    used: list[int] = []
    remaining = 0
    for i, chunks in enumerate(sorted_chunk_lists):
        expected = round(max_related - (i / (n - 1)) * (max_related - min_related))
        actual = min(expected, len(chunks))
        selected.extend(chunks[:actual])
        used.append(actual)
        if expected > actual:
            remaining += expected - actual
    return selected, used, remaining


def weighted_polling(
    sorted_chunk_lists: Sequence[Sequence[T]], max_related: int, min_related: int = 1
) -> list[T]:
    """Quotas falling linearly from ``max_related`` to ``min_related`` (:func:`first_round`);
    then the unused quota is handed out one chunk at a time, always to the first item that
    still has chunks.

    Item ``i`` of ``n`` expects ``round(max - i/(n-1) * (max - min))`` chunks (Python's
    round-half-to-even). Output: round-one picks in item order, then the extras.
    """
    selected, used, remaining = first_round(sorted_chunk_lists, max_related, min_related)
    for _ in range(remaining):
        for i, chunks in enumerate(sorted_chunk_lists):
            if used[i] < len(chunks):
                selected.append(chunks[used[i]])
                used[i] += 1
                break
        else:
            break
    return selected
