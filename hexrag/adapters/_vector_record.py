"""A stored vector row back as a :class:`~hexrag.domain.records.VectorRecord`, written once.

Every vector backend stores a record as a row (a Milvus entity, a PostgreSQL row, a Qdrant
payload) whose columns carry the record's field names; the adapters differ only in a few
fields (``source_id`` and ``metadata`` encodings, the fields a LightRAG layout keeps), which
they pass in. It imports only :mod:`hexrag.domain`, so any adapter package may use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hexrag.domain.records import VectorRecord

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
    values: dict[str, Any] = {name: row.get(name) for name in fields}
    created = row.get("created_at")
    values["created_at"] = int(created) if created is not None else None
    values.update(given)
    return VectorRecord(id=str(row["id"]), vector=vector, **values)
