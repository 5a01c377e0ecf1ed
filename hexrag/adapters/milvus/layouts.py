"""How records sit in a Milvus collection: hexrag's layout and LightRAG 1.5.7's.

A layout is a strategy inside :class:`~hexrag.adapters.milvus.index.MilvusVectorIndex` (the
collection's schema and its check, row <-> record conversion, the fields a read asks for, the
scope filter, the ranking rule and what the index declares about it), not a second family of
index classes. Client handling, worker threads, error translation, reads by id, deletes, counts
and scans are the index's, whatever the layout.

hexrag's layout (:class:`MilvusLayout`): the explicit schema of
:mod:`hexrag.adapters.milvus._convert` (every record field, ``source_id`` in its form,
``metadata`` whole, scope arrays filtered inside Milvus); ranking is the port's (inclusive
threshold, ties by id, exact re-scoring).

LightRAG's layout (:class:`LightRAGMilvusLayout`, ``MilvusVectorDBStorage``): dynamic fields
enabled, ``id`` VARCHAR(64), ``vector``, ``created_at`` INT64 (not nullable: stamped with the
write time when missing) and the namespace's ``meta_fields`` as nullable VARCHARs of LightRAG's
lengths; ranking is LightRAG's own call (``search(limit=top_k, radius=threshold)``): Milvus
keeps scores strictly above the threshold and orders them, ties included. Scope is read from
``file_path`` / ``full_doc_id`` after the call (Milvus filters cannot parse LightRAG's encoded
``file_path``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hexrag.adapters._vector_lightrag import (
    LIGHTRAG_FIELDS,
    joined_source_id,
    lightrag_traits,
)
from hexrag.adapters.milvus._convert import (
    ARRAY_CAPACITY,
    ARRAY_ELEMENT_MAX_BYTES,
    OUTPUT_FIELDS,
    VARCHAR_LIMITS,
    record_to_row,
    row_to_record,
    vector_of,
)
from hexrag.adapters.milvus._filter import scope_filter
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import VectorRecord
from hexrag.domain.scope import QueryScope
from hexrag.ports.vector_index import PORT_TRAITS, VectorIndexTraits

if TYPE_CHECKING:
    from pymilvus import MilvusClient

__all__ = ["LAYOUT_FIELDS", "LightRAGMilvusLayout", "MilvusLayout"]

#: LightRAG's ``meta_fields`` per namespace (``lightrag.py``), besides ``created_at``.
LAYOUT_FIELDS = LIGHTRAG_FIELDS
#: LightRAG's VARCHAR limits (``_get_varchar_field_limits_for_namespace``).
_LIGHTRAG_VARCHAR = {
    "id": 64,
    "entity_name": 512,
    "src_id": 512,
    "tgt_id": 512,
    "full_doc_id": 64,
    "content": 65535,
    "source_id": 65535,
    "file_path": 32768,
}
_HEXRAG_VARCHAR_FIELDS = (
    "entity_name", "src_id", "tgt_id", "full_doc_id", "content", "file_path", "source_id",
)


def _fields(
    client: MilvusClient, collection: str, timeout: float | None, required: Sequence[str]
) -> tuple[dict[str, Any], list[str]]:
    """An existing collection's fields by name, and which of ``required`` it lacks."""
    info = client.describe_collection(collection, timeout=timeout)
    fields = {f.get("name"): f for f in info.get("fields", [])}
    return fields, [name for name in required if name not in fields]


def _check_dim(fields: Mapping[str, Any], collection: str, dim: int) -> None:
    stored = (fields["vector"].get("params") or {}).get("dim")
    if stored is not None and int(stored) != dim:
        raise ConfigurationError(
            f"Milvus collection {collection!r} stores vectors of dim {stored}, but this index "
            f"is configured for dim {dim}; check the embedding model or use another collection"
        )


