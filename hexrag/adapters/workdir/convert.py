"""LightRAG file records <-> hexrag domain types: the one place this adapter converts.

Rules shared by every conversion:

* a stored value lands in its first-class field only when it has the field's type (a string
  description, an integer ``created_at``...); otherwise it stays, under its own name, in
  ``properties``/``metadata``, so nothing is lost and the write-back is exact;
* every other stored key goes to ``properties``/``metadata`` in stored order;
* on the way back, first-class fields are written in LightRAG's own key order (``None`` =
  absent, not written), then ``properties``/``metadata`` update that mapping (a key kept there
  because of its type takes its place again).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hexrag.adapters._lightrag_chunk_record import chunk_record
from hexrag.core.ingest.ids import relation_id
from hexrag.core.query.source_ids import join_source_ids
from hexrag.domain.records import Chunk, Entity, Relation, VectorRecord

__all__ = [
    "chunk_from_kv",
    "chunk_to_kv",
    "edge_to_relation",
    "entity_to_node",
    "migrate_legacy_cache",
    "node_to_entity",
    "record_to_vector_row",
    "relation_to_edge",
    "vector_row_to_record",
]

# LightRAG's key orders (what its writers produce), used when writing back.
ENTITY_VDB_ORDER = ("content", "entity_name", "source_id", "file_path")
RELATION_VDB_ORDER = ("src_id", "tgt_id", "source_id", "content", "file_path")
CHUNK_VDB_ORDER = ("content", "full_doc_id", "file_path")
_VDB_ORDER = {
    "entities": ENTITY_VDB_ORDER,
    "relationships": RELATION_VDB_ORDER,
    "chunks": CHUNK_VDB_ORDER,
}
_VDB_STR_FIELDS = ("entity_name", "src_id", "tgt_id", "content", "file_path", "full_doc_id")
_VDB_ALL_FIELDS = (*_VDB_STR_FIELDS, "source_id")
_VDB_WRITE_ORDER = {
    ns: (*order, *(f for f in _VDB_ALL_FIELDS if f not in order))
    for ns, order in _VDB_ORDER.items()
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ----------------------------------------------------------------------------------------
# NanoVectorDB rows
# ----------------------------------------------------------------------------------------


def vector_row_to_record(
    row: dict[str, Any], vector: Any = None, row_vector: str | None = None
) -> VectorRecord:
    """A NanoVectorDB ``data`` row (without its ``"vector"``) -> :class:`VectorRecord`.

    ``__id__`` -> ``id``, ``__created_at__`` -> ``created_at``; ``entity_name``, ``src_id``,
    ``tgt_id``, ``content``, ``file_path``, ``full_doc_id`` (strings) and ``source_id`` (any
    form) -> their fields; everything else (``__write_seq__``, scope fields...) -> metadata.
    The vector itself lives in the index matrix, so ``vector`` is ``None`` unless given.
    ``row`` is consumed (its remaining keys become the metadata dict).
    """
    rid = row.pop("__id__")
    created = row.pop("__created_at__", None)
    if created is not None and not _is_int(created):
        row["__created_at__"] = created  # kept as stored, in metadata
        created = None
    fields: dict[str, Any] = {}
    if "source_id" in row:
        fields["source_id"] = row.pop("source_id")
    for key in _VDB_STR_FIELDS:
        value = row.get(key)
        if value is not None and type(value) is str:
            fields[key] = row.pop(key)
    return VectorRecord(id=rid, vector=vector, created_at=created, metadata=row,
                        row_vector=row_vector, **fields)


def record_to_vector_row(record: VectorRecord, namespace: str) -> dict[str, Any]:
    """:class:`VectorRecord` -> NanoVectorDB row (without ``"vector"``), LightRAG's key order:
    ``__id__``, ``__created_at__``, other ``__*__`` bookkeeping, the namespace's meta fields,
    then the rest of the metadata."""
    row: dict[str, Any] = {"__id__": record.id}
    if record.created_at is not None:
        row["__created_at__"] = record.created_at
    meta = record.metadata
    if meta:
        for key, value in meta.items():
            if key[:2] == "__" and key[-2:] == "__":
                row[key] = value
    for key in _VDB_WRITE_ORDER.get(namespace, _VDB_ALL_FIELDS):
        value = getattr(record, key)
        if value is not None:
            row[key] = _source_id_out(value) if key == "source_id" else value
    if meta:
        for key, value in meta.items():
            if not (key[:2] == "__" and key[-2:] == "__"):
                row[key] = value  # includes a field value kept in metadata because of its type
    return row


def _source_id_out(value: Any) -> Any:
    """Lists/tuples of chunk ids become LightRAG's ``<SEP>`` string; anything else is kept."""
    if isinstance(value, (list, tuple)):
        return join_source_ids([str(v) for v in value])
    return value


# ----------------------------------------------------------------------------------------
# GraphML nodes and edges
# ----------------------------------------------------------------------------------------

_NODE_STR_FIELDS = ("entity_type", "description", "file_path")
_EDGE_STR_FIELDS = ("description", "keywords", "file_path")
#: LightRAG's attribute order of a node / an edge (after ``entity_id``, before the properties)
_NODE_ATTR_ORDER = ("entity_type", "description", "source_id", "file_path", "created_at")
_EDGE_ATTR_ORDER = ("weight", "description", "keywords", "source_id", "file_path", "created_at")


