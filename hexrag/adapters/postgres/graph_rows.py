"""Which rows a PostgreSQL graph store holds and how they become entities and relations:
hexrag's layout and LightRAG 1.5.7's (``PGTableGraphStorage``), as strategies, with the one
implementation of the :class:`~hexrag.ports.GraphStore` port on top of them.

A layout (:class:`GraphRows`) states every statement its tables answer (the SQL and its
parameters), the row -> entity / relation conversions, how a node's edge rows are grouped
(hexrag's edge order comes from the server, LightRAG's neighbours are sorted by name here),
how scan pages continue, and the rules the store declares
(:class:`~hexrag.ports.graph_store.GraphStoreTraits`). :class:`PgGraph` is the one
implementation of the port on top of it - argument normalisation (each name, pair and id
once), the no-statement short-circuit on nothing to do, request-order results, chunk lists in
the order asked - for :class:`~hexrag.adapters.postgres.graph_store.PgGraphStore`
(:class:`~hexrag.adapters.postgres.hexrag_graph_rows.HexragGraphRows`) and
:class:`~hexrag.adapters.postgres.lightrag_graph_store.LightRAGPgGraphStore`
(:class:`~hexrag.adapters.postgres.lightrag_graph_rows.LightRAGGraphRows`) alike; those two
only construct (tables, DDL, workspace) and pick their layout.

A new layout is a :class:`GraphRows` subclass implementing each method.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from hexrag.adapters.postgres._base import PgAdapter
from hexrag.domain.records import Entity, Relation
from hexrag.ports.graph_store import GraphStoreTraits
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

__all__ = ["GraphRows", "PgGraph", "Statement"]

#: what a layout hands the store: the action (for error messages), the SQL, its parameters
Statement = tuple[str, str, Sequence[Any]]
_T = TypeVar("_T")


class GraphRows:
    """The layout strategy interface (see the module docstring). ``names``, ``pairs`` and
    ``ids`` given to a method are distinct and not empty."""

    def traits(self) -> GraphStoreTraits:
        """The rules the store declares."""
        raise NotImplementedError

    # -- rows -> records -----------------------------------------------------------------

    def entity(self, row: Mapping[str, Any]) -> Entity:
        """The entity of a node row (of :meth:`nodes`, :meth:`nodes_with_degrees` when
        ``found``, :meth:`scan_nodes`)."""
        raise NotImplementedError

    def relation(self, row: Mapping[str, Any]) -> Relation:
        """The relation of an edge row (of the pair, chunk and scan statements)."""
        raise NotImplementedError

    # -- reads ---------------------------------------------------------------------------

    def nodes(self, names: list[str]) -> Statement:
        """The node rows of ``names`` (missing ones absent)."""
        raise NotImplementedError

    def nodes_with_degrees(self, names: list[str]) -> Statement:
        """One row per name: ``wanted`` (the name), ``found``, ``degree`` and, when found,
        the node's columns."""
        raise NotImplementedError

    def degrees(self, names: list[str]) -> Statement:
        """``name``, ``degree`` per name (a self-loop counts 2; a name may be absent: 0)."""
        raise NotImplementedError

    def node_edges(self, names: list[str], *, with_degrees: bool) -> Statement:
        """The edges of ``names`` (and, ``with_degrees``, the degree of each endpoint)."""
        raise NotImplementedError

    def group_node_edges(
        self, names: list[str], rows: list[Any], *, with_degrees: bool
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """Each name's relations in the layout's edge order (``[]`` for none), and the
        endpoints' degrees (``{}`` without ``with_degrees``)."""
        raise NotImplementedError

    def edges_by_pairs(self, pairs: list[tuple[str, str]]) -> Statement:
        """The edges joining each pair, in either orientation."""
        raise NotImplementedError

    def pair_lists(
        self, pairs: list[tuple[str, str]], rows: list[Any]
    ) -> dict[tuple[str, str], list[Relation]]:
        """The relations of each pair keyed as requested (pairs without any absent)."""
        raise NotImplementedError

    def edges_by_chunk_ids(self, ids: list[str]) -> Statement:
        """``chunk_id`` and the edge columns of every edge whose ``source_id`` names a
        chunk id, ordered by chunk id then the layout's chunk-list order."""
        raise NotImplementedError

    def edges_by_chunk_ids_of_pairs(
        self, ids: list[str], pairs: list[tuple[str, str]]
    ) -> Statement:
        """:meth:`edges_by_chunk_ids` kept to the edges of ``pairs`` (either orientation)."""
        raise NotImplementedError

    def count(self, what: str) -> Statement:
        """``count(*)`` of the ``"nodes"`` or the ``"edges"``."""
        raise NotImplementedError

    def scan_nodes(self, cursor: str | None, limit: int) -> Statement:
        """A page of node rows after ``cursor`` (``None``: from the start)."""
        raise NotImplementedError

    def next_node_cursor(self, rows: list[Any]) -> str:
        """The cursor after the last row of a full page of :meth:`scan_nodes`."""
        raise NotImplementedError

    def scan_edges(self, cursor: str | None, limit: int) -> Statement:
        """A page of edge rows after ``cursor`` (``None``: from the start)."""
        raise NotImplementedError

    def next_edge_cursor(self, rows: list[Any]) -> str:
        """The cursor after the last row of a full page of :meth:`scan_edges`."""
        raise NotImplementedError

    # -- writes --------------------------------------------------------------------------

    def upsert_nodes(self, entities: Sequence[Entity]) -> Statement | None:
        """The statement inserting or replacing ``entities`` (``None``: nothing to write)."""
        raise NotImplementedError

    def upsert_edges(self, relations: Sequence[Relation]) -> Statement | None:
        """The statement inserting or replacing ``relations`` and creating missing endpoint
        nodes (``None``: nothing to write)."""
        raise NotImplementedError

    def delete_nodes(self, names: list[str]) -> Statement:
        """The statement removing ``names`` and every incident edge."""
        raise NotImplementedError

    def delete_edges(self, ids: list[str]) -> Statement:
        """The statement removing the relations of ``ids``."""
        raise NotImplementedError


class PgGraph(PgAdapter):
    """The :class:`~hexrag.ports.GraphStore` port on a :class:`GraphRows` layout (one
    statement per call, none when there is nothing to do); a store class derives from it and
    its construction base (:class:`~hexrag.adapters.postgres._base.PgAdapter`,
    ``_LightRAGPg``) and sets ``_layout``."""

    _layout: GraphRows

    @property
    def traits(self) -> GraphStoreTraits:
        """The layout's declared rules."""
        return self._layout.traits()

    async def _rows(self, statement: Statement) -> list[Any]:
        # the tables are checked first: a layout's statement may depend on what they hold
        await self.ensure_tables()
        action, sql, args = statement
        return await self._fetch(action, sql, *args)

    # -- writes ----------------------------------------------------------------------------

    async def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes by name (last write wins); edges are kept."""
        statement = self._layout.upsert_nodes(entities)
        if statement is not None:
            await self._execute(statement[0], statement[1], *statement[2])

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace relations (as the layout keeps them), creating missing endpoint
        nodes; one statement."""
        statement = self._layout.upsert_edges(relations)
        if statement is not None:
            await self._execute(statement[0], statement[1], *statement[2])

    async def delete_nodes(self, names: Sequence[str]) -> None:
        """Remove nodes and every incident relation; unknown names are ignored."""
        wanted = list(dict.fromkeys(names))
        if wanted:
            action, sql, args = self._layout.delete_nodes(wanted)
            await self._execute(action, sql, *args)

    async def delete_edges(self, relation_ids: Sequence[str]) -> None:
        """Remove relations by id; unknown ids are ignored."""
        wanted = list(dict.fromkeys(relation_ids))
        if wanted:
            action, sql, args = self._layout.delete_edges(wanted)
            await self._execute(action, sql, *args)

    # -- reads -----------------------------------------------------------------------------

    async def get_nodes(self, names: Sequence[str]) -> dict[str, Entity]:
        """Nodes by name; missing names are absent."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        entity = self._layout.entity
        found = {e.name: e for e in map(entity, await self._rows(self._layout.nodes(wanted)))}
        return {name: found[name] for name in wanted if name in found}

    async def get_nodes_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Entity], dict[str, int]]:
        """:meth:`get_nodes` and :meth:`node_degrees` of ``names`` in one statement
        (:class:`~hexrag.ports.graph_store.NodesWithDegrees`)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}, {}
        rows = await self._rows(self._layout.nodes_with_degrees(wanted))
        entity = self._layout.entity
        found = {r["wanted"]: entity(r) for r in rows if r["found"]}
        degrees = {r["wanted"]: int(r["degree"]) for r in rows}
        return (
            {name: found[name] for name in wanted if name in found},
            {name: degrees.get(name, 0) for name in wanted},
        )

    async def node_degrees(self, names: Sequence[str]) -> dict[str, int]:
        """Incident relations per name (multi-edges each count, a self-loop counts 2); 0 for
        a missing node."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        found = await self._degrees(wanted)
        return {name: found.get(name, 0) for name in wanted}

    async def edge_degrees(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``degree(a) + degree(b)`` per requested pair, keyed as requested."""
        wanted = list(dict.fromkeys((a, b) for a, b in pairs))
        if not wanted:
            return {}
        found = await self._degrees(list(dict.fromkeys(n for pair in wanted for n in pair)))
        return {(a, b): found.get(a, 0) + found.get(b, 0) for a, b in wanted}

    async def _degrees(self, names: list[str]) -> dict[str, int]:
        rows = await self._rows(self._layout.degrees(names))
        return {r["name"]: int(r["degree"]) for r in rows}

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        """Each name's relations in the layout's edge order (``[]`` for none)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        rows = await self._rows(self._layout.node_edges(wanted, with_degrees=False))
        return self._layout.group_node_edges(wanted, rows, with_degrees=False)[0]

    async def get_node_edges_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """:meth:`get_node_edges` and the degree of every endpoint of those edges, in one
        statement (:class:`~hexrag.ports.graph_store.NodeEdgesWithDegrees`): local mode
        ranks each edge by ``degree(a) + degree(b)`` right after reading it."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}, {}
        rows = await self._rows(self._layout.node_edges(wanted, with_degrees=True))
        return self._layout.group_node_edges(wanted, rows, with_degrees=True)

    async def get_edges_by_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """Relations joining each pair (either orientation), keyed as requested."""
        wanted = list(dict.fromkeys((a, b) for a, b in pairs))
        if not wanted:
            return {}
        rows = await self._rows(self._layout.edges_by_pairs(wanted))
        return self._layout.pair_lists(wanted, rows)

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Relations whose parsed ``source_id`` names each chunk id (whole-id match)."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return {}
        return self._by_chunk(wanted, await self._rows(self._layout.edges_by_chunk_ids(wanted)))

    async def get_edges_by_chunk_ids_of_pairs(
        self, chunk_ids: Sequence[str], pairs: Sequence[tuple[str, str]]
    ) -> dict[str, list[Relation]]:
        """``get_edges_by_chunk_ids(chunk_ids)`` with every list kept to the relations
        joining one of ``pairs`` (either orientation), same order; a chunk id left with no
        relation is absent. Only the pairs' edges are read
        (:class:`~hexrag.ports.graph_store.PairEdgesByChunk`)."""
        wanted = list(dict.fromkeys(chunk_ids))
        wanted_pairs = list(dict.fromkeys((a, b) for a, b in pairs))
        if not wanted or not wanted_pairs:
            return {}
        rows = await self._rows(self._layout.edges_by_chunk_ids_of_pairs(wanted, wanted_pairs))
        return self._by_chunk(wanted, rows)

    def _by_chunk(self, wanted: list[str], rows: list[Any]) -> dict[str, list[Relation]]:
        relation = self._layout.relation
        found: dict[str, list[Relation]] = {}
        for row in rows:
            found.setdefault(row["chunk_id"], []).append(relation(row))
        return {cid: found[cid] for cid in wanted if cid in found}

    async def scan_nodes(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Entity]:
        """A page of nodes in the layout's scan order (one statement)
        (:class:`~hexrag.ports.scan.ScansGraph`)."""
        layout = self._layout
        return await self._page(
            layout.scan_nodes, layout.entity, layout.next_node_cursor, cursor, limit
        )

    async def scan_edges(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Relation]:
        """A page of relations in the layout's scan order (one statement)
        (:class:`~hexrag.ports.scan.ScansGraph`)."""
        layout = self._layout
        return await self._page(
            layout.scan_edges, layout.relation, layout.next_edge_cursor, cursor, limit
        )

    async def _page(
        self,
        statement: Callable[[str | None, int], Statement],
        convert: Callable[[Any], _T],
        next_cursor: Callable[[list[Any]], str],
        cursor: str | None,
        limit: int,
    ) -> Page[_T]:
        """One keyset page: the layout's statement for ``cursor``/``limit``, its rows
        converted, the next cursor when the page is full."""
        check_scan_limit(limit)
        rows = await self._rows(statement(cursor, limit))
        return Page([convert(row) for row in rows],
                    next_cursor(rows) if len(rows) == limit else None)

    async def count_nodes(self) -> int:
        """Number of nodes."""
        return await self._count("nodes")

    async def count_edges(self) -> int:
        """Number of relations."""
        return await self._count("edges")

    async def _count(self, what: str) -> int:
        action, sql, args = self._layout.count(what)
        return int(await self._fetchval(action, sql, *args))
