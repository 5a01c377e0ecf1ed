"""What the memory adapters open: every section of a stack, in the process (``memory``), and
the deterministic feature-hashing embedder (``hashing[:DIM]``)."""

from __future__ import annotations

from typing import Any

from hexrag.domain.errors import ConfigurationError
from hexrag.model_openings import ModelContext, ModelOpening
from hexrag.openings import Opening, OpeningContext, Section

__all__ = ["MODELS", "OPENING"]

_NAMESPACES = ("entities", "relationships", "chunks")


async def open_memory(ctx: OpeningContext, section: Section, url: str | None) -> Any:
    """A fresh, empty memory store for ``section``."""
    from hexrag.adapters import memory

    if section == "vectors":
        return {name: memory.MemoryVectorIndex(name, ctx.dim,
                                               cosine_threshold=ctx.cosine_threshold)
                for name in _NAMESPACES}
    if section == "graph":
        return memory.MemoryGraphStore()
    if section == "chunks":
        return memory.MemoryChunkStore()
    if section == "documents":
        return memory.MemoryDocumentStore()
    if section == "llm_cache":
        return memory.MemoryCache()
    if section == "kv":
        from hexrag.ports.cache import KV_NAMESPACES

        return {ns: memory.MemoryCache(ns) for ns in KV_NAMESPACES}
    from hexrag.adapters.memory.manifest import MemoryManifestStore

    return MemoryManifestStore()


OPENING = Opening(
    kind="memory",
    schemes=("memory",),
    roles=("vector_index", "graph_store", "chunk_store", "cache"),
    sections={
        "hexrag": ("vectors", "graph", "chunks", "documents", "kv", "manifest", "llm_cache"),
        "lightrag": ("llm_cache",),
    },
    open=open_memory,
    examples={role: "memory" for role in ("vector_index", "graph_store", "chunk_store",
                                          "cache")},
)


#: ``HashingEmbedder``'s model name.
HASHING_MODEL = "hexrag-hashing"


def open_hashing(ctx: ModelContext, spec: str) -> Any:
    """``hashing`` (384 dimensions, or the configured ones) or ``hashing:DIM``."""
    from hexrag.adapters.memory import HashingEmbedder

    rest = spec.partition(":")[2].strip()
    size = ctx.dim if ctx.dim is not None else 384
    if rest:
        try:
            size = int(rest)
        except ValueError:
            raise ConfigurationError(
                f"bad embedder spec {spec!r}: expected hashing or hashing:DIM "
                "(DIM a positive integer)"
            ) from None
        if size <= 0:
            raise ConfigurationError(f"bad embedder spec {spec!r}: DIM must be positive")
    return HashingEmbedder(dim=size)


MODELS = (
    ModelOpening(
        kind="embedder", name="hashing", open=open_hashing, syntax="hashing[:DIM]",
        model_names=(HASHING_MODEL,), sized=lambda dim: f"hashing:{dim}",
        spec_of=lambda model: f"hashing:{model.dim}",
    ),
)
