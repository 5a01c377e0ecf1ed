"""LightRAG's ``lightrag_doc_chunks`` table as a :class:`~hexrag.ports.ChunkStore` (see
:mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres._presence import chunks_with_presence
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg, _timestamp
from hexrag.adapters.postgres.lightrag_rows import CHUNK_COLUMNS, chunk_from_row
from hexrag.domain.records import Chunk
from hexrag.ports.chunk_store import ChunkStoreTraits
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

if TYPE_CHECKING:
    import asyncpg

__all__ = ["LightRAGPgChunkStore", "chunk_from_kv"]


class LightRAGPgChunkStore(_LightRAGPg):
    """``lightrag_doc_chunks`` (LightRAG's text chunks) as a :class:`~hexrag.ports.ChunkStore`."""

    _kind = "LightRAG chunk table"

    @property
    def traits(self) -> ChunkStoreTraits:
        """Fixed columns: no caller metadata key round-trips whatever its value (``heading``
        and ``sidecar`` only as non-empty objects); ``llm_cache_list`` and the times are on
        every row."""
        return ChunkStoreTraits(
            metadata_keys=frozenset(),
            stamped_keys=frozenset({"llm_cache_list", "create_time", "update_time"}),
        )

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

    async def get_chunks_and_presence(
        self, ids: Sequence[str], probe: Sequence[str]
    ) -> tuple[list[Chunk | None], set[str]]:
        """:meth:`get_chunks` of ``ids`` and which of ``probe`` are stored, in one statement
        (:class:`~hexrag.ports.chunk_presence.ChunksWithPresence`): the probed rows send their
        id alone (from LightRAG's primary key), not their text."""

        def fetch(whole: list[str], only: list[str]) -> Awaitable[list[Any]]:
            return self._fetch(
                "reading and probing lightrag_doc_chunks",
                f"""SELECT true AS whole, {CHUNK_COLUMNS} FROM lightrag_doc_chunks
                    WHERE workspace = $1 AND id = ANY($2::text[])
                    UNION ALL
                    SELECT false, id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
                    FROM lightrag_doc_chunks WHERE workspace = $1 AND id = ANY($3::text[])""",
                self._workspace,
                whole,
                only,
            )

        return await chunks_with_presence(ids, probe, fetch, chunk_from_row)

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
        rows = await self._scan_workspace("lightrag_doc_chunks", CHUNK_COLUMNS, cursor, limit)
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
        await self._delete_workspace_ids("lightrag_doc_chunks", ids)



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

