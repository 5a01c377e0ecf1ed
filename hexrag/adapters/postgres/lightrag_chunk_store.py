"""LightRAG's ``lightrag_doc_chunks`` table as a :class:`~hexrag.ports.ChunkStore` (see
:mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hexrag.adapters.postgres.chunk_rows import LightRAGChunkRows, PgChunks
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg
from hexrag.domain.records import Chunk

__all__ = ["LightRAGPgChunkStore", "chunk_from_kv"]


class LightRAGPgChunkStore(PgChunks, _LightRAGPg):
    """``lightrag_doc_chunks`` (LightRAG's text chunks) as a :class:`~hexrag.ports.ChunkStore`:
    :class:`~hexrag.adapters.postgres.chunk_rows.PgChunks` on the
    :class:`~hexrag.adapters.postgres.chunk_rows.LightRAGChunkRows` layout (one workspace,
    LightRAG's columns and its own upsert statement)."""

    _kind = "LightRAG chunk table"
    _layout_of = LightRAGChunkRows


def chunk_from_kv(chunk_id: str, value: Mapping[str, Any]) -> Chunk:
    """A LightRAG text-chunk record -> :class:`Chunk` (other keys become metadata)."""
    fields: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key, val in value.items():
        if key in ("content", "full_doc_id", "file_path") and isinstance(val, str):
            fields[key] = val
        elif key in ("tokens", "chunk_order_index") and isinstance(val, int):
            fields[key] = val
        else:
            metadata[key] = val
    content = fields.pop("content", "")
    return Chunk(id=chunk_id, content=content, metadata=metadata, **fields)

