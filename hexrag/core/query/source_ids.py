"""One parser for every form in which a store hands back a record's chunk ids.

Forms seen in the wild:

* LightRAG graph/vector ``source_id``: ``"chunk-a<SEP>chunk-b"`` (parts stripped, empties dropped);
* PostgreSQL ``text[]`` read as text: ``"{chunk-a,chunk-b}"``, ``'{"chunk a","x\\"y"}'``, ``"{}"``;
* a driver list (asyncpg, Milvus ARRAY): ``["chunk-a", "chunk-b"]``;
* ``None`` / missing.

The result is ordered by first appearance and de-duplicated. Ids are whole strings: matching
anywhere in hexrag is by equality on these ids, so ``chunk-1`` never matches ``chunk-10``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Protocol

from hexrag.domain.records import GRAPH_FIELD_SEP


class SplitMemo(Protocol):
    """What :func:`split_lightrag` needs of a memo (the engine's ``QueryMemo``)."""

    def split(self, value: str, /) -> tuple[str, ...]:
        """Memoised :func:`split_source_id_text`."""
        ...

__all__ = [
    "join_source_ids",
    "parse_pg_array",
    "parse_source_ids",
    "split_lightrag",
    "split_source_id_text",
]


def parse_pg_array(text: str) -> list[str]:
    """Parse PostgreSQL one-dimensional array text (``{a,"b c",NULL}``) into its elements.

    Quoted elements may contain commas, braces and backslash escapes; unquoted ``NULL`` is
    dropped. Surrounding whitespace of unquoted elements is ignored.
    """
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"not PostgreSQL array text: {text!r}")
    body = body[1:-1]
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        while i < n and body[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        if body[i] == '"':
            i += 1
            buf: list[str] = []
            while i < n and body[i] != '"':
                if body[i] == "\\" and i + 1 < n:
                    i += 1
                buf.append(body[i])
                i += 1
            i += 1  # closing quote
            out.append("".join(buf))
            while i < n and body[i] != ",":
                i += 1
        else:
            start = i
            while i < n and body[i] != ",":
                i += 1
            token = body[start:i].strip()
            if token and token.upper() != "NULL":
                out.append(token)
        i += 1  # the comma
    return out


def _pieces(value: Any) -> Iterable[str]:
    if value is None:
        return ()
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            parts: list[str] = []
            for element in parse_pg_array(stripped):
                parts.extend(element.split(GRAPH_FIELD_SEP))
            return parts
        return value.split(GRAPH_FIELD_SEP)
    if isinstance(value, (list, tuple)):
        parts = []
        for element in value:
            parts.extend(_pieces(element))
        return parts
    return (str(value),)


def parse_source_ids(value: Any) -> list[str]:
    """Chunk ids named by ``value``, in first-appearance order, without duplicates.

    Accepts ``None``, a ``<SEP>``-joined string, PostgreSQL array text, or a list/tuple of
    any of these. Each id is stripped; empty ids are dropped.
    """
    seen: dict[str, None] = {}
    for piece in _pieces(value):
        cid = piece.strip()
        if cid and cid not in seen:
            seen[cid] = None
    return list(seen)


def split_lightrag(value: Any, memo: SplitMemo | None = None) -> list[str]:
    """LightRAG's ``split_string_by_multi_markers(value, ["<SEP>"])`` for a graph ``source_id``.

    Unlike :func:`parse_source_ids` this keeps repeats (LightRAG's occurrence counting sees
    them) but it also understands the array forms, so seed 001's ``{chunk-…}`` text works.
    Returns a new list the caller may modify. With ``memo`` (the engine's), each distinct
    string is split once.
    """
    if isinstance(value, str):
        return list((split_source_id_text if memo is None else memo.split)(value))
    return [p.strip() for p in _pieces(value) if p.strip()]


def split_source_id_text(value: str) -> tuple[str, ...]:
    """:func:`split_lightrag` of a string, as a tuple."""
    if not value.startswith("{") and not _has_whitespace(value):
        parts = value.split(GRAPH_FIELD_SEP)  # nothing to strip
        return tuple(parts) if all(parts) else tuple(filter(None, parts))
    return tuple(p.strip() for p in _pieces(value) if p.strip())


_WHITESPACE = re.compile(r"\s")
_ASCII_WHITESPACE = tuple(chr(c) for c in range(128) if chr(c).isspace())


def _has_whitespace(value: str) -> bool:
    """Whether ``value`` holds a character ``str.strip`` removes (ASCII: ``isprintable`` and
    one ``in`` scan, many times faster than the regex on the long ``source_id`` strings of
    popular entities)."""
    if value.isascii():
        # every ASCII whitespace but the space is non-printable: one C scan and one memchr
        if value.isprintable():
            return " " in value
        return any(c in value for c in _ASCII_WHITESPACE)
    return _WHITESPACE.search(value) is not None


def join_source_ids(ids: Iterable[str]) -> str:
    """The LightRAG storage form: ids joined with ``<SEP>``."""
    return GRAPH_FIELD_SEP.join(ids)

