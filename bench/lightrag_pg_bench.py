"""Query latency on the same LightRAG 1.5.7 PostgreSQL deployment: LightRAG vs hexrag in place.

Builds a deployment of the parity benchmark's dataset (kept in the database under the
workspace ``bench_<size>`` and reused when ``--dsn`` names a persistent server) with LightRAG's
own PostgreSQL storage classes (``PGKVStorage``, ``PGVectorStorage``, ``PGTableGraphStorage``)
on a ``pgserver`` PostgreSQL 16 + pgvector (or ``--dsn``), then times, in one process and on one
event loop, LightRAG's ``aquery_data`` and hexrag's ``query_data`` over hexrag's LightRAG-layout
adapters (:mod:`hexrag.adapters.postgres.lightrag_layout`) for every mode, keywords supplied (no
LLM), median over the queries, sides alternating per query. It checks that both returned the
same data (WEIGHT exactly) and prints one table.

Usage::

    python bench/lightrag_pg_bench.py --size 10k
    python bench/lightrag_pg_bench.py --size 1k --queries 6

Not run in CI (minutes to write the deployment).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from parity_bench import SIZES, _spec  # noqa: E402

from hexrag.devtools.lightrag_data import (  # noqa: E402
    diff_query_data,
    generate_dataset,
    hexrag_query_data,
    keyword_queries,
    lightrag_query_data,
    parity_embedder,
    parity_settings,
)

MODES = ("local", "global", "hybrid", "mix", "naive")


async def _deployment_exists(dsn: str, workspace: str) -> bool:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        exists = await conn.fetchval("SELECT to_regclass('lightrag_doc_chunks') IS NOT NULL")
        if not exists:
            return False
        n = await conn.fetchval(
            "SELECT count(*) FROM lightrag_doc_chunks WHERE workspace = $1", workspace
        )
        return bool(n)
    finally:
        await conn.close()


async def run(dsn: str, size: str, n_queries: int) -> list[dict[str, Any]]:
    from hexrag.adapters.postgres import create_pool
    from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_stores
    from hexrag.bootstrap import compose_engine
    from hexrag.devtools.lightrag_pg import (
        MODEL_NAME,
        init_lightrag_pg,
        make_lightrag_pg,
        write_lightrag_pg,
    )

    embedder = parity_embedder()
    dataset = generate_dataset(_spec(size))
    workspace = f"bench_{size}"
    if not await _deployment_exists(dsn, workspace):
        t0 = time.perf_counter()
        print(f"[{size}] writing the deployment with LightRAG's PG classes ...", flush=True)
        await write_lightrag_pg(dataset, dsn, embedder, workspace=workspace)
        print(f"[{size}] written in {time.perf_counter() - t0:.0f} s", flush=True)
    queries = keyword_queries(dataset, n_queries)
    pool = await create_pool(dsn)
    stores = open_lightrag_pg_stores(
        pool, workspace=workspace, embedding_dim=embedder.dim, model_name=MODEL_NAME
    )
    rows: list[dict[str, Any]] = []
    try:
        for pick in ("VECTOR", "WEIGHT"):
            rag = make_lightrag_pg(dsn, embedder, workspace=workspace, kg_chunk_pick_method=pick)
            await init_lightrag_pg(rag, dsn)
            engine = compose_engine(stores, embedder=embedder, settings=parity_settings(pick))
            try:
                for mode in MODES:
                    lr_t: list[float] = []
                    hx_t: list[float] = []
                    same = 0
                    for i, q in enumerate(queries):
                        order = ("lr", "hx") if i % 2 == 0 else ("hx", "lr")
                        out: dict[str, Any] = {}
                        for side in order:
                            t0 = time.perf_counter()
                            if side == "lr":
                                out[side] = await lightrag_query_data(rag, mode, q)
                                lr_t.append(time.perf_counter() - t0)
                            else:
                                out[side] = await hexrag_query_data(engine, mode, q)
                                hx_t.append(time.perf_counter() - t0)
                        same += not diff_query_data(out["lr"], out["hx"], exact=pick == "WEIGHT")
                    rows.append({
                        "size": size, "pick": pick, "mode": mode,
                        "lightrag_ms": 1000 * statistics.median(lr_t),
                        "hexrag_ms": 1000 * statistics.median(hx_t),
                        "identical": f"{same}/{len(queries)}",
                    })
                    print(f"[{size}] {pick} {mode} done", flush=True)
            finally:
                await rag.finalize_storages()
    finally:
        await pool.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="10k", choices=sorted(SIZES))
    ap.add_argument("--queries", type=int, default=12)
    ap.add_argument("--dsn", default=None, help="PostgreSQL with pgvector (default: pgserver)")
    args = ap.parse_args()
    dsn = args.dsn
    if dsn is None:
        from tests.services.postgres import postgres_dsn

        dsn = postgres_dsn()
    rows = asyncio.run(run(dsn, args.size, args.queries))
    print()
    print("| size | pick | mode | LightRAG ms | hexrag ms | ratio | identical |")
    print("|---|---|---|---:|---:|---:|---|")
    for r in rows:
        ratio = r["lightrag_ms"] / r["hexrag_ms"]
        print(f"| {r['size']} | {r['pick']} | {r['mode']} | {r['lightrag_ms']:.1f} | "
              f"{r['hexrag_ms']:.1f} | {ratio:.1f}x | {r['identical']} |")


if __name__ == "__main__":
    main()
