"""The graph oracle run through a store's declared rules
(:class:`~hexrag.ports.graph_store.GraphStoreTraits`), for :mod:`hexrag.testing.graph_store`.

With the port's rules (the default) :class:`DeclaredGraphOracle` is exactly
:class:`~hexrag.core.reference.oracle.GraphOracle`. A declaration changes what the oracle
stores (one relation per pair under the pair's id, the declared orientation, a replacement
merged), how it matches chunk ids, and the order the contract compares lists in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from hexrag.core.ingest.ids import relation_id
from hexrag.core.reference.oracle import GraphOracle
from hexrag.domain.records import GRAPH_FIELD_SEP, Entity, Relation
from hexrag.ports.graph_store import PORT_GRAPH_TRAITS, GraphStoreTraits

__all__ = ["DeclaredGraphOracle", "declared_id", "in_order", "in_order_map"]

_MERGED_FIELDS = ("entity_type", "description", "keywords", "weight", "source_id", "file_path",
                  "created_at")


def declared_id(traits: GraphStoreTraits, rel: Relation) -> str:
    """The id ``rel`` is read back under: the pair's id with one edge per pair, else its own."""
    return relation_id(rel.src_id, rel.tgt_id) if traits.one_edge_per_pair else rel.id


def _neighbour(name: str, rel: Relation) -> str:
    return rel.tgt_id if rel.src_id == name else rel.src_id


def in_order(traits: GraphStoreTraits, kind: str, rels: Sequence[Relation],
             name: str = "", *, read: bool = False) -> list[Relation]:
    """``rels`` in the order the contract compares them (``kind``: ``"node"`` for a node's
    edges, ``"chunk"`` for a chunk id's relations): by id where the order is the backend's;
    else a list ``read`` from the store as it came and the oracle's in the declared order."""
    order = traits.edge_order if kind == "node" else traits.chunk_list_order
    if order == "backend":
        return sorted(rels, key=lambda r: r.id)
    if order == "neighbour_name" and not read:
        return sorted(rels, key=lambda r: (_neighbour(name, r), r.src_id != name))
    return list(rels)


def in_order_map(traits: GraphStoreTraits, kind: str, lists: Mapping[str, Sequence[Relation]],
                 *, read: bool = False) -> dict[str, list[Relation]]:
    """:func:`in_order` of every list of a per-name (or per-chunk-id) map."""
    return {k: in_order(traits, kind, v, k, read=read) for k, v in lists.items()}


class DeclaredGraphOracle(GraphOracle):
    """:class:`GraphOracle` keeping a store's declared rules instead of the port's.

    ``declared(original_id)`` is the id a relation written under ``original_id`` is read
    back under (itself with the port's rules).
    """

    def __init__(self, traits: GraphStoreTraits = PORT_GRAPH_TRAITS) -> None:
        super().__init__()
        self.traits = traits
        self._ids: dict[str, str] = {}

    def declared(self, original_id: str) -> str:
        """The id the relation last written as ``original_id`` is stored under."""
        return self._ids.get(original_id, original_id)

    def _merged(self, new: Entity | Relation, old: Entity | Relation | None) -> Any:
        """``new``, merged over ``old`` when the store declares it merges."""
        if not self.traits.merges_on_replace or old is None:
            return new
        kept = {f: getattr(old, f) for f in _MERGED_FIELDS
                if hasattr(new, f) and getattr(new, f) is None}
        return replace(new, properties={**old.properties, **new.properties}, **kept)

    def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes as the store declares it keeps them."""
        if self.traits == PORT_GRAPH_TRAITS:
            super().upsert_nodes(entities)
            return
        for e in entities:
            super().upsert_nodes([self._merged(e, self.nodes.get(e.name))])

    def stored(self, rel: Relation) -> Relation:
        """``rel`` as the declaration says the store keeps it (given what is stored now)."""
        t = self.traits
        out = rel
        if t.orientation == "sorted":
            a, b = rel.pair
            out = replace(out, src_id=a, tgt_id=b)
        if t.one_edge_per_pair:
            rid = relation_id(rel.src_id, rel.tgt_id)
            old = self.relations.get(rid)
            if t.orientation == "first" and old is not None:
                out = replace(out, src_id=old.src_id, tgt_id=old.tgt_id)
            out = replace(out, id=rid)
        return self._merged(out, self.relations.get(out.id))  # type: ignore[no-any-return]

    def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace relations as the store declares it keeps them."""
        if self.traits == PORT_GRAPH_TRAITS:
            super().upsert_edges(relations)
            return
        for r in relations:
            stored = self.stored(r)
            self._ids[r.id] = stored.id
            super().upsert_edges([stored])

    def get_edges_by_chunk_ids(self, chunk_ids: Iterable[str]) -> dict[str, list[Relation]]:
        """Relations naming each chunk id, split as declared (``"sep"``: only a
        ``<SEP>``-joined string names ids)."""
        if self.traits.source_id_split == "parsed":
            return super().get_edges_by_chunk_ids(chunk_ids)
        wanted = list(dict.fromkeys(chunk_ids))
        out: dict[str, list[Relation]] = {}
        for r in self.relations.values():
            names = set(r.source_id.split(GRAPH_FIELD_SEP)) if isinstance(r.source_id, str) \
                else set()
            for cid in wanted:
                if cid in names:
                    out.setdefault(cid, []).append(r)
        return out
