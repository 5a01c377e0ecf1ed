"""A stored vector row back as a :class:`~hexrag.domain.records.VectorRecord`, written once.

Every vector backend stores a record as a row (a Milvus entity, a PostgreSQL row, a Qdrant
payload) whose columns carry the record's field names; the adapters differ only in a few
fields (``source_id`` and ``metadata`` encodings, the fields a LightRAG layout keeps), which
they pass in. It imports only :mod:`hexrag.domain`, so any adapter package may use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields as dataclass_fields
from typing import Any

import numpy as np

from hexrag.domain.records import VectorRecord, new_vector_record

__all__ = ["RECORD_FIELDS", "record_from_row"]

#: The record fields stored under their own name (besides ``id``, ``vector``, ``created_at``
#: and ``metadata``).
RECORD_FIELDS: tuple[str, ...] = (
    "entity_name", "src_id", "tgt_id", "content", "source_id", "file_path", "full_doc_id",
)


def record_from_row(
    row: Mapping[str, Any],
    vector: np.ndarray | None = None,
    *,
    fields: Sequence[str] = RECORD_FIELDS,
    **given: Any,
) -> VectorRecord:
    """The record of ``row``: ``id``, each of ``fields`` read by name (the others ``None``),
    ``created_at`` as an int (``None`` stays ``None``) and ``vector``; a value in ``given``
    (an encoded ``source_id``, ``metadata``...) replaces the row's."""
    get = row.get
    values: dict[str, Any] = {name: get(name) for name in fields}
    created = get("created_at")
    values["created_at"] = int(created) if created is not None else None
    if given:
        values.update(given)
    unknown = values.keys() - _SETTABLE
    if unknown:
        raise TypeError(f"VectorRecord has no field {sorted(unknown)[0]!r}")
    v = values.get
    metadata = v("metadata")
    return new_vector_record(
        str(row["id"]),
        vector,
        v("entity_name"),
        v("src_id"),
        v("tgt_id"),
        v("content"),
        v("source_id"),
        v("file_path"),
        v("full_doc_id"),
        values["created_at"],
        {} if metadata is None and "metadata" not in values else metadata,
        v("row_vector"),
    )


#: The fields a row or ``given`` may set (``id`` and ``vector`` come as arguments).
_SETTABLE = frozenset(f.name for f in dataclass_fields(VectorRecord)) - {"id", "vector"}
