"""LightRAG's text-chunk record (``kv_store_text_chunks``), written by every adapter that
stores chunks in LightRAG's own layout (the working directory's JSON, Redis)."""

from __future__ import annotations

from typing import Any

from hexrag.domain.records import Chunk

__all__ = ["CHUNK_ORDER", "chunk_record"]

#: The record's field order as LightRAG writes it (metadata follows).
CHUNK_ORDER = ("tokens", "content", "chunk_order_index", "full_doc_id", "file_path")


def chunk_record(chunk: Chunk) -> dict[str, Any]:
    """``chunk`` as LightRAG's text-chunk record: its set fields in LightRAG's order, then its
    metadata."""
    out: dict[str, Any] = {}
    for key in CHUNK_ORDER:
        value = getattr(chunk, key)
        if value is not None:
            out[key] = value
    out.update(chunk.metadata)
    return out
