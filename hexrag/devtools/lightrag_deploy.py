"""What the LightRAG deployment writers (:mod:`hexrag.devtools.lightrag_pg`,
:mod:`~hexrag.devtools.lightrag_milvus`, :mod:`~hexrag.devtools.lightrag_qdrant`) share: the
environment LightRAG reads its connection settings from, the ``LightRAG`` instance every parity
deployment is built with, and writing a dataset through it. Needs the ``parity`` extra
(lightrag-hku 1.5.7).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from hexrag.devtools.lightrag_data import Dataset, write_lightrag_records
from hexrag.devtools.lightrag_data.lightrag_side import new_lightrag

__all__ = [
    "MODEL_NAME",
    "lightrag_env",
    "lightrag_storages",
    "new_lightrag",
    "workdir_storages",
    "write_then_finalize",
]

MODEL_NAME = "hashemb_v1"
"""The embedding model name every parity deployment is written with (PostgreSQL tables and
vector collections get ``_hashemb_v1_<dim>d``)."""


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


def lightrag_storages(
    *, kv: str, vector: str, graph: str, doc_status: str
) -> dict[str, str]:
    """LightRAG's four storage-class arguments (``kv_storage``, ``vector_storage``,
    ``graph_storage``, ``doc_status_storage``, in that order) naming the given classes: the
    ``storages`` of :func:`new_lightrag`."""
    return {
        "kv_storage": kv,
        "vector_storage": vector,
        "graph_storage": graph,
        "doc_status_storage": doc_status,
    }


def workdir_storages(vector_storage: str, kv_storage: str = "JsonKVStorage") -> dict[str, str]:
    """LightRAG's storage classes for a deployment whose graph and document status stay in the
    working directory (``NetworkXStorage``, ``JsonDocStatusStorage``), with its vectors in
    ``vector_storage`` and its key-value stores in ``kv_storage``."""
    return lightrag_storages(kv=kv_storage, vector=vector_storage, graph="NetworkXStorage",
                             doc_status="JsonDocStatusStorage")


async def write_then_finalize(rag: Any, dataset: Dataset) -> None:
    """Write ``dataset`` through an initialised ``rag``, then ``finalize_storages()`` (also on
    failure)."""
    try:
        await write_lightrag_records(rag, dataset)
    finally:
        await rag.finalize_storages()
