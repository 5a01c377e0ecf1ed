"""The memory adapters opt in to the full contract suite."""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.adapters.memory import (
    FakeLLM,
    FakeReranker,
    HashingEmbedder,
    MemoryCache,
    MemoryChunkStore,
    MemoryDocumentStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.workdir.row_vectors import NanoRowVectorIndex
from hexrag.testing import (
    CacheContract,
    ChunkStoreContract,
    DocumentStoreContract,
    EmbedderContract,
    GraphStoreContract,
    LLMContract,
    RerankerContract,
    StackContract,
    VectorIndexContract,
    VectorIndexFactory,
)


class TestMemoryVectorIndex(VectorIndexContract):
    @pytest.fixture
    def vector_index_factory(self) -> VectorIndexFactory:
        def make(namespace: str, dim: int, cosine_threshold: float) -> MemoryVectorIndex:
            return MemoryVectorIndex(namespace, dim, cosine_threshold=cosine_threshold)

        return make


class TestMemoryVectorIndexNanoVectorDBOrder(VectorIndexContract):
    """``tie_order="nanovectordb"`` (a LightRAG working directory's order): declared
    ``ties="backend"``, everything else the port's."""

    @pytest.fixture
    def vector_index_factory(self) -> VectorIndexFactory:
        def make(namespace: str, dim: int, cosine_threshold: float) -> MemoryVectorIndex:
            return MemoryVectorIndex(namespace, dim, cosine_threshold=cosine_threshold,
                                     tie_order="nanovectordb")

        return make


class TestNanoRowVectorIndex(VectorIndexContract):
    """The workdir stack's chunks index (float16 row vectors beside the normalised matrix)."""

    @pytest.fixture
    def vector_index_factory(self) -> VectorIndexFactory:
        def make(namespace: str, dim: int, cosine_threshold: float) -> NanoRowVectorIndex:
            return NanoRowVectorIndex(namespace, dim, cosine_threshold=cosine_threshold)

        return make


class TestMemoryGraphStore(GraphStoreContract):
    @pytest.fixture
    def graph_store(self) -> MemoryGraphStore:
        return MemoryGraphStore()


class TestMemoryChunkStore(ChunkStoreContract):
    @pytest.fixture
    def chunk_store(self) -> MemoryChunkStore:
        return MemoryChunkStore()


class TestMemoryCache(CacheContract):
    @pytest.fixture
    def cache(self) -> MemoryCache:
        return MemoryCache()

    @pytest.fixture
    def other_namespace_cache(self) -> MemoryCache:
        return MemoryCache("other_namespace")


class TestHashingEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> HashingEmbedder:
        return HashingEmbedder(dim=64)


class TestFakeReranker(RerankerContract):
    @pytest.fixture
    def reranker(self) -> FakeReranker:
        return FakeReranker()


class TestFakeLLM(LLMContract):
    deterministic = True

    @pytest.fixture
    def llm(self) -> FakeLLM:
        return FakeLLM()


class TestMemoryStack(StackContract):
    @pytest.fixture
    def stack(self) -> dict[str, Any]:
        return {
            "entities": MemoryVectorIndex("entities", self.stack_dim),
            "relationships": MemoryVectorIndex("relationships", self.stack_dim),
            "chunks": MemoryVectorIndex("chunks", self.stack_dim),
            "graph": MemoryGraphStore(),
            "chunk_store": MemoryChunkStore(),
        }


class TestMemoryDocumentStore(DocumentStoreContract):
    @pytest.fixture
    def document_store(self) -> MemoryDocumentStore:
        return MemoryDocumentStore()
