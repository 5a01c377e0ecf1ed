"""Failures of a real PostgreSQL become hexrag errors that name the backend and what to check."""

from __future__ import annotations

import asyncio
import socket
import uuid
from typing import Any

import asyncpg
import numpy as np
import pytest

from hexrag.adapters.postgres import (
    PgCache,
    PgChunkStore,
    PgGraphStore,
    PgVectorIndex,
    create_pool,
)
from hexrag.core.errors import BackendTimeout, BackendUnavailable, ConfigurationError, NotFound
from hexrag.core.model import Chunk, VectorRecord
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


async def test_refused_connection_is_unavailable() -> None:
    dsn = f"postgresql://postgres:secret@127.0.0.1:{_closed_port()}/postgres"
    with pytest.raises(BackendUnavailable) as info:
        await PgChunkStore.from_url(dsn)
    message = str(info.value)
    assert info.value.backend == "postgres"
    assert message.startswith("postgres:") and "running" in message and "DSN" in message
    assert "secret" not in message  # the password is redacted


async def test_missing_socket_is_unavailable() -> None:
    dsn = f"postgresql://postgres@/postgres?host=/tmp/hexrag-no-such-dir-{uuid.uuid4().hex}"
    with pytest.raises(BackendUnavailable, match="postgres"):
        await create_pool(dsn, connect_timeout=5)


async def test_unknown_database_is_a_configuration_error(pg_dsn: str) -> None:  # noqa: F811
    bad = pg_dsn.replace("/postgres?", "/hexrag_no_such_db?", 1)
    assert bad != pg_dsn
    with pytest.raises(ConfigurationError, match="database name"):
        await PgGraphStore.from_url(bad)


async def test_closed_pool_is_unavailable(pg_dsn: str, pg_schema: str) -> None:  # noqa: F811
    pool = await asyncpg.create_pool(pg_dsn, min_size=1, max_size=1)
    store = PgChunkStore(pool, schema=pg_schema)
    await store.upsert_chunks([Chunk(id="c", content="x")])
    await pool.close()
    with pytest.raises(BackendUnavailable, match="closed"):
        await store.get_chunks(["c"])


async def _locked(pool: Any, table: str) -> Any:
    """A connection holding an ACCESS EXCLUSIVE lock on ``table`` (in an open transaction)."""
    conn = await pool.acquire()
    await conn.execute("BEGIN")
    await conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
    return conn


async def test_client_timeout_is_backend_timeout(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    store = PgChunkStore(pg_pool, schema=pg_schema, timeout=0.3)
    await store.upsert_chunks([Chunk(id="c", content="x")])
    holder = await _locked(pg_pool, store.table)
    try:
        with pytest.raises(BackendTimeout) as info:
            await store.count()
        assert "postgres" in str(info.value) and "locks" in str(info.value)
    finally:
        await holder.execute("ROLLBACK")
        await pg_pool.release(holder)
    assert await store.count() == 1  # the pool recovered


async def test_statement_timeout_is_backend_timeout(
    pg_dsn: str,  # noqa: F811
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    pool = await asyncpg.create_pool(
        pg_dsn, min_size=1, max_size=1, server_settings={"statement_timeout": "200"}
    )
    try:
        cache = PgCache(pool, schema=pg_schema)
        await cache.set_many({"k": {"v": 1}})
        holder = await _locked(pg_pool, cache.table)
        try:
            with pytest.raises(BackendTimeout, match="statement_timeout") as info:
                await cache.get_many(["k"])
            assert isinstance(info.value.__cause__, asyncpg.QueryCanceledError)
        finally:
            await holder.execute("ROLLBACK")
            await pg_pool.release(holder)
        assert await cache.get_many(["k"]) == [{"v": 1}]
    finally:
        await pool.close()


async def test_dropped_table_is_not_found_then_recreated(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    store = PgChunkStore(pg_pool, schema=pg_schema)
    await store.upsert_chunks([Chunk(id="c", content="x")])
    await pg_pool.execute(f"DROP TABLE {store.table}")
    with pytest.raises(NotFound, match="postgres"):
        await store.get_chunks(["c"])
    assert await store.count() == 0  # recreated on the next call
    await store.upsert_chunks([Chunk(id="c", content="y")])
    assert [c.content for c in await store.get_chunks(["c"]) if c] == ["y"]


async def test_without_create_tables_nothing_is_created(
    pg_pool: Any,  # noqa: F811
    pg_schema: str,  # noqa: F811
) -> None:
    """``create_tables=False`` (a role without DDL rights) uses existing tables only."""
    reader = PgChunkStore(pg_pool, schema=pg_schema, create_tables=False)
    with pytest.raises(NotFound, match="create_tables=False"):
        await reader.count()
    await PgChunkStore(pg_pool, schema=pg_schema).upsert_chunks([Chunk(id="c", content="x")])
    assert await reader.count() == 1
    index = PgVectorIndex(pg_pool, namespace="chunks", dim=3, schema=pg_schema, create_tables=False)
    with pytest.raises(NotFound):
        await index.count()


async def test_concurrent_first_use_in_a_fresh_database(pg_dsn: str) -> None:  # noqa: F811
    """Several adapters creating the extension and their tables at once do not collide."""
    db = f"hx_db_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(pg_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{db}"')
        pool = await asyncpg.create_pool(
            pg_dsn.replace("/postgres?", f"/{db}?", 1), min_size=1, max_size=8
        )
        try:
            adapters: list[Any] = [
                PgVectorIndex(pool, namespace=ns, dim=4, table_prefix=f"p{i}")  # type: ignore[arg-type]
                for i, ns in enumerate(["entities", "relationships", "chunks", "chunks"])
            ]
            adapters += [PgGraphStore(pool), PgChunkStore(pool), PgCache(pool), PgCache(pool)]
            await asyncio.gather(*(a.ensure_tables() for a in adapters))
            await adapters[0].upsert([VectorRecord(id="x", vector=np.ones(4))])
            assert await adapters[0].count() == 1
        finally:
            await pool.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        await admin.close()
