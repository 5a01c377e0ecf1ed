"""Query latency on the same LightRAG 1.5.7 PostgreSQL deployment: LightRAG vs hexrag in place.

Builds a deployment of the parity benchmark's dataset (kept in the database under the
workspace ``bench_<size>`` and reused when ``--dsn`` names a persistent server) with LightRAG's
own PostgreSQL storage classes (``PGKVStorage``, ``PGVectorStorage``, ``PGTableGraphStorage``)
on a ``pgserver`` PostgreSQL 16 + pgvector (or ``--dsn``). hexrag is opened from **the
README's TOML as written** (``layout = "lightrag"``, no engine setting: hybrid and mix use the
default chunk-exact relation lookup), the embedder being the bench's deterministic one. In one
process and on one event loop it times LightRAG's ``aquery_data`` and hexrag's ``query_data``
for every mode, keywords supplied (no LLM), median over the queries, sides alternating per
query, and checks that both returned the same data (WEIGHT exactly, VECTOR chunks as sets).
After loading, ``gc.freeze()`` moves the heap (LightRAG's objects, the stacks) out of the
collections either side triggers, as ``bench/parity_bench.py`` does, and each timed call runs
as ``timeit`` runs one (``bench/quiet_timer.py``: a collection before, the collector off
while the clock runs), on both sides alike. The timed hexrag stack carries no instrumentation:
the per-stage table, the round trips and the floor come from a twin of it (the same TOML opened
again) that runs each query right after, untimed for the ratios.

Printed per pick: the side-by-side table (with ``--before``, also hexrag as it was before stage
3's head form: every candidate chunk read whole), hexrag's per-stage medians
(``bench/lightrag_pg_profile.py``: embed, vector search, graph expansion, chunk recovery, other
= truncation/context/Python) and round trips per store, and "the floor": the statements each
query sent, replayed back to back on one bare asyncpg connection, with hexrag's time as a
multiple of it. ``--explain`` prints EXPLAIN (ANALYZE, BUFFERS) times of every statement of the
first query per mode; ``--pyinstrument MODE`` prints a pyinstrument profile of hexrag's side
for that mode.

``--stored-degrees`` adds a side: hexrag with ``hexrag stored-degrees`` installed (for the run,
removed after), the README's side counting degrees as it does without them.

Usage::

    python bench/lightrag_pg_bench.py --size 10k --queries 30 --before
    python bench/lightrag_pg_bench.py --size 10k --stored-degrees
    python bench/lightrag_pg_bench.py --size 1k --queries 6 --picks WEIGHT --explain

Not run in CI (minutes to write the deployment).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from lightrag_pg_profile import Probe, explain, floor_seconds, summarise  # noqa: E402
from parity_bench import SIZES, _spec  # noqa: E402
from quiet_timer import timed_call  # noqa: E402
from stage_clock import FullChunkRead  # noqa: E402

from hexrag.devtools.lightrag_data import (  # noqa: E402
    diff_query_data,
    generate_dataset,
    hexrag_query_data,
    keyword_queries,
    lightrag_query_data,
    parity_embedder,
)

MODES = ("local", "global", "hybrid", "mix", "naive")

README_TOML = """\
vector_index = "{dsn}"
graph_store  = "{dsn}"
chunk_store  = "{dsn}"
layout       = "lightrag"
workspace    = "{workspace}"
lightrag_model_name = "{model}"
embedder     = "hashing"
"""


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


async def _open_readme_stack(dsn: str, workspace: str, pick: str, embedder: Any) -> Any:
    from hexrag.bootstrap import build_stack
    from hexrag.config import load_config
    from hexrag.devtools.lightrag_pg import MODEL_NAME

    path = Path(tempfile.mkdtemp(prefix="hexrag-bench-")) / "lightrag.toml"
    path.write_text(README_TOML.format(dsn=dsn, workspace=workspace, model=MODEL_NAME))
    os.environ["KG_CHUNK_PICK_METHOD"] = pick  # LightRAG's variable, as a deployment sets it
    return await build_stack(load_config(path), embedder=embedder)


def _inner(store: Any) -> Any:
    return getattr(store, "inner", store)


async def run(args: argparse.Namespace, dsn: str) -> list[dict[str, Any]]:
    import asyncpg

    from hexrag.bootstrap import compose_engine
    from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg, write_lightrag_pg

    size = args.size
    dataset = generate_dataset(_spec(size))
    workspace = f"bench_{size}"
    if not await _deployment_exists(dsn, workspace):
        t0 = time.perf_counter()
        print(f"[{size}] writing the deployment with LightRAG's PG classes ...", flush=True)
        await write_lightrag_pg(dataset, dsn, parity_embedder(), workspace=workspace,
                                defer_vector_index=True)
        print(f"[{size}] written in {time.perf_counter() - t0:.0f} s", flush=True)
    queries = keyword_queries(dataset, args.queries)
    bare = await asyncpg.connect(dsn)
    rows: list[dict[str, Any]] = []
    degrees = degrees_pool = None
    if args.stored_degrees:  # `hexrag stored-degrees`, removed again at the end
        from hexrag.adapters.postgres import create_pool
        from hexrag.adapters.postgres.lightrag_graph_store import LightRAGPgGraphStore

        degrees_pool = await create_pool(dsn, max_size=1)
        degrees = LightRAGPgGraphStore(degrees_pool, workspace=workspace)
        await degrees.install_stored_degrees()
    try:
        for pick in args.picks.split(","):
            lr_embedder, hx_embedder = parity_embedder(), parity_embedder()
            rag = make_lightrag_pg(dsn, lr_embedder, workspace=workspace, kg_chunk_pick_method=pick)
            await init_lightrag_pg(rag, dsn)
            app = await _open_readme_stack(dsn, workspace, pick, hx_embedder)
            engine = app.engine
            # the instrumented twin: the same TOML opened again, its stores wrapped by the
            # probe; it runs each query right after the timed side, untimed for the ratios
            twin = await _open_readme_stack(dsn, workspace, pick, parity_embedder())
            stored = None
            if degrees is not None:  # the README's side counts as it does without them
                for opened in (app, twin):
                    _inner(opened.stores.graph).use_stored_degrees = False
                stored = await _open_readme_stack(dsn, workspace, pick, parity_embedder())
            stores = {k: _inner(getattr(twin.stores, k))
                      for k in ("entities", "relationships", "chunks", "graph", "chunk_store")}
            probe = Probe(stores, twin.engine.embedder)
            before = None
            if args.before:
                before = compose_engine(
                    {**stores, "chunk_store": FullChunkRead(stores["chunk_store"])},
                    embedder=hx_embedder, settings=engine.settings,
                )
            gc.collect()
            gc.freeze()  # the loaded heap is left out of the collections either side triggers
            try:
                for mode in MODES:
                    rows.append(await _mode(args, pick, mode, queries, rag, engine, before,
                                            probe, twin.engine, bare,
                                            None if stored is None else stored.engine))
                    print(f"[{size}] {pick} {mode} done", flush=True)
            finally:
                await rag.finalize_storages()
                await app.aclose()
                await twin.aclose()
                if stored is not None:
                    await stored.aclose()
    finally:
        await bare.close()
        if degrees is not None and degrees_pool is not None:
            await degrees.remove_stored_degrees()
            await degrees_pool.close()
    return rows


async def _mode(args: argparse.Namespace, pick: str, mode: str, queries: list[Any], rag: Any,
                engine: Any, before: Any, probe: Probe, twin: Any, bare: Any,
                stored: Any = None) -> dict[str, Any]:
    lr_t: list[float] = []
    hx_t: list[float] = []
    old_t: list[float] = []
    sd_t: list[float] = []
    profiles = []
    floors: list[float] = []
    same = same_old = same_twin = same_sd = 0
    for i, q in enumerate(queries):
        order = ("lr", "hx", "old", "sd") if i % 2 == 0 else ("sd", "old", "hx", "lr")
        out: dict[str, Any] = {}
        for side in order:
            if (side == "old" and before is None) or (side == "sd" and stored is None):
                continue
            if side == "sd":
                out[side], seconds = await timed_call(
                    functools.partial(hexrag_query_data, stored, mode, q))
                sd_t.append(seconds)
            elif side == "lr":
                out[side], seconds = await timed_call(
                    functools.partial(lightrag_query_data, rag, mode, q))
                lr_t.append(seconds)
            elif side == "old":
                out[side], seconds = await timed_call(
                    functools.partial(hexrag_query_data, before, mode, q))
                old_t.append(seconds)
            else:
                out[side], seconds = await timed_call(
                    functools.partial(hexrag_query_data, engine, mode, q))
                hx_t.append(seconds)
        out["twin"], prof = await probe.measure(
            functools.partial(hexrag_query_data, twin, mode, q))
        profiles.append(prof)
        exact = pick == "WEIGHT"
        same_twin += not diff_query_data(out["twin"], out["hx"], exact=True)
        same += not diff_query_data(out["lr"], out["hx"], exact=exact)
        if before is not None:
            same_old += not diff_query_data(out["old"], out["hx"], exact=exact)
        if stored is not None:
            same_sd += not diff_query_data(out["lr"], out["sd"], exact=exact)
        floors.append(await floor_seconds(bare, profiles[-1].statements))
    if args.explain:
        print(f"\n-- EXPLAIN (ANALYZE, BUFFERS), {pick} {mode}, query 1:")
        for key, ms, first in await explain(bare, profiles[0].statements):
            print(f"   {key:13s} {ms:8.2f} ms  {first}")
    if args.pyinstrument == mode:
        from pyinstrument import Profiler

        profiler = Profiler(async_mode="enabled")
        with profiler:
            for q in queries:
                await hexrag_query_data(engine, mode, q)
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    return {
        "pick": pick, "mode": mode,
        "lightrag_ms": 1000 * statistics.median(lr_t),
        "hexrag_ms": 1000 * statistics.median(hx_t),
        "before_ms": 1000 * statistics.median(old_t) if old_t else None,
        "identical": f"{same}/{len(queries)}",
        "twin_identical": f"{same_twin}/{len(queries)}",
        "before_identical": f"{same_old}/{len(queries)}" if before is not None else None,
        "stored_ms": 1000 * statistics.median(sd_t) if sd_t else None,
        "stored_identical": f"{same_sd}/{len(queries)}" if stored is not None else None,
        "floor_ms": 1000 * statistics.median(floors),
        **summarise(profiles),
    }


def _print(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    load = os.getloadavg()
    print(f"\n{args.size}, {args.queries} queries, keywords given, medians in ms; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
          f"on {os.cpu_count()} cores")
    sd = args.stored_degrees
    print("\n| pick | mode | LightRAG | hexrag (README TOML) | ratio | identical |"
          + (" hexrag before (every chunk read) | ratio | same as before |" if args.before else "")
          + (" hexrag + stored degrees | ratio | identical |" if sd else ""))
    print("|---|---|---:|---:|---:|---|" + ("---:|---:|---|" if args.before else "")
          + ("---:|---:|---|" if sd else ""))
    for r in rows:
        line = (f"| {r['pick']} | {r['mode']} | {r['lightrag_ms']:.1f} | {r['hexrag_ms']:.1f} | "
                f"{r['lightrag_ms'] / r['hexrag_ms']:.1f}x | {r['identical']} |")
        if args.before:
            line += (f" {r['before_ms']:.1f} | {r['lightrag_ms'] / r['before_ms']:.1f}x | "
                     f"{r['before_identical']} |")
        if sd:
            line += (f" {r['stored_ms']:.1f} | {r['lightrag_ms'] / r['stored_ms']:.1f}x | "
                     f"{r['stored_identical']} |")
        print(line)
    print("\nhexrag per stage, from an instrumented twin of the timed stack that runs each query "
          "right after it (same data: " + ", ".join(
              f"{r['pick']} {r['mode']} {r['twin_identical']}" for r in rows) + "); the timed "
          "column above has no instrumentation. Median ms; stages overlap when branches run "
          "concurrently; "
          "round trips per store (median), the floor (the same statements back to back on a "
          "bare asyncpg connection):")
    print("\n| pick | mode | embed | search | graph | chunks | other | round trips | "
          "floor | x floor |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        s = r["stages"]
        trips = ", ".join(f"{k} {v:g}" for k, v in r["round_trips"].items())
        print(f"| {r['pick']} | {r['mode']} | {s['embed']:.1f} | {s['search']:.1f} | "
              f"{s['graph']:.1f} | {s['chunks']:.1f} | {s['other']:.1f} | "
              f"{r['total_trips']:g} ({trips}) | {r['floor_ms']:.1f} | "
              f"{r['hexrag_ms'] / r['floor_ms']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="10k", choices=sorted(SIZES))
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--picks", default="WEIGHT,VECTOR", help="comma-separated chunk picks")
    ap.add_argument("--dsn", default=None, help="PostgreSQL with pgvector (default: pgserver)")
    ap.add_argument("--before", action="store_true",
                    help="also time hexrag as it was before the head form of stage 3 (every "
                         "candidate chunk read whole)")
    ap.add_argument("--stored-degrees", action="store_true",
                    help="also time hexrag with `hexrag stored-degrees` installed (installed "
                         "for the run and removed after; the README's side still counts)")
    ap.add_argument("--explain", action="store_true",
                    help="EXPLAIN (ANALYZE, BUFFERS) every statement of the first query per mode")
    ap.add_argument("--pyinstrument", default=None, choices=MODES,
                    help="print a pyinstrument profile of hexrag's side for this mode")
    args = ap.parse_args()
    dsn = args.dsn
    if dsn is None:
        from tests.services.postgres import postgres_dsn

        dsn = postgres_dsn()
    rows = asyncio.run(run(args, dsn))
    _print(rows, args)


if __name__ == "__main__":
    main()
