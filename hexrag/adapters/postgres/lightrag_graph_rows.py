"""LightRAG 1.5.7's graph layout (``PGTableGraphStorage``: ``lightrag_graph_nodes`` /
``lightrag_graph_edges``, one ``workspace`` and graph ``namespace``) as a
:class:`~hexrag.adapters.postgres.graph_rows.GraphRows` strategy: one edge per pair, stored
``src_id < tgt_id``, a node's neighbours in LightRAG's order (sorted by name), node and edge
attributes in a JSONB ``properties`` column (see :mod:`hexrag.adapters.postgres.lightrag_layout`).

Reads are the statements of :mod:`hexrag.adapters.postgres.lightrag_graph_sql`; writes are
LightRAG's own shapes (``entity_id`` in a node's properties, canonical pairs, missing
endpoints created), so LightRAG reads what hexrag writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from hexrag.adapters._fastjson import loads
from hexrag.adapters.postgres import lightrag_graph_sql as _gsql
from hexrag.adapters.postgres.graph_rows import GraphRows, Statement
from hexrag.core.ingest.ids import relation_id
from hexrag.domain.errors import InvalidQuery
from hexrag.domain.records import Entity, Relation, new_entity, new_relation
from hexrag.ports.graph_store import GraphStoreTraits

__all__ = ["GRAPH_NAMESPACE", "LightRAGGraphRows", "node_to_entity"]

#: PGTableGraphStorage's default graph namespace
GRAPH_NAMESPACE = "chunk_entity_relation"

_TRAITS = GraphStoreTraits(
    one_edge_per_pair=True, orientation="sorted", edge_order="neighbour_name",
    chunk_list_order="backend", source_id_split="sep",
)


#: The pair's relationship-vector id (an MD5 per edge row), memoised: a query reads the same
#: popular edges again and again.
_relation_id = lru_cache(maxsize=1 << 16)(relation_id)


def _float_or_none(value: Any) -> float | None:
    try:
        return None if value is None or value == "" else float(value)
    except (TypeError, ValueError):
        return None


def node_to_entity(name: str, attrs: dict[str, Any]) -> Entity:
    """A node's JSONB ``properties`` -> :class:`Entity` (LightRAG's node attributes)."""
    if attrs.get("entity_id") == name:
        del attrs["entity_id"]
    entity_type = attrs.pop("entity_type") if isinstance(attrs.get("entity_type"), str) else None
    description = attrs.pop("description") if isinstance(attrs.get("description"), str) else None
    file_path = attrs.pop("file_path") if isinstance(attrs.get("file_path"), str) else None
    source_id = attrs.pop("source_id", None)
    created = attrs.get("created_at")
    if isinstance(created, int) and not isinstance(created, bool):
        del attrs["created_at"]
    else:
        created = None
    return new_entity(name, entity_type, description, source_id, file_path, created, attrs)


def _props(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = loads(value)
    return dict(value or {})


class LightRAGGraphRows(GraphRows):
    """LightRAG's graph tables, one workspace and graph namespace (module docstring)."""

    def __init__(self, workspace: str, namespace: str = GRAPH_NAMESPACE) -> None:
        self.workspace = workspace
        self.namespace = namespace

    def traits(self) -> GraphStoreTraits:
        """LightRAG's table graph: one edge per pair under the pair's id, stored ``src <
        tgt``, neighbours by name, chunk lists by pair (database collation), ``<SEP>``
        split."""
        return _TRAITS

    def _where(self, action: str, sql: str, *args: Any) -> Statement:
        return action, sql, [self.workspace, self.namespace, *args]

    # -- rows -> records -----------------------------------------------------------------

    def entity(self, row: Mapping[str, Any]) -> Entity:
        """:func:`node_to_entity` of the row's ``id`` and ``properties``."""
        return node_to_entity(row["id"], _props(row["properties"]))

    def relation(self, row: Mapping[str, Any]) -> Relation:
        """The relation of an edge row; its id is the pair's relationship-vector id."""
        src, tgt = row["src_id"], row["tgt_id"]
        attrs = _props(row["properties"])
        pop = attrs.pop
        weight = pop("weight", None)
        created = pop("created_at", None)
        return new_relation(
            _relation_id(src, tgt),
            src,
            tgt,
            pop("description", None),
            pop("keywords", None),
            _float_or_none(weight),
            pop("source_id", None),
            pop("file_path", None),
            int(created) if isinstance(created, (int, float)) else None,
            attrs,
        )

    # -- reads ---------------------------------------------------------------------------

    def nodes(self, names: list[str]) -> Statement:
        """Node rows by id."""
        return self._where("reading lightrag_graph_nodes", _gsql.NODES_BY_ID, names)

    def nodes_with_degrees(self, names: list[str]) -> Statement:
        """Each name with its node and degree."""
        return self._where(
            "reading lightrag_graph_nodes with degrees", _gsql.NODES_WITH_DEGREES, names
        )

    def degrees(self, names: list[str]) -> Statement:
        """Index-only counts per name and direction."""
        return self._where("counting degrees in lightrag_graph_edges", _gsql.NODE_DEGREES, names)

    def node_edges(self, names: list[str], *, with_degrees: bool) -> Statement:
        """The edges touching ``names`` (and one row per endpoint with its degree)."""
        if with_degrees:
            return self._where("reading edges and degrees of lightrag_graph_edges",
                               _gsql.EDGES_OF_NODES_WITH_DEGREES, names)
        return self._where("reading edges of lightrag_graph_edges", _gsql.EDGES_OF_NODES, names)

    def group_node_edges(
        self, names: list[str], rows: list[Any], *, with_degrees: bool
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """Neighbours sorted by name (LightRAG's order); the two orientations of one pair
        (A->B and B->A, both allowed by the primary key) come in no order from the server,
        so the node's own outgoing edge goes first: both statements give the same lists."""
        degrees: dict[str, int] = {}
        if with_degrees:
            degrees = {r["src_id"]: int(r["degree"]) for r in rows if r["kind"]}
            rows = [r for r in rows if not r["kind"]]
        out: dict[str, list[tuple[str, int, Relation]]] = {n: [] for n in names}
        for r in rows:
            rel = self.relation(r)
            if r["src_id"] in out:
                out[r["src_id"]].append((r["tgt_id"], 0, rel))
            if r["tgt_id"] in out and r["tgt_id"] != r["src_id"]:
                out[r["tgt_id"]].append((r["src_id"], 1, rel))
        edges = {n: [rel for _, _, rel in sorted(found, key=lambda e: (e[0], e[1]))]
                 for n, found in out.items()}
        return edges, degrees

    def edges_by_pairs(self, pairs: list[tuple[str, str]]) -> Statement:
        """The edge of each canonical pair."""
        canon = [(min(a, b), max(a, b)) for a, b in pairs]
        return self._where("reading lightrag_graph_edges by pair", _gsql.EDGES_BY_PAIRS,
                           [c[0] for c in canon], [c[1] for c in canon])

    def pair_lists(
        self, pairs: list[tuple[str, str]], rows: list[Any]
    ) -> dict[tuple[str, str], list[Relation]]:
        """The one edge of a pair, keyed as requested."""
        found = {(r["src_id"], r["tgt_id"]): self.relation(r) for r in rows}
        out: dict[tuple[str, str], list[Relation]] = {}
        for a, b in pairs:
            rel = found.get((min(a, b), max(a, b)))
            if rel is not None:
                out[(a, b)] = [rel]
        return out

    def edges_by_chunk_ids(self, ids: list[str]) -> Statement:
        """A scan of every edge: LightRAG's tables have no index on ``source_id``."""
        return self._where("reading lightrag_graph_edges by chunk id",
                           _gsql.EDGES_BY_CHUNK_IDS, ids)

    def edges_by_chunk_ids_of_pairs(
        self, ids: list[str], pairs: list[tuple[str, str]]
    ) -> Statement:
        """Through the primary key: only the pairs' edges (both orientations) are read."""
        return self._where("reading lightrag_graph_edges of pairs by chunk id",
                           _gsql.EDGES_BY_CHUNK_IDS_OF_PAIRS, ids,
                           *_gsql.both_orientations(pairs))

    def count(self, what: str) -> Statement:
        """Nodes or edges of this workspace."""
        table = "lightrag_graph_nodes" if what == "nodes" else "lightrag_graph_edges"
        return self._where(f"counting {table}",
                           f"SELECT count(*) FROM {table} WHERE workspace = $1 AND namespace = $2")

    def scan_nodes(self, cursor: str | None, limit: int) -> Statement:
        """Nodes by id; the cursor is the last id."""
        return self._where(
            "scanning lightrag_graph_nodes",
            """SELECT id, properties::text AS properties FROM lightrag_graph_nodes
               WHERE workspace = $1 AND namespace = $2 AND ($3::text IS NULL OR id > $3::text)
               ORDER BY id LIMIT $4""",
            cursor,
            limit,
        )

    def next_node_cursor(self, rows: list[Any]) -> str:
        """The last node's id."""
        return str(rows[-1]["id"])

    def scan_edges(self, cursor: str | None, limit: int) -> Statement:
        """Edges by ``(src_id, tgt_id)``; the cursor is that pair as JSON."""
        after: list[Any] = [None, None]
        if cursor is not None:
            try:
                after = json.loads(cursor)
                if not (isinstance(after, list) and len(after) == 2):
                    raise ValueError(cursor)
            except ValueError:
                raise InvalidQuery(f"not a scan cursor of this store: {cursor[:40]!r}") from None
        return self._where(
            "scanning lightrag_graph_edges",
            """SELECT src_id, tgt_id, properties::text AS properties FROM lightrag_graph_edges
               WHERE workspace = $1 AND namespace = $2
                 AND ($3::text IS NULL OR (src_id, tgt_id) > ($3::text, $4::text))
               ORDER BY src_id, tgt_id LIMIT $5""",
            after[0],
            after[1],
            limit,
        )

    def next_edge_cursor(self, rows: list[Any]) -> str:
        """The last edge's pair as JSON."""
        return json.dumps([rows[-1]["src_id"], rows[-1]["tgt_id"]])

    # -- writes --------------------------------------------------------------------------

    def upsert_nodes(self, entities: Sequence[Entity]) -> Statement | None:
        """``properties`` as LightRAG writes them (``entity_id`` included); edges kept."""
        last = {e.name: e for e in entities}
        if not last:
            return None
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
        return self._where(
            "writing lightrag_graph_nodes",
            """INSERT INTO lightrag_graph_nodes (workspace, namespace, id, properties, updated_at)
               SELECT $1, $2, u.id, u.props::jsonb, now()
               FROM unnest($3::text[], $4::text[]) AS u(id, props)
               ORDER BY u.id
               ON CONFLICT (workspace, namespace, id)
               DO UPDATE SET properties = EXCLUDED.properties, updated_at = now()""",
            names,
            [by_name[n] for n in names],
        )

    def upsert_edges(self, relations: Sequence[Relation]) -> Statement | None:
        """One edge per pair, stored ``src_id < tgt_id`` with LightRAG's properties; missing
        endpoint nodes are created (as LightRAG does)."""
        last: dict[tuple[str, str], Relation] = {}
        for r in relations:
            last[r.pair] = r
        if not last:
            return None
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
        return self._where(
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
            [i[0] for i in items],
            [i[1] for i in items],
            [i[2] for i in items],
            sorted({n for i in items for n in (i[0], i[1])}),
        )

    def delete_nodes(self, names: list[str]) -> Statement:
        """The nodes and their edges."""
        return self._where(
            "deleting from the LightRAG graph",
            """WITH gone_edges AS (
                   DELETE FROM lightrag_graph_edges
                   WHERE workspace = $1 AND namespace = $2
                     AND (src_id = ANY($3::text[]) OR tgt_id = ANY($3::text[]))
               )
               DELETE FROM lightrag_graph_nodes
               WHERE workspace = $1 AND namespace = $2 AND id = ANY($3::text[])""",
            names,
        )

    def delete_edges(self, ids: list[str]) -> Statement:
        """Edges by relation id (``rel-`` + md5 of the sorted pair, as ids are read)."""
        return self._where(
            "deleting from lightrag_graph_edges",
            """DELETE FROM lightrag_graph_edges
               WHERE workspace = $1 AND namespace = $2
                 AND 'rel-' || md5(src_id || tgt_id) = ANY($3::text[])""",
            ids,
        )
