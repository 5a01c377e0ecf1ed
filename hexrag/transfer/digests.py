"""Per-section digests of a stack: a record count and an order-independent content checksum.

Two stacks hold the same data in a section exactly when their digests of it are equal
(up to a 128-bit hash collision), whatever order their backends list records in. A digest
is computed by scanning the section once (:mod:`hexrag.transfer.sections`), page by page:

* each record is turned into canonical bytes: its archive line
  (:func:`~hexrag.transfer.sections.encode_line`; an edge with its two ends in sorted
  order, the graph being undirected; a vector record without ``row_vector``, the float16
  copy only working directories keep; without what a backend stamps on write or repeats
  from the key: LightRAG's ``_id`` / ``id`` key echoes, the ``create_time`` /
  ``update_time`` stamps of cache and key-value records (:func:`kv_content`), a vector row's
  ``__write_seq__`` token) as JSON with sorted keys, and, for the
  vector sections, the **float32 bytes** of its stored vector (little-endian), so a vector
  moved by one unit in the last place changes the digest;
* the checksum is the sum, modulo 2**128, of the first 16 bytes of each record's SHA-256:
  independent of order, and a record missing, added twice or changed changes it.

:func:`stack_digests` digests every section a stack holds; :func:`compare_digests` lists
the sections where two digests differ. The LLM cache's corpus-version entry
(:data:`hexrag.core.versioning.CORPUS_VERSION_KEY`, each stack's answer-cache bookkeeping) is
not digested.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import numpy as np

from hexrag.core.versioning import CORPUS_VERSION_KEY
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, scan_all
from hexrag.transfer.sections import (
    CACHE_SECTIONS,
    VECTOR_SECTIONS,
    encode_line,
    held_sections,
    scanner,
)

__all__ = ["compare_digests", "kv_content", "record_digest", "section_digest", "stack_digests"]

_MOD = 1 << 128


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=True, default=_plain).encode("utf-8", "surrogatepass")


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


#: Bookkeeping a key-value store stamps on every write (LightRAG's ``upsert`` on every
#: backend, ``CURRENT_TIMESTAMP`` on PostgreSQL, whose ``full_docs`` read returns none).
_KV_STAMPS = frozenset({"create_time", "update_time"})
#: The fields that repeat a record's key (``_id``: LightRAG's JSON and Redis stores,
#: re-stamped on every read; ``id``: the key column of its PostgreSQL tables).
_KEY_ECHOES = ("_id", "id")
#: What LightRAG's PostgreSQL read (``get_by_ids_full_docs``) gives a ``full_docs`` field
#: the record did not set (a NULL column, ``COALESCE``d for two of them).
_FULL_DOCS_UNSET: dict[str, Any] = {
    "file_path": "", "chunk_options": {}, "sidecar_location": None, "parse_format": None,
    "content_hash": None, "process_options": None, "parse_engine": None,
}
#: A vector row's write token in LightRAG's NanoVectorDB / Faiss files ("storage
#: bookkeeping, not payload", LightRAG's words); its other backends keep none.
_VECTOR_BOOKKEEPING = "__write_seq__"


def kv_content(section: str, key: str, value: Any) -> Any:
    """The content of one ``(key, value)`` record of the LLM cache or of one of LightRAG's
    key-value namespaces: what a copy must keep.

    The same record reads back differently from LightRAG's three backends: PostgreSQL
    returns its key as ``id`` (JSON and Redis as ``_id``), stamps ``create_time`` /
    ``update_time`` with the statement's time where it keeps them and never returns
    ``full_docs``' times, and gives the ``full_docs`` pipeline fields a record did not set
    as null / ``{}`` / ``''``. So the digest leaves out a key echo equal to the key, the two
    write stamps, and a ``full_docs`` field holding its unset value; every other field
    (``content``, ``file_path``, ``chunk_ids``, ``entity_names``, ``count``, ``return``...)
    is compared exactly, and an ``_id`` / ``id`` naming another key is kept (and so
    differs)."""
    if not isinstance(value, dict):
        return value
    out = {}
    for name, field in value.items():
        if name in _KV_STAMPS or (name in _KEY_ECHOES and field == key):
            continue
        if section == "full_docs" and name in _FULL_DOCS_UNSET and (
                field == _FULL_DOCS_UNSET[name]):
            continue
        out[name] = field
    return out


def _content_line(section: str, line: dict[str, Any]) -> dict[str, Any]:
    """``line`` without what a backend stamps or echoes (see the module docstring)."""
    if section in CACHE_SECTIONS:
        line["value"] = kv_content(section, str(line["key"]), line["value"])
    elif section == "text_chunks" and isinstance(line.get("metadata"), dict):
        # LightRAG's JSON chunk row repeats its key as ``_id``; its PostgreSQL row does not
        line["metadata"] = {k: v for k, v in line["metadata"].items()
                            if not (k in _KEY_ECHOES and v == line.get("id"))}
    elif section in VECTOR_SECTIONS and isinstance(line.get("metadata"), dict):
        line["metadata"] = {k: v for k, v in line["metadata"].items()
                            if k != _VECTOR_BOOKKEEPING}
    return line


def record_digest(section: str, item: Any) -> int:
    """The 128-bit digest of one record of ``section`` (see the module docstring)."""
    line = _content_line(section, encode_line(section, item))
    # LightRAG's float16 "vector" string of a NanoVectorDB row: a lossy copy of the vector
    # that only working directories keep; the vector itself is digested below
    line.pop("row_vector", None)
    if section == "edges" and str(line.get("src_id")) > str(line.get("tgt_id")):
        # the graph is undirected (LightRAG's nx.Graph): an edge read back from GraphML
        # may come the other way round; its ends are digested in sorted order
        line["src_id"], line["tgt_id"] = line["tgt_id"], line["src_id"]
    data = _canonical(line)
    sha = hashlib.sha256(data)
    if section in VECTOR_SECTIONS:
        vector = item.vector
        sha.update(b"\x00vector\x00")
        if vector is not None:
            sha.update(np.ascontiguousarray(vector, dtype="<f4").tobytes())
    return int.from_bytes(sha.digest()[:16], "big")


async def section_digest(
    stores: Any, section: str, *, page_size: int = DEFAULT_SCAN_LIMIT
) -> dict[str, Any]:
    """``{"count", "checksum"}`` of one section of ``stores`` (``checksum``: 32 hex digits)."""
    total = count = 0
    async for page in scan_all(scanner(stores, section), limit=page_size):
        for item in page.items:
            if section == "llm_cache" and item[0] == CORPUS_VERSION_KEY:
                continue  # each stack's own answer-cache bookkeeping, not a cached answer
            total = (total + record_digest(section, item)) % _MOD
            count += 1
    return {"count": count, "checksum": f"{total:032x}"}


async def stack_digests(
    stores: Any,
    sections: Iterable[str] | None = None,
    *,
    page_size: int = DEFAULT_SCAN_LIMIT,
) -> dict[str, dict[str, Any]]:
    """Digests of ``sections`` (default: every section ``stores`` holds), by section name."""
    names = list(sections) if sections is not None else held_sections(stores)
    return {name: await section_digest(stores, name, page_size=page_size) for name in names}


def compare_digests(
    source: dict[str, dict[str, Any]], target: dict[str, dict[str, Any]]
) -> list[str]:
    """One line per section whose digests differ (a section missing on one side included)."""
    out = []
    for name in [*source, *(n for n in target if n not in source)]:
        a, b = source.get(name), target.get(name)
        if a is None or b is None:
            side = "target" if b is None else "source"
            held = a if b is None else b
            if held and held["count"]:
                out.append(f"{name}: the {side} stack has no {name} section "
                           f"({held['count']} records on the other side)")
            continue
        if a["count"] != b["count"]:
            out.append(f"{name}: {a['count']} records vs {b['count']}")
        elif a["checksum"] != b["checksum"]:
            out.append(f"{name}: same count ({a['count']}), different content (checksum)")
    return out
