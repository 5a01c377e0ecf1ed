"""LightRAG 1.5.7's own Milvus layout (``MilvusVectorDBStorage``), read and written in place.

A LightRAG deployment on Milvus keeps one collection per vector namespace, named
``[<workspace>_]<namespace>[_<model>_<dim>d]`` (``entities``, ``relationships``, ``chunks``;
the model suffix is LightRAG's: ``re.sub('[^a-zA-Z0-9_]', '_', model_name.lower())`` +
``_<dim>d``), with explicit fields and dynamic fields enabled:

==================  ======================================================================
field               content
==================  ======================================================================
``id``              VARCHAR(64), primary key: LightRAG's ``ent-``/``rel-``/chunk ids
``vector``          FLOAT_VECTOR(dim), COSINE (LightRAG's default index: ``AUTOINDEX``)
``created_at``      INT64 (epoch seconds; not nullable)
entities            ``entity_name``, ``content``, ``source_id`` (``<SEP>``-joined chunk ids),
                    ``file_path``
relationships       ``src_id``, ``tgt_id``, ``content``, ``source_id``, ``file_path``
chunks              ``full_doc_id``, ``content``, ``file_path``
==================  ======================================================================

Searches are **LightRAG's own call** (``search(limit=top_k, radius=threshold)`` with its
search parameters): Milvus keeps scores strictly above the threshold and orders them, so hits,
order and ties are LightRAG's on the same server. Scope (hexrag's addition) is read from
``file_path`` / ``full_doc_id`` (:func:`hexrag.core.scope.scope_values`): a scoped search
widens the same call until ``top_k`` admitted rows are found or the rows run out (Milvus
filters cannot parse LightRAG's encoded ``file_path``, and no user value ever reaches a filter
expression: ids are escaped by :mod:`hexrag.adapters.milvus._filter`).

Writes produce LightRAG's rows (its fields, ``created_at`` always set, ``source_id`` joined with
``<SEP>``), so LightRAG 1.5.7 reads what hexrag writes. A missing collection is created with
LightRAG's schema and index, so a new deployment can be a migration target.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hexrag.adapters._vector_lightrag import lightrag_traits
from hexrag.adapters.milvus._convert import vector_of, vectors_by_id
from hexrag.adapters.milvus._filter import ids_filter, quote_string
from hexrag.adapters.milvus.index import MAX_LIMIT, MilvusVectorIndex
from hexrag.core.scope import prefilter_match, scope_values
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import GRAPH_FIELD_SEP, VectorHit, VectorNamespace, VectorRecord
from hexrag.domain.scope import QueryScope
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit
from hexrag.ports.vector_index import VectorIndexTraits

if TYPE_CHECKING:
    from pymilvus import MilvusClient

__all__ = ["LightRAGMilvusVectorIndex", "lightrag_collection_name"]

#: LightRAG's ``meta_fields`` per namespace (``lightrag.py``), plus ``created_at``.
LAYOUT_FIELDS: dict[str, tuple[str, ...]] = {
    "entities": ("entity_name", "content", "source_id", "file_path"),
    "relationships": ("src_id", "tgt_id", "content", "source_id", "file_path"),
    "chunks": ("full_doc_id", "content", "file_path"),
}
#: LightRAG's VARCHAR limits (``_get_varchar_field_limits_for_namespace``).
_VARCHAR_LIMITS = {
    "id": 64,
    "entity_name": 512,
    "src_id": 512,
    "tgt_id": 512,
    "full_doc_id": 64,
    "content": 65535,
    "source_id": 65535,
    "file_path": 32768,
}
_WORKSPACE_RE = re.compile(r"^[A-Za-z0-9_]*$")


def lightrag_collection_name(
    namespace: str, *, workspace: str = "", model_name: str | None = None, dim: int
) -> str:
    """The collection LightRAG 1.5.7's ``MilvusVectorDBStorage`` uses for ``namespace``."""
    base = f"{workspace}_{namespace}" if workspace else namespace
    if not model_name or not model_name.strip():
        return base
    safe = re.sub(r"[^a-zA-Z0-9_]", "_", model_name.strip().lower())
    return f"{base}_{safe}_{dim}d"


