"""Query latency per storage stack: the memory stack next to PostgreSQL, Milvus and Redis.

For each size (10k and 100k entities, twice as many relations, half as many chunks) the
script builds the seeded dataset of :func:`tests.integration.golden.build_dataset` once and
caches it in ``bench/data/`` (a pickle; delete it to rebuild). Then, per size:

* starts throwaway servers the way the tests do - PostgreSQL 16 + pgvector (``pgserver``, or
  ``HEXRAG_POSTGRES_DSN``), ``redis-server`` (or ``HEXRAG_REDIS_URL``), Milvus Lite in a
  temporary file (or ``HEXRAG_MILVUS_URI``), Neo4j only when ``NEO4J_URI`` is set;
* loads every store through the adapters' batch upserts (one call per batch of
  ``--batch`` records) and reports the load times;
* for every stack and mode, times ``QueryEngine.query_data`` (the context build: keywords
  supplied, no LLM, no rerank, chunk pick ``VECTOR``) over ``--queries`` keyword queries after
  one warm-up pass, ``--repeat`` timed passes, and reports the median;
* counts the calls each query makes per store (:class:`hexrag.adapters.instrumented.Counting`)
  and how many queries returned exactly the memory stack's result.

Everything is printed as one markdown table at the end, with the machine facts.

Usage::

    python bench/backends_bench.py                      # 10k and 100k
    python bench/backends_bench.py --sizes 10k --queries 10 --repeat 2
    python bench/backends_bench.py --sizes 10k --scoped  # scoped queries too

Not run in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pickle
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hexrag.adapters.instrumented import Counting, RoundTrips  # noqa: E402
from hexrag.adapters.memory import (  # noqa: E402
    HashingEmbedder,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.bootstrap import compose_engine  # noqa: E402
from hexrag.core.model import EngineSettings, QueryParam  # noqa: E402
from hexrag.core.query.engine import QueryEngine  # noqa: E402
from tests.integration.golden import (  # noqa: E402
    GENERATOR_VERSION,
    MODES,
    NAMESPACES,
    THRESHOLD,
    GoldenDataset,
    GoldenQuery,
    build_dataset,
    keyword_queries,
    load_chunks,
    load_graph,
    load_vectors,
)

DATA_DIR = REPO / "bench" / "data"
SIZES = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
STORE_ORDER = ("entities", "relationships", "chunks", "graph", "chunk_store", "embedder")
STORE_ABBREV = {
    "entities": "E",
    "relationships": "R",
    "chunks": "C",
    "graph": "G",
    "chunk_store": "S",
    "embedder": "M",
}


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


def dataset_for(n_entities: int, seed: int) -> GoldenDataset:
    """The dataset of that size, from the cache in ``bench/data/`` or built and cached."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / f"backends_e{n_entities}_s{seed}_v{GENERATOR_VERSION}.pkl"
    if path.exists():
        started = time.perf_counter()
        with path.open("rb") as fh:
            ds = pickle.load(fh)
        log(f"  dataset {path.name}: loaded from cache in {time.perf_counter() - started:.1f}s")
        return ds  # type: ignore[no-any-return]
    started = time.perf_counter()
    ds = build_dataset(n_entities, seed=seed)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        pickle.dump(ds, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)
    log(f"  dataset {path.name}: built in {time.perf_counter() - started:.1f}s {ds.stats()}")
    return ds


