"""hexrag's adapters on LightRAG 1.5.7's own Milvus and Redis layouts against the shared
contracts (Milvus Lite, redis-server). Each test works in a fresh LightRAG *workspace*; the
Milvus collections are created with LightRAG's schema by the adapter (the parity suite,
``tests/integration/test_lightrag_milvus_redis_parity.py``, reads collections LightRAG itself
created). The vector index declares where LightRAG's layout departs from the port
(:class:`~hexrag.ports.vector_index.VectorIndexTraits`: Milvus' strict range search and its
order among ties, each collection's own fields, ``created_at`` stamped, ``source_id`` joined)
and the contract checks what it declares. The Redis chunk store and cache declare the
bookkeeping keys ``RedisKVStorage`` stamps into every record (``ChunkStoreTraits`` /
``CacheTraits``): the contract checks they are read back and the rest is as written.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from hexrag.testing import CacheContract, ChunkStoreContract, VectorIndexContract
from tests.services.milvus import shared_milvus
from tests.services.redis import redis_client, redis_server  # noqa: F401

pytestmark = [pytest.mark.backend("milvus"), pytest.mark.backend("redis")]

def _workspace() -> str:
    return "ct" + uuid.uuid4().hex[:12]


class TestLightRAGMilvusVectorIndexContract(VectorIndexContract):
    """``<ws>_<namespace>_contract_<dim>d`` collections, one workspace per index."""


    @pytest.fixture
    def vector_index_factory(self) -> Iterator[Any]:
        from hexrag.adapters.milvus.lightrag_layout import LightRAGMilvusVectorIndex

        _, client = shared_milvus()
        made: list[Any] = []

        def make(namespace: str, dim: int, cosine_threshold: float) -> Any:
            index = LightRAGMilvusVectorIndex.open(
                client, namespace=namespace, dim=dim, workspace=_workspace(),  # type: ignore[arg-type]
                model_name="contract", cosine_threshold=cosine_threshold,
            )
            made.append(index)
            return index

        yield make
        for index in made:
            if client.has_collection(index.collection):
                client.drop_collection(index.collection)


@pytest.fixture
async def lightrag_workspace(redis_client: Any) -> AsyncIterator[str]:  # noqa: F811
    ws = _workspace()
    yield ws
    keys = [k async for k in redis_client.scan_iter(match=f"{ws}_*", count=1000)]
    if keys:
        await redis_client.delete(*keys)


class TestLightRAGRedisChunkStoreContract(ChunkStoreContract):
    """``<ws>_text_chunks:<id>`` keys."""

    @pytest.fixture
    def chunk_store(self, redis_client: Any, lightrag_workspace: str) -> Any:  # noqa: F811
        from hexrag.adapters.redis.lightrag_layout import LightRAGRedisChunkStore

        return LightRAGRedisChunkStore(redis_client, workspace=lightrag_workspace)


class TestLightRAGRedisCacheContract(CacheContract):
    """``<ws>_llm_response_cache:<key>`` keys; the other namespace is another workspace."""

    @pytest.fixture
    def cache(self, redis_client: Any, lightrag_workspace: str) -> Any:  # noqa: F811
        from hexrag.adapters.redis.lightrag_layout import LightRAGRedisCache

        return LightRAGRedisCache(redis_client, workspace=lightrag_workspace)

    @pytest.fixture
    def other_namespace_cache(self, redis_client: Any, lightrag_workspace: str) -> Any:  # noqa: F811
        from hexrag.adapters.redis.lightrag_layout import LightRAGRedisCache

        return LightRAGRedisCache(redis_client, workspace=lightrag_workspace + "x")

