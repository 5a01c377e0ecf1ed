"""The ports: what the core needs from the outside world, as ``typing.Protocol`` classes."""

from hexrag.ports.bulk import BulkLoads, ExactSearchSwitch
from hexrag.ports.cache import Cache
from hexrag.ports.chunk_store import ChunkStore
from hexrag.ports.documents import DocumentStore, FragmentReader
from hexrag.ports.embedder import Embedder
from hexrag.ports.graph_store import GraphStore
from hexrag.ports.llm import LLM
from hexrag.ports.reranker import Reranker
from hexrag.ports.scan import Page, ScansCache, ScansChunks, ScansGraph, ScansVectorIndex
from hexrag.ports.vector_index import ScoresIds, VectorIndex

__all__ = [
    "LLM",
    "BulkLoads",
    "Cache",
    "ChunkStore",
    "DocumentStore",
    "Embedder",
    "ExactSearchSwitch",
    "FragmentReader",
    "GraphStore",
    "Page",
    "Reranker",
    "ScansCache",
    "ScansChunks",
    "ScansGraph",
    "ScansVectorIndex",
    "ScoresIds",
    "VectorIndex",
]
