"""LightRAG 1.5.7 deployments on PostgreSQL, written by LightRAG's own storage classes.

``PGKVStorage`` + ``PGVectorStorage`` + ``PGTableGraphStorage`` + ``PGDocStatusStorage`` (no
Apache AGE needed), pointed at any PostgreSQL with pgvector through LightRAG's ``POSTGRES_*``
variables. Used by the parity suite of hexrag's in-place adapters
(:mod:`hexrag.adapters.postgres.lightrag_layout`) and by anyone who wants such a deployment to
try hexrag on. Needs the ``parity`` extra (lightrag-hku 1.5.7).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from hexrag.devtools.lightrag_data import (
    Dataset,
    _no_llm,
    _quiet_lightrag,
    lightrag_embedding_func,
    register_offline_tiktoken,
    write_lightrag_records,
)

__all__ = ["MODEL_NAME", "lightrag_pg_env", "make_lightrag_pg", "write_lightrag_pg"]

MODEL_NAME = "hashemb_v1"
"""The embedding model name the deployments are written with (tables get ``_hashemb_v1_<dim>d``)."""

PG_STORAGES = {
    "kv_storage": "PGKVStorage",
    "vector_storage": "PGVectorStorage",
    "graph_storage": "PGTableGraphStorage",
    "doc_status_storage": "PGDocStatusStorage",
}


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


@contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def make_lightrag_pg(
    dsn: str,
    embedder: Any,
    *,
    workspace: str,
    kg_chunk_pick_method: str = "WEIGHT",
    cosine_threshold: float = 0.2,
    model_name: str = MODEL_NAME,
) -> Any:
    """A ``LightRAG`` on PostgreSQL (not initialised: ``await rag.initialize_storages()``)."""
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()
    with _env(lightrag_pg_env(dsn)):
        return LightRAG(
            working_dir=tempfile.mkdtemp(prefix="hexrag-lightrag-pg-"),
            workspace=workspace,
            embedding_func=lightrag_embedding_func(embedder, model_name=model_name),
            llm_model_func=_no_llm,
            tokenizer=TiktokenTokenizer("gpt-4o-mini"),
            kg_chunk_pick_method=kg_chunk_pick_method,
            related_chunk_number=5,
            enable_content_headings=True,
            cosine_better_than_threshold=cosine_threshold,
            vector_db_storage_cls_kwargs={"cosine_better_than_threshold": cosine_threshold},
            min_rerank_score=0.0,
            user_prompt_prefix="",
            enable_llm_cache=True,
            rerank_model_func=None,
            **PG_STORAGES,
        )


async def init_lightrag_pg(rag: Any, dsn: str) -> None:
    """``rag.initialize_storages()`` with LightRAG's ``POSTGRES_*`` variables set."""
    with _env(lightrag_pg_env(dsn)):
        await rag.initialize_storages()


async def write_lightrag_pg(
    dataset: Dataset, dsn: str, embedder: Any, *, workspace: str, model_name: str = MODEL_NAME
) -> None:
    """Write ``dataset`` into PostgreSQL through LightRAG's own PG storage classes, then
    ``ANALYZE`` the tables (the planner's choice between a sequential scan and pgvector's
    approximate HNSW index changes results once autovacuum first analyses a fresh table)."""
    rag = make_lightrag_pg(dsn, embedder, workspace=workspace, model_name=model_name)
    await init_lightrag_pg(rag, dsn)
    try:
        await write_lightrag_records(rag, dataset)
    finally:
        await rag.finalize_storages()
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
