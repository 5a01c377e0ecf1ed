"""LightRAG 1.5.7 deployments on Qdrant (+ its working directory), written by LightRAG's own
classes.

``QdrantVectorDBStorage`` (vectors, model-suffixed ``lightrag_vdb_*`` collections) +
``JsonKVStorage`` / ``NetworkXStorage`` / ``JsonDocStatusStorage`` in the working directory.
LightRAG opens ``QdrantClient(url=QDRANT_URL)`` itself; for an embedded Qdrant directory (no
server) the three storages are handed one ``QdrantClient(path=...)`` before
``initialize_storages`` (embedded Qdrant allows one client per directory; ``finalize_storages``
closes it). Used by the parity suite of :mod:`hexrag.adapters.qdrant`. Needs the ``parity``
extra (lightrag-hku 1.5.7) and the ``qdrant`` extra.
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

__all__ = ["MODEL_NAME", "init_lightrag_qdrant", "make_lightrag_qdrant", "write_lightrag_qdrant"]

STORAGES = workdir_storages("QdrantVectorDBStorage")


def make_lightrag_qdrant(
    qdrant_path: str | Path,
    embedder: Any,
    *,
    working_dir: str | Path,
    workspace: str,
    redis_url: str | None = None,
    **options: Unpack[DeploymentOptions],
) -> Any:
    """A ``LightRAG`` on embedded Qdrant at ``qdrant_path`` + its working directory (KV in
    ``RedisKVStorage`` at ``redis_url`` when given), its three vector storages sharing one
    ``QdrantClient(path=...)``; initialise it with :func:`init_lightrag_qdrant`.
    ``options``: :class:`DeploymentOptions`."""
    from qdrant_client import QdrantClient

    storages = (
        workdir_storages("QdrantVectorDBStorage", kv_storage="RedisKVStorage")
        if redis_url else STORAGES
    )
    rag = new_deployment(
        embedder, env=_env(redis_url), storages=storages, working_dir=working_dir,
        workspace=workspace, **options,
    )
    client = QdrantClient(path=str(qdrant_path))
    for storage in (rag.entities_vdb, rag.relationships_vdb, rag.chunks_vdb):
        storage._client = client
    return rag


def _env(redis_url: str | None = None) -> AbstractContextManager[None]:
    # LightRAG refuses to construct QdrantVectorDBStorage without QDRANT_URL; the client it would
    # open from it is never created (one is injected first), so the URL is never contacted.
    # QDRANT_WORKSPACE would override the workspace: it is unset for the duration.
    values = {"QDRANT_URL": "http://127.0.0.1:9"}
    if redis_url:
        values["REDIS_URI"] = redis_url
    return lightrag_env(values, unset=("QDRANT_WORKSPACE",))


async def init_lightrag_qdrant(rag: Any, redis_url: str | None = None) -> None:
    """``rag.initialize_storages()`` with LightRAG's connection variables set."""
    with _env(redis_url):
        await rag.initialize_storages()


async def write_lightrag_qdrant(
    dataset: Dataset,
    qdrant_path: str | Path,
    embedder: Any,
    *,
    working_dir: str | Path,
    workspace: str,
    redis_url: str | None = None,
    **options: Unpack[DeploymentOptions],
) -> None:
    """Write ``dataset`` through LightRAG's own Qdrant, KV (Json, or Redis at ``redis_url``)
    and NetworkX storage classes (``options``: :class:`DeploymentOptions`)."""
    rag = make_lightrag_qdrant(
        qdrant_path, embedder, working_dir=working_dir, workspace=workspace,
        redis_url=redis_url, **options,
    )
    await init_lightrag_qdrant(rag, redis_url)
    await write_then_finalize(rag, dataset)
