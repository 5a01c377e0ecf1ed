"""In-memory adapters: real implementations of every port, used by tests, demos and the
LightRAG working-directory loader. No I/O; numpy and networkx, plus simsimd's int8 kernel for
the vector index's exact prefilter (:mod:`hexrag.adapters.memory.prefilter`; optional)."""

from __future__ import annotations

from hexrag.adapters.memory.cache import MemoryCache
from hexrag.adapters.memory.chunk_store import MemoryChunkStore
from hexrag.adapters.memory.document_store import MemoryDocumentStore
from hexrag.adapters.memory.graph_store import MemoryGraphStore
from hexrag.adapters.memory.models import (
    FakeLLM,
    FakeReranker,
    HashingEmbedder,
    LLMCall,
    RerankCall,
    default_answer,
    default_keywords,
)
from hexrag.adapters.memory.vector_index import MemoryVectorIndex

__all__ = [
    "FakeLLM",
    "FakeReranker",
    "HashingEmbedder",
    "LLMCall",
    "MemoryCache",
    "MemoryChunkStore",
    "MemoryDocumentStore",
    "MemoryGraphStore",
    "MemoryVectorIndex",
    "RerankCall",
    "default_answer",
    "default_keywords",
]
