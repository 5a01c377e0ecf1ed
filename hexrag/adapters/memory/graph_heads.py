"""In-memory graph store with head reads (:class:`~hexrag.ports.graph_heads.GraphHeads`).

The memory store keeps whole records anyway, so heads save nothing here: this adapter exists
to exercise the core's head path (stage 2 completing only the heads the budgets reach) with
the same records as :class:`~hexrag.adapters.memory.MemoryGraphStore`, in tests and demos.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hexrag.domain.records import Entity, Relation

from .graph_store import MemoryGraphStore


def _size(description: str | None) -> int:
    return 0 if description is None else len(description.encode("utf-8"))


class MemoryGraphHeadsStore(MemoryGraphStore):
    """:class:`MemoryGraphStore` plus head reads and whole reads of relations by id."""

    async def get_node_edges_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, list[Relation]], dict[str, int]]:
        """``get_node_edges(names)`` and ``node_degrees`` of every endpoint of those edges
        (:class:`~hexrag.ports.graph_store.NodeEdgesWithDegrees`)."""
        edges = await self.get_node_edges(names)
        ends = dict.fromkeys(n for rels in edges.values() for r in rels for n in r.pair)
        return edges, await self.node_degrees(list(ends))

    async def get_node_heads(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Entity], dict[str, int]]:
        """``get_nodes(names)`` without descriptions, and each found node's description size
        in UTF-8 bytes (0 when it has none)."""
        nodes = await self.get_nodes(names)
        sizes = {n: _size(e.description) for n, e in nodes.items()}
        return {n: replace(e, description=None) for n, e in nodes.items()}, sizes

    async def get_node_edge_heads_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, list[Relation]], dict[str, int], dict[str, int]]:
        """:meth:`get_node_edges_with_degrees` without relation descriptions and keywords,
        and each listed relation's description size in UTF-8 bytes, by relation id."""
        edges, degrees = await self.get_node_edges_with_degrees(names)
        sizes = {r.id: _size(r.description) for rels in edges.values() for r in rels}
        heads = {
            n: [replace(r, description=None, keywords=None) for r in rels]
            for n, rels in edges.items()
        }
        return heads, degrees, sizes

    async def get_relations(self, ids: Sequence[str]) -> dict[str, Relation]:
        """Whole relations by id; missing ids are absent."""
        return {rid: self._relation(rid) for rid in ids if rid in self._ends}
