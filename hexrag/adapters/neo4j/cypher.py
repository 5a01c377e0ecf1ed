"""Every Cypher statement the Neo4j adapter sends, as module-level constants.

Values always travel as ``$parameters``. The only identifiers spliced into a statement are
the workspace node label (placeholder ``<LABEL>``) and the name of that label's index
(``<NODE_INDEX>``); :func:`render` substitutes them, backtick-quoted, from a workspace name
that :func:`validate_workspace` has already restricted to ``[A-Za-z0-9_.-]``. Both
placeholders are invalid Cypher on purpose: a statement sent without rendering fails to parse.

Graph layout (compatible with LightRAG's ``Neo4JStorage``): one node per entity with the
workspace label and ``entity_id`` = entity name; one ``DIRECTED`` relationship per relation,
stored in the relation's own orientation, carrying ``relation_id`` plus

* ``chunk_ids``: the whole chunk ids of ``source_id`` (:func:`parse_source_ids`), so
  lookups by chunk id compare whole ids with ``IN`` (never ``CONTAINS``: ``chunk-1`` is
  not in ``chunk-10``);
* ``hexrag_seq``: the relation's insertion sequence number, drawn from a per-workspace
  counter node ``(:HexragSequence {workspace})`` whose increment takes a write lock, so it
  is monotonic per workspace even under concurrent writers. Any upsert of an existing
  relation id keeps it (orders lists by chunk id);
* ``hexrag_link_seq``: when the relation joined its current endpoint pair (kept by a
  replace on the same pair, in either orientation; renewed when the id moves to another
  pair). Orders the relations of one pair;
* ``hexrag_pair_seq``: when the pair's neighbour group was opened, shared by every
  relation of the pair while one survives. Orders a node's neighbour groups.

These reproduce :class:`hexrag.core.reference.oracle.GraphOracle` (the port's edge order). The
``CALL (...) { }`` subquery scope syntax needs Neo4j 5.23 or later (5.26 LTS, 2025.x).

``tests/unit/test_neo4j_cypher_lint.py`` parses every statement in :data:`ALL_STATEMENTS`
with Neo4j's own parser (``tools/cypher-lint``), declaring exactly :attr:`Statement.params`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from typing import Literal

from hexrag.adapters._names import checked_name
from hexrag.domain.errors import ConfigurationError

__all__ = [
    "ALL_STATEMENTS",
    "COUNTER_LABEL",
    "LABEL_PLACEHOLDER",
    "LIGHTRAG_STATEMENTS",
    "NODE_INDEX_PLACEHOLDER",
    "REL_TYPE",
    "Statement",
    "backtick",
    "node_index_name",
    "render",
    "validate_workspace",
]

LABEL_PLACEHOLDER = "<LABEL>"
NODE_INDEX_PLACEHOLDER = "<NODE_INDEX>"
REL_TYPE = "DIRECTED"
COUNTER_LABEL = "HexragSequence"

_WORKSPACE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Statement:
    """One Cypher statement: its text (with placeholders), parameters and routing."""

    name: str
    text: str
    params: tuple[str, ...]
    access: Literal["read", "write", "schema"]


def validate_workspace(workspace: str) -> str:
    """Return ``workspace`` if it can name a node label, else raise ConfigurationError.

    Allowed: 1-64 characters from ``[A-Za-z0-9_.-]``, not starting with ``.`` or ``-``,
    and not the adapter's own counter label.
    """
    checked_name(
        workspace, _WORKSPACE,
        f"neo4j workspace {workspace!r} is invalid: it becomes a node label, so use 1-64 "
        "characters from [A-Za-z0-9_.-], not starting with '.' or '-'",
    )
    if workspace == COUNTER_LABEL:
        raise ConfigurationError(f"neo4j workspace {workspace!r} is reserved by hexrag")
    return workspace


def backtick(identifier: str) -> str:
    """Quote a Cypher identifier: wrap in backticks, doubling any backtick inside."""
    return "`" + identifier.replace("`", "``") + "`"


def node_index_name(workspace: str) -> str:
    """The name of the ``entity_id`` index of a workspace label (unique per workspace)."""
    digest = hashlib.sha1(workspace.encode("utf-8")).hexdigest()[:8]
    safe = re.sub(r"[^A-Za-z0-9_]", "_", workspace)
    return f"hexrag_entity_id_{safe}_{digest}"


def render(statement: Statement, workspace: str) -> str:
    """The statement text for ``workspace`` (validated), placeholders substituted."""
    validate_workspace(workspace)
    return statement.text.replace(LABEL_PLACEHOLDER, backtick(workspace)).replace(
        NODE_INDEX_PLACEHOLDER, backtick(node_index_name(workspace))
    )


# --------------------------------------------------------------------------------------
# Schema (run once per store instance, on first use)
# --------------------------------------------------------------------------------------

CREATE_NODE_INDEX = Statement(
    "create_node_index",
    "CREATE INDEX <NODE_INDEX> IF NOT EXISTS FOR (n:<LABEL>) ON (n.entity_id)",
    (),
    "schema",
)

CREATE_RELATION_INDEX = Statement(
    "create_relation_index",
    "CREATE INDEX hexrag_directed_relation_id IF NOT EXISTS "
    "FOR ()-[r:DIRECTED]-() ON (r.relation_id)",
    (),
    "schema",
)

CREATE_COUNTER_CONSTRAINT = Statement(
    "create_counter_constraint",
    "CREATE CONSTRAINT hexrag_sequence_workspace IF NOT EXISTS "
    "FOR (c:HexragSequence) REQUIRE c.workspace IS UNIQUE",
    (),
    "schema",
)

SCHEMA_STATEMENTS: tuple[Statement, ...] = (
    CREATE_NODE_INDEX,
    CREATE_RELATION_INDEX,
    CREATE_COUNTER_CONSTRAINT,
)

# --------------------------------------------------------------------------------------
# Writes
# --------------------------------------------------------------------------------------

# $items: [{name, props}] with props already holding entity_id; SET n = ... replaces every
# property of an existing node while MERGE keeps its relationships.
UPSERT_NODES = Statement(
    "upsert_nodes",
    """\
