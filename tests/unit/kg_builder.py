"""A tiny knowledge-graph builder for engine tests: vectors placed by hand, real memory adapters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hexrag.adapters.memory import (
    MemoryCache,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, EngineSettings, Entity, Relation, VectorRecord
from hexrag.core.query.engine import QueryEngine

DIM = 8


def axis(i: int, j: int | None = None, w: float = 0.5) -> list[float]:
    """A unit-ish vector on axis ``i`` (optionally leaning towards axis ``j``)."""
    v = [0.0] * DIM
    v[i] = 1.0
    if j is not None:
        v[j] = w
    return v


class TableEmbedder:
    """An Embedder that maps known texts to fixed vectors (a real port implementation)."""

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = dict(table)
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        return DIM

    @property
    def model_name(self) -> str:
        return "table"

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = [self.table.get(t, [0.0] * (DIM - 1) + [1.0]) for t in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), DIM)


@dataclass
class KG:
    """Declarative test graph."""

    chunks: list[Chunk] = field(default_factory=list)
    chunk_vectors: dict[str, Sequence[float]] = field(default_factory=dict)
    entities: list[tuple[Entity, Sequence[float] | None]] = field(default_factory=list)
    relations: list[tuple[Relation, Sequence[float] | None, Any]] = field(default_factory=list)
    queries: dict[str, Sequence[float]] = field(default_factory=dict)

    def chunk(
        self, cid: str, content: str, vector: Sequence[float] | None = None, **kw: Any
    ) -> None:
        meta = kw.pop("metadata", {})
        self.chunks.append(Chunk(id=cid, content=content, metadata=meta, **kw))
        if vector is not None:
            self.chunk_vectors[cid] = vector

    def entity(self, name: str, vector: Sequence[float] | None, **kw: Any) -> None:
        self.entities.append((Entity(name=name, **kw), vector))

    def relation(
        self,
        src: str,
        tgt: str,
        vector: Sequence[float] | None = None,
        *,
        rid: str | None = None,
        vector_source_id: Any = None,
        **kw: Any,
    ) -> None:
        rel = Relation(id=rid or relation_id(src, tgt), src_id=src, tgt_id=tgt, **kw)
        self.relations.append((rel, vector, vector_source_id))

    async def engine(self, **settings: Any) -> tuple[QueryEngine, TableEmbedder]:
        ents = MemoryVectorIndex("entities", DIM, cosine_threshold=0.0)
        rels = MemoryVectorIndex("relationships", DIM, cosine_threshold=0.0)
        chunks = MemoryVectorIndex("chunks", DIM, cosine_threshold=0.0)
        graph = MemoryGraphStore()
        store = MemoryChunkStore(self.chunks)
        await graph.upsert_nodes([e for e, _ in self.entities])
        await graph.upsert_edges([r for r, _, _ in self.relations])
        await ents.upsert(
            [
                VectorRecord(
                    id=entity_id(e.name),
                    vector=v,
                    entity_name=e.name,
                    source_id=e.source_id,
                    file_path=e.file_path,
                    created_at=e.created_at,
                    metadata=dict(e.properties),
                )
                for e, v in self.entities
                if v is not None
            ]
        )
        seen: set[str] = set()
        rel_records = []
        for r, v, vsid in self.relations:
            if v is None or r.id in seen:
                continue
            seen.add(r.id)
            rel_records.append(
                VectorRecord(
                    id=r.id,
                    vector=v,
                    src_id=r.src_id,
                    tgt_id=r.tgt_id,
                    source_id=r.source_id if vsid is None else vsid,
                    file_path=r.file_path,
                    created_at=r.created_at,
                    metadata=dict(r.properties),
                )
            )
        await rels.upsert(rel_records)
        await chunks.upsert(
            [
                VectorRecord(
                    id=c.id,
                    vector=self.chunk_vectors[c.id],
                    content=c.content,
                    file_path=c.file_path,
                    full_doc_id=c.full_doc_id,
                    metadata=dict(c.metadata),
                )
                for c in self.chunks
                if c.id in self.chunk_vectors
            ]
        )
        embedder = TableEmbedder(self.queries)
        base: dict[str, Any] = {"enable_content_headings": False}
        base.update(settings)
        engine = QueryEngine(
            tokenizer=default_tokenizer(),
            entities=ents,
            relationships=rels,
            chunks=chunks,
            graph=graph,
            chunk_store=store,
            embedder=embedder,
            cache=MemoryCache(),
            settings=EngineSettings(**base),
        )
        return engine, embedder
