"""Throughput under load: ``hexrag serve`` (1 and 2 workers) beside LightRAG's own server,
both on the same LightRAG 1.5.7 PostgreSQL deployment, driven by the same HTTP client.

The deployment is the one ``bench/lightrag_pg_bench.py`` builds (its helpers: the parity
dataset written by LightRAG's own PostgreSQL classes under the workspace ``bench_<size>``,
reused when ``--dsn`` names a persistent server; default a ``pgserver`` started here).

Servers, each a subprocess:

* an OpenAI-compatible stand-in (``--embed-service``, this file): ``/v1/embeddings`` gives the
  bench's deterministic parity embedder's vectors (the deployment was written with them),
  ``/v1/chat/completions`` a fixed text (a stub LLM: never needed, keywords are given);
* LightRAG's server (``lightrag.api.lightrag_server``'s ``create_app``, configured by
  LightRAG's environment variables only: ``LIGHTRAG_*_STORAGE``, ``POSTGRES_*``,
  ``EMBEDDING_BINDING=openai``, ``LLM_BINDING=openai``, ``WORKSPACE``,
  ``KG_CHUNK_PICK_METHOD``...); the launcher (``--lightrag-server``, this file) only registers
  the offline tiktoken encoding first (no download) and skips LightRAG's interactive ``.env``
  prompt and dependency installer, then runs the app with uvicorn as LightRAG's ``main`` does;
* ``hexrag serve --config <the README's LightRAG TOML> --workers N`` with the same embedding
  service (``embedder = "openai:hashemb_v1"``) and ``KG_CHUNK_PICK_METHOD`` as LightRAG.

The client: ``--clients`` (16) concurrent loops in one asyncio process (httpx, keep-alive
connections), each posting ``/query/data`` with keywords given (no LLM call) round-robin over
the parity queries, for ``--seconds`` per mode after a short warm-up. Printed per server and
mode: completed queries/s, p50 and p99 latency, non-200 answers, and for hexrag with several
workers how many answers each worker gave (``X-Hexrag-Worker``). Before the load, the first
``--check`` queries per mode are sent once to LightRAG's server and to hexrag's, and their
data compared (``diff_query_data``: the same entities, relations, chunks, in order). The
machine's load average is printed with the table (every process, the client included, shares
the machine's cores).

LightRAG's server needs LightRAG's ``api`` extras, which hexrag's environment does not carry
(PyJWT, bcrypt, python-jose, aiofiles, async-timeout): install them, e.g. into a side folder
with ``pip install --target DIR ...`` and ``PYTHONPATH=DIR`` (the servers inherit it).

Usage::

    python bench/throughput_bench.py                 # 1k entities, 10 s per mode
    python bench/throughput_bench.py --size 10k --seconds 20

Not run in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

MODES = ("local", "global", "hybrid", "mix", "naive")
DIM = 384
WORKER_HEADER = "x-hexrag-worker"
#: QueryParam fields LightRAG's /query/data request takes (the parity queries' parameters).
REQUEST_FIELDS = {"top_k", "chunk_top_k", "max_entity_tokens", "max_relation_tokens",
                  "max_total_tokens", "user_prompt", "enable_rerank", "include_references"}


# --------------------------------------------------------------------------- sub-processes


def embed_service(port: int) -> None:
    """The OpenAI-compatible stand-in: parity embeddings and a stub chat model."""
    import numpy as np
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from hexrag.devtools.lightrag_data import parity_embedder

    embedder = parity_embedder(DIM)

    async def embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = np.asarray(await embedder.embed([str(t) for t in texts]), dtype=np.float32)
        b64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(v.tobytes()).decode() if b64 else v.tolist()}
                for i, v in enumerate(vectors)]
        return JSONResponse({"object": "list", "data": data, "model": body.get("model", ""),
                             "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    async def chat(request: Request) -> JSONResponse:
        return JSONResponse({
            "id": "stub", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "stub answer"}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    app = Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"]),
                            Route("/v1/chat/completions", chat, methods=["POST"]),
                            Route("/v1/models", models)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def lightrag_server() -> None:
    """LightRAG's server app, configured by its environment variables (see the docstring)."""
    import uvicorn

    from hexrag.devtools.lightrag_data import register_offline_tiktoken

    register_offline_tiktoken()
    sys.argv = ["lightrag-server"]  # LightRAG parses its command line: nothing but the env
    from lightrag.api.config import global_args, initialize_config

    initialize_config()
    from lightrag.api.lightrag_server import configure_logging, create_app

    configure_logging()
    app = create_app(global_args)
    uvicorn.run(app, host=global_args.host, port=global_args.port, log_config=None,
                log_level="warning")