def _pop_fields(attrs: dict[str, Any], str_fields: tuple[str, ...]) -> dict[str, Any]:
    """The record fields popped from GraphML ``attrs``: each of ``str_fields`` that holds a
    string, ``source_id`` as stored, an integer ``created_at``. The rest stays in ``attrs``
    (the record's properties)."""
    fields: dict[str, Any] = {}
    for key in str_fields:
        value = attrs.get(key)
        if value is not None and type(value) is str:
            fields[key] = attrs.pop(key)
    if "source_id" in attrs:
        fields["source_id"] = attrs.pop("source_id")
    created = attrs.get("created_at")
    if created is not None and _is_int(created):
        fields["created_at"] = attrs.pop("created_at")
    return fields


def _record_attrs(
    record: Entity | Relation, order: tuple[str, ...], attrs: dict[str, Any]
) -> dict[str, Any]:
    """``attrs``, then the record's set fields in ``order`` (source ids joined), then its
    properties, made GraphML-safe."""
    for key in order:
        value = getattr(record, key)
        if value is not None:
            attrs[key] = _source_id_out(value) if key == "source_id" else value
    attrs.update(record.properties)
    return _graphml_safe(attrs)


def node_to_entity(name: str, attrs: dict[str, Any]) -> Entity:
    """GraphML node -> :class:`Entity` (``name`` is the node id); ``attrs`` is consumed.

    ``entity_id`` is dropped when it equals the node id (it is re-written on save).
    """
    if attrs.get("entity_id") == name:
        del attrs["entity_id"]
    fields = _pop_fields(attrs, _NODE_STR_FIELDS)
    return Entity(name=name, properties=attrs, **fields)


def entity_to_node(entity: Entity) -> tuple[str, dict[str, Any]]:
    """:class:`Entity` -> ``(node id, attributes)`` in LightRAG's attribute order."""
    return entity.name, _record_attrs(entity, _NODE_ATTR_ORDER, {"entity_id": entity.name})


def edge_to_relation(u: str, v: str, attrs: dict[str, Any], *, rel_id: str) -> Relation:
    """GraphML edge -> :class:`Relation` with id ``rel_id`` and the given orientation;
    ``attrs`` is consumed. A numeric ``weight`` becomes a float; a non-numeric one stays in
    ``properties``.
    """
    fields = _pop_fields(attrs, _EDGE_STR_FIELDS)
    weight = attrs.get("weight")
    if weight is not None and isinstance(weight, (int, float)) and not isinstance(weight, bool):
        fields["weight"] = float(attrs.pop("weight"))
    return Relation(id=rel_id, src_id=u, tgt_id=v, properties=attrs, **fields)


def relation_to_edge(relation: Relation) -> tuple[str, str, dict[str, Any]]:
    """:class:`Relation` -> ``(source, target, attributes)`` in LightRAG's attribute order."""
    return relation.src_id, relation.tgt_id, _record_attrs(relation, _EDGE_ATTR_ORDER, {})


def _graphml_safe(attrs: dict[str, Any]) -> dict[str, Any]:
    """GraphML holds str/int/float/bool only: ``None`` is dropped (absent), lists and dicts
    (possible from other backends) are stored as JSON text."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if value is None:
            continue
        if not isinstance(value, (str, int, float, bool)):
            value = json.dumps(value, ensure_ascii=False, default=str)
        out[key] = value
    return out


def relation_ids_for_edges(edges: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """Relation ids for GraphML edges: :func:`hexrag.core.ingest.ids.relation_id` of the pair (also
    LightRAG's relationship-vector id); a second, third... edge of the same pair (only in a
    multigraph file) gets ``#1``, ``#2``... appended."""
    seen: dict[str, int] = {}
    out = []
    for u, v, _ in edges:
        rid = relation_id(u, v)
        n = seen.get(rid, 0)
        seen[rid] = n + 1
        out.append(rid if n == 0 else f"{rid}#{n}")
    return out


# ----------------------------------------------------------------------------------------
# KV stores
# ----------------------------------------------------------------------------------------

def chunk_from_kv(chunk_id: str, value: Mapping[str, Any]) -> Chunk:
    """A ``kv_store_text_chunks.json`` record -> :class:`Chunk`.

    ``content``/``full_doc_id``/``file_path`` (strings) and ``tokens``/``chunk_order_index``
    (integers) are fields; everything else (``heading``, ``llm_cache_list``, ``create_time``,
    ``_id``, ``product_id``...) is metadata. A missing or non-string ``content`` is ``""``
    (the stored value, if any, stays in metadata).
    """
    fields: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key, val in value.items():
        if key in ("content", "full_doc_id", "file_path") and isinstance(val, str):
            fields[key] = val
        elif key in ("tokens", "chunk_order_index") and _is_int(val):
            fields[key] = val
        else:
            metadata[key] = val
    content = fields.pop("content", "")
    return Chunk(id=chunk_id, content=content, metadata=metadata, **fields)


def chunk_to_kv(chunk: Chunk) -> dict[str, Any]:
    """:class:`Chunk` -> ``kv_store_text_chunks.json`` record (LightRAG's key order)."""
    return chunk_record(chunk)


def migrate_legacy_cache(data: dict[str, Any]) -> dict[str, Any]:
    """LightRAG's legacy ``{mode: {hash: entry}}`` cache layout -> flat
    ``{"mode:cache_type:hash": entry}`` (``cache_type`` defaults to ``"extract"``), exactly as
    ``JsonKVStorage._migrate_legacy_cache_structure`` does. Flat data is returned unchanged.
    """
    if not data:
        return data
    first = next(iter(data))
    if ":" in first and len(first.split(":")) == 3:
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and all(
            isinstance(v, dict) and "return" in v for v in value.values()
        ):
            for cache_hash, entry in value.items():
                out[f"{key}:{entry.get('cache_type', 'extract')}:{cache_hash}"] = entry
        else:
            out[key] = value
    return out
