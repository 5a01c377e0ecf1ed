"""LightRAG 1.5.7's own Neo4j layout (``Neo4JStorage``), read and written in place.

LightRAG keeps a workspace's graph under one node label (the workspace, ``base`` when none):
nodes keyed by ``entity_id`` with LightRAG's properties (``entity_type``, ``description``,
``source_id``, ``file_path``, ``created_at``...), and one ``DIRECTED`` relationship per entity
pair, MERGEd without direction, whose properties are the relation's (``description``,
``keywords``, ``weight``, ``source_id`` as a ``<SEP>``-joined string, ``file_path``,
``created_at``). There are no relation ids: a relation's id is
:func:`hexrag.core.ingest.ids.relation_id` of its pair, LightRAG's relationship-vector id.

Reads use LightRAG's own statements (:data:`hexrag.adapters.neo4j.cypher.LIGHTRAG_STATEMENTS`),
so neighbours come back in the server's order, as LightRAG sees them; a chunk-id lookup splits
``source_id`` on ``<SEP>`` and compares whole ids. Writes are LightRAG's ``MERGE ... SET +=``
(several relations of one pair collapse into its one relationship, as in LightRAG; endpoint
nodes are MERGEd). Deleting by relation id walks the workspace's relationships in pages to map
ids to pairs (LightRAG deletes by pair; Neo4j has no md5 without APOC).

No Neo4j server can run on hexrag's CI machines: every statement is linted with Neo4j's own
parser (``tests/unit/test_neo4j_cypher_lint.py``) and the contract suite runs against
``NEO4J_URI`` when it is set (``tests/contract/test_neo4j_contract.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hexrag.adapters.neo4j import cypher
from hexrag.adapters.neo4j.convert import relation_from_row
from hexrag.adapters.neo4j.layouts import Neo4jLayout, Statements, parse_scan_cursor
from hexrag.adapters.neo4j.store import Neo4jGraphStore
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.domain.records import GRAPH_FIELD_SEP, Entity, Relation
from hexrag.ports.graph_store import GraphStoreTraits

if TYPE_CHECKING:
    from neo4j import AsyncDriver

__all__ = ["LightRAGNeo4jGraphStore", "LightRAGNeo4jLayout", "lightrag_label"]

_RESERVED = ("entity_id",)


def lightrag_label(workspace: str | None) -> str:
    """The node label LightRAG's ``Neo4JStorage`` uses for ``workspace`` (``base`` if none)."""
    ws = (workspace or "").strip()
    return ws if ws else "base"


def _node_props(entity: Entity) -> dict[str, Any]:
    props: dict[str, Any] = {
        k: v for k, v in dict(entity.properties).items() if k not in _RESERVED
    }
    props["entity_id"] = entity.name
    return _with_fields(props, entity, ("entity_type", "description", "file_path", "created_at"))


def _with_fields(props: dict[str, Any], record: Entity | Relation,
                 keys: tuple[str, ...]) -> dict[str, Any]:
    """``props`` with the record's set ``keys`` and its ``source_id`` (``<SEP>``-joined)."""
    for key in keys:
        value = getattr(record, key)
        if value is not None:
            props[key] = value
    if record.source_id is not None:
        props["source_id"] = _joined(record.source_id)
    return props


def _joined(source_id: Any) -> str:
    if isinstance(source_id, str):
        return source_id
    return GRAPH_FIELD_SEP.join(parse_source_ids(source_id))


def _edge_props(rel: Relation) -> dict[str, Any]:
    return _with_fields(dict(rel.properties), rel,
                        ("description", "keywords", "weight", "file_path", "created_at"))


