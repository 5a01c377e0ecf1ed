"""LightRAG 1.5.7's own PostgreSQL layout, read in place (no copying).

A LightRAG deployment on PostgreSQL (``PGVectorStorage``, ``PGKVStorage``,
``PGTableGraphStorage``) keeps, per ``workspace`` column:

=============================================  ==============================================
table                                          content
=============================================  ==============================================
``lightrag_vdb_entity[_<model>_<dim>d]``       entity vectors: ``id``, ``entity_name``,
                                               ``content``, ``content_vector``, ``chunk_ids``
                                               (``varchar[]``), ``file_path``, ``create_time``
``lightrag_vdb_relation[_<model>_<dim>d]``     relation vectors: ``source_id``/``target_id``
                                               (the entity names), the same other columns
``lightrag_vdb_chunks[_<model>_<dim>d]``       chunk vectors: ``full_doc_id``, ``content``...
``lightrag_doc_chunks``                        the text chunks (``heading`` JSONB, ...)
``lightrag_graph_nodes`` / ``_edges``          the graph: ``id`` / ``src_id``, ``tgt_id``
                                               (one edge per pair, ``src_id < tgt_id``) and a
                                               JSONB ``properties``
=============================================  ==============================================

The model suffix is LightRAG's (``re.sub('[^a-zA-Z0-9_]', '_', model_name.lower())`` +
``_<dim>d``); pass ``model_name`` as LightRAG's ``EmbeddingFunc`` had it (``None`` for the
un-suffixed tables). Searches run **LightRAG's own SQL** (``content_vector <=> $q < 1 -
threshold ORDER BY content_vector <=> $q LIMIT top_k``: the strict threshold, pgvector's order,
the same plan), so hits, order and ties are LightRAG's. Graph reads return edges in LightRAG's
order (neighbours sorted by name, as ``PGTableGraphStorage.get_nodes_edges_batch`` sorts them);
a relation's id is :func:`hexrag.core.ids.relation_id` of its pair, LightRAG's
relationship-vector id. Scope (hexrag's addition) is read from ``file_path``: a scoped search
widens its LightRAG query until ``top_k`` admitted rows are found or the rows run out.

Writes use LightRAG's own statements (its upsert templates, canonical ``src < tgt`` edges,
merged endpoint nodes), so LightRAG 1.5.7 reads what hexrag writes: a migration target may be a
LightRAG deployment. The tables must exist (LightRAG creates them when it initialises its
storages). The graph holds one edge per entity pair: several relations of one pair collapse to
the last one written, as in LightRAG.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hexrag.adapters.postgres import lightrag_graph_sql as _gsql
from hexrag.adapters.postgres._base import PgAdapter
from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres._sql import quote_ident
from hexrag.adapters.postgres.lightrag_rows import CHUNK_COLUMNS, chunk_from_row
from hexrag.core.errors import ConfigurationError, InvalidQuery
from hexrag.core.ids import relation_id
from hexrag.core.model import (
    GRAPH_FIELD_SEP,
    Chunk,
    Entity,
    QueryScope,
    Relation,
    VectorHit,
    VectorNamespace,
    VectorRecord,
)
from hexrag.core.scope import prefilter_match, scope_values
from hexrag.core.source_ids import parse_source_ids
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

if TYPE_CHECKING:
    import asyncpg

__all__ = [
    "LightRAGPgCache",
    "LightRAGPgChunkStore",
    "LightRAGPgGraphStore",
    "LightRAGPgVectorIndex",
    "lightrag_vector_table",
    "open_lightrag_pg_stores",
]

_BASE_TABLES = {
    "entities": "lightrag_vdb_entity",
    "relationships": "lightrag_vdb_relation",
    "chunks": "lightrag_vdb_chunks",
}
_NAMESPACE = "chunk_entity_relation"  # PGTableGraphStorage's default graph namespace


def _timestamp(epoch: Any) -> _dt.datetime | None:
    """LightRAG's ``TIMESTAMP(0)`` columns (UTC, no zone) from epoch seconds; ``None`` stays
    NULL (read back as ``None``, as it was given)."""
    if isinstance(epoch, (int, float)) and not isinstance(epoch, bool):
        return _dt.datetime.fromtimestamp(int(epoch), _dt.UTC).replace(tzinfo=None)
    return None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _vec(value: Any) -> np.ndarray:
    """A ``vector`` column value as float32: pgvector's binary form (``vector_send``: int16
    dimension, int16 unused, big-endian float4 values), its codec object, a list or text."""
    if isinstance(value, bytes | bytearray | memoryview):
        return np.frombuffer(value, dtype=">f4", offset=4).astype(np.float32)
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    elif isinstance(value, str):
        value = json.loads(value)
    return np.asarray(value, dtype=np.float32)


def _vecs(values: list[Any]) -> list[np.ndarray]:
    """:func:`_vec` of many ``vector_send`` values at once (one decode when all have one
    dimension: each 4-byte header takes one float4 slot of the joined buffer)."""
    if not values:
        return []
    if all(isinstance(v, bytes) for v in values) and len({len(v) for v in values}) == 1:
        width = len(values[0]) // 4
        matrix = np.frombuffer(b"".join(values), dtype=">f4").reshape(len(values), width)
        return list(matrix[:, 1:].astype(np.float32))
    return [_vec(v) for v in values]


def _vector_text(vec: np.ndarray) -> str:
    """pgvector's text form of a float32 vector (exact: ``repr`` of each float32 value)."""
    return "[" + ",".join(map(repr, vec.astype(np.float32).tolist())) + "]"