UNWIND $items AS item
MERGE (n:<LABEL> {entity_id: item.name})
SET n = item.props""",
    ("items",),
    "write",
)

# $items: [{id, src, tgt, props, pos}] in call order (duplicates included), pos = index.
# 1. Reserve size($items) sequence numbers; the SET reads and writes the counter in one
#    expression, so Neo4j locks it before reading (no lost update between writers).
# 2. Each item runs in its own CALL subquery execution, which sees the writes of the
#    previous ones: a batch behaves exactly like its items applied one after the other.
# 3. A relation id stored between other endpoints (or the same ones, flipped) is deleted and
#    re-created: a relationship cannot change its endpoints. It keeps hexrag_seq; a flipped
#    one also keeps its place in its group (link seq) and the group's number (pair seq).
# 4. A new relation joins the end of its pair's group (the pair seq of the pair's other
#    relations) or opens a group; fresh numbers are base + pos.
# 5. SET r = props replaces every property; the bookkeeping properties are re-applied.
UPSERT_EDGES = Statement(
    "upsert_edges",
    """\
MERGE (counter:HexragSequence {workspace: $workspace})
ON CREATE SET counter.value = 0
SET counter.value = counter.value + size($items)
WITH counter.value - size($items) AS base
UNWIND $items AS item
CALL (base, item) {
  OPTIONAL MATCH (a:<LABEL>)-[old:DIRECTED {relation_id: item.id}]->(b:<LABEL>)
  WHERE a.entity_id <> item.src OR b.entity_id <> item.tgt
  WITH base, item, old, old.hexrag_seq AS moved_seq,
       CASE WHEN a.entity_id = item.tgt AND b.entity_id = item.src
            THEN old.hexrag_link_seq END AS flipped_link_seq,
       CASE WHEN a.entity_id = item.tgt AND b.entity_id = item.src
            THEN old.hexrag_pair_seq END AS flipped_pair_seq
  DELETE old
  WITH base, item, moved_seq, flipped_link_seq, flipped_pair_seq
  MERGE (s:<LABEL> {entity_id: item.src})
  MERGE (t:<LABEL> {entity_id: item.tgt})
  WITH base, item, moved_seq, flipped_link_seq, flipped_pair_seq, s, t
  OPTIONAL MATCH (s)-[other:DIRECTED]-(t)
  WHERE other.relation_id IS NULL OR other.relation_id <> item.id
  WITH base, item, moved_seq, flipped_link_seq, flipped_pair_seq, s, t,
       min(other.hexrag_pair_seq) AS group_seq
  MERGE (s)-[r:DIRECTED {relation_id: item.id}]->(t)
  WITH r, item,
       coalesce(r.hexrag_seq, moved_seq, base + item.pos) AS seq,
       coalesce(r.hexrag_link_seq, flipped_link_seq, base + item.pos) AS link_seq,
       coalesce(r.hexrag_pair_seq, flipped_pair_seq, group_seq, base + item.pos) AS pair_seq
  SET r = item.props
  SET r.relation_id = item.id, r.hexrag_seq = seq, r.hexrag_link_seq = link_seq,
      r.hexrag_pair_seq = pair_seq
}""",
    ("workspace", "items"),
    "write",
)

DELETE_NODES = Statement(
    "delete_nodes",
    """\
