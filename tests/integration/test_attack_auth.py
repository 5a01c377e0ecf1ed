"""Access comes first (issue 20, holes 1 and 2), over real HTTP (uvicorn on loopback).

A request without the API key is refused from its headers alone: before its body is read
(a declared body that never comes, a 45 MB upload that is never sent) and before any
workspace is opened. On the workspace router, ``OPTIONS`` and the open ``/health`` never open
a workspace, whatever name they carry, and on PostgreSQL they create no table. At most
``MAX_WORKSPACES`` workspaces stay open: the least recently used pattern workspace is closed
first, once its request in flight is answered, and the declared ones stay.
"""

from __future__ import annotations

import asyncio
import random
import socket
import string
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.api import create_app
from hexrag.api.limits import ApiLimits, ApiSettings
from hexrag.api.workspaces import WorkspaceCatalog, WorkspaceRouter
from hexrag.config import StackConfig
from hexrag.core.errors import ConfigurationError
from hexrag.demo import build_demo_engine
from hexrag.serving import workspace_router
from tests.integration.live import LiveServer
from tests.services.postgres import pg_dsn  # noqa: F401

KEY = "s3cret"
ORIGIN = "https://app.example"
DIM = 32
PATTERN = r"t_[a-z0-9]+"


def _settings(**limits: Any) -> ApiSettings:
    return ApiSettings(limits=ApiLimits(**limits), api_key=KEY, cors_origins=(ORIGIN,))


def _single() -> LiveServer:
    demo = asyncio.run(build_demo_engine())
    return LiveServer(create_app(demo.engine, settings=_settings()))


def _router(config: StackConfig, settings: ApiSettings, llm: Any = None) -> tuple[
        LiveServer, WorkspaceRouter]:
    router = workspace_router(config, settings, embedder=HashingEmbedder(DIM), llm=llm)
    return LiveServer(router, lifespan="on"), router


def _memory_config() -> StackConfig:
    return StackConfig(workspaces=["alpha"], workspace_pattern=PATTERN,
                       embedder=f"hashing:{DIM}")


