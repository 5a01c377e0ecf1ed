"""GraphStore port: the knowledge graph, with multi-edges, read in batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hexrag.domain.records import Entity, Relation


@runtime_checkable
class GraphStore(Protocol):
    """An undirected multigraph of :class:`Entity` nodes and :class:`Relation` edges.

    Every read below answers for a whole batch in one round trip. Edges are undirected for
    every lookup; a relation keeps the orientation it was stored with.

    **Edge order** (relied on for LightRAG parity and cross-store equality): each node's
    incident edges are returned grouped by neighbour, groups in the order the neighbour was
    first connected to the node, and within a group in insertion order of the relations
    (an upsert of an existing relation id keeps its place). Lists of relations for a pair or
    a chunk id are in insertion order.
    """

    async def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes by name (idempotent; replacing keeps the node's edges)."""
        ...

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace relations by ``id`` (idempotent).

        Missing endpoint nodes are created with no properties. Several relations may join the
        same pair; a replaced relation keeps its position in the edge order.
        """
        ...

    async def delete_nodes(self, names: Sequence[str]) -> None:
        """Remove nodes and every incident relation; unknown names are ignored."""
        ...

    async def delete_edges(self, relation_ids: Sequence[str]) -> None:
        """Remove relations by id; unknown ids are ignored."""
        ...

    async def get_nodes(self, names: Sequence[str]) -> dict[str, Entity]:
        """Nodes by name; missing names are absent from the result (no exception)."""
        ...

    async def node_degrees(self, names: Sequence[str]) -> dict[str, int]:
        """Number of incident relations per name (each multi-edge counts; a self-loop counts 2).

        Every requested name is a key; a missing node has degree 0.
        """
        ...

    async def edge_degrees(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``degree(a) + degree(b)`` for each requested pair, keyed as requested."""
        ...

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        """All relations incident to each name, in the port's edge order.

        Every requested name is a key; a missing node or a node without edges maps to ``[]``.
        """
        ...

    async def get_edges_by_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """Relations joining each pair, either orientation, in insertion order.

        Keys use the requested orientation; a pair with no relation is absent.
        """
        ...

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Relations whose ``source_id`` names each chunk id, matched as a whole id.

        ``source_id`` is split with :func:`hexrag.core.query.source_ids.parse_source_ids` (so
        ``chunk-1`` never matches ``chunk-10``). Chunk ids named by no relation are absent.
        """
        ...

    async def count_nodes(self) -> int:
        """Number of nodes."""
        ...

    async def count_edges(self) -> int:
        """Number of relations."""
        ...


@runtime_checkable
class PairEdgesByChunk(Protocol):
    """Optional: the chunk lookup narrowed to known entity pairs (a graph store without an
    index on ``source_id`` answers it from its pair key instead of scanning every edge)."""

    async def get_edges_by_chunk_ids_of_pairs(
        self, chunk_ids: Sequence[str], pairs: Sequence[tuple[str, str]]
    ) -> dict[str, list[Relation]]:
        """Exactly ``get_edges_by_chunk_ids(chunk_ids)`` with every list kept to the
        relations joining one of ``pairs`` (either orientation), in the same order; a chunk
        id left with no relation is absent."""
        ...


@runtime_checkable
class NodeEdgesWithDegrees(Protocol):
    """Optional: a node's edges and the degrees of their endpoints in one round trip (local
    mode ranks each edge by ``degree(a) + degree(b)`` right after reading it)."""

    async def get_node_edges_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """``get_node_edges(names)`` and ``node_degrees`` of every endpoint of those edges
        (a name absent from the second map has degree 0)."""
        ...


@runtime_checkable
class NodesWithDegrees(Protocol):
    """Optional: nodes and their degrees in one round trip (local mode ranks its entities)."""

    async def get_nodes_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Entity], dict[str, int]]:
        """``get_nodes(names)`` and ``node_degrees(names)``."""
        ...
