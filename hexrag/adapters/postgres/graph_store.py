"""``PgGraphStore``: the GraphStore port on two PostgreSQL tables (nodes, edges)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hexrag.adapters._seq_cursor import seq_after
from hexrag.adapters.postgres._base import PgAdapter
from hexrag.adapters.postgres._degree_sql import DEGREES_SUFFIX, degree_ddl
from hexrag.adapters.postgres._rows import (
    entity_to_row,
    relation_to_row,
    row_to_entity,
    row_to_relation,
    rows_document,
)
from hexrag.domain.records import Entity, Relation
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

__all__ = ["PgGraphStore", "plan_edge_batch"]

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


class PgGraphStore(PgAdapter):
    """An undirected multigraph in ``<prefix>_nodes`` and ``<prefix>_edges``.

    ``nodes``: ``name`` (primary key), the entity's typed fields, ``source_id`` and
    ``properties`` as JSON. ``edges``: the relation ``id`` (primary key), ``src``/``tgt`` as
    stored, the code-point-sorted pair ``pa``/``pb``, typed fields, ``chunk_ids text[]`` (the
    parsed ``source_id``, GIN-indexed: a chunk id matches whole, never as a substring) and
    two ordering columns that implement the port's edge order:

    * ``seq`` - a sequence number taken when the relation joins its pair (kept when the same
      id is upserted again between the same pair): lists by pair / chunk id follow it;
    * ``gseq`` - the ``seq`` at which the pair's group was created, shared by the group's
      relations; a node's edges are ordered by ``(gseq, seq)``. A group whose last relation
      is deleted disappears, and a later relation of that pair starts a new group.

    Every method is one SQL statement, batch reads use ``unnest`` over array parameters.

    Arguments as :class:`~hexrag.adapters.postgres._base.PgAdapter`.
    """

    _kind = "graph store"

    def _name_tables(self) -> None:
        self._nodes = self._tables.qualified("nodes")
        self._edges = self._tables.qualified("edges")
        self._seq = self._tables.qualified("edges_seq")
        self._degree_table = self._tables.qualified(DEGREES_SUFFIX)
        # set once the tables are checked: the degrees table exists (an older table set
        # opened without DDL rights has none, and degrees are counted at read time)
        self._stored_degrees = False

    @property
    def tables(self) -> tuple[str, str]:
        """The quoted, qualified nodes and edges table names."""
        return self._nodes, self._edges

    def _ddl(self) -> str:
        n, e, idx = self._nodes, self._edges, self._tables.index
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
            degrees=self._degree_table,
            degrees_regclass=self._tables.regclass_text(DEGREES_SUFFIX),
            function=self._tables.qualified("edges_count_degrees"),
            triggers=(idx("edges_degrees_ins"), idx("edges_degrees_del"), idx("edges_degrees_upd")),
        )

    async def _after_ddl(self, conn: Any) -> None:
        found = await conn.fetchval(
            "SELECT to_regclass($1) IS NOT NULL",
            self._tables.regclass_text(DEGREES_SUFFIX),
            timeout=self._timeout,
        )
        self._stored_degrees = bool(found)

    def _degree_of(self, name: str) -> str:
        """SQL for the degree of the node named by the column expression ``name``: the
        stored count (a node without edges has no row), or two index-only counts on a
        table set without the degrees table."""
        if self._stored_degrees:
            return (
                f"coalesce((SELECT dg.degree FROM {self._degree_table} AS dg "
                f"WHERE dg.name = {name}), 0)"
            )
        e = self._edges
        return (
            f"(SELECT count(*) FROM {e} AS s WHERE s.src = {name}) "
            f"+ (SELECT count(*) FROM {e} AS t WHERE t.tgt = {name})"
        )

    # -- writes ----------------------------------------------------------------------------------

    async def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes by name (last write wins); edges are kept."""
        rows = {e.name: entity_to_row(e) for e in entities}
        if not rows:
            return
        await self._execute(
            f"upserting {len(rows)} nodes into {self._nodes}",
            f"""INSERT INTO {self._nodes} AS n
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
            rows_document(list(rows.values())),
        )

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace relations by id, creating missing endpoint nodes; one statement.

        Endpoints of every relation in the batch are created, as if the batch were applied
        one relation at a time.

        A relation re-upserted between the same pair keeps its place in the edge order; one
        whose pair changed is appended to its new pair (see :func:`plan_edge_batch`).
        """
        rows = plan_edge_batch(relations)
        if not rows:
            return
        n, e = self._nodes, self._edges
        # All CTEs read the snapshot taken before the statement, so the group a new relation
        # joins is computed from the stored edges: the pair's group survives if some stored
        # relation of the pair is not rewritten at or before the new relation's batch position.
        await self._execute(
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
            rows_document(rows),
            # every endpoint named in the batch, also by a write that a later one superseded
            list(dict.fromkeys(name for r in relations for name in (r.src_id, r.tgt_id))),
        )

    async def delete_nodes(self, names: Sequence[str]) -> None:
        """Remove nodes and every incident relation; unknown names are ignored."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return
        await self._execute(
            f"deleting {len(wanted)} nodes from {self._nodes}",
            f"""WITH gone AS (
                    DELETE FROM {self._edges}
                    WHERE src = ANY($1::text[]) OR tgt = ANY($1::text[])
                )
                DELETE FROM {self._nodes} WHERE name = ANY($1::text[])""",
            wanted,
        )

    async def delete_edges(self, relation_ids: Sequence[str]) -> None:
        """Remove relations by id; unknown ids are ignored."""
        await self._delete_ids(self._edges, relation_ids, "edges")

    # -- reads ----------------------------------------------------------------------------------

    async def get_nodes(self, names: Sequence[str]) -> dict[str, Entity]:
        """Nodes by name; missing names are absent."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        rows = await self._fetch(
            f"reading {len(wanted)} nodes from {self._nodes}",
            f"SELECT {_NODE_COLUMNS} FROM {self._nodes} WHERE name = ANY($1::text[])",
            wanted,
        )
        found = {row["name"]: row_to_entity(row) for row in rows}
        return {name: found[name] for name in wanted if name in found}

    async def get_nodes_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Entity], dict[str, int]]:
        """:meth:`get_nodes` and :meth:`node_degrees` of ``names`` in one statement
        (:class:`~hexrag.ports.graph_store.NodesWithDegrees`)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}, {}
        await self.ensure_tables()  # the statement depends on the tables found
        rows = await self._fetch(
            f"reading {len(wanted)} nodes and degrees from {self._nodes}",
            f"""SELECT q.name AS wanted, n.name IS NOT NULL AS found, {_NODE_COLUMNS_N},
                    {self._degree_of("q.name")} AS degree
                FROM unnest($1::text[]) AS q(name)
                LEFT JOIN {self._nodes} AS n ON n.name = q.name""",
            wanted,
        )
        found = {row["wanted"]: row_to_entity(row) for row in rows if row["found"]}
        degrees = {row["wanted"]: int(row["degree"]) for row in rows}
        return (
            {name: found[name] for name in wanted if name in found},
            {name: degrees.get(name, 0) for name in wanted},
        )

    async def _degrees(self, names: list[str], action: str) -> dict[str, int]:
        # ``names`` are distinct; a self-loop counts 2 (see ``_degree_sql``)
        await self.ensure_tables()  # the statement depends on the tables found
        rows = await self._fetch(
            action,
            f"""SELECT q.name, {self._degree_of("q.name")} AS degree
                FROM unnest($1::text[]) AS q(name)""",
            names,
        )
        return {row["name"]: int(row["degree"]) for row in rows}

    async def node_degrees(self, names: Sequence[str]) -> dict[str, int]:
        """Incident relations per name (multi-edges each count, a self-loop counts 2)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        found = await self._degrees(wanted, f"counting degrees of {len(wanted)} nodes")
        return {name: found.get(name, 0) for name in wanted}

    async def edge_degrees(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``degree(a) + degree(b)`` per requested pair, keyed as requested."""
        wanted = list(dict.fromkeys((a, b) for a, b in pairs))
        if not wanted:
            return {}
        names = list(dict.fromkeys(name for pair in wanted for name in pair))
        found = await self._degrees(names, f"counting degrees of {len(wanted)} pairs")
        return {(a, b): found.get(a, 0) + found.get(b, 0) for a, b in wanted}

    def _node_edges_sql(self, with_degrees: bool) -> str:
        # one index scan per end (a bitmap OR per name costs twice as much); a self-loop
        # comes from the src side only
        e = self._edges
        found = f"""SELECT e.src AS node, e.gseq, e.seq, {_EDGE_COLUMNS}
                FROM {e} AS e WHERE e.src = ANY($1::text[])
                UNION ALL
                SELECT e.tgt, e.gseq, e.seq, {_EDGE_COLUMNS}
                FROM {e} AS e WHERE e.tgt = ANY($1::text[]) AND e.src <> e.tgt"""
        if not with_degrees:
            return f"SELECT * FROM ({found}) AS ends ORDER BY node, gseq, seq"
        # each distinct end's degree once (as ``_degrees``), joined to the rows of its edges
        return f"""WITH found AS MATERIALIZED ({found}),
                ends AS (SELECT src AS name FROM found UNION SELECT tgt FROM found),
                deg AS MATERIALIZED (
                    SELECT ends.name, {self._degree_of("ends.name")} AS degree FROM ends
                )
            SELECT found.*, ds.degree AS src_degree, dt.degree AS tgt_degree
            FROM found
            JOIN deg AS ds ON ds.name = found.src
            JOIN deg AS dt ON dt.name = found.tgt
            ORDER BY found.node, found.gseq, found.seq"""

    @staticmethod
    def _group_edges(wanted: list[str], rows: list[Any]) -> dict[str, list[Relation]]:
        out: dict[str, list[Relation]] = {name: [] for name in wanted}
        built: dict[str, Relation] = {}  # an edge between two requested names: built once
        for row in rows:
            rel = built.get(row["id"])
            if rel is None:
                rel = built[row["id"]] = row_to_relation(row)
            out[row["node"]].append(rel)
        return out

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        """Each name's relations in the port's edge order (``[]`` for none)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        rows = await self._fetch(
            f"reading edges of {len(wanted)} nodes from {self._edges}",
            self._node_edges_sql(with_degrees=False),
            wanted,
        )
        return self._group_edges(wanted, rows)

    async def get_node_edges_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """:meth:`get_node_edges` and the degree of every endpoint of those edges, in one
        statement (:class:`~hexrag.ports.graph_store.NodeEdgesWithDegrees`): local mode
        ranks each edge by ``degree(a) + degree(b)`` right after reading it."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}, {}
        await self.ensure_tables()  # the statement depends on the tables found
        rows = await self._fetch(
            f"reading edges and degrees of {len(wanted)} nodes from {self._edges}",
            self._node_edges_sql(with_degrees=True),
            wanted,
        )
        degrees: dict[str, int] = {}
        for row in rows:
            degrees[row["src"]] = int(row["src_degree"])
            degrees[row["tgt"]] = int(row["tgt_degree"])
        return self._group_edges(wanted, rows), degrees

    async def get_edges_by_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """Relations joining each pair (either orientation) in insertion order."""
        wanted = list(dict.fromkeys((a, b) for a, b in pairs))
        if not wanted:
            return {}
        canonical = list(dict.fromkeys((a, b) if a <= b else (b, a) for a, b in wanted))
        rows = await self._fetch(
            f"reading edges of {len(wanted)} pairs from {self._edges}",
            f"""SELECT q.pa AS req_a, q.pb AS req_b, {_EDGE_COLUMNS}
                FROM unnest($1::text[], $2::text[]) AS q(pa, pb)
                JOIN {self._edges} AS e ON e.pa = q.pa AND e.pb = q.pb
                ORDER BY q.pa, q.pb, e.seq""",
            [a for a, _ in canonical],
            [b for _, b in canonical],
        )
        by_pair: dict[tuple[str, str], list[Relation]] = {}
        for row in rows:
            by_pair.setdefault((row["req_a"], row["req_b"]), []).append(row_to_relation(row))
        out: dict[tuple[str, str], list[Relation]] = {}
        for a, b in wanted:
            rels = by_pair.get((a, b) if a <= b else (b, a))
            if rels:
                out[(a, b)] = list(rels)
        return out

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Relations whose parsed ``source_id`` contains each chunk id (whole-id match)."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return {}
        rows = await self._fetch(
            f"reading edges of {len(wanted)} chunk ids from {self._edges}",
            f"""SELECT q.chunk_id, {_EDGE_COLUMNS}
                FROM unnest($1::text[]) AS q(chunk_id)
                JOIN {self._edges} AS e ON e.chunk_ids @> ARRAY[q.chunk_id]
                ORDER BY q.chunk_id, e.seq""",
            wanted,
        )
        found: dict[str, list[Relation]] = {}
        for row in rows:
            found.setdefault(row["chunk_id"], []).append(row_to_relation(row))
        return {cid: found[cid] for cid in wanted if cid in found}

    async def get_edges_by_chunk_ids_of_pairs(
        self, chunk_ids: Sequence[str], pairs: Sequence[tuple[str, str]]
    ) -> dict[str, list[Relation]]:
        """``get_edges_by_chunk_ids(chunk_ids)`` with every list kept to the relations
        joining one of ``pairs`` (either orientation), same order; a chunk id left with no
        relation is absent. One statement through the pair index: only the pairs' edges are
        read (:class:`~hexrag.ports.graph_store.PairEdgesByChunk`)."""
        wanted = list(dict.fromkeys(chunk_ids))
        canonical = list(dict.fromkeys((a, b) if a <= b else (b, a) for a, b in pairs))
        if not wanted or not canonical:
            return {}
        rows = await self._fetch(
            f"reading edges of {len(canonical)} pairs by chunk id from {self._edges}",
            f"""SELECT c.chunk_id, {_EDGE_COLUMNS}
                FROM unnest($1::text[], $2::text[]) AS p(pa, pb)
                JOIN {self._edges} AS e ON e.pa = p.pa AND e.pb = p.pb
                CROSS JOIN LATERAL unnest(e.chunk_ids) AS c(chunk_id)
                WHERE c.chunk_id = ANY($3::text[])
                ORDER BY c.chunk_id, e.seq""",
            [a for a, _ in canonical],
            [b for _, b in canonical],
            wanted,
        )
        found: dict[str, list[Relation]] = {}
        for row in rows:
            found.setdefault(row["chunk_id"], []).append(row_to_relation(row))
        return {cid: found[cid] for cid in wanted if cid in found}

    async def scan_nodes(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Entity]:
        """A page of nodes in insertion order (keyset on the nodes' sequence number, one
        statement), so a copy keeps the node order (a LightRAG GraphML file's node order
        shapes LightRAG's answers) (:class:`~hexrag.ports.scan.ScansGraph`)."""
        check_scan_limit(limit)
        rows = await self._fetch(
            f"scanning {self._nodes}",
            f"""SELECT seq AS scan_seq, {_NODE_COLUMNS} FROM {self._nodes}
                WHERE seq > $1 ORDER BY seq LIMIT $2""",
            seq_after(cursor),
            limit,
        )
        items = [row_to_entity(row) for row in rows]
        return Page(items, str(rows[-1]["scan_seq"]) if len(rows) == limit else None)

    async def scan_edges(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Relation]:
        """A page of relations in insertion order (keyset on the insertion sequence, one
        statement), so a copy inserted page by page keeps every node's edge order
        (:class:`~hexrag.ports.scan.ScansGraph`)."""
        check_scan_limit(limit)
        after = seq_after(cursor)
        rows = await self._fetch(
            f"scanning {self._edges}",
            f"""SELECT e.seq AS scan_seq, {_EDGE_COLUMNS} FROM {self._edges} AS e
                WHERE e.seq > $1 ORDER BY e.seq LIMIT $2""",
            after,
            limit,
        )
        items = [row_to_relation(row) for row in rows]
        return Page(items, str(rows[-1]["scan_seq"]) if len(rows) == limit else None)

    async def count_nodes(self) -> int:
        """Number of nodes."""
        return int(
            await self._fetchval(f"counting {self._nodes}", f"SELECT count(*) FROM {self._nodes}")
        )

    async def count_edges(self) -> int:
        """Number of relations."""
        return int(
            await self._fetchval(f"counting {self._edges}", f"SELECT count(*) FROM {self._edges}")
        )