def log(message: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------


@dataclass
class Servers:
    """Throwaway backends for one run (or the ones the environment points at)."""

    pg_dsn: str | None = None
    redis_url: str | None = None
    milvus_uri: str | None = None
    neo4j_uri: str | None = os.environ.get("NEO4J_URI")
    _stop: list[Callable[[], None]] = field(default_factory=list)

    def start(self) -> None:
        self.pg_dsn = os.environ.get("HEXRAG_POSTGRES_DSN")
        if not self.pg_dsn:
            from tests.services.postgres import PgTestServer

            pg = PgTestServer()
            try:
                pg.start()
            except Exception as exc:
                pg.stop()
                log(f"  PostgreSQL unavailable ({exc!r}): PostgreSQL stacks skipped")
            else:
                self._stop.append(pg.stop)
                self.pg_dsn = pg.dsn
        self.redis_url = os.environ.get("HEXRAG_REDIS_URL")
        if not self.redis_url:
            from tests.services.redis import RedisServer, find_redis_binary

            binary = find_redis_binary()
            if binary is None:
                log("  no redis-server binary: Redis stacks skipped")
            else:
                server = RedisServer(binary)
                server.start()
                self._stop.append(server.stop)
                self.redis_url = server.url
        self.milvus_uri = os.environ.get("HEXRAG_MILVUS_URI")
        if not self.milvus_uri:
            try:
                import milvus_lite  # noqa: F401
            except ImportError:
                log("  milvus-lite not installed: Milvus stacks skipped")
            else:
                tmpdir = tempfile.mkdtemp(prefix="hexrag-bench-milvus-")
                self.milvus_uri = os.path.join(tmpdir, "bench.db")

                def stop_lite(path: str = self.milvus_uri, d: str = tmpdir) -> None:
                    try:
                        from milvus_lite.server_manager import server_manager_instance

                        server_manager_instance.release_server(path)
                    except Exception:
                        pass
                    shutil.rmtree(d, ignore_errors=True)

                self._stop.append(stop_lite)

    def stop(self) -> None:
        for stop in reversed(self._stop):
            try:
                stop()
            except Exception as exc:
                log(f"  cleanup: {exc!r}")
        self._stop.clear()


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


@dataclass
class Loaded:
    """Loaded stores by kind, load seconds, and how to release them."""

    vectors: dict[str, dict[str, Any]] = field(default_factory=dict)
    graphs: dict[str, Any] = field(default_factory=dict)
    chunk_stores: dict[str, Any] = field(default_factory=dict)
    load_seconds: dict[str, float] = field(default_factory=dict)
    cleanups: list[Callable[[], Awaitable[None]]] = field(default_factory=list)


async def _timed_load(loaded: Loaded, name: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    started = time.perf_counter()
    result = await fn()
    loaded.load_seconds[name] = time.perf_counter() - started
    log(f"  loaded {name} in {loaded.load_seconds[name]:.1f}s")
    return result


async def load_all(ds: GoldenDataset, servers: Servers, args: argparse.Namespace) -> Loaded:
    """Every backend's stores for ``ds``, each in a fresh namespace."""
    batch = args.batch
    loaded = Loaded()
    tag = uuid.uuid4().hex[:8]

    async def memory_vectors() -> dict[str, Any]:
        out = {}
        for ns in NAMESPACES:
            records, matrix = ds.records(ns)
            out[ns] = MemoryVectorIndex.from_arrays(
                ns, matrix.copy(), list(records), cosine_threshold=THRESHOLD
            )
        return out

    async def memory_graph() -> MemoryGraphStore:
        graph = MemoryGraphStore()
        await load_graph(graph, ds, batch=batch)
        return graph

    loaded.vectors["memory"] = await _timed_load(loaded, "memory vectors", memory_vectors)
    loaded.graphs["memory"] = await _timed_load(loaded, "memory graph", memory_graph)
    loaded.chunk_stores["memory"] = MemoryChunkStore(ds.chunks)

    if servers.pg_dsn:
        from hexrag.adapters.postgres import (
            PgChunkStore,
            PgGraphStore,
            PgVectorIndex,
            create_pool,
        )

        pool = await create_pool(servers.pg_dsn, min_size=2, max_size=8)
        schema = f"bench_{tag}"
        await pool.execute(f'CREATE SCHEMA "{schema}"')

        async def drop_pg() -> None:
            await pool.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            await pool.close()

        loaded.cleanups.append(drop_pg)

        async def pg_vectors() -> dict[str, Any]:
            out = {}
            for ns in NAMESPACES:
                index = PgVectorIndex(
                    pool,
                    namespace=ns,  # type: ignore[arg-type]
                    dim=ds.dim,
                    cosine_threshold=THRESHOLD,
                    schema=schema,
                    exact_search=args.exact,
                )
                await load_vectors(index, ds, ns, batch=batch)
                out[ns] = index
            await pool.execute(
                f'ANALYZE "{schema}".hexrag_vdb_entities, '
                f'"{schema}".hexrag_vdb_relationships, "{schema}".hexrag_vdb_chunks'
            )
            return out

        async def pg_graph() -> Any:
            graph = PgGraphStore(pool, schema=schema)
            await load_graph(graph, ds, batch=batch)
            await pool.execute(f'ANALYZE "{schema}".hexrag_nodes, "{schema}".hexrag_edges')
            return graph

        async def pg_chunks() -> Any:
            store = PgChunkStore(pool, schema=schema)
            await load_chunks(store, ds, batch=batch)
            return store

        loaded.vectors["postgres"] = await _timed_load(loaded, "postgres vectors", pg_vectors)
        loaded.graphs["postgres"] = await _timed_load(loaded, "postgres graph", pg_graph)
        loaded.chunk_stores["postgres"] = await _timed_load(loaded, "postgres chunks", pg_chunks)

    if servers.milvus_uri:
        from pymilvus import MilvusClient

        from hexrag.adapters.milvus import MilvusVectorIndex

        client = MilvusClient(uri=servers.milvus_uri, timeout=120)

        async def milvus_vectors() -> dict[str, Any]:
            out = {}
            for ns in NAMESPACES:
                index = MilvusVectorIndex(
                    client,
                    collection=f"bench_{ns}_{tag}",
                    namespace=ns,  # type: ignore[arg-type]
                    dim=ds.dim,
                    cosine_threshold=THRESHOLD,
                    index_type=args.milvus_index,
                    timeout=600,
                )
                await load_vectors(index, ds, ns, batch=batch)
                await asyncio.to_thread(client.flush, index.collection)
                out[ns] = index
            return out

        async def drop_milvus() -> None:
            for index in loaded.vectors.get("milvus", {}).values():
                client.drop_collection(index.collection)
            client.close()

        loaded.cleanups.append(drop_milvus)
        loaded.vectors["milvus"] = await _timed_load(loaded, "milvus vectors", milvus_vectors)

    if servers.redis_url:
        from redis.asyncio import Redis

        from hexrag.adapters.redis import RedisChunkStore

        rclient = Redis.from_url(servers.redis_url)
        workspace = f"bench{tag}"

        async def redis_chunks() -> Any:
            store = RedisChunkStore(rclient, workspace=workspace)
            await load_chunks(store, ds, batch=batch)
            return store

        async def drop_redis() -> None:
            keys = [k async for k in rclient.scan_iter(match=f"{workspace}:*", count=5000)]
            for start in range(0, len(keys), 5000):
                await rclient.delete(*keys[start : start + 5000])
            await rclient.aclose()

        loaded.cleanups.append(drop_redis)
        loaded.chunk_stores["redis"] = await _timed_load(loaded, "redis chunks", redis_chunks)

    if servers.neo4j_uri:
        from hexrag.adapters.neo4j import Neo4jGraphStore

        neo = Neo4jGraphStore.from_url(workspace=f"bench_{tag}")

        async def neo4j_graph() -> Any:
            await load_graph(neo, ds, batch=batch)
            return neo

        async def drop_neo4j() -> None:
            await neo.drop()
            await neo.aclose()

        loaded.cleanups.append(drop_neo4j)
        loaded.graphs["neo4j"] = await _timed_load(loaded, "neo4j graph", neo4j_graph)
    return loaded


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------

STACKS: tuple[tuple[str, str, str], ...] = (
    ("memory", "memory", "memory"),
    ("postgres", "postgres", "postgres"),
    ("milvus", "memory", "redis"),
    ("postgres", "memory", "redis"),
    ("milvus", "postgres", "postgres"),
    ("milvus", "neo4j", "redis"),
    ("postgres", "neo4j", "postgres"),
)


@dataclass
class Row:
    """One (stack, mode, scoped) measurement."""

    median_ms: float
    calls: dict[str, int]
    calls_vary: bool
    same_as_memory: int
    n_queries: int


@dataclass
class _Runner:
    """One stack's engine, with its call ledger."""

    name: str
    engine: QueryEngine
    ledger: RoundTrips
    results: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, int]] = field(default_factory=list)
    timings: list[float] = field(default_factory=list)


