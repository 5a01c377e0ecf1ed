"""Paging for the memory stores' scan capabilities (:mod:`hexrag.ports.scan`).

Memory stores list their records in **insertion order** (a replaced record keeps its place, a
deleted and re-added one goes to the end): the order a LightRAG working directory holds them
in, which LightRAG's results depend on (neighbour order, NanoVectorDB's order among equal
scores). So an export or a migration out of a working directory keeps it. Each key gets an
increasing sequence number when it first appears; a page's cursor is the number of its last
key, so a scan resumes after it even when keys were added or removed in between.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from hexrag.adapters._seq_cursor import seq_after
from hexrag.ports.scan import check_scan_limit


class InsertionOrder:
    """Sequence numbers of a store's keys in insertion order (see the module docstring)."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._seq: dict[str, int] = {}
        self._next = 0
        self._numbers: list[int] | None = None
        self._keys: list[str] | None = None
        for key in keys:
            self.add(key)

    def add(self, key: str) -> None:
        """``key`` was written (a new key goes to the end; an existing one keeps its place)."""
        if key not in self._seq:
            self._seq[key] = self._next
            self._next += 1
            self._numbers = self._keys = None

    def remove(self, key: str) -> None:
        """``key`` was deleted."""
        if self._seq.pop(key, None) is not None:
            self._numbers = self._keys = None

    def clear(self) -> None:
        """Every key was deleted."""
        self._seq.clear()
        self._numbers = self._keys = None

    def page(self, cursor: str | None, limit: int) -> tuple[list[str], str | None]:
        """The keys of one page after ``cursor`` and the next page's cursor."""
        check_scan_limit(limit)
        after = seq_after(cursor)
        if self._numbers is None or self._keys is None:
            self._keys = list(self._seq)
            self._numbers = list(self._seq.values())
        start = bisect_right(self._numbers, after)
        end = min(start + limit, len(self._numbers))
        if start >= end:
            return [], None
        more = end < len(self._numbers)
        return self._keys[start:end], (str(self._numbers[end - 1]) if more else None)
