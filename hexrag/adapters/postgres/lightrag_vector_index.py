"""LightRAG's ``PGVectorStorage`` tables (``lightrag_vdb_entity`` / ``_relation`` / ``_chunks``,
with LightRAG's model suffix) as a :class:`~hexrag.ports.VectorIndex`, searched with LightRAG's
own SQL (see :mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hexrag.adapters._vector_index_props import QueryTemplate
from hexrag.adapters._vector_lightrag import widened_hits
from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg, _timestamp
from hexrag.adapters.postgres.vector_rows import (
    LightRAGVectorRows,
    PgVectorReads,
    lightrag_vector_table,
)
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import VectorHit, VectorNamespace, VectorRecord
from hexrag.domain.scope import QueryScope

if TYPE_CHECKING:
    import asyncpg

__all__ = ["LightRAGPgVectorIndex", "lightrag_vector_table"]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class LightRAGPgVectorIndex(PgVectorReads, QueryTemplate, _LightRAGPg):
    """One of LightRAG's ``PGVectorStorage`` tables as a :class:`~hexrag.ports.VectorIndex`.

    A hit must score strictly above ``cosine_threshold`` (LightRAG's
    ``cosine_better_than_threshold`` rule: ``score > threshold``), as its ``traits`` declare.
    The rows, their conversion and the reads are the layout strategy's
    (:class:`~hexrag.adapters.postgres.vector_rows.LightRAGVectorRows`,
    :class:`~hexrag.adapters.postgres.vector_rows.PgVectorReads`); writes and searches are
    LightRAG's own statements.
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
        self._rows = rows = LightRAGVectorRows(
            namespace, workspace=workspace, model_name=model_name, dim=int(dim)
        )
        self._namespace: VectorNamespace = namespace
        self._dim = int(dim)
        self._threshold = float(cosine_threshold)
        self._name = rows.name
        self._table = rows.table
        self._columns = rows.columns
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

    def _query_vector(self, vector: np.ndarray | Sequence[float]) -> np.ndarray:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self._dim:
            raise ConfigurationError(
                f"{self._name}: query vector has length {q.shape[0]}, expected {self._dim}"
            )
        return q

    async def _top_hits(
        self, q: np.ndarray, top_k: int, scope: QueryScope | None
    ) -> list[VectorHit]:
        """LightRAG's search (its SQL); with a scope, widened until ``top_k`` rows pass."""
        sql = f"""SELECT {self._columns}, content_vector <=> $4::real[]::vector AS distance
                  FROM {self._table}
                  WHERE workspace = $1 AND content_vector <=> $4::real[]::vector < $2
                  ORDER BY content_vector <=> $4::real[]::vector
                  LIMIT $3"""
        if self._exact:
            # cosine_distance() (the function, not the operator) cannot use the HNSW index
            sql = f"""SELECT * FROM (
                          SELECT {self._columns},
                                 cosine_distance(content_vector, $4::real[]::vector) AS distance
                          FROM {self._table} WHERE workspace = $1 OFFSET 0) AS scored
                      WHERE distance < $2 ORDER BY distance, id LIMIT $3"""

        # the query vector travels as a binary float4 array (asyncpg's own codec: no
        # per-connection registration), the same float32 values LightRAG's text literal
        # carries: parsing pgvector's text form cost the server about 0.2 ms per search and
        # formatting it the client as much
        query = np.asarray(q, dtype=np.float32).tolist()

        async def search(limit: int) -> list[VectorHit]:
            rows = await self._fetch(
                f"searching {self._name}", sql, self._workspace, 1 - self._threshold, limit,
                query,
            )
            return [VectorHit(record=self._rows.record(r, None), score=1.0 - float(r["distance"]))
                    for r in rows]

        return await widened_hits(search, top_k, scope, max_limit=sys.maxsize)

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
