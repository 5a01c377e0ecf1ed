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
from typing import Any, TypedDict, Unpack

from hexrag.devtools.lightrag_data import Dataset, write_lightrag_records
from hexrag.devtools.lightrag_data.lightrag_side import new_lightrag

__all__ = [
    "MODEL_NAME",
    "DeploymentOptions",
    "lightrag_env",
    "lightrag_storages",
    "new_deployment",
    "new_lightrag",
    "workdir_storages",
    "write_then_finalize",
]

MODEL_NAME = "hashemb_v1"
"""The embedding model name every parity deployment is written with (PostgreSQL tables and
vector collections get ``_hashemb_v1_<dim>d``)."""


class DeploymentOptions(TypedDict, total=False):
    """The options every deployment's ``make_lightrag_*`` takes besides its connection, the
    embedder, the working directory and the workspace; one left out takes its default
    (:func:`new_deployment`)."""

    #: LightRAG's ``kg_chunk_pick_method`` (default ``"WEIGHT"``).
    kg_chunk_pick_method: str
    #: LightRAG's ``cosine_better_than_threshold`` (default ``0.2``).
    cosine_threshold: float
    #: The embedding model name the deployment is written with (default :data:`MODEL_NAME`).
    model_name: str


def new_deployment(
    embedder: Any,
    *,
    env: AbstractContextManager[Any],
    storages: Mapping[str, str],
    working_dir: str | Path,
    workspace: str,
    **options: Unpack[DeploymentOptions],
) -> Any:
    """A ``LightRAG`` deployment (not initialised): :func:`new_lightrag` on ``storages``,
    constructed inside ``env``, with the :class:`DeploymentOptions` given and the defaults
    for the others."""
    return new_lightrag(
        embedder, env=env, working_dir=working_dir, workspace=workspace, storages=storages,
        kg_chunk_pick_method=options.get("kg_chunk_pick_method", "WEIGHT"),
        cosine_threshold=options.get("cosine_threshold", 0.2),
        model_name=options.get("model_name", MODEL_NAME),
    )


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
