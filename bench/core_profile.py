"""Profile hexrag's context build on a synthetic in-memory graph (no LightRAG, no servers).

    python bench/core_profile.py --entities 100000 [--profile]

Prints the median latency per mode and pick method; with ``--profile`` runs pyinstrument on
hybrid and prints the call tree.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence

import numpy as np

from hexrag.adapters.memory import MemoryChunkStore, MemoryGraphStore, MemoryVectorIndex
from hexrag.bootstrap import compose_engine
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, EngineSettings, Entity, QueryParam, Relation, VectorRecord
from hexrag.core.query.engine import QueryEngine

DIM = 384


class RandomEmbedder:
    """Deterministic pseudo-random unit vectors per text (a real Embedder, no model)."""

    dim = DIM
    model_name = "random"

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), DIM), np.float32)
        for i, t in enumerate(texts):
            rng = np.random.default_rng(abs(hash(t)) % (2**32))
            v = rng.normal(size=DIM).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out


async def build(n: int) -> QueryEngine:
    rng = np.random.default_rng(0)
    n_chunks = max(1000, n // 2)
    chunks = [
        Chunk(
            id=f"chunk-{i}",
            content=f"chunk {i} " + "lorem ipsum dolor " * 20,
            file_path=f"doc{i % 500}.md",
            full_doc_id=f"doc{i % 500}",
        )
        for i in range(n_chunks)
    ]
    zipf = rng.zipf(1.6, size=2 * n) % n
    others = rng.integers(0, n, size=2 * n)
    names = [f"Entity {i}" for i in range(n)]
    ents = [
        Entity(
            name=names[i],
            entity_type="thing",
            description=f"Entity {i} is a thing " * 3,
            source_id="<SEP>".join(f"chunk-{j}" for j in rng.integers(0, n_chunks, 3)),
            file_path="x.md",
            created_at=1,
        )
        for i in range(n)
    ]
    rels = []
    seen = set()
    for a, b in zip(zipf, others, strict=True):
        if a == b:
            continue
        p = (min(names[a], names[b]), max(names[a], names[b]))
        if p in seen:
            continue
        seen.add(p)
        rels.append(
            Relation(
                id=relation_id(*p),
                src_id=p[0],
                tgt_id=p[1],
                description=f"{p[0]} relates to {p[1]}",
                keywords="k",
                weight=1.0,
                source_id="<SEP>".join(f"chunk-{j}" for j in rng.integers(0, n_chunks, 2)),
            )
        )
    graph = MemoryGraphStore()
    await graph.upsert_nodes(ents)
    await graph.upsert_edges(rels)

    def mat(k: int) -> np.ndarray:
        m = rng.normal(size=(k, DIM)).astype(np.float32)
        return m

    ev = MemoryVectorIndex.from_arrays(
        "entities",
        mat(n),
        [
            VectorRecord(
                id=entity_id(e.name),
                entity_name=e.name,
                source_id=e.source_id,
                file_path=e.file_path,
                created_at=1,
            )
            for e in ents
        ],
    )
    rv = MemoryVectorIndex.from_arrays(
        "relationships",
        mat(len(rels)),
        [
            VectorRecord(
                id=r.id, src_id=r.src_id, tgt_id=r.tgt_id, source_id=r.source_id, created_at=1
            )
            for r in rels
        ],
    )
    cv = MemoryVectorIndex.from_arrays(
        "chunks",
        mat(n_chunks),
        [
            VectorRecord(
                id=c.id, content=c.content, file_path=c.file_path, full_doc_id=c.full_doc_id
            )
            for c in chunks
        ],
    )
    stores = {
        "entities": ev,
        "relationships": rv,
        "chunks": cv,
        "graph": graph,
        "chunk_store": MemoryChunkStore(chunks),
    }
    return compose_engine(stores, embedder=RandomEmbedder())


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    engine = await build(args.entities)
    print(f"built {args.entities} entities in {time.perf_counter() - t0:.1f}s")
    queries = [(f"question {i}", [f"low {i}"], [f"high {i}"]) for i in range(args.repeat)]
    print("| mode | method | median ms |\n|---|---|---|")
    for method in ("VECTOR", "WEIGHT"):
        engine.settings = EngineSettings(kg_chunk_pick_method=method)
        for mode in ("local", "global", "hybrid", "mix", "naive"):
            times = []
            for q, ll, hl in queries:
                p = QueryParam(mode=mode, ll_keywords=ll, hl_keywords=hl, enable_rerank=False)
                t = time.perf_counter()
                await engine.query_data(q, p)
                times.append(1000 * (time.perf_counter() - t))
            print(f"| {mode} | {method} | {statistics.median(times):.1f} |")
    if args.profile:
        from pyinstrument import Profiler

        engine.settings = EngineSettings(kg_chunk_pick_method="VECTOR")
        prof = Profiler(interval=0.0005)
        prof.start()
        for q, ll, hl in queries:
            await engine.query_data(
                q, QueryParam(mode="hybrid", ll_keywords=ll, hl_keywords=hl, enable_rerank=False)
            )
        prof.stop()
        print(prof.output_text(unicode=False, color=False, show_all=False))


if __name__ == "__main__":
    asyncio.run(main())
