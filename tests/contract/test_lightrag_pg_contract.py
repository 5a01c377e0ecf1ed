"""hexrag's adapters on LightRAG 1.5.7's own PostgreSQL layout against the shared contracts.

The tables are created once by LightRAG's own storage classes (``initialize_storages`` with a
16- and a 12-dimensional ``EmbeddingFunc`` named ``contract``); each test works in a fresh
LightRAG *workspace*. The vector index declares where LightRAG's layout departs from the port
(:class:`~hexrag.ports.vector_index.VectorIndexTraits`: the strict threshold, pgvector's order
among ties, each table's own columns, ``source_id`` as ``chunk_ids``), and the contract checks
what it declares. The graph and chunk stores declare theirs too
(:class:`~hexrag.ports.graph_store.GraphStoreTraits`: one edge per entity pair under the
pair's id, stored ``src < tgt``, neighbours ordered by name, ``<SEP>``-split ``source_id``;
:class:`~hexrag.ports.chunk_store.ChunkStoreTraits`: fixed columns, no caller metadata,
``llm_cache_list`` and the times stamped).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hexrag.devtools.lightrag_data import require_lightrag
from hexrag.testing import ChunkStoreContract, GraphStoreContract, VectorIndexContract
from tests.services.postgres import pg_dsn, pg_pool  # noqa: F401

pytestmark = [pytest.mark.backend("postgres"), pytest.mark.parity]

require_lightrag()

MODEL = "contract"
_READY: set[str] = set()


def _lightrag_tables(dsn: str) -> None:
    """LightRAG creates its tables (once per test session)."""
    if dsn in _READY:
        return
    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg

    async def create(dim: int) -> None:
        rag = make_lightrag_pg(dsn, HashingEmbedder(dim), workspace="contract_init",
                               model_name=MODEL)
        await init_lightrag_pg(rag, dsn)
        await rag.finalize_storages()

    for dim in (12, 16):
        asyncio.run(create(dim))
    _READY.add(dsn)


def _workspace() -> str:
    return "ct_" + uuid.uuid4().hex[:12]


class TestLightRAGPgVectorIndexContract(VectorIndexContract):
    """The vector tables (``lightrag_vdb_*_contract_<dim>d``), one workspace per index; the
    index's declared traits say what LightRAG's layout keeps and how it ranks."""

    run_property_tests = False  # LightRAG created tables of dims 12 and 16 only (the test uses 8)

    @pytest.fixture
    def vector_index_factory(self, pg_dsn: str, pg_pool: Any) -> Iterator[Any]:  # noqa: F811
        from hexrag.adapters.postgres.lightrag_layout import LightRAGPgVectorIndex

        _lightrag_tables(pg_dsn)

        def make(namespace: str, dim: int, cosine_threshold: float) -> Any:
            return LightRAGPgVectorIndex(
                pg_pool, namespace=namespace, dim=dim, workspace=_workspace(),  # type: ignore[arg-type]
                model_name=MODEL, cosine_threshold=cosine_threshold,
            )

        yield make


class TestLightRAGPgGraphStoreContract(GraphStoreContract):
    """``lightrag_graph_nodes`` / ``lightrag_graph_edges``, one workspace per test."""

    group_survives_partial_delete = False

    @pytest.fixture
    def graph_store(self, pg_dsn: str, pg_pool: Any) -> Any:  # noqa: F811
        from hexrag.adapters.postgres.lightrag_layout import LightRAGPgGraphStore

        _lightrag_tables(pg_dsn)
        return LightRAGPgGraphStore(pg_pool, workspace=_workspace())


class TestLightRAGPgChunkStoreContract(ChunkStoreContract):
    """``lightrag_doc_chunks``, one workspace per test."""

    @pytest.fixture
    def chunk_store(self, pg_dsn: str, pg_pool: Any) -> Any:  # noqa: F811
        from hexrag.adapters.postgres.lightrag_layout import LightRAGPgChunkStore

        _lightrag_tables(pg_dsn)
        return LightRAGPgChunkStore(pg_pool, workspace=_workspace())