def _runner(name: str, stores: dict[str, Any], embedder: HashingEmbedder) -> _Runner:
    ledger = RoundTrips()
    counted = {k: Counting(v, k, ledger) for k, v in stores.items()}
    engine = compose_engine(
        counted,
        embedder=Counting(embedder, "embedder", ledger),  # type: ignore[arg-type]
        settings=EngineSettings(kg_chunk_pick_method="VECTOR"),
        store_cache=False,
    )
    return _Runner(name, engine, ledger)


async def measure_mode(
    stacks: dict[str, dict[str, Any]],
    embedder: HashingEmbedder,
    queries: list[GoldenQuery],
    mode: str,
    scoped: bool,
    repeat: int,
) -> dict[str, Row]:
    """Median ``query_data`` latency of ``queries`` in ``mode`` on every stack.

    A first pass (untimed) records each query's result and calls; then ``repeat`` timed passes,
    each running every stack in turn, so background load (Milvus Lite's index builds, the
    other servers) spreads over all stacks alike. The first stack is the reference.
    """
    runners = [_runner(name, stores, embedder) for name, stores in stacks.items()]
    params = [
        QueryParam(mode=mode, **q.param_fields(scoped=scoped))  # type: ignore[arg-type]
        for q in queries
    ]
    for r in runners:
        for q, p in zip(queries, params, strict=True):
            r.ledger.clear()
            r.results.append(await r.engine.query_data(q.query, p))
            r.calls.append(r.ledger.per_store())
    for _ in range(repeat):
        for r in runners:
            for q, p in zip(queries, params, strict=True):
                started = time.perf_counter()
                await r.engine.query_data(q.query, p)
                r.timings.append(time.perf_counter() - started)
    reference = runners[0].results
    out = {}
    for r in runners:
        worst: dict[str, int] = {}
        for calls in r.calls:
            for store, n in calls.items():
                worst[store] = max(worst.get(store, 0), n)
        out[r.name] = Row(
            median_ms=statistics.median(r.timings) * 1000,
            calls=worst,
            calls_vary=any(c != r.calls[0] for c in r.calls),
            same_as_memory=sum(
                1
                for a, b in zip(reference, r.results, strict=True)
                if a.get("data") == b.get("data")
            ),
            n_queries=len(queries),
        )
    return out


