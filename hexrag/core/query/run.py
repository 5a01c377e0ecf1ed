"""Per-query state of the four stages (:class:`QueryRun`) and the items they pass along.

The chunk store is read through :class:`ChunkFetcher`, which batches and memoises, so the
stages can ask for chunks where LightRAG does and still cost at most a couple of round trips.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hexrag.core.query.memo import QueryMemo
from hexrag.domain.params import QueryParam
from hexrag.domain.records import Chunk, Entity, Relation
from hexrag.domain.scope import QueryScope
from hexrag.ports import ChunkStore
from hexrag.ports.chunk_metadata import ChunkMetadata
from hexrag.ports.stack import Stack

#: The storage a query reads: the one :class:`~hexrag.ports.stack.Stack` (the engine holds
#: the five sections a query reads; ``Stores`` is the name the stages knew it by).
Stores = Stack


@dataclass
class EntityItem:
    """An entity as stage 1 found it.

    ``created_at`` is the value LightRAG reports: the vector index's timestamp for
    local-sourced entities (may be ``None``), the graph's for global-sourced ones.
    """

    entity: Entity
    rank: int | None
    created_at: Any

    @property
    def name(self) -> str:
        """The entity name."""
        return self.entity.name


@dataclass
class RelationItem:
    """A relation as stage 1 found it.

    ``entity1``/``entity2`` are the orientation LightRAG shows: the sorted pair for relations
    found from entities (local), the vector index's orientation for relation hits (global).
    """

    relation: Relation
    entity1: str
    entity2: str
    rank: int | None
    created_at: Any
    resolved_by: str  # "local" | "pair" | "chunk"

    @property
    def weight(self) -> float:
        """The stored weight, 1.0 when missing (LightRAG's default)."""
        return 1.0 if self.relation.weight is None else float(self.relation.weight)


@dataclass
class ChunkItem:
    """A chunk travelling through stages 3 and 4."""

    chunk_id: str
    content: str
    file_path: Any
    content_headings: str = ""
    rerank_score: float | None = None
    reference_id: str = ""


#: Most characters of one scope value echoed in ``processing_info.scope.filter``.
ECHO_VALUE_CHARS = 200
#: Most values of one scope field echoed there (the rest are counted in ``filter_omitted``).
ECHO_VALUES = 20


def echo_scope(scope: QueryScope | None) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
    """The scope as echoed in ``processing_info``: ``(filter, omitted)``.

    The request is bounded only by its body size, so the echo is bounded here: each value cut
    to :data:`ECHO_VALUE_CHARS` characters (marked ``…(+N chars)``), each field to its first
    :data:`ECHO_VALUES` values; ``omitted`` counts, per field, the values left out."""
    shown: dict[str, tuple[str, ...]] = {}
    omitted: dict[str, int] = {}
    for name, values in (scope.fields() if scope is not None else {}).items():
        shown[name] = tuple(
            v if len(v) <= ECHO_VALUE_CHARS
            else f"{v[:ECHO_VALUE_CHARS]}…(+{len(v) - ECHO_VALUE_CHARS} chars)"
            for v in values[:ECHO_VALUES]
        )
        if len(values) > ECHO_VALUES:
            omitted[name] = len(values) - ECHO_VALUES
    return shown, omitted


@dataclass
class RunStats:
    """hexrag's additions to ``processing_info``: what each query really did."""

    keyword_source: str = "supplied"
    relation_lookup: str = "pair"
    relations_resolved_by_chunk: int = 0
    relations_resolved_by_pair: int = 0
    relations_unresolved: int = 0
    missing_chunk_ids: dict[str, None] = field(default_factory=dict)
    scope_graph_removed_entities: int = 0
    scope_graph_removed_relations: int = 0
    scope_chunk_guard_removed: int = 0
    scope_narrowed_descriptions: int = 0
    scope_narrowed_source_ids: int = 0
    chunk_pick_method: str = "VECTOR"
    chunk_pick_fallbacks: int = 0
    llm_error: str | None = None

    def processing_info(self, scope: QueryScope | None, sample_size: int) -> dict[str, Any]:
        """The additions, as they appear in ``metadata.processing_info``."""
        missing = list(self.missing_chunk_ids)
        # a missing chunk cannot prove itself in scope (unknown means out): a scoped answer
        # counts missing chunks but names none
        sample = missing[:sample_size] if scope is None or scope.is_empty else []
        info: dict[str, Any] = {
            "keyword_source": self.keyword_source,
            "relation_lookup": self.relation_lookup,
            "relations_resolved_by_chunk": self.relations_resolved_by_chunk,
            "relations_resolved_by_pair": self.relations_resolved_by_pair,
            "relations_unresolved": self.relations_unresolved,
            "missing_chunk_count": len(missing),
            "missing_chunk_sample": sample,
            "chunk_pick_method": self.chunk_pick_method,
            "chunk_pick_fallbacks": self.chunk_pick_fallbacks,
        }
        if self.llm_error:
            info["keyword_llm_error"] = self.llm_error
        shown, omitted = echo_scope(scope)
        info["scope"] = {
            "applied": scope is not None and not scope.is_empty,
            "filter": shown,
            "vector_prefilter": scope is not None and not scope.is_empty,
            "graph_removed_entities": self.scope_graph_removed_entities,
            "graph_removed_relations": self.scope_graph_removed_relations,
            "chunk_guard_removed": self.scope_chunk_guard_removed,
            "narrowed_descriptions": self.scope_narrowed_descriptions,
            "narrowed_source_ids": self.scope_narrowed_source_ids,
        }
        if omitted:
            info["scope"]["filter_omitted"] = omitted
        return info


class ChunkFetcher:
    """Batched, memoised access to the chunk store for one query; records missing ids."""

    def __init__(self, store: ChunkStore, stats: RunStats) -> None:
        self._store = store
        self._stats = stats
        self._known: dict[str, Chunk | None] = {}
        self._metadata: dict[str, Mapping[str, Any] | None] = {}

    async def prefetch(self, ids: Iterable[str]) -> None:
        """Load every id not seen yet, in one call."""
        wanted = [i for i in dict.fromkeys(ids) if i not in self._known]
        if not wanted:
            return
        records = await self._store.get_chunks(wanted)
        for cid, rec in zip(wanted, records, strict=True):
            self._known[cid] = rec
            if rec is None:
                self._stats.missing_chunk_ids[cid] = None

    async def get(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order (``None`` for missing), fetching what is not known yet."""
        await self.prefetch(ids)
        return [self._known[i] for i in ids]

    async def metadata(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        """The chunks' ``metadata`` in request order (``None`` for missing): from the chunks
        already fetched, else in one call, without the texts when the store can
        (:class:`~hexrag.ports.chunk_metadata.ChunkMetadata`); a missing id is recorded as
        :meth:`prefetch` records it."""
        wanted = [i for i in dict.fromkeys(ids) if i not in self._known and i not in self._metadata]
        if wanted:
            if isinstance(self._store, ChunkMetadata):
                found = await self._store.get_chunk_metadata(wanted)
                for cid, meta in zip(wanted, found, strict=True):
                    self._metadata[cid] = meta
                    if meta is None:
                        self._stats.missing_chunk_ids[cid] = None
            else:
                await self.prefetch(wanted)
        out: list[Mapping[str, Any] | None] = []
        for i in ids:
            if i in self._known:
                rec = self._known[i]
                out.append(None if rec is None else rec.metadata)
            else:
                out.append(self._metadata[i])
        return out

    def known(self, cid: str) -> Chunk | None:
        """A chunk already fetched (``None`` if missing or not fetched)."""
        return self._known.get(cid)

    def remember(self, records: Mapping[str, Chunk | None]) -> None:
        """Chunks read by another call (``None``: known missing), kept as if fetched here;
        the missing-id statistics are left to the caller."""
        self._known.update(records)


@dataclass
class QueryRun:
    """What is truly per query: the question, its parameters (and scope), the statistics that
    become ``processing_info``, the batching chunk fetcher, and the query vector once stage 1
    has computed it. The engine-wide ports and settings are passed to each stage explicitly;
    ``memo`` is the engine's memo of pure text functions (``None``: nothing memoised)."""

    query: str
    param: QueryParam
    stats: RunStats
    fetcher: ChunkFetcher
    query_vector: np.ndarray | None = None
    memo: QueryMemo | None = None

    @property
    def scope(self) -> QueryScope | None:
        """The query's scope, ``None`` when unscoped."""
        s = self.param.scope
        return None if s is None or s.is_empty else s
