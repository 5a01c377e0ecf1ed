"""The memo caches of one engine's query path, owned by that engine (no process-wide state).

hexrag memoises pure functions of stored text (heading paths, split ``source_id`` strings),
so repeated work across queries is done once. A :class:`~hexrag.core.query.engine.QueryEngine`
owns one :class:`QueryMemo` and hands it to each query run; token counts are memoised by the
tokenizer object itself. Benchmarks call the engine's ``clear_memo_caches()`` before each timed
query to measure the cold path.
"""

from __future__ import annotations

from functools import _lru_cache_wrapper, lru_cache

from hexrag.core.query.headings import heading_path
from hexrag.core.query.source_ids import split_source_id_text

__all__ = ["QueryMemo"]


class QueryMemo:
    """Bounded memo caches (least recently used entries dropped first) of the query path.

    ``heading_path(parents)`` and ``split(source_id)`` give what
    :func:`~hexrag.core.query.headings.heading_path` and
    :func:`~hexrag.core.query.source_ids.split_source_id_text` give, computing each
    distinct argument once. Thread-safe (``functools.lru_cache``).
    """

    def __init__(self, *, heading_paths: int = 65_536, source_id_splits: int = 262_144) -> None:
        # the same few thousand heading chains and source_id strings come back query after query
        self.heading_path: _lru_cache_wrapper[str] = lru_cache(maxsize=heading_paths)(
            heading_path
        )
        self.split: _lru_cache_wrapper[tuple[str, ...]] = lru_cache(maxsize=source_id_splits)(
            split_source_id_text
        )

    def clear(self) -> None:
        """Forget every memoised value."""
        self.heading_path.cache_clear()
        self.split.cache_clear()
