"""LightRAG's ``lightrag_llm_cache`` table as a :class:`~hexrag.ports.Cache` (see
:mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hexrag.adapters.postgres.lightrag_base import _LightRAGPg
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

if TYPE_CHECKING:
    import asyncpg

__all__ = ["LightRAGPgCache"]


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
        found = await self._workspace_rows("lightrag_llm_cache", _CACHE_COLUMNS, keys)
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
        await self._execute_many(
            f"writing {len(rows)} rows into lightrag_llm_cache",
            """INSERT INTO lightrag_llm_cache (workspace, id, original_prompt,
                   return_value, chunk_id, cache_type, queryparam)
               VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)
               ON CONFLICT (workspace, id) DO UPDATE
               SET original_prompt = EXCLUDED.original_prompt,
                   return_value = EXCLUDED.return_value, chunk_id = EXCLUDED.chunk_id,
                   cache_type = EXCLUDED.cache_type, queryparam = EXCLUDED.queryparam,
                   update_time = CURRENT_TIMESTAMP""",
            rows,
        )

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys; unknown keys are ignored."""
        await self._delete_workspace_ids("lightrag_llm_cache", keys)

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
        rows = await self._scan_workspace("lightrag_llm_cache", _CACHE_COLUMNS, cursor, limit)
        items = [(r["id"], self._entry(r)) for r in rows]
        return Page(items, items[-1][0] if len(items) == limit else None)

