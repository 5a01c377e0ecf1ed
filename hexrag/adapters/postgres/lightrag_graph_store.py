"""``PGTableGraphStorage``'s tables (``lightrag_graph_nodes`` / ``_edges``) as a
:class:`~hexrag.ports.GraphStore`: one edge per pair, neighbours in LightRAG's order (see
:mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hexrag.adapters.postgres.graph_rows import PgGraph
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg
from hexrag.adapters.postgres.lightrag_graph_rows import (
    GRAPH_NAMESPACE,
    LightRAGGraphRows,
    node_to_entity,
)

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
