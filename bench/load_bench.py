"""HTTP load on ``hexrag serve`` over loopback: requests/s and latency of ``POST /query/data``.

For each stack (``memory``: a LightRAG working directory of the parity benchmark's 1k-entity
dataset served from memory; ``postgres``: the same data copied into PostgreSQL + pgvector on a
``pgserver`` instance), the script starts ``hexrag serve`` as its own process, then drives it
with 1, 8 and 64 concurrent clients (``httpx.AsyncClient``, one connection each) for a fixed
time per level, cycling through keyword queries in every mode (keywords supplied, so no LLM is
involved). It prints one table: requests, requests/s, p50 and p99 latency, non-2xx answers,
and the server's RSS before and after (``/proc/<pid>/status``).

Usage::

    python bench/load_bench.py                              # both stacks, 10 s per level
    python bench/load_bench.py --stacks memory --seconds 3 --clients 1,8

Loopback only; not run in CI. Needs the ``parity`` extra (to build the dataset once, cached
in ``bench/data/``) and, for ``postgres``, ``pgserver``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from parity_bench import DATA_DIR, DIM, ensure_workdir  # noqa: E402

MODES = ("local", "global", "hybrid", "mix", "naive")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """``hexrag serve`` in a child process on a free loopback port."""

    def __init__(self, args: list[str]) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "LIGHTRAG_API_KEY"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hexrag.cli", "serve", *args, "--port", str(self.port),
             "--log-level", "warning", "--embedder", f"hashing:{DIM}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hexrag serve exited: {self.proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("hexrag serve did not become healthy")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _payloads(workdir: Path, n: int = 24) -> list[dict[str, Any]]:
    from parity_bench import _spec

    from hexrag.devtools.lightrag_data import generate_dataset, keyword_queries

    queries = keyword_queries(generate_dataset(_spec("1k")), n)
    return [
        {"query": q.query, "mode": mode, "hl_keywords": list(q.hl_keywords),
         "ll_keywords": list(q.ll_keywords)}
        for q in queries
        for mode in MODES
    ]


async def _drive(url: str, payloads: list[dict[str, Any]], clients: int, seconds: float
                 ) -> dict[str, Any]:
    latencies: list[float] = []
    errors: dict[int | str, int] = {}
    source = itertools.cycle(payloads)
    stop_at = time.perf_counter() + seconds

    async def worker() -> None:
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
            while time.perf_counter() < stop_at:
                payload = next(source)
                t0 = time.perf_counter()
                try:
                    r = await client.post("/query/data", json=payload)
                    status: int | str = r.status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                latencies.append(time.perf_counter() - t0)
                if status != 200:
                    errors[status] = errors.get(status, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "p50_ms": 1000 * statistics.median(latencies) if latencies else float("nan"),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
        if latencies else float("nan"),
        "errors": errors,
    }


def _postgres_config(workdir: Path, tmp: Path) -> Path:
    """Copy the working directory into PostgreSQL (pgserver) and write a stack TOML."""
    from tests.services.postgres import postgres_dsn

    dsn = postgres_dsn()

    async def copy() -> None:
        from hexrag import bootstrap
        from hexrag.config import StackConfig
        from hexrag.transfer.migrate import migrate_stack

        source = await bootstrap.open(workdir, read_only=True)
        target = await bootstrap.open(StackConfig(
            vector_index=dsn, graph_store=dsn, chunk_store=dsn, cache=dsn, namespace="load",
            embedder=f"hashing:{DIM}", llm="none", reranker="none"))
        try:
            await target.record_model()
            await migrate_stack(source.stores, target.stores, state_path=tmp / "state.json",
                                overwrite=True)
        finally:
            await target.aclose()
            await source.aclose()

    asyncio.run(copy())
    config = tmp / "stack.toml"
    config.write_text(
        f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
        f'cache = "none"\nnamespace = "load"\n',
        encoding="utf-8",
    )
    return config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stacks", default="memory,postgres")
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    wd = ensure_workdir("1k", Path(args.data_dir))
    payloads = _payloads(wd.path)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hexrag-load-") as tmp:
        for stack in args.stacks.split(","):
            if stack == "memory":
                serve_args = ["--workdir", str(wd.path)]
            elif stack == "postgres":
                serve_args = ["--config", str(_postgres_config(wd.path, Path(tmp)))]
            else:
                raise SystemExit(f"unknown stack {stack!r}")
            server = Server(serve_args)
            try:
                rss_before = _rss_mb(server.proc.pid)
                for n in (int(c) for c in args.clients.split(",")):
                    print(f"[{stack}] {n} clients ...", flush=True)
                    r = asyncio.run(_drive(server.url, payloads, n, args.seconds))
                    r.update(stack=stack, clients=n, rss_before_mb=rss_before,
                             rss_after_mb=_rss_mb(server.proc.pid))
                    rows.append(r)
            finally:
                server.stop()
    print()
    print("| stack | clients | requests | req/s | p50 ms | p99 ms | non-2xx | RSS before/after MB"
          " |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for r in rows:
        errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
        print(f"| {r['stack']} | {r['clients']} | {r['requests']} | {r['rps']:.0f} | "
              f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {errors} | "
              f"{r['rss_before_mb']:.0f} / {r['rss_after_mb']:.0f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=str))


if __name__ == "__main__":
    main()
