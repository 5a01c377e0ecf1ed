"""Query latency on hexrag's own PostgreSQL layout vs LightRAG 1.5.7 on PostgreSQL.

One server, one process, one event loop:

1. A LightRAG deployment of the parity dataset (``bench_<size>``, the dataset of
   ``bench/lightrag_pg_bench.py``) written by LightRAG's own PostgreSQL classes
   (``PGKVStorage`` + ``PGVectorStorage`` + ``PGTableGraphStorage``), reused when present.
2. A copy of it in hexrag's own layout (tables ``hxl_<size>_*``, the layout ``hexrag migrate``
   writes), made with :func:`hexrag.transfer.migrate.migrate_stack` from hexrag's
   LightRAG-layout adapters, reused when complete.
3. Per mode, ``--queries`` keyword queries (keywords given, no LLM), WEIGHT chunk pick, the
   order of the sides alternating per query (each side and mode warmed by one untimed query):
   LightRAG's ``aquery_data`` on its deployment, and hexrag's ``query_data`` on its own
   layout, in these configurations:

   * ``hexrag own layout``: hexrag's default settings (the README's: chunk relation lookup in
     hybrid and mix) with the default search (HNSW, ``ef_search`` from ``top_k``): the timing
     column, with round trips, per-store-call times and the floor;
   * ``pair lookup``: LightRAG's semantics (pair relation lookup in every mode), HNSW;
     ``= LightRAG`` counts the queries whose data equals LightRAG's (lists in the same order),
     with HNSW and with exact search (LightRAG searches its own HNSW index, so the
     approximate lists of two different indexes may differ);
   * ``exact search``: default settings with exact vector search; ``= memory`` counts the
     queries equal to hexrag's memory stack holding the same records (default settings /
     pair lookup, both exact).

It prints, per mode: the medians (ms), the ratios, the agreement counts, the statements
(round trips) per query and their sequential depth (round trips on the critical path: the
local and global branches run concurrently), the median time per store method (per stage),
and **the floor**: the very statements hexrag sent for the query, replayed back to back on one
bare ``asyncpg`` connection (prepared, no hexrag code), and hexrag's time as a multiple of it.
The timed hexrag side runs on stores of its own with nothing of the bench's around them; the
statements, the per-store times and the per-stage table come from an instrumented twin of the
same engine that runs each query again right after, untimed for the ratios.

Usage::

    python bench/pg_layout_bench.py --size 10k
    python bench/pg_layout_bench.py --size 100k --queries 30 --dsn postgresql://...
    python bench/pg_layout_bench.py --size 10k --profile /tmp/pg_layout.txt   # pyinstrument

Not run in CI (minutes to write the deployment). The machine's load average is printed: the
ratios of one run (both sides interleaved) are what count on a shared machine.
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
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from lightrag_pg_bench import _deployment_exists  # noqa: E402
from parity_bench import SIZES, _spec  # noqa: E402
from quiet_timer import timed_call  # noqa: E402
from stage_clock import FullChunkRead, StageClock, stage_table  # noqa: E402

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
STORE_NAMES = ("entities", "relationships", "chunks", "graph", "chunk_store")


# --------------------------------------------------------------------------------------
# Statement recording: round trips, per-store timings, the floor
# --------------------------------------------------------------------------------------


class RecordingPool:
    """Delegates to an asyncpg pool; records each statement (sql, args) and the depth of the
    chain of statements (how many were sent while another of the same query was in flight
    is not counted twice: ``depth`` counts statements started after all earlier ones ended)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.on = False
        self.sent: list[tuple[str, str, tuple[Any, ...]]] = []
        self._in_flight = 0
        self.depth = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def reset(self) -> None:
        self.sent = []
        self.depth = 0
        self._in_flight = 0

    async def _call(self, method: str, sql: str, args: tuple[Any, ...], kwargs: Any) -> Any:
        if self.on:
            self.sent.append((method, sql, args))
            if self._in_flight == 0:
                self.depth += 1
        self._in_flight += 1
        try:
            return await getattr(self._pool, method)(sql, *args, **kwargs)
        finally:
            self._in_flight -= 1

    async def fetch(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        return await self._call("fetch", sql, args, kwargs)

    async def fetchval(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        return await self._call("fetchval", sql, args, kwargs)

    async def fetchrow(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        return await self._call("fetchrow", sql, args, kwargs)

    async def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        return await self._call("execute", sql, args, kwargs)


class TimedStore:
    """Wraps a store: times each awaited method call into ``sink[(store, method)]``."""

    def __init__(self, name: str, store: Any, sink: dict[tuple[str, str], list[float]]) -> None:
        self._name = name
        self._store = store
        self._sink = sink

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._store, attr)
        if not callable(value) or not asyncio.iscoroutinefunction(value):
            return value

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await value(*args, **kwargs)
            finally:
                self._sink[(self._name, attr)].append(time.perf_counter() - t0)

        return timed


async def replay(conn: Any, sent: list[tuple[str, str, tuple[Any, ...]]]) -> float:
    """The statements back to back on one bare connection (prepared: asyncpg's statement
    cache), seconds."""
    t0 = time.perf_counter()
    for method, sql, args in sent:
        await getattr(conn, method)(sql, *args)
    return time.perf_counter() - t0


# --------------------------------------------------------------------------------------
# Deployments
# --------------------------------------------------------------------------------------


def hexrag_pg_stores(pool: Any, *, prefix: str, dim: int, exact: bool) -> dict[str, Any]:
    """hexrag's own PostgreSQL layout under ``prefix`` (what ``hexrag migrate`` writes)."""
    from hexrag.adapters.postgres import PgCache, PgChunkStore, PgGraphStore, PgVectorIndex

    stores: dict[str, Any] = {
        ns: PgVectorIndex(pool, namespace=ns, dim=dim, table_prefix=prefix,  # type: ignore[arg-type]
                          exact_search=exact)
        for ns in ("entities", "relationships", "chunks")
    }
    stores["graph"] = PgGraphStore(pool, table_prefix=prefix)
    stores["chunk_store"] = PgChunkStore(pool, table_prefix=prefix)
    stores["cache"] = PgCache(pool, table_prefix=prefix)
    return stores


def _stack(stores: dict[str, Any], model: str) -> Any:
    from hexrag.transfer import StackStores

    return StackStores(
        entities=stores["entities"], relationships=stores["relationships"],
        chunks=stores["chunks"], graph=stores["graph"], chunk_store=stores["chunk_store"],
        embedding_model=model,
    )


async def ensure_copy(pool: Any, *, workspace: str, prefix: str, dim: int) -> None:
    """Copy the LightRAG deployment into hexrag's layout unless a complete copy exists."""
    from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_stores
    from hexrag.devtools.lightrag_pg import MODEL_NAME
    from hexrag.transfer.migrate import migrate_stack

    source = _stack(open_lightrag_pg_stores(
        pool, workspace=workspace, embedding_dim=dim, model_name=MODEL_NAME), MODEL_NAME)
    target = _stack(hexrag_pg_stores(pool, prefix=prefix, dim=dim, exact=True), MODEL_NAME)
    want = await source.counts()
    have = await target.counts()
    if all(have.get(k) == v for k, v in want.items() if v is not None):
        return
    t0 = time.perf_counter()
    print(f"copying {workspace} into hexrag's layout ({prefix}_*) ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        await migrate_stack(source, target, state_path=Path(tmp) / "state.json", overwrite=True)
    await pool.execute("VACUUM ANALYZE")  # what autovacuum does soon after a bulk load
    print(f"copied in {time.perf_counter() - t0:.0f} s", flush=True)


async def memory_copy(source: dict[str, Any], model: str, dim: int) -> dict[str, Any]:
    """hexrag's memory stack holding the records of ``source`` (the reference)."""
    from hexrag.adapters.memory import (
        MemoryChunkStore,
        MemoryGraphStore,
        MemoryVectorIndex,
    )
    from hexrag.transfer.migrate import migrate_stack

    mem: dict[str, Any] = {
        ns: MemoryVectorIndex(ns, dim) for ns in ("entities", "relationships", "chunks")
    }
    mem["graph"] = MemoryGraphStore()
    mem["chunk_store"] = MemoryChunkStore()
    with tempfile.TemporaryDirectory() as tmp:
        await migrate_stack(_stack(source, model), _stack(mem, model),
                            state_path=Path(tmp) / "state.json", overwrite=True)
    return mem


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


def _med(values: list[float]) -> float:
    return 1000 * statistics.median(values) if values else float("nan")


async def run(args: argparse.Namespace, dsn: str) -> list[dict[str, Any]]:
    import asyncpg

    from hexrag.adapters.postgres import create_pool
    from hexrag.bootstrap import compose_engine
    from hexrag.core.model import EngineSettings
    from hexrag.devtools.lightrag_pg import (
        MODEL_NAME,
        init_lightrag_pg,
        make_lightrag_pg,
        write_lightrag_pg,
    )

    size = args.size
    embedder = parity_embedder()
    dataset = generate_dataset(_spec(size))
    workspace = f"bench_{size}"
    prefix = f"hxl_{size}"
    if not await _deployment_exists(dsn, workspace):
        t0 = time.perf_counter()
        print(f"[{size}] writing the deployment with LightRAG's PG classes ...", flush=True)
        await write_lightrag_pg(dataset, dsn, embedder, workspace=workspace,
                                defer_vector_index=True)
        print(f"[{size}] written in {time.perf_counter() - t0:.0f} s", flush=True)
    queries = keyword_queries(dataset, args.queries)
    raw_pool = await create_pool(dsn, max_size=8)
    await ensure_copy(raw_pool, workspace=workspace, prefix=prefix, dim=embedder.dim)
    pool = RecordingPool(raw_pool)
    sink: dict[tuple[str, str], list[float]] = defaultdict(list)
    # the timed side runs on stores of its own over the bare pool: no wrapper of the bench's
    # between hexrag and asyncpg; the instrumented twin ("hx_probe") runs the same query
    # right after it, untimed, for the statements, the floor and the per-stage table
    plain = hexrag_pg_stores(raw_pool, prefix=prefix, dim=embedder.dim, exact=False)
    hnsw = hexrag_pg_stores(pool, prefix=prefix, dim=embedder.dim, exact=False)
    exact = hexrag_pg_stores(pool, prefix=prefix, dim=embedder.dim, exact=True)
    clock = StageClock()
    timed = clock.wrap_stores(
        {k: TimedStore(k, v, sink) for k, v in hnsw.items() if k in STORE_NAMES})
    before = {**plain, "chunk_store": FullChunkRead(plain["chunk_store"])}
    mem = None if args.skip_memory else await memory_copy(exact, MODEL_NAME, embedder.dim)
    floor_conn = await asyncpg.connect(dsn)
    pick = "WEIGHT"
    parity = parity_settings(pick)
    default = EngineSettings(kg_chunk_pick_method="WEIGHT", related_chunk_number=5,
                             cosine_threshold=0.2)

    def engine(stores: Any, settings: Any) -> Any:
        return compose_engine(stores, embedder=embedder, settings=settings, store_cache=False)

    engines = {
        "hx": engine(plain, default),          # the README's settings, HNSW: the timing
        "hx_before": engine(before, default),  # the same, every candidate chunk read whole
        "hx_pair": engine(hnsw, parity),       # LightRAG's pair lookup: vs LightRAG
        "hx_exact": engine(exact, default),    # exact search: vs the memory stack
    }
    memory = {} if mem is None else {
        "hx_exact": engine(mem, default), "hx_pair_exact": engine(mem, parity)}
    engines["hx_pair_exact"] = engine(exact, parity)
    probe_engine = engine(timed, default)  # the "hx" query again, instrumented, untimed
    rag = make_lightrag_pg(dsn, embedder, workspace=workspace, kg_chunk_pick_method=pick)
    await init_lightrag_pg(rag, dsn)
    for q in queries[:1]:  # warm-up: statement caches, the tables opened (and converted)
        for mode in MODES:
            await lightrag_query_data(rag, mode, q)
            for eng in (*engines.values(), probe_engine, *memory.values()):
                await hexrag_query_data(eng, mode, q)
    gc.collect()
    gc.freeze()  # the loaded heap is left out of the collections either side triggers
    rows: list[dict[str, Any]] = []
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0005, async_mode="enabled")
    try:
        for mode in MODES:
            times: dict[str, list[float]] = defaultdict(list)
            same: dict[str, int] = defaultdict(int)
            stmts: list[int] = []
            depth: list[int] = []
            floor: list[float] = []
            sink.clear()
            clock.profiles.clear()
            for i, q in enumerate(queries):
                sides = ["lr", *engines]
                if i % 2:
                    sides.reverse()
                out: dict[str, Any] = {}
                for side in sides:
                    main_side = side == "hx"
                    if profiler is not None and main_side:
                        profiler.start()
                    if side == "lr":
                        call = functools.partial(lightrag_query_data, rag, mode, q)
                    else:
                        call = functools.partial(hexrag_query_data, engines[side], mode, q)
                    out[side], seconds = await timed_call(call)
                    times[side].append(seconds)
                    if profiler is not None and main_side:
                        profiler.stop()
                pool.reset()
                pool.on = True
                out["hx_probe"] = await clock.measure(
                    functools.partial(hexrag_query_data, probe_engine, mode, q))
                pool.on = False
                sent = list(pool.sent)
                stmts.append(len(sent))
                depth.append(pool.depth)
                await replay(floor_conn, sent)  # warm the statement cache
                floor.append(await replay(floor_conn, sent))
                same["probe"] += not diff_query_data(out["hx_probe"], out["hx"], exact=True)
                same["before"] += not diff_query_data(out["hx_before"], out["hx"], exact=True)
                same["pair_lr"] += not diff_query_data(out["lr"], out["hx_pair"], exact=True)
                same["pair_exact_lr"] += not diff_query_data(
                    out["lr"], out["hx_pair_exact"], exact=True)
                for side, ref_engine in memory.items():
                    ref = await hexrag_query_data(ref_engine, mode, q)
                    same[side] += not diff_query_data(ref, out[side], exact=True)
            per_method = {f"{s}.{m}": _med(v) for (s, m), v in sorted(sink.items())}
            n = len(queries)
            rows.append({
                "size": size, "mode": mode,
                **{f"{side}_ms": _med(v) for side, v in times.items()},
                **{f"same_{k}": f"{v}/{n}" for k, v in same.items()},
                "statements": statistics.median(stmts), "depth": statistics.median(depth),
                "floor_ms": _med(floor), "per_method": per_method,
                "stages": stage_table(clock.profiles) if clock.profiles else {},
            })
            print(f"[{size}] {mode} done", flush=True)
    finally:
        await rag.finalize_storages()
        await floor_conn.close()
        await raw_pool.close()
    if profiler is not None:
        Path(args.profile).write_text(profiler.output_text(unicode=False, color=False))
    return rows


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Print the tables."""
    load = os.getloadavg()
    print()
    print(f"pick=WEIGHT, keywords given, {args.queries} queries, medians in ms; "
          f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print()
    print("| size | mode | LightRAG on PG | hexrag own layout | ratio | statements | depth "
          "| floor | x floor | pair lookup | ratio | = LightRAG (HNSW / exact) "
          "| exact search | = memory (default / pair) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for r in rows:
        lr = r["lr_ms"]
        print(f"| {r['size']} | {r['mode']} | {lr:.1f} | {r['hx_ms']:.1f} | "
              f"{lr / r['hx_ms']:.1f}x | {r['statements']:.0f} | {r['depth']:.0f} | "
              f"{r['floor_ms']:.2f} | {r['hx_ms'] / r['floor_ms']:.1f}x | "
              f"{r['hx_pair_ms']:.1f} | {lr / r['hx_pair_ms']:.1f}x | "
              f"{r['same_pair_lr']} / {r['same_pair_exact_lr']} | {r['hx_exact_ms']:.1f} | "
              f"{r.get('same_hx_exact', '-')} / {r.get('same_hx_pair_exact', '-')} |")
    print()
    print("hexrag before the head form (every candidate chunk read whole), same run:")
    print()
    print("| size | mode | LightRAG on PG | hexrag before | ratio | hexrag now | ratio "
          "| same data |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        lr = r["lr_ms"]
        print(f"| {r['size']} | {r['mode']} | {lr:.1f} | {r['hx_before_ms']:.1f} | "
              f"{lr / r['hx_before_ms']:.1f}x | {r['hx_ms']:.1f} | {lr / r['hx_ms']:.1f}x | "
              f"{r['same_before']} |")
    print()
    print("Per stage, hexrag own layout, from the instrumented twin of each timed query (its "
          "wall includes the instrumentation; the timing column above does not; same data as "
          "the timed side: " + ", ".join(f"{r['mode']} {r['same_probe']}" for r in rows)
          + "). Median ms; sql:* = store calls of that kind, "
          "overlapping when the local and global branches run concurrently; py:* = the "
          "stage's time outside store calls; py:rest = outside every stage):")
    print()
    keys = sorted({k for r in rows for k in r["stages"]}, key=lambda k: (k != "wall", k))
    if keys:
        print("| mode | " + " | ".join(keys) + " |")
        print("|---|" + "---:|" * len(keys))
        for r in rows:
            print(f"| {r['mode']} | "
                  + " | ".join(f"{r['stages'].get(k, 0.0):.2f}" for k in keys) + " |")
    print()
    print("Median ms per store call (hexrag own layout, HNSW, README settings):")
    for r in rows:
        calls = ", ".join(f"{k} {v:.2f}" for k, v in r["per_method"].items())
        print(f"- {r['mode']}: {calls}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="10k", choices=sorted(SIZES))
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--dsn", default=None, help="PostgreSQL with pgvector (default: pgserver)")
    ap.add_argument("--profile", default=None, help="write a pyinstrument profile here")
    ap.add_argument("--skip-memory", action="store_true",
                    help="no memory-stack reference (its copy takes minutes at 100k)")
    args = ap.parse_args()
    dsn = args.dsn
    if dsn is None:
        from tests.services.postgres import postgres_dsn

        dsn = postgres_dsn()
    rows = asyncio.run(run(args, dsn))
    report(rows, args)


if __name__ == "__main__":
    main()