UNWIND $names AS name
MATCH (n:<LABEL> {entity_id: name})
DETACH DELETE n""",
    ("names",),
    "write",
)

DELETE_EDGES = Statement(
    "delete_edges",
    """\
UNWIND $ids AS relation_id
MATCH (:<LABEL>)-[r:DIRECTED {relation_id: relation_id}]->(:<LABEL>)
DELETE r""",
    ("ids",),
    "write",
)

# Removes the workspace's nodes, relationships and sequence counter (one transaction:
# meant for tests and small graphs).
DROP_WORKSPACE = Statement(
    "drop_workspace",
    """\
OPTIONAL MATCH (counter:HexragSequence {workspace: $workspace})
DELETE counter
WITH count(*) AS done
MATCH (n:<LABEL>)
DETACH DELETE n""",
    ("workspace",),
    "write",
)

# --------------------------------------------------------------------------------------
# Reads
# --------------------------------------------------------------------------------------

GET_NODES = Statement(
    "get_nodes",
    """\
UNWIND $names AS name
MATCH (n:<LABEL> {entity_id: name})
RETURN name, properties(n) AS props""",
    ("names",),
    "read",
)

# Outgoing plus incoming: a self-loop is both, so it counts twice (as the port requires),
# whatever an undirected pattern would do with loops.
NODE_DEGREES = Statement(
    "node_degrees",
    """\
UNWIND $names AS name
MATCH (n:<LABEL> {entity_id: name})
RETURN name,
       COUNT { (n)-[:DIRECTED]->(:<LABEL>) } + COUNT { (n)<-[:DIRECTED]-(:<LABEL>) } AS degree""",
    ("names",),
    "read",
)

# Rows in no particular order (the adapter orders them); a self-loop may come back twice
# from the undirected pattern, the adapter keeps one per element id.
GET_NODE_EDGES = Statement(
    "get_node_edges",
    """\
UNWIND $names AS name
MATCH (n:<LABEL> {entity_id: name})-[r:DIRECTED]-(:<LABEL>)
RETURN name, elementId(r) AS element_id, startNode(r).entity_id AS src,
       endNode(r).entity_id AS tgt, properties(r) AS props""",
    ("names",),
    "read",
)

# $pairs: [{a, b}] (distinct requested pairs).
GET_EDGES_BY_PAIRS = Statement(
    "get_edges_by_pairs",
    """\
UNWIND $pairs AS pair
MATCH (:<LABEL> {entity_id: pair.a})-[r:DIRECTED]-(:<LABEL> {entity_id: pair.b})
RETURN pair.a AS a, pair.b AS b, elementId(r) AS element_id, startNode(r).entity_id AS src,
       endNode(r).entity_id AS tgt, properties(r) AS props""",
    ("pairs",),
    "read",
)

# Whole-id membership in the chunk_ids list (one pass over the workspace's relationships,
# O(relationships): list elements are not indexable in Neo4j).
GET_EDGES_BY_CHUNK_IDS = Statement(
    "get_edges_by_chunk_ids",
    """\
