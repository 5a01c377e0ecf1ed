"""The PostgreSQL adapters against every contract, on a throwaway pgserver (PG 16 + pgvector).

Each test works in its own schema (dropped afterwards); each index the vector factory makes
gets its own table prefix inside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hexrag.adapters.postgres import (
    PgCache,
    PgChunkStore,
    PgDocumentStore,
    PgGraphStore,
    PgVectorIndex,
)
from hexrag.testing import (
    CacheContract,
    ChunkStoreContract,
    DocumentStoreContract,
    GraphStoreContract,
    StackContract,
    VectorIndexContract,
    VectorIndexFactory,
)
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

pytestmark = pytest.mark.backend("postgres")


class TestPgVectorIndexContract(VectorIndexContract):
    """Every vector-index sentence; one table per factory call."""

    @pytest.fixture
    def vector_index_factory(
        self,
        pg_pool: Any,  # noqa: F811
        pg_schema: str,  # noqa: F811
    ) -> Iterator[VectorIndexFactory]:
        made: list[PgVectorIndex] = []

        def make(namespace: str, dim: int, cosine_threshold: float) -> PgVectorIndex:
            index = PgVectorIndex(
                pg_pool,
                namespace=namespace,  # type: ignore[arg-type]
                dim=dim,
                cosine_threshold=cosine_threshold,
                schema=pg_schema,
                table_prefix=f"t{len(made)}",
            )
            made.append(index)
            return index

        yield make  # the tables go with the schema


class TestPgGraphStoreContract(GraphStoreContract):
    """Every graph-store sentence, nodes and edges tables in a per-test schema."""

    @pytest.fixture
    def graph_store(self, pg_pool: Any, pg_schema: str) -> PgGraphStore:  # noqa: F811
        return PgGraphStore(pg_pool, schema=pg_schema)


class TestPgChunkStoreContract(ChunkStoreContract):
    """Every chunk-store sentence."""

    @pytest.fixture
    def chunk_store(self, pg_pool: Any, pg_schema: str) -> PgChunkStore:  # noqa: F811
        return PgChunkStore(pg_pool, schema=pg_schema)


class TestPgCacheContract(CacheContract):
    """Every cache sentence; the other namespace shares the table."""

    @pytest.fixture
    def cache(self, pg_pool: Any, pg_schema: str) -> PgCache:  # noqa: F811
        return PgCache(pg_pool, schema=pg_schema)

    @pytest.fixture
    def other_namespace_cache(self, pg_pool: Any, pg_schema: str) -> PgCache:  # noqa: F811
        return PgCache(pg_pool, schema=pg_schema, namespace="llm_response_cache2")


class TestPgStackContract(StackContract):
    """Seed 001 end to end with every store on PostgreSQL."""

    @pytest.fixture
    def stack(self, pg_pool: Any, pg_schema: str) -> dict[str, Any]:  # noqa: F811
        def index(namespace: Any) -> PgVectorIndex:
            return PgVectorIndex(
                pg_pool,
                namespace=namespace,
                dim=self.stack_dim,
                cosine_threshold=0.2,
                schema=pg_schema,
            )

        return {
            "entities": index("entities"),
            "relationships": index("relationships"),
            "chunks": index("chunks"),
            "graph": PgGraphStore(pg_pool, schema=pg_schema),
            "chunk_store": PgChunkStore(pg_pool, schema=pg_schema),
        }


class TestPgDocumentStoreContract(DocumentStoreContract):
    """Every document-store sentence."""

    @pytest.fixture
    def document_store(self, pg_pool: Any, pg_schema: str) -> PgDocumentStore:  # noqa: F811
        return PgDocumentStore(pg_pool, schema=pg_schema)
