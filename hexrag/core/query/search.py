"""Stage 1: vector search, graph expansion, round-robin merge (LightRAG ``_perform_kg_search``).

Scope layers (a) and (b) live here: vector searches are pre-filtered by the index, and graph
expansion keeps only entities and relations with at least one in-scope source.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from hexrag.core.query.merge import round_robin
from hexrag.core.query.run import EntityItem, QueryRun, RelationItem, Stores
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.scope import chunk_in_scope, record_sources, sources_verdict
from hexrag.domain.records import Entity, Relation
from hexrag.ports import Embedder, VectorIndex
from hexrag.ports.graph_store import NodeEdgesWithDegrees, NodesWithDegrees, PairEdgesByChunk

_A = TypeVar("_A")
_B = TypeVar("_B")

__all__ = ["SearchResult", "perform_search", "relation_key"]


@dataclass
class SearchResult:
    """What stage 1 hands to stage 2."""

    entities: list[EntityItem] = field(default_factory=list)
    relations: list[RelationItem] = field(default_factory=list)
    vector_chunks: list[dict[str, Any]] = field(default_factory=list)


def relation_key(item: RelationItem, strategy: str) -> Hashable:
    """Dedup key: the sorted pair under LightRAG's pair strategy, the relation id otherwise."""
    return item.relation.pair if strategy == "pair" else item.relation.id


# ---------------------------------------------------------------------------------------
# Scope layer (b)
# ---------------------------------------------------------------------------------------
#
# A record whose own metadata (first-class fields, else its encoded file_path) decides is
# kept or dropped inside its branch, with no I/O. A record its own metadata cannot decide
# (e.g. a doc_ids scope, or no encoded file_path) is kept provisionally and settled after
# both branches finish, by its chunks' metadata, in ONE chunk-store batch: the number of
# round trips then never depends on which branch's backend answers first.


def _own_verdict(run: QueryRun, record: Entity | Relation) -> bool | None:
    return sources_verdict(run.scope, record_sources(record.properties, record.file_path))


def _drop_own_out_of_scope(run: QueryRun, items: list[Any], attr: str) -> list[Any]:
    if run.scope is None:
        return items
    kept = [i for i in items if _own_verdict(run, getattr(i, attr)) is not False]
    removed = len(items) - len(kept)
    if attr == "entity":
        run.stats.scope_graph_removed_entities += removed
    else:
        run.stats.scope_graph_removed_relations += removed
    return kept


async def _settle_undecided(
    run: QueryRun, entity_lists: list[list[EntityItem]], relation_lists: list[list[RelationItem]]
) -> tuple[list[list[EntityItem]], list[list[RelationItem]]]:
    """Settle provisionally kept records by their chunks' metadata, in one batch."""
    if run.scope is None:
        return entity_lists, relation_lists
    undecided: dict[tuple[str, str], list[str]] = {}
    for items in entity_lists:
        for e in items:
            if _own_verdict(run, e.entity) is None:
                undecided[("e", e.name)] = parse_source_ids(e.entity.source_id)
    for rels in relation_lists:
        for r in rels:
            if _own_verdict(run, r.relation) is None:
                undecided[("r", r.relation.id)] = parse_source_ids(r.relation.source_id)
    if not undecided:
        return entity_lists, relation_lists
    await run.fetcher.prefetch(cid for ids in undecided.values() for cid in ids)
    verdict = {
        key: any(
            (c := run.fetcher.known(cid)) is not None and chunk_in_scope(run.scope, c)
            for cid in ids
        )
        for key, ids in undecided.items()
    }
    out_e = []
    for items in entity_lists:
        kept = [e for e in items if verdict.get(("e", e.name), True)]
        run.stats.scope_graph_removed_entities += len(items) - len(kept)
        out_e.append(kept)
    out_r = []
    for rels in relation_lists:
        kept_r = [r for r in rels if verdict.get(("r", r.relation.id), True)]
        run.stats.scope_graph_removed_relations += len(rels) - len(kept_r)
        out_r.append(kept_r)
    return out_e, out_r


