"""In-memory :class:`~hexrag.ports.GraphStore` on a networkx ``MultiGraph``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import networkx as nx

from hexrag.core.query.source_ids import parse_source_ids
from hexrag.domain.records import Entity, Relation
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

from ._scan import InsertionOrder

_ENTITY = "entity"
_RELATION = "relation"


class MemoryGraphStore:
    """An undirected multigraph; each edge is keyed by its relation id.

    networkx keeps adjacency dicts in insertion order and both endpoints share one key dict
    per pair, which is exactly the port's edge order: neighbours in first-connected order,
    relations of a pair in insertion order, a replaced relation (same pair) updated in place.
    A chunk id -> relation ids index (``source_id`` parsed with
    :func:`~hexrag.core.query.source_ids.parse_source_ids`) answers
    :meth:`get_edges_by_chunk_ids`; lists come back in relation insertion order.
    """

    def __init__(self) -> None:
        self._g: nx.MultiGraph = nx.MultiGraph()
        # relation id -> (u, v) as stored in the MultiGraph
        self._ends: dict[str, tuple[str, str]] = {}
        # relation id -> insertion sequence (kept on replace)
        self._seq: dict[str, int] = {}
        self._next_seq = 0
        self._by_chunk: dict[str, dict[str, None]] = {}
        # node -> incident relation count (a self-loop counts 2); networkx recomputes a
        # multigraph degree in O(degree), which dominated local queries on hub entities
        self._deg: dict[str, int] = {}
        # scan order: networkx's node order and the relations' insertion order
        self._node_order = InsertionOrder()
        self._edge_order = InsertionOrder()

    # -- helpers -------------------------------------------------------------------------

    def _relation(self, rid: str) -> Relation:
        u, v = self._ends[rid]
        return self._g._adj[u][v][rid][_RELATION]  # type: ignore[no-any-return]

    def _index(self, rel: Relation) -> None:
        for cid in parse_source_ids(rel.source_id):
            self._by_chunk.setdefault(cid, {})[rel.id] = None

    def _unindex(self, rel: Relation) -> None:
        for cid in parse_source_ids(rel.source_id):
            bucket = self._by_chunk.get(cid)
            if bucket is not None:
                bucket.pop(rel.id, None)
                if not bucket:
                    del self._by_chunk[cid]

    def _remove_edge(self, rid: str) -> None:
        rel = self._relation(rid)
        u, v = self._ends.pop(rid)
        self._g.remove_edge(u, v, key=rid)
        self._deg[u] -= 1
        self._deg[v] -= 1
        del self._seq[rid]
        self._edge_order.remove(rid)
        self._unindex(rel)

    # -- writes --------------------------------------------------------------------------

    async def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes by name; edges are kept."""
        for e in entities:
            self._g.add_node(e.name, **{_ENTITY: e})
            self._node_order.add(e.name)

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace relations by id (same pair: in place; other pair: moved)."""
        for rel in relations:
            ends = self._ends.get(rel.id)
            if ends is not None:
                old = self._relation(rel.id)
                if old.pair == rel.pair:
                    self._unindex(old)
                    self._g.adj[ends[0]][ends[1]][rel.id][_RELATION] = rel
                    self._index(rel)
                    continue
                self._remove_edge(rel.id)
            self._node_order.add(rel.src_id)  # an edge creates missing nodes (networkx order)
            self._node_order.add(rel.tgt_id)
            self._g.add_edge(rel.src_id, rel.tgt_id, key=rel.id, **{_RELATION: rel})
            self._edge_order.add(rel.id)
            self._ends[rel.id] = (rel.src_id, rel.tgt_id)
            self._deg[rel.src_id] = self._deg.get(rel.src_id, 0) + 1
            self._deg[rel.tgt_id] = self._deg.get(rel.tgt_id, 0) + 1
            self._seq[rel.id] = self._next_seq
            self._next_seq += 1
            self._index(rel)

    async def delete_nodes(self, names: Sequence[str]) -> None:
        """Remove nodes and their relations; unknown names are ignored."""
        for name in names:
            if name not in self._g:
                continue
            incident = [rid for kd in self._g.adj[name].values() for rid in kd]
            for rid in incident:
                self._remove_edge(rid)
            self._g.remove_node(name)
            self._node_order.remove(name)
            self._deg.pop(name, None)

    async def delete_edges(self, relation_ids: Sequence[str]) -> None:
        """Remove relations by id; unknown ids are ignored."""
        for rid in relation_ids:
            if rid in self._ends:
                self._remove_edge(rid)

    # -- reads ---------------------------------------------------------------------------

    def _entity(self, name: str) -> Entity:
        entity = self._g._node[name].get(_ENTITY)
        return entity if entity is not None else Entity(name=name)

    async def get_nodes(self, names: Sequence[str]) -> dict[str, Entity]:
        """Found nodes by name (a node created by an edge has only its name)."""
        nodes = self._g._node
        return {n: self._entity(n) for n in names if n in nodes}

    def _degree(self, name: str) -> int:
        return self._deg.get(name, 0)

    async def node_degrees(self, names: Sequence[str]) -> dict[str, int]:
        """Incident relations per name; a self-loop counts 2; missing nodes 0."""
        return {n: self._degree(n) for n in names}

    async def edge_degrees(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``degree(a) + degree(b)`` per requested pair."""
        return {(a, b): self._degree(a) + self._degree(b) for a, b in pairs}

    def _node_edges(self, name: str) -> list[Relation]:
        # networkx's raw adjacency dict (``_adj``, what ``G.adj`` wraps in read-only views):
        # the views' Mapping machinery cost more than the walk itself on hub entities
        nbrs = self._g._adj.get(name)
        if nbrs is None:
            return []
        return [data[_RELATION] for kd in nbrs.values() for data in kd.values()]

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        """Relations per name in the port's edge order."""
        return {n: self._node_edges(n) for n in names}

    async def get_edges_by_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """Relations joining each pair (either orientation), insertion order."""
        out: dict[tuple[str, str], list[Relation]] = {}
        adj = self._g._adj
        for a, b in pairs:
            kd = adj.get(a, {}).get(b)
            if kd is not None:
                out[(a, b)] = [data[_RELATION] for data in kd.values()]
        return out

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Relations whose parsed ``source_id`` names each chunk id, in insertion order."""
        out: dict[str, list[Relation]] = {}
        for cid in chunk_ids:
            bucket = self._by_chunk.get(cid)
            if bucket and cid not in out:
                rids = sorted(bucket, key=self._seq.__getitem__)
                out[cid] = [self._relation(rid) for rid in rids]
        return out

    async def count_nodes(self) -> int:
        """Number of nodes."""
        return int(self._g.number_of_nodes())

    async def count_edges(self) -> int:
        """Number of relations."""
        return len(self._ends)

    async def scan_nodes(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Entity]:
        """A page of nodes in insertion order (:class:`~hexrag.ports.scan.ScansGraph`)."""
        names, nxt = self._node_order.page(cursor, limit)
        return Page([self._entity(n) for n in names], nxt)

    async def scan_edges(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Relation]:
        """A page of relations in insertion order (:class:`~hexrag.ports.scan.ScansGraph`)."""
        rids, nxt = self._edge_order.page(cursor, limit)
        return Page([self._relation(r) for r in rids], nxt)

    # -- exporters -----------------------------------------------------------------------

    def iter_nodes(self) -> Iterator[Entity]:
        """Every node in insertion order."""
        for name in self._g.nodes:
            yield self._entity(name)

    def iter_edges(self) -> Iterator[Relation]:
        """Every relation in insertion order (a replaced relation keeps its place)."""
        # _seq's key order is insertion order: replaced relations keep their key
        for rid in list(self._seq):
            yield self._relation(rid)

    def __repr__(self) -> str:
        return f"MemoryGraphStore(nodes={self._g.number_of_nodes()}, edges={len(self._ends)})"