# --------------------------------------------------------------------------- the harness


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Proc:
    """A server subprocess, healthy when ``health`` answers 200."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], url: str,
                 health: str, log: Path) -> None:
        import httpx

        self.name, self.url = name, url
        self.log = log
        self.proc = subprocess.Popen(argv, env=env, cwd=log.parent, stdout=log.open("w"),
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"{name} exited; its log:\n{log.read_text()[-4000:]}")
            try:
                if httpx.get(url + health, timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"{name} not healthy in 300 s; log:\n{log.read_text()[-4000:]}")
            time.sleep(0.3)

    def stop(self) -> None:
        """SIGINT, then kill after 30 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _payload(mode: str, q: Any) -> dict[str, Any]:
    extra = {k: v for k, v in q.param_dict().items() if k in REQUEST_FIELDS}
    return {"query": q.query, "mode": mode, "hl_keywords": list(q.hl_keywords),
            "ll_keywords": list(q.ll_keywords), **extra}


async def _load(url: str, payloads: list[dict[str, Any]], clients: int, seconds: float,
                warmup: float) -> dict[str, Any]:
    """``clients`` concurrent loops posting ``payloads`` round-robin for ``seconds``."""
    import httpx

    latencies: list[float] = []
    errors = 0
    workers: Counter[str] = Counter()
    counter = itertools.count()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async def loop(until: float, record: bool) -> None:
            nonlocal errors
            while time.perf_counter() < until:
                body = payloads[next(counter) % len(payloads)]
                t0 = time.perf_counter()
                r = await client.post("/query/data", json=body)
                elapsed = time.perf_counter() - t0
                if not record:
                    continue
                if r.status_code != 200:
                    errors += 1
                else:
                    latencies.append(elapsed)
                    workers[r.headers.get(WORKER_HEADER, "-")] += 1

        await asyncio.gather(*(loop(time.perf_counter() + warmup, False)
                               for _ in range(clients)))
        t0 = time.perf_counter()
        await asyncio.gather(*(loop(t0 + seconds, True) for _ in range(clients)))
        wall = time.perf_counter() - t0
    latencies.sort()
    n = len(latencies)
    return {
        "qps": n / wall, "n": n, "errors": errors,
        "p50": statistics.median(latencies) * 1e3 if n else float("nan"),
        "p99": latencies[min(n - 1, int(0.99 * n))] * 1e3 if n else float("nan"),
        "workers": dict(sorted(workers.items())),
    }


def _agreement(lr_url: str, hx_url: str, payloads: list[dict[str, Any]]) -> tuple[int, int]:
    import httpx

    from hexrag.devtools.lightrag_data import diff_query_data

    same = 0
    for body in payloads:
        lr = httpx.post(lr_url + "/query/data", json=body, timeout=60).json()
        hx = httpx.post(hx_url + "/query/data", json=body, timeout=60).json()
        diff = diff_query_data(lr, hx)
        same += not diff
        if diff:  # say what differs, so a disagreement can be looked into
            print(f"  differs ({body.get('mode')}, {body.get('query', '')[:40]!r}): "
                  f"{str(diff)[:300]}", flush=True)
    return same, len(payloads)


