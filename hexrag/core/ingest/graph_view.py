"""LightRAG 1.5.7's graph-explorer reads on hexrag's ports: labels and a label's subgraph.

Pure: every read goes through :class:`~hexrag.ports.GraphStore` (and its optional
:class:`~hexrag.ports.scan.ScansGraph` capability for the whole-graph listings). The answers
are those of LightRAG's default graph storage (``NetworkXStorage``):

* :func:`all_labels` - every entity name, sorted (``get_all_labels``);
* :func:`popular_labels` - names by degree descending, then name (``get_popular_labels``);
* :func:`search_labels` - LightRAG's fuzzy ranking: exact 1000, prefix 500, else
  ``100 - len`` (+50 at a word boundary), then name (``search_labels``);
* :func:`knowledge_graph` - the subgraph of a label: LightRAG's level-by-level BFS (each
  level ordered by degree descending, then name), cut at ``max_nodes``, with its
  ``is_truncated`` flag; ``"*"`` takes the ``max_nodes`` nodes of highest degree.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from hexrag.core.errors import ConfigurationError
from hexrag.core.ingest.document_deletion import edge_dict, node_dict
from hexrag.domain.records import Entity, Relation
from hexrag.ports import GraphStore
from hexrag.ports.scan import ScansGraph, scan_all

__all__ = [
    "DEFAULT_MAX_GRAPH_NODES",
    "all_labels",
    "knowledge_graph",
    "popular_labels",
    "search_labels",
]

#: LightRAG's ``max_graph_nodes`` default (``MAX_GRAPH_NODES``).
DEFAULT_MAX_GRAPH_NODES = 1000
#: Names asked for in one batched degree read.
_BATCH = 1000


async def _names(graph: GraphStore) -> list[str]:
    if not isinstance(graph, ScansGraph):
        raise ConfigurationError("this graph store cannot list its nodes (no scan_nodes)")
    names: list[str] = []
    async for page in scan_all(graph.scan_nodes):
        names.extend(e.name for e in page.items)
    return names


async def _degrees(graph: GraphStore, names: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in range(0, len(names), _BATCH):
        out.update(await graph.node_degrees(list(names[i:i + _BATCH])))
    return out


async def all_labels(graph: GraphStore) -> list[str]:
    """Every entity name, sorted (LightRAG's ``get_all_labels``)."""
    return sorted(set(await _names(graph)))


async def _by_degree(graph: GraphStore) -> list[str]:
    """Every name, highest degree first, ties by name."""
    names = sorted(set(await _names(graph)))
    degrees = await _degrees(graph, names)
    return sorted(names, key=lambda n: (-degrees.get(n, 0), n))


async def popular_labels(graph: GraphStore, limit: int = 300) -> list[str]:
    """The ``limit`` names of highest degree; ties by name (``get_popular_labels``)."""
    return (await _by_degree(graph))[:limit]


def rank_label(name: str, query_lower: str) -> int | None:
    """LightRAG's relevance of ``name`` for a lower-cased, stripped query (``None``: no
    match)."""
    lower = name.lower()
    if query_lower not in lower:
        return None
    if lower == query_lower:
        return 1000
    if lower.startswith(query_lower):
        return 500
    score = 100 - len(name)
    if f" {query_lower}" in lower or f"_{query_lower}" in lower:
        score += 50
    return score


async def search_labels(graph: GraphStore, query: str, limit: int = 50) -> list[str]:
    """Names matching ``query`` (case-insensitive substring), best first
    (``search_labels``)."""
    q = query.lower().strip()
    if not q:
        return []
    matches = []
    for name in set(await _names(graph)):
        score = rank_label(name, q)
        if score is not None:
            matches.append((name, score))
    matches.sort(key=lambda m: (-m[1], m[0]))
    return [m[0] for m in matches[:limit]]


def node_view(entity: Entity) -> dict[str, Any]:
    """LightRAG's ``KnowledgeGraphNode`` of ``entity``."""
    return {"id": entity.name, "labels": [entity.name], "properties": node_dict(entity)}


def edge_view(relation: Relation) -> dict[str, Any]:
    """LightRAG's ``KnowledgeGraphEdge`` of ``relation`` (endpoints in sorted order)."""
    a, b = relation.pair
    return {"id": f"{a}-{b}", "type": "DIRECTED", "source": a, "target": b,
            "properties": edge_dict(relation)}


async def _subgraph(graph: GraphStore, names: list[str]) -> dict[str, Any]:
    nodes = await graph.get_nodes(names)
    keep = set(names)
    edges: dict[str, dict[str, Any]] = {}
    incident = {}
    for i in range(0, len(names), _BATCH):
        incident.update(await graph.get_node_edges(names[i:i + _BATCH]))
    for name in names:
        for rel in incident.get(name, []):
            if rel.src_id in keep and rel.tgt_id in keep:
                view = edge_view(rel)
                edges.setdefault(view["id"], view)  # one edge per pair, as NetworkX
    return {
        "nodes": [node_view(nodes[n]) for n in names if n in nodes],
        "edges": list(edges.values()),
        "is_truncated": False,
    }


async def knowledge_graph(
    graph: GraphStore,
    label: str,
    max_depth: int = 3,
    max_nodes: int | None = None,
    *,
    max_graph_nodes: int = DEFAULT_MAX_GRAPH_NODES,
) -> dict[str, Any]:
    """LightRAG's ``get_knowledge_graph``: ``{"nodes", "edges", "is_truncated"}``."""
    limit = max_graph_nodes if max_nodes is None else min(max_nodes, max_graph_nodes)
    if label == "*":
        ranked = await _by_degree(graph)
        result = await _subgraph(graph, ranked[:limit])
        result["is_truncated"] = len(ranked) > limit
        return result
    start = await graph.get_nodes([label])
    if label not in start:
        return {"nodes": [], "edges": [], "is_truncated": False}
    degree0 = (await graph.node_degrees([label]))[label]
    queue: deque[tuple[str, int, int]] = deque([(label, 0, degree0)])
    visited: set[str] = set()
    found: list[str] = []
    unexplored = unprocessed = False
    while queue and len(found) < limit:
        depth = queue[0][1]
        level = []
        while queue and queue[0][1] == depth:
            level.append(queue.popleft())
        level.sort(key=lambda x: (-x[2], x[0]))
        fresh = [n for n, _, _ in level if n not in visited]
        neighbours = await _neighbours(graph, fresh)
        pending = [m for n in fresh for m in neighbours[n]]
        degrees = await _degrees(graph, sorted(set(pending))) if depth < max_depth else {}
        for idx, (name, d, _deg) in enumerate(level):
            if name not in visited:
                visited.add(name)
                found.append(name)
                around = [m for m in neighbours[name] if m not in visited]
                if d < max_depth:
                    queue.extend((m, d + 1, degrees.get(m, 0)) for m in around)
                elif around:
                    unexplored = True
            if len(found) >= limit:
                if any(n not in visited for n, _, _ in level[idx + 1:]):
                    unprocessed = True
                break
    in_queue = any(n not in visited for n, _, _ in queue)
    result = await _subgraph(graph, found)
    result["is_truncated"] = len(found) >= limit and (in_queue or unprocessed or unexplored)
    return result


async def _neighbours(graph: GraphStore, names: list[str]) -> dict[str, list[str]]:
    """Each name's distinct neighbours, in the port's edge order (self-loops skipped)."""
    out: dict[str, list[str]] = {}
    edges = await graph.get_node_edges(names) if names else {}
    for name in names:
        seen: dict[str, None] = {}
        for rel in edges.get(name, []):
            other = rel.tgt_id if rel.src_id == name else rel.src_id
            if other != name:
                seen.setdefault(other, None)
        out[name] = list(seen)
    return out
