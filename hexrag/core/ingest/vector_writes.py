"""Writing entity and relation vectors: embed the rows' contents in one call, then upsert one
:class:`~hexrag.domain.records.VectorRecord` per row in one call - the step the ingestion and
the document deletion's rebuilds share."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hexrag.domain.records import VectorRecord
from hexrag.ports import Embedder, VectorIndex

__all__ = ["ENTITY_FIELDS", "RELATION_FIELDS", "embed_and_upsert"]

#: the naming fields of an entity vector row and of a relation vector row
ENTITY_FIELDS = ("entity_name",)
RELATION_FIELDS = ("src_id", "tgt_id")


def _no_metadata(_row: Mapping[str, Any]) -> Mapping[str, Any]:
    return {}


async def embed_and_upsert(
    embedder: Embedder,
    index: VectorIndex,
    rows: Sequence[Mapping[str, Any]],
    *,
    fields: tuple[str, ...],
    created_at: int,
    metadata: Callable[[Mapping[str, Any]], Mapping[str, Any]] = _no_metadata,
) -> None:
    """Embed each row's ``content`` and upsert its record: ``id``, ``content``,
    ``source_id``, ``file_path`` and the naming ``fields`` from the row, ``created_at``, and
    ``metadata(row)``. Nothing is sent when there are no rows."""
    if not rows:
        return
    embedded = await embedder.embed([v["content"] for v in rows])
    await index.upsert([
        VectorRecord(id=v["id"], vector=x, content=v["content"], source_id=v["source_id"],
                     file_path=v["file_path"], created_at=created_at, metadata=metadata(v),
                     **{f: v[f] for f in fields})
        for v, x in zip(rows, embedded, strict=True)
    ])
