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

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hexrag.devtools.lightrag_data import (
    Dataset,
    _no_llm,
    _quiet_lightrag,
    lightrag_embedding_func,
    register_offline_tiktoken,
    write_lightrag_records,
)

__all__ = ["MODEL_NAME", "init_lightrag_qdrant", "make_lightrag_qdrant", "write_lightrag_qdrant"]

MODEL_NAME = "hashemb_v1"
"""The embedding model name (collections get ``_hashemb_v1_<dim>d``)."""

STORAGES = {
    "kv_storage": "JsonKVStorage",
    "vector_storage": "QdrantVectorDBStorage",
    "graph_storage": "NetworkXStorage",
    "doc_status_storage": "JsonDocStatusStorage",
}


def make_lightrag_qdrant(
    qdrant_path: str | Path,
    embedder: Any,
    *,
    working_dir: str | Path,
    workspace: str,
    kg_chunk_pick_method: str = "WEIGHT",
    cosine_threshold: float = 0.2,
    model_name: str = MODEL_NAME,
    redis_url: str | None = None,
) -> Any:
    """A ``LightRAG`` on embedded Qdrant at ``qdrant_path`` + its working directory (KV in
    ``RedisKVStorage`` at ``redis_url`` when given), its three vector storages sharing one
    ``QdrantClient(path=...)``; initialise it with :func:`init_lightrag_qdrant`."""
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer
    from qdrant_client import QdrantClient

    _quiet_lightrag()
    storages = dict(STORAGES, kv_storage="RedisKVStorage") if redis_url else STORAGES
    with _env(redis_url):
        rag = _lightrag(LightRAG, TiktokenTokenizer, embedder, working_dir, workspace,
                        kg_chunk_pick_method, cosine_threshold, model_name, storages)
    client = QdrantClient(path=str(qdrant_path))
    for storage in (rag.entities_vdb, rag.relationships_vdb, rag.chunks_vdb):
        storage._client = client
    return rag


@contextmanager
def _env(redis_url: str | None = None) -> Iterator[None]:
    # LightRAG refuses to construct QdrantVectorDBStorage without QDRANT_URL; the client it would
    # open from it is never created (one is injected first), so the URL is never contacted.
    # QDRANT_WORKSPACE would override the workspace: it is unset for the duration.
    old = {k: os.environ.get(k) for k in ("QDRANT_URL", "QDRANT_WORKSPACE", "REDIS_URI")}
    os.environ["QDRANT_URL"] = "http://127.0.0.1:9"
    os.environ.pop("QDRANT_WORKSPACE", None)
    if redis_url:
        os.environ["REDIS_URI"] = redis_url
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _lightrag(
    lightrag_cls: Any, tokenizer_cls: Any, embedder: Any, working_dir: str | Path,
    workspace: str, kg_chunk_pick_method: str, cosine_threshold: float, model_name: str,
    storages: dict[str, str],
) -> Any:
    return lightrag_cls(
        working_dir=str(working_dir),
        workspace=workspace,
        embedding_func=lightrag_embedding_func(embedder, model_name=model_name),
        llm_model_func=_no_llm,
        tokenizer=tokenizer_cls("gpt-4o-mini"),
        kg_chunk_pick_method=kg_chunk_pick_method,
        related_chunk_number=5,
        enable_content_headings=True,
        cosine_better_than_threshold=cosine_threshold,
        vector_db_storage_cls_kwargs={"cosine_better_than_threshold": cosine_threshold},
        min_rerank_score=0.0,
        user_prompt_prefix="",
        enable_llm_cache=True,
        rerank_model_func=None,
        **storages,
    )


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
    model_name: str = MODEL_NAME,
    redis_url: str | None = None,
) -> None:
    """Write ``dataset`` through LightRAG's own Qdrant, KV (Json, or Redis at ``redis_url``)
    and NetworkX storage classes."""
    rag = make_lightrag_qdrant(
        qdrant_path, embedder, working_dir=working_dir, workspace=workspace,
        model_name=model_name, redis_url=redis_url,
    )
    await init_lightrag_qdrant(rag, redis_url)
    try:
        await write_lightrag_records(rag, dataset)
    finally:
        await rag.finalize_storages()
