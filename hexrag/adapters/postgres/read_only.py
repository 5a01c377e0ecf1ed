"""Optional sections opened read-only on PostgreSQL: an absent table reads as empty.

``hexrag check``, ``documents`` and ``export`` open a stack read-only
(:attr:`hexrag.openings.OpeningContext.read_only`): they must create nothing. The core
sections (vectors, graph, chunks) must exist (a missing one is a wrong stack); the optional
ones (documents, the LLM cache, LightRAG's key-value namespaces kept in hexrag's cache table)
may never have been written, and then read as empty instead of being created.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres._sql import TableNames

if TYPE_CHECKING:
    import asyncpg

__all__ = ["missing_tables"]


async def missing_tables(
    pool: asyncpg.Pool, *, schema: str | None, table_prefix: str, suffixes: Sequence[str],
    timeout: float | None = None,
) -> list[str]:
    """The suffixes of ``[schema.]<table_prefix>_<suffix>`` relations that do not exist (one
    statement; names passed to ``to_regclass`` as parameters)."""
    names = TableNames(schema=schema, table_prefix=table_prefix)
    wanted = [names.regclass_text(s) for s in suffixes]
    with translate_errors(f"looking for the tables {table_prefix}_*"):
        found = await pool.fetch(
            "SELECT n, to_regclass(n) IS NOT NULL AS present FROM unnest($1::text[]) AS n",
            wanted, timeout=timeout)
    present = {r["n"]: r["present"] for r in found}
    return [s for s, n in zip(suffixes, wanted, strict=True) if not present.get(n)]
