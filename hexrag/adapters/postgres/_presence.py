"""The one-statement "chunks and presence" read both PostgreSQL chunk layouts share."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from hexrag.domain.records import Chunk

__all__ = ["chunks_with_presence"]


async def chunks_with_presence(
    ids: Sequence[str],
    probe: Sequence[str],
    fetch: Callable[[list[str], list[str]], Awaitable[Sequence[Any]]],
    to_chunk: Callable[[Any], Chunk],
) -> tuple[list[Chunk | None], set[str]]:
    """:meth:`~hexrag.ports.chunk_presence.ChunksWithPresence.get_chunks_and_presence` around
    one statement: ``fetch(whole, only)`` returns the rows of the stored ``whole`` ids
    (``whole`` true, the chunk's columns, read by ``to_chunk``) and of the probed ids not
    among them that are NOT stored (``whole`` false, the id alone): a query probes hundreds of
    ids and nearly all are stored, so the answer is the few that are not, not a row per
    stored id. No statement when there is nothing to read."""
    whole = list(dict.fromkeys(ids))
    taken = set(whole)
    only = [i for i in dict.fromkeys(probe) if i not in taken]
    if not whole and not only:
        return [None for _ in ids], set()
    rows = await fetch(whole, only)
    found: dict[str, Chunk] = {}
    missing: set[str] = set()
    for row in rows:
        if row["whole"]:
            found[row["id"]] = to_chunk(row)
        else:
            missing.add(row["id"])
    present = {i for i in probe if i in found or (i not in taken and i not in missing)}
    return [found.get(i) for i in ids], present
