"""Qdrant adapters (extra ``hexrag[qdrant]``: qdrant-client, which also runs Qdrant embedded).

:class:`QdrantVectorIndex` implements :class:`hexrag.ports.VectorIndex` on one collection, in
hexrag's layout or LightRAG 1.5.7's (:mod:`hexrag.adapters.qdrant.layouts`)::

    client = connect("/srv/qdrant")                  # embedded: a directory, no server
    client = connect("http://qdrant:6333")           # a server
    index = QdrantVectorIndex(client, collection="kb_entities", namespace="entities", dim=1024)

Stacks name it ``vector_index = "qdrant:///abs/dir"`` (embedded) or ``"qdrant://host:6333"``
(a server); :func:`open_qdrant_indexes` opens the three indexes of a stack on one client
(embedded Qdrant allows one client per directory). qdrant-client is imported lazily.
"""

from __future__ import annotations

from typing import Any, Literal

from hexrag.adapters.qdrant.index import QdrantVectorIndex, connect
from hexrag.adapters.qdrant.layouts import (
    HexragLayout,
    LightRAGLayout,
    QdrantLayout,
    lightrag_collection_name,
    lightrag_point_id,
)

__all__ = [
    "HexragLayout",
    "LightRAGLayout",
    "QdrantLayout",
    "QdrantVectorIndex",
    "connect",
    "lightrag_collection_name",
    "lightrag_point_id",
    "open_qdrant_indexes",
]

_NAMES = ("entities", "relationships", "chunks")


def open_qdrant_indexes(
    url: str,
    *,
    dim: int,
    cosine_threshold: float = 0.2,
    layout: Literal["hexrag", "lightrag"] = "hexrag",
    prefix: str = "hexrag",
    workspace: str = "",
    model_name: str | None = None,
    api_key: str | None = None,
) -> tuple[dict[str, QdrantVectorIndex], Any]:
    """The entities / relationships / chunks indexes at ``url`` (see :func:`connect`) and the
    one client they share (close it when done).

    hexrag's layout names collections ``<prefix>_<namespace>``; LightRAG's reads and writes
    ``lightrag_vdb_<namespace>[_<model>_<dim>d]``, workspace ``workspace``.
    """
    client = connect(url, api_key=api_key)
    out: dict[str, QdrantVectorIndex] = {}
    for name in _NAMES:
        if layout == "lightrag":
            chosen: QdrantLayout = LightRAGLayout(name, workspace)
            collection = lightrag_collection_name(name, model_name=model_name, dim=dim)
        else:
            chosen = HexragLayout(name)
            collection = f"{prefix}_{name}"
        out[name] = QdrantVectorIndex(
            client, collection=collection, namespace=name, dim=dim,  # type: ignore[arg-type]
            cosine_threshold=cosine_threshold, layout=chosen, where=url,
        )
    return out, client
