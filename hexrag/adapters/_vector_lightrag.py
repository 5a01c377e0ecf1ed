"""What LightRAG 1.5.7's vector storages have in common on every backend, said once.

Each backend's LightRAG layout is a strategy inside that backend's adapter (Milvus, Qdrant,
PostgreSQL); this module holds the facts they share: LightRAG's ``meta_fields`` per namespace,
its model suffix on table and collection names, its search rules as declared
:class:`~hexrag.ports.vector_index.VectorIndexTraits`, and how hexrag reads scope from a
LightRAG row (``file_path`` / ``full_doc_id``: there is no metadata to filter on). It imports
no driver and no other adapter package.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from hexrag.core.scope import prefilter_match, scope_values
from hexrag.domain.records import GRAPH_FIELD_SEP, VectorHit
from hexrag.domain.scope import QueryScope
from hexrag.ports.vector_index import VectorIndexTraits

__all__ = [
    "LIGHTRAG_FIELDS",
    "joined_source_id",
    "lightrag_model_suffix",
    "lightrag_traits",
    "scoped_hits",
    "widened_hits",
]

#: LightRAG's ``meta_fields`` per vector namespace (``lightrag.py``).
LIGHTRAG_FIELDS: dict[str, tuple[str, ...]] = {
    "entities": ("entity_name", "content", "source_id", "file_path"),
    "relationships": ("src_id", "tgt_id", "content", "source_id", "file_path"),
    "chunks": ("full_doc_id", "content", "file_path"),
}


def lightrag_model_suffix(model_name: str | None, dim: int) -> str:
    """LightRAG's ``_<model>_<dim>d`` name suffix (``""`` without a model name)."""
    if not model_name or not model_name.strip():
        return ""
    safe = re.sub(r"[^a-zA-Z0-9_]", "_", model_name.strip().lower())
    return f"_{safe}_{dim}d"


def lightrag_traits(
    namespace: str,
    *,
    fields: Sequence[str] | None = None,
    metadata_keys: Sequence[str] = (),
    stamps_created_at: bool,
    keeps_first_created_at: bool = False,
) -> VectorIndexTraits:
    """The declared rules of a LightRAG layout: strict threshold, the backend's tie order,
    the namespace's fields (``created_at`` included), ``source_id`` read back joined."""
    kept = LIGHTRAG_FIELDS[namespace] if fields is None else tuple(fields)
    return VectorIndexTraits(
        threshold="strict",
        ties="backend",
        fields=frozenset((*kept, "created_at")),
        metadata_keys=frozenset(metadata_keys),
        source_id_as_written=False,
        stamps_created_at=stamps_created_at,
        keeps_first_created_at=keeps_first_created_at,
    )


def joined_source_id(value: Any) -> Any:
    """``source_id`` as LightRAG stores it: a list or tuple is ``<SEP>``-joined."""
    if isinstance(value, (list, tuple)):
        return GRAPH_FIELD_SEP.join(map(str, value))
    return value


def scoped_hits(hits: list[VectorHit], scope: QueryScope | None) -> list[VectorHit]:
    """``hits`` admitted by ``scope`` (all of them without one), in order; a LightRAG row's
    scope is read from its ``file_path`` and ``full_doc_id`` (LightRAG keeps no scope
    metadata)."""
    if scope is None or scope.is_empty:
        return hits
    return [
        h for h in hits
        if prefilter_match(scope, scope_values({}, h.record.file_path, h.record.full_doc_id))
    ]


async def widened_hits(
    search: Callable[[int], Awaitable[list[VectorHit]]],
    top_k: int,
    scope: QueryScope | None,
    max_limit: int,
) -> list[VectorHit]:
    """The first ``top_k`` hits of ``search(limit)`` (the backend's own call, one hit per row
    it returns) admitted by ``scope``: a scope widens the call (x4, at most ``max_limit``)
    until ``top_k`` admitted hits are found or the rows run out."""
    scoped = scope is not None and not scope.is_empty
    limit = min(top_k, max_limit)
    while True:
        hits = await search(limit)
        kept = scoped_hits(hits, scope)
        if not scoped or len(kept) >= top_k or len(hits) < limit or limit >= max_limit:
            return kept[:top_k]
        limit = min(limit * 4, max_limit)
