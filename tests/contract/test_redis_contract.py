"""RedisChunkStore and RedisCache against their contracts (and the end-to-end stack), on a
throwaway redis-server."""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.adapters.memory import MemoryGraphStore, MemoryVectorIndex
from hexrag.adapters.redis import RedisCache, RedisChunkStore, RedisDocumentStore
from hexrag.testing import (
    CacheContract,
    ChunkStoreContract,
    DocumentStoreContract,
    StackContract,
)
from tests.services.redis import redis_client, redis_server, redis_workspace  # noqa: F401

pytestmark = pytest.mark.backend("redis")


class TestRedisChunkStoreContract(ChunkStoreContract):
    """Every chunk store sentence, keys under a per-test workspace prefix."""

    @pytest.fixture
    def chunk_store(self, redis_client: Any, redis_workspace: str) -> RedisChunkStore:  # noqa: F811
        return RedisChunkStore(redis_client, workspace=redis_workspace)


class TestRedisCacheContract(CacheContract):
    """Every cache sentence; the other namespace shares the workspace and the server."""

    @pytest.fixture
    def cache(self, redis_client: Any, redis_workspace: str) -> RedisCache:  # noqa: F811
        return RedisCache(redis_client, workspace=redis_workspace)

    @pytest.fixture
    def other_namespace_cache(
        self,
        redis_client: Any,  # noqa: F811
        redis_workspace: str,  # noqa: F811
    ) -> RedisCache:
        return RedisCache(redis_client, workspace=redis_workspace, namespace="llm_response_cache2")


class TestRedisStack(StackContract):
    """The engine end to end with chunks in Redis (graph and vectors in memory)."""

    @pytest.fixture
    def stack(self, redis_client: Any, redis_workspace: str) -> dict[str, Any]:  # noqa: F811
        return {
            "entities": MemoryVectorIndex("entities", self.stack_dim, cosine_threshold=0.2),
            "relationships": MemoryVectorIndex(
                "relationships", self.stack_dim, cosine_threshold=0.2
            ),
            "chunks": MemoryVectorIndex("chunks", self.stack_dim, cosine_threshold=0.2),
            "graph": MemoryGraphStore(),
            "chunk_store": RedisChunkStore(redis_client, workspace=redis_workspace),
        }


class TestRedisDocumentStoreContract(DocumentStoreContract):
    """Every document-store sentence, keys under a per-test workspace prefix."""

    @pytest.fixture
    def document_store(
        self, redis_client: Any, redis_workspace: str  # noqa: F811
    ) -> RedisDocumentStore:
        return RedisDocumentStore(redis_client, workspace=redis_workspace)
