"""Query text validation (LightRAG ``query_validation.py``): non-empty, and a minimum RAG weight.

Plus :func:`validate_history`: conversation history the LLM adapters can serialise as JSON.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hexrag.domain.errors import InvalidQuery

__all__ = [
    "MIN_RAG_QUERY_WEIGHT",
    "TOO_SHORT_MESSAGE",
    "rag_query_weight",
    "validate_history",
    "validate_query",
]

MIN_RAG_QUERY_WEIGHT = 3
TOO_SHORT_MESSAGE = (
    "RAG query is too short. Enter at least 3 English characters or an equivalent combination "
    "where each Chinese, Japanese or Korean character counts as 2."
)
_WIDE = (
    (0x1100, 0x11FF),
    (0x2E80, 0x33FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFFEE),
    (0x16FE0, 0x16FFF),
    (0x1AFF0, 0x1B2FF),
    (0x20000, 0x3FFFD),
)


def _wide(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _WIDE)


def rag_query_weight(query: str) -> int:
    """Length of the stripped query where each CJK/Hangul/Kana character counts 2."""
    return sum(2 if _wide(c) else 1 for c in query.strip())


def validate_query(query: str, mode: str) -> str:
    """The stripped query, or :class:`InvalidQuery` when it is empty or (non-bypass) too short."""
    if not isinstance(query, str):
        raise InvalidQuery("Query must be a string.")
    normalized = query.strip()
    if not normalized:
        raise InvalidQuery("Query must not be empty.")
    if mode != "bypass":
        weight = 0
        for c in normalized:
            weight += 2 if _wide(c) else 1
            if weight >= MIN_RAG_QUERY_WEIGHT:
                break
        if weight < MIN_RAG_QUERY_WEIGHT:
            raise InvalidQuery(TOO_SHORT_MESSAGE)
    return normalized


def _unserialisable(value: Any) -> str | None:
    """Why ``value`` (walked iteratively, keys included) cannot travel as strict JSON in
    UTF-8: a NaN or infinite float, or a string with a lone surrogate. ``None`` when it can."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return "a string holds a lone surrogate (not valid Unicode)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "a number is NaN or infinite (not valid JSON)"
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, Sequence) and not isinstance(item, (bytes, bytearray)):
            stack.extend(item)
    return None


def validate_history(history: Sequence[Mapping[str, Any]]) -> None:
    """:class:`InvalidQuery` when a ``conversation_history`` message - its extra fields and
    nested values included - holds something an LLM adapter cannot send as JSON (a NaN or
    infinite number, a lone surrogate in a key or a string). Adapters forward every field of a
    message (as LightRAG does), so such a value would otherwise fail the request as an
    internal error when the model is called."""
    for i, message in enumerate(history):
        problem = _unserialisable(message)
        if problem:
            raise InvalidQuery(f"conversation_history message {i}: {problem}")
