"""Process-wide memo caches of the query path, and one switch to empty them all.

hexrag memoises pure functions of stored text (token counts of text segments, heading paths,
split ``source_id`` strings), so repeated work across queries is done once. Benchmarks call
:func:`clear_memo_caches` before each timed query to measure the cold path.
"""

from __future__ import annotations

from hexrag.core.query.headings import clear_heading_cache
from hexrag.core.query.source_ids import clear_split_cache
from hexrag.core.tokenizer import clear_token_caches

__all__ = ["clear_memo_caches"]


def clear_memo_caches() -> None:
    """Empty every memo cache of the query path."""
    clear_token_caches()
    clear_heading_cache()
    clear_split_cache()
