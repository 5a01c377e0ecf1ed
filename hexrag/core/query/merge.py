"""Round-robin interleaving with first-occurrence de-duplication (LightRAG's merges)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")

__all__ = ["round_robin"]


def round_robin(
    sources: Sequence[Sequence[T]],
    key: Callable[[T], Hashable | None] | None,
    limit: int | None = None,
) -> list[T]:
    """Interleave ``sources`` (``s0[0], s1[0], ..., s0[1], s1[1], ...``), keeping first occurrences.

    Items whose key is falsy (``None``, ``""``) are dropped, as LightRAG drops entities without
    a name and chunks without an id. The output never holds two items with one key, and the
    relative order of kept items is their order of first appearance in the interleaving.
    ``key=None`` keys an item by itself. With ``limit``, the first ``limit`` items of that
    output (the interleaving stops there).
    """
    out: list[T] = []
    if limit is not None and limit <= 0:
        return out
    seen: set[Hashable] = set()
    longest = max((len(s) for s in sources), default=0)
    for i in range(longest):
        for source in sources:
            if i < len(source):
                item = source[i]
                k = item if key is None else key(item)
                if k and k not in seen:
                    seen.add(k)  # type: ignore[arg-type]
                    out.append(item)
                    if len(out) == limit:
                        return out
    return out
