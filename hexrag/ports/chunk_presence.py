"""Optional ChunkStore capability: some chunks whole, others only checked for presence.

A KG query names hundreds of candidate chunks (every kept entity's and relation's chunks)
and shows a few: only the first ``chunk_top_k`` of the merged list can reach the context.
A store with this capability answers "which of these exist" for all of them and returns the
full records of the few, in one round trip, so their texts are not read and sent for
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hexrag.domain.records import Chunk

__all__ = ["ChunksWithPresence"]


@runtime_checkable
class ChunksWithPresence(Protocol):
    """Optional: :meth:`get_chunks` of a few ids and the presence of many, in one call."""

    async def get_chunks_and_presence(
        self, ids: Sequence[str], probe: Sequence[str]
    ) -> tuple[list[Chunk | None], set[str]]:
        """``get_chunks(ids)`` (request order, ``None`` for a missing id) and the subset of
        ``probe`` that is stored (complete for ``probe``, whether or not an id is also in
        ``ids``)."""
        ...
