"""Optional ChunkStore capability: the metadata of chunks without their texts.

Stage 4 formats the heading path of each shown chunk from the chunk's metadata (LightRAG's
``_attach_content_headings``). In KG modes the shown chunks were read whole anyway; in naive
mode the texts came from the chunk index, and reading the chunks again only for their
headings sends every text a second time. A store with this capability returns the metadata
alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["ChunkMetadata"]


@runtime_checkable
class ChunkMetadata(Protocol):
    """Optional: the ``metadata`` of :meth:`~hexrag.ports.ChunkStore.get_chunks`' records."""

    async def get_chunk_metadata(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        """``[c.metadata if c else None for c in await get_chunks(ids)]`` (request order,
        ``None`` for a missing id), in one round trip, without reading the texts."""
        ...
