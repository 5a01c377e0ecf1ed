"""Scan capabilities: every record of a store, in pages (export, migration, checks).

Each store port has one scan method, an optional capability checked with ``isinstance``:

==================  ============================  ==========================================
port                capability                    method -> page of
==================  ============================  ==========================================
``VectorIndex``     :class:`ScansVectorIndex`     ``scan_records`` -> ``VectorRecord`` (with
                                                  its stored vector)
``GraphStore``      :class:`ScansGraph`           ``scan_nodes`` -> ``Entity``,
                                                  ``scan_edges`` -> ``Relation`` (with its id)
``ChunkStore``      :class:`ScansChunks`          ``scan_chunks`` -> ``Chunk``
``Cache``           :class:`ScansCache`           ``scan_entries`` -> ``(key, value)``
==================  ============================  ==========================================

The contract, for every scan method (``hexrag.testing`` holds its tests):

* ``scan_x(cursor=None, *, limit=1000)`` returns a :class:`Page`: at most ``limit`` items and
  a ``cursor`` to pass back for the next page, ``None`` when there is no next page. Start with
  ``cursor=None``. A cursor is an opaque string; it stays valid across processes, so a copy
  interrupted after page *k* resumes from the cursor saved with page *k*.
* Every call is **one** round trip to the backend (at most two, e.g. Redis ``SCAN`` and one
  pipelined ``MGET``), whatever ``limit`` is; nothing is read ahead into memory beyond the page.
* Without concurrent writes, following the cursors from ``None`` to ``None`` yields every
  stored record exactly once. With concurrent writes, every record present for the whole scan
  is yielded at least once. A page may be empty while its cursor is not ``None``.
* ``limit`` must be between 1 and :data:`MAX_SCAN_LIMIT`; otherwise
  :class:`~hexrag.core.errors.InvalidQuery` is raised.
* Items are what ``get``-style reads return (same fields); vector records carry their stored
  vector (float32, 1-D, the direction upserted, possibly normalised).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from hexrag.domain.errors import InvalidQuery
from hexrag.domain.records import Chunk, Entity, Relation, VectorRecord

__all__ = [
    "DEFAULT_SCAN_LIMIT",
    "MAX_SCAN_LIMIT",
    "Page",
    "ScansCache",
    "ScansChunks",
    "ScansGraph",
    "ScansVectorIndex",
    "check_scan_limit",
    "scan_all",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

DEFAULT_SCAN_LIMIT = 1000
MAX_SCAN_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class Page(Generic[T_co]):
    """One page of a scan: ``items`` and the ``cursor`` of the next page (``None``: done)."""

    items: list[T_co]  # type: ignore[misc]
    cursor: str | None


def check_scan_limit(limit: int) -> int:
    """``limit`` if it is a valid page size, else :class:`InvalidQuery`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SCAN_LIMIT:
        raise InvalidQuery(f"scan limit must be an integer in 1..{MAX_SCAN_LIMIT}, got {limit!r}")
    return limit


async def scan_all(
    scan: Callable[..., Awaitable[Page[T]]],
    *,
    limit: int = DEFAULT_SCAN_LIMIT,
    cursor: str | None = None,
) -> AsyncIterator[Page[T]]:
    """Follow a scan method's cursors from ``cursor`` until the last page, page by page."""
    import asyncio

    while True:
        page = await scan(cursor, limit=limit)
        yield page
        if page.cursor is None:
            return
        cursor = page.cursor
        await asyncio.sleep(0)  # in-memory stores never suspend: let a server's loop breathe


@runtime_checkable
class ScansVectorIndex(Protocol):
    """A :class:`~hexrag.ports.VectorIndex` that can list its records (see module doc)."""

    async def scan_records(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[VectorRecord]:
        """A page of stored records, each with its stored vector."""
        ...


@runtime_checkable
class ScansGraph(Protocol):
    """A :class:`~hexrag.ports.GraphStore` that can list its nodes and edges."""

    async def scan_nodes(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Entity]:
        """A page of nodes."""
        ...

    async def scan_edges(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Relation]:
        """A page of edges (relations with their ids, as ``get_node_edges`` returns them)."""
        ...


@runtime_checkable
class ScansChunks(Protocol):
    """A :class:`~hexrag.ports.ChunkStore` that can list its chunks."""

    async def scan_chunks(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Chunk]:
        """A page of chunks."""
        ...


@runtime_checkable
class ScansCache(Protocol):
    """A :class:`~hexrag.ports.Cache` that can list its entries."""

    async def scan_entries(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[tuple[str, dict[str, Any]]]:
        """A page of ``(key, value)`` entries."""
        ...
