"""GraphStore port: the knowledge graph, with multi-edges, read in batches.

Declared departures
===================

The port's rules (a multigraph, relation ids and orientations as written, the port's edge
order, ``source_id`` parsed with :func:`~hexrag.core.query.source_ids.parse_source_ids`) are
what hexrag's own layouts keep. A layout that serves another system's graph in place
(LightRAG's ``PGTableGraphStorage`` tables, its ``Neo4JStorage`` label) keeps *that* system's
rules and says so with a :class:`GraphStoreTraits` record as its ``traits`` attribute; a store
without one keeps the port's rules (:func:`graph_traits_of`). The contract suite
(:mod:`hexrag.testing.graph_store`) runs its oracle through the declaration and asserts the
declared behaviour, so a layout still fails when it does anything other than what it declares:

* ``one_edge_per_pair``: at most one relation joins an (unordered) pair; its id is
  :func:`hexrag.core.ingest.ids.relation_id` of the pair (``rel-`` + md5, LightRAG's
  relationship-vector id), not the id written; a later relation of the pair replaces it; reads
  and ``delete_edges`` use that id.
* ``orientation``: ``"kept"``: a relation reads back oriented as written (the port's rule);
  ``"sorted"``: stored ``src_id <= tgt_id`` (code-point order, LightRAG's PostgreSQL graph);
  ``"first"``: the orientation of the pair's first write is kept (Neo4j's undirected ``MERGE``).
* ``edge_order``: a node's edges in ``get_node_edges``: ``"insertion"`` (the port's order),
  ``"neighbour_name"`` (sorted by the neighbour's name, as ``PGTableGraphStorage`` sorts), or
  ``"backend"`` (whatever order the server gives; compared as sets).
* ``chunk_list_order``: the lists of ``get_edges_by_chunk_ids``: ``"insertion"`` or
  ``"backend"`` (the server's order, e.g. by pair under the database collation).
* ``source_id_split``: how a relation's ``source_id`` names chunk ids: ``"parsed"``
  (:func:`~hexrag.core.query.source_ids.parse_source_ids`, every form) or ``"sep"`` (only a
  ``<SEP>``-joined string, split on ``<SEP>``: LightRAG's SQL; array text names one odd id).
* ``merges_on_replace``: a replaced node or relation keeps what the new write leaves unset
  (fields written ``None``, ``properties`` keys not named), as Neo4j's ``SET n += props`` does;
  ``False``: a replacement is whole (the port's rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

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


@runtime_checkable
class StoredDegrees(Protocol):
    """Optional: node degrees the backend can keep for the store on request, an explicit
    speed-up for a layout that holds none (LightRAG's PostgreSQL graph: hexrag never changes
    a user's tables on its own). Reads use them once installed; the degrees are the same."""

    async def stored_degrees(self) -> bool:
        """Whether they are installed."""
        ...

    async def install_stored_degrees(self) -> None:
        """Install them (nothing when already there)."""
        ...

    async def remove_stored_degrees(self) -> None:
        """Remove them (nothing when absent)."""
        ...


@dataclass(frozen=True, slots=True)
class GraphStoreTraits:
    """What a graph store declares about its rules (see the module docstring); the defaults
    are the port's own rules."""

    one_edge_per_pair: bool = False
    orientation: Literal["kept", "sorted", "first"] = "kept"
    edge_order: Literal["insertion", "neighbour_name", "backend"] = "insertion"
    chunk_list_order: Literal["insertion", "backend"] = "insertion"
    source_id_split: Literal["parsed", "sep"] = "parsed"
    merges_on_replace: bool = False


#: The port's own rules (what a graph store without a ``traits`` attribute keeps).
PORT_GRAPH_TRAITS = GraphStoreTraits()


def graph_traits_of(store: object) -> GraphStoreTraits:
    """``store.traits`` when the store declares them, else :data:`PORT_GRAPH_TRAITS`."""
    traits = getattr(store, "traits", None)
    return traits if isinstance(traits, GraphStoreTraits) else PORT_GRAPH_TRAITS
