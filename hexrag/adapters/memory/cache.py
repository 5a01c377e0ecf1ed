"""In-memory :class:`~hexrag.ports.Cache`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

from ._scan import InsertionOrder


class MemoryCache:
    """A key -> JSON object dict for one namespace.

    Values are copied through JSON on write and on read, so neither the writer nor a reader
    can change what is stored, and a non-JSON value fails at write time (``TypeError``).
    """

    def __init__(
        self,
        namespace: str = "llm_response_cache",
        entries: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.namespace = namespace
        # JSON text: gives JSON semantics (tuples -> lists) and copies nobody else holds
        self._entries: dict[str, str] = {}
        if entries:
            self._entries = {k: json.dumps(v) for k, v in entries.items()}
        self._order = InsertionOrder(self._entries)

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Entries in request order, ``None`` for a missing key."""
        out: list[dict[str, Any] | None] = []
        for k in keys:
            raw = self._entries.get(k)
            out.append(None if raw is None else json.loads(raw))
        return out

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries, replacing existing keys (all serialised before any is written)."""
        encoded = {k: json.dumps(v) for k, v in entries.items()}
        self._entries.update(encoded)
        for k in encoded:
            self._order.add(k)

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys; unknown keys are ignored."""
        for k in keys:
            self._entries.pop(k, None)
            self._order.remove(k)

    async def clear(self) -> None:
        """Remove every entry of this namespace."""
        self._entries.clear()
        self._order.clear()

    async def scan_entries(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[tuple[str, dict[str, Any]]]:
        """A page of ``(key, value)`` entries in insertion order
        (:class:`~hexrag.ports.scan.ScansCache`)."""
        keys, nxt = self._order.page(cursor, limit)
        return Page([(k, json.loads(self._entries[k])) for k in keys], nxt)

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(key, value copy)`` pairs in insertion order (for exporters)."""
        for k, raw in list(self._entries.items()):
            yield k, json.loads(raw)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"MemoryCache(namespace={self.namespace!r}, entries={len(self._entries)})"
