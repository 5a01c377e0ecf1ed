"""``BulkLoads``: an optional capability of a store that loads many records faster when told.

Migration and import call :meth:`BulkLoads.begin_bulk_load` before their first write to a
store and :meth:`BulkLoads.end_bulk_load` after the last; a store may then suspend index
maintenance in between (PostgreSQL drops the HNSW index of an empty table and builds it once
at the end). Reads stay correct in between, only slower. Both are idempotent, and
``end_bulk_load`` after an interrupted load (with no ``begin`` in this process) restores
what an earlier ``begin`` suspended.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["BulkLoads"]


@runtime_checkable
class BulkLoads(Protocol):
    """A store with a bulk-load mode (see the module docstring)."""

    async def begin_bulk_load(self) -> None:
        """Many writes follow; the store may suspend index maintenance."""
        ...

    async def end_bulk_load(self) -> None:
        """The writes are done; rebuild whatever was suspended (idempotent)."""
        ...
