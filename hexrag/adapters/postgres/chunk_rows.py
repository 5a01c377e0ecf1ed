"""Which rows a PostgreSQL chunk store holds and how a row becomes a :class:`Chunk`: hexrag's
layout and LightRAG 1.5.7's (``PGKVStorage``'s ``lightrag_doc_chunks``), as strategies, with
the one implementation of the port on top of them.

A layout (:class:`ChunkRows`) names the table, the columns of a chunk, the condition that
selects the store's own rows (all of hexrag's table; one ``workspace`` of LightRAG's), the
row -> chunk conversion, the upsert statement with its parameters, and the rules the store
declares (:class:`~hexrag.ports.chunk_store.ChunkStoreTraits`). :class:`PgChunks` is the one
implementation of the port on top of it - argument normalisation (each id once), the
no-statement short-circuit on nothing to do, request-order results, the one-statement
presence read (:mod:`hexrag.adapters.postgres._presence`) - for
:class:`~hexrag.adapters.postgres.chunk_store.PgChunkStore` and
:class:`~hexrag.adapters.postgres.lightrag_chunk_store.LightRAGPgChunkStore` alike; those two
only construct (tables, DDL, workspace) and pick their layout.

A new layout is a :class:`ChunkRows` subclass: ``table``/``name``/``columns``, ``where``,
``chunk``, ``upsert`` (and ``traits`` when it keeps other rules than the port's).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from hexrag.adapters.postgres._base import PgAdapter
from hexrag.adapters.postgres._presence import chunks_with_presence
from hexrag.adapters.postgres._rows import chunk_to_row, row_to_chunk, rows_document
from hexrag.adapters.postgres.lightrag_base import _timestamp
from hexrag.adapters.postgres.lightrag_rows import CHUNK_COLUMNS, chunk_from_row
from hexrag.domain.records import Chunk
from hexrag.ports.chunk_store import PORT_CHUNK_TRAITS, ChunkStoreTraits
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

__all__ = ["ChunkRows", "HexragChunkRows", "LightRAGChunkRows", "PgChunks"]


class ChunkRows:
    """The layout strategy interface (see the module docstring)."""

    #: the quoted table name used in SQL, and its name in messages
    table: str
    name: str
    #: the columns of a chunk (``id`` first), read by :meth:`chunk`
    columns: str
    #: :attr:`columns` with the text read as ``''`` (the metadata read: no text sent)
    metadata_columns: str
    #: how many columns :attr:`columns` has (the presence read pads the probed ids to it)
    width: int
    #: the upsert runs once per row (``executemany`` in one transaction), not as one statement
    per_row: bool = False

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """The condition selecting this store's rows, its parameters numbered from
        ``first_param``."""
        raise NotImplementedError

    def chunk(self, row: Mapping[str, Any]) -> Chunk:
        """The chunk of a row of :attr:`columns`."""
        raise NotImplementedError

    def row(self, chunk: Chunk) -> Any:
        """The row written for ``chunk`` (raises on a chunk the layout cannot store; every
        chunk given is converted, so a bad one fails its batch even if a later one of its id
        replaces it)."""
        raise NotImplementedError

    def upsert(self, rows: list[Any]) -> tuple[str, list[Any]]:
        """The statement writing ``rows`` (of :meth:`row`; each id once, not empty) and its
        parameters (with :attr:`per_row`: one parameter tuple per row)."""
        raise NotImplementedError

    def traits(self) -> ChunkStoreTraits:
        """The rules the store declares."""
        return PORT_CHUNK_TRAITS


class HexragChunkRows(ChunkRows):
    """hexrag's table ``<prefix>_chunks``: typed columns ``id``, ``content``, ``tokens``,
    ``full_doc_id``, ``chunk_order_index``, ``file_path`` and every other field in a
    ``metadata`` JSON column (``None`` values kept); every row is the store's; one upsert
    statement (a JSON document of the rows)."""

    columns = (
        "id, content, tokens, full_doc_id, chunk_order_index, file_path, "
        "metadata::text AS metadata"
    )
    metadata_columns = columns.replace("id, content,", "id, ''::text AS content,")
    width = 7

    def __init__(self, table: str) -> None:
        self.table = self.name = table

    def ddl(self) -> str:
        """``CREATE TABLE IF NOT EXISTS`` of the table."""
        return f"""
            CREATE TABLE IF NOT EXISTS {self.table} (
                id text COLLATE "C" PRIMARY KEY,
                content text,
                tokens bigint,
                full_doc_id text,
                chunk_order_index bigint,
                file_path text,
                metadata jsonb NOT NULL DEFAULT '{{}}'
            );
        """

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """Every row."""
        return "TRUE", []

    def chunk(self, row: Mapping[str, Any]) -> Chunk:
        """:func:`~hexrag.adapters.postgres._rows.row_to_chunk`."""
        return row_to_chunk(row)

    def row(self, chunk: Chunk) -> dict[str, Any]:
        """:func:`~hexrag.adapters.postgres._rows.chunk_to_row`."""
        return chunk_to_row(chunk)

    def upsert(self, rows: list[Any]) -> tuple[str, list[Any]]:
        """One ``INSERT ... SELECT FROM jsonb_to_recordset`` of every row."""
        sql = f"""INSERT INTO {self.table}
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
                    file_path = EXCLUDED.file_path, metadata = EXCLUDED.metadata"""
        return sql, [rows_document(rows)]


#: LightRAG's ``upsert_text_chunk`` statement (``PGKVStorage``'s template).
_LIGHTRAG_UPSERT = """INSERT INTO lightrag_doc_chunks (workspace, id, tokens, chunk_order_index,
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
           update_time = EXCLUDED.update_time"""


class LightRAGChunkRows(ChunkRows):
    """One ``workspace`` of LightRAG's ``lightrag_doc_chunks``: fixed columns (``heading`` and
    ``sidecar`` JSONB, ``llm_cache_list``, the times), read by
    :func:`~hexrag.adapters.postgres.lightrag_rows.chunk_from_row` and written with LightRAG's
    own ``upsert_text_chunk`` statement, once per row."""

    table = name = "lightrag_doc_chunks"
    columns = CHUNK_COLUMNS
    metadata_columns = CHUNK_COLUMNS.replace("COALESCE(content, '') AS content", "'' AS content")
    width = 11
    per_row = True

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """``workspace = $n``."""
        return f"workspace = ${first_param}", [self.workspace]

    def chunk(self, row: Mapping[str, Any]) -> Chunk:
        """:func:`~hexrag.adapters.postgres.lightrag_rows.chunk_from_row`."""
        return chunk_from_row(row)

    def row(self, chunk: Chunk) -> tuple[Any, ...]:
        """The parameters of LightRAG's statement: ``llm_cache_list``, ``heading``,
        ``sidecar`` and the times from the metadata (``update_time`` defaults to
        ``create_time``)."""
        c, meta = chunk, dict(chunk.metadata or {})
        return (
            self.workspace, c.id, c.tokens, c.chunk_order_index, c.full_doc_id, c.content,
            c.file_path, json.dumps(meta.get("llm_cache_list") or []),
            json.dumps(meta.get("heading") or {}), json.dumps(meta.get("sidecar") or {}),
            _timestamp(meta.get("create_time")),
            _timestamp(meta.get("update_time", meta.get("create_time"))),
        )

    def upsert(self, rows: list[Any]) -> tuple[str, list[Any]]:
        """LightRAG's statement, once per row."""
        return _LIGHTRAG_UPSERT, rows

    def traits(self) -> ChunkStoreTraits:
        """Fixed columns: no caller metadata key round-trips whatever its value (``heading``
        and ``sidecar`` only as non-empty objects); ``llm_cache_list`` and the times are on
        every row."""
        return ChunkStoreTraits(
            metadata_keys=frozenset(),
            stamped_keys=frozenset({"llm_cache_list", "create_time", "update_time"}),
        )


