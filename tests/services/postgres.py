"""A throwaway PostgreSQL 16 + pgvector server for tests, from the ``pgserver`` wheel.

One server per test process, started on first use in a temporary directory and stopped (its
data directory deleted) at exit. It listens on a Unix socket inside that directory, so it
needs no TCP port and cannot collide with another server. Each test gets its own asyncpg pool
and its own schema, dropped afterwards.

Running as root: PostgreSQL refuses to run as root, so ``pgserver`` runs it as a system user
``pgserver`` (created with ``useradd`` on first use) and opens the directories it needs to
that user. ``HEXRAG_POSTGRES_DSN`` points the tests at an existing disposable server instead
(it must have pgvector; tests create and drop their own schemas there).

If no server can start, the tests skip, or fail when ``HEXRAG_REQUIRE_BACKENDS=1``.

Use from a test module::

    from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import time
import uuid
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.services import require_backends, unavailable

__all__ = [
    "PgTestServer",
    "pg_dsn",
    "pg_pool",
    "pg_schema",
    "postgres_dsn",
    "require_backends",
    "start_pgserver",
    "unavailable",
]

HOW_TO = (
    "install the `pgserver` wheel (`pip install pgserver`: PostgreSQL 16 with pgvector); as "
    "root it also needs `useradd` to create the `pgserver` system user; or set "
    "HEXRAG_POSTGRES_DSN to a disposable PostgreSQL server with the pgvector extension"
)


def _killed_by_signal(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is a child process killed by a signal."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, subprocess.CalledProcessError) and seen.returncode < 0:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def start_pgserver(pgdata: str, cleanup_mode: str = "stop", attempts: int = 3) -> Any:
    """Start (or restart) the ``pgserver`` PostgreSQL in ``pgdata`` and return its handle.

    A ``pg_ctl`` child killed by a signal before it ran (a crash between ``fork`` and
    ``exec``, see ``tests/conftest.py``) is retried, at most ``attempts`` times in all; any
    other failure, or the last attempt's, is raised as it is.
    """
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset (pgserver keeps its lock there).
        warnings.simplefilter("ignore")
        import pgserver

    for attempt in range(1, attempts):
        try:
            return pgserver.get_server(pgdata, cleanup_mode=cleanup_mode)
        except Exception as exc:
            if not _killed_by_signal(exc):
                raise
            warnings.warn(f"pg_ctl killed by a signal (attempt {attempt}), retrying", stacklevel=2)
    return pgserver.get_server(pgdata, cleanup_mode=cleanup_mode)


class PgTestServer:
    """A ``pgserver`` PostgreSQL instance in a temp dir (Unix socket only)."""

    def __init__(self) -> None:
        # Short path: the socket lives in the data dir and socket paths are limited to ~107 bytes.
        self.tmpdir = tempfile.mkdtemp(prefix="hexrag-pg-")
        self.pgdata = os.path.join(self.tmpdir, "pgdata")
        self.server: Any = None
        self.dsn = ""
        self.startup_seconds = 0.0

    def start(self) -> None:
        """Start the server and check that pgvector can be created in it."""
        started = time.monotonic()
        self.server = start_pgserver(self.pgdata, cleanup_mode="delete")
        self.dsn = self.server.get_uri()
        # A throwaway server: durability settings off make the many small test commits cheap.
        out = self.server.psql(
            "ALTER SYSTEM SET fsync = off;\n"
            "ALTER SYSTEM SET synchronous_commit = off;\n"
            "ALTER SYSTEM SET full_page_writes = off;\n"
            "SELECT pg_reload_conf();\n"
            "CREATE EXTENSION IF NOT EXISTS vector;\n"
            "SELECT 'hexrag-vector-' || extversion FROM pg_extension WHERE extname = 'vector';\n"
        )
        if "hexrag-vector-" not in out:
            raise RuntimeError(f"pgvector is not available in the pgserver build: {out!r}")
        self.startup_seconds = time.monotonic() - started

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        try:
            if self.server is not None:
                self.server.cleanup()
        finally:
            self.server = None
            shutil.rmtree(self.tmpdir, ignore_errors=True)


_SERVER: PgTestServer | None = None
_START_ERROR: str | None = None


def postgres_dsn() -> str:
    """The DSN of this process's test server (started on first call); skips/fails if none."""
    global _SERVER, _START_ERROR
    external = os.environ.get("HEXRAG_POSTGRES_DSN")
    if external:
        return external
    if _SERVER is None and _START_ERROR is None:
        server = PgTestServer()
        try:
            server.start()
        except ImportError as exc:
            server.stop()
            _START_ERROR = f"pgserver is not installed ({exc}); {HOW_TO}"
        except Exception as exc:  # subprocess, permission, useradd, pgvector ... failures
            server.stop()
            _START_ERROR = f"could not start PostgreSQL via pgserver: {exc!r}; {HOW_TO}"
        else:
            _SERVER = server
            atexit.register(server.stop)
    if _SERVER is None:
        unavailable(_START_ERROR or "PostgreSQL test server unavailable")
    assert _SERVER is not None
    return _SERVER.dsn


def startup_seconds() -> float | None:
    """How long the test server took to start (``None`` if not started here)."""
    return None if _SERVER is None else _SERVER.startup_seconds


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """DSN of the shared test PostgreSQL server."""
    return postgres_dsn()


@pytest.fixture
async def pg_pool(pg_dsn: str) -> AsyncIterator[Any]:
    """An asyncpg pool on the test server, closed after the test."""
    import asyncpg

    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=4)
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def pg_schema(pg_pool: Any) -> AsyncIterator[str]:
    """A fresh schema for one test (adapters create their tables in it); dropped afterwards."""
    schema = f"hx_{uuid.uuid4().hex[:12]}"
    await pg_pool.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema
    finally:
        await pg_pool.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
