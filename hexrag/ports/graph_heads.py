"""Optional graph capability: read records without their descriptions, complete them later.

A query reads hundreds of entity and relation records and shows a few dozen: stage 2 keeps
the longest prefixes whose rendered lines fit the token budgets, and only those lines carry a
description. Popular entities carry long merged descriptions (kilobytes each), so reading
every candidate whole costs most of a query's bytes. A store with this capability answers the
candidate reads with **heads**: the stored records with only what ranks, orders and dedups
them kept (an entity's ``name``, ``entity_type`` and ``created_at``; a relation's ``id``,
``src_id``, ``tgt_id``, ``weight`` and ``created_at``), every other field ``None`` (and
``properties`` empty), plus each record's description size in bytes (an estimate the core
uses to choose how many heads to complete in one call). A popular entity's source ids and file
paths are most of its bytes, its description most of the rest.
The core then completes only the heads the budgets can reach, with :meth:`GraphStore.get_nodes`
and :meth:`GraphHeads.get_relations`, and the kept prefixes are exactly those of whole records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hexrag.domain.records import Entity, Relation

__all__ = ["GraphHeads"]


@runtime_checkable
class GraphHeads(Protocol):
    """Optional: head reads (records without descriptions) and the read that completes them."""

    async def get_node_heads(
        self, names: Sequence[str]
    ) -> tuple[dict[str, Entity], dict[str, int]]:
        """``get_nodes(names)`` as heads (module docstring), and the byte size (UTF-8) of each
        found node's stored description (0 when it has none)."""
        ...

    async def get_node_edge_heads_with_degrees(
        self, names: Sequence[str]
    ) -> tuple[dict[str, list[Relation]], dict[str, int], dict[str, int]]:
        """``get_node_edges_with_degrees(names)`` with the relations as heads (module
        docstring), and the byte size of each listed relation's stored description, by
        relation id."""
        ...

    async def get_relations(self, ids: Sequence[str]) -> dict[str, Relation]:
        """Whole relations by id (as the other reads return them); missing ids are absent."""
        ...