class PgChunks(PgAdapter):
    """The :class:`~hexrag.ports.ChunkStore` port on a :class:`ChunkRows` layout (one
    statement per call, none when there is nothing to do); a store class derives from it and
    its construction base (:class:`~hexrag.adapters.postgres._base.PgTableAdapter`,
    ``_LightRAGPg``) and sets ``_layout``."""

    _layout: ChunkRows

    @property
    def traits(self) -> ChunkStoreTraits:
        """The rules this store declares (its layout's;
        :class:`~hexrag.ports.chunk_store.ChunkStoreTraits`)."""
        return self._layout.traits()

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by id (last write of an id wins)."""
        layout = self._layout
        rows = {c.id: layout.row(c) for c in chunks}
        if not rows:
            return
        sql, args = layout.upsert(list(rows.values()))
        action = f"upserting {len(rows)} chunks into {layout.name}"
        if layout.per_row:
            await self._execute_many(action, sql, args)
        else:
            await self._execute(action, sql, *args)

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order (duplicates repeated), ``None`` for a missing id."""
        layout, (cond, args) = self._layout, self._layout.where(2)
        rows = await self._fetch_ids(
            f"reading {{n}} chunks from {layout.name}",
            f"SELECT {layout.columns} FROM {layout.table} WHERE id = ANY($1::text[]) AND {cond}",
            ids, *args,
        )
        found = {r["id"]: layout.chunk(r) for r in rows}
        return [found.get(i) for i in ids]

    async def get_chunk_metadata(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        """The ``metadata`` of :meth:`get_chunks`' records without their texts, one statement
        (:class:`~hexrag.ports.chunk_metadata.ChunkMetadata`)."""
        layout, (cond, args) = self._layout, self._layout.where(2)
        rows = await self._fetch_ids(
            f"reading the metadata of {{n}} chunks from {layout.name}",
            f"SELECT {layout.metadata_columns} FROM {layout.table} "
            f"WHERE id = ANY($1::text[]) AND {cond}",
            ids, *args,
        )
        found = {r["id"]: layout.chunk(r).metadata for r in rows}
        return [found.get(i) for i in ids]

    async def get_chunks_and_presence(
        self, ids: Sequence[str], probe: Sequence[str]
    ) -> tuple[list[Chunk | None], set[str]]:
        """:meth:`get_chunks` of ``ids`` and which of ``probe`` are stored, in one statement
        (:class:`~hexrag.ports.chunk_presence.ChunksWithPresence`): of the probed ids only the
        missing ones come back, their id alone (an anti-join on the primary key), so the
        usual answer to hundreds of probed ids is no row at all."""
        layout, (cond, args) = self._layout, self._layout.where(3)
        nulls = ", NULL" * (layout.width - 1)

        def fetch(whole: list[str], only: list[str]) -> Awaitable[list[Any]]:
            return self._fetch(
                f"reading {len(whole)} chunks and probing {len(only)} in {layout.name}",
                f"""SELECT true AS whole, {layout.columns} FROM {layout.table}
                    WHERE id = ANY($1::text[]) AND {cond}
                    UNION ALL
                    SELECT false, q.id{nulls} FROM unnest($2::text[]) AS q(id)
                    WHERE NOT EXISTS (SELECT 1 FROM {layout.table} AS t
                                      WHERE t.id = q.id AND {cond})""",
                whole, only, *args,
            )

        return await chunks_with_presence(ids, probe, fetch, layout.chunk)

    async def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove chunks by id; unknown ids are ignored."""
        layout = self._layout
        await self._delete_ids(layout.table, ids, "chunks", where=layout.where(2),
                               name=layout.name)

    async def count(self) -> int:
        """Number of stored chunks."""
        layout, (cond, args) = self._layout, self._layout.where(1)
        return int(await self._fetchval(
            f"counting {layout.name}", f"SELECT count(*) FROM {layout.table} WHERE {cond}", *args
        ))

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks by id (keyset on the primary key, one statement;
        :class:`~hexrag.ports.scan.ScansChunks`)."""
        layout = self._layout
        rows = await self._keyset_page(
            layout.name, layout.table, layout.columns, cursor, limit, layout.where(3)
        )
        items = [layout.chunk(r) for r in rows]
        return Page(items, items[-1].id if len(items) == limit else None)
