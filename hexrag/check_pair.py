"""``hexrag check A --against B``: does stack B hold exactly what stack A holds?

Both stacks are opened read-only (:func:`hexrag.bootstrap.open_stack`), and compared by
:func:`hexrag.transfer.migrate.verify_migration`: per-section digests (counts and content
checksums, vectors by their float32 bytes) and golden queries made from A's records, searched
exactly on both sides and compared tie-aware. The same deterministic query embedder is used
on both sides (:class:`~hexrag.adapters.memory.HashingEmbedder` of the stacks' dimension),
so no model and no LLM key is needed; answers are computed, never read from a cache.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["check_against"]


async def check_against(
    first: Path,
    second: Path,
    *,
    workspace: str | None = None,
    second_workspace: str | None = None,
    queries: int = 4,
    page_size: int = 1000,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The :func:`~hexrag.transfer.migrate.verify_migration` report of ``second`` against
    ``first`` (``ok`` only when every section and every golden query agrees)."""
    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.bootstrap import compose_engine, open_stack
    from hexrag.core.errors import ConfigurationError
    from hexrag.transfer.migrate import sample_queries, verify_migration

    a = await open_stack(first, progress=progress, workspace=workspace, read_only=True)
    try:
        b = await open_stack(second, progress=progress,
                             workspace=second_workspace or workspace, read_only=True)
        try:
            if a.dim != b.dim:
                raise ConfigurationError(
                    f"{first} stores {a.dim}-dimensional vectors, {second} {b.dim}: "
                    "they cannot hold the same records"
                )
            probe = HashingEmbedder(a.dim)
            engines = [compose_engine(s, embedder=probe, store_cache=False)
                       for s in (a.stores, b.stores)]
            sample = await sample_queries(a.stores, queries) if queries else []
            return await verify_migration(a.stores, b.stores, engines[0], engines[1],
                                          queries=sample, page_size=page_size)
        finally:
            await b.aclose()
    finally:
        await a.aclose()