def _hexrag_toml(tmp: Path, dsn: str, workspace: str, embed_url: str) -> Path:
    from lightrag_pg_bench import README_TOML

    from hexrag.devtools.lightrag_pg import MODEL_NAME

    text = README_TOML.format(dsn=dsn, workspace=workspace, model=MODEL_NAME).replace(
        'embedder     = "hashing"',
        f'embedder     = "openai:{MODEL_NAME}"\nembedding_dim = {DIM}\n'
        f'openai_base_url = "{embed_url}"')
    path = tmp / "lightrag.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def _ensure_deployment(dsn: str, size: str) -> Any:
    from lightrag_pg_bench import _deployment_exists
    from parity_bench import _spec

    from hexrag.devtools.lightrag_data import generate_dataset, parity_embedder
    from hexrag.devtools.lightrag_pg import write_lightrag_pg

    dataset = generate_dataset(_spec(size))
    workspace = f"bench_{size}"
    if not await _deployment_exists(dsn, workspace):
        t0 = time.perf_counter()
        print(f"[{size}] writing the deployment with LightRAG's PG classes ...", flush=True)
        await write_lightrag_pg(dataset, dsn, parity_embedder(), workspace=workspace)
        print(f"[{size}] written in {time.perf_counter() - t0:.0f} s", flush=True)
    return dataset


def run(args: argparse.Namespace, dsn: str) -> list[dict[str, Any]]:
    """Start the servers one after the other and load each; the table's rows."""
    from hexrag.devtools.lightrag_data import keyword_queries
    from hexrag.devtools.lightrag_pg import MODEL_NAME, lightrag_pg_env

    dataset = asyncio.run(_ensure_deployment(dsn, args.size))
    workspace = f"bench_{args.size}"
    queries = [q for q in keyword_queries(dataset, args.queries) if q.hl_keywords or q.ll_keywords]
    modes = args.modes.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="hexrag-throughput-"))
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("OPENAI_", "LLM_", "EMBEDDING_", "HEXRAG_", "LIGHTRAG_",
                                     "POSTGRES_", "WORKSPACE"))}
    base_env["PYTHONPATH"] = os.pathsep.join([str(REPO), base_env.get("PYTHONPATH", "")])
    py = sys.executable
    embed_port = _free_port()
    embed_url = f"http://127.0.0.1:{embed_port}/v1"
    embed = Proc("embedding service", [py, __file__, "--embed-service", str(embed_port)],
                 base_env, f"http://127.0.0.1:{embed_port}", "/v1/models", tmp / "embed.log")
    rows: list[dict[str, Any]] = []
    try:
        lr_port = _free_port()
        lr_env = {
            **base_env, **lightrag_pg_env(dsn),
            "HOST": "127.0.0.1", "PORT": str(lr_port), "WORKING_DIR": str(tmp / "lr_work"),
            "INPUT_DIR": str(tmp / "lr_inputs"), "WORKSPACE": workspace,
            "LIGHTRAG_KV_STORAGE": "PGKVStorage", "LIGHTRAG_VECTOR_STORAGE": "PGVectorStorage",
            "LIGHTRAG_GRAPH_STORAGE": "PGTableGraphStorage",
            "LIGHTRAG_DOC_STATUS_STORAGE": "PGDocStatusStorage",
            "POSTGRES_MAX_CONNECTIONS": str(args.pool),
            "EMBEDDING_BINDING": "openai", "EMBEDDING_BINDING_HOST": embed_url,
            "EMBEDDING_BINDING_API_KEY": "stub", "EMBEDDING_MODEL": MODEL_NAME,
            "EMBEDDING_DIM": str(DIM), "LLM_BINDING": "openai", "LLM_BINDING_HOST": embed_url,
            "LLM_BINDING_API_KEY": "stub", "LLM_MODEL": "stub", "KG_CHUNK_PICK_METHOD": args.pick,
            "COSINE_THRESHOLD": "0.2", "RELATED_CHUNK_NUMBER": "5", "LOG_LEVEL": "WARNING",
        }
        hx_env = {**base_env, "KG_CHUNK_PICK_METHOD": args.pick, "OPENAI_API_KEY": "stub",
                  "OPENAI_BASE_URL": embed_url}
        toml = _hexrag_toml(tmp, dsn, workspace, embed_url)
        lightrag = Proc("LightRAG server", [py, __file__, "--lightrag-server"], lr_env,
                        f"http://127.0.0.1:{lr_port}", "/health", tmp / "lightrag.log")
        try:
            rows += _load_all("LightRAG server", lightrag.url, queries, modes, args)
            for n in args.workers:
                port = _free_port()
                name = f"hexrag serve --workers {n}"
                hexrag = Proc(name, [py, "-m", "hexrag.cli", "serve", "--config", str(toml),
                                     "--port", str(port), "--workers", str(n),
                                     "--log-level", "warning"],
                              hx_env, f"http://127.0.0.1:{port}", "/health",
                              tmp / f"hexrag-{n}.log")
                try:
                    agree = {mode: _agreement(lightrag.url, hexrag.url,
                                              [_payload(mode, q) for q in queries[:args.check]])
                             for mode in modes} if args.check else {}
                    rows += _load_all(name, hexrag.url, queries, modes, args, agree)
                finally:
                    hexrag.stop()
        finally:
            lightrag.stop()
    finally:
        embed.stop()
    return rows