class LightRAGMilvusVectorIndex(MilvusVectorIndex):
    """A :class:`~hexrag.ports.VectorIndex` on one of LightRAG's Milvus collections.

    Construct with :meth:`open` (a ready ``MilvusClient``) or :meth:`open_uri`. Client
    handling, worker threads and error translation are :class:`MilvusVectorIndex`'s.
    """

    @classmethod
    def open(
        cls,
        client: MilvusClient,
        *,
        namespace: VectorNamespace,
        dim: int,
        workspace: str = "",
        model_name: str | None = None,
        cosine_threshold: float = 0.2,
        timeout: float | None = 30.0,
    ) -> LightRAGMilvusVectorIndex:
        """The index of ``namespace`` in the LightRAG deployment ``client`` reaches."""
        index = cls(
            client,
            collection=_collection(namespace, workspace, model_name, dim),
            namespace=namespace,
            dim=dim,
            cosine_threshold=cosine_threshold,
            index_type="AUTOINDEX",
            timeout=timeout,
        )
        return index

    @classmethod
    def open_uri(  # type: ignore[override]
        cls,
        uri: str,
        *,
        namespace: VectorNamespace,
        dim: int,
        workspace: str = "",
        model_name: str | None = None,
        cosine_threshold: float = 0.2,
        timeout: float | None = 30.0,
        user: str | None = None,
        password: str | None = None,
    ) -> LightRAGMilvusVectorIndex:
        """As :meth:`open`, on a client for ``uri`` (a Milvus Lite file or a server URL),
        connected lazily; :meth:`close` closes it."""
        index = cls.from_uri(
            uri,
            namespace=namespace,
            dim=dim,
            collection=_collection(namespace, workspace, model_name, dim),
            cosine_threshold=cosine_threshold,
            index_type="AUTOINDEX",
            timeout=timeout,
            user=user,
            password=password,
        )
        assert isinstance(index, LightRAGMilvusVectorIndex)
        return index

    # ------------------------------------------------------------------ layout

    @property
    def traits(self) -> VectorIndexTraits:
        """LightRAG's rules (:class:`~hexrag.ports.vector_index.VectorIndexTraits`): Milvus'
        strict range search and its order among ties, the collection's own fields,
        ``created_at`` stamped with the write time, ``source_id`` stored joined."""
        return lightrag_traits(self._namespace, stamps_created_at=True)

    @property
    def _fields(self) -> tuple[str, ...]:
        return LAYOUT_FIELDS[self._namespace]

    @property
    def _output(self) -> list[str]:
        return ["id", "created_at", *self._fields]

    def _ensure_sync(self, client: MilvusClient) -> None:
        timeout = self._timeout
        if client.has_collection(self._collection, timeout=timeout):
            info = client.describe_collection(self._collection, timeout=timeout)
            fields = {f.get("name"): f for f in info.get("fields", [])}
            missing = [f for f in ("id", "vector", *self._fields) if f not in fields]
            if missing:
                raise ConfigurationError(
                    f"Milvus collection {self._collection!r} lacks LightRAG's field(s) {missing}: "
                    "it is not a LightRAG 1.5.7 collection of this namespace"
                )
            stored = (fields["vector"].get("params") or {}).get("dim")
            if stored is not None and int(stored) != self._dim:
                raise ConfigurationError(
                    f"Milvus collection {self._collection!r} stores vectors of dim {stored}, "
                    f"the embedder makes {self._dim}; check the embedding model"
                )
        else:
            client.create_collection(
                self._collection, schema=self._lightrag_schema(), timeout=timeout
            )
            index = client.prepare_index_params()
            index.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="COSINE")
            client.create_index(self._collection, index, timeout=timeout, sync=False)
        client.load_collection(self._collection, timeout=timeout)

    def _lightrag_schema(self) -> Any:
        from pymilvus import DataType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self._dim)
        schema.add_field("created_at", DataType.INT64)
        for name in self._fields:
            schema.add_field(
                name, DataType.VARCHAR, max_length=_VARCHAR_LIMITS[name], nullable=True
            )
        return schema

    def _record(self, row: Mapping[str, Any], *, with_vector: bool) -> VectorRecord:
        vector = None
        if with_vector and row.get("vector") is not None:
            vector = np.asarray(row["vector"], dtype=np.float32)
        created = row.get("created_at")
        return VectorRecord(
            id=row["id"],
            vector=vector,
            entity_name=row.get("entity_name"),
            src_id=row.get("src_id"),
            tgt_id=row.get("tgt_id"),
            content=row.get("content"),
            source_id=row.get("source_id"),
            file_path=row.get("file_path"),
            full_doc_id=row.get("full_doc_id"),
            created_at=int(created) if created is not None else None,
        )

    def _row(self, record: VectorRecord, now: int) -> dict[str, Any]:
        rid = record.id
        if not isinstance(rid, str) or not rid:
            raise ConfigurationError(f"record id must be a non-empty string, got {rid!r}")
        row: dict[str, Any] = {
            "id": rid,
            "vector": vector_of(record.vector, self._dim, what=f"record {rid!r}").tolist(),
            "created_at": record.created_at if record.created_at is not None else now,
        }
        for name in self._fields:
            value: Any = getattr(record, name)
            if name == "source_id" and isinstance(value, (list, tuple)):
                value = GRAPH_FIELD_SEP.join(map(str, value))
            if value is not None and not isinstance(value, str):
                value = str(value)
            if value is not None and len(value.encode("utf-8")) > _VARCHAR_LIMITS[name]:
                raise ConfigurationError(
                    f"record {rid!r}: {name} is longer than LightRAG's Milvus field "
                    f"({_VARCHAR_LIMITS[name]} bytes)"
                )
            row[name] = value
        if len(rid.encode("utf-8")) > _VARCHAR_LIMITS["id"]:
            raise ConfigurationError(f"record id {rid!r} is longer than LightRAG's 64 bytes")
        return row

    # ------------------------------------------------------------------ port

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace LightRAG rows by id (one Milvus call)."""
        now = int(time.time())
        rows = {r.id: self._row(r, now) for r in records}
        if not rows:
            return
        await self._ensure()
        data = list(rows.values())
        await self._call(
            "upsert", lambda c: c.upsert(self._collection, data, timeout=self._timeout)
        )

    async def query(
        self,
        vector: np.ndarray | Sequence[float],
        top_k: int,
        *,
        scope: QueryScope | None = None,
    ) -> list[VectorHit]:
        """LightRAG's search; with a scope, widened until ``top_k`` admitted rows are found."""
        q = vector_of(vector, self._dim, what="query vector")
        if top_k < 1:
            return []
        await self._ensure()
        scoped = scope is not None and not scope.is_empty
        limit = min(top_k, MAX_LIMIT)
        while True:
            rows = await self._lightrag_search(q, limit)
            hits = [
                VectorHit(record=self._record(r, with_vector=False), score=float(r["distance"]))
                for r in rows
            ]
            if scoped:
                assert scope is not None
                hits = [
                    h
                    for h in hits
                    if prefilter_match(
                        scope, scope_values({}, h.record.file_path, h.record.full_doc_id)
                    )
                ]
            if not scoped or len(hits) >= top_k or len(rows) < limit or limit >= MAX_LIMIT:
                return hits[:top_k]
            limit = min(limit * 4, MAX_LIMIT)

    async def _lightrag_search(self, q: np.ndarray, limit: int) -> list[dict[str, Any]]:
        # LightRAG's MilvusVectorDBStorage.query: its search params (none for AUTOINDEX) and
        # radius = cosine_better_than_threshold
        params: dict[str, Any] = {"radius": self._threshold}
        if self._index_type == "HNSW":
            params["ef"] = 200
        output = self._output

        def run(client: MilvusClient) -> list[dict[str, Any]]:
            result = client.search(
                self._collection,
                data=[q.tolist()],
                limit=limit,
                output_fields=output,
                search_params={"metric_type": "COSINE", "params": params},
                timeout=self._timeout,
            )
            hits = result[0] if result else []
            return [{**hit["entity"], "id": hit["id"], "distance": hit["distance"]} for hit in hits]

        return await self._call("search", run)

    async def _rows(self, ids: Sequence[str], fields: list[str], action: str) -> dict[str, Any]:
        await self._ensure()
        expr = ids_filter(ids)
        rows = await self._call(
            action,
            lambda c: c.query(
                self._collection,
                filter=expr,
                output_fields=fields,
                timeout=self._timeout,
                consistency_level="Strong",
            ),
        )
        return {row["id"]: dict(row) for row in rows}

    async def get(self, ids: Sequence[str]) -> list[VectorRecord | None]:
        """Records (with vectors) in request order, ``None`` for a missing id; one call."""
        if not ids:
            return []
        found = await self._rows(ids, [*self._output, "vector"], "get")
        return [self._record(found[i], with_vector=True) if i in found else None for i in ids]

    async def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the ids found; one call."""
        if not ids:
            return {}
        await self._ensure()
        expr = ids_filter(ids)
        return await self._call(
            "get_vectors",
            lambda c: vectors_by_id(
                c.query(self._collection, filter=expr, output_fields=["id", "vector"],
                        timeout=self._timeout, consistency_level="Strong"),
                ids,
            ),
        )

    async def scan_records(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[VectorRecord]:
        """A page of records with their vectors, by id (iterator-mode query, as the base)."""
        check_scan_limit(limit)
        await self._ensure()
        if self._collection_id is None:
            info = await self._call(
                "describe_collection",
                lambda c: c.describe_collection(self._collection, timeout=self._timeout),
            )
            self._collection_id = info["collection_id"]
        expr = "" if cursor is None else f"id > {quote_string(cursor)}"
        collection_id = self._collection_id
        fields = [*self._output, "vector"]
        rows = await self._call(
            "scan",
            lambda c: c.query(
                self._collection,
                filter=expr,
                output_fields=fields,
                limit=limit,
                timeout=self._timeout,
                consistency_level="Strong",
                iterator="True",
                reduce_stop_for_best="True",
                collection_id=collection_id,
            ),
        )
        items = [self._record(dict(row), with_vector=True) for row in rows]
        return Page(items, items[-1].id if len(items) == limit else None)

    def __repr__(self) -> str:
        return (
            f"LightRAGMilvusVectorIndex(collection={self._collection!r}, "
            f"namespace={self._namespace!r}, dim={self._dim}, where={self._where!r})"
        )


def _collection(namespace: str, workspace: str, model_name: str | None, dim: int) -> str:
    if not isinstance(workspace, str) or not _WORKSPACE_RE.match(workspace):
        raise ConfigurationError(
            f"LightRAG workspace {workspace!r} is invalid: use letters, digits and '_'"
        )
    return lightrag_collection_name(namespace, workspace=workspace, model_name=model_name, dim=dim)


def open_lightrag_milvus_indexes(
    uri: str,
    *,
    dim: int,
    workspace: str = "",
    model_name: str | None = None,
    cosine_threshold: float = 0.2,
    timeout: float | None = 30.0,
    user: str | None = None,
    password: str | None = None,
) -> dict[str, LightRAGMilvusVectorIndex]:
    """The three vector indexes of a LightRAG Milvus deployment (one client each, lazy)."""
    return {
        ns: LightRAGMilvusVectorIndex.open_uri(
            uri,
            namespace=ns,  # type: ignore[arg-type]
            dim=dim,
            workspace=workspace,
            model_name=model_name,
            cosine_threshold=cosine_threshold,
            timeout=timeout,
            user=user,
            password=password,
        )
        for ns in ("entities", "relationships", "chunks")
    }