# ---------------------------------------------------------------------------------------
# Local: entities, then their edges (LightRAG ``_get_node_data``)
# ---------------------------------------------------------------------------------------


async def _gather_pair(a: Awaitable[_A], b: Awaitable[_B]) -> tuple[_A, _B]:
    x, y = await asyncio.gather(a, b)
    return x, y


async def _local(
    stores: Stores, run: QueryRun, vector: np.ndarray, strategy: str
) -> tuple[list[EntityItem], list[RelationItem]]:
    hits = await stores.entities.query(vector, run.param.top_k, scope=run.scope)
    hits = [h for h in hits if h.record.entity_name]
    if not hits:
        return [], []
    names = [h.record.entity_name for h in hits]  # duplicates kept, as LightRAG does
    graph = stores.graph
    # the hits' edges (and their ends' degrees) are read while their nodes are: the edges of
    # a hit dropped below (no node, out of scope) are read for nothing, one round trip less
    early_edges = (
        graph.get_node_edges_with_degrees(list(dict.fromkeys(names)))  # type: ignore[arg-type]
        if isinstance(graph, NodeEdgesWithDegrees)
        else None
    )
    if isinstance(graph, NodesWithDegrees):
        node_read = graph.get_nodes_with_degrees(names)  # type: ignore[arg-type]
    else:
        node_read = _gather_pair(graph.get_nodes(names), graph.node_degrees(names))  # type: ignore[arg-type]
    if early_edges is None:
        nodes, degrees = await node_read
        edge_read = None
    else:
        (nodes, degrees), edge_read = await asyncio.gather(node_read, early_edges)
    entities = [
        EntityItem(
            entity=nodes[h.record.entity_name],  # type: ignore[index]
            rank=degrees.get(h.record.entity_name, 0),  # type: ignore[arg-type]
            created_at=h.record.created_at,
        )
        for h in hits
        if h.record.entity_name in nodes
    ]
    entities = _drop_own_out_of_scope(run, entities, "entity")
    if not entities:
        return [], []

    order = list(dict.fromkeys(e.name for e in entities))
    end_degrees: dict[str, int] | None = None
    if edge_read is not None:  # the edges and their ends' degrees, read above
        edges_by_node, end_degrees = edge_read
    else:
        edges_by_node = await graph.get_node_edges(order)
    picked: list[Relation] = []
    picked_pairs: list[tuple[str, str]] = []
    seen: set[Hashable] = set()
    by_pair = strategy == "pair"
    for name in order:
        for rel in edges_by_node.get(name, []):
            pair = rel.pair
            key = pair if by_pair else rel.id
            if key not in seen:
                seen.add(key)
                picked.append(rel)
                picked_pairs.append(pair)
    if not picked:
        return entities, []
    if end_degrees is None:
        edge_degrees = await graph.edge_degrees(list(dict.fromkeys(picked_pairs)))
    else:
        end = end_degrees.get
        edge_degrees = {(a, b): end(a, 0) + end(b, 0) for a, b in dict.fromkeys(picked_pairs)}
    degree = edge_degrees.get
    relations = [
        RelationItem(
            rel,
            pair[0],
            pair[1],
            degree(pair, 0),
            rel.created_at if rel.created_at is not None else "",
            "local",
        )
        for rel, pair in zip(picked, picked_pairs, strict=True)
    ]
    relations.sort(key=lambda r: (r.rank or 0, r.weight), reverse=True)
    relations = _drop_own_out_of_scope(run, relations, "relation")
    return entities, relations


# ---------------------------------------------------------------------------------------
# Global: relation hits, resolved to graph edges, then their endpoints (``_get_edge_data``)
# ---------------------------------------------------------------------------------------