MATCH (s:<LABEL>)-[r:DIRECTED]->(t:<LABEL>)
WHERE any(chunk_id IN r.chunk_ids WHERE chunk_id IN $chunk_ids)
RETURN elementId(r) AS element_id, s.entity_id AS src, t.entity_id AS tgt,
       properties(r) AS props""",
    ("chunk_ids",),
    "read",
)

COUNT_NODES = Statement(
    "count_nodes",
    """\
MATCH (n:<LABEL>)
RETURN count(n) AS total""",
    (),
    "read",
)

COUNT_EDGES = Statement(
    "count_edges",
    """\
MATCH (:<LABEL>)-[r:DIRECTED]->(:<LABEL>)
RETURN count(r) AS total""",
    (),
    "read",
)

# Scans (hexrag.ports.scan): keyset pages. Nodes by entity_id (the label index orders them);
# relations in insertion order (hexrag_seq; relations LightRAG wrote have none and come first,
# by endpoints), the cursor being the last row's (seq, src, tgt).
SCAN_NODES = Statement(
    "scan_nodes",
    """\
MATCH (n:<LABEL>)
WHERE $after IS NULL OR n.entity_id > $after
RETURN n.entity_id AS name, properties(n) AS props
ORDER BY n.entity_id
LIMIT $limit""",
    ("after", "limit"),
    "read",
)

SCAN_EDGES = Statement(
    "scan_edges",
    """\
MATCH (s:<LABEL>)-[r:DIRECTED]->(t:<LABEL>)
WITH s, r, t, coalesce(r.hexrag_seq, -1) AS seq
WHERE $after_seq IS NULL
   OR seq > $after_seq
   OR (seq = $after_seq AND s.entity_id > $after_src)
   OR (seq = $after_seq AND s.entity_id = $after_src AND t.entity_id > $after_tgt)
RETURN seq, elementId(r) AS element_id, s.entity_id AS src, t.entity_id AS tgt,
       properties(r) AS props
ORDER BY seq, src, tgt
LIMIT $limit""",
    ("after_seq", "after_src", "after_tgt", "limit"),
    "read",
)

#: Every statement the adapter can send.
ALL_STATEMENTS: tuple[Statement, ...] = (
    *SCHEMA_STATEMENTS,
    UPSERT_NODES,
    UPSERT_EDGES,
    DELETE_NODES,
    DELETE_EDGES,
    DROP_WORKSPACE,
    GET_NODES,
    NODE_DEGREES,
    GET_NODE_EDGES,
    GET_EDGES_BY_PAIRS,
    GET_EDGES_BY_CHUNK_IDS,
    COUNT_NODES,
    COUNT_EDGES,
    SCAN_NODES,
    SCAN_EDGES,
)


# --------------------------------------------------------------------------------------
# LightRAG 1.5.7's own layout (``Neo4JStorage``), read and written in place
# (:mod:`hexrag.adapters.neo4j.lightrag_layout`): one undirected ``DIRECTED`` relationship
# per entity pair, no relation ids, ``source_id`` as LightRAG's ``<SEP>``-joined string.
# Writes are LightRAG's own statements (``SET ... +=`` merges properties); endpoint nodes are
# MERGEd so a relation never needs a prior node write.
# --------------------------------------------------------------------------------------

LR_CREATE_NODE_INDEX = Statement(
    "lr_create_node_index",
    "CREATE INDEX IF NOT EXISTS FOR (n:<LABEL>) ON (n.entity_id)",
    (),
    "schema",
)

LR_UPSERT_NODES = Statement(
    "lr_upsert_nodes",
    """\
UNWIND $items AS row
MERGE (n:<LABEL> {entity_id: row.entity_id})
SET n += row.props""",
    ("items",),
    "write",
)

LR_UPSERT_EDGES = Statement(
    "lr_upsert_edges",
    """\
