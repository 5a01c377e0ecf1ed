"""What the memory adapters open: every section of a stack, in the process (``memory``)."""

from __future__ import annotations

from typing import Any

from hexrag.openings import Opening, OpeningContext, Section

__all__ = ["OPENING"]

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