def _load_all(name: str, url: str, queries: list[Any], modes: list[str],
              args: argparse.Namespace, agree: dict[str, tuple[int, int]] | None = None,
              ) -> list[dict[str, Any]]:
    rows = []
    for mode in modes:
        payloads = [_payload(mode, q) for q in queries]
        stats = asyncio.run(_load(url, payloads, args.clients, args.seconds, args.warmup))
        same = (agree or {}).get(mode)
        rows.append({"server": name, "mode": mode, **stats,
                     "agree": f"{same[0]}/{same[1]}" if same else ""})
        print(f"  {name} {mode}: {stats['qps']:.0f} q/s, p50 {stats['p50']:.1f} ms", flush=True)
    return rows


def _print(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\nThroughput, {args.size} entities, {args.clients} concurrent clients, "
          f"{args.seconds:.0f} s per mode, POST /query/data with keywords ({args.pick} pick)")
    print(f"machine load (1-min load average): {args.load_before:.2f} before the run, "
          f"{os.getloadavg()[0]:.2f} after it, on {os.cpu_count()} cores shared by every "
          "process (servers, PostgreSQL, the client)\n")
    print("| server | mode | queries/s | p50 ms | p99 ms | errors | same data as LightRAG "
          "| answers per worker |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    for r in rows:
        per = ", ".join(f"{k}: {v}" for k, v in r["workers"].items()) if len(
            r["workers"]) > 1 or "-" not in r["workers"] else ""
        print(f"| {r['server']} | {r['mode']} | {r['qps']:.0f} | {r['p50']:.1f} | "
              f"{r['p99']:.1f} | {r['errors']} | {r['agree']} | {per} |")


def main() -> None:
    """Command line (see the module docstring)."""
    if len(sys.argv) == 3 and sys.argv[1] == "--embed-service":
        embed_service(int(sys.argv[2]))
        return
    if len(sys.argv) == 2 and sys.argv[1] == "--lightrag-server":
        lightrag_server()
        return
    from parity_bench import SIZES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1k", choices=sorted(SIZES))
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--pick", default="WEIGHT", choices=("WEIGHT", "VECTOR"))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--pool", type=int, default=16, help="LightRAG's POSTGRES_MAX_CONNECTIONS")
    ap.add_argument("--check", type=int, default=5,
                    help="queries per mode compared between the servers first (0: none)")
    ap.add_argument("--dsn", default=None, help="PostgreSQL with pgvector (default: pgserver)")
    args = ap.parse_args()
    dsn = args.dsn
    if dsn is None:
        from tests.services.postgres import postgres_dsn

        dsn = postgres_dsn()
    args.load_before = os.getloadavg()[0]
    rows = run(args, dsn)
    _print(rows, args)


if __name__ == "__main__":
    main()