def lightrag_vector_table(namespace: str, model_name: str | None, dim: int) -> str:
    """LightRAG's table name of a vector namespace (its model suffix rule)."""
    base = _BASE_TABLES[namespace]
    if not model_name or not model_name.strip():
        return base
    safe = re.sub(r"[^a-zA-Z0-9_]", "_", model_name.strip().lower())
    return f"{base}_{safe}_{dim}d"


class _LightRAGPg(PgAdapter):
    """Common plumbing: LightRAG's tables already exist (never created here)."""

    _kind: ClassVar[str] = "LightRAG layout"

    def __init__(self, pool: asyncpg.Pool, *, workspace: str, timeout: float | None) -> None:
        super().__init__(pool, table_prefix="lightrag", timeout=timeout, create_tables=False)
        if not isinstance(workspace, str) or not workspace:
            raise ConfigurationError("a LightRAG workspace must be a non-empty string")
        self._workspace = workspace

    def _ddl(self) -> str:
        return ""

    @property
    def workspace(self) -> str:
        """LightRAG's workspace (the ``workspace`` column)."""
        return self._workspace


class LightRAGPgVectorIndex(_LightRAGPg):
    """One of LightRAG's ``PGVectorStorage`` tables as a :class:`~hexrag.ports.VectorIndex`."""

    _kind = "LightRAG vector table"

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        namespace: VectorNamespace,
        dim: int,
        workspace: str,
        model_name: str | None,
        cosine_threshold: float = 0.2,
        timeout: float | None = None,
    ) -> None:
        super().__init__(pool, workspace=workspace, timeout=timeout)
        if namespace not in _BASE_TABLES:
            raise ConfigurationError(f"unknown vector namespace {namespace!r}")
        self._namespace: VectorNamespace = namespace
        self._dim = int(dim)
        self._threshold = float(cosine_threshold)
        self._name = lightrag_vector_table(namespace, model_name, self._dim)
        self._table = quote_ident(self._name)
        extra = {
            "entities": "entity_name, NULL::text AS src_id, NULL::text AS tgt_id, "
            "NULL::text AS full_doc_id",
            "relationships": "NULL::text AS entity_name, source_id AS src_id, "
            "target_id AS tgt_id, NULL::text AS full_doc_id",
            "chunks": "NULL::text AS entity_name, NULL::text AS src_id, NULL::text AS tgt_id, "
            "full_doc_id",
        }[namespace]
        chunk_ids = "NULL::text[]" if namespace == "chunks" else "chunk_ids"
        order = (
            "tokens, chunk_order_index"
            if namespace == "chunks"
            else "NULL::int AS tokens, NULL::int AS chunk_order_index"
        )
        self._columns = (
            f"id, {extra}, content, file_path, {chunk_ids} AS chunk_ids, {order}, "
            "EXTRACT(EPOCH FROM create_time)::BIGINT AS created_at"
        )
        self._exact = False

    def set_exact_search(self, exact: bool) -> bool:
        """Search exactly (never LightRAG's HNSW index: every row of the workspace scored,
        ties by id) while ``exact`` is true, else with LightRAG's own SQL
        (:class:`~hexrag.ports.ExactSearchSwitch`); returns the previous setting."""
        previous, self._exact = self._exact, bool(exact)
        return previous

    @property
    def namespace(self) -> str:
        """``"entities"``, ``"relationships"`` or ``"chunks"``."""
        return self._namespace

    @property
    def dim(self) -> int:
        """The embedding dimension."""
        return self._dim

    @property
    def cosine_threshold(self) -> float:
        """LightRAG's ``cosine_better_than_threshold`` (strict: ``score > threshold``)."""
        return self._threshold

    @property
    def table(self) -> str:
        """The table name."""
        return self._name

    def _record(self, row: Mapping[str, Any], *, vector: Any = None) -> VectorRecord:
        ids = row.get("chunk_ids")
        source_id = GRAPH_FIELD_SEP.join(ids) if ids else None
        metadata = {
            k: row.get(k) for k in ("tokens", "chunk_order_index") if row.get(k) is not None
        }
        return VectorRecord(
            id=row["id"],
            vector=vector,
            entity_name=row.get("entity_name"),
            src_id=row.get("src_id"),
            tgt_id=row.get("tgt_id"),
            content=row.get("content"),
            source_id=source_id,
            file_path=row.get("file_path"),
            full_doc_id=row.get("full_doc_id"),
            created_at=row.get("created_at"),
            metadata=metadata,
        )

    async def _vector_fetch(self, action: str, sql: str, *args: Any) -> list[Any]:
        # stored vectors are read in pgvector's binary form (vector_send: no float-to-text on
        # the server, one numpy decode here) and query vectors sent in its text form: no
        # per-connection codec registration (a type lookup, one more round trip)
        return await self._fetch(action, sql, *args)

    async def query(
        self,
        vector: np.ndarray | Sequence[float],
        top_k: int,
        *,
        scope: QueryScope | None = None,
    ) -> list[VectorHit]:
        """LightRAG's search (its SQL); with a scope, widened until ``top_k`` rows pass."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self._dim:
            raise ConfigurationError(
                f"{self._name}: query vector has length {q.shape[0]}, expected {self._dim}"
            )
        if top_k <= 0:
            return []
        sql = f"""SELECT {self._columns}, content_vector <=> $4::text::vector AS distance
                  FROM {self._table}
                  WHERE workspace = $1 AND content_vector <=> $4::text::vector < $2
                  ORDER BY content_vector <=> $4::text::vector
                  LIMIT $3"""
        if self._exact:
            # cosine_distance() (the function, not the operator) cannot use the HNSW index
            sql = f"""SELECT * FROM (
                          SELECT {self._columns},
                                 cosine_distance(content_vector, $4::text::vector) AS distance
                          FROM {self._table} WHERE workspace = $1 OFFSET 0) AS scored
                      WHERE distance < $2 ORDER BY distance, id LIMIT $3"""
        limit = top_k
        scoped = scope is not None and not scope.is_empty
        while True:
            rows = await self._vector_fetch(
                f"searching {self._name}", sql, self._workspace, 1 - self._threshold, limit,
                _vector_text(q),
            )
            hits = [
                VectorHit(record=self._record(r), score=1.0 - float(r["distance"])) for r in rows
            ]
            if scoped:
                hits = [
                    h
                    for h in hits
                    if prefilter_match(
                        scope, scope_values({}, h.record.file_path, h.record.full_doc_id)
                    )
                ]
            if not scoped or len(hits) >= top_k or len(rows) < limit:
                return hits[:top_k]
            limit *= 4

    async def get(self, ids: Sequence[str]) -> list[VectorRecord | None]:
        """Records (with vectors) in request order; ``None`` for a missing id."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = await self._vector_fetch(
            f"reading {self._name}",
            f"SELECT {self._columns}, vector_send(content_vector) AS content_vector "
            f"FROM {self._table} WHERE workspace = $1 AND id = ANY($2::text[])",
            self._workspace,
            wanted,
        )
        found = {
            r["id"]: self._record(r, vector=_vec(r["content_vector"]))
            for r in rows
        }
        return [found.get(i) for i in ids]

    async def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored float32 vectors of the ids found (as ``get_vectors_by_ids`` reads them)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = await self._vector_fetch(
            f"reading vectors of {self._name}",
            f"SELECT id, vector_send(content_vector) AS content_vector FROM {self._table} "
            "WHERE workspace = $1 AND id = ANY($2::text[])",
            self._workspace,
            wanted,
        )
        found = dict(zip((r["id"] for r in rows), _vecs([r["content_vector"] for r in rows]),
                         strict=True))
        return {i: found[i] for i in wanted if i in found}

    async def count(self) -> int:
        """Rows of this workspace."""
        return int(
            await self._fetchval(
                f"counting {self._name}",
                f"SELECT count(*) FROM {self._table} WHERE workspace = $1",
                self._workspace,
            )
        )

    async def scan_records(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[VectorRecord]:
        """A page of records with their vectors, by id (keyset on the primary key)."""
        check_scan_limit(limit)
        rows = await self._vector_fetch(
            f"scanning {self._name}",
            f"""SELECT {self._columns}, vector_send(content_vector) AS content_vector
                FROM {self._table} WHERE workspace = $1 AND ($2::text IS NULL OR id > $2::text)
                ORDER BY id LIMIT $3""",
            self._workspace,
            cursor,
            limit,
        )
        items = [
            self._record(r, vector=_vec(r["content_vector"]))
            for r in rows
        ]
        return Page(items, items[-1].id if len(items) == limit else None)

    def _row(self, r: VectorRecord) -> tuple[Any, ...]:
        if r.vector is None:
            raise ConfigurationError(f"{self._name}: record {r.id!r} has no vector")
        vec = np.asarray(r.vector, dtype=np.float32).reshape(-1)
        if vec.shape[0] != self._dim or not np.all(np.isfinite(vec)):
            raise ConfigurationError(
                f"{self._name}: record {r.id!r} needs {self._dim} finite vector values"
            )
        created = _timestamp(r.created_at)
        chunk_ids = parse_source_ids(r.source_id)
        if self._namespace == "entities":
            return (self._workspace, r.id, r.entity_name, r.content, vec, chunk_ids,
                    r.file_path, created, created)
        if self._namespace == "relationships":
            return (self._workspace, r.id, r.src_id, r.tgt_id, r.content, vec, chunk_ids,
                    r.file_path, created, created)
        meta = r.metadata or {}
        return (self._workspace, r.id, _int_or_none(meta.get("tokens")),
                _int_or_none(meta.get("chunk_order_index")), r.full_doc_id, r.content, vec,
                r.file_path, created, created)

    def _upsert_sql(self) -> str:
        t = self._table
        if self._namespace == "entities":
            return f"""INSERT INTO {t} (workspace, id, entity_name, content, content_vector,
                    chunk_ids, file_path, create_time, update_time)
                VALUES ($1, $2, $3, $4, $5, $6::varchar[], $7, $8, $9)
                ON CONFLICT (workspace, id) DO UPDATE SET entity_name = EXCLUDED.entity_name,
                    content = EXCLUDED.content, content_vector = EXCLUDED.content_vector,
                    chunk_ids = EXCLUDED.chunk_ids, file_path = EXCLUDED.file_path,
                    update_time = EXCLUDED.update_time"""
        if self._namespace == "relationships":
            return f"""INSERT INTO {t} (workspace, id, source_id, target_id, content,
                    content_vector, chunk_ids, file_path, create_time, update_time)
                VALUES ($1, $2, $3, $4, $5, $6, $7::varchar[], $8, $9, $10)
                ON CONFLICT (workspace, id) DO UPDATE SET source_id = EXCLUDED.source_id,
                    target_id = EXCLUDED.target_id, content = EXCLUDED.content,
                    content_vector = EXCLUDED.content_vector, chunk_ids = EXCLUDED.chunk_ids,
                    file_path = EXCLUDED.file_path, update_time = EXCLUDED.update_time"""
        return f"""INSERT INTO {t} (workspace, id, tokens, chunk_order_index, full_doc_id,
                content, content_vector, file_path, create_time, update_time)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (workspace, id) DO UPDATE SET tokens = EXCLUDED.tokens,
                chunk_order_index = EXCLUDED.chunk_order_index,
                full_doc_id = EXCLUDED.full_doc_id, content = EXCLUDED.content,
                content_vector = EXCLUDED.content_vector, file_path = EXCLUDED.file_path,
                update_time = EXCLUDED.update_time"""

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace rows with LightRAG's own upsert statement (one pipelined batch,
        one transaction; the last write of an id wins)."""
        last = {r.id: r for r in records}
        if not last:
            return
        rows = [self._row(r) for r in last.values()]
        from pgvector.asyncpg import register_vector

        with translate_errors(f"writing {len(rows)} rows into {self._name}"):
            async with self._pool.acquire(timeout=self._timeout) as conn, conn.transaction():
                await register_vector(conn)
                await conn.executemany(self._upsert_sql(), rows, timeout=self._timeout)

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove rows of this workspace by id; unknown ids are ignored."""
        wanted = list(dict.fromkeys(ids))
        if wanted:
            await self._execute(
                f"deleting from {self._name}",
                f"DELETE FROM {self._table} WHERE workspace = $1 AND id = ANY($2::text[])",
                self._workspace,
                wanted,
            )