def _calls_text(row: Row) -> str:
    text = " ".join(f"{STORE_ABBREV[s]}{row.calls[s]}" for s in STORE_ORDER if row.calls.get(s))
    return text + ("*" if row.calls_vary else "")


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


async def run_size(
    label: str, n_entities: int, args: argparse.Namespace
) -> tuple[dict[tuple[str, str, bool], Row], dict[str, float], dict[str, int]]:
    log(f"== {label}: {n_entities} entities")
    ds = dataset_for(n_entities, args.seed)
    queries = keyword_queries(ds, args.queries, seed=args.seed)
    embedder = HashingEmbedder(ds.dim)
    servers = Servers()
    servers.start()
    rows: dict[tuple[str, str, bool], Row] = {}
    try:
        loaded = await load_all(ds, servers, args)
        try:
            if "milvus" in loaded.vectors and args.settle > 0:
                log(f"  letting Milvus Lite build its indexes ({args.settle:.0f}s)")
                await asyncio.sleep(args.settle)
            stacks = {
                "+".join((vk, gk, ck)): {
                    **loaded.vectors[vk],
                    "graph": loaded.graphs[gk],
                    "chunk_store": loaded.chunk_stores[ck],
                }
                for vk, gk, ck in STACKS
                if vk in loaded.vectors and gk in loaded.graphs and ck in loaded.chunk_stores
            }
            scopes = (False, True) if args.scoped else (False,)
            for scoped in scopes:
                for mode in MODES:
                    measured = await measure_mode(
                        stacks, embedder, queries, mode, scoped, args.repeat
                    )
                    for name, row in measured.items():
                        rows[(name, mode, scoped)] = row
                        log(
                            f"  {name:28s} {mode:6s} scoped={scoped!s:5s} "
                            f"{row.median_ms:8.2f} ms  {_calls_text(row)}  "
                            f"same={row.same_as_memory}/{row.n_queries}"
                        )
        finally:
            for cleanup in loaded.cleanups:
                try:
                    await cleanup()
                except Exception as exc:
                    log(f"  cleanup: {exc!r}")
    finally:
        servers.stop()
    return rows, loaded.load_seconds, ds.stats()


