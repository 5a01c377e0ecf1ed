"""Rows of LightRAG's PostgreSQL tables decoded into hexrag's model, in one pass per row.

A query reads a few hundred ``lightrag_doc_chunks`` rows (every chunk its picked entities and
relations name); this decoder builds each :class:`~hexrag.core.model.Chunk` directly from the
row, equal (fields, metadata keys, their order and values) to what the two-step
``PGKVStorage.get_by_ids``-record -> ``chunk_from_kv`` conversion gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hexrag.adapters._fastjson import loads
from hexrag.domain.records import Chunk, new_chunk

__all__ = ["CHUNK_COLUMNS", "chunk_from_row"]

# empty JSONB values come back as NULL (read as the empty value without parsing)
CHUNK_COLUMNS = """id, tokens, COALESCE(content, '') AS content, chunk_order_index, full_doc_id,
    file_path, NULLIF(llm_cache_list, '[]'::jsonb)::text AS llm_cache_list,
    NULLIF(heading, '{}'::jsonb)::text AS heading,
    NULLIF(sidecar, '{}'::jsonb)::text AS sidecar,
    EXTRACT(EPOCH FROM create_time)::BIGINT AS create_time,
    EXTRACT(EPOCH FROM update_time)::BIGINT AS update_time"""


def _json(value: Any, kind: type) -> Any:
    """A JSONB column read as text: parsed, or the empty ``kind`` if NULL, invalid or not a
    ``kind`` (as ``PGKVStorage`` reads it)."""
    if isinstance(value, str):
        try:
            value = loads(value)
        except ValueError:
            return kind()
    return value if isinstance(value, kind) else kind()


def chunk_from_row(row: Mapping[str, Any]) -> Chunk:
    """A row of :data:`CHUNK_COLUMNS` -> :class:`Chunk`: ``tokens``/``chunk_order_index``
    (ints), ``full_doc_id``/``file_path`` (strings) as fields, anything else of them (NULL) in
    ``metadata`` first, then ``llm_cache_list``, a non-empty ``heading`` and ``sidecar``,
    ``create_time`` and ``update_time`` (``create_time`` when NULL or 0)."""
    tokens, order = row["tokens"], row["chunk_order_index"]
    doc, path = row["full_doc_id"], row["file_path"]
    meta: dict[str, Any] = {}
    int_tokens = isinstance(tokens, int) and not isinstance(tokens, bool)
    int_order = isinstance(order, int) and not isinstance(order, bool)
    if not int_tokens:
        meta["tokens"] = tokens
    if not int_order:
        meta["chunk_order_index"] = order
    if not isinstance(doc, str):
        meta["full_doc_id"] = doc
    if not isinstance(path, str):
        meta["file_path"] = path
    cache = row["llm_cache_list"]
    meta["llm_cache_list"] = [] if cache is None else _json(cache, list)
    heading = row["heading"]
    if heading is not None and (parsed := _json(heading, dict)):
        meta["heading"] = parsed
    sidecar = row["sidecar"]
    if sidecar is not None and (parsed := _json(sidecar, dict)):
        meta["sidecar"] = parsed
    created = row["create_time"]
    meta["create_time"] = created
    meta["update_time"] = row["update_time"] or created
    content = row["content"]
    return new_chunk(
        row["id"],
        content if isinstance(content, str) else "",
        tokens if int_tokens else None,
        doc if isinstance(doc, str) else None,
        order if int_order else None,
        path if isinstance(path, str) else None,
        meta,
    )
