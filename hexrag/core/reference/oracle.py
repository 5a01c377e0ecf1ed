"""Pure reference models of the storage ports (no I/O).

The contract suite (:mod:`hexrag.testing`) computes every expected result with these models, and
the memory adapters share their rules, so "what the port means" is written down exactly once in
executable form:

* :class:`VectorOracle` - brute-force cosine ranking with the port's threshold, scope
  pre-filter (:func:`hexrag.core.scope.prefilter_match` over
  :func:`hexrag.core.scope.scope_values`) and tie rule ``(-score, id)``. Scores are computed in
  float64 on L2-normalised vectors; a zero vector has cosine 0 with everything.
* :class:`GraphOracle` - the undirected multigraph with the port's **edge order**:

  - a node's incident relations are grouped by neighbour; groups are ordered by when the
    neighbour became connected to the node (a group disappears when its last relation is
    deleted, and a later relation starts a new group at the end);
  - inside a group, relations keep their insertion order; re-upserting an existing relation
    id between the same pair (either orientation) keeps its place;
  - re-upserting an id with a *different* pair moves it: it is removed from the old pair and
    appended as a new relation of the new pair;
  - lists by pair and by chunk id are in relation insertion order (same rules);
  - a self-loop appears once in its node's list and counts 2 towards the degree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.scope import prefilter_match, scope_values
from hexrag.domain.records import Entity, Relation, VectorRecord
from hexrag.domain.scope import QueryScope

__all__ = [
    "GraphOracle",
    "ScoredId",
    "VectorOracle",
    "cosine",
    "json_roundtrip",
    "normalise",
    "rank_records",
    "record_scope_values",
]


def normalise(vector: np.ndarray | Sequence[float]) -> np.ndarray:
    """``vector`` as float64 with unit L2 norm (a zero vector stays zero)."""
    v = np.asarray(vector, dtype=np.float64).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def cosine(a: np.ndarray | Sequence[float], b: np.ndarray | Sequence[float]) -> float:
    """Cosine similarity in float64, clipped to [-1, 1]; 0 when either vector is zero."""
    return float(np.clip(np.dot(normalise(a), normalise(b)), -1.0, 1.0))


def record_scope_values(record: VectorRecord) -> dict[str, frozenset[str]]:
    """What a vector index filters ``record`` on (see :func:`hexrag.core.scope.scope_values`)."""
    return scope_values(record.metadata, record.file_path, record.full_doc_id)


@dataclass(frozen=True, slots=True)
class ScoredId:
    """An admitted record id and its exact (float64) cosine with the query."""

    id: str
    score: float


def rank_records(
    records: Iterable[VectorRecord],
    vector: np.ndarray | Sequence[float],
    top_k: int | None,
    *,
    cosine_threshold: float,
    scope: QueryScope | None = None,
) -> list[ScoredId]:
    """The port's answer to ``query``: admitted records with ``score >= threshold``, ordered by
    ``(-score, id)``, cut at ``top_k`` (``None`` = no cut)."""
    q = normalise(vector)
    scored = [
        ScoredId(r.id, cosine(q, r.vector))  # type: ignore[arg-type]
        for r in records
        if prefilter_match(scope, record_scope_values(r))
    ]
    kept = [s for s in scored if s.score >= cosine_threshold]
    kept.sort(key=lambda s: (-s.score, s.id))
    return kept if top_k is None else kept[: max(top_k, 0)]


class VectorOracle:
    """The reference vector index: a dict of records, last write wins."""

    def __init__(self, dim: int, cosine_threshold: float = 0.2) -> None:
        self.dim = dim
        self.cosine_threshold = cosine_threshold
        self.records: dict[str, VectorRecord] = {}

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace (the vector is kept as float64 for exact scoring)."""
        for r in records:
            if r.vector is None or np.asarray(r.vector).reshape(-1).shape[0] != self.dim:
                raise ValueError(f"record {r.id!r} has no vector of length {self.dim}")
        for r in records:
            vec = np.asarray(r.vector, dtype=np.float64).reshape(-1).copy()
            self.records[r.id] = replace(r, vector=vec)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove ids; unknown ids are ignored."""
        for i in ids:
            self.records.pop(i, None)

    def admitted(self, scope: QueryScope | None) -> list[VectorRecord]:
        """Records that pass the scope pre-filter."""
        return [
            r for r in self.records.values() if prefilter_match(scope, record_scope_values(r))
        ]

    def scores(
        self, vector: np.ndarray | Sequence[float], scope: QueryScope | None = None
    ) -> dict[str, float]:
        """Exact cosine of every admitted record (before threshold and top_k)."""
        q = normalise(vector)
        return {r.id: cosine(q, r.vector) for r in self.admitted(scope)}  # type: ignore[arg-type]

    def query(
        self,
        vector: np.ndarray | Sequence[float],
        top_k: int,
        *,
        scope: QueryScope | None = None,
    ) -> list[ScoredId]:
        """The expected hits (ids and exact scores)."""
        return rank_records(
            self.records.values(),
            vector,
            top_k,
            cosine_threshold=self.cosine_threshold,
            scope=scope,
        )

    def stored(self, record_id: str) -> VectorRecord | None:
        """The record as stored, with ``vector=None``."""
        r = self.records.get(record_id)
        return None if r is None else replace(r, vector=None)


class GraphOracle:
    """The reference graph store (see the module docstring for the edge-order rules)."""

    def __init__(self) -> None:
        self.nodes: dict[str, Entity] = {}
        # Relation insertion order: a replaced relation keeps its key position.
        self.relations: dict[str, Relation] = {}
        # node -> neighbour -> {relation id: None}; both directions share one group dict.
        self.adj: dict[str, dict[str, dict[str, None]]] = {}

    # -- writes ------------------------------------------------------------------------

    def _ensure(self, name: str) -> None:
        if name not in self.nodes:
            self.nodes[name] = Entity(name=name)
            self.adj[name] = {}

    def upsert_nodes(self, entities: Sequence[Entity]) -> None:
        """Insert or replace nodes (edges kept)."""
        for e in entities:
            if e.name not in self.nodes:
                self.adj[e.name] = {}
            self.nodes[e.name] = e

    def upsert_edges(self, relations: Sequence[Relation]) -> None:
        """Insert or replace relations by id."""
        for r in relations:
            old = self.relations.get(r.id)
            if old is not None and old.pair == r.pair:
                self.relations[r.id] = r
                continue
            if old is not None:
                self._remove_edge(old)
            self._ensure(r.src_id)
            self._ensure(r.tgt_id)
            group = self.adj[r.src_id].get(r.tgt_id)
            if group is None:
                group = {}
                self.adj[r.src_id][r.tgt_id] = group
                self.adj[r.tgt_id][r.src_id] = group
            group[r.id] = None
            self.relations[r.id] = r

    def _remove_edge(self, r: Relation) -> None:
        group = self.adj[r.src_id][r.tgt_id]
        del group[r.id]
        if not group:
            del self.adj[r.src_id][r.tgt_id]
            self.adj[r.tgt_id].pop(r.src_id, None)
        del self.relations[r.id]

    def delete_edges(self, relation_ids: Iterable[str]) -> None:
        """Remove relations; unknown ids are ignored."""
        for rid in relation_ids:
            r = self.relations.get(rid)
            if r is not None:
                self._remove_edge(r)

    def delete_nodes(self, names: Iterable[str]) -> None:
        """Remove nodes and their relations; unknown names are ignored."""
        for name in names:
            if name not in self.nodes:
                continue
            incident = [rid for group in self.adj[name].values() for rid in group]
            self.delete_edges(incident)
            del self.adj[name]
            del self.nodes[name]

    # -- reads -------------------------------------------------------------------------

    def get_nodes(self, names: Iterable[str]) -> dict[str, Entity]:
        """Found nodes by name."""
        return {n: self.nodes[n] for n in names if n in self.nodes}

    def degree(self, name: str) -> int:
        """Incident relations, a self-loop counting 2; 0 for a missing node."""
        return sum(
            len(group) * (2 if nbr == name else 1) for nbr, group in self.adj.get(name, {}).items()
        )

    def node_degrees(self, names: Iterable[str]) -> dict[str, int]:
        """Degree per requested name."""
        return {n: self.degree(n) for n in names}

    def edge_degrees(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """``degree(a) + degree(b)`` per requested pair."""
        return {(a, b): self.degree(a) + self.degree(b) for a, b in pairs}

    def node_edges(self, name: str) -> list[Relation]:
        """A node's relations in the port's edge order."""
        return [
            self.relations[rid] for group in self.adj.get(name, {}).values() for rid in group
        ]

    def get_node_edges(self, names: Iterable[str]) -> dict[str, list[Relation]]:
        """Edge lists per requested name."""
        return {n: self.node_edges(n) for n in names}

    def pair_edges(self, a: str, b: str) -> list[Relation]:
        """Relations joining ``a`` and ``b`` in insertion order."""
        group = self.adj.get(a, {}).get(b, {})
        return [self.relations[rid] for rid in group]

    def get_edges_by_pairs(
        self, pairs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], list[Relation]]:
        """Per requested pair (requested orientation), absent when no relation joins it."""
        out: dict[tuple[str, str], list[Relation]] = {}
        for a, b in pairs:
            rels = self.pair_edges(a, b)
            if rels:
                out[(a, b)] = rels
        return out

    def get_edges_by_chunk_ids(self, chunk_ids: Iterable[str]) -> dict[str, list[Relation]]:
        """Relations whose parsed ``source_id`` contains each chunk id, in insertion order."""
        wanted = list(dict.fromkeys(chunk_ids))
        out: dict[str, list[Relation]] = {}
        for r in self.relations.values():
            ids = set(parse_source_ids(r.source_id))
            for cid in wanted:
                if cid in ids:
                    out.setdefault(cid, []).append(r)
        return out


def json_roundtrip(value: Mapping[str, Any]) -> dict[str, Any]:
    """What a JSON store gives back for ``value`` (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value))  # type: ignore[no-any-return]
