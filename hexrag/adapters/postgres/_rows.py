"""The one place where PostgreSQL rows and hexrag domain types are converted.

Writes go to the server as one JSON document per batch (read there with
``jsonb_to_recordset``), so each ``*_to_row`` function returns a JSON-ready ``dict``.
Reads come back as asyncpg records; each ``row_to_*`` function accepts any mapping (so it
is unit-tested with plain dicts). JSON columns are always selected as ``::text`` and vectors
as ``::real[]``, so the conversion does not depend on codecs registered on the caller's pool.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hexrag.adapters._fastjson import loads
from hexrag.adapters._vector_record import record_from_row
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.scope import scope_values
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import (
    Chunk,
    Entity,
    Relation,
    VectorRecord,
    new_chunk,
    new_entity,
    new_relation,
)

__all__ = [
    "chunk_to_row",
    "decode_json",
    "encode_json",
    "entity_to_row",
    "relation_to_row",
    "row_to_chunk",
    "row_to_entity",
    "row_to_relation",
    "row_to_vector_record",
    "rows_document",
    "vector_array",
    "vector_record_to_row",
    "vector_text",
]


# --------------------------------------------------------------------------------------
# JSON and vectors
# --------------------------------------------------------------------------------------


def encode_json(value: Any, *, what: str) -> Any:
    """``value`` checked to be JSON-serialisable (tuples become lists), ready to embed."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"postgres: {what} is not JSON-serialisable ({exc}); store only JSON values "
            "(str, int, finite float, bool, None, lists and string-keyed dicts)"
        ) from exc


