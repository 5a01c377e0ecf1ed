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
from hexrag.adapters.postgres.lightrag_graph_sql import COUNTING_FORM, STORED_FORM
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
        self._use_stored_degrees = True

    # -- stored degrees (an explicit opt-in: hexrag.adapters.postgres.lightrag_degrees) ------

    @property
    def use_stored_degrees(self) -> bool:
        """Read the stored degrees when they are installed (the default); ``False``: always
        count them, as a store does in a database without them."""
        return self._use_stored_degrees

    @use_stored_degrees.setter
    def use_stored_degrees(self, use: bool) -> None:
        self._use_stored_degrees = bool(use)
        if not use:
            self._layout.stored_degrees = False
        else:
            self._ready = False  # the next read looks for them

    async def _after_ddl(self, conn: Any) -> None:
        self._layout.stored_degrees = self._use_stored_degrees and bool(
            await conn.fetchval(_degrees.STATUS_SQL, list(_degrees.TRIGGERS), timeout=self._timeout)
        )

    async def _rows(self, statement: Statement) -> list[Any]:
        # a statement built before the store first looked for the degrees reads them too
        await self.ensure_tables()
        if self._layout.stored_degrees and statement[1] in STORED_FORM:
            statement = (statement[0], STORED_FORM[statement[1]], statement[2])
        try:
            return await super()._rows(statement)
        except NotFound:
            # the stored degrees were removed while this store ran: look again, then count
            action, sql, args = statement
            counting = COUNTING_FORM.get(sql)
            if counting is None:
                raise
            await self.ensure_tables()
            if self._layout.stored_degrees:
                raise
            return await super()._rows((action, counting, args))

    async def stored_degrees(self) -> bool:
        """Whether the stored degrees (table and triggers) are installed in this database."""
        with translate_errors("checking hexrag's stored degrees"):
            async with self._pool.acquire(timeout=self._timeout) as conn:
                return bool(
                    await conn.fetchval(
                        _degrees.STATUS_SQL, list(_degrees.TRIGGERS), timeout=self._timeout
                    )
                )

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
