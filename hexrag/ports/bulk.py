"""``BulkLoads`` and ``ExactSearchSwitch``: optional capabilities for bulk work.

``BulkLoads``: a store that loads many records faster when told.

Migration and import call :meth:`BulkLoads.begin_bulk_load` before their first write to a
store and :meth:`BulkLoads.end_bulk_load` after the last; a store may then suspend index
maintenance in between (PostgreSQL drops the HNSW index of an empty table and builds it once
at the end). Reads stay correct in between, only slower. Both are idempotent, and
``end_bulk_load`` after an interrupted load (with no ``begin`` in this process) restores
what an earlier ``begin`` suspended.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["BulkLoads", "ExactSearchSwitch"]


@runtime_checkable
class BulkLoads(Protocol):
    """A store with a bulk-load mode (see the module docstring)."""

    async def begin_bulk_load(self) -> None:
        """Many writes follow; the store may suspend index maintenance."""
        ...

    async def end_bulk_load(self) -> None:
        """The writes are done; rebuild whatever was suspended (idempotent)."""
        ...


@runtime_checkable
class ExactSearchSwitch(Protocol):
    """A vector index that may search approximately (an ANN index, e.g. pgvector's HNSW)
    and can be told to search exactly for a while.

    Migration verification compares two stacks with exact search on both sides, so that a
    difference means a record was not copied as it was, not that an ANN index missed a
    neighbour (at 100k entities pgvector's HNSW recall@40 is about 0.97 here).
    """

    def set_exact_search(self, exact: bool) -> bool:
        """Search exactly from now on (``True``) or as configured (``False``); returns the
        previous setting."""
        ...