class LightRAGPgChunkStore(_LightRAGPg):
    """``lightrag_doc_chunks`` (LightRAG's text chunks) as a :class:`~hexrag.ports.ChunkStore`."""

    _kind = "LightRAG chunk table"

    def __init__(
        self, pool: asyncpg.Pool, *, workspace: str, timeout: float | None = None
    ) -> None:
        super().__init__(pool, workspace=workspace, timeout=timeout)

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order, ``None`` for a missing id (one statement)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = await self._fetch(
            "reading lightrag_doc_chunks",
            f"SELECT {CHUNK_COLUMNS} FROM lightrag_doc_chunks "
            "WHERE workspace = $1 AND id = ANY($2::text[])",
            self._workspace,
            wanted,
        )
        found = {r["id"]: chunk_from_row(r) for r in rows}
        return [found.get(i) for i in ids]

    async def count(self) -> int:
        """Chunks of this workspace."""
        return int(
            await self._fetchval(
                "counting lightrag_doc_chunks",
                "SELECT count(*) FROM lightrag_doc_chunks WHERE workspace = $1",
                self._workspace,
            )
        )

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks by id."""
        check_scan_limit(limit)
        rows = await self._fetch(
            "scanning lightrag_doc_chunks",
            f"""SELECT {CHUNK_COLUMNS} FROM lightrag_doc_chunks
                WHERE workspace = $1 AND ($2::text IS NULL OR id > $2::text)
                ORDER BY id LIMIT $3""",
            self._workspace,
            cursor,
            limit,
        )
        items = [chunk_from_row(r) for r in rows]
        return Page(items, items[-1].id if len(items) == limit else None)

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks with LightRAG's ``upsert_text_chunk`` statement."""
        last = {c.id: c for c in chunks}
        if not last:
            return
        rows = []
        for c in last.values():
            meta = dict(c.metadata or {})
            created = _timestamp(meta.get("create_time"))
            updated = _timestamp(meta.get("update_time", meta.get("create_time")))
            rows.append((
                self._workspace, c.id, c.tokens, c.chunk_order_index, c.full_doc_id, c.content,
                c.file_path, json.dumps(meta.get("llm_cache_list") or []),
                json.dumps(meta.get("heading") or {}), json.dumps(meta.get("sidecar") or {}),
                created, updated,
            ))
        with translate_errors(f"writing {len(rows)} rows into lightrag_doc_chunks"):
            async with self._pool.acquire(timeout=self._timeout) as conn, conn.transaction():
                await conn.executemany(
                    """INSERT INTO lightrag_doc_chunks (workspace, id, tokens, chunk_order_index,
                           full_doc_id, content, file_path, llm_cache_list, heading, sidecar,
                           create_time, update_time)
                       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10::jsonb,
                           $11, $12)
                       ON CONFLICT (workspace, id) DO UPDATE SET tokens = EXCLUDED.tokens,
                           chunk_order_index = EXCLUDED.chunk_order_index,
                           full_doc_id = EXCLUDED.full_doc_id, content = EXCLUDED.content,
                           file_path = EXCLUDED.file_path,
                           llm_cache_list = EXCLUDED.llm_cache_list,
                           heading = EXCLUDED.heading, sidecar = EXCLUDED.sidecar,
                           update_time = EXCLUDED.update_time""",
                    rows,
                    timeout=self._timeout,
                )

    async def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove chunks of this workspace by id; unknown ids are ignored."""
        wanted = list(dict.fromkeys(ids))
        if wanted:
            await self._execute(
                "deleting from lightrag_doc_chunks",
                "DELETE FROM lightrag_doc_chunks WHERE workspace = $1 AND id = ANY($2::text[])",
                self._workspace,
                wanted,
            )


def _float_or_none(value: Any) -> float | None:
    try:
        return None if value is None or value == "" else float(value)
    except (TypeError, ValueError):
        return None


def node_to_entity(name: str, attrs: dict[str, Any]) -> Entity:
    """A node's JSONB ``properties`` -> :class:`Entity` (LightRAG's node attributes)."""
    if attrs.get("entity_id") == name:
        del attrs["entity_id"]
    fields: dict[str, Any] = {}
    for key in ("entity_type", "description", "file_path"):
        if isinstance(attrs.get(key), str):
            fields[key] = attrs.pop(key)
    if "source_id" in attrs:
        fields["source_id"] = attrs.pop("source_id")
    created = attrs.get("created_at")
    if isinstance(created, int) and not isinstance(created, bool):
        fields["created_at"] = attrs.pop("created_at")
    return Entity(name=name, properties=attrs, **fields)


def chunk_from_kv(chunk_id: str, value: Mapping[str, Any]) -> Chunk:
    """A LightRAG text-chunk record -> :class:`Chunk` (other keys become metadata)."""
    fields: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key, val in value.items():
        if key in ("content", "full_doc_id", "file_path") and isinstance(val, str):
            fields[key] = val
        elif key in ("tokens", "chunk_order_index") and isinstance(val, int):
            fields[key] = val
        else:
            metadata[key] = val
    content = fields.pop("content", "")
    return Chunk(id=chunk_id, content=content, metadata=metadata, **fields)


def _props(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = json.loads(value)
    return dict(value or {})


class LightRAGPgGraphStore(_LightRAGPg):
    """``PGTableGraphStorage``'s tables as a :class:`~hexrag.ports.GraphStore` (one edge per
    pair, neighbours in LightRAG's order: sorted by name)."""

    _kind = "LightRAG graph tables"

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        workspace: str,
        namespace: str = _NAMESPACE,
        timeout: float | None = None,
    ) -> None:
        super().__init__(pool, workspace=workspace, timeout=timeout)
        self._graph_ns = namespace

    def _relation(self, src: str, tgt: str, props: Any) -> Relation:
        attrs = _props(props)
        weight = attrs.pop("weight", None)
        created = attrs.pop("created_at", None)
        return Relation(
            id=relation_id(src, tgt),
            src_id=src,
            tgt_id=tgt,
            description=attrs.pop("description", None),
            keywords=attrs.pop("keywords", None),
            weight=_float_or_none(weight),
            source_id=attrs.pop("source_id", None),
            file_path=attrs.pop("file_path", None),
            created_at=int(created) if isinstance(created, (int, float)) else None,
            properties=attrs,
        )

    async def get_nodes(self, names: Sequence[str]) -> dict[str, Entity]:
        """Nodes by name (missing names absent)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        rows = await self._fetch(
            "reading lightrag_graph_nodes",
            _gsql.NODES_BY_ID,
            self._workspace,
            self._graph_ns,
            wanted,
        )
        found = {r["id"]: node_to_entity(r["id"], _props(r["properties"])) for r in rows}
        return {n: found[n] for n in wanted if n in found}

    async def get_nodes_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Entity], dict[str, int]]:
        """:meth:`get_nodes` and :meth:`node_degrees` in one statement
        (:class:`~hexrag.ports.graph_store.NodesWithDegrees`)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}, {}
        rows = await self._fetch("reading lightrag_graph_nodes with degrees",
                                 _gsql.NODES_WITH_DEGREES, self._workspace, self._graph_ns,
                                 wanted)
        found = {r["id"]: node_to_entity(r["id"], _props(r["properties"])) for r in rows
                 if r["found"]}
        degrees = {r["id"]: int(r["degree"]) for r in rows}
        return {n: found[n] for n in wanted if n in found}, {n: degrees[n] for n in wanted}

    async def _degrees(self, names: list[str]) -> dict[str, int]:
        rows = await self._fetch(
            "counting degrees in lightrag_graph_edges",
            _gsql.NODE_DEGREES,
            self._workspace,
            self._graph_ns,
            names,
        )
        return {r["id"]: int(r["degree"]) for r in rows}

    async def node_degrees(self, names: Sequence[str]) -> dict[str, int]:
        """Incident edges per name (a self-loop counts 2), 0 for a missing node."""
        wanted = list(dict.fromkeys(names))
        found = await self._degrees(wanted) if wanted else {}
        return {n: found.get(n, 0) for n in wanted}

    async def edge_degrees(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``degree(a) + degree(b)`` per pair."""
        names = list(dict.fromkeys(n for pair in pairs for n in pair))
        found = await self._degrees(names) if names else {}
        return {(a, b): found.get(a, 0) + found.get(b, 0) for a, b in pairs}

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        """Each name's edges, neighbours sorted by name (LightRAG's order)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        rows = await self._fetch("reading edges of lightrag_graph_edges", _gsql.EDGES_OF_NODES,
                                 self._workspace, self._graph_ns, wanted)
        return self._edges_by_node(wanted, rows)

    async def get_node_edges_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """:meth:`get_node_edges` and the degree of every endpoint of those edges, in one
        statement (:class:`~hexrag.ports.graph_store.NodeEdgesWithDegrees`)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}, {}
        rows = await self._fetch("reading edges and degrees of lightrag_graph_edges",
                                 _gsql.EDGES_OF_NODES_WITH_DEGREES, self._workspace,
                                 self._graph_ns, wanted)
        degrees = {r["src_id"]: int(r["degree"]) for r in rows if r["kind"]}
        return self._edges_by_node(wanted, [r for r in rows if not r["kind"]]), degrees

    def _edges_by_node(self, wanted: list[str], rows: list[Any]) -> dict[str, list[Relation]]:
        out: dict[str, list[tuple[str, Relation]]] = {n: [] for n in wanted}
        for r in rows:
            rel = self._relation(r["src_id"], r["tgt_id"], r["properties"])
            if r["src_id"] in out:
                out[r["src_id"]].append((r["tgt_id"], rel))
            if r["tgt_id"] in out and r["tgt_id"] != r["src_id"]:
                out[r["tgt_id"]].append((r["src_id"], rel))
        return {n: [rel for _, rel in sorted(edges, key=lambda e: e[0])] for n, edges in
                out.items()}

    async def get_edges_by_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """The edge of each pair (either orientation), keyed as requested."""
        wanted = list(dict.fromkeys((a, b) for a, b in pairs))
        if not wanted:
            return {}
        canon = [(min(a, b), max(a, b)) for a, b in wanted]
        rows = await self._fetch(
            "reading lightrag_graph_edges by pair",
            _gsql.EDGES_BY_PAIRS,
            self._workspace,
            self._graph_ns,
            [c[0] for c in canon],
            [c[1] for c in canon],
        )
        found = {
            (r["src_id"], r["tgt_id"]): self._relation(r["src_id"], r["tgt_id"], r["properties"])
            for r in rows
        }
        return {p: [found[c]] for p, c in zip(wanted, canon, strict=True) if c in found}

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Edges whose ``source_id`` (``<SEP>``-joined) names each chunk id (a scan of every
        edge: LightRAG's tables have no index on it)."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return {}
        rows = await self._fetch("reading lightrag_graph_edges by chunk id",
                                 _gsql.EDGES_BY_CHUNK_IDS, self._workspace, self._graph_ns, wanted)
        return _gsql.group_by_chunk(rows, wanted, self._relation)

    async def get_edges_by_chunk_ids_of_pairs(
        self, chunk_ids: Sequence[str], pairs: Sequence[tuple[str, str]]
    ) -> dict[str, list[Relation]]:
        """:meth:`get_edges_by_chunk_ids` restricted to the edges of ``pairs`` (either
        orientation), same lists and order, found through the primary key
        (:class:`~hexrag.ports.graph_store.PairEdgesByChunk`)."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted or not pairs:
            return {}
        rows = await self._fetch("reading lightrag_graph_edges of pairs by chunk id",
                                 _gsql.EDGES_BY_CHUNK_IDS_OF_PAIRS, self._workspace,
                                 self._graph_ns, wanted, *_gsql.both_orientations(pairs))
        return _gsql.group_by_chunk(rows, wanted, self._relation)

    async def count_nodes(self) -> int:
        """Nodes of this workspace."""
        return int(
            await self._fetchval(
                "counting lightrag_graph_nodes",
                "SELECT count(*) FROM lightrag_graph_nodes WHERE workspace = $1 AND namespace = $2",
                self._workspace,
                self._graph_ns,
            )
        )

    async def count_edges(self) -> int:
        """Edges of this workspace."""
        return int(
            await self._fetchval(
                "counting lightrag_graph_edges",
                "SELECT count(*) FROM lightrag_graph_edges WHERE workspace = $1 AND namespace = $2",
                self._workspace,
                self._graph_ns,
            )
        )

    async def scan_nodes(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Entity]:
        """A page of nodes by id."""
        check_scan_limit(limit)
        rows = await self._fetch(
            "scanning lightrag_graph_nodes",
            """SELECT id, properties::text AS properties FROM lightrag_graph_nodes
               WHERE workspace = $1 AND namespace = $2 AND ($3::text IS NULL OR id > $3::text)
               ORDER BY id LIMIT $4""",
            self._workspace,
            self._graph_ns,
            cursor,
            limit,
        )
        items = [node_to_entity(r["id"], _props(r["properties"])) for r in rows]
        return Page(items, items[-1].name if len(items) == limit else None)

    async def scan_edges(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Relation]:
        """A page of edges by ``(src_id, tgt_id)``; the cursor is that pair as JSON."""
        check_scan_limit(limit)
        after: list[Any] = [None, None]
        if cursor is not None:
            try:
                after = json.loads(cursor)
                if not (isinstance(after, list) and len(after) == 2):
                    raise ValueError(cursor)
            except ValueError:
                raise InvalidQuery(f"not a scan cursor of this store: {cursor[:40]!r}") from None
        rows = await self._fetch(
            "scanning lightrag_graph_edges",
            """SELECT src_id, tgt_id, properties::text AS properties FROM lightrag_graph_edges
               WHERE workspace = $1 AND namespace = $2
                 AND ($3::text IS NULL OR (src_id, tgt_id) > ($3::text, $4::text))
               ORDER BY src_id, tgt_id LIMIT $5""",
            self._workspace,
            self._graph_ns,
            after[0],
            after[1],
            limit,
        )
        items = [self._relation(r["src_id"], r["tgt_id"], r["properties"]) for r in rows]
        nxt = json.dumps([rows[-1]["src_id"], rows[-1]["tgt_id"]]) if len(rows) == limit else None
        return Page(items, nxt)

    async def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes (``properties`` as LightRAG writes them, ``entity_id``
        included); edges are kept."""
        last = {e.name: e for e in entities}
        if not last:
            return
        props = []
        for e in last.values():
            p: dict[str, Any] = {"entity_id": e.name}
            for key in ("entity_type", "description", "source_id", "file_path", "created_at"):
                value = getattr(e, key)
                if value is not None:
                    p[key] = value
            p.update({k: v for k, v in (e.properties or {}).items() if k not in p})
            props.append(json.dumps(p, ensure_ascii=False))
        names = sorted(last)
        by_name = dict(zip(list(last), props, strict=True))
        await self._execute(
            "writing lightrag_graph_nodes",
            """INSERT INTO lightrag_graph_nodes (workspace, namespace, id, properties, updated_at)
               SELECT $1, $2, u.id, u.props::jsonb, now()
               FROM unnest($3::text[], $4::text[]) AS u(id, props)
               ORDER BY u.id
               ON CONFLICT (workspace, namespace, id)
               DO UPDATE SET properties = EXCLUDED.properties, updated_at = now()""",
            self._workspace,
            self._graph_ns,
            names,
            [by_name[n] for n in names],
        )

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace edges: one per pair, stored ``src_id < tgt_id`` with LightRAG's
        properties; missing endpoint nodes are created (as LightRAG does)."""
        last: dict[tuple[str, str], Relation] = {}
        for r in relations:
            last[r.pair] = r
        if not last:
            return
        items = []
        for (a, b), r in sorted(last.items()):
            p: dict[str, Any] = {}
            for key in ("weight", "description", "keywords", "source_id", "file_path",
                        "created_at"):
                value = getattr(r, key)
                if value is not None:
                    p[key] = value
            p.update({k: v for k, v in (r.properties or {}).items() if k not in p})
            items.append((a, b, json.dumps(p, ensure_ascii=False)))
        await self._execute(
            "writing lightrag_graph_edges",
            """WITH endpoints AS (
                   INSERT INTO lightrag_graph_nodes (workspace, namespace, id, properties,
                       updated_at)
                   SELECT $1, $2, u.id, jsonb_build_object('entity_id', u.id), now()
                   FROM unnest($6::text[]) AS u(id)
                   ON CONFLICT (workspace, namespace, id) DO NOTHING
                   RETURNING id
               ), endpoint_write AS (SELECT COUNT(*) AS inserted_count FROM endpoints)
               INSERT INTO lightrag_graph_edges (workspace, namespace, src_id, tgt_id,
                   properties, updated_at)
               SELECT $1, $2, u.src, u.tgt, u.props::jsonb, now()
               FROM unnest($3::text[], $4::text[], $5::text[]) AS u(src, tgt, props)
               CROSS JOIN endpoint_write
               ORDER BY u.src, u.tgt
               ON CONFLICT (workspace, namespace, src_id, tgt_id)
               DO UPDATE SET properties = EXCLUDED.properties, updated_at = now()""",
            self._workspace,
            self._graph_ns,
            [i[0] for i in items],
            [i[1] for i in items],
            [i[2] for i in items],
            sorted({n for i in items for n in (i[0], i[1])}),
        )

    async def delete_nodes(self, names: Sequence[str]) -> None:
        """Remove nodes and their edges; unknown names are ignored."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return
        await self._execute(
            "deleting from the LightRAG graph",
            """WITH gone_edges AS (
                   DELETE FROM lightrag_graph_edges
                   WHERE workspace = $1 AND namespace = $2
                     AND (src_id = ANY($3::text[]) OR tgt_id = ANY($3::text[]))
               )
               DELETE FROM lightrag_graph_nodes
               WHERE workspace = $1 AND namespace = $2 AND id = ANY($3::text[])""",
            self._workspace,
            self._graph_ns,
            wanted,
        )

    async def delete_edges(self, relation_ids: Sequence[str]) -> None:
        """Remove edges by relation id (``rel-`` + md5 of the sorted pair, as ids are read)."""
        wanted = list(dict.fromkeys(relation_ids))
        if wanted:
            await self._execute(
                "deleting from lightrag_graph_edges",
                """DELETE FROM lightrag_graph_edges
                   WHERE workspace = $1 AND namespace = $2
                     AND 'rel-' || md5(src_id || tgt_id) = ANY($3::text[])""",
                self._workspace,
                self._graph_ns,
                wanted,
            )


_CACHE_COLUMNS = """id, original_prompt, return_value, chunk_id, cache_type,
    queryparam::text AS queryparam, EXTRACT(EPOCH FROM create_time)::BIGINT AS create_time,
    EXTRACT(EPOCH FROM update_time)::BIGINT AS update_time"""


class LightRAGPgCache(_LightRAGPg):
    """``lightrag_llm_cache`` as a :class:`~hexrag.ports.Cache`: an entry is the dict
    ``PGKVStorage.get_by_ids`` returns for the LLM cache (``return``, ``cache_type``,
    ``original_prompt``, ``chunk_id``, ``queryparam``, times); keys are LightRAG's flattened
    cache ids (``mode:cache_type:hash``), so LightRAG and hexrag share cached keywords."""

    _kind = "LightRAG LLM cache table"

    def __init__(
        self, pool: asyncpg.Pool, *, workspace: str, timeout: float | None = None
    ) -> None:
        super().__init__(pool, workspace=workspace, timeout=timeout)

    @staticmethod
    def _entry(row: Mapping[str, Any]) -> dict[str, Any]:
        query = row.get("queryparam")
        if isinstance(query, str):
            try:
                query = json.loads(query)
            except ValueError:
                query = None
        created = row.get("create_time") or 0
        return {
            "return": row.get("return_value") or "",
            "cache_type": row.get("cache_type"),
            "original_prompt": row.get("original_prompt") or "",
            "chunk_id": row.get("chunk_id"),
            "queryparam": query,
            "create_time": created,
            "update_time": row.get("update_time") or created,
        }

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Entries in request order, ``None`` for a missing key (one statement)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        rows = await self._fetch(
            "reading lightrag_llm_cache",
            f"SELECT {_CACHE_COLUMNS} FROM lightrag_llm_cache "
            "WHERE workspace = $1 AND id = ANY($2::text[])",
            self._workspace,
            wanted,
        )
        found = {r["id"]: r for r in rows}
        return [self._entry(found[k]) if k in found else None for k in keys]

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries with LightRAG's upsert (``return`` -> ``return_value``)."""
        if not entries:
            return
        rows = []
        for key, value in entries.items():
            query = value.get("queryparam")
            rows.append((
                self._workspace, str(key), value.get("original_prompt"),
                value.get("return"), value.get("chunk_id"), value.get("cache_type"),
                None if query is None else json.dumps(query, ensure_ascii=False),
            ))
        with translate_errors(f"writing {len(rows)} rows into lightrag_llm_cache"):
            async with self._pool.acquire(timeout=self._timeout) as conn, conn.transaction():
                await conn.executemany(
                    """INSERT INTO lightrag_llm_cache (workspace, id, original_prompt,
                           return_value, chunk_id, cache_type, queryparam)
                       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)
                       ON CONFLICT (workspace, id) DO UPDATE
                       SET original_prompt = EXCLUDED.original_prompt,
                           return_value = EXCLUDED.return_value, chunk_id = EXCLUDED.chunk_id,
                           cache_type = EXCLUDED.cache_type, queryparam = EXCLUDED.queryparam,
                           update_time = CURRENT_TIMESTAMP""",
                    rows,
                    timeout=self._timeout,
                )

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys; unknown keys are ignored."""
        wanted = list(dict.fromkeys(keys))
        if wanted:
            await self._execute(
                "deleting from lightrag_llm_cache",
                "DELETE FROM lightrag_llm_cache WHERE workspace = $1 AND id = ANY($2::text[])",
                self._workspace,
                wanted,
            )

    async def clear(self) -> None:
        """Remove every entry of this workspace."""
        await self._execute(
            "clearing lightrag_llm_cache",
            "DELETE FROM lightrag_llm_cache WHERE workspace = $1",
            self._workspace,
        )

    async def scan_entries(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[tuple[str, dict[str, Any]]]:
        """A page of ``(key, entry)`` by key."""
        check_scan_limit(limit)
        rows = await self._fetch(
            "scanning lightrag_llm_cache",
            f"""SELECT {_CACHE_COLUMNS} FROM lightrag_llm_cache
                WHERE workspace = $1 AND ($2::text IS NULL OR id > $2::text)
                ORDER BY id LIMIT $3""",
            self._workspace,
            cursor,
            limit,
        )
        items = [(r["id"], self._entry(r)) for r in rows]
        return Page(items, items[-1][0] if len(items) == limit else None)


def open_lightrag_pg_stores(
    pool: asyncpg.Pool,
    *,
    workspace: str,
    embedding_dim: int,
    model_name: str | None,
    cosine_threshold: float = 0.2,
    timeout: float | None = None,
) -> dict[str, Any]:
    """The stores of a LightRAG PostgreSQL deployment: ``entities``, ``relationships``,
    ``chunks``, ``graph`` and ``chunk_store`` (keyword arguments of ``QueryEngine``)."""
    vec: dict[str, Any] = {
        ns: LightRAGPgVectorIndex(
            pool,
            namespace=ns,  # type: ignore[arg-type]
            dim=embedding_dim,
            workspace=workspace,
            model_name=model_name,
            cosine_threshold=cosine_threshold,
            timeout=timeout,
        )
        for ns in ("entities", "relationships", "chunks")
    }
    return {
        **vec,
        "graph": LightRAGPgGraphStore(pool, workspace=workspace, timeout=timeout),
        "chunk_store": LightRAGPgChunkStore(pool, workspace=workspace, timeout=timeout),
    }


def open_lightrag_pg_cache(
    pool: asyncpg.Pool, *, workspace: str, timeout: float | None = None
) -> LightRAGPgCache:
    """The LLM response cache of a LightRAG PostgreSQL deployment."""
    return LightRAGPgCache(pool, workspace=workspace, timeout=timeout)