def machine_facts() -> str:
    """``nproc``, CPU model, RAM, Python."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f", {int(line.split()[1]) / 1024 / 1024:.0f} GiB RAM"
                break
    except OSError:
        pass
    return f"nproc={os.cpu_count()}, {model}{mem}, Python {platform.python_version()}"


def code_version() -> str:
    """The git commit the run imported (``+dirty`` with uncommitted changes)."""
    import subprocess

    try:
        rev = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


CODE_VERSION = code_version()


def render(
    results: dict[str, tuple[dict[tuple[str, str, bool], Row], dict[str, float], dict[str, int]]],
    args: argparse.Namespace,
) -> str:
    """One markdown table: a row per (stack, mode[, scoped]), a column group per size."""
    sizes = list(results)
    keys: list[tuple[str, str, bool]] = []
    for rows, _, _ in results.values():
        for key in rows:
            if key not in keys:
                keys.append(key)
    keys.sort(key=lambda k: (k[2], MODES.index(k[1]), ["+".join(s) for s in STACKS].index(k[0])))
    header = ["stack (vectors+graph+chunks)", "mode"]
    if args.scoped:
        header.append("scoped")
    for size in sizes:
        header += [f"{size} median ms", f"{size} × memory", f"{size} = memory"]
    header.append("calls per query (E R C G S M)")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key in keys:
        name, mode, scoped = key
        cells = [name, mode]
        if args.scoped:
            cells.append("yes" if scoped else "no")
        calls = ""
        for size in sizes:
            rows = results[size][0]
            row = rows.get(key)
            base = rows.get(("memory+memory+memory", mode, scoped))
            if row is None:
                cells += ["-", "-", "-"]
                continue
            ratio = f"{row.median_ms / base.median_ms:.1f}" if base and base.median_ms else "-"
            cells += [f"{row.median_ms:.1f}", ratio, f"{row.same_as_memory}/{row.n_queries}"]
            text = _calls_text(row)
            calls = text if not calls or calls == text else f"{calls} / {text}"
        cells.append(calls)
        lines.append("| " + " | ".join(cells) + " |")
    notes = [
        "",
        f"Machine: {machine_facts()}. Code: {CODE_VERSION}.",
        f"{args.queries} keyword queries (no LLM, no rerank, chunk pick VECTOR, default "
        f"top_k/chunk_top_k), 1 warm-up pass + {args.repeat} timed passes; median of all timed "
        "queries. '= memory': queries whose `data` equals the memory stack's exactly.",
        "Calls: E/R/C = entity/relation/chunk vector index, G = graph, S = chunk store, "
        "M = embedder; the largest count over the queries ('*': the count varied).",
        "Vector search: "
        + (
            "exact everywhere (pgvector exact scans, Milvus FLAT)."
            if args.exact
            else "adapter defaults (pgvector HNSW, ef_search 100; Milvus "
            f"{args.milvus_index}), i.e. approximate at this scale."
        ),
    ]
    for size, (_, load, stats) in results.items():
        loads = ", ".join(f"{k} {v:.1f}s" for k, v in load.items())
        notes.append(f"{size}: {stats}; load: {loads}.")
    return "\n".join(lines + notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10k,100k", help="comma list of 1k, 10k, 100k")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2000, help="records per upsert call")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scoped", action="store_true", help="also time scoped queries")
    parser.add_argument(
        "--exact",
        action="store_true",
        help="exact vector search everywhere (pgvector exact scans, Milvus FLAT)",
    )
    parser.add_argument(
        "--milvus-index",
        default=None,
        choices=["AUTOINDEX", "FLAT", "HNSW", "IVF_FLAT"],
        help="Milvus index type (default AUTOINDEX, the adapter's default; FLAT with --exact)",
    )
    parser.add_argument(
        "--settle", type=float, default=10.0, help="seconds to wait after loading Milvus Lite"
    )
    args = parser.parse_args()
    if args.milvus_index is None:
        args.milvus_index = "FLAT" if args.exact else "AUTOINDEX"
    results = {}
    for label in args.sizes.split(","):
        label = label.strip()
        results[label] = asyncio.run(run_size(label, SIZES[label], args))
    print(render(results, args))


if __name__ == "__main__":
    main()
