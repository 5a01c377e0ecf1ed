"""A query costs a small constant number of calls per store, whatever top_k and node degrees."""

from __future__ import annotations

import numpy as np
import pytest

from hexrag.adapters.instrumented import Counting, RoundTrips
from hexrag.adapters.memory import (
    HashingEmbedder,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, EngineSettings, Entity, QueryParam, Relation, VectorRecord
from hexrag.core.query.engine import QueryEngine

DIM = 64

# calls per store for one query, at most (documented in the README); a scope adds
# SCOPED_EXTRA chunk-store calls
SCOPED_EXTRA = 1
BUDGET = {
    "entities": 1,
    "relationships": 1,
    "chunks": 2,  # mix search + one vector fetch for VECTOR picking
    "graph": 7,  # local 4 + relation hits by chunk ids, pair fallback, endpoints
    "chunk_store": 2,
    "embedder": 1,
}


async def build(hub_degree: int) -> dict[str, object]:
    """A star: hub H with ``hub_degree`` spokes, plus 60 other entities in a ring."""
    rng = np.random.default_rng(7)
    embedder = HashingEmbedder(DIM)
    names = ["H"] + [f"S{i}" for i in range(hub_degree)] + [f"R{i}" for i in range(60)]
    chunks = [Chunk(id=f"c{i}", content=f"text {i}", file_path=f"f{i % 5}") for i in range(200)]
    ents = [
        Entity(
            name=n,
            description=f"entity {n}",
            source_id="<SEP>".join(f"c{j}" for j in rng.choice(200, 4, replace=False)),
        )
        for n in names
    ]
    rels = [
        Relation(
            id=relation_id("H", f"S{i}"),
            src_id="H",
            tgt_id=f"S{i}",
            source_id=f"c{i % 200}",
            weight=1.0,
        )
        for i in range(hub_degree)
    ]
    rels += [
        Relation(
            id=relation_id(f"R{i}", f"R{(i + 1) % 60}"),
            src_id=f"R{i}",
            tgt_id=f"R{(i + 1) % 60}",
            source_id=f"c{i}",
        )
        for i in range(60)
    ]
    graph = MemoryGraphStore()
    await graph.upsert_nodes(ents)
    await graph.upsert_edges(rels)
    ev = MemoryVectorIndex("entities", DIM, cosine_threshold=-1.0)
    rv = MemoryVectorIndex("relationships", DIM, cosine_threshold=-1.0)
    cv = MemoryVectorIndex("chunks", DIM, cosine_threshold=-1.0)
    vecs = rng.normal(size=(len(ents) + len(rels) + len(chunks), DIM)).astype(np.float32)
    await ev.upsert(
        [
            VectorRecord(
                id=entity_id(e.name), vector=vecs[i], entity_name=e.name, source_id=e.source_id
            )
            for i, e in enumerate(ents)
        ]
    )
    off = len(ents)
    await rv.upsert(
        [
            VectorRecord(
                id=r.id,
                vector=vecs[off + i],
                src_id=r.src_id,
                tgt_id=r.tgt_id,
                source_id=r.source_id,
            )
            for i, r in enumerate(rels)
        ]
    )
    off += len(rels)
    await cv.upsert(
        [
            VectorRecord(id=c.id, vector=vecs[off + i], content=c.content, file_path=c.file_path)
            for i, c in enumerate(chunks)
        ]
    )
    return {
        "entities": ev,
        "relationships": rv,
        "chunks": cv,
        "graph": graph,
        "chunk_store": MemoryChunkStore(chunks),
        "embedder": embedder,
    }


async def count(stores: dict[str, object], mode: str, top_k: int, method: str) -> dict[str, int]:
    ledger = RoundTrips()
    wrapped = {k: Counting(v, k, ledger) for k, v in stores.items()}
    engine = QueryEngine(  # type: ignore[arg-type]
        **wrapped, settings=EngineSettings(kg_chunk_pick_method=method),
        tokenizer=default_tokenizer(),
    )
    param = QueryParam(
        mode=mode,
        top_k=top_k,
        ll_keywords=["entity H"],  # type: ignore[arg-type]
        hl_keywords=["spokes"],
        enable_rerank=False,
    )
    await engine.query_data("the hub and its spokes", param)
    return ledger.per_store()


@pytest.mark.parametrize("mode", ["local", "global", "hybrid", "mix", "naive"])
@pytest.mark.parametrize("method", ["VECTOR", "WEIGHT"])
async def test_round_trips_constant_in_top_k_and_degree(mode: str, method: str) -> None:
    small = await count(await build(5), mode, 5, method)
    large = await count(await build(300), mode, 60, method)
    assert small == large, (small, large)
    for store, calls in large.items():
        assert calls <= BUDGET[store], (store, calls)


@pytest.mark.parametrize("mode", ["local", "global", "hybrid", "mix", "naive"])
@pytest.mark.parametrize("scope_field", ["product_id", "doc_ids"])
async def test_scoped_round_trips_constant(mode: str, scope_field: str) -> None:
    """A scope adds at most SCOPED_EXTRA chunk-store calls: one batch settles the graph records
    their own metadata cannot decide (doc_ids), one batch feeds the chunk guard."""
    from hexrag.core.model import QueryScope

    async def scoped(hub: int, top_k: int) -> dict[str, int]:
        stores = await build(hub)
        ledger = RoundTrips()
        wrapped = {k: Counting(v, k, ledger) for k, v in stores.items()}
        engine = QueryEngine(tokenizer=default_tokenizer(), **wrapped)  # type: ignore[arg-type]
        param = QueryParam(
            mode=mode,
            top_k=top_k,
            ll_keywords=["entity H"],  # type: ignore[arg-type]
            hl_keywords=["spokes"],
            enable_rerank=False,
            scope=QueryScope(**{scope_field: ["p1", "doc1"]}),
        )
        await engine.query_data("the hub and its spokes", param)
        return ledger.per_store()

    small, large = await scoped(5, 5), await scoped(300, 60)
    assert small == large, (small, large)
    assert large.get("chunk_store", 0) <= BUDGET["chunk_store"] + SCOPED_EXTRA
