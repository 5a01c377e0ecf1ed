"""LightRAG 1.5.7 deployments on PostgreSQL, written by LightRAG's own storage classes.

``PGKVStorage`` + ``PGVectorStorage`` + ``PGTableGraphStorage`` + ``PGDocStatusStorage`` (no
Apache AGE needed), pointed at any PostgreSQL with pgvector through LightRAG's ``POSTGRES_*``
variables. Used by the parity suite of hexrag's in-place adapters
(:mod:`hexrag.adapters.postgres.lightrag_layout`) and by anyone who wants such a deployment to
try hexrag on. Needs the ``parity`` extra (lightrag-hku 1.5.7).
"""

from __future__ import annotations

import tempfile
from typing import Any, Unpack
from urllib.parse import parse_qs, unquote, urlparse

from hexrag.devtools.lightrag_data import Dataset
from hexrag.devtools.lightrag_deploy import (
    MODEL_NAME,
    DeploymentOptions,
    lightrag_env,
    lightrag_storages,
    new_deployment,
    write_then_finalize,
)

__all__ = ["MODEL_NAME", "lightrag_pg_env", "make_lightrag_pg", "write_lightrag_pg"]

PG_STORAGES = lightrag_storages(kv="PGKVStorage", vector="PGVectorStorage",
                                graph="PGTableGraphStorage", doc_status="PGDocStatusStorage")


def lightrag_pg_env(dsn: str) -> dict[str, str]:
    """LightRAG's ``POSTGRES_*`` variables for ``dsn`` (a Unix-socket ``?host=`` works)."""
    url = urlparse(dsn)
    query = parse_qs(url.query)
    host = query.get("host", [url.hostname or "localhost"])[0]
    return {
        "POSTGRES_HOST": host,
        "POSTGRES_PORT": str(url.port or int(query.get("port", ["5432"])[0])),
        "POSTGRES_USER": unquote(url.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(url.password or ""),
        "POSTGRES_DATABASE": (url.path or "/postgres").lstrip("/") or "postgres",
        "POSTGRES_MAX_CONNECTIONS": "8",
    }


def make_lightrag_pg(
    dsn: str,
    embedder: Any,
    *,
    workspace: str,
    **options: Unpack[DeploymentOptions],
) -> Any:
    """A ``LightRAG`` on PostgreSQL (not initialised: ``await rag.initialize_storages()``);
    ``options``: :class:`~hexrag.devtools.lightrag_deploy.DeploymentOptions`."""
    return new_deployment(
        embedder, env=lightrag_env(lightrag_pg_env(dsn)), storages=PG_STORAGES,
        working_dir=tempfile.mkdtemp(prefix="hexrag-lightrag-pg-"), workspace=workspace,
        **options,
    )


async def init_lightrag_pg(rag: Any, dsn: str) -> None:
    """``rag.initialize_storages()`` with LightRAG's ``POSTGRES_*`` variables set."""
    with lightrag_env(lightrag_pg_env(dsn)):
        await rag.initialize_storages()


_VECTOR_INDEXES = """SELECT indexname, indexdef FROM pg_indexes
    WHERE tablename LIKE 'lightrag_vdb_%' AND (indexdef ILIKE '%USING hnsw%'
        OR indexdef ILIKE '%USING ivfflat%')"""


async def write_lightrag_pg(
    dataset: Dataset,
    dsn: str,
    embedder: Any,
    *,
    workspace: str,
    defer_vector_index: bool = False,
    maintenance_work_mem: str = "1GB",
    **options: Unpack[DeploymentOptions],
) -> None:
    """Write ``dataset`` into PostgreSQL through LightRAG's own PG storage classes, then
    ``ANALYZE`` the tables (the planner's choice between a sequential scan and pgvector's
    approximate HNSW index changes results once autovacuum first analyses a fresh table).

    ``defer_vector_index``: LightRAG creates its vector indexes when it opens its tables and
    then inserts row by row into them; an HNSW insert costs milliseconds, so 100k entities
    (300k vectors) take most of an hour. With this flag the indexes LightRAG created are
    dropped before the write and created again afterwards from their own definitions
    (``pg_indexes.indexdef``, with ``maintenance_work_mem`` for the build): the same
    deployment, the rows still written by LightRAG's classes, the index built in bulk as
    pgvector recommends. For a database of benchmark deployments only (other workspaces in
    those tables lose the index during the write).

    ``options``: :class:`~hexrag.devtools.lightrag_deploy.DeploymentOptions`.
    """
    import asyncpg

    rag = make_lightrag_pg(dsn, embedder, workspace=workspace, **options)
    await init_lightrag_pg(rag, dsn)
    indexes: list[tuple[str, str]] = []
    if defer_vector_index:
        conn = await asyncpg.connect(dsn)
        try:
            indexes = [(r["indexname"], r["indexdef"]) for r in await conn.fetch(_VECTOR_INDEXES)]
            for name, _ in indexes:
                await conn.execute(f'DROP INDEX IF EXISTS "{name}"')
        finally:
            await conn.close()
    try:
        await write_then_finalize(rag, dataset)
    finally:
        conn = await asyncpg.connect(dsn)
        try:
            if indexes:
                await conn.execute("SELECT set_config('maintenance_work_mem', $1, false)",
                                   maintenance_work_mem)
                for _, definition in indexes:
                    await conn.execute(definition)
            await conn.execute("ANALYZE")
        finally:
            await conn.close()