async def _edges_by_chunk(
    stores: Stores, chunk_ids: list[str], hits: list[Any]
) -> dict[str, list[Relation]]:
    # only the edges of a hit's own pair are kept below: a store that can narrow the lookup
    # to those pairs (PairEdgesByChunk) need not scan every edge for the chunk ids
    graph = stores.graph
    if isinstance(graph, PairEdgesByChunk):
        pairs = list(dict.fromkeys((h.record.src_id, h.record.tgt_id) for h in hits))
        return await graph.get_edges_by_chunk_ids_of_pairs(chunk_ids, pairs)
    return await graph.get_edges_by_chunk_ids(chunk_ids)


async def _global(
    stores: Stores, run: QueryRun, vector: np.ndarray, strategy: str
) -> tuple[list[RelationItem], list[EntityItem]]:
    hits = await stores.relationships.query(vector, run.param.top_k, scope=run.scope)
    hits = [h for h in hits if h.record.src_id is not None and h.record.tgt_id is not None]
    if not hits:
        return [], []

    async def resolve() -> tuple[list[list[Relation]], list[str]]:
        resolved: list[list[Relation]] = [[] for _ in hits]
        how: list[str] = ["pair"] * len(hits)
        if strategy == "chunk":
            ids_per_hit = [parse_source_ids(h.record.source_id) for h in hits]
            wanted = list(dict.fromkeys(c for ids in ids_per_hit for c in ids))
            by_chunk = await _edges_by_chunk(stores, wanted, hits) if wanted else {}
            for i, (hit, ids) in enumerate(zip(hits, ids_per_hit, strict=True)):
                a, b = hit.record.src_id, hit.record.tgt_id
                pair = (a, b) if a <= b else (b, a)  # type: ignore[operator]
                found: dict[str, Relation] = {}
                for cid in ids:
                    for rel in by_chunk.get(cid, []):
                        if rel.pair == pair and rel.id not in found:
                            found[rel.id] = rel
                if found:
                    resolved[i] = list(found.values())
                    how[i] = "chunk"
        fallback = [i for i in range(len(hits)) if not resolved[i]]
        if fallback:
            pairs = [(hits[i].record.src_id, hits[i].record.tgt_id) for i in fallback]
            by_pair = await stores.graph.get_edges_by_pairs(pairs)  # type: ignore[arg-type]
            for i, pair in zip(fallback, pairs, strict=True):
                rels = by_pair.get(pair, [])  # type: ignore[arg-type]
                if rels:
                    resolved[i] = [rels[0]]  # LightRAG keeps one edge per pair
                    how[i] = "pair"
        return resolved, how

    # the endpoints' nodes are read while the edges are resolved (one round trip less;
    # those of a hit that resolves to no edge are read for nothing)
    ends = list(dict.fromkeys(n for h in hits for n in (h.record.src_id, h.record.tgt_id)))
    (resolved, how), end_nodes = await asyncio.gather(
        resolve(), stores.graph.get_nodes(ends)  # type: ignore[arg-type]
    )

    relations: list[RelationItem] = []
    for hit, rels, h in zip(hits, resolved, how, strict=True):
        if not rels:
            run.stats.relations_unresolved += 1
            continue
        if h == "chunk":
            run.stats.relations_resolved_by_chunk += 1
        else:
            run.stats.relations_resolved_by_pair += 1
        for rel in rels:
            relations.append(
                RelationItem(
                    relation=rel,
                    entity1=hit.record.src_id,  # type: ignore[arg-type]
                    entity2=hit.record.tgt_id,  # type: ignore[arg-type]
                    rank=None,
                    created_at=(
                        rel.created_at if rel.created_at is not None else hit.record.created_at
                    ),
                    resolved_by=h,
                )
            )
    relations = _drop_own_out_of_scope(run, relations, "relation")
    if not relations:
        return [], []

    names: list[str] = []
    seen: set[str] = set()
    for r in relations:
        for n in (r.entity1, r.entity2):
            if n not in seen:
                seen.add(n)
                names.append(n)
    nodes = end_nodes
    entities = [
        EntityItem(
            entity=nodes[n],
            rank=None,
            created_at=nodes[n].created_at if nodes[n].created_at is not None else "",
        )
        for n in names
        if n in nodes
    ]
    entities = _drop_own_out_of_scope(run, entities, "entity")
    return relations, entities


