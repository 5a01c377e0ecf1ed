"""The shared plumbing of the LightRAG-layout PostgreSQL adapters: LightRAG's tables already
exist (they are never created here) and every row belongs to one ``workspace``.

See :mod:`hexrag.adapters.postgres.lightrag_layout` for the layout itself.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from hexrag.adapters.postgres._base import PgAdapter
from hexrag.domain.errors import ConfigurationError
from hexrag.ports.scan import check_scan_limit

if TYPE_CHECKING:
    import asyncpg

__all__ = ["_LightRAGPg"]


def _timestamp(epoch: Any) -> _dt.datetime | None:
    """LightRAG's ``TIMESTAMP(0)`` columns (UTC, no zone) from epoch seconds; ``None`` stays
    NULL (read back as ``None``, as it was given)."""
    if isinstance(epoch, (int, float)) and not isinstance(epoch, bool):
        return _dt.datetime.fromtimestamp(int(epoch), _dt.UTC).replace(tzinfo=None)
    return None



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

    async def _delete_workspace_ids(self, table: str, ids: Sequence[str]) -> None:
        """Delete this workspace's rows of ``table`` whose ``id`` is in ``ids`` (one
        statement; none for no ids)."""
        await self._execute_ids(
            f"deleting from {table}",
            f"DELETE FROM {table} WHERE id = ANY($1::text[]) AND workspace = $2",
            ids,
            self._workspace,
        )

    async def _workspace_rows(
        self, table: str, columns: str, ids: Sequence[str]
    ) -> dict[str, Any]:
        """``columns`` of this workspace's rows of ``table`` whose ``id`` is in ``ids`` (one
        statement; none for no ids), keyed by id."""
        rows = await self._fetch_ids(
            f"reading {table}",
            f"SELECT {columns} FROM {table} WHERE id = ANY($1::text[]) AND workspace = $2",
            ids,
            self._workspace,
        )
        return {r["id"]: r for r in rows}

    async def _scan_workspace(
        self, table: str, columns: str, cursor: str | None, limit: int
    ) -> list[Any]:
        """One scan page of this workspace's rows of ``table``: ``columns`` of at most
        ``limit`` rows by id, after the id ``cursor`` (``None``: from the start)."""
        check_scan_limit(limit)
        return await self._fetch(
            f"scanning {table}",
            f"""SELECT {columns} FROM {table}
                WHERE workspace = $1 AND ($2::text IS NULL OR id > $2::text)
                ORDER BY id LIMIT $3""",
            self._workspace,
            cursor,
            limit,
        )
