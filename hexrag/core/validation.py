"""Query text validation (LightRAG ``query_validation.py``): non-empty, and a minimum RAG weight."""

from __future__ import annotations

from hexrag.core.errors import InvalidQuery

__all__ = ["MIN_RAG_QUERY_WEIGHT", "TOO_SHORT_MESSAGE", "rag_query_weight", "validate_query"]

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
