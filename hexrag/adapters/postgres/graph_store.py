"""``PgGraphStore``: the GraphStore port on two PostgreSQL tables (nodes, edges), hexrag's
layout (:class:`~hexrag.adapters.postgres.hexrag_graph_rows.HexragGraphRows`)."""

from __future__ import annotations

from typing import Any

from hexrag.adapters.postgres.graph_rows import PgGraph
from hexrag.adapters.postgres.hexrag_graph_rows import HexragGraphRows, plan_edge_batch

__all__ = ["PgGraphStore", "plan_edge_batch"]


class PgGraphStore(PgGraph):
    """An undirected multigraph in ``<prefix>_nodes`` and ``<prefix>_edges`` (the layout:
    :mod:`~hexrag.adapters.postgres.hexrag_graph_rows`), node degrees kept in
    ``<prefix>_node_degrees``.

    The port's methods are :class:`~hexrag.adapters.postgres.graph_rows.PgGraph` on the
    :class:`~hexrag.adapters.postgres.hexrag_graph_rows.HexragGraphRows` layout: every
    method is one SQL statement, batch reads use ``unnest`` over array parameters.

    Arguments as :class:`~hexrag.adapters.postgres._base.PgAdapter`.
    """

    _kind = "graph store"
    _layout: HexragGraphRows

    def _name_tables(self) -> None:
        self._layout = HexragGraphRows(self._tables)

    @property
    def tables(self) -> tuple[str, str]:
        """The quoted, qualified nodes and edges table names."""
        return self._layout.nodes_table, self._layout.edges_table

    @property
    def _degree_table(self) -> str:
        return self._layout.degree_table

    def _ddl(self) -> str:
        return self._layout.ddl()

    async def _after_ddl(self, conn: Any) -> None:
        found = await conn.fetchval(
            "SELECT to_regclass($1) IS NOT NULL",
            self._layout.degrees_regclass(),
            timeout=self._timeout,
        )
        self._layout.stored_degrees = bool(found)
