"""Issue 20, hole 4: a frozen PostgreSQL (every server process stopped by SIGSTOP).

``hexrag serve`` (a real process) serves a stack whose every store is on a private PostgreSQL
(pgserver; never the session-shared test server, which other tests use). While that server is
frozen, ``/health`` answers within ``PROBE_TIMEOUT`` (plus a second) with 503 naming every
store, again and again (an earlier probe still stuck is not stacked up again), and the query
routes answer 504 naming a store within ``STORE_TIMEOUT`` (plus a second), even though the
abandoned driver calls cannot finish until the server resumes. After SIGCONT the same process
is green and answers again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from tests.integration.test_cli_serve_answer import _clean_env, _Served  # noqa: F401
from tests.services import unavailable

pytestmark = pytest.mark.backend("postgres")

STORE_TIMEOUT = 1.5
PROBE_TIMEOUT = 1.0
STORES = ("entities", "relationships", "chunks", "graph", "chunk_store", "cache")
QUERY_ROUTES = ("/query/data", "/query", "/query/stream")
PREFIX = "frz"


@dataclasses.dataclass
class Frozen:
    """The private PostgreSQL and the server over it."""

    server: Any  # tests.services.postgres.PgTestServer
    served: _Served

    def processes(self) -> list[Any]:
        """The postmaster and all its children (backends, checkpointer, walwriter...)."""
        import psutil

        pid_file = Path(self.server.pgdata) / "postmaster.pid"
        postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
        procs = [postmaster, *postmaster.children(recursive=True)]
        assert all(p.name().startswith("postgres") for p in procs), procs
        return procs


async def _fill(dsn: str) -> None:
    """The demo knowledge base written into the ``frz_*`` tables the served stack reads."""
    from hexrag.adapters.postgres import PgChunkStore, PgGraphStore, PgVectorIndex, create_pool

    demo = await build_demo_engine()
    pool = await create_pool(dsn)
    try:
        for ns in ("entities", "relationships", "chunks"):
            index = PgVectorIndex(pool, namespace=ns, dim=384, table_prefix=PREFIX)
            matrix, records = getattr(demo, ns).export_arrays()
            await index.upsert([dataclasses.replace(r, vector=np.array(v))
                                for r, v in zip(records, matrix, strict=True)])
        graph = PgGraphStore(pool, table_prefix=PREFIX)
        await graph.upsert_nodes(list(demo.graph.iter_nodes()))
        await graph.upsert_edges(list(demo.graph.iter_edges()))
        await PgChunkStore(pool, table_prefix=PREFIX).upsert_chunks(
            list(demo.chunk_store.iter_chunks())
        )
    finally:
        await pool.close()


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Frozen]:
    try:
        import psutil  # noqa: F401

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver  # noqa: F401
    except ImportError as exc:
        unavailable(f"pgserver and psutil are needed: {exc}")
    from tests.services.postgres import PgTestServer

    server = PgTestServer()  # private: this test freezes it
    try:
        server.start()
    except Exception as exc:
        server.stop()
        unavailable(f"could not start a private PostgreSQL via pgserver: {exc!r}")
    try:
        tmp = tmp_path_factory.mktemp("frozen")
        dsn = server.dsn
        config = tmp / "stack.toml"
        config.write_text(
            f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
            f'cache = "{dsn}"\nnamespace = "{PREFIX}"\nembedder = "hashing:384"\n',
            encoding="utf-8",
        )
        asyncio.run(_fill(dsn))
        served = _Served(
            ["--config", str(config)],
            env={"STORE_TIMEOUT": str(STORE_TIMEOUT), "PROBE_TIMEOUT": str(PROBE_TIMEOUT),
                 "QUERY_TIMEOUT": "60"},
        )
        try:
            yield Frozen(server, served)
        finally:
            code, _out, err = served.stop()
            assert code == 0, err[-2000:]
    finally:
        server.stop()


def _timed(method: str, url: str, **kwargs: Any) -> tuple[httpx.Response, float]:
    t0 = time.perf_counter()
    r = httpx.request(method, url, timeout=30, **kwargs)
    return r, time.perf_counter() - t0


def _query(mode: str = "mix") -> dict[str, Any]:
    # the stack has no LLM: /query and /query/stream answer with the context
    return {"query": DEFAULT_QUESTION, "mode": mode, "only_need_context": True}


def test_frozen_postgres_health_and_queries_answer_in_time_then_recover(frozen: Frozen) -> None:
    url = frozen.served.url
    r, _ = _timed("GET", f"{url}/health")
    assert r.status_code == 200, r.text
    r, _ = _timed("POST", f"{url}/query/data", json=_query())
    assert r.status_code == 200 and r.json()["data"]["chunks"], r.text[:500]

    procs = frozen.processes()
    for p in procs:
        p.send_signal(signal.SIGSTOP)
    try:
        # /health keeps its deadline, every time (the first probes are still stuck)
        for _ in range(3):
            r, took = _timed("GET", f"{url}/health")
            assert r.status_code == 503, r.text
            assert took < PROBE_TIMEOUT + 1, took
            body = r.json()
            for name in STORES:
                assert body["stores"][name]["status"] == "error", body
                assert any(p.startswith(f"{name}: ") for p in body["problems"]), body
        # every query route: 504 naming a store and its backend, within the store timeout
        for route in QUERY_ROUTES:
            for mode in ("mix", "naive"):
                r, took = _timed("POST", f"{url}{route}", json=_query(mode))
                assert r.status_code == 504, (route, mode, r.status_code, r.text[:500])
                detail = r.json()["detail"]
                assert "postgres" in detail and any(s in detail for s in STORES), detail
                assert "STORE_TIMEOUT" in detail, detail
                assert took < STORE_TIMEOUT + 1, (route, mode, took)
        # several at once: each within its deadline, /health too
        with httpx.Client(base_url=url, timeout=30) as client:

            def one(path: str) -> tuple[int, float]:
                t0 = time.perf_counter()
                if path == "/health":
                    resp = client.get(path)
                else:
                    resp = client.post(path, json=_query())
                return resp.status_code, time.perf_counter() - t0

            from concurrent.futures import ThreadPoolExecutor

            paths = ["/query/data"] * 6 + ["/health"] * 2
            with ThreadPoolExecutor(len(paths)) as pool:
                results = list(pool.map(one, paths))
        for path, (status, took) in zip(paths, results, strict=True):
            assert status == (503 if path == "/health" else 504), (path, status)
            assert took < STORE_TIMEOUT + 1.5, (path, took)
    finally:
        import psutil

        for p in procs:
            try:
                p.send_signal(signal.SIGCONT)
            except psutil.NoSuchProcess:  # an exited process needs no SIGCONT
                pass

    # recovery: the same process is green again and answers
    deadline = time.monotonic() + 30
    while True:
        health, _ = _timed("GET", f"{url}/health")
        data, _ = _timed("POST", f"{url}/query/data", json=_query())
        if health.status_code == 200 and data.status_code == 200:
            break
        assert time.monotonic() < deadline, (health.text[:500], data.text[:500])
        time.sleep(0.2)
    assert data.json()["data"]["chunks"]
    for route in ("/query", "/query/stream"):
        r, _ = _timed("POST", f"{url}{route}", json=_query())
        assert r.status_code == 200, (route, r.text[:500])
