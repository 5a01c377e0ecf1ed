"""``Neo4jGraphStore``: the GraphStore port on Neo4j (official async driver)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hexrag.adapters.neo4j import cypher
from hexrag.adapters.neo4j.convert import entity_from_props
from hexrag.adapters.neo4j.errors import translate_errors
from hexrag.adapters.neo4j.layouts import Neo4jLayout
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import Entity, Relation
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

if TYPE_CHECKING:
    from neo4j import AsyncDriver

__all__ = ["Neo4jGraphStore"]


class Neo4jGraphStore:
    """A workspace of a Neo4j database as an undirected multigraph.

    ``workspace`` becomes the node label (LightRAG's layout: label = workspace, key
    ``entity_id``, relationships of type ``DIRECTED``); :mod:`hexrag.adapters.neo4j.cypher`
    documents the properties. Every port method sends one statement (one round trip); the
    first call of an instance also creates the indexes (``IF NOT EXISTS``) unless
    ``create_indexes=False``. ``get_edges_by_chunk_ids`` scans the workspace's
    relationships (O(relationships)). Needs Neo4j 5.23 or later.

    The driver is used as given and not closed, except one made by :meth:`from_url`
    (closed by :meth:`aclose`). Constructing the store opens no connection.

    ``layout`` is how the graph sits in Neo4j (:mod:`hexrag.adapters.neo4j.layouts`):
    hexrag's own by default; LightRAG's ``Neo4JStorage`` layout is
    :class:`~hexrag.adapters.neo4j.lightrag_layout.LightRAGNeo4jLayout` (opened by
    :class:`~hexrag.adapters.neo4j.lightrag_layout.LightRAGNeo4jGraphStore`).
    """

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        workspace: str,
        database: str | None = None,
        create_indexes: bool = True,
        owns_driver: bool = False,
        layout: Neo4jLayout | None = None,
    ) -> None:
        self._driver = driver
        self._workspace = cypher.validate_workspace(workspace)
        self._database = database
        self._create_indexes = create_indexes
        self._owns_driver = owns_driver
        self._schema_ready = False
        self._schema_lock = asyncio.Lock()
        self._layout = layout or Neo4jLayout()
        self._q = self._layout.statements
        self._text = {s.name: cypher.render(s, workspace) for s in self._q.all()}

    @classmethod
    def from_url(
        cls,
        uri: str | None = None,
        *,
        workspace: str,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        **driver_options: Any,
    ) -> Neo4jGraphStore:
        """A store on a new driver. Unset arguments come from ``NEO4J_URI``,
        ``NEO4J_USER``/``NEO4J_USERNAME``, ``NEO4J_PASSWORD`` and ``NEO4J_DATABASE``.

        The driver connects lazily; :meth:`aclose` closes it.
        """
        from neo4j import AsyncGraphDatabase

        uri = uri or os.environ.get("NEO4J_URI")
        if not uri:
            raise ConfigurationError("neo4j: no URI given and NEO4J_URI is not set")
        user = user or os.environ.get("NEO4J_USER") or os.environ.get("NEO4J_USERNAME")
        password = password if password is not None else os.environ.get("NEO4J_PASSWORD")
        database = database or os.environ.get("NEO4J_DATABASE") or None
        auth = (user, password or "") if user else None
        with translate_errors("create driver"):
            driver = AsyncGraphDatabase.driver(uri, auth=auth, **driver_options)
        return cls(driver, workspace=workspace, database=database, owns_driver=True)

    @property
    def workspace(self) -> str:
        """The workspace (node label)."""
        return self._workspace

    @property
    def database(self) -> str | None:
        """The Neo4j database (``None``: the server's default)."""
        return self._database

    # ----------------------------------------------------------------------------------
    # Plumbing
    # ----------------------------------------------------------------------------------

    async def _execute(self, statement: cypher.Statement, params: Mapping[str, Any]) -> list[Any]:
        from neo4j import RoutingControl

        routing = RoutingControl.READ if statement.access == "read" else RoutingControl.WRITE
        with translate_errors(statement.name):
            result = await self._driver.execute_query(
                self._text[statement.name],
                parameters_=dict(params),
                database_=self._database,
                routing_=routing,
            )
        return list(result.records)

    async def _run(self, statement: cypher.Statement, **params: Any) -> list[Any]:
        if self._create_indexes and not self._schema_ready:
            await self.ensure_indexes()
        return await self._execute(statement, params)

    async def _run_for(
        self, statement: cypher.Statement, param: str, keys: Sequence[str]
    ) -> tuple[list[str], list[Any]]:
        """``keys`` without repeats (first-seen order) and the records of ``statement`` run
        with them as ``$param``; no round trip (and no records) when there are no keys."""
        unique = list(dict.fromkeys(keys))
        if not unique:
            return unique, []
        return unique, await self._run(statement, **{param: unique})

    async def ensure_indexes(self) -> None:
        """Create the layout's indexes: hexrag's label index, ``relation_id`` index and counter
        constraint; LightRAG's ``entity_id`` index.

        Idempotent (``IF NOT EXISTS``); called by the first use of the store.
        """
        async with self._schema_lock:
            if self._schema_ready:
                return
            for statement in self._q.schema:
                await self._execute(statement, {})
            self._schema_ready = True

    async def aclose(self) -> None:
        """Close the driver if :meth:`from_url` created it; otherwise do nothing."""
        if self._owns_driver:
            with translate_errors("close"):
                await self._driver.close()

    # ----------------------------------------------------------------------------------
    # Writes
    # ----------------------------------------------------------------------------------

    async def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes by name (idempotent; replacing keeps the node's edges)."""
        items = self._layout.node_items(entities)
        if items:
            await self._run(self._q.upsert_nodes, items=items)

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace relations by ``id`` (idempotent), as if one after the other.

        Missing endpoint nodes are created with no properties. A replaced relation keeps
        its position in the edge order; one re-upserted with other endpoints is moved.
        (LightRAG's layout: one relationship per pair, properties merged.)
        """
        params = self._layout.edge_params(relations, self._workspace)
        if params is not None:
            await self._run(self._q.upsert_edges, **params)

    async def delete_nodes(self, names: Sequence[str]) -> None:
        """Remove nodes and every incident relation; unknown names are ignored."""
        unique = list(dict.fromkeys(names))
        if unique:
            await self._run(self._q.delete_nodes, names=unique)

    async def delete_edges(self, relation_ids: Sequence[str]) -> None:
        """Remove relations by id; unknown ids are ignored. A layout without relation ids
        (LightRAG's: the id is the pair's) maps ids to pairs with a paged walk of the
        workspace's relationships first, then deletes the pairs in one statement."""
        unique = list(dict.fromkeys(relation_ids))
        if not unique:
            return
        if self._layout.relation_ids:
            await self._run(self._q.delete_edges, ids=unique)
            return
        wanted = set(unique)
        pairs: list[dict[str, str]] = []
        cursor: str | None = None
        while True:
            page = await self.scan_edges(cursor, limit=DEFAULT_SCAN_LIMIT)
            pairs += [{"a": r.src_id, "b": r.tgt_id} for r in page.items if r.id in wanted]
            if page.cursor is None:
                break
            cursor = page.cursor
        if pairs:
            await self._run(self._q.delete_edges, pairs=pairs)

    async def drop(self) -> None:
        """Delete the whole workspace (nodes, relations, sequence counter) in one transaction.

        Not part of the port; meant for tests and small graphs.
        """
        await self._run(self._q.drop, **self._layout.drop_params(self._workspace))

    # ----------------------------------------------------------------------------------
    # Reads
    # ----------------------------------------------------------------------------------

    async def get_nodes(self, names: Sequence[str]) -> dict[str, Entity]:
        """Nodes by name; missing names are absent from the result (no exception)."""
        unique, records = await self._run_for(self._q.get_nodes, "names", names)
        found = {
            str(r["name"]): entity_from_props(str(r["name"]), r["props"] or {}) for r in records
        }
        return {name: found[name] for name in unique if name in found}

    async def node_degrees(self, names: Sequence[str]) -> dict[str, int]:
        """Incident relations per name: each multi-edge counts, a self-loop counts 2.

        Every requested name is a key; a missing node has degree 0.
        """
        unique, records = await self._run_for(self._q.node_degrees, "names", names)
        found = {str(r["name"]): int(r["degree"]) for r in records}
        return {name: found.get(name, 0) for name in unique}

    async def edge_degrees(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``degree(a) + degree(b)`` per requested pair (one degree query for all endpoints)."""
        if not pairs:
            return {}
        degrees = await self.node_degrees([name for pair in pairs for name in pair])
        return {(a, b): degrees[a] + degrees[b] for a, b in pairs}

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        """All relations incident to each name, in the layout's edge order (``[]`` if none)."""
        unique, records = await self._run_for(self._q.get_node_edges, "names", names)
        return self._layout.node_edges(unique, records)

    async def get_edges_by_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """Relations joining each pair, either orientation, in insertion order.

        Keys use the requested orientation; a pair with no relation is absent.
        """
        unique = list(dict.fromkeys((str(a), str(b)) for a, b in pairs))
        if not unique:
            return {}
        records = await self._run(
            self._q.get_edges_by_pairs, pairs=[{"a": a, "b": b} for a, b in unique]
        )
        return self._layout.pair_edges(unique, records)

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Relations whose ``source_id`` names each chunk id, matched as a whole id.

        Chunk ids named by no relation are absent; each list is in insertion order.
        """
        unique, records = await self._run_for(
            self._q.get_edges_by_chunk_ids, "chunk_ids", chunk_ids
        )
        return self._layout.chunk_edges(unique, records)

    async def scan_nodes(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Entity]:
        """A page of nodes by ``entity_id`` (one statement; the scan capability)."""
        check_scan_limit(limit)
        records = await self._run(self._q.scan_nodes, after=cursor, limit=limit)
        items = [entity_from_props(str(r["name"]), r["props"] or {}) for r in records]
        return Page(items, items[-1].name if len(items) == limit else None)

    async def scan_edges(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Relation]:
        """A page of relations (one statement; the scan capability): in insertion order with
        a ``[hexrag_seq, src, tgt]`` JSON cursor (LightRAG's layout: by ``(source, target)``
        with a ``[src, tgt]`` cursor)."""
        check_scan_limit(limit)
        params = self._layout.scan_edges_params(cursor)
        records = await self._run(self._q.scan_edges, limit=limit, **params)
        items, nxt = self._layout.edge_page(records, limit)
        return Page(items, nxt)

    async def count_nodes(self) -> int:
        """Number of nodes in the workspace."""
        records = await self._run(self._q.count_nodes)
        return int(records[0]["total"]) if records else 0

    async def count_edges(self) -> int:
        """Number of relations in the workspace."""
        records = await self._run(self._q.count_edges)
        return int(records[0]["total"]) if records else 0
