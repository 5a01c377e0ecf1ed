"""LightRAG 1.5.7's own PostgreSQL layout, read in place (no copying).

A LightRAG deployment on PostgreSQL (``PGVectorStorage``, ``PGKVStorage``,
``PGTableGraphStorage``) keeps, per ``workspace`` column:

=============================================  ==============================================
table                                          content
=============================================  ==============================================
``lightrag_vdb_entity[_<model>_<dim>d]``       entity vectors: ``id``, ``entity_name``,
                                               ``content``, ``content_vector``, ``chunk_ids``
                                               (``varchar[]``), ``file_path``, ``create_time``
``lightrag_vdb_relation[_<model>_<dim>d]``     relation vectors: ``source_id``/``target_id``
                                               (the entity names), the same other columns
``lightrag_vdb_chunks[_<model>_<dim>d]``       chunk vectors: ``full_doc_id``, ``content``...
``lightrag_doc_chunks``                        the text chunks (``heading`` JSONB, ...)
``lightrag_graph_nodes`` / ``_edges``          the graph: ``id`` / ``src_id``, ``tgt_id``
                                               (one edge per pair, ``src_id < tgt_id``) and a
                                               JSONB ``properties``
=============================================  ==============================================

The model suffix is LightRAG's (``re.sub('[^a-zA-Z0-9_]', '_', model_name.lower())`` +
``_<dim>d``); pass ``model_name`` as LightRAG's ``EmbeddingFunc`` had it (``None`` for the
un-suffixed tables). Searches run **LightRAG's own SQL** (``content_vector <=> $q < 1 -
threshold ORDER BY content_vector <=> $q LIMIT top_k``: the strict threshold, pgvector's order,
the same plan), so hits, order and ties are LightRAG's. Graph reads return edges in LightRAG's
order (neighbours sorted by name, as ``PGTableGraphStorage.get_nodes_edges_batch`` sorts them);
a relation's id is :func:`hexrag.core.ingest.ids.relation_id` of its pair, LightRAG's
relationship-vector id. Scope (hexrag's addition) is read from ``file_path``: a scoped search
widens its LightRAG query until ``top_k`` admitted rows are found or the rows run out.

Writes use LightRAG's own statements (its upsert templates, canonical ``src < tgt`` edges,
merged endpoint nodes), so LightRAG 1.5.7 reads what hexrag writes: a migration target may be a
LightRAG deployment. The tables must exist (LightRAG creates them when it initialises its
storages). The graph holds one edge per entity pair: several relations of one pair collapse to
the last one written, as in LightRAG.

One module per adapter: :mod:`~hexrag.adapters.postgres.lightrag_vector_index`,
:mod:`~hexrag.adapters.postgres.lightrag_chunk_store`,
:mod:`~hexrag.adapters.postgres.lightrag_graph_store` and
:mod:`~hexrag.adapters.postgres.lightrag_cache`, on the shared base in
:mod:`~hexrag.adapters.postgres.lightrag_base`; this module names them all and opens a
deployment's stores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hexrag.adapters.postgres.lightrag_cache import LightRAGPgCache
from hexrag.adapters.postgres.lightrag_chunk_store import LightRAGPgChunkStore, chunk_from_kv
from hexrag.adapters.postgres.lightrag_graph_store import LightRAGPgGraphStore, node_to_entity
from hexrag.adapters.postgres.lightrag_vector_index import (
    LightRAGPgVectorIndex,
    lightrag_vector_table,
)

if TYPE_CHECKING:
    import asyncpg

__all__ = [
    "LightRAGPgCache",
    "LightRAGPgChunkStore",
    "LightRAGPgGraphStore",
    "LightRAGPgVectorIndex",
    "chunk_from_kv",
    "lightrag_vector_table",
    "node_to_entity",
    "open_lightrag_pg_cache",
    "open_lightrag_pg_stores",
]


def open_lightrag_pg_stores(
    pool: asyncpg.Pool,
    *,
    workspace: str,
    embedding_dim: int,
    model_name: str | None,
    cosine_threshold: float = 0.2,
    timeout: float | None = None,
) -> dict[str, Any]:
    """The stores of a LightRAG PostgreSQL deployment: ``entities``, ``relationships``,
    ``chunks``, ``graph`` and ``chunk_store`` (keyword arguments of ``QueryEngine``)."""
    vec: dict[str, Any] = {
        ns: LightRAGPgVectorIndex(
            pool,
            namespace=ns,  # type: ignore[arg-type]
            dim=embedding_dim,
            workspace=workspace,
            model_name=model_name,
            cosine_threshold=cosine_threshold,
            timeout=timeout,
        )
        for ns in ("entities", "relationships", "chunks")
    }
    return {
        **vec,
        "graph": LightRAGPgGraphStore(pool, workspace=workspace, timeout=timeout),
        "chunk_store": LightRAGPgChunkStore(pool, workspace=workspace, timeout=timeout),
    }


def open_lightrag_pg_cache(
    pool: asyncpg.Pool, *, workspace: str, timeout: float | None = None
) -> LightRAGPgCache:
    """The LLM response cache of a LightRAG PostgreSQL deployment."""
    return LightRAGPgCache(pool, workspace=workspace, timeout=timeout)
