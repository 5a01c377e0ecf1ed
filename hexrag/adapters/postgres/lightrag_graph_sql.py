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
from functools import cache

from hexrag.adapters.postgres.lightrag_degrees import DEGREE_TABLE

__all__ = [
    "EDGES_BY_CHUNK_IDS",
    "EDGES_BY_CHUNK_IDS_OF_PAIRS",
    "EDGES_BY_PAIRS",
    "EDGES_OF_NODES",
    "EDGES_OF_NODES_WITH_DEGREES",
    "NODES_BY_ID",
    "NODES_WITH_DEGREES",
    "NODE_DEGREES",
    "STORED_FORM",
    "both_orientations",
    "edges_of_nodes_with_degrees_sql",
    "node_degrees_sql",
    "nodes_with_degrees_sql",
]

NODES_BY_ID = """SELECT id, properties::text AS properties FROM lightrag_graph_nodes
    WHERE workspace = $1 AND namespace = $2 AND id = ANY($3::text[])"""

@cache
def _degree(name: str, stored: bool) -> str:
    """The degree of the node named by the column expression ``name``: read from the stored
    degrees (:mod:`~hexrag.adapters.postgres.lightrag_degrees`, installed on request) or
    counted: one index-only count per direction, faster than PostgreSQL 16 walking `src_id =
    ANY(<hundreds of names>)` (10k entities: 3.7 vs 36 ms EXPLAIN ANALYZE for 245 names). A
    self-loop counts twice (src and tgt), as LightRAG counts it; either way the same number."""
    if stored:
        return (
            f"coalesce((SELECT d.degree FROM {DEGREE_TABLE} AS d WHERE d.workspace = $1 "
            f"AND d.namespace = $2 AND d.id = {name}), 0)"
        )
    return f"""(SELECT count(*) FROM lightrag_graph_edges AS x
         WHERE x.workspace = $1 AND x.namespace = $2 AND x.src_id = {name})
      + (SELECT count(*) FROM lightrag_graph_edges AS x
         WHERE x.workspace = $1 AND x.namespace = $2 AND x.tgt_id = {name})"""


@cache
def node_degrees_sql(stored: bool) -> str:
    """Each name's degree."""
    return f"""SELECT n.id AS name, {_degree("n.id", stored)} AS degree
    FROM unnest($3::text[]) AS n(id)"""


@cache
def nodes_with_degrees_sql(stored: bool) -> str:
    """A node (if found) and its degree per name: local mode's entities and their ranks."""
    return f"""SELECT n.id AS wanted, g.id, g.id IS NOT NULL AS found,
        g.properties::text AS properties, {_degree("n.id", stored)} AS degree
    FROM unnest($3::text[]) AS n(id)
    LEFT JOIN lightrag_graph_nodes AS g
      ON g.workspace = $1 AND g.namespace = $2 AND g.id = n.id"""


@cache
def edges_of_nodes_with_degrees_sql(stored: bool) -> str:
    """The edges of the names, then one row per endpoint with its degree: local mode's edges
    and their ranks in one round trip; kind 0 = edge, 1 = degree."""
    return f"""WITH e AS MATERIALIZED (
        SELECT src_id, tgt_id, properties FROM lightrag_graph_edges
        WHERE workspace = $1 AND namespace = $2
          AND (src_id = ANY($3::text[]) OR tgt_id = ANY($3::text[]))
    ), ends AS (
        SELECT src_id AS id FROM e UNION SELECT tgt_id FROM e
    )
    SELECT 0 AS kind, src_id, tgt_id, properties::text AS properties, NULL::bigint AS degree
    FROM e
    UNION ALL
    SELECT 1, n.id, NULL, NULL, {_degree("n.id", stored)}
    FROM ends AS n"""


NODE_DEGREES = node_degrees_sql(False)
NODES_WITH_DEGREES = nodes_with_degrees_sql(False)
EDGES_OF_NODES_WITH_DEGREES = edges_of_nodes_with_degrees_sql(False)
#: each statement counting degrees -> the same statement reading the stored ones (what a store
#: sends while they are installed: :mod:`~hexrag.adapters.postgres.lightrag_degrees`)
STORED_FORM = {
    make(False): make(True)
    for make in (node_degrees_sql, nodes_with_degrees_sql, edges_of_nodes_with_degrees_sql)
}

EDGES_OF_NODES = """SELECT src_id, tgt_id, properties::text AS properties
    FROM lightrag_graph_edges
    WHERE workspace = $1 AND namespace = $2
      AND (src_id = ANY($3::text[]) OR tgt_id = ANY($3::text[]))"""

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