UNWIND $items AS row
MERGE (source:<LABEL> {entity_id: row.src})
MERGE (target:<LABEL> {entity_id: row.tgt})
MERGE (source)-[r:DIRECTED]-(target)
SET r += row.props""",
    ("items",),
    "write",
)

# LightRAG deletes nodes exactly as hexrag's layout does (DETACH DELETE by entity_id).
LR_DELETE_NODES = replace(DELETE_NODES, name="lr_delete_nodes")

# $pairs: [{a, b}]; either orientation (the relationship is undirected in LightRAG's use).
LR_DELETE_PAIRS = Statement(
    "lr_delete_pairs",
    """\
UNWIND $pairs AS pair
MATCH (:<LABEL> {entity_id: pair.a})-[r:DIRECTED]-(:<LABEL> {entity_id: pair.b})
DELETE r""",
    ("pairs",),
    "write",
)

LR_DROP_WORKSPACE = Statement(
    "lr_drop_workspace",
    """\
MATCH (n:<LABEL>)
DETACH DELETE n""",
    (),
    "write",
)

# LightRAG's node_degrees_batch: undirected relationship count.
LR_NODE_DEGREES = Statement(
    "lr_node_degrees",
    """\
UNWIND $names AS name
MATCH (n:<LABEL> {entity_id: name})
OPTIONAL MATCH (n)-[r]-()
RETURN name, count(r) AS degree""",
    ("names",),
    "read",
)

# LightRAG's get_nodes_edges_batch, rows in the server's order (LightRAG keeps that order).
LR_GET_NODE_EDGES = Statement(
    "lr_get_node_edges",
    """\
UNWIND $names AS name
MATCH (n:<LABEL> {entity_id: name})
OPTIONAL MATCH (n)-[r]-(connected:<LABEL>)
RETURN name, connected.entity_id AS connected,
       startNode(r).entity_id AS start, properties(r) AS props""",
    ("names",),
    "read",
)

# LightRAG's get_edges_batch: every relationship of a pair (LightRAG keeps the first).
LR_GET_EDGES_BY_PAIRS = Statement(
    "lr_get_edges_by_pairs",
    """\
UNWIND $pairs AS pair
MATCH (s:<LABEL> {entity_id: pair.a})-[r:DIRECTED]-(t:<LABEL> {entity_id: pair.b})
RETURN pair.a AS a, pair.b AS b, startNode(r).entity_id AS src, endNode(r).entity_id AS tgt,
       properties(r) AS props""",
    ("pairs",),
    "read",
)

# Whole-id membership in LightRAG's <SEP>-joined source_id (one pass over the relationships).
LR_GET_EDGES_BY_CHUNK_IDS = Statement(
    "lr_get_edges_by_chunk_ids",
    """\
MATCH (s:<LABEL>)-[r:DIRECTED]->(t:<LABEL>)
WHERE any(chunk_id IN split(coalesce(r.source_id, ''), '<SEP>') WHERE chunk_id IN $chunk_ids)
RETURN s.entity_id AS src, t.entity_id AS tgt, properties(r) AS props""",
    ("chunk_ids",),
    "read",
)

LR_SCAN_EDGES = Statement(
    "lr_scan_edges",
    """\
MATCH (s:<LABEL>)-[r:DIRECTED]->(t:<LABEL>)
WHERE $after_src IS NULL
   OR s.entity_id > $after_src
   OR (s.entity_id = $after_src AND t.entity_id > $after_tgt)
RETURN s.entity_id AS src, t.entity_id AS tgt, properties(r) AS props
ORDER BY src, tgt
LIMIT $limit""",
    ("after_src", "after_tgt", "limit"),
    "read",
)

#: The statements of the LightRAG-layout adapter (GET_NODES, COUNT_*, SCAN_NODES are shared).
LIGHTRAG_STATEMENTS: tuple[Statement, ...] = (
    LR_CREATE_NODE_INDEX,
    LR_UPSERT_NODES,
    LR_UPSERT_EDGES,
    LR_DELETE_NODES,
    LR_DELETE_PAIRS,
    LR_DROP_WORKSPACE,
    GET_NODES,
    LR_NODE_DEGREES,
    LR_GET_NODE_EDGES,
    LR_GET_EDGES_BY_PAIRS,
    LR_GET_EDGES_BY_CHUNK_IDS,
    COUNT_NODES,
    COUNT_EDGES,
    SCAN_NODES,
    LR_SCAN_EDGES,
)
