"""``PGTableGraphStorage``'s tables (``lightrag_graph_nodes`` / ``_edges``) as a
:class:`~hexrag.ports.GraphStore`: one edge per pair, neighbours in LightRAG's order (see
:mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hexrag.adapters.postgres import lightrag_degrees as _degrees
from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres.graph_rows import PgGraph, Statement
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg
from hexrag.adapters.postgres.lightrag_graph_rows import (
    GRAPH_NAMESPACE,
    LightRAGGraphRows,
    node_to_entity,
)
from hexrag.adapters.postgres.lightrag_graph_sql import STORED_FORM
from hexrag.domain.errors import NotFound

if TYPE_CHECKING:
    import asyncpg

__all__ = ["LightRAGPgGraphStore", "node_to_entity"]


class LightRAGPgGraphStore(PgGraph, _LightRAGPg):
    """``PGTableGraphStorage``'s tables as a :class:`~hexrag.ports.GraphStore` (one edge per
    pair, neighbours in LightRAG's order: sorted by name):
    :class:`~hexrag.adapters.postgres.graph_rows.PgGraph` on the
    :class:`~hexrag.adapters.postgres.lightrag_graph_rows.LightRAGGraphRows` layout."""

    _kind = "LightRAG graph tables"
    _layout: LightRAGGraphRows

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        workspace: str,
        namespace: str = GRAPH_NAMESPACE,
        timeout: float | None = None,
    ) -> None:
        super().__init__(pool, workspace=workspace, timeout=timeout)
        self._layout = LightRAGGraphRows(workspace, namespace)
        #: read the stored degrees when they are installed (``False``: always count them)
        self.use_stored_degrees = True
        self._stored_degrees = False  # found installed when the store last looked

    # -- stored degrees (an explicit opt-in: hexrag.adapters.postgres.lightrag_degrees) ------
    # The layout's statements count degrees; while the degrees are installed, each counting
    # statement is sent in its stored form instead (one place decides, right before sending).

    async def _after_ddl(self, conn: Any) -> None:
        self._stored_degrees = await self._degrees_installed(conn)

    async def _degrees_installed(self, conn: Any) -> bool:
        return bool(
            await conn.fetchval(_degrees.STATUS_SQL, list(_degrees.TRIGGERS), timeout=self._timeout)
        )

    async def _rows(self, statement: Statement) -> list[Any]:
        action, sql, args = statement
        await self.ensure_tables()  # looks for the degrees once
        stored = STORED_FORM.get(sql) if self.use_stored_degrees and self._stored_degrees else None
        if stored is None:
            return await super()._rows(statement)
        try:
            return await super()._rows((action, stored, args))
        except NotFound:
            # removed while this store ran (``_fetch`` marked the tables to be checked again):
            # look again, then count
            await self.ensure_tables()
            if self._stored_degrees:
                raise
            return await super()._rows(statement)

    async def stored_degrees(self) -> bool:
        """Whether the stored degrees (table and triggers) are installed in this database."""
        with translate_errors("checking hexrag's stored degrees"):
            async with self._pool.acquire(timeout=self._timeout) as conn:
                return await self._degrees_installed(conn)

    async def install_stored_degrees(self) -> None:
        """Create ``hexrag_lightrag_graph_degrees`` and the triggers keeping it (every
        workspace of the database; nothing when already there). LightRAG's tables gain four
        triggers; their rows are not changed."""
        await self._degree_script("installing hexrag's stored degrees", _degrees.INSTALL_SQL)

    async def remove_stored_degrees(self) -> None:
        """Drop the triggers, their functions and the degrees table (nothing when absent)."""
        await self._degree_script("removing hexrag's stored degrees", _degrees.REMOVE_SQL)

    async def _degree_script(self, action: str, script: str) -> None:
        with translate_errors(action):
            async with self._pool.acquire(timeout=self._timeout) as conn:
                await conn.execute(script, timeout=self._timeout)
        self._ready = False  # the next read looks again
