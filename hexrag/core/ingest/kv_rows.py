"""Reading a document-side key-value namespace (a :class:`~hexrag.ports.Cache`) by key:
the one read the ingestion, the graph edits and the document deletion share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hexrag.ports import Cache

__all__ = ["stored_rows"]


async def stored_rows(store: Cache | None, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The stored rows of ``keys`` in ``store``, keyed by key, in ``keys`` order; keys with no
    row are absent. One round trip; none (and ``{}``) without a store or keys."""
    if store is None or not keys:
        return {}
    rows = await store.get_many(list(keys))
    return {k: r for k, r in zip(keys, rows, strict=True) if r is not None}
