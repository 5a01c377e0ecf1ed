"""``PgVectorIndex``: the VectorIndex port on PostgreSQL + pgvector."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Unpack, get_args

import numpy as np

from hexrag.adapters._vector_index_props import QueryTemplate
from hexrag.adapters.postgres._base import DDL_LOCK_KEY, PgAdapter, PgOptions
from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres._rows import (
    row_to_vector_record,
    rows_document,
    vector_array,
    vector_record_to_row,
)
from hexrag.adapters.postgres._sql import quote_ident
from hexrag.adapters.postgres._vector_sql import (
    INLINE_MAX_DIM,
    exact_search_sql,
    index_search_sql,
    upgrade_storage_sql,
)
from hexrag.adapters.postgres.vector_rows import HexragVectorRows, PgVectorReads
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import VectorHit, VectorNamespace, VectorRecord
from hexrag.domain.scope import QueryScope

if TYPE_CHECKING:
    import asyncpg

__all__ = [
    "DEFAULT_EF_SEARCH", "EF_SEARCH_MAX", "HNSW_MAX_DIM", "PgVectorIndex", "scope_condition",
]

#: pgvector's HNSW index handles ``vector`` columns of at most this many dimensions; a wider
#: index is searched exactly.
HNSW_MAX_DIM: Final = 2000
#: The largest ``hnsw.ef_search`` pgvector accepts; an index scan returns at most this many rows.
EF_SEARCH_MAX: Final = 1000
#: Extra candidates an HNSW scan reads beyond ``top_k``, re-ranked by ``(score, id)`` on the
#: server so that ties at the cut are broken by id.
CANDIDATE_SLACK: Final = 16
#: The default minimum ``hnsw.ef_search`` (pgvector's own default): a search reads
#: ``max(ef_search, top_k + CANDIDATE_SLACK)`` candidates' worth of the graph. The cost of an
#: HNSW scan grows with ``ef_search`` (10k entities, 384-d: 1.8 ms at 56, 4.7 ms at 112), so
#: it follows ``top_k`` instead of a large constant.
DEFAULT_EF_SEARCH: Final = 40

_log = logging.getLogger("hexrag.postgres")

_NAMESPACES: tuple[str, ...] = get_args(VectorNamespace)

#: ``maintenance_work_mem`` while :meth:`PgVectorIndex.end_bulk_load` builds the HNSW index.
BULK_INDEX_MEMORY: Final = "1GB"
#: From this many records an upsert takes the ``COPY`` path.
COPY_MIN_ROWS: Final = 64
_COPY_COLUMNS = (
    "id", "vector", "entity_name", "src_id", "tgt_id", "content", "file_path", "full_doc_id",
    "created_at", "source_id", "chunk_ids", "product_ids", "category_ids", "doc_ids", "metadata",
)


def _copy_value(value: Any, column: str) -> Any:
    # jsonb goes through COPY as its text
    if column in ("source_id", "metadata"):
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    return value

#: Scope field -> array column; each column holds ``hexrag.core.scope.scope_values``.
SCOPE_COLUMNS: Final = {
    "product_id": "product_ids",
    "category_id": "category_ids",
    "doc_ids": "doc_ids",
}

_COLUMNS = (
    "id, entity_name, src_id, tgt_id, content, file_path, full_doc_id, created_at, "
    "source_id::text AS source_id, metadata::text AS metadata, vector::real[] AS vector"
)
#: The columns of a search hit (no vector), qualified by the alias ``t``.
_HIT_COLUMNS = (
    "t.id, t.entity_name, t.src_id, t.tgt_id, t.content, t.file_path, t.full_doc_id, "
    "t.created_at, t.source_id::text AS source_id, t.metadata::text AS metadata"
)


def scope_condition(scope: QueryScope | None, first_param: int) -> tuple[str, list[list[str]]]:
    """SQL for :func:`hexrag.core.scope.prefilter_match`, and its parameters.

    Per scoped field: the record passes if it knows no value for the field (empty array) or
    one of its values is admitted. Column names come from a fixed table; values are
    ``$n::text[]`` parameters numbered from ``first_param``.
    """
    if scope is None or scope.is_empty:
        return "TRUE", []
    clauses: list[str] = []
    params: list[list[str]] = []
    for field, admitted in scope.fields().items():
        column = SCOPE_COLUMNS[field]
        n = first_param + len(params)
        clauses.append(f"(cardinality({column}) = 0 OR {column} && ${n}::text[])")
        params.append(list(admitted))
    return " AND ".join(clauses), params


class PgVectorIndex(PgVectorReads, QueryTemplate, PgAdapter):
    """One namespace of embedded records in a pgvector table ``<prefix>_vdb_<namespace>``.

    Columns: ``id``, ``vector vector(dim)`` (HNSW ``vector_cosine_ops`` index), the
    record's text fields, ``created_at``, ``source_id`` (the value as given, JSON) plus
    ``chunk_ids text[]`` (its ids, via :func:`hexrag.core.query.source_ids.parse_source_ids`), the
    scope arrays ``product_ids``/``category_ids``/``doc_ids`` (from
    :func:`hexrag.core.scope.scope_values`, GIN-indexed like ``chunk_ids``) and ``metadata``.

    Search is one statement the server ranks (:mod:`._vector_sql`): the score is pgvector's
    cosine, the threshold inclusive, ties broken by id, and only the winners' columns come
    back (no vectors). The scope is part of the SQL, so ``top_k`` counts admitted rows. A
    scoped query (and any query when ``exact_search`` is set, when ``top_k`` exceeds what an
    HNSW scan can return, or when the threshold is not positive) is an exact scan; an
    unscoped one uses the HNSW index with ``hnsw.ef_search`` chosen from ``top_k`` (the
    candidates read, ``top_k + CANDIDATE_SLACK``, at least ``ef_search``) for that
    statement. Vectors of up to :data:`~._vector_sql.INLINE_MAX_DIM` dimensions are stored
    inline (a table of an older layout is converted on open, when DDL is allowed). Reads by
    id, counts, deletes and scans are :class:`~.vector_rows.PgVectorReads` on hexrag's rows
    (:class:`~.vector_rows.HexragVectorRows`), the code LightRAG's layout reads with too.

    Args:
        pool: a ready ``asyncpg`` pool.
        namespace: ``"entities"``, ``"relationships"`` or ``"chunks"``.
        dim: the embedding dimension (an existing table of another dimension is refused).
        cosine_threshold: minimum cosine similarity of a hit (inclusive).
        exact_search: always scan exactly (never the HNSW index).
        ef_search: the minimum ``hnsw.ef_search`` of an index scan (raise it for a better
            recall of approximate searches, at some cost).
        options: :class:`~hexrag.adapters.postgres._base.PgAdapter`'s (``schema``,
            ``table_prefix``, ``timeout``, ``create_tables``).
    """

    _kind = "vector index"

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        namespace: VectorNamespace,
        dim: int,
        cosine_threshold: float = 0.2,
        exact_search: bool = False,
        ef_search: int = DEFAULT_EF_SEARCH,
        **options: Unpack[PgOptions],
    ) -> None:
        super().__init__(pool, **options)
        if namespace not in _NAMESPACES:
            raise ConfigurationError(
                f"postgres: vector namespace {namespace!r} is invalid; "
                f"use one of {list(_NAMESPACES)}"
            )
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 16000:
            raise ConfigurationError(f"postgres: dim must be an int in 1..16000, got {dim!r}")
        threshold = float(cosine_threshold)
        if not math.isfinite(threshold):
            raise ConfigurationError("postgres: cosine_threshold must be a finite number")
        if (
            isinstance(ef_search, bool)
            or not isinstance(ef_search, int)
            or not (1 <= ef_search <= EF_SEARCH_MAX)
        ):
            raise ConfigurationError(
                f"postgres: ef_search must be an int in 1..{EF_SEARCH_MAX}, got {ef_search!r}"
            )
        self._namespace: VectorNamespace = namespace
        self._dim = dim
        self._threshold = threshold
        self._exact = bool(exact_search)
        self._configured_exact = self._exact
        self._ef_search = ef_search
        self._hnsw = dim <= HNSW_MAX_DIM
        self._suffix = f"vdb_{namespace}"
        self._table = self._tables.qualified(self._suffix)
        self._rows = HexragVectorRows(self._table)

    # -- port properties -------------------------------------------------------------------

    @property
    def table(self) -> str:
        """The quoted, qualified table name."""
        return self._table

    # -- DDL -----------------------------------------------------------------------------------

    def _ddl(self) -> str:
        t = self._table
        idx = self._tables.index
        s = self._suffix
        lines = [
            "CREATE EXTENSION IF NOT EXISTS vector;",
            f"""CREATE TABLE IF NOT EXISTS {t} (
                id text COLLATE "C" PRIMARY KEY,
                vector vector({self._dim}) NOT NULL,
                entity_name text,
                src_id text,
                tgt_id text,
                content text,
                file_path text,
                full_doc_id text,
                created_at bigint,
                source_id jsonb,
                chunk_ids text[] NOT NULL DEFAULT '{{}}',
                product_ids text[] NOT NULL DEFAULT '{{}}',
                category_ids text[] NOT NULL DEFAULT '{{}}',
                doc_ids text[] NOT NULL DEFAULT '{{}}',
                metadata jsonb NOT NULL DEFAULT '{{}}'
            );""",
        ]
        if self._hnsw:
            lines.append(
                f"CREATE INDEX IF NOT EXISTS {idx(s + '_hnsw')} ON {t} "
                "USING hnsw (vector vector_cosine_ops);"
            )
        for column in ("chunk_ids", *SCOPE_COLUMNS.values()):
            lines.append(
                f"CREATE INDEX IF NOT EXISTS {idx(s + '_' + column)} ON {t} USING gin ({column});"
            )
        return "\n".join(lines) + "\n"

    async def _after_ddl(self, conn: asyncpg.Connection) -> None:
        row = await conn.fetchrow(
            _VECTOR_COLUMN,
            self._table,
            timeout=self._timeout,
        )
        if row is None:
            return
        stored = row["atttypmod"]
        if stored != self._dim:
            raise ConfigurationError(
                f"postgres: table {self._table} stores vector({stored}) but this index has "
                f"dim={self._dim}; use the embedding model the table was built with, or "
                "another table_prefix/schema"
            )
        if self._create_tables and self._dim <= INLINE_MAX_DIM and not _plain(row):
            await self._keep_vectors_inline(conn)

    async def _keep_vectors_inline(self, conn: asyncpg.Connection) -> None:
        """Convert a table of the older layout (vectors in the TOAST table) once, under the
        DDL lock: an empty table only changes its column's storage; a filled one is
        rewritten (:func:`~._vector_sql.upgrade_storage_sql`)."""
        async with conn.transaction():
            await conn.execute(f"SELECT pg_advisory_xact_lock({DDL_LOCK_KEY})")
            row = await conn.fetchrow(_VECTOR_COLUMN, self._table, timeout=self._timeout)
            if row is None or _plain(row):
                return  # another session converted it meanwhile
            filled = await conn.fetchval(f"SELECT EXISTS (SELECT FROM {self._table})")
            if filled:
                _log.warning(
                    "postgres: rewriting %s to keep its vectors inline (once; faster search)",
                    self._table,
                )
                await conn.execute(upgrade_storage_sql(self._table, self._dim))
            else:
                await conn.execute(
                    f"ALTER TABLE {self._table} ALTER COLUMN vector SET STORAGE PLAIN"
                )

    # -- writes --------------------------------------------------------------------------------

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id (last write of an id wins); one statement, or from
        :data:`COPY_MIN_ROWS` records a ``COPY`` into a temporary table and one
        ``INSERT ... ON CONFLICT`` from it, in one transaction (the bulk path).

        Raises :class:`ConfigurationError` (writing nothing) if any vector is missing, of the
        wrong length or non-finite.
        """
        bulk = len(records) >= COPY_MIN_ROWS
        rows: dict[str, dict[str, Any]] = {}
        for record in records:
            rows[record.id] = vector_record_to_row(record, dim=self._dim, vector_as_array=bulk)
        if not rows:
            return
        if bulk:
            await self._copy_upsert(list(rows.values()))
            return
        await self._execute(
            f"upserting {len(rows)} records into {self._table}",
            f"""INSERT INTO {self._table} (id, vector, entity_name, src_id, tgt_id, content,
                    file_path, full_doc_id, created_at, source_id, chunk_ids, product_ids,
                    category_ids, doc_ids, metadata)
                SELECT r.id, r.vector::vector, r.entity_name, r.src_id, r.tgt_id, r.content,
                    r.file_path, r.full_doc_id, r.created_at, r.source_id, r.chunk_ids,
                    r.product_ids, r.category_ids, r.doc_ids, r.metadata
                FROM jsonb_to_recordset($1::text::jsonb) AS r(
                    id text, vector text, entity_name text, src_id text, tgt_id text,
                    content text, file_path text, full_doc_id text, created_at bigint,
                    source_id jsonb, chunk_ids text[], product_ids text[], category_ids text[],
                    doc_ids text[], metadata jsonb)
                ON CONFLICT (id) DO UPDATE SET
                    vector = EXCLUDED.vector, entity_name = EXCLUDED.entity_name,
                    src_id = EXCLUDED.src_id, tgt_id = EXCLUDED.tgt_id,
                    content = EXCLUDED.content, file_path = EXCLUDED.file_path,
                    full_doc_id = EXCLUDED.full_doc_id, created_at = EXCLUDED.created_at,
                    source_id = EXCLUDED.source_id, chunk_ids = EXCLUDED.chunk_ids,
                    product_ids = EXCLUDED.product_ids, category_ids = EXCLUDED.category_ids,
                    doc_ids = EXCLUDED.doc_ids, metadata = EXCLUDED.metadata""",
            rows_document(list(rows.values())),
        )

    async def _copy_upsert(self, rows: list[dict[str, Any]]) -> None:
        stage = f"hexrag_stage_{self._namespace}"
        columns = list(_COPY_COLUMNS)
        records = [tuple(_copy_value(row[c], c) for c in columns) for row in rows]
        await self.ensure_tables()
        action = f"bulk-upserting {len(rows)} records into {self._table}"
        with translate_errors(action):
            async with self._pool.acquire() as conn, conn.transaction():
                from pgvector.asyncpg import register_vector

                await register_vector(conn)  # binary vectors: numpy in, no text formatting
                await conn.execute(
                    f"""CREATE TEMP TABLE IF NOT EXISTS {stage} (
                        id text, vector vector, entity_name text, src_id text, tgt_id text,
                        content text, file_path text, full_doc_id text, created_at bigint,
                        source_id jsonb, chunk_ids text[], product_ids text[],
                        category_ids text[], doc_ids text[], metadata jsonb
                    ) ON COMMIT DELETE ROWS""",
                    timeout=self._timeout,
                )
                await conn.copy_records_to_table(
                    stage, records=records, columns=columns, timeout=self._timeout
                )
                await conn.execute(
                    f"""INSERT INTO {self._table} ({", ".join(columns)})
                        SELECT id, vector, entity_name, src_id, tgt_id, content,
                            file_path, full_doc_id, created_at, source_id, chunk_ids,
                            product_ids, category_ids, doc_ids, metadata
                        FROM {stage}
                        ON CONFLICT (id) DO UPDATE SET
                            vector = EXCLUDED.vector, entity_name = EXCLUDED.entity_name,
                            src_id = EXCLUDED.src_id, tgt_id = EXCLUDED.tgt_id,
                            content = EXCLUDED.content, file_path = EXCLUDED.file_path,
                            full_doc_id = EXCLUDED.full_doc_id,
                            created_at = EXCLUDED.created_at, source_id = EXCLUDED.source_id,
                            chunk_ids = EXCLUDED.chunk_ids, product_ids = EXCLUDED.product_ids,
                            category_ids = EXCLUDED.category_ids, doc_ids = EXCLUDED.doc_ids,
                            metadata = EXCLUDED.metadata""",
                    timeout=self._timeout,
                )

    async def begin_bulk_load(self) -> None:
        """Many writes follow: an **empty** table loses its secondary indexes (HNSW, GIN), so
        rows go in without index maintenance (:class:`~hexrag.ports.bulk.BulkLoads`). Reads
        stay correct meanwhile (sequential scans); :meth:`end_bulk_load` builds the indexes
        once."""
        if await self.count() > 0:
            return
        names = [self._index_name(s) for s in self._secondary_indexes()]
        await self._execute(
            f"dropping the indexes of {self._table} for a bulk load",
            f"DROP INDEX IF EXISTS {', '.join(names)}",
        )

    async def end_bulk_load(self) -> None:
        """Build every missing index (idempotent; also after an interrupted load), with
        :data:`BULK_INDEX_MEMORY` of ``maintenance_work_mem``, then ``ANALYZE``."""
        t = self._table
        await self.ensure_tables()
        with translate_errors(f"building the indexes of {t}"):
            async with self._pool.acquire() as conn, conn.transaction():
                # pgvector builds an HNSW graph far faster when it fits in memory
                await conn.execute(
                    "SELECT set_config('maintenance_work_mem', $1, true), "
                    "set_config('max_parallel_maintenance_workers', $2, true)",
                    BULK_INDEX_MEMORY,
                    str(max(1, (os.cpu_count() or 2) - 1)),
                    timeout=self._timeout,
                )
                await conn.execute(self._ddl())
        await self._execute(f"analysing {t}", f"ANALYZE {t}")

    def _secondary_indexes(self) -> list[str]:
        suffixes = [self._suffix + "_" + c for c in ("chunk_ids", *SCOPE_COLUMNS.values())]
        return [self._suffix + "_hnsw", *suffixes] if self._hnsw else suffixes

    def _index_name(self, bare_suffix: str) -> str:
        name = self._tables.index(bare_suffix)
        if self._tables.schema is None:
            return name
        return f"{quote_ident(self._tables.schema)}.{name}"

    # -- reads ---------------------------------------------------------------------------------
    # get, get_vectors, count, delete and scan_records: PgVectorReads, on HexragVectorRows

    def set_exact_search(self, exact: bool) -> bool:
        """Search exactly (never the HNSW index) while ``exact`` is true, else as built
        (:class:`~hexrag.ports.ExactSearchSwitch`); returns the previous setting."""
        previous, self._exact = self._exact, bool(exact) or self._configured_exact
        return previous

    def _query_vector(self, vector: np.ndarray | Sequence[float]) -> np.ndarray:
        return vector_array(vector, dim=self._dim, record_id="<query>")

    async def _top_hits(
        self, query: np.ndarray, top_k: int, scope: QueryScope | None
    ) -> list[VectorHit]:
        """The ``top_k`` admitted records with ``score >= cosine_threshold``, best first;
        ties on score broken by id (code-point order); hits carry ``vector=None``."""
        zero_query = not np.any(query)
        if zero_query and self._threshold > 0:
            return []  # a zero vector has cosine 0 with everything
        candidates = top_k + CANDIDATE_SLACK
        scoped = scope is not None and not scope.is_empty
        use_index = (
            self._hnsw
            and not self._exact
            and not scoped
            and not zero_query
            and self._threshold > 0
            and candidates <= EF_SEARCH_MAX
        )
        if use_index:
            ef = max(self._ef_search, candidates)
            rows = await self._fetch(
                f"searching {self._table}",
                self._index_sql(),
                query.tolist(),
                self._threshold,
                candidates,
                str(ef),
                top_k,
            )
        else:
            where, scope_params = scope_condition(scope, first_param=4)
            rows = await self._fetch(
                f"searching {self._table}",
                self._exact_sql(where),
                query.tolist(),
                self._threshold,
                top_k,
                *scope_params,
            )
        return [
            VectorHit(record=row_to_vector_record(row, with_vector=False), score=row["score"])
            for row in rows
        ]

    def _exact_sql(self, where: str) -> str:
        return exact_search_sql(self._table, _HIT_COLUMNS, where)

    def _index_sql(self) -> str:
        return index_search_sql(self._table, _HIT_COLUMNS)


_VECTOR_COLUMN = (
    "SELECT atttypmod, attstorage FROM pg_attribute WHERE attrelid = to_regclass($1) "
    "AND attname = 'vector' AND NOT attisdropped"
)


def _plain(row: Any) -> bool:
    """Whether the ``pg_attribute`` row says the vector column is stored inline."""
    storage = row["attstorage"]
    return storage in (b"p", "p")
