"""How a graph sits in Neo4j: the layout strategy of :class:`~hexrag.adapters.neo4j.store.
Neo4jGraphStore`, and hexrag's own layout.

A layout names the statements each port call runs (:class:`Statements`), builds the write
parameters from records and turns the records a read returns into the port's answer (edge
order included). The store owns the driver, the schema-once logic, error translation and the
shape of every port call; LightRAG's layout
(:class:`~hexrag.adapters.neo4j.lightrag_layout.LightRAGNeo4jLayout`) is the other
implementation, not a second store class.

hexrag's layout: ``workspace`` is the node label, relations are ``DIRECTED`` relationships
with their own ``relation_id`` and an insertion sequence, so several relations per pair keep
their ids and the port's edge order (:mod:`hexrag.adapters.neo4j.cypher` documents the
properties).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hexrag.adapters.neo4j import cypher
from hexrag.adapters.neo4j.convert import (
    edge_items,
    edge_row,
    node_item,
    order_by_insertion,
    order_node_edges,
    order_pair,
)
from hexrag.domain.errors import InvalidQuery
from hexrag.domain.records import Entity, Relation

__all__ = ["Neo4jLayout", "Statements", "parse_scan_cursor"]


@dataclass(frozen=True, slots=True)
class Statements:
    """The statement each port call runs in a layout (``GET_NODES``, ``COUNT_*`` and
    ``SCAN_NODES`` are shared by every layout)."""

    schema: tuple[cypher.Statement, ...]
    upsert_nodes: cypher.Statement
    upsert_edges: cypher.Statement
    delete_nodes: cypher.Statement
    delete_edges: cypher.Statement
    drop: cypher.Statement
    node_degrees: cypher.Statement
    get_node_edges: cypher.Statement
    get_edges_by_pairs: cypher.Statement
    get_edges_by_chunk_ids: cypher.Statement
    scan_edges: cypher.Statement
    get_nodes: cypher.Statement = cypher.GET_NODES
    count_nodes: cypher.Statement = cypher.COUNT_NODES
    count_edges: cypher.Statement = cypher.COUNT_EDGES
    scan_nodes: cypher.Statement = cypher.SCAN_NODES

    def all(self) -> tuple[cypher.Statement, ...]:
        """Every statement of the layout (rendered once per store)."""
        return (
            *self.schema, self.upsert_nodes, self.upsert_edges, self.delete_nodes,
            self.delete_edges, self.drop, self.node_degrees, self.get_node_edges,
            self.get_edges_by_pairs, self.get_edges_by_chunk_ids, self.scan_edges,
            self.get_nodes, self.count_nodes, self.count_edges, self.scan_nodes,
        )


def parse_scan_cursor(cursor: str | None, width: int) -> list[Any]:
    """The JSON list of ``width`` values an edge scan's cursor holds (``None``s to start)."""
    if cursor is None:
        return [None] * width
    try:
        after = json.loads(cursor)
        if not (isinstance(after, list) and len(after) == width):
            raise ValueError(cursor)
    except ValueError:
        raise InvalidQuery(f"not a scan cursor of this store: {cursor[:40]!r}") from None
    return after


class Neo4jLayout:
    """hexrag's own layout (see the module docstring), and the strategy interface."""

    statements = Statements(
        schema=cypher.SCHEMA_STATEMENTS,
        upsert_nodes=cypher.UPSERT_NODES,
        upsert_edges=cypher.UPSERT_EDGES,
        delete_nodes=cypher.DELETE_NODES,
        delete_edges=cypher.DELETE_EDGES,
        drop=cypher.DROP_WORKSPACE,
        node_degrees=cypher.NODE_DEGREES,
        get_node_edges=cypher.GET_NODE_EDGES,
        get_edges_by_pairs=cypher.GET_EDGES_BY_PAIRS,
        get_edges_by_chunk_ids=cypher.GET_EDGES_BY_CHUNK_IDS,
        scan_edges=cypher.SCAN_EDGES,
    )
    #: ``True``: relations carry their own ids (delete by id); ``False``: a relation's id is
    #: its pair's, and deleting by id first maps ids to pairs.
    relation_ids = True

    def node_items(self, entities: Sequence[Entity]) -> list[dict[str, Any]]:
        """The ``$items`` of a node upsert (the last duplicate of a name wins)."""
        return list({e.name: node_item(e) for e in entities}.values())

    def edge_params(self, relations: Sequence[Relation], label: str) -> dict[str, Any] | None:
        """The parameters of an edge upsert (``None``: nothing to write)."""
        items = edge_items(relations)
        return {"workspace": label, "items": items} if items else None

    def drop_params(self, label: str) -> dict[str, Any]:
        """The parameters of the workspace drop."""
        return {"workspace": label}

    def node_edges(self, names: list[str], records: Sequence[Any]) -> dict[str, list[Relation]]:
        """Each name's relations, in the port's edge order."""
        rows: dict[str, list[Any]] = {name: [] for name in names}
        for record in records:
            rows[str(record["name"])].append(edge_row(record))
        return {name: order_node_edges(name, rows[name]) for name in names}

    def pair_edges(
        self, pairs: list[tuple[str, str]], records: Sequence[Any]
    ) -> dict[tuple[str, str], list[Relation]]:
        """Each requested pair's relations, in insertion order (absent when none)."""
        rows: dict[tuple[str, str], list[Any]] = {}
        for record in records:
            rows.setdefault((str(record["a"]), str(record["b"])), []).append(edge_row(record))
        return {pair: order_pair(rows[pair]) for pair in pairs if pair in rows}

    def chunk_edges(
        self, chunk_ids: list[str], records: Sequence[Any]
    ) -> dict[str, list[Relation]]:
        """Each chunk id's relations (whole ids of ``chunk_ids``), in insertion order."""
        wanted = set(chunk_ids)
        rows: dict[str, list[Any]] = {}
        for record in records:
            row = edge_row(record)
            for chunk_id in (record["props"] or {}).get("chunk_ids") or ():
                if chunk_id in wanted:
                    rows.setdefault(chunk_id, []).append(row)
        return {cid: order_by_insertion(rows[cid]) for cid in chunk_ids if cid in rows}

    def scan_edges_params(self, cursor: str | None) -> dict[str, Any]:
        """An edge scan's parameters after ``cursor`` (``[hexrag_seq, src, tgt]``)."""
        seq, src, tgt = parse_scan_cursor(cursor, 3)
        return {"after_seq": seq, "after_src": src, "after_tgt": tgt}

    def edge_page(self, records: Sequence[Any], limit: int) -> tuple[list[Relation], str | None]:
        """A scanned page's relations and the cursor after them (``None`` at the end)."""
        items = [edge_row(r).relation for r in records]
        if len(records) < limit:
            return items, None
        last = records[-1]
        return items, json.dumps([int(last["seq"]), str(last["src"]), str(last["tgt"])])