class LightRAGNeo4jLayout(Neo4jLayout):
    """LightRAG 1.5.7's layout (see the module docstring): a strategy of
    :class:`~hexrag.adapters.neo4j.store.Neo4jGraphStore`."""

    statements = Statements(
        schema=(cypher.LR_CREATE_NODE_INDEX,),
        upsert_nodes=cypher.LR_UPSERT_NODES,
        upsert_edges=cypher.LR_UPSERT_EDGES,
        delete_nodes=cypher.LR_DELETE_NODES,
        delete_edges=cypher.LR_DELETE_PAIRS,
        drop=cypher.LR_DROP_WORKSPACE,
        node_degrees=cypher.LR_NODE_DEGREES,
        get_node_edges=cypher.LR_GET_NODE_EDGES,
        get_edges_by_pairs=cypher.LR_GET_EDGES_BY_PAIRS,
        get_edges_by_chunk_ids=cypher.LR_GET_EDGES_BY_CHUNK_IDS,
        scan_edges=cypher.LR_SCAN_EDGES,
    )
    relation_ids = False

    def node_items(self, entities: Sequence[Entity]) -> list[dict[str, Any]]:
        """LightRAG's node upsert items (``MERGE`` by ``entity_id``, ``SET n += props``)."""
        return list({e.name: {"entity_id": e.name, "props": _node_props(e)}
                     for e in entities}.values())

    def edge_params(self, relations: Sequence[Relation], label: str) -> dict[str, Any] | None:
        """LightRAG's edge upsert: one undirected relationship per pair, ``SET r += props``."""
        items = [{"src": r.src_id, "tgt": r.tgt_id, "props": _edge_props(r)} for r in relations]
        return {"items": items} if items else None

    def drop_params(self, label: str) -> dict[str, Any]:
        """No parameters (the label is in the statement)."""
        return {}

    def node_edges(self, names: list[str], records: Sequence[Any]) -> dict[str, list[Relation]]:
        """Each node's relationships in the server's order, oriented as LightRAG orients them
        (outgoing ``(node, other)``, incoming ``(other, node)``)."""
        out: dict[str, list[Relation]] = {name: [] for name in names}
        for r in records:
            name, other = str(r["name"]), r["connected"]
            if other is None:
                continue
            if r["start"] == name:
                src, tgt = name, str(other)
            else:
                src, tgt = str(other), name
            out[name].append(relation_from_row(src, tgt, r["props"] or {}))
        return out

    def pair_edges(
        self, pairs: list[tuple[str, str]], records: Sequence[Any]
    ) -> dict[tuple[str, str], list[Relation]]:
        """The relationship(s) of each pair, keyed by the requested orientation."""
        out: dict[tuple[str, str], list[Relation]] = {}
        for r in records:
            rel = relation_from_row(str(r["src"]), str(r["tgt"]), r["props"] or {})
            out.setdefault((str(r["a"]), str(r["b"])), []).append(rel)
        return {pair: out[pair] for pair in pairs if pair in out}

    def chunk_edges(
        self, chunk_ids: list[str], records: Sequence[Any]
    ) -> dict[str, list[Relation]]:
        """Relationships whose ``<SEP>``-joined ``source_id`` names each chunk id."""
        wanted = set(chunk_ids)
        out: dict[str, list[Relation]] = {}
        for r in records:
            rel = relation_from_row(str(r["src"]), str(r["tgt"]), r["props"] or {})
            for cid in parse_source_ids(rel.source_id):
                if cid in wanted:
                    out.setdefault(cid, []).append(rel)
        return {cid: out[cid] for cid in chunk_ids if cid in out}

    def scan_edges_params(self, cursor: str | None) -> dict[str, Any]:
        """An edge scan by ``(source, target)`` after ``cursor`` (``[src, tgt]``)."""
        src, tgt = parse_scan_cursor(cursor, 2)
        return {"after_src": src, "after_tgt": tgt}

    def edge_page(self, records: Sequence[Any], limit: int) -> tuple[list[Relation], str | None]:
        """A scanned page's relationships and the ``[src, tgt]`` cursor after them."""
        items = [relation_from_row(str(r["src"]), str(r["tgt"]), r["props"] or {})
                 for r in records]
        if len(records) < limit:
            return items, None
        return items, json.dumps([str(records[-1]["src"]), str(records[-1]["tgt"])])


#: What :class:`LightRAGNeo4jGraphStore` declares (see :mod:`hexrag.ports.graph_store`).
LIGHTRAG_NEO4J_TRAITS = GraphStoreTraits(
    one_edge_per_pair=True, orientation="first", edge_order="backend",
    chunk_list_order="backend", source_id_split="parsed", merges_on_replace=True,
)


class LightRAGNeo4jGraphStore(Neo4jGraphStore):
    """A LightRAG ``Neo4JStorage`` workspace as a :class:`~hexrag.ports.GraphStore`: a
    :class:`~hexrag.adapters.neo4j.store.Neo4jGraphStore` in :class:`LightRAGNeo4jLayout`.

    ``workspace`` is LightRAG's (empty: the ``base`` label). One statement per port call;
    the first call creates LightRAG's ``entity_id`` index (``IF NOT EXISTS``) unless
    ``create_indexes=False``.
    """

    def __init__(
        self,
        driver: AsyncDriver,
        *,
        workspace: str = "",
        database: str | None = None,
        create_indexes: bool = True,
        owns_driver: bool = False,
    ) -> None:
        super().__init__(
            driver,
            workspace=lightrag_label(workspace),
            database=database,
            create_indexes=create_indexes,
            owns_driver=owns_driver,
            layout=LightRAGNeo4jLayout(),
        )

    @property
    def traits(self) -> GraphStoreTraits:
        """LightRAG's Neo4j graph: one undirected relationship per pair under the pair's id
        (oriented as first written), the server's order, ``SET += props`` merging a
        replacement into what is stored."""
        return LIGHTRAG_NEO4J_TRAITS

    def __repr__(self) -> str:
        return f"LightRAGNeo4jGraphStore(label={self.workspace!r}, database={self.database!r})"