@pytest.fixture(params=["single", "router"])
def keyed(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """A key-protected server: one stack, or the workspace router."""
    live = _single() if request.param == "single" else _router(_memory_config(), _settings())[0]
    yield live
    live.stop()


def _head(path: str, length: int, *, content_type: str = "application/json",
          extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {length}\r\n{extra}\r\n").encode()


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One HTTP response (status, body) read from ``sock`` (Content-Length framed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed after {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":", 1)[1]) for line in lines
                  if line.lower().startswith("content-length:"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(lines[0].split()[1]), rest[:length]


def _connect(live: LiveServer) -> socket.socket:
    host, port = live.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


@pytest.mark.parametrize("path", ["/query", "/query/data", "/documents/texts"])
def test_a_declared_body_that_never_comes_gets_403_at_once(keyed: LiveServer, path: str) -> None:
    with _connect(keyed) as sock:
        sock.sendall(_head(path, 1000))  # the 1000 bytes are never sent
        sock.settimeout(1.0)  # the promise: a 4xx within a second
        status, body = _read_response(sock)
        assert (status, body) == (403, b'{"detail": "API Key required"}')
        # the connection stays usable: the body sent late is discarded, unread by the app
        sock.settimeout(5)
        sock.sendall(b"x" * 1000)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_response(sock)[0] in (200, 503)


def test_an_unauthenticated_upload_is_refused_before_its_body(keyed: LiveServer) -> None:
    """45 MB declared (under MAX_UPLOAD_BYTES), a wrong key: 403 before one byte is sent."""
    size = 45 * 1024 * 1024
    with _connect(keyed) as sock:
        sock.sendall(_head("/documents/upload", size, extra="X-API-Key: wrong\r\n",
                           content_type="multipart/form-data; boundary=b0und"))
        sock.settimeout(1.0)
        assert _read_response(sock) == (403, b'{"detail": "Invalid API Key"}')
    # and the same upload with the key gets past the key (to the app's own answer)
    with _connect(keyed) as sock:
        sock.sendall(_head("/documents/upload", 10, extra=f"X-API-Key: {KEY}\r\n",
                           content_type="multipart/form-data; boundary=b0und"))
        sock.sendall(b"--b0und--\r")
        assert _read_response(sock)[0] not in (403, 500)


def _open(client: httpx.Client) -> list[str]:
    r = client.get("/workspaces", headers={"X-API-Key": KEY})
    assert r.status_code == 200, r.text
    opened: list[str] = r.json()["open"]
    return opened


def _name(rng: random.Random) -> str:
    return "t_" + "".join(rng.choices(string.ascii_lowercase + string.digits, k=10))


def _strangers(client: httpx.Client, rng: random.Random, count: int) -> dict[str, int]:
    """``count`` requests without the key, each naming a new pattern workspace: OPTIONS
    (preflight or not) on any path, the open GET /health, POSTs; statuses by kind."""
    seen: dict[str, int] = {}
    paths = ("/query", "/query/data", "/health", "/documents/texts", "/x/y", "/")
    for i in range(count):
        ws = {"LIGHTRAG-WORKSPACE": _name(rng)}
        kind = i % 5
        if kind == 0:
            r = client.options(rng.choice(paths), headers={
                **ws, "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "x-api-key,content-type"})
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == ORIGIN
        elif kind == 1:
            r = client.options(rng.choice(paths), headers=ws)
            assert r.status_code == 405, r.text
        elif kind == 2:
            r = client.get("/health", headers=ws)
            assert r.status_code == 404 and "is not open" in r.json()["detail"], r.text
        elif kind == 3:
            r = client.post("/query/data", headers=ws, json={"query": "x"})
            assert r.status_code == 403, r.text
        else:
            r = client.post("/query", json={"query": "x", "workspace": _name(rng)},
                            headers={"X-API-Key": "wrong"})
            assert r.status_code == 403, r.text
        seen[f"{kind}:{r.status_code}"] = seen.get(f"{kind}:{r.status_code}", 0) + 1
    return seen


def test_no_unauthenticated_request_opens_a_workspace() -> None:
    live, _ = _router(_memory_config(), _settings())
    try:
        c = live.client
        before = _open(c)
        assert set(before) == {"", "alpha"}
        seen = _strangers(c, random.Random(20), 300)
        assert sum(seen.values()) == 300
        assert _open(c) == before
        # the router's own routes need the key too
        for path in ("/metrics", "/workspaces"):
            assert c.get(path).json() == {"detail": "API Key required"}
            assert c.get(path, headers={"X-API-Key": KEY}).status_code == 200
        # a stranger's 403 still carries the CORS headers a browser needs to read it
        r = c.post("/query/data", json={"query": "x"}, headers={"Origin": ORIGIN})
        assert r.status_code == 403 and r.headers["access-control-allow-origin"] == ORIGIN
        # open paths of open workspaces are served without the key
        assert c.get("/health").status_code in (200, 503)
        assert c.get("/health", headers={"LIGHTRAG-WORKSPACE": "alpha"}).status_code in (200, 503)
        # with the key, a pattern workspace opens, and its open paths are then served
        ws = {"LIGHTRAG-WORKSPACE": "t_keyed"}
        assert c.get("/health", headers={**ws, "X-API-Key": KEY}).status_code == 503  # empty
        assert "t_keyed" in _open(c)
        assert c.get("/health", headers=ws).status_code == 503
    finally:
        live.stop()


class GateLLM:
    """An LLM whose keyword extraction waits for ``release`` (a request held in flight)."""

    model_name = "gate"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    async def complete(self, prompt: str, *, system_prompt: str | None = None,
                       history: Sequence[Mapping[str, Any]] = (),
                       json_mode: bool = False) -> str:
        self.entered.set()
        await asyncio.to_thread(self.release.wait, 30)
        return '{"high_level_keywords": ["x"], "low_level_keywords": ["x"]}'

    async def stream(self, prompt: str, **kw: Any) -> Any:
        yield await self.complete(prompt, **kw)


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_max_workspaces_closes_the_least_recently_used_after_its_requests() -> None:
    llm = GateLLM()
    live, router = _router(_memory_config(), _settings(max_workspaces=4), llm)
    built, closed = [], []
    inner = router.build

    async def build(name: str) -> Any:
        app, close = await inner(name)
        built.append(name)

        async def closing() -> None:
            closed.append(name)
            await close()

        return app, closing

    router.build = build
    try:
        c = live.client

        def touch(ws: str) -> int:
            return c.get("/health", headers={"LIGHTRAG-WORKSPACE": ws,
                                             "X-API-Key": KEY}).status_code

        assert touch("t_a") == touch("t_b") == 503  # empty, but open
        assert _open(c) == ["", "alpha", "t_a", "t_b"]
        # a query on t_b held in flight (its LLM waits)
        answer: dict[str, Any] = {}

        def ask() -> None:
            r = c.post("/query", json={"query": "who?", "mode": "mix"},
                       headers={"LIGHTRAG-WORKSPACE": "t_b", "X-API-Key": KEY})
            answer["status"], answer["body"] = r.status_code, r.json()

        asker = threading.Thread(target=ask)
        asker.start()
        assert llm.entered.wait(10)
        touch("t_a")  # t_a used after t_b: t_b is now the least recently used
        assert touch("t_c") == 503  # one more: t_b goes
        assert _open(c) == ["", "alpha", "t_a", "t_c"]
        time.sleep(0.5)  # ten chances to close it too early
        assert closed == [], "closed while its request was in flight"
        llm.release.set()
        asker.join(20)
        assert answer["status"] == 200, answer
        assert "response" in answer["body"]
        _wait_for(lambda: bool(closed))
        assert closed == ["t_b"]
        # t_b reopens on demand (after its close), and t_a is the one to go now
        assert touch("t_b") == 503
        assert _open(c) == ["", "alpha", "t_c", "t_b"]
        _wait_for(lambda: len(closed) == 2)
        assert closed == ["t_b", "t_a"]
        assert built == ["t_a", "t_b", "t_c", "t_b"]
        # declared and default workspaces are never closed, however stale
        for i in range(4):
            touch(f"t_x{i}")
        assert _open(c)[:2] == ["", "alpha"] and len(_open(c)) == 4
        assert "" not in closed and "alpha" not in closed
    finally:
        live.stop()


def test_max_workspaces_is_validated() -> None:
    assert ApiLimits.from_env({"MAX_WORKSPACES": "7"}).max_workspaces == 7
    assert ApiLimits().max_workspaces == 64
    for bad in ("0", "-1", "x", "1000001"):
        with pytest.raises(ConfigurationError, match="MAX_WORKSPACES"):
            ApiLimits.from_env({"MAX_WORKSPACES": bad})

    async def build(name: str) -> Any:
        raise AssertionError("never built")

    catalog = WorkspaceCatalog(("a", "b"), PATTERN)
    with pytest.raises(ConfigurationError, match="MAX_WORKSPACES=3"):
        WorkspaceRouter(catalog, build, max_workspaces=3)  # "", a, b and one for the pattern
    WorkspaceRouter(catalog, build, max_workspaces=4)


def _count_tables(dsn: str, prefix: str) -> tuple[int, int]:
    import asyncpg

    async def count() -> tuple[int, int]:
        conn = await asyncpg.connect(dsn)
        try:
            total = await conn.fetchval(
                "SELECT count(*) FROM pg_catalog.pg_class WHERE relkind IN ('r', 'p')")
            ours = await conn.fetchval(
                "SELECT count(*) FROM pg_catalog.pg_class WHERE relkind IN ('r', 'p') "
                "AND relname LIKE $1", prefix + "%")
            return int(total), int(ours)
        finally:
            await conn.close()

    return asyncio.run(count())


@pytest.mark.backend("postgres")
def test_unauthenticated_requests_create_no_postgres_table(pg_dsn: str) -> None:  # noqa: F811
    namespace = "au" + uuid.uuid4().hex[:8]
    config = StackConfig(vector_index=pg_dsn, graph_store=pg_dsn, chunk_store=pg_dsn,
                         cache=pg_dsn, namespace=namespace, workspaces=["alpha"],
                         workspace_pattern=PATTERN, embedder=f"hashing:{DIM}")
    live, _ = _router(config, _settings())
    try:
        before = _count_tables(pg_dsn, namespace)
        assert before[1] > 0  # the default and declared workspaces' tables
        _strangers(live.client, random.Random(7), 60)
        assert _count_tables(pg_dsn, namespace) == before
        assert set(_open(live.client)) == {"", "alpha"}
        # the count does see a workspace that is opened (with the key)
        r = live.client.get("/health", headers={"LIGHTRAG-WORKSPACE": "t_keyed",
                                                "X-API-Key": KEY})
        assert r.status_code == 503
        after = _count_tables(pg_dsn, namespace)
        assert after[0] > before[0] and after[1] > before[1]
    finally:
        live.stop()
