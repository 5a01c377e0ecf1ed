"""Contract tests of the scan capabilities (:mod:`hexrag.ports.scan`), mixed into the port suites.

Each ``*ScanContract`` is a base of the matching port contract (``VectorIndexContract``,
``GraphStoreContract``, ``ChunkStoreContract``, ``CacheContract``), so every backend that runs
the contract suite runs these too. They check the module docstring of
:mod:`hexrag.ports.scan` sentence by sentence: pages of at most ``limit``, cursors followed to
``None`` list every record exactly once, a scan resumes from a saved cursor after writes, an
empty store gives one empty last page, a bad ``limit`` is :class:`InvalidQuery`, items equal
what the port's reads return.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

import pytest

from hexrag.core.errors import InvalidQuery
from hexrag.ports.scan import MAX_SCAN_LIMIT, Page

T = TypeVar("T")

ScanMethod = Callable[..., Awaitable[Page[Any]]]


async def collect(
    scan: ScanMethod, *, limit: int, cursor: str | None = None, max_pages: int = 100_000
) -> tuple[list[Any], int]:
    """Every item from ``cursor`` on, and the number of calls it took; checks page sizes."""
    items: list[Any] = []
    calls = 0
    while True:
        page = await scan(cursor, limit=limit)
        calls += 1
        assert isinstance(page, Page), f"scan returned {type(page).__name__}, not a Page"
        assert len(page.items) <= limit, f"page of {len(page.items)} items for limit={limit}"
        items.extend(page.items)
        if page.cursor is None:
            return items, calls
        assert isinstance(page.cursor, str), f"cursor {page.cursor!r} is not a string"
        assert calls < max_pages, "scan does not end"
        cursor = page.cursor


def assert_each_once(keys: list[Hashable], expected: set[Hashable], context: str = "") -> None:
    """``keys`` lists every expected key exactly once and nothing else."""
    dupes = sorted({str(k) for k in keys if keys.count(k) > 1})
    assert not dupes, f"listed twice{context}: {dupes[:5]}"
    assert set(keys) == expected, (
        f"missing{context}: {sorted(map(str, expected - set(keys)))[:5]}; "
        f"unexpected: {sorted(map(str, set(keys) - expected))[:5]}"
    )


async def check_scan_basics(
    scan: ScanMethod,
    key: Callable[[Any], Hashable],
    expected: set[Hashable],
) -> None:
    """Whole scans at several page sizes list each key once; bad limits are refused."""
    for limit in (1, 3, 7, 1000):
        items, _ = await collect(scan, limit=limit)
        assert_each_once([key(i) for i in items], expected, f" (limit={limit})")
    for bad in (0, -1, MAX_SCAN_LIMIT + 1):
        with pytest.raises(InvalidQuery):
            await scan(None, limit=bad)


async def check_resume_after_writes(
    scan: ScanMethod,
    key: Callable[[Any], Hashable],
    expected: set[Hashable],
    write: Callable[[set[Hashable]], Awaitable[tuple[set[Hashable], set[Hashable]]]],
) -> None:
    """Scan one page, write (``write`` gets the keys listed so far and returns the keys it
    added and removed), then resume from the saved cursor: every key present for the whole
    scan is listed, none twice."""
    first = await scan(None, limit=2)
    seen = [key(i) for i in first.items]
    assert first.cursor is not None, "two items must not fill a scan of this corpus"
    added, removed = await write(set(seen))
    rest, _ = await collect(scan, limit=2, cursor=first.cursor)
    listed = seen + [key(i) for i in rest]
    stable = expected - removed
    missing = stable - set(listed)
    assert not missing, f"records present for the whole scan were not listed: {missing}"
    assert len([k for k in listed if k in stable]) == len(stable), "a record listed twice"
    assert set(listed) <= expected | added, "listed a record that never existed"
