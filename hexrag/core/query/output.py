"""The ``/query/data`` structure (LightRAG ``convert_to_user_format`` and its failure shapes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hexrag.core.query.run import ChunkItem, EntityItem, RelationItem
from hexrag.core.query.source_ids import join_source_ids, parse_source_ids

__all__ = ["empty_user_format", "no_result", "raw_source_id", "user_format"]


def raw_source_id(value: Any) -> str:
    """``source_id`` as LightRAG reports it: the stored ``<SEP>`` string ("" when absent)."""
    if value is None:
        return ""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            return join_source_ids(parse_source_ids(stripped))
        return value
    return join_source_ids(parse_source_ids(value))


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _entity(item: EntityItem) -> dict[str, Any]:
    e = item.entity
    return {
        "entity_name": e.name,
        "entity_type": _or(e.entity_type, "UNKNOWN"),
        "description": _or(e.description, ""),
        "source_id": raw_source_id(e.source_id),
        "file_path": _or(e.file_path, "unknown_source"),
        "created_at": item.created_at,
    }


def _relation(item: RelationItem) -> dict[str, Any]:
    r = item.relation
    return {
        "src_id": item.entity1,
        "tgt_id": item.entity2,
        "description": _or(r.description, ""),
        "keywords": _or(r.keywords, ""),
        "weight": item.weight,
        "source_id": raw_source_id(r.source_id),
        "file_path": _or(r.file_path, "unknown_source"),
        "created_at": item.created_at,
    }


def _chunk(c: ChunkItem) -> dict[str, Any]:
    return {
        "reference_id": c.reference_id,
        "content": c.content,
        "file_path": c.file_path,
        "chunk_id": c.chunk_id,
    }


def user_format(
    entities: Sequence[EntityItem],
    relations: Sequence[RelationItem],
    chunks: Sequence[ChunkItem],
    references: Sequence[dict[str, str]],
    mode: str,
) -> dict[str, Any]:
    """The success shape, keys in LightRAG's order."""
    return {
        "status": "success",
        "message": "Query processed successfully",
        "data": {
            "entities": [_entity(e) for e in entities],
            "relationships": [_relation(r) for r in relations],
            "chunks": [_chunk(c) for c in chunks],
            "references": [dict(r) for r in references],
        },
        "metadata": {"query_mode": mode, "keywords": {"high_level": [], "low_level": []}},
    }


def empty_user_format(mode: str) -> dict[str, Any]:
    """The success shape with four empty lists (bypass, and the base of the empty-dataset shape)."""
    return user_format([], [], [], [], mode)


def no_result(mode: str, processing_info: dict[str, Any]) -> dict[str, Any]:
    """LightRAG's no-context failure, plus hexrag's ``processing_info`` so a zero is explained."""
    return {
        "status": "failure",
        "message": "No relevant document chunks found."
        if mode == "naive"
        else "Query returned no results",
        "data": {},
        "metadata": {
            "failure_reason": "no_results",
            "mode": mode,
            "processing_info": processing_info,
        },
    }
