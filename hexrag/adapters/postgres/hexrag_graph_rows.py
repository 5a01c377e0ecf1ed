"""hexrag's PostgreSQL graph layout (:class:`HexragGraphRows`): the tables
``<prefix>_nodes`` and ``<prefix>_edges`` with their statements, for
:class:`~hexrag.adapters.postgres.graph_rows.PgGraph`.

``nodes``: ``name`` (primary key), the entity's typed fields, ``source_id`` and ``properties``
as JSON. ``edges``: the relation ``id`` (primary key), ``src``/``tgt`` as stored, the
code-point-sorted pair ``pa``/``pb``, typed fields, ``chunk_ids text[]`` (the parsed
``source_id``, GIN-indexed: a chunk id matches whole, never as a substring) and two ordering
columns that implement the port's edge order:

* ``seq`` - a sequence number taken when the relation joins its pair (kept when the same id is
  upserted again between the same pair): lists by pair / chunk id follow it;
* ``gseq`` - the ``seq`` at which the pair's group was created, shared by the group's
  relations; a node's edges are ordered by ``(gseq, seq)``. A group whose last relation is
  deleted disappears, and a later relation of that pair starts a new group.

Node degrees are kept in ``<prefix>_node_degrees`` (:mod:`~hexrag.adapters.postgres._degree_sql`).
Batch reads use ``unnest`` / ``= ANY`` over array parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hexrag.adapters._seq_cursor import seq_after
from hexrag.adapters.postgres._degree_sql import DEGREES_SUFFIX, degree_ddl
from hexrag.adapters.postgres._rows import (
    entity_to_row,
    relation_to_row,
    row_to_entity,
    row_to_relation,
    rows_document,
)
from hexrag.adapters.postgres._sql import TableNames
from hexrag.adapters.postgres.graph_rows import GraphRows, Statement
from hexrag.domain.records import Entity, Relation
from hexrag.ports.graph_store import PORT_GRAPH_TRAITS, GraphStoreTraits

__all__ = ["HexragGraphRows", "plan_edge_batch"]

_NODE_COLUMNS = (
    "name, entity_type, description, source_id::text AS source_id, file_path, created_at, "
    "properties::text AS properties"
)
_NODE_COLUMNS_N = (
    "n.name, n.entity_type, n.description, n.source_id::text AS source_id, n.file_path, "
    "n.created_at, n.properties::text AS properties"
)
_EDGE_COLUMNS = (
    "e.id, e.src, e.tgt, e.description, e.keywords, e.weight, e.source_id::text AS source_id, "
    "e.file_path, e.created_at, e.properties::text AS properties"
)


def plan_edge_batch(relations: Sequence[Relation]) -> list[dict[str, Any]]:
    """The rows one ``upsert_edges`` call writes, as if its relations were applied in order.

    An id repeated with the same pair is replaced in place (last value, first position); an
    id whose pair changes inside the batch moves to its last position and is marked
    ``fresh`` (it gets a new place in the edge order even if the stored pair is the same).
    Each row carries ``ord``, its position in the batch.
    """
    planned: dict[str, dict[str, Any]] = {}
    for relation in relations:
        row = relation_to_row(relation)
        previous = planned.get(relation.id)
        if previous is not None and (previous["pa"], previous["pb"]) == (row["pa"], row["pb"]):
            row["fresh"] = previous["fresh"]
            planned[relation.id] = row  # keeps the dict position
        else:
            row["fresh"] = previous is not None
            planned.pop(relation.id, None)
            planned[relation.id] = row
    out = list(planned.values())
    for ord_, row in enumerate(out):
        row["ord"] = ord_
    return out


class HexragGraphRows(GraphRows):
    """hexrag's graph layout under one table prefix (see the module docstring).

    ``stored_degrees`` says whether the degrees table exists (set by the store once its
    tables are checked; an older table set opened without DDL rights has none, and degrees
    are then counted at read time).
    """

    def __init__(self, names: TableNames) -> None:
        self._names = names
        self.nodes_table = names.qualified("nodes")
        self.edges_table = names.qualified("edges")
        self._seq = names.qualified("edges_seq")
        self.degree_table = names.qualified(DEGREES_SUFFIX)
        self.stored_degrees = False

    def traits(self) -> GraphStoreTraits:
        """The port's own rules."""
        return PORT_GRAPH_TRAITS

    def ddl(self) -> str:
        """``CREATE ... IF NOT EXISTS`` of the tables, indexes and the degree triggers."""
        n, e, idx = self.nodes_table, self.edges_table, self._names.index
        return f"""
            CREATE SEQUENCE IF NOT EXISTS {self._seq};
            CREATE TABLE IF NOT EXISTS {n} (
                name text COLLATE "C" PRIMARY KEY,
                entity_type text,
                description text,
                source_id jsonb,
                file_path text,
                created_at bigint,
                properties jsonb NOT NULL DEFAULT '{{}}',
                seq bigint NOT NULL DEFAULT nextval('{self._seq}')
            );
            ALTER TABLE {n} ADD COLUMN IF NOT EXISTS
                seq bigint NOT NULL DEFAULT nextval('{self._seq}');
            CREATE INDEX IF NOT EXISTS {idx("nodes_by_seq")} ON {n} (seq);
            CREATE TABLE IF NOT EXISTS {e} (
                id text COLLATE "C" PRIMARY KEY,
                src text COLLATE "C" NOT NULL,
                tgt text COLLATE "C" NOT NULL,
                pa text COLLATE "C" NOT NULL,
                pb text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                gseq bigint NOT NULL,
                description text,
                keywords text,
                weight double precision,
                source_id jsonb,
                file_path text,
                created_at bigint,
                properties jsonb NOT NULL DEFAULT '{{}}',
                chunk_ids text[] NOT NULL DEFAULT '{{}}'
            );
            CREATE INDEX IF NOT EXISTS {idx("edges_src")} ON {e} (src);
            CREATE INDEX IF NOT EXISTS {idx("edges_tgt")} ON {e} (tgt);
            CREATE INDEX IF NOT EXISTS {idx("edges_pair")} ON {e} (pa, pb, seq);
            CREATE INDEX IF NOT EXISTS {idx("edges_by_seq")} ON {e} (seq);
            CREATE INDEX IF NOT EXISTS {idx("edges_chunk_ids")} ON {e} USING gin (chunk_ids);
        """ + degree_ddl(
            edges=e,
            degrees=self.degree_table,
            degrees_regclass=self._names.regclass_text(DEGREES_SUFFIX),
            function=self._names.qualified("edges_count_degrees"),
            triggers=(idx("edges_degrees_ins"), idx("edges_degrees_del"), idx("edges_degrees_upd")),
        )

    def degrees_regclass(self) -> str:
        """The degrees table's name as ``to_regclass`` reads it."""
        return self._names.regclass_text(DEGREES_SUFFIX)

    def _degree_of(self, name: str) -> str:
        """SQL for the degree of the node named by the column expression ``name``: the
        stored count (a node without edges has no row), or two index-only counts on a
        table set without the degrees table."""
        if self.stored_degrees:
            return (
                f"coalesce((SELECT dg.degree FROM {self.degree_table} AS dg "
                f"WHERE dg.name = {name}), 0)"
            )
        e = self.edges_table
        return (
            f"(SELECT count(*) FROM {e} AS s WHERE s.src = {name}) "
            f"+ (SELECT count(*) FROM {e} AS t WHERE t.tgt = {name})"
        )

    # -- rows -> records -----------------------------------------------------------------

    def entity(self, row: Mapping[str, Any]) -> Entity:
        """:func:`~hexrag.adapters.postgres._rows.row_to_entity`."""
        return row_to_entity(row)

    def relation(self, row: Mapping[str, Any]) -> Relation:
        """:func:`~hexrag.adapters.postgres._rows.row_to_relation`."""
        return row_to_relation(row)

    # -- reads ---------------------------------------------------------------------------

    def nodes(self, names: list[str]) -> Statement:
        """Node rows by name."""
        return (
            f"reading {len(names)} nodes from {self.nodes_table}",
            f"SELECT {_NODE_COLUMNS} FROM {self.nodes_table} WHERE name = ANY($1::text[])",
            [names],
        )

    def nodes_with_degrees(self, names: list[str]) -> Statement:
        """Each name with its node (left join) and degree."""
        return (
            f"reading {len(names)} nodes and degrees from {self.nodes_table}",
            f"""SELECT q.name AS wanted, n.name IS NOT NULL AS found, {_NODE_COLUMNS_N},
                    {self._degree_of("q.name")} AS degree
                FROM unnest($1::text[]) AS q(name)
                LEFT JOIN {self.nodes_table} AS n ON n.name = q.name""",
            [names],
        )

    def degrees(self, names: list[str]) -> Statement:
        """The degree of each name."""
        return (
            f"counting degrees of {len(names)} nodes",
            f"""SELECT q.name, {self._degree_of("q.name")} AS degree
                FROM unnest($1::text[]) AS q(name)""",
            [names],
        )

    def node_edges(self, names: list[str], *, with_degrees: bool) -> Statement:
        """One row per (requested node, incident edge) in the edge order; with the ends'
        degrees (each distinct end's once, joined to its edges' rows)."""
        # one index scan per end (a bitmap OR per name costs twice as much); a self-loop
        # comes from the src side only
        e = self.edges_table
        found = f"""SELECT e.src AS node, e.gseq, e.seq, {_EDGE_COLUMNS}
                FROM {e} AS e WHERE e.src = ANY($1::text[])
                UNION ALL
                SELECT e.tgt, e.gseq, e.seq, {_EDGE_COLUMNS}
                FROM {e} AS e WHERE e.tgt = ANY($1::text[]) AND e.src <> e.tgt"""
        if not with_degrees:
            return (
                f"reading edges of {len(names)} nodes from {e}",
                f"SELECT * FROM ({found}) AS ends ORDER BY node, gseq, seq",
                [names],
            )
        return (
            f"reading edges and degrees of {len(names)} nodes from {e}",
            f"""WITH found AS MATERIALIZED ({found}),
                ends AS (SELECT src AS name FROM found UNION SELECT tgt FROM found),
                deg AS MATERIALIZED (
                    SELECT ends.name, {self._degree_of("ends.name")} AS degree FROM ends
                )
            SELECT found.*, ds.degree AS src_degree, dt.degree AS tgt_degree
            FROM found
            JOIN deg AS ds ON ds.name = found.src
            JOIN deg AS dt ON dt.name = found.tgt
            ORDER BY found.node, found.gseq, found.seq""",
            [names],
        )

    def group_node_edges(
        self, names: list[str], rows: list[Any], *, with_degrees: bool
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """Rows in order, each edge between two requested names built once."""
        out: dict[str, list[Relation]] = {name: [] for name in names}
        built: dict[str, Relation] = {}
        for row in rows:
            rel = built.get(row["id"])
            if rel is None:
                rel = built[row["id"]] = row_to_relation(row)
            out[row["node"]].append(rel)
        degrees: dict[str, int] = {}
        if with_degrees:
            for row in rows:
                degrees[row["src"]] = int(row["src_degree"])
                degrees[row["tgt"]] = int(row["tgt_degree"])
        return out, degrees

    def edges_by_pairs(self, pairs: list[tuple[str, str]]) -> Statement:
        """Every relation of each canonical pair, in insertion order."""
        canonical = list(dict.fromkeys((a, b) if a <= b else (b, a) for a, b in pairs))
        return (
            f"reading edges of {len(pairs)} pairs from {self.edges_table}",
            f"""SELECT q.pa AS req_a, q.pb AS req_b, {_EDGE_COLUMNS}
                FROM unnest($1::text[], $2::text[]) AS q(pa, pb)
                JOIN {self.edges_table} AS e ON e.pa = q.pa AND e.pb = q.pb
                ORDER BY q.pa, q.pb, e.seq""",
            [[a for a, _ in canonical], [b for _, b in canonical]],
        )

    def pair_lists(
        self, pairs: list[tuple[str, str]], rows: list[Any]
    ) -> dict[tuple[str, str], list[Relation]]:
        """Every relation of a pair, keyed as requested."""
        by_pair: dict[tuple[str, str], list[Relation]] = {}
        for row in rows:
            by_pair.setdefault((row["req_a"], row["req_b"]), []).append(row_to_relation(row))
        out: dict[tuple[str, str], list[Relation]] = {}
        for a, b in pairs:
            rels = by_pair.get((a, b) if a <= b else (b, a))
            if rels:
                out[(a, b)] = list(rels)
        return out

    def edges_by_chunk_ids(self, ids: list[str]) -> Statement:
        """Through the ``chunk_ids`` GIN index, in insertion order per chunk id."""
        return (
            f"reading edges of {len(ids)} chunk ids from {self.edges_table}",
            f"""SELECT q.chunk_id, {_EDGE_COLUMNS}
                FROM unnest($1::text[]) AS q(chunk_id)
                JOIN {self.edges_table} AS e ON e.chunk_ids @> ARRAY[q.chunk_id]
                ORDER BY q.chunk_id, e.seq""",
            [ids],
        )

    def edges_by_chunk_ids_of_pairs(
        self, ids: list[str], pairs: list[tuple[str, str]]
    ) -> Statement:
        """Through the pair index: only the pairs' edges are read."""
        canonical = list(dict.fromkeys((a, b) if a <= b else (b, a) for a, b in pairs))
        return (
            f"reading edges of {len(canonical)} pairs by chunk id from {self.edges_table}",
            f"""SELECT c.chunk_id, {_EDGE_COLUMNS}
                FROM unnest($1::text[], $2::text[]) AS p(pa, pb)
                JOIN {self.edges_table} AS e ON e.pa = p.pa AND e.pb = p.pb
                CROSS JOIN LATERAL unnest(e.chunk_ids) AS c(chunk_id)
                WHERE c.chunk_id = ANY($3::text[])
                ORDER BY c.chunk_id, e.seq""",
            [[a for a, _ in canonical], [b for _, b in canonical], ids],
        )

    def count(self, what: str) -> Statement:
        """``count(*)`` of the nodes or edges table."""
        table = self.nodes_table if what == "nodes" else self.edges_table
        return f"counting {table}", f"SELECT count(*) FROM {table}", []

    def scan_nodes(self, cursor: str | None, limit: int) -> Statement:
        """Nodes in insertion order (keyset on their sequence number), so a copy keeps the
        node order (a LightRAG GraphML file's node order shapes LightRAG's answers)."""
        return (
            f"scanning {self.nodes_table}",
            f"""SELECT seq AS scan_seq, {_NODE_COLUMNS} FROM {self.nodes_table}
                WHERE seq > $1 ORDER BY seq LIMIT $2""",
            [seq_after(cursor), limit],
        )

    def next_node_cursor(self, rows: list[Any]) -> str:
        """The last row's sequence number."""
        return str(rows[-1]["scan_seq"])

    def scan_edges(self, cursor: str | None, limit: int) -> Statement:
        """Relations in insertion order (keyset on the insertion sequence), so a copy
        inserted page by page keeps every node's edge order."""
        return (
            f"scanning {self.edges_table}",
            f"""SELECT e.seq AS scan_seq, {_EDGE_COLUMNS} FROM {self.edges_table} AS e
                WHERE e.seq > $1 ORDER BY e.seq LIMIT $2""",
            [seq_after(cursor), limit],
        )

    def next_edge_cursor(self, rows: list[Any]) -> str:
        """The last row's sequence number."""
        return str(rows[-1]["scan_seq"])

    # -- writes --------------------------------------------------------------------------

    def upsert_nodes(self, entities: Sequence[Entity]) -> Statement | None:
        """Last write of a name wins, in batch order (node sequence numbers follow it)."""
        rows = {e.name: entity_to_row(e) for e in entities}
        if not rows:
            return None
        return (
            f"upserting {len(rows)} nodes into {self.nodes_table}",
            f"""INSERT INTO {self.nodes_table} AS n
                    (name, entity_type, description, source_id, file_path, created_at, properties)
                SELECT r.name, r.entity_type, r.description, r.source_id, r.file_path,
                    r.created_at, coalesce(r.properties, '{{}}'::jsonb)
                FROM ROWS FROM (jsonb_to_recordset($1::text::jsonb) AS (name text,
                    entity_type text, description text, source_id jsonb, file_path text,
                    created_at bigint, properties jsonb)) WITH ORDINALITY AS r(name,
                    entity_type, description, source_id, file_path, created_at, properties,
                    ord)
                ORDER BY r.ord
                ON CONFLICT (name) DO UPDATE SET
                    entity_type = EXCLUDED.entity_type, description = EXCLUDED.description,
                    source_id = EXCLUDED.source_id, file_path = EXCLUDED.file_path,
                    created_at = EXCLUDED.created_at, properties = EXCLUDED.properties""",
            [rows_document(list(rows.values()))],
        )

    def upsert_edges(self, relations: Sequence[Relation]) -> Statement | None:
        """Insert or replace relations by id, creating missing endpoint nodes; the
        endpoints of every relation in the batch are created, as if the batch were applied
        one relation at a time. A relation re-upserted between the same pair keeps its place
        in the edge order; one whose pair changed is appended to its new pair (see
        :func:`plan_edge_batch`)."""
        rows = plan_edge_batch(relations)
        if not rows:
            return None
        n, e = self.nodes_table, self.edges_table
        # All CTEs read the snapshot taken before the statement, so the group a new relation
        # joins is computed from the stored edges: the pair's group survives if some stored
        # relation of the pair is not rewritten at or before the new relation's batch position.
        return (
            f"upserting {len(rows)} edges into {e}",
            f"""WITH r AS (
                    SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS r(ord int, id text,
                        src text, tgt text, pa text, pb text, fresh boolean, description text,
                        keywords text, weight double precision, source_id jsonb,
                        file_path text, created_at bigint, properties jsonb, chunk_ids text[])
                ),
                p AS (
                    SELECT r.*, old.seq AS old_seq, old.gseq AS old_gseq,
                        (old.id IS NOT NULL AND NOT r.fresh
                         AND old.pa = r.pa AND old.pb = r.pb) AS keep
                    FROM r LEFT JOIN {e} AS old ON old.id = r.id
                ),
                fresh AS (
                    SELECT s.id, s.pa, s.pb, s.ord, nextval('{self._seq}') AS seq
                    FROM (SELECT id, pa, pb, ord FROM p WHERE NOT keep ORDER BY ord) AS s
                ),
                first_fresh AS (
                    SELECT pa, pb, min(ord) AS ford, min(seq) AS fseq
                    FROM fresh GROUP BY pa, pb
                ),
                alive AS (
                    SELECT ff.pa, ff.pb, min(x.gseq) AS gseq
                    FROM first_fresh AS ff
                    JOIN {e} AS x ON x.pa = ff.pa AND x.pb = ff.pb
                    WHERE NOT EXISTS (
                        SELECT 1 FROM p WHERE p.id = x.id AND NOT p.keep AND p.ord <= ff.ford
                    )
                    GROUP BY ff.pa, ff.pb
                ),
                new_nodes AS (
                    INSERT INTO {n} (name)
                    SELECT DISTINCT name FROM unnest($2::text[]) AS names(name)
                    ON CONFLICT (name) DO NOTHING
                )
                INSERT INTO {e} (id, src, tgt, pa, pb, seq, gseq, description, keywords, weight,
                    source_id, file_path, created_at, properties, chunk_ids)
                SELECT p.id, p.src, p.tgt, p.pa, p.pb,
                    CASE WHEN p.keep THEN p.old_seq ELSE f.seq END,
                    CASE WHEN p.keep THEN p.old_gseq ELSE coalesce(a.gseq, ff.fseq) END,
                    p.description, p.keywords, p.weight, p.source_id, p.file_path,
                    p.created_at, coalesce(p.properties, '{{}}'::jsonb), p.chunk_ids
                FROM p
                LEFT JOIN fresh AS f ON f.id = p.id
                LEFT JOIN first_fresh AS ff ON ff.pa = p.pa AND ff.pb = p.pb
                LEFT JOIN alive AS a ON a.pa = p.pa AND a.pb = p.pb
                ON CONFLICT (id) DO UPDATE SET
                    src = EXCLUDED.src, tgt = EXCLUDED.tgt, pa = EXCLUDED.pa, pb = EXCLUDED.pb,
                    seq = EXCLUDED.seq, gseq = EXCLUDED.gseq,
                    description = EXCLUDED.description, keywords = EXCLUDED.keywords,
                    weight = EXCLUDED.weight, source_id = EXCLUDED.source_id,
                    file_path = EXCLUDED.file_path, created_at = EXCLUDED.created_at,
                    properties = EXCLUDED.properties, chunk_ids = EXCLUDED.chunk_ids""",
            [
                rows_document(rows),
                # every endpoint named in the batch, also by a write a later one superseded
                list(dict.fromkeys(name for r in relations for name in (r.src_id, r.tgt_id))),
            ],
        )

    def delete_nodes(self, names: list[str]) -> Statement:
        """The nodes and every incident edge, in one statement."""
        return (
            f"deleting {len(names)} nodes from {self.nodes_table}",
            f"""WITH gone AS (
                    DELETE FROM {self.edges_table}
                    WHERE src = ANY($1::text[]) OR tgt = ANY($1::text[])
                )
                DELETE FROM {self.nodes_table} WHERE name = ANY($1::text[])""",
            [names],
        )

    def delete_edges(self, ids: list[str]) -> Statement:
        """Relations by id."""
        return (
            f"deleting {len(ids)} edges from {self.edges_table}",
            f"DELETE FROM {self.edges_table} WHERE id = ANY($1::text[])",
            [ids],
        )
