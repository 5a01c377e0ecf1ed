"""What the LightRAG deployment writers (:mod:`hexrag.devtools.lightrag_pg`,
:mod:`~hexrag.devtools.lightrag_milvus`, :mod:`~hexrag.devtools.lightrag_qdrant`) share: the
environment LightRAG reads its connection settings from, the ``LightRAG`` instance every parity
deployment is built with, and writing a dataset through it. Needs the ``parity`` extra
(lightrag-hku 1.5.7).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
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

__all__ = ["lightrag_env", "new_lightrag", "write_then_finalize"]


@contextmanager
def lightrag_env(values: Mapping[str, str], unset: Iterable[str] = ()) -> Iterator[None]:
    """Set ``values`` and remove the ``unset`` variables of ``os.environ`` for the duration;
    every variable named is restored afterwards (removed again if it was absent)."""
    unset = tuple(unset)
    old = {k: os.environ.get(k) for k in (*values, *unset)}
    os.environ.update(values)
    for k in unset:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def new_lightrag(
    embedder: Any,
    *,
    env: AbstractContextManager[None],
    working_dir: str | Path,
    workspace: str,
    kg_chunk_pick_method: str,
    cosine_threshold: float,
    model_name: str,
    storages: Mapping[str, str],
) -> Any:
    """A ``LightRAG`` (not initialised) with the parity settings and ``storages``, constructed
    inside ``env`` (LightRAG's storage classes read their connection variables then)."""
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()
    with env:
        return LightRAG(
            working_dir=str(working_dir),
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
            **storages,
        )


async def write_then_finalize(rag: Any, dataset: Dataset) -> None:
    """Write ``dataset`` through an initialised ``rag``, then ``finalize_storages()`` (also on
    failure)."""
    try:
        await write_lightrag_records(rag, dataset)
    finally:
        await rag.finalize_storages()
