"""How records sit in a Qdrant collection: hexrag's layout and LightRAG 1.5.7's.

A layout is a strategy inside :class:`~hexrag.adapters.qdrant.index.QdrantVectorIndex`
(collection naming, point ids, payload <-> record, the filter every call carries, the ranking
rule), not a second family of index classes.

hexrag's layout (:class:`HexragLayout`): one collection per namespace; the payload keeps every
record field as written (``source_id`` in its form, ``metadata`` whole) plus the scope arrays
``scope_product_id`` / ``scope_category_id`` / ``scope_doc_ids``
(:func:`hexrag.core.scope.scope_values`), so a scoped query is a Qdrant payload filter and
``top_k`` counts admitted records. Ranking is the port's: ``score >= threshold``, ties by id.

LightRAG's layout (:class:`LightRAGLayout`, ``QdrantVectorDBStorage`` in
``lightrag/kg/qdrant_impl.py``): collection ``lightrag_vdb_<namespace>[_<model>_<dim>d]``
shared by every workspace; point id ``UUID(sha256(<workspace> + <id>)[:16], version=4)``;
payload ``id``, ``workspace_id`` (``_`` when none), ``created_at`` and the namespace's
``meta_fields``; every call filters on ``workspace_id``. Ranking is LightRAG's own call
(``query_points(limit=top_k, score_threshold=threshold)``), taken as Qdrant answers it.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hexrag.adapters._names import checked_name
from hexrag.adapters._vector_lightrag import (
    LIGHTRAG_FIELDS,
    joined_source_id,
    lightrag_model_suffix,
    lightrag_traits,
)
from hexrag.adapters._vector_record import RECORD_FIELDS, record_from_row
from hexrag.core.scope import scope_values
from hexrag.domain.records import VectorRecord
from hexrag.domain.scope import QueryScope
from hexrag.ports.vector_index import PORT_TRAITS, VectorIndexTraits

__all__ = [
    "LAYOUT_FIELDS",
    "HexragLayout",
    "LightRAGLayout",
    "QdrantLayout",
    "lightrag_collection_name",
    "lightrag_point_id",
]

_RECORD_FIELDS = RECORD_FIELDS
_SCOPE_KEYS = {"product_id": "scope_product_id", "category_id": "scope_category_id",
               "doc_ids": "scope_doc_ids"}
#: LightRAG's ``meta_fields`` per namespace (``lightrag.py``).
LAYOUT_FIELDS = LIGHTRAG_FIELDS
_HEXRAG_POINTS = uuid.UUID("5b3f0c1e-8a57-4d0f-9d4e-6e7a2f1c9b10")
_WORKSPACE_RE = re.compile(r"^[A-Za-z0-9_]*$")


def _models() -> Any:
    from qdrant_client import models

    return models


@dataclass(frozen=True)
class QdrantLayout:
    """The strategy interface (hexrag's layout is the default implementation)."""

    namespace: str

    #: ``True``: the port's ranking (inclusive threshold, ties by id, exact re-scoring);
    #: ``False``: the backend's own call, as a LightRAG deployment ranks.
    exact_ranking = True
    #: ``True``: scope is a Qdrant payload filter; ``False``: filtered from the payload after.
    filters_scope = True

    def traits(self) -> VectorIndexTraits:
        """The rules the index declares (:class:`~hexrag.ports.vector_index.VectorIndexTraits`):
        the port's own."""
        return PORT_TRAITS

    def point_id(self, record_id: str) -> str:
        """The Qdrant point id of a record id."""
        return str(uuid.uuid5(_HEXRAG_POINTS, record_id))

    def base_filter(self) -> Any:
        """The filter every read carries (``None``: the whole collection)."""
        return None

    def scope_filter(self, scope: QueryScope | None) -> Any:
        """The scope pre-filter as typed Qdrant conditions (no string is ever built)."""
        if scope is None or scope.is_empty:
            return self.base_filter()
        models = _models()
        must: list[Any] = []
        for name, admitted in scope.fields().items():
            key = _SCOPE_KEYS[name]
            must.append(models.Filter(should=[
                models.IsEmptyCondition(is_empty=models.PayloadField(key=key)),
                models.FieldCondition(key=key, match=models.MatchAny(any=sorted(admitted))),
            ]))
        return models.Filter(must=must)

    def payload(self, record: VectorRecord, now: int) -> dict[str, Any]:
        """The payload stored for ``record``."""
        out: dict[str, Any] = {"id": record.id, "created_at": record.created_at}
        for name in _RECORD_FIELDS:
            value = getattr(record, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        out["metadata"] = dict(record.metadata)
        for name, values in scope_values(record.metadata, record.file_path,
                                         record.full_doc_id).items():
            out[_SCOPE_KEYS[name]] = sorted(values)
        return out

    def record(self, payload: Mapping[str, Any], vector: np.ndarray | None) -> VectorRecord:
        """The record a stored payload (and vector) holds."""
        return record_from_row(payload, vector, metadata=dict(payload.get("metadata") or {}))

    def create_options(self) -> dict[str, Any]:
        """Extra ``create_collection`` arguments."""
        return {}

    def tenant_field(self) -> str | None:
        """A payload field to index as the tenant key (``None``: none)."""
        return None


class HexragLayout(QdrantLayout):
    """hexrag's own layout (see the module docstring)."""


def lightrag_point_id(record_id: str, workspace: str) -> str:
    """LightRAG's ``compute_mdhash_id_for_qdrant(record_id, prefix=workspace)`` (hex UUID)."""
    digest = hashlib.sha256((workspace + record_id).encode("utf-8")).digest()
    return uuid.UUID(bytes=digest[:16], version=4).hex


def lightrag_collection_name(namespace: str, *, model_name: str | None, dim: int) -> str:
    """The collection LightRAG 1.5.7's ``QdrantVectorDBStorage`` uses for ``namespace``."""
    return f"lightrag_vdb_{namespace}{lightrag_model_suffix(model_name, dim)}"


@dataclass(frozen=True)
class LightRAGLayout(QdrantLayout):
    """LightRAG 1.5.7's layout, one workspace of a shared collection."""

    workspace: str = ""
    exact_ranking = False
    filters_scope = False

    def __post_init__(self) -> None:
        checked_name(
            self.workspace, _WORKSPACE_RE,
            f"LightRAG workspace {str(self.workspace)[:40]!r} is invalid: use letters, "
            "digits and '_'",
        )

    def traits(self) -> VectorIndexTraits:
        """LightRAG's rules: Qdrant's strict ``score_threshold`` and its order among ties,
        the namespace's payload fields, ``created_at`` stamped, ``source_id`` joined."""
        return lightrag_traits(self.namespace, stamps_created_at=True)

    @property
    def effective_workspace(self) -> str:
        """LightRAG's ``effective_workspace``: ``_`` when no workspace is set."""
        return self.workspace or "_"

    def point_id(self, record_id: str) -> str:
        """LightRAG's point id (see :func:`lightrag_point_id`)."""
        return lightrag_point_id(record_id, self.effective_workspace)

    def base_filter(self) -> Any:
        """``workspace_id == <effective workspace>`` (a typed MatchValue)."""
        models = _models()
        return models.Filter(must=[models.FieldCondition(
            key="workspace_id", match=models.MatchValue(value=self.effective_workspace))])

    def scope_filter(self, scope: QueryScope | None) -> Any:
        """The workspace filter only: scope is read from ``file_path`` after the call."""
        return self.base_filter()

    def payload(self, record: VectorRecord, now: int) -> dict[str, Any]:
        """LightRAG's payload: ``id``, ``workspace_id``, ``created_at``, the meta fields."""
        out: dict[str, Any] = {
            "id": record.id,
            "workspace_id": self.effective_workspace,
            "created_at": record.created_at if record.created_at is not None else now,
        }
        for name in LAYOUT_FIELDS[self.namespace]:
            value: Any = getattr(record, name)
            out[name] = joined_source_id(value) if name == "source_id" else value
        return out

    def record(self, payload: Mapping[str, Any], vector: np.ndarray | None) -> VectorRecord:
        """The record of a LightRAG payload (its fields only)."""
        return record_from_row(payload, vector, fields=LAYOUT_FIELDS[self.namespace])

    def create_options(self) -> dict[str, Any]:
        """LightRAG's ``hnsw_config`` (``payload_m=16, m=0``: per-tenant graphs)."""
        return {"hnsw_config": _models().HnswConfigDiff(payload_m=16, m=0)}

    def tenant_field(self) -> str | None:
        """``workspace_id`` (LightRAG's keyword index with ``is_tenant``)."""
        return "workspace_id"
