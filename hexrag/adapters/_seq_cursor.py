"""The scan cursor of a store that pages by a sequence number (shared by the adapters).

A page's cursor is the sequence number of its last record, as a decimal string; ``None``
starts at the beginning. It imports nothing of an adapter, so any adapter package may use it.
"""

from __future__ import annotations

from hexrag.domain.errors import InvalidQuery

__all__ = ["seq_after"]


def seq_after(cursor: str | None) -> int:
    """The sequence number a scan resumes after: ``-1`` for ``None``, else ``int(cursor)``;
    ``InvalidQuery`` for a cursor that is not a number (not one of this store's)."""
    if cursor is None:
        return -1
    try:
        return int(cursor)
    except ValueError:
        raise InvalidQuery(f"not a scan cursor of this store: {cursor[:40]!r}") from None
