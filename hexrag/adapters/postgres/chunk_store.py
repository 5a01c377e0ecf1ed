"""``PgChunkStore``: the ChunkStore port on one PostgreSQL table."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

from hexrag.adapters.postgres._base import PgTableAdapter
from hexrag.adapters.postgres._presence import chunks_with_presence
from hexrag.adapters.postgres._rows import chunk_to_row, row_to_chunk, rows_document
from hexrag.domain.records import Chunk
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

__all__ = ["PgChunkStore"]

_COLUMNS = (
    "id, content, tokens, full_doc_id, chunk_order_index, file_path, metadata::text AS metadata"
)


class PgChunkStore(PgTableAdapter):
    """Chunks in ``<prefix>_chunks``: typed columns ``id``, ``content``, ``tokens``,
    ``full_doc_id``, ``chunk_order_index``, ``file_path`` and every other field in a
    ``metadata`` JSON column (``None`` values kept). One statement per call.

    Arguments as :class:`~hexrag.adapters.postgres._base.PgAdapter`.
    """

    _kind = "chunk store"
    _table_stem = "chunks"

    def _ddl(self) -> str:
        return f"""
            CREATE TABLE IF NOT EXISTS {self._table} (
                id text COLLATE "C" PRIMARY KEY,
                content text,
                tokens bigint,
                full_doc_id text,
                chunk_order_index bigint,
                file_path text,
                metadata jsonb NOT NULL DEFAULT '{{}}'
            );
        """

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by id (last write of an id wins)."""
        rows = {c.id: chunk_to_row(c) for c in chunks}
        if not rows:
            return
        await self._execute(
            f"upserting {len(rows)} chunks into {self._table}",
            f"""INSERT INTO {self._table}
                    (id, content, tokens, full_doc_id, chunk_order_index, file_path, metadata)
                SELECT r.id, r.content, r.tokens, r.full_doc_id, r.chunk_order_index,
                    r.file_path, coalesce(r.metadata, '{{}}'::jsonb)
                FROM jsonb_to_recordset($1::text::jsonb) AS r(id text, content text,
                    tokens bigint, full_doc_id text, chunk_order_index bigint, file_path text,
                    metadata jsonb)
                ON CONFLICT (id) DO UPDATE SET
                    content = EXCLUDED.content, tokens = EXCLUDED.tokens,
                    full_doc_id = EXCLUDED.full_doc_id,
                    chunk_order_index = EXCLUDED.chunk_order_index,
                    file_path = EXCLUDED.file_path, metadata = EXCLUDED.metadata""",
            rows_document(list(rows.values())),
        )

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order (duplicates repeated), ``None`` for a missing id."""
        rows = await self._rows_by_id(self._table, _COLUMNS, ids, "chunks")
        found = {rid: row_to_chunk(row) for rid, row in rows.items()}
        return [found.get(i) for i in ids]

    async def get_chunks_and_presence(
        self, ids: Sequence[str], probe: Sequence[str]
    ) -> tuple[list[Chunk | None], set[str]]:
        """:meth:`get_chunks` of ``ids`` and which of ``probe`` are stored, in one statement
        (:class:`~hexrag.ports.chunk_presence.ChunksWithPresence`): the probed rows send their
        id alone (an index-only scan), not their text."""

        def fetch(whole: list[str], only: list[str]) -> Awaitable[list[Any]]:
            return self._fetch(
                f"reading {len(whole)} chunks and probing {len(only)} in {self._table}",
                f"""SELECT true AS whole, {_COLUMNS} FROM {self._table}
                    WHERE id = ANY($1::text[])
                    UNION ALL
                    SELECT false, id, NULL, NULL, NULL, NULL, NULL, NULL FROM {self._table}
                    WHERE id = ANY($2::text[])""",
                whole,
                only,
            )

        return await chunks_with_presence(ids, probe, fetch, row_to_chunk)

    async def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove chunks by id; unknown ids are ignored."""
        await self._delete_ids(self._table, ids, "chunks")

    async def count(self) -> int:
        """Number of stored chunks."""
        return int(
            await self._fetchval(f"counting {self._table}", f"SELECT count(*) FROM {self._table}")
        )

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks by id (keyset on the primary key, one statement;
        :class:`~hexrag.ports.scan.ScansChunks`)."""
        check_scan_limit(limit)
        rows = await self._fetch(
            f"scanning {self._table}",
            f"""SELECT {_COLUMNS} FROM {self._table}
                WHERE $1::text IS NULL OR id > $1::text ORDER BY id LIMIT $2""",
            cursor,
            limit,
        )
        items = [row_to_chunk(row) for row in rows]
        return Page(items, items[-1].id if len(items) == limit else None)
