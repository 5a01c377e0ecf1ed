"""LightRAG's ``PGVectorStorage`` tables (``lightrag_vdb_entity`` / ``_relation`` / ``_chunks``,
with LightRAG's model suffix) as a :class:`~hexrag.ports.VectorIndex`, searched with LightRAG's
own SQL (see :mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hexrag.adapters._vector_index_props import VectorIndexProps
from hexrag.adapters._vector_lightrag import lightrag_traits
from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres._sql import quote_ident
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg, _timestamp
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.scope import prefilter_match, scope_values
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import GRAPH_FIELD_SEP, VectorHit, VectorNamespace, VectorRecord
from hexrag.domain.scope import QueryScope
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit
from hexrag.ports.vector_index import VectorIndexTraits

if TYPE_CHECKING:
    import asyncpg

__all__ = ["LightRAGPgVectorIndex", "lightrag_vector_table"]


_BASE_TABLES = {
    "entities": "lightrag_vdb_entity",
    "relationships": "lightrag_vdb_relation",
    "chunks": "lightrag_vdb_chunks",
}



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



class LightRAGPgVectorIndex(VectorIndexProps, _LightRAGPg):
    """One of LightRAG's ``PGVectorStorage`` tables as a :class:`~hexrag.ports.VectorIndex`.

    A hit must score strictly above ``cosine_threshold`` (LightRAG's
    ``cosine_better_than_threshold`` rule: ``score > threshold``).
    """

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
    def table(self) -> str:
        """The table name."""
        return self._name

    @property
    def traits(self) -> VectorIndexTraits:
        """LightRAG's rules (:class:`~hexrag.ports.vector_index.VectorIndexTraits`): the strict
        threshold and pgvector's order among ties, the table's own columns (a chunk row keeps
        ``tokens`` / ``chunk_order_index`` as metadata and no ``source_id``), ``source_id`` as
        ``chunk_ids`` (read back joined), ``create_time`` kept when a row is replaced."""
        keys = ("tokens", "chunk_order_index") if self._namespace == "chunks" else ()
        return lightrag_traits(self._namespace, metadata_keys=keys, stamps_created_at=False,
                               keeps_first_created_at=True)

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