def decode_json(value: Any) -> Any:
    """A JSON column as read: text (``::text`` select) is parsed; ``None`` stays ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        if value == "{}":
            return {}  # the common empty ``properties``/``metadata``: no parser call
        if value[:1] == '"' and value[-1:] == '"' and "\\" not in value and len(value) > 1:
            # a JSON string without escapes (PostgreSQL writes non-ASCII characters as
            # they are and escapes only ``"``, ``\\`` and control characters): its text
            return value[1:-1]
        return loads(value)
    if isinstance(value, (bytes, bytearray)):
        return loads(value)
    return value  # a pool with a json codec already decoded it


def vector_array(vector: Any, *, dim: int, record_id: str) -> np.ndarray:
    """``vector`` as a 1-D float32 array of length ``dim``.

    Raises :class:`ConfigurationError` for a missing vector, a wrong length or a non-finite
    component (PostgreSQL's ``vector`` type stores neither NaN nor infinity).
    """
    if vector is None:
        raise ConfigurationError(f"postgres: record {record_id!r} has no vector")
    arr = np.asarray(vector, dtype=np.float64).reshape(-1)
    if arr.shape[0] != dim:
        raise ConfigurationError(
            f"postgres: record {record_id!r} has a vector of length {arr.shape[0]}, but the "
            f"index stores dim={dim}; use the embedding model this index was built with"
        )
    if not np.all(np.isfinite(arr)):
        raise ConfigurationError(
            f"postgres: record {record_id!r} has a non-finite vector component (NaN/inf)"
        )
    if np.any(np.abs(arr) > np.finfo(np.float32).max):
        raise ConfigurationError(
            f"postgres: record {record_id!r} has a component outside the float32 range"
        )
    return arr.astype(np.float32)


def vector_text(vector: np.ndarray) -> str:
    """pgvector's text form. ``float.__repr__`` of a float32 value parses back exactly."""
    return "[" + ",".join(map(repr, vector.astype(np.float32).tolist())) + "]"


def _float32(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    return np.asarray(value, dtype=np.float32).reshape(-1)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _str_list(values: Any) -> list[str]:
    return sorted(str(v) for v in values)


def rows_document(rows: Sequence[Mapping[str, Any]]) -> str:
    """The JSON text of a batch, sent as one ``$n::text`` parameter."""
    return json.dumps(list(rows), ensure_ascii=False, allow_nan=False)


# --------------------------------------------------------------------------------------
# Vector records
# --------------------------------------------------------------------------------------


def vector_record_to_row(
    record: VectorRecord, *, dim: int, vector_as_array: bool = False
) -> dict[str, Any]:
    """A vector-table row; the array columns are derived with the core's parsers.

    ``vector`` is pgvector's text form, or (``vector_as_array``) a float32 numpy array for
    pgvector's binary codec (the ``COPY`` path)."""
    if not isinstance(record.id, str) or not record.id:
        raise ConfigurationError(
            f"postgres: vector record id must be a non-empty string, got {record.id!r}"
        )
    vec = vector_array(record.vector, dim=dim, record_id=record.id)
    metadata = dict(record.metadata or {})
    scoped = scope_values(metadata, record.file_path, record.full_doc_id)
    return {
        "id": record.id,
        "vector": vec.astype(np.float32) if vector_as_array else vector_text(vec),
        "entity_name": record.entity_name,
        "src_id": record.src_id,
        "tgt_id": record.tgt_id,
        "content": record.content,
        "file_path": record.file_path,
        "full_doc_id": record.full_doc_id,
        "created_at": _int_or_none(record.created_at),
        "source_id": encode_json(record.source_id, what=f"source_id of {record.id!r}"),
        "chunk_ids": parse_source_ids(record.source_id),
        "product_ids": _str_list(scoped["product_id"]),
        "category_ids": _str_list(scoped["category_id"]),
        "doc_ids": _str_list(scoped["doc_ids"]),
        "metadata": encode_json(metadata, what=f"metadata of {record.id!r}"),
    }


def row_to_vector_record(row: Mapping[str, Any], *, with_vector: bool = True) -> VectorRecord:
    """A :class:`VectorRecord` from a row selected with ``vector::real[] AS vector``."""
    metadata = decode_json(row.get("metadata"))
    return record_from_row(
        row, _float32(row.get("vector")) if with_vector else None,
        source_id=decode_json(row.get("source_id")),
        metadata=metadata if isinstance(metadata, dict) else {},
    )


# --------------------------------------------------------------------------------------
# Graph
# --------------------------------------------------------------------------------------


def entity_to_row(entity: Entity) -> dict[str, Any]:
    """A nodes-table row."""
    if not isinstance(entity.name, str) or not entity.name:
        raise ConfigurationError(
            f"postgres: entity name must be a non-empty string, got {entity.name!r}"
        )
    return {
        "name": entity.name,
        "entity_type": entity.entity_type,
        "description": entity.description,
        "source_id": encode_json(entity.source_id, what=f"source_id of node {entity.name!r}"),
        "file_path": entity.file_path,
        "created_at": _int_or_none(entity.created_at),
        "properties": encode_json(
            dict(entity.properties or {}), what=f"properties of node {entity.name!r}"
        ),
    }


def row_to_entity(row: Mapping[str, Any]) -> Entity:
    """An :class:`Entity` from a nodes-table row."""
    get = row.get
    props = decode_json(get("properties"))
    created = get("created_at")
    return new_entity(
        row["name"],
        get("entity_type"),
        get("description"),
        decode_json(get("source_id")),
        get("file_path"),
        None if created is None else int(created),
        props if isinstance(props, dict) else {},
    )


def relation_to_row(relation: Relation) -> dict[str, Any]:
    """An edges-table row (without the ordering columns, which the server assigns)."""
    for what, value in (
        ("id", relation.id),
        ("src_id", relation.src_id),
        ("tgt_id", relation.tgt_id),
    ):
        if not isinstance(value, str) or not value:
            raise ConfigurationError(
                f"postgres: relation {what} must be a non-empty string, got {value!r}"
            )
    weight = relation.weight
    if weight is not None:
        weight = float(weight)
        if not math.isfinite(weight):
            raise ConfigurationError(f"postgres: relation {relation.id!r} has a non-finite weight")
    pa, pb = relation.pair
    return {
        "id": relation.id,
        "src": relation.src_id,
        "tgt": relation.tgt_id,
        "pa": pa,
        "pb": pb,
        "description": relation.description,
        "keywords": relation.keywords,
        "weight": weight,
        "source_id": encode_json(relation.source_id, what=f"source_id of relation {relation.id!r}"),
        "file_path": relation.file_path,
        "created_at": _int_or_none(relation.created_at),
        "properties": encode_json(
            dict(relation.properties or {}), what=f"properties of relation {relation.id!r}"
        ),
        "chunk_ids": parse_source_ids(relation.source_id),
    }


def row_to_relation(row: Mapping[str, Any]) -> Relation:
    """A :class:`Relation` from an edges-table row."""
    get = row.get
    props = decode_json(get("properties"))
    weight = get("weight")
    created = get("created_at")
    return new_relation(
        row["id"],
        row["src"],
        row["tgt"],
        get("description"),
        get("keywords"),
        None if weight is None else float(weight),
        decode_json(get("source_id")),
        get("file_path"),
        None if created is None else int(created),
        props if isinstance(props, dict) else {},
    )


# --------------------------------------------------------------------------------------
# Chunks
# --------------------------------------------------------------------------------------


def chunk_to_row(chunk: Chunk) -> dict[str, Any]:
    """A chunks-table row; every field other than the typed columns goes to ``metadata``."""
    if not isinstance(chunk.id, str) or not chunk.id:
        raise ConfigurationError(f"postgres: chunk id must be a non-empty string, got {chunk.id!r}")
    return {
        "id": chunk.id,
        "content": chunk.content,
        "tokens": _int_or_none(chunk.tokens),
        "full_doc_id": chunk.full_doc_id,
        "chunk_order_index": _int_or_none(chunk.chunk_order_index),
        "file_path": chunk.file_path,
        "metadata": encode_json(dict(chunk.metadata or {}), what=f"metadata of chunk {chunk.id!r}"),
    }


def row_to_chunk(row: Mapping[str, Any]) -> Chunk:
    """A :class:`Chunk` from a chunks-table row."""
    metadata = decode_json(row.get("metadata"))
    return new_chunk(
        row["id"],
        row.get("content"),
        _int_or_none(row.get("tokens")),
        row.get("full_doc_id"),
        _int_or_none(row.get("chunk_order_index")),
        row.get("file_path"),
        metadata if isinstance(metadata, dict) else {},
    )
