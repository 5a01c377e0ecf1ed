"""LightRAG 1.5.7's document-side key-value records, computed as LightRAG computes them.

The stores are the namespaces of :data:`hexrag.ports.cache.KV_NAMESPACES`, each a
:class:`~hexrag.ports.Cache`; this module only builds their records (pure):

* document ids (``apipeline_enqueue_documents``): ``doc-`` + md5 of the canonical file name
  (its basename) when the document has a real file name, else ``doc-`` + md5 of the
  sanitised text - so the same file re-sent is a duplicate even with new content, as in
  LightRAG;
* ``full_docs[doc id]`` = ``content``, ``file_path``, ``parse_format`` (``raw``),
  ``content_hash`` (md5 of the text), ``chunk_options`` (the fixed-token chunker's options);
* ``full_entities[doc id]`` / ``full_relations[doc id]``: the candidate entity names (sorted)
  and relation pairs (sorted, each sorted) of the document's extraction - LightRAG's recovery
  anchors, written before the graph is touched, which its ``adelete_by_doc_id`` requires;
* ``entity_chunks[name]`` / ``relation_chunks["a<SEP>b"]``: ``chunk_ids`` (every chunk that
  mentioned the entity or relation, in first-seen order; the graph's ``source_id`` keeps at
  most ``MAX_SOURCE_IDS_PER_*`` of them) and ``count``;
* every write is stamped as LightRAG's KV storages stamp it (:func:`stamp`): a new key gets
  ``create_time`` and ``update_time``, a replaced one only ``update_time`` (the record is
  replaced whole, so the old ``create_time`` goes, exactly as ``JsonKVStorage`` does), and
  ``_id`` is the key;
* a document already stored (same id), or whose text another document holds (same
  ``content_hash``), gets LightRAG's duplicate status row (:func:`duplicate_row`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from hashlib import md5
from typing import Any

from hexrag.core.ingest.ids import mdhash_id
from hexrag.core.scope import parse_file_path
from hexrag.domain.records import GRAPH_FIELD_SEP

__all__ = [
    "PLACEHOLDER_SOURCES",
    "TrackingRows",
    "anchor_records",
    "canonical_file_path",
    "chunk_options",
    "content_hash",
    "duplicate_row",
    "full_doc_record",
    "lightrag_doc_id",
    "relation_chunk_key",
    "stamp",
    "tracking_record",
]

#: File paths LightRAG treats as "no file" (``PLACEHOLDER_DOCUMENT_SOURCES``).
PLACEHOLDER_SOURCES = frozenset({"", "no-file-path", "unknown_source"})


def canonical_file_path(file_path: str | None) -> str:
    """LightRAG's ``normalize_document_file_path`` for a plain file name: the basename
    (``Path(...).name``), placeholders collapsed to ``unknown_source``. Beyond LightRAG: a
    scope-encoded path (``product_id:<id>:...:source:<src>``, :mod:`hexrag.core.scope`) is
    kept whole, since its last path segment would lose the scope. Parser hints such as
    ``a.[native].pdf`` are not stripped (hexrag's parsers take no hints)."""
    source = str(file_path or "").strip()
    if source in PLACEHOLDER_SOURCES:
        return "unknown_source"
    if parse_file_path(source):
        return source
    base = source.rstrip("/").rsplit("/", 1)[-1].strip()
    return base if base and base not in PLACEHOLDER_SOURCES else "unknown_source"


def lightrag_doc_id(content: str, file_path: str | None) -> str:
    """The document id LightRAG 1.5.7 gives ``content`` (already sanitised) sent with
    ``file_path``: md5 of the canonical file name when there is one, else of the text."""
    canonical = canonical_file_path(file_path)
    if canonical not in PLACEHOLDER_SOURCES:
        return mdhash_id(canonical, "doc-")
    return mdhash_id(content, "doc-")


def content_hash(content: str) -> str:
    """LightRAG's ``compute_text_content_hash`` for plain text: md5 hex of the text."""
    return md5(content.encode("utf-8")).hexdigest()


def chunk_options(
    chunk_token_size: int,
    chunk_overlap_token_size: int,
    split_by_character: str | None,
    split_by_character_only: bool,
) -> dict[str, Any]:
    """The ``chunk_options`` snapshot LightRAG's ``ainsert`` stores for the fixed-token
    chunker."""
    return {
        "chunk_token_size": chunk_token_size,
        "fixed_token": {
            "split_by_character": split_by_character,
            "split_by_character_only": split_by_character_only,
            "chunk_overlap_token_size": chunk_overlap_token_size,
        },
    }


def full_doc_record(content: str, file_path: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``full_docs``' record of a plain-text document (unstamped)."""
    return {
        "content": content,
        "file_path": file_path,
        "parse_format": "raw",
        "content_hash": content_hash(content),
        "chunk_options": dict(options),
    }


def relation_chunk_key(src: str, tgt: str) -> str:
    """LightRAG's ``make_relation_chunk_key``: the sorted pair joined with ``<SEP>``."""
    a, b = sorted((src, tgt))
    return f"{a}{GRAPH_FIELD_SEP}{b}"


def tracking_record(chunk_ids: Iterable[str]) -> dict[str, Any]:
    """An ``entity_chunks`` / ``relation_chunks`` record (unstamped)."""
    ids = list(chunk_ids)
    return {"chunk_ids": ids, "count": len(ids)}


def anchor_records(
    entity_names: Iterable[str], relation_pairs: Iterable[tuple[str, str]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``full_entities`` and ``full_relations`` records of one document (unstamped): every
    extracted entity name and relation endpoint, and every relation pair, sorted."""
    pairs = {tuple(sorted(p)) for p in relation_pairs}
    names = set(entity_names) | {n for p in pairs for n in p}
    ordered = sorted(pairs)
    return (
        {"entity_names": sorted(names), "count": len(names)},
        {"relation_pairs": [list(p) for p in ordered], "count": len(ordered)},
    )


def stamp(
    records: Mapping[str, Mapping[str, Any]], existing: Iterable[str], now: int
) -> dict[str, dict[str, Any]]:
    """``records`` as LightRAG's KV ``upsert`` stores them: keys in ``existing`` get
    ``update_time``, new keys ``create_time`` and ``update_time``; every record ``_id``."""
    present = set(existing)
    out: dict[str, dict[str, Any]] = {}
    for key, value in records.items():
        record = dict(value)
        if key not in present:
            record["create_time"] = now
        record["update_time"] = now
        record["_id"] = key
        out[key] = record
    return out


def duplicate_row(
    doc_id: str,
    *,
    file_path: str,
    content_length: int,
    existing_status: str,
    existing_track_id: str,
    track_id: str,
    now_iso: str,
    original_doc_id: str | None = None,
    index: int = 0,
) -> tuple[str, dict[str, Any]]:
    """LightRAG's status row for a document sent again: ``(dup id, row)``, status
    ``failed``. ``duplicate_kind`` is ``filename`` (its id ``doc_id`` is already stored) or,
    given ``original_doc_id`` (another document holds the same text), ``content_hash``."""
    kind = "filename" if original_doc_id is None else "content_hash"
    original = doc_id if original_doc_id is None else original_doc_id
    prefix = ("File name already exists." if original_doc_id is None
              else "Identical content already exists under another filename.")
    dup_id = mdhash_id(f"{doc_id}-{track_id}-{index}-{file_path}", "dup-")
    return dup_id, {
        "status": "failed",
        "content_summary": f"[DUPLICATE:{kind}] Original document: {original}",
        "content_length": content_length,
        "chunks_count": 0,
        "chunks_list": [],
        "created_at": now_iso,
        "updated_at": now_iso,
        "file_path": file_path,
        "track_id": track_id,
        "error_msg": f"{prefix} Original doc_id: {original}, Status: {existing_status}",
        "metadata": {
            "is_duplicate": True,
            "duplicate_kind": kind,
            "original_doc_id": original,
            "original_track_id": existing_track_id,
        },
    }


class TrackingRows:
    """The chunk-tracking rows (``entity_chunks`` or ``relation_chunks``) of one merge:
    the stored rows, updated as the merge writes, and what to write at the end - stamped as
    LightRAG's successive upserts leave them (a key written twice loses ``create_time``)."""

    def __init__(self, stored: Mapping[str, Mapping[str, Any]]) -> None:
        self._rows: dict[str, Mapping[str, Any]] = dict(stored)
        self._existing: set[str] = set(stored)
        self._written: dict[str, dict[str, Any]] = {}

    def row(self, key: str) -> Mapping[str, Any] | None:
        """The row as the merge sees it now (``None``: no row)."""
        return self._rows.get(key)

    def put(self, key: str, chunk_ids: Iterable[str] | None) -> None:
        """Record LightRAG's upsert of ``key`` (nothing when ``chunk_ids`` is ``None``)."""
        if chunk_ids is None:
            return
        if key in self._written:
            self._existing.add(key)
        record = tracking_record(chunk_ids)
        self._written[key] = record
        self._rows[key] = record

    def stamped(self, now: int) -> dict[str, dict[str, Any]]:
        """The records to write, stamped (:func:`stamp`)."""
        return stamp(self._written, self._existing, now)