class MilvusLayout:
    """hexrag's own layout, and the strategy interface (see the module docstring)."""

    #: ``True``: the port's ranking (inclusive threshold, ties by id, exact re-scoring);
    #: ``False``: the backend's own call, as a LightRAG deployment ranks.
    exact_ranking = True

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def traits(self) -> VectorIndexTraits:
        """The rules the index declares: the port's own."""
        return PORT_TRAITS

    @property
    def output_fields(self) -> list[str]:
        """Every stored field, the vector included (what reads and searches ask for)."""
        return list(OUTPUT_FIELDS)

    def row(self, record: VectorRecord, dim: int, now: int) -> dict[str, Any]:
        """The row stored for ``record`` (:class:`ConfigurationError` if it cannot be)."""
        return record_to_row(record, dim)

    def record(self, row: Mapping[str, Any], *, with_vector: bool) -> VectorRecord:
        """The record a stored row holds (``vector`` only when ``with_vector``)."""
        return row_to_record(row, with_vector=with_vector)

    def scope_expr(self, scope: QueryScope | None) -> str:
        """The scope as a Milvus filter expression of escaped literals."""
        return scope_filter(scope)

    def create_options(self) -> dict[str, Any]:
        """Extra ``create_collection`` arguments."""
        return {"consistency_level": "Strong"}

    def schema(self, dim: int) -> Any:
        """The schema of a new collection (explicit, no dynamic fields)."""
        from pymilvus import DataType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=VARCHAR_LIMITS["id"])
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("created_at", DataType.INT64, nullable=True)
        for name in _HEXRAG_VARCHAR_FIELDS:
            schema.add_field(name, DataType.VARCHAR, max_length=VARCHAR_LIMITS[name], nullable=True)
        schema.add_field("source_id_json", DataType.JSON, nullable=True)
        for name in ("chunk_ids", "product_ids", "category_ids", "doc_ids"):
            schema.add_field(
                name,
                DataType.ARRAY,
                element_type=DataType.VARCHAR,
                max_capacity=ARRAY_CAPACITY,
                max_length=ARRAY_ELEMENT_MAX_BYTES,
            )
        schema.add_field("metadata", DataType.JSON, nullable=True)
        return schema

    def check_existing(
        self, client: MilvusClient, collection: str, dim: int, timeout: float | None
    ) -> None:
        """Refuse an existing collection of another schema, dimension or metric."""
        fields, missing = _fields(client, collection, timeout, OUTPUT_FIELDS)
        if missing:
            raise ConfigurationError(
                f"Milvus collection {collection!r} exists but lacks the field(s) "
                f"{missing}: it was not created by hexrag's MilvusVectorIndex (LightRAG's "
                "collections have another schema). Use another collection name."
            )
        _check_dim(fields, collection, dim)
        for name in client.list_indexes(collection, field_name="vector", timeout=timeout):
            info = client.describe_index(collection, name, timeout=timeout)
            metric = str(info.get("metric_type", "COSINE")).upper()
            if metric != "COSINE":
                raise ConfigurationError(
                    f"Milvus collection {collection!r} indexes its vectors with the "
                    f"{metric} metric; MilvusVectorIndex needs COSINE. Use another collection."
                )

    def backend_search_params(self, threshold: float, index_type: str) -> dict[str, Any]:
        """The backend's own search parameters (the layouts that rank as their backend)."""
        raise NotImplementedError


class LightRAGMilvusLayout(MilvusLayout):
    """LightRAG 1.5.7's layout (see the module docstring)."""

    exact_ranking = False

    @property
    def fields(self) -> tuple[str, ...]:
        """The namespace's LightRAG fields (besides ``id``, ``vector``, ``created_at``)."""
        return LAYOUT_FIELDS[self.namespace]

    def traits(self) -> VectorIndexTraits:
        """LightRAG's rules: Milvus' strict range search and its order among ties, the
        collection's own fields, ``created_at`` stamped with the write time, ``source_id``
        stored joined."""
        return lightrag_traits(self.namespace, stamps_created_at=True)

    @property
    def output_fields(self) -> list[str]:
        """LightRAG's fields and the vector."""
        return ["id", "created_at", *self.fields, "vector"]

    def row(self, record: VectorRecord, dim: int, now: int) -> dict[str, Any]:
        """LightRAG's row: its fields, ``created_at`` always set, ``source_id`` joined."""
        rid = record.id
        if not isinstance(rid, str) or not rid:
            raise ConfigurationError(f"record id must be a non-empty string, got {rid!r}")
        row: dict[str, Any] = {
            "id": rid,
            "vector": vector_of(record.vector, dim, what=f"record {rid!r}").tolist(),
            "created_at": record.created_at if record.created_at is not None else now,
        }
        for name in self.fields:
            value: Any = getattr(record, name)
            if name == "source_id":
                value = joined_source_id(value)
            if value is not None and not isinstance(value, str):
                value = str(value)
            if value is not None and len(value.encode("utf-8")) > _LIGHTRAG_VARCHAR[name]:
                raise ConfigurationError(
                    f"record {rid!r}: {name} is longer than LightRAG's Milvus field "
                    f"({_LIGHTRAG_VARCHAR[name]} bytes)"
                )
            row[name] = value
        if len(rid.encode("utf-8")) > _LIGHTRAG_VARCHAR["id"]:
            raise ConfigurationError(f"record id {rid!r} is longer than LightRAG's 64 bytes")
        return row

    def scope_expr(self, scope: QueryScope | None) -> str:
        """No filter: scope is read from the rows after LightRAG's call."""
        return ""

    def create_options(self) -> dict[str, Any]:
        """LightRAG's collection options (Milvus' default consistency)."""
        return {}

    def schema(self, dim: int) -> Any:
        """LightRAG's schema (dynamic fields enabled)."""
        from pymilvus import DataType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("created_at", DataType.INT64)
        for name in self.fields:
            schema.add_field(
                name, DataType.VARCHAR, max_length=_LIGHTRAG_VARCHAR[name], nullable=True
            )
        return schema

    def check_existing(
        self, client: MilvusClient, collection: str, dim: int, timeout: float | None
    ) -> None:
        """Refuse a collection that is not LightRAG's of this namespace, or of another dim."""
        fields, missing = _fields(client, collection, timeout, ("id", "vector", *self.fields))
        if missing:
            raise ConfigurationError(
                f"Milvus collection {collection!r} lacks LightRAG's field(s) {missing}: "
                "it is not a LightRAG 1.5.7 collection of this namespace"
            )
        _check_dim(fields, collection, dim)

    def backend_search_params(self, threshold: float, index_type: str) -> dict[str, Any]:
        """``MilvusVectorDBStorage.query``'s: ``radius`` = the threshold (and ``ef=200`` on
        an HNSW index)."""
        params: dict[str, Any] = {"radius": threshold}
        if index_type == "HNSW":
            params["ef"] = 200
        return {"metric_type": "COSINE", "params": params}
