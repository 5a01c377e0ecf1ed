"""The read statements of LightRAG's ``PGTableGraphStorage`` tables, as hexrag issues them.

Every statement takes ``$1`` = workspace and ``$2`` = graph namespace; user values only ever
travel as bound parameters (``ANY($n::text[])``, ``unnest``), never in the SQL text.

The chunk-exact relation lookup (``relation_lookup = "chunk"``, hexrag's default for hybrid and
mix) has two forms:

* :data:`EDGES_BY_CHUNK_IDS` — every edge whose ``<SEP>``-joined ``source_id`` names a chunk:
  LightRAG's tables have no index on ``properties->>'source_id'``, so this reads every edge of
  the workspace, splitting each ``source_id`` once (what ``get_edges_by_chunk_ids`` and
  document deletion need);
* :data:`EDGES_BY_CHUNK_IDS_OF_PAIRS` — the same rows restricted to the edges of given entity
  pairs (both orientations sent): the primary key ``(workspace, namespace, src_id, tgt_id)``
  finds the few candidate edges, then their ``source_id`` is matched. A query's relation hits
  carry their pair, and the engine keeps only the edges of a hit's own pair, so this returns
  exactly what the engine used from the first form, in the same order (``ORDER BY cid, src_id,
  tgt_id`` under the database's collation, as before).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "EDGES_BY_CHUNK_IDS",
    "EDGES_BY_CHUNK_IDS_OF_PAIRS",
    "EDGES_BY_PAIRS",
    "EDGES_OF_NODES",
    "EDGES_OF_NODES_WITH_DEGREES",
    "NODES_BY_ID",
    "NODES_WITH_DEGREES",
    "NODE_DEGREES",
    "both_orientations",
]

NODES_BY_ID = """SELECT id, properties::text AS properties FROM lightrag_graph_nodes
    WHERE workspace = $1 AND namespace = $2 AND id = ANY($3::text[])"""

# one index-only count per name and direction, faster than PostgreSQL 16 walking `src_id =
# ANY(<hundreds of names>)` (10k entities: 3.7 vs 36 ms EXPLAIN ANALYZE for 245 names; a
# self-loop counts twice (src and tgt), as LightRAG counts it
NODE_DEGREES = """SELECT n.id AS name,
        (SELECT count(*) FROM lightrag_graph_edges AS e
         WHERE e.workspace = $1 AND e.namespace = $2 AND e.src_id = n.id)
      + (SELECT count(*) FROM lightrag_graph_edges AS e
         WHERE e.workspace = $1 AND e.namespace = $2 AND e.tgt_id = n.id) AS degree
    FROM unnest($3::text[]) AS n(id)"""

EDGES_OF_NODES = """SELECT src_id, tgt_id, properties::text AS properties
    FROM lightrag_graph_edges
    WHERE workspace = $1 AND namespace = $2
      AND (src_id = ANY($3::text[]) OR tgt_id = ANY($3::text[]))"""

# a node (if found) and its degree per name: local mode's entities and their ranks at once
NODES_WITH_DEGREES = """SELECT n.id AS wanted, g.id, g.id IS NOT NULL AS found,
        g.properties::text AS properties,
        (SELECT count(*) FROM lightrag_graph_edges AS e
         WHERE e.workspace = $1 AND e.namespace = $2 AND e.src_id = n.id)
      + (SELECT count(*) FROM lightrag_graph_edges AS e
         WHERE e.workspace = $1 AND e.namespace = $2 AND e.tgt_id = n.id) AS degree
    FROM unnest($3::text[]) AS n(id)
    LEFT JOIN lightrag_graph_nodes AS g
      ON g.workspace = $1 AND g.namespace = $2 AND g.id = n.id"""

# the edges of the names, then one row per endpoint with its degree (counted as NODE_DEGREES
# counts): local mode's edges and their ranks in one round trip; kind 0 = edge, 1 = degree
EDGES_OF_NODES_WITH_DEGREES = """WITH e AS MATERIALIZED (
        SELECT src_id, tgt_id, properties FROM lightrag_graph_edges
        WHERE workspace = $1 AND namespace = $2
          AND (src_id = ANY($3::text[]) OR tgt_id = ANY($3::text[]))
    ), ends AS (
        SELECT src_id AS id FROM e UNION SELECT tgt_id FROM e
    )
    SELECT 0 AS kind, src_id, tgt_id, properties::text AS properties, NULL::bigint AS degree
    FROM e
    UNION ALL
    SELECT 1, n.id, NULL, NULL,
        (SELECT count(*) FROM lightrag_graph_edges AS x
         WHERE x.workspace = $1 AND x.namespace = $2 AND x.src_id = n.id)
      + (SELECT count(*) FROM lightrag_graph_edges AS x
         WHERE x.workspace = $1 AND x.namespace = $2 AND x.tgt_id = n.id)
    FROM ends AS n"""

EDGES_BY_PAIRS = """SELECT src_id, tgt_id, properties::text AS properties
    FROM lightrag_graph_edges
    WHERE workspace = $1 AND namespace = $2
      AND (src_id, tgt_id) IN (SELECT * FROM unnest($3::text[], $4::text[]))"""

# each edge's source_id is split once and its distinct chunk ids matched against the wanted
# ones (a hash of $3), not re-split for every wanted id: one row per (wanted chunk id, edge
# naming it), as `q.cid = ANY(string_to_array(...))` over every pair gave (10k entities, 93
# chunk ids: 419 vs 45 ms)
_CHUNK_IDS_OF_EDGE = """CROSS JOIN LATERAL (
        SELECT DISTINCT x.cid
        FROM unnest(string_to_array(e.properties->>'source_id', '<SEP>')) AS x(cid)
    ) AS s"""

EDGES_BY_CHUNK_IDS = f"""SELECT s.cid AS chunk_id, e.src_id, e.tgt_id,
        e.properties::text AS properties
    FROM lightrag_graph_edges AS e {_CHUNK_IDS_OF_EDGE}
    WHERE e.workspace = $1 AND e.namespace = $2 AND s.cid = ANY($3::text[])
    ORDER BY s.cid, e.src_id, e.tgt_id"""

# the candidate edges come from the primary key (a few rows), their source_id is split once
# each; MATERIALIZED keeps the planner from pushing the chunk match into a scan of the table
EDGES_BY_CHUNK_IDS_OF_PAIRS = f"""WITH e AS MATERIALIZED (
        SELECT src_id, tgt_id, properties FROM lightrag_graph_edges
        WHERE workspace = $1 AND namespace = $2
          AND (src_id, tgt_id) IN (SELECT * FROM unnest($4::text[], $5::text[]))
    )
    SELECT s.cid AS chunk_id, e.src_id, e.tgt_id, e.properties::text AS properties
    FROM e {_CHUNK_IDS_OF_EDGE}
    WHERE s.cid = ANY($3::text[])
    ORDER BY s.cid, e.src_id, e.tgt_id"""


def both_orientations(pairs: Iterable[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The ``(src, tgt)`` columns of every pair in both orientations, each row once (a
    self-loop once): the keys an edge of the pair may be stored under."""
    rows = dict.fromkeys(row for a, b in pairs for row in ((a, b), (b, a)))
    return [r[0] for r in rows], [r[1] for r in rows]
