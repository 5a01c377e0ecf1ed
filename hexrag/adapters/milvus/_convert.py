"""The one place where :class:`VectorRecord` and Milvus rows meet (no pymilvus import here).

Row layout (one schema for all three namespaces; unused columns are null):

================  ======================  ===============================================
column            Milvus type             content
================  ======================  ===============================================
id                VARCHAR(1024), PK       record id
vector            FLOAT_VECTOR(dim)       raw embedding (float32), COSINE metric
created_at        INT64, nullable         epoch seconds
entity_name       VARCHAR, nullable       entities namespace
src_id, tgt_id    VARCHAR, nullable       relationships namespace
full_doc_id       VARCHAR, nullable       chunks namespace
content           VARCHAR, nullable
file_path         VARCHAR, nullable       raw (may be ``<SEP>``-joined encoded sources)
source_id         VARCHAR, nullable       raw source_id when it is a string
source_id_json    JSON, nullable          source_id when it is a list (or other JSON value)
chunk_ids         ARRAY<VARCHAR>          ``parse_source_ids(source_id)`` (index aid only)
product_ids       ARRAY<VARCHAR>          ``scope_values(...)["product_id"]``
category_ids      ARRAY<VARCHAR>          ``scope_values(...)["category_id"]``
doc_ids           ARRAY<VARCHAR>          ``scope_values(...)["doc_ids"]``
metadata          JSON, nullable          ``VectorRecord.metadata`` as given
================  ======================  ===============================================

Milvus caps VARCHAR lengths (bytes) and ARRAY capacities; Milvus Lite does not enforce the
VARCHAR caps but a server does, so :func:`record_to_row` checks them itself and refuses an
oversized stored field with :class:`ConfigurationError` (LightRAG silently truncates). The
derived arrays never fail a write: a scope array that would not fit is stored empty, which
means "unknown" and therefore never excludes the record (pre-filtering stays sound); an
over-long ``chunk_ids`` keeps its first :data:`ARRAY_CAPACITY` ids (``source_id`` stays
authoritative).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hexrag.adapters._vector_check import checked_vector
from hexrag.adapters._vector_record import record_from_row
from hexrag.adapters.milvus._filter import SCOPE_COLUMNS
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.scope import scope_values
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import VectorRecord

__all__ = [
    "ARRAY_CAPACITY",
    "ARRAY_ELEMENT_MAX_BYTES",
    "JSON_MAX_BYTES",
    "OUTPUT_FIELDS",
    "VARCHAR_LIMITS",
    "cosine_scores",
    "record_to_row",
    "row_to_record",
    "vector_of",
    "vectors_by_id",
]

# Maximum byte lengths of the VARCHAR columns (Milvus allows up to 65535).
VARCHAR_LIMITS: dict[str, int] = {
    "id": 1024,
    "entity_name": 4096,
    "src_id": 4096,
    "tgt_id": 4096,
    "full_doc_id": 1024,
    "content": 65535,
    "file_path": 65535,
    "source_id": 65535,
}
ARRAY_COLUMNS: tuple[str, ...] = ("chunk_ids", "product_ids", "category_ids", "doc_ids")
ARRAY_CAPACITY = 4096  # Milvus' maximum max_capacity
ARRAY_ELEMENT_MAX_BYTES = 1024
JSON_COLUMNS: tuple[str, ...] = ("source_id_json", "metadata")
JSON_MAX_BYTES = 65536  # Milvus' documented default size limit of a JSON field

# Every stored column but the vector: what query/get ask Milvus for.
SCALAR_FIELDS: tuple[str, ...] = (
    "id",
    "created_at",
    "entity_name",
    "src_id",
    "tgt_id",
    "full_doc_id",
    "content",
    "file_path",
    "source_id",
    "source_id_json",
    "chunk_ids",
    "product_ids",
    "category_ids",
    "doc_ids",
    "metadata",
)
OUTPUT_FIELDS: tuple[str, ...] = (*SCALAR_FIELDS, "vector")


def vector_of(value: Any, dim: int, *, what: str) -> np.ndarray:
    """``value`` as a 1-D float32 array of length ``dim``, else :class:`ConfigurationError`."""
    return checked_vector(value, dim, what=what, backend="Milvus")


def _check_varchar(record_id: str, column: str, value: str | None) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise ConfigurationError(
            f"record {record_id!r}: {column} must be a string or None, got {type(value).__name__}"
        )
    size = len(value.encode("utf-8"))
    limit = VARCHAR_LIMITS[column]
    if size > limit:
        raise ConfigurationError(
            f"record {record_id!r}: {column} is {size} bytes, the Milvus schema allows {limit}"
        )


def _json_value(record_id: str, column: str, value: Any) -> Any:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"record {record_id!r}: {column} is not JSON-serialisable ({exc})"
        ) from exc
    if len(text.encode("utf-8")) > JSON_MAX_BYTES:
        raise ConfigurationError(
            f"record {record_id!r}: {column} is larger than {JSON_MAX_BYTES} bytes of JSON"
        )
    # Round-trip so the stored value is exactly what Milvus will hand back (tuples -> lists).
    return json.loads(text)


def _fits_array(values: Sequence[str]) -> bool:
    return len(values) <= ARRAY_CAPACITY and all(
        len(v.encode("utf-8")) <= ARRAY_ELEMENT_MAX_BYTES for v in values
    )


def record_to_row(record: VectorRecord, dim: int) -> dict[str, Any]:
    """The Milvus row for ``record``; :class:`ConfigurationError` if it cannot be stored."""
    rid = record.id
    if not isinstance(rid, str) or not rid:
        raise ConfigurationError(f"record id must be a non-empty string, got {rid!r}")
    _check_varchar(rid, "id", rid)
    vector = vector_of(record.vector, dim, what=f"record {rid!r}")
    for column in ("entity_name", "src_id", "tgt_id", "full_doc_id", "content", "file_path"):
        _check_varchar(rid, column, getattr(record, column))
    created_at = record.created_at
    if created_at is not None and (isinstance(created_at, bool) or not isinstance(created_at, int)):
        raise ConfigurationError(f"record {rid!r}: created_at must be an int or None")

    source_id: str | None = None
    source_id_json: Any = None
    if record.source_id is None or isinstance(record.source_id, str):
        source_id = record.source_id
        _check_varchar(rid, "source_id", source_id)
    else:
        source_id_json = _json_value(rid, "source_id", record.source_id)

    metadata = _json_value(rid, "metadata", dict(record.metadata))

    chunk_ids = [
        c
        for c in parse_source_ids(record.source_id)
        if len(c.encode("utf-8")) <= ARRAY_ELEMENT_MAX_BYTES
    ][:ARRAY_CAPACITY]
    scope = scope_values(record.metadata, record.file_path, record.full_doc_id)
    row: dict[str, Any] = {
        "id": rid,
        "vector": vector.tolist(),
        "created_at": created_at,
        "entity_name": record.entity_name,
        "src_id": record.src_id,
        "tgt_id": record.tgt_id,
        "full_doc_id": record.full_doc_id,
        "content": record.content,
        "file_path": record.file_path,
        "source_id": source_id,
        "source_id_json": source_id_json,
        "chunk_ids": chunk_ids,
        "metadata": metadata,
    }
    for name, column in SCOPE_COLUMNS.items():
        values = sorted(scope.get(name, frozenset()))
        # An array that cannot be stored becomes "unknown", which the pre-filter admits.
        row[column] = values if _fits_array(values) else []
    return row


def row_to_record(row: Mapping[str, Any], *, with_vector: bool) -> VectorRecord:
    """The :class:`VectorRecord` stored in ``row`` (``vector`` only when ``with_vector``)."""
    source_json = row.get("source_id_json")
    vector: np.ndarray | None = None
    if with_vector and row.get("vector") is not None:
        vector = np.asarray(row["vector"], dtype=np.float32)
    return record_from_row(
        row, vector,
        source_id=source_json if source_json is not None else row.get("source_id"),
        metadata=dict(row.get("metadata") or {}),
    )


def cosine_scores(query: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``vectors`` with ``query``, in float64.

    Milvus ranks with float32 arithmetic; the adapter re-scores its candidates here so that
    scores, ties and the inclusive threshold do not depend on the server's rounding. The
    computation is row-wise (no BLAS blocking), so identical rows get identical
    scores, and ``dot / sqrt(|a|^2 |b|^2)`` gives exactly 1.0 for identical vectors. A
    zero vector scores 0.0 (as Milvus Lite does).
    """
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    m = np.asarray(vectors, dtype=np.float64).reshape(-1, q.shape[0])
    # The same elementwise-product-then-sum for all three, so equal inputs give equal sums.
    dots = (m * q).sum(axis=1)
    norms = (m * m).sum(axis=1) * float((q * q).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(norms > 0, dots / np.sqrt(norms), 0.0)
    return np.clip(scores, -1.0, 1.0)


def vectors_by_id(rows: Sequence[Mapping[str, Any]], ids: Sequence[str]) -> dict[str, np.ndarray]:
    """``{id: float32 vector}`` of the ``ids`` found among query ``rows`` (``id``, ``vector``),
    in the order of ``ids``; the last row of a repeated id wins.

    pymilvus hands a vector over as a list of Python floats; converting all rows in one
    ``np.asarray`` is three times faster than one call per row and gives the same float32
    values (each id gets its own row of one matrix). Rows of unequal length (not a
    Milvus FLOAT_VECTOR column) are converted one by one.
    """
    if not rows:
        return {}
    position = {row["id"]: i for i, row in enumerate(rows)}
    try:
        matrix = np.asarray([row["vector"] for row in rows], dtype=np.float32)
    except ValueError:
        matrix = None
    if matrix is None or matrix.ndim != 2:
        return {
            rid: np.asarray(rows[position[rid]]["vector"], dtype=np.float32)
            for rid in dict.fromkeys(ids)
            if rid in position
        }
    return {rid: matrix[position[rid]] for rid in dict.fromkeys(ids) if rid in position}
