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
from hexrag.adapters.neo4j.convert import entity_from_props, relation_from_row
from hexrag.adapters.neo4j.store import Neo4jGraphStore
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.domain.errors import InvalidQuery
from hexrag.domain.records import GRAPH_FIELD_SEP, Entity, Relation
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

if TYPE_CHECKING:
    from neo4j import AsyncDriver

__all__ = ["LightRAGNeo4jGraphStore", "lightrag_label"]

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
    for key in ("entity_type", "description", "file_path", "created_at"):
        value = getattr(entity, key)
        if value is not None:
            props[key] = value
    if entity.source_id is not None:
        props["source_id"] = _joined(entity.source_id)
    return props


def _joined(source_id: Any) -> str:
    if isinstance(source_id, str):
        return source_id
    return GRAPH_FIELD_SEP.join(parse_source_ids(source_id))


def _edge_props(rel: Relation) -> dict[str, Any]:
    props: dict[str, Any] = dict(rel.properties)
    for key in ("description", "keywords", "weight", "file_path", "created_at"):
        value = getattr(rel, key)
        if value is not None:
            props[key] = value
    if rel.source_id is not None:
        props["source_id"] = _joined(rel.source_id)
    return props


class LightRAGNeo4jGraphStore(Neo4jGraphStore):
    """A LightRAG ``Neo4JStorage`` workspace as a :class:`~hexrag.ports.GraphStore`.

    ``workspace`` is LightRAG's (empty: the ``base`` label). One statement per port call;
    the first call creates LightRAG's ``entity_id`` index (``IF NOT EXISTS``) unless
    ``create_indexes=False``. Driver handling and error translation are
    :class:`~hexrag.adapters.neo4j.store.Neo4jGraphStore`'s.
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
        label = lightrag_label(workspace)
        super().__init__(
            driver,
            workspace=label,
            database=database,
            create_indexes=create_indexes,
            owns_driver=owns_driver,
        )
        self._text.update({s.name: cypher.render(s, label) for s in cypher.LIGHTRAG_STATEMENTS})

    async def ensure_indexes(self) -> None:
        """LightRAG's ``entity_id`` index on the workspace label (idempotent)."""
        async with self._schema_lock:
            if self._schema_ready:
                return
            await self._execute(cypher.LR_CREATE_NODE_INDEX, {})
            self._schema_ready = True

    # ---------------------------------------------------------------- writes

    async def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """LightRAG's node upsert (``MERGE`` by ``entity_id``, ``SET n += props``)."""
        items = {e.name: {"entity_id": e.name, "props": _node_props(e)} for e in entities}
        if items:
            await self._run(cypher.LR_UPSERT_NODES, items=list(items.values()))

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """LightRAG's edge upsert: one undirected relationship per pair, ``SET r += props``."""
        items = [
            {"src": r.src_id, "tgt": r.tgt_id, "props": _edge_props(r)} for r in relations
        ]
        if items:
            await self._run(cypher.LR_UPSERT_EDGES, items=items)

    async def delete_nodes(self, names: Sequence[str]) -> None:
        """Remove nodes and their relationships; unknown names are ignored."""
        unique = list(dict.fromkeys(names))
        if unique:
            await self._run(cypher.LR_DELETE_NODES, names=unique)

    async def delete_edges(self, relation_ids: Sequence[str]) -> None:
        """Remove the relationships whose pair id is in ``relation_ids`` (a paged walk of the
        workspace's relationships maps ids to pairs, then one delete)."""
        wanted = set(relation_ids)
        if not wanted:
            return
        pairs: list[dict[str, str]] = []
        cursor: str | None = None
        while True:
            page = await self.scan_edges(cursor, limit=DEFAULT_SCAN_LIMIT)
            pairs += [{"a": r.src_id, "b": r.tgt_id} for r in page.items if r.id in wanted]
            if page.cursor is None:
                break
            cursor = page.cursor
        if pairs:
            await self._run(cypher.LR_DELETE_PAIRS, pairs=pairs)

    async def drop(self) -> None:
        """Delete the workspace's nodes and relationships (tests and small graphs)."""
        await self._run(cypher.LR_DROP_WORKSPACE)

    # ---------------------------------------------------------------- reads

    async def node_degrees(self, names: Sequence[str]) -> dict[str, int]:
        """LightRAG's degrees (relationships per node; a missing node has degree 0)."""
        unique = list(dict.fromkeys(names))
        if not unique:
            return {}
        records = await self._run(cypher.LR_NODE_DEGREES, names=unique)
        found = {str(r["name"]): int(r["degree"]) for r in records}
        return {name: found.get(name, 0) for name in unique}

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        """Each node's relationships in the server's order, oriented as LightRAG orients them
        (outgoing ``(node, other)``, incoming ``(other, node)``)."""
        unique = list(dict.fromkeys(names))
        if not unique:
            return {}
        records = await self._run(cypher.LR_GET_NODE_EDGES, names=unique)
        out: dict[str, list[Relation]] = {name: [] for name in unique}
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

    async def get_edges_by_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """The relationship(s) of each pair, keyed by the requested orientation."""
        unique = list(dict.fromkeys((str(a), str(b)) for a, b in pairs))
        if not unique:
            return {}
        records = await self._run(
            cypher.LR_GET_EDGES_BY_PAIRS, pairs=[{"a": a, "b": b} for a, b in unique]
        )
        out: dict[tuple[str, str], list[Relation]] = {}
        for r in records:
            rel = relation_from_row(str(r["src"]), str(r["tgt"]), r["props"] or {})
            out.setdefault((str(r["a"]), str(r["b"])), []).append(rel)
        return {pair: out[pair] for pair in unique if pair in out}

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Relationships whose ``source_id`` names each chunk id (whole ids)."""
        unique = list(dict.fromkeys(chunk_ids))
        if not unique:
            return {}
        records = await self._run(cypher.LR_GET_EDGES_BY_CHUNK_IDS, chunk_ids=unique)
        wanted = set(unique)
        out: dict[str, list[Relation]] = {}
        for r in records:
            rel = relation_from_row(str(r["src"]), str(r["tgt"]), r["props"] or {})
            for cid in parse_source_ids(rel.source_id):
                if cid in wanted:
                    out.setdefault(cid, []).append(rel)
        return {cid: out[cid] for cid in unique if cid in out}

    async def scan_nodes(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Entity]:
        """A page of nodes by ``entity_id``."""
        check_scan_limit(limit)
        records = await self._run(cypher.SCAN_NODES, after=cursor, limit=limit)
        items = [entity_from_props(str(r["name"]), r["props"] or {}) for r in records]
        return Page(items, items[-1].name if len(items) == limit else None)

    async def scan_edges(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Relation]:
        """A page of relationships by ``(source, target)``; the cursor is the JSON of the last
        row's pair."""
        check_scan_limit(limit)
        after: list[Any] = [None, None]
        if cursor is not None:
            try:
                after = json.loads(cursor)
                if not (isinstance(after, list) and len(after) == 2):
                    raise ValueError(cursor)
            except ValueError:
                raise InvalidQuery(f"not a scan cursor of this store: {cursor[:40]!r}") from None
        records = await self._run(
            cypher.LR_SCAN_EDGES, after_src=after[0], after_tgt=after[1], limit=limit
        )
        items = [relation_from_row(str(r["src"]), str(r["tgt"]), r["props"] or {}) for r in records]
        nxt = None
        if len(records) == limit:
            nxt = json.dumps([str(records[-1]["src"]), str(records[-1]["tgt"])])
        return Page(items, nxt)

    def __repr__(self) -> str:
        return f"LightRAGNeo4jGraphStore(label={self.workspace!r}, database={self.database!r})"
