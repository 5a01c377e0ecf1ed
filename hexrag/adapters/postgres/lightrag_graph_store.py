"""``PGTableGraphStorage``'s tables (``lightrag_graph_nodes`` / ``_edges``) as a
:class:`~hexrag.ports.GraphStore`: one edge per pair, neighbours in LightRAG's order (see
:mod:`hexrag.adapters.postgres.lightrag_layout`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hexrag.adapters.postgres import lightrag_graph_sql as _gsql
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg
from hexrag.core.ingest.ids import relation_id
from hexrag.domain.errors import InvalidQuery
from hexrag.domain.records import Entity, Relation
from hexrag.ports.graph_store import GraphStoreTraits
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

if TYPE_CHECKING:
    import asyncpg

__all__ = ["LightRAGPgGraphStore", "node_to_entity"]


_NAMESPACE = "chunk_entity_relation"  # PGTableGraphStorage's default graph namespace



def _float_or_none(value: Any) -> float | None:
    try:
        return None if value is None or value == "" else float(value)
    except (TypeError, ValueError):
        return None


def node_to_entity(name: str, attrs: dict[str, Any]) -> Entity:
    """A node's JSONB ``properties`` -> :class:`Entity` (LightRAG's node attributes)."""
    if attrs.get("entity_id") == name:
        del attrs["entity_id"]
    fields: dict[str, Any] = {}
    for key in ("entity_type", "description", "file_path"):
        if isinstance(attrs.get(key), str):
            fields[key] = attrs.pop(key)
    if "source_id" in attrs:
        fields["source_id"] = attrs.pop("source_id")
    created = attrs.get("created_at")
    if isinstance(created, int) and not isinstance(created, bool):
        fields["created_at"] = attrs.pop("created_at")
    return Entity(name=name, properties=attrs, **fields)



def _props(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = json.loads(value)
    return dict(value or {})


class LightRAGPgGraphStore(_LightRAGPg):
    """``PGTableGraphStorage``'s tables as a :class:`~hexrag.ports.GraphStore` (one edge per
    pair, neighbours in LightRAG's order: sorted by name)."""

    _kind = "LightRAG graph tables"

    @property
    def traits(self) -> GraphStoreTraits:
        """LightRAG's table graph: one edge per pair under the pair's id, stored ``src < tgt``,
        neighbours by name, chunk lists by pair (database collation), ``<SEP>`` split."""
        return GraphStoreTraits(
            one_edge_per_pair=True, orientation="sorted", edge_order="neighbour_name",
            chunk_list_order="backend", source_id_split="sep",
        )

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        workspace: str,
        namespace: str = _NAMESPACE,
        timeout: float | None = None,
    ) -> None:
        super().__init__(pool, workspace=workspace, timeout=timeout)
        self._graph_ns = namespace

    def _relation(self, src: str, tgt: str, props: Any) -> Relation:
        attrs = _props(props)
        weight = attrs.pop("weight", None)
        created = attrs.pop("created_at", None)
        return Relation(
            id=relation_id(src, tgt),
            src_id=src,
            tgt_id=tgt,
            description=attrs.pop("description", None),
            keywords=attrs.pop("keywords", None),
            weight=_float_or_none(weight),
            source_id=attrs.pop("source_id", None),
            file_path=attrs.pop("file_path", None),
            created_at=int(created) if isinstance(created, (int, float)) else None,
            properties=attrs,
        )

    async def get_nodes(self, names: Sequence[str]) -> dict[str, Entity]:
        """Nodes by name (missing names absent)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        rows = await self._fetch(
            "reading lightrag_graph_nodes",
            _gsql.NODES_BY_ID,
            self._workspace,
            self._graph_ns,
            wanted,
        )
        found = {r["id"]: node_to_entity(r["id"], _props(r["properties"])) for r in rows}
        return {n: found[n] for n in wanted if n in found}

    async def get_nodes_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Entity], dict[str, int]]:
        """:meth:`get_nodes` and :meth:`node_degrees` in one statement
        (:class:`~hexrag.ports.graph_store.NodesWithDegrees`)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}, {}
        rows = await self._fetch("reading lightrag_graph_nodes with degrees",
                                 _gsql.NODES_WITH_DEGREES, self._workspace, self._graph_ns,
                                 wanted)
        found = {r["id"]: node_to_entity(r["id"], _props(r["properties"])) for r in rows
                 if r["found"]}
        degrees = {r["id"]: int(r["degree"]) for r in rows}
        return {n: found[n] for n in wanted if n in found}, {n: degrees[n] for n in wanted}

    async def _degrees(self, names: list[str]) -> dict[str, int]:
        rows = await self._fetch(
            "counting degrees in lightrag_graph_edges",
            _gsql.NODE_DEGREES,
            self._workspace,
            self._graph_ns,
            names,
        )
        return {r["id"]: int(r["degree"]) for r in rows}

    async def node_degrees(self, names: Sequence[str]) -> dict[str, int]:
        """Incident edges per name (a self-loop counts 2), 0 for a missing node."""
        wanted = list(dict.fromkeys(names))
        found = await self._degrees(wanted) if wanted else {}
        return {n: found.get(n, 0) for n in wanted}

    async def edge_degrees(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``degree(a) + degree(b)`` per pair."""
        names = list(dict.fromkeys(n for pair in pairs for n in pair))
        found = await self._degrees(names) if names else {}
        return {(a, b): found.get(a, 0) + found.get(b, 0) for a, b in pairs}

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        """Each name's edges, neighbours sorted by name (LightRAG's order)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        rows = await self._fetch("reading edges of lightrag_graph_edges", _gsql.EDGES_OF_NODES,
                                 self._workspace, self._graph_ns, wanted)
        return self._edges_by_node(wanted, rows)

    async def get_node_edges_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """:meth:`get_node_edges` and the degree of every endpoint of those edges, in one
        statement (:class:`~hexrag.ports.graph_store.NodeEdgesWithDegrees`)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}, {}
        rows = await self._fetch("reading edges and degrees of lightrag_graph_edges",
                                 _gsql.EDGES_OF_NODES_WITH_DEGREES, self._workspace,
                                 self._graph_ns, wanted)
        degrees = {r["src_id"]: int(r["degree"]) for r in rows if r["kind"]}
        return self._edges_by_node(wanted, [r for r in rows if not r["kind"]]), degrees

    def _edges_by_node(self, wanted: list[str], rows: list[Any]) -> dict[str, list[Relation]]:
        # sorted by neighbour (LightRAG's order); the two orientations of one pair (A->B and
        # B->A, both allowed by the primary key) come in no order from the server, so the
        # node's own outgoing edge goes first: both statements give the same lists
        out: dict[str, list[tuple[str, int, Relation]]] = {n: [] for n in wanted}
        for r in rows:
            rel = self._relation(r["src_id"], r["tgt_id"], r["properties"])
            if r["src_id"] in out:
                out[r["src_id"]].append((r["tgt_id"], 0, rel))
            if r["tgt_id"] in out and r["tgt_id"] != r["src_id"]:
                out[r["tgt_id"]].append((r["src_id"], 1, rel))
        return {n: [rel for _, _, rel in sorted(edges, key=lambda e: (e[0], e[1]))]
                for n, edges in out.items()}

    async def get_edges_by_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """The edge of each pair (either orientation), keyed as requested."""
        wanted = list(dict.fromkeys((a, b) for a, b in pairs))
        if not wanted:
            return {}
        canon = [(min(a, b), max(a, b)) for a, b in wanted]
        rows = await self._fetch(
            "reading lightrag_graph_edges by pair",
            _gsql.EDGES_BY_PAIRS,
            self._workspace,
            self._graph_ns,
            [c[0] for c in canon],
            [c[1] for c in canon],
        )
        found = {
            (r["src_id"], r["tgt_id"]): self._relation(r["src_id"], r["tgt_id"], r["properties"])
            for r in rows
        }
        return {p: [found[c]] for p, c in zip(wanted, canon, strict=True) if c in found}

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Edges whose ``source_id`` (``<SEP>``-joined) names each chunk id (a scan of every
        edge: LightRAG's tables have no index on it)."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return {}
        rows = await self._fetch("reading lightrag_graph_edges by chunk id",
                                 _gsql.EDGES_BY_CHUNK_IDS, self._workspace, self._graph_ns, wanted)
        return _gsql.group_by_chunk(rows, wanted, self._relation)

    async def get_edges_by_chunk_ids_of_pairs(
        self, chunk_ids: Sequence[str], pairs: Sequence[tuple[str, str]]
    ) -> dict[str, list[Relation]]:
        """:meth:`get_edges_by_chunk_ids` restricted to the edges of ``pairs`` (either
        orientation), same lists and order, found through the primary key
        (:class:`~hexrag.ports.graph_store.PairEdgesByChunk`)."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted or not pairs:
            return {}
        rows = await self._fetch("reading lightrag_graph_edges of pairs by chunk id",
                                 _gsql.EDGES_BY_CHUNK_IDS_OF_PAIRS, self._workspace,
                                 self._graph_ns, wanted, *_gsql.both_orientations(pairs))
        return _gsql.group_by_chunk(rows, wanted, self._relation)

    async def count_nodes(self) -> int:
        """Nodes of this workspace."""
        return int(
            await self._fetchval(
                "counting lightrag_graph_nodes",
                "SELECT count(*) FROM lightrag_graph_nodes WHERE workspace = $1 AND namespace = $2",
                self._workspace,
                self._graph_ns,
            )
        )

    async def count_edges(self) -> int:
        """Edges of this workspace."""
        return int(
            await self._fetchval(
                "counting lightrag_graph_edges",
                "SELECT count(*) FROM lightrag_graph_edges WHERE workspace = $1 AND namespace = $2",
                self._workspace,
                self._graph_ns,
            )
        )

    async def scan_nodes(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Entity]:
        """A page of nodes by id."""
        check_scan_limit(limit)
        rows = await self._fetch(
            "scanning lightrag_graph_nodes",
            """SELECT id, properties::text AS properties FROM lightrag_graph_nodes
               WHERE workspace = $1 AND namespace = $2 AND ($3::text IS NULL OR id > $3::text)
               ORDER BY id LIMIT $4""",
            self._workspace,
            self._graph_ns,
            cursor,
            limit,
        )
        items = [node_to_entity(r["id"], _props(r["properties"])) for r in rows]
        return Page(items, items[-1].name if len(items) == limit else None)

    async def scan_edges(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Relation]:
        """A page of edges by ``(src_id, tgt_id)``; the cursor is that pair as JSON."""
        check_scan_limit(limit)
        after: list[Any] = [None, None]
        if cursor is not None:
            try:
                after = json.loads(cursor)
                if not (isinstance(after, list) and len(after) == 2):
                    raise ValueError(cursor)
            except ValueError:
                raise InvalidQuery(f"not a scan cursor of this store: {cursor[:40]!r}") from None
        rows = await self._fetch(
            "scanning lightrag_graph_edges",
            """SELECT src_id, tgt_id, properties::text AS properties FROM lightrag_graph_edges
               WHERE workspace = $1 AND namespace = $2
                 AND ($3::text IS NULL OR (src_id, tgt_id) > ($3::text, $4::text))
               ORDER BY src_id, tgt_id LIMIT $5""",
            self._workspace,
            self._graph_ns,
            after[0],
            after[1],
            limit,
        )
        items = [self._relation(r["src_id"], r["tgt_id"], r["properties"]) for r in rows]
        nxt = json.dumps([rows[-1]["src_id"], rows[-1]["tgt_id"]]) if len(rows) == limit else None
        return Page(items, nxt)

    async def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes (``properties`` as LightRAG writes them, ``entity_id``
        included); edges are kept."""
        last = {e.name: e for e in entities}
        if not last:
            return
        props = []
        for e in last.values():
            p: dict[str, Any] = {"entity_id": e.name}
            for key in ("entity_type", "description", "source_id", "file_path", "created_at"):
                value = getattr(e, key)
                if value is not None:
                    p[key] = value
            p.update({k: v for k, v in (e.properties or {}).items() if k not in p})
            props.append(json.dumps(p, ensure_ascii=False))
        names = sorted(last)
        by_name = dict(zip(list(last), props, strict=True))
        await self._execute(
            "writing lightrag_graph_nodes",
            """INSERT INTO lightrag_graph_nodes (workspace, namespace, id, properties, updated_at)
               SELECT $1, $2, u.id, u.props::jsonb, now()
               FROM unnest($3::text[], $4::text[]) AS u(id, props)
               ORDER BY u.id
               ON CONFLICT (workspace, namespace, id)
               DO UPDATE SET properties = EXCLUDED.properties, updated_at = now()""",
            self._workspace,
            self._graph_ns,
            names,
            [by_name[n] for n in names],
        )

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace edges: one per pair, stored ``src_id < tgt_id`` with LightRAG's
        properties; missing endpoint nodes are created (as LightRAG does)."""
        last: dict[tuple[str, str], Relation] = {}
        for r in relations:
            last[r.pair] = r
        if not last:
            return
        items = []
        for (a, b), r in sorted(last.items()):
            p: dict[str, Any] = {}
            for key in ("weight", "description", "keywords", "source_id", "file_path",
                        "created_at"):
                value = getattr(r, key)
                if value is not None:
                    p[key] = value
            p.update({k: v for k, v in (r.properties or {}).items() if k not in p})
            items.append((a, b, json.dumps(p, ensure_ascii=False)))
        await self._execute(
            "writing lightrag_graph_edges",
            """WITH endpoints AS (
                   INSERT INTO lightrag_graph_nodes (workspace, namespace, id, properties,
                       updated_at)
                   SELECT $1, $2, u.id, jsonb_build_object('entity_id', u.id), now()
                   FROM unnest($6::text[]) AS u(id)
                   ON CONFLICT (workspace, namespace, id) DO NOTHING
                   RETURNING id
               ), endpoint_write AS (SELECT COUNT(*) AS inserted_count FROM endpoints)
               INSERT INTO lightrag_graph_edges (workspace, namespace, src_id, tgt_id,
                   properties, updated_at)
               SELECT $1, $2, u.src, u.tgt, u.props::jsonb, now()
               FROM unnest($3::text[], $4::text[], $5::text[]) AS u(src, tgt, props)
               CROSS JOIN endpoint_write
               ORDER BY u.src, u.tgt
               ON CONFLICT (workspace, namespace, src_id, tgt_id)
               DO UPDATE SET properties = EXCLUDED.properties, updated_at = now()""",
            self._workspace,
            self._graph_ns,
            [i[0] for i in items],
            [i[1] for i in items],
            [i[2] for i in items],
            sorted({n for i in items for n in (i[0], i[1])}),
        )

    async def delete_nodes(self, names: Sequence[str]) -> None:
        """Remove nodes and their edges; unknown names are ignored."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return
        await self._execute(
            "deleting from the LightRAG graph",
            """WITH gone_edges AS (
                   DELETE FROM lightrag_graph_edges
                   WHERE workspace = $1 AND namespace = $2
                     AND (src_id = ANY($3::text[]) OR tgt_id = ANY($3::text[]))
               )
               DELETE FROM lightrag_graph_nodes
               WHERE workspace = $1 AND namespace = $2 AND id = ANY($3::text[])""",
            self._workspace,
            self._graph_ns,
            wanted,
        )

    async def delete_edges(self, relation_ids: Sequence[str]) -> None:
        """Remove edges by relation id (``rel-`` + md5 of the sorted pair, as ids are read)."""
        wanted = list(dict.fromkeys(relation_ids))
        if wanted:
            await self._execute(
                "deleting from lightrag_graph_edges",
                """DELETE FROM lightrag_graph_edges
                   WHERE workspace = $1 AND namespace = $2
                     AND 'rel-' || md5(src_id || tgt_id) = ANY($3::text[])""",
                self._workspace,
                self._graph_ns,
                wanted,
            )

