"""LightRAG 1.5.7 deployments on Milvus + Redis (+ NetworkX), written by LightRAG's own classes.

``MilvusVectorDBStorage`` (vectors) + ``RedisKVStorage`` (text chunks, LLM cache, full docs...)
+ ``NetworkXStorage`` (the graph, a GraphML file in the working directory) +
``JsonDocStatusStorage``, pointed at a Milvus Lite file (or server) and a Redis through
LightRAG's ``MILVUS_URI`` / ``REDIS_URI`` variables. Used by the parity suite of hexrag's in-place
adapters (:mod:`hexrag.adapters.milvus.lightrag_layout`,
:mod:`hexrag.adapters.redis.lightrag_layout`). Needs the ``parity`` extra (lightrag-hku 1.5.7).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Unpack

from hexrag.devtools.lightrag_data import Dataset
from hexrag.devtools.lightrag_deploy import (
    MODEL_NAME,
    DeploymentOptions,
    lightrag_env,
    new_deployment,
    workdir_storages,
    write_then_finalize,
)

__all__ = [
    "MODEL_NAME",
    "init_lightrag_milvus_redis",
    "make_lightrag_milvus_redis",
    "write_lightrag_milvus_redis",
]

STORAGES = workdir_storages("MilvusVectorDBStorage", kv_storage="RedisKVStorage")


def _env(milvus_uri: str, redis_url: str) -> AbstractContextManager[None]:
    # pymilvus parses MILVUS_URI when it is first imported and refuses a Lite file path there:
    # import it before the variable is set (LightRAG reads it again when it connects).
    import pymilvus  # noqa: F401

    return lightrag_env({"MILVUS_URI": milvus_uri, "MILVUS_DB_NAME": "", "REDIS_URI": redis_url})


def make_lightrag_milvus_redis(
    milvus_uri: str,
    redis_url: str,
    embedder: Any,
    *,
    working_dir: str | Path,
    workspace: str,
    **options: Unpack[DeploymentOptions],
) -> Any:
    """A ``LightRAG`` on Milvus + Redis + NetworkX (initialise it with
    :func:`init_lightrag_milvus_redis`); ``options``: :class:`DeploymentOptions`."""
    return new_deployment(
        embedder, env=_env(milvus_uri, redis_url), storages=STORAGES, working_dir=working_dir,
        workspace=workspace, **options,
    )


async def init_lightrag_milvus_redis(rag: Any, milvus_uri: str, redis_url: str) -> None:
    """``rag.initialize_storages()`` with LightRAG's connection variables set."""
    with _env(milvus_uri, redis_url):
        await rag.initialize_storages()


async def write_lightrag_milvus_redis(
    dataset: Dataset,
    milvus_uri: str,
    redis_url: str,
    embedder: Any,
    *,
    working_dir: str | Path,
    workspace: str,
    **options: Unpack[DeploymentOptions],
) -> None:
    """Write ``dataset`` through LightRAG's own Milvus, Redis and NetworkX storage classes
    (``options``: :class:`DeploymentOptions`)."""
    rag = make_lightrag_milvus_redis(
        milvus_uri, redis_url, embedder, working_dir=working_dir, workspace=workspace,
        **options,
    )
    await init_lightrag_milvus_redis(rag, milvus_uri, redis_url)
    await write_then_finalize(rag, dataset)