# ---------------------------------------------------------------------------------------
# Mix: direct chunk search (``_get_vector_context``)
# ---------------------------------------------------------------------------------------


async def vector_chunks(
    chunks: VectorIndex, run: QueryRun, vector: np.ndarray
) -> list[dict[str, Any]]:
    """Chunks found by searching the chunk index with the raw query (mix and naive)."""
    top_k = run.param.chunk_top_k or run.param.top_k
    hits = await chunks.query(vector, top_k, scope=run.scope)
    out = []
    for h in hits:
        if h.record.content is None:
            continue
        out.append(
            {
                "content": h.record.content,
                "created_at": h.record.created_at,
                "file_path": h.record.file_path,
                "chunk_id": h.record.id,
            }
        )
    return out


# ---------------------------------------------------------------------------------------
# Orchestration
# ---------------------------------------------------------------------------------------


async def perform_search(
    stores: Stores,
    embedder: Embedder,
    run: QueryRun,
    ll_str: str,
    hl_str: str,
    *,
    relation_lookup: str,
) -> SearchResult:
    """Run the branches the mode needs (with LightRAG's fall-through) and merge them.

    ``local`` with no low-level keywords, and ``global`` with no high-level ones, fall
    through to whatever keywords exist (LightRAG spec section 2). ``relation_lookup`` is how
    relation hits become edges (``"chunk"`` or LightRAG's ``"pair"``). Sets
    ``run.query_vector``.
    """
    mode = run.param.mode
    strategy = relation_lookup
    run.stats.relation_lookup = strategy
    if mode == "local" and ll_str:
        run_local, run_global = True, False
    elif mode == "global" and hl_str:
        run_local, run_global = False, True
    else:
        run_local, run_global = bool(ll_str), bool(hl_str)
    run_vector = mode == "mix"

    texts: list[str] = []
    if run.query:
        texts.append(run.query)
    if run_local:
        texts.append(ll_str)
    if run_global:
        texts.append(hl_str)
    vectors = await embedder.embed(texts) if texts else np.zeros((0, 0), np.float32)
    pos = 0
    if run.query:
        run.query_vector = np.asarray(vectors[0], dtype=np.float32)
        pos = 1
    ll_vec = vectors[pos] if run_local else None
    hl_vec = vectors[pos + int(run_local)] if run_global else None

    async def none2() -> tuple[list[Any], list[Any]]:
        return [], []

    async def none1() -> list[dict[str, Any]]:
        return []

    local_task = _local(stores, run, ll_vec, strategy) if ll_vec is not None else none2()
    global_task = _global(stores, run, hl_vec, strategy) if hl_vec is not None else none2()
    vector_task = (
        vector_chunks(stores.chunks, run, run.query_vector)
        if run_vector and run.query_vector is not None
        else none1()
    )
    (local_e, local_r), (global_r, global_e), vchunks = await asyncio.gather(
        local_task, global_task, vector_task
    )
    (local_e, global_e), (local_r, global_r) = await _settle_undecided(
        run, [local_e, global_e], [local_r, global_r]
    )
    entities = round_robin([local_e, global_e], key=lambda e: e.name)
    if not global_r and strategy == "pair":
        relations = local_r  # _local already keeps one relation per pair, in this order
    else:
        relations = round_robin([local_r, global_r], key=lambda r: relation_key(r, strategy))
    return SearchResult(entities=entities, relations=relations, vector_chunks=vchunks)
