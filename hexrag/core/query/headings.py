"""A chunk's parent-heading path (``content_headings``), as LightRAG 1.5.7 renders it."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = [
    "BREADCRUMB_SEP",
    "format_parent_headings",
    "heading_path",
    "truncate_section_context",
]

BREADCRUMB_SEP = " → "
HEADING_LEVEL_MAX_CHARS = 80
SECTION_CONTEXT_MAX_TOKENS = 256

_WS = re.compile(r"\s+")
_KEEP_WS = frozenset("\t\n\r\f\v")


class HeadingMemo(Protocol):
    """What :func:`format_parent_headings` needs of a memo (the engine's ``QueryMemo``)."""

    def heading_path(self, parents: tuple[str, ...], /) -> str:
        """Memoised :func:`heading_path`."""
        ...


class _Codec(Protocol):
    def encode(self, text: str) -> list[int]: ...
    def decode(self, tokens: list[int]) -> str: ...


def _parents(record: Mapping[str, Any]) -> list[str]:
    if "heading" not in record and "parent_headings" not in record:
        return []  # the common case: no heading information at all
    nested = record.get("heading")
    if isinstance(nested, dict):
        heading_text = str(nested.get("heading") or "").strip()
        raw = nested.get("parent_headings") or []
        level_raw = nested.get("level", 0)
    else:
        heading_text = str(nested or "").strip()
        raw = record.get("parent_headings") or []
        level_raw = record.get("level", 0)
    parents = [t for t in (str(e or "").strip() for e in raw) if t] if isinstance(raw, list) else []
    try:
        level = int(level_raw or 0)
    except (TypeError, ValueError):
        level = 0
    if not heading_text and not parents and level == 0:
        return []
    return parents


# ASCII control characters that are not whitespace (Cc); ASCII has no Cf characters
_ASCII_CONTROLS = {c: None for c in [*range(0, 9), *range(14, 32), 127]}


def _clean(text: str) -> str:
    if text.isascii():  # fast path, same result: no "→", the only Cc/Cf are ASCII controls
        return _WS.sub(" ", text.translate(_ASCII_CONTROLS)).strip()
    text = text.replace("→", " ")
    text = "".join(
        ch for ch in text if ch in _KEEP_WS or unicodedata.category(ch) not in ("Cc", "Cf")
    )
    return _WS.sub(" ", text).strip()


def _cap(text: str, max_chars: int) -> str:
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    return text[: max_chars - 1].rstrip() + "…"


def format_parent_headings(record: Mapping[str, Any], memo: HeadingMemo | None = None) -> str:
    """``h1 → h2`` from a chunk record's nested ``heading`` dict or legacy flat fields.

    With ``memo`` (the engine's), each distinct heading chain is formatted once.
    """
    parents = _parents(record)
    if not parents:
        return ""
    return (heading_path if memo is None else memo.heading_path)(tuple(parents))


def heading_path(parents: tuple[str, ...]) -> str:
    """The ``h1 → h2`` path of a chain of parent headings (cleaned, each level capped)."""
    cleaned = [_cap(c, HEADING_LEVEL_MAX_CHARS) for c in (_clean(h) for h in parents) if c]
    return BREADCRUMB_SEP.join(cleaned)


def truncate_section_context(path: str, tokenizer: _Codec | None, max_tokens: int) -> str:
    """Cap a heading path at ``max_tokens`` (first → … → last, then a hard token cut)."""
    if not path or tokenizer is None or max_tokens <= 0:
        return path
    if len(path.encode("utf-8")) <= max_tokens:
        return path  # every token covers at least one byte
    counter = getattr(tokenizer, "count_tokens", None)
    n = counter(path) if counter is not None else len(tokenizer.encode(path))
    if n <= max_tokens:
        return path
    levels = path.split(BREADCRUMB_SEP)
    if len(levels) >= 3:
        path = f"{levels[0]}{BREADCRUMB_SEP}…{BREADCRUMB_SEP}{levels[-1]}"
    tokens = tokenizer.encode(path)
    if len(tokens) <= max_tokens:
        return path
    ellipsis = "…"
    ellipsis_tokens = len(tokenizer.encode(ellipsis))
    if ellipsis_tokens <= max_tokens:
        for keep in range(max_tokens - ellipsis_tokens, -1, -1):
            candidate = tokenizer.decode(tokens[:keep]).rstrip() + ellipsis
            if len(tokenizer.encode(candidate)) <= max_tokens:
                return candidate
    for keep in range(max_tokens, -1, -1):
        candidate = tokenizer.decode(tokens[:keep]).rstrip()
        if len(tokenizer.encode(candidate)) <= max_tokens:
            return candidate
    return ""

