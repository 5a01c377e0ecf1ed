"""Documents and their description fragments: what ingestion records so that a document can
be deleted exactly and a scoped query can describe an entity from in-scope text only.

A :class:`Fragment` is one entity or relation record that the extraction LLM produced from
one chunk (LightRAG's parsed dict: type, description, keywords, weight, source chunk, file
path, timestamp) together with the document's metadata (``product_id``, ``category_id``,
``source``, any user key). An entity's stored node is a merge of its fragments; keeping
them lets hexrag

* rebuild an entity or relation from the fragments that remain when a document goes
  (:mod:`hexrag.core.ingest.deletion`), and
* render a scoped query's description from the in-scope fragments only.

A :class:`DocRecord` is a document's status row, shaped like LightRAG's ``doc_status``
(``status``, ``content_summary``, ``content_length``, ``chunks_count``, ``chunks_list``,
``file_path``, ``created_at``, ``updated_at``, ``error_msg``, ``metadata``) plus the
insertion sequence number that orders fragment replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from hexrag.domain.records import GRAPH_FIELD_SEP

__all__ = [
    "DOC_STATUSES",
    "DocRecord",
    "Fragment",
    "FragmentKind",
    "content_summary",
    "encode_file_path",
    "merge_metadata_fields",
    "metadata_fields",
]

FragmentKind = Literal["entity", "relation"]

#: LightRAG's document states.
DOC_STATUSES = ("pending", "processing", "processed", "failed")


@dataclass(frozen=True, slots=True)
class Fragment:
    """One extracted entity (``tgt == ""``) or relation (``src < tgt`` after LightRAG's
    sorting of the pair) record from one chunk.

    ``seq`` is the document's insertion sequence number and ``pos`` the record's position in
    that document's extraction order (chunk order, then the LLM's record order), so replaying
    fragments sorted by ``(seq, pos)`` merges them exactly as the inserts did. ``data`` is
    LightRAG's parsed record (``entity_type``/``keywords``/``weight``, ``description``,
    ``source_id``, ``file_path``, ``timestamp``), ``metadata`` the document's metadata.
    """

    kind: FragmentKind
    src: str
    tgt: str
    chunk_id: str
    doc_id: str
    seq: int
    pos: int
    data: Mapping[str, Any]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def owner(self) -> str | tuple[str, str]:
        """The entity name, or the ``(src, tgt)`` pair of a relation."""
        return self.src if self.kind == "entity" else (self.src, self.tgt)

    @property
    def names(self) -> tuple[str, ...]:
        """The entity names this fragment is about (one or two)."""
        return (self.src,) if self.kind == "entity" else (self.src, self.tgt)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the shape every backend stores)."""
        return {
            "kind": self.kind, "src": self.src, "tgt": self.tgt, "chunk_id": self.chunk_id,
            "doc_id": self.doc_id, "seq": self.seq, "pos": self.pos, "data": dict(self.data),
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Fragment:
        """The inverse of :meth:`to_json`."""
        kind = raw["kind"]
        if kind not in ("entity", "relation"):
            raise ValueError(f"unknown fragment kind {kind!r}")
        return cls(
            kind=kind, src=str(raw["src"]), tgt=str(raw.get("tgt") or ""),
            chunk_id=str(raw["chunk_id"]), doc_id=str(raw["doc_id"]), seq=int(raw["seq"]),
            pos=int(raw["pos"]), data=dict(raw.get("data") or {}),
            metadata=dict(raw.get("metadata") or {}),
        )


@dataclass(slots=True)
class DocRecord:
    """A document's status row (LightRAG's ``doc_status`` fields plus ``seq``)."""

    id: str
    status: str
    file_path: str = "unknown_source"
    content_summary: str = ""
    content_length: int = 0
    chunks_list: list[str] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    error_msg: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: What the stored row held in each of its fields as :meth:`from_json` read it:
    #: ``field -> (the row's own value, or _MISSING when it had none; the value read)``.
    #: While a field keeps the value read, :meth:`to_json` writes the row's own value back
    #: (LightRAG's rows have no ``seq``, its pending rows no ``chunks_count``, a row of
    #: another writer may hold ``null`` where hexrag reads ``""``), so a row read and
    #: written back is the same JSON.
    stored: dict[str, tuple[Any, Any]] = field(default_factory=dict, compare=False,
                                                repr=False)

    @property
    def chunks_count(self) -> int:
        """Number of chunks (LightRAG's ``chunks_count``)."""
        return len(self.chunks_list)

    def to_json(self) -> dict[str, Any]:
        """LightRAG's ``doc_status`` record plus ``seq`` (and the fields another writer
        stored that hexrag does not know, kept as they were)."""
        out = {
            **self.extra,
            "status": self.status, "content_summary": self.content_summary,
            "content_length": self.content_length, "chunks_count": self.chunks_count,
            "chunks_list": list(self.chunks_list), "file_path": self.file_path,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "error_msg": self.error_msg, "metadata": dict(self.metadata), "seq": self.seq,
        }
        for key, (own, read) in self.stored.items():
            now = tuple(self.chunks_list) if key == "chunks_count" else out[key]
            if now == read:  # unchanged since it was read
                if own is _MISSING:
                    del out[key]
                else:
                    out[key] = own
        return out

    @classmethod
    def from_json(cls, doc_id: str, raw: Mapping[str, Any]) -> DocRecord:
        """The inverse of :meth:`to_json` (a LightRAG record without ``seq`` reads as 0):
        ``to_json`` of the result is the same JSON as ``raw`` (``chunks_count`` included,
        absent or as stored) while the row is not changed."""
        chunks = [str(c) for c in raw.get("chunks_list") or []]
        record = cls(
            id=doc_id, status=str(raw.get("status") or "pending"),
            file_path=str(raw.get("file_path") or "unknown_source"),
            content_summary=str(raw.get("content_summary") or ""),
            content_length=int(raw.get("content_length") or 0),
            chunks_list=chunks,
            created_at=str(raw.get("created_at") or ""),
            updated_at=str(raw.get("updated_at") or ""),
            error_msg=raw.get("error_msg"), metadata=dict(raw.get("metadata") or {}),
            seq=int(raw.get("seq") or 0),
            extra={k: v for k, v in raw.items() if k not in _DOC_FIELDS},
        )
        read = record.to_json()
        read["chunks_count"] = tuple(chunks)
        record.stored = {
            k: (raw.get(k, _MISSING), read[k]) for k in _DOC_FIELDS
            if k not in raw or raw[k] != read[k] or type(raw[k]) is not type(read[k])
        }
        return record


_DOC_FIELDS = frozenset({
    "status", "content_summary", "content_length", "chunks_count", "chunks_list", "file_path",
    "created_at", "updated_at", "error_msg", "metadata", "seq",
})


class _Missing(Enum):
    """The marker of a field the stored row did not have (an enum member: a copy of a
    record, ``copy.deepcopy`` included, keeps the very same marker)."""

    MISSING = "missing"


_MISSING = _Missing.MISSING


def content_summary(content: str, max_length: int = 250) -> str:
    """LightRAG's ``get_content_summary``: the stripped text, cut to ``max_length`` + ``...``."""
    content = content.strip()
    if len(content) <= max_length:
        return content
    return content[:max_length] + "..."


def encode_file_path(metadata: Mapping[str, Any], source: str | None = None) -> str:
    """Seed 000's encoded ``file_path``: ``product_id:<pid>:category:<cat>:source:<src>``
    (the parts present, in that order); ``source`` alone when there is no scope metadata."""
    parts = []
    if metadata.get("product_id"):
        parts.append(f"product_id:{metadata['product_id']}")
    if metadata.get("category_id"):
        parts.append(f"category:{metadata['category_id']}")
    src = source or metadata.get("source")
    if not parts:
        return str(src) if src else "unknown_source"
    if src:
        parts.append(f"source:{src}")
    return ":".join(parts)


#: Stored node / edge fields that are LightRAG's own (never metadata).
_RECORD_FIELDS = frozenset({
    "entity_id", "entity_type", "description", "source_id", "file_path", "created_at",
    "truncate", "keywords", "weight", "src_id", "tgt_id", "id", "entity_name", "content",
    "vector", "__vector__", "__id__", "__created_at__",
})


def metadata_fields(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The document metadata that entities and relations carry as first-class fields:
    every key that is not one of LightRAG's record fields, with a non-empty scalar value
    (``product_id``, ``category_id``, ``source`` and user keys)."""
    out: dict[str, str] = {}
    for key, value in metadata.items():
        if key in _RECORD_FIELDS or isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (str, int, float)):
            text = str(value)
            if text and GRAPH_FIELD_SEP not in text:
                out[key] = text
    return out


def merge_metadata_fields(prior: Mapping[str, Any] | None, added: Mapping[str, str]
                          ) -> dict[str, str]:
    """An entity's or relation's metadata fields after a document with ``added`` touched
    it: per key, the sorted set of its sources' values, ``<SEP>``-joined (one string, so
    every backend stores it and LightRAG reads it as an ordinary attribute); keys of
    ``prior`` that are not record fields are kept."""
    out: dict[str, str] = {}
    keys = [k for k in (prior or {}) if k not in _RECORD_FIELDS and isinstance(
        (prior or {})[k], str)]
    for key in dict.fromkeys([*keys, *added]):
        values = {v for v in str((prior or {}).get(key) or "").split(GRAPH_FIELD_SEP) if v}
        if key in added:
            values.add(added[key])
        if values:
            out[key] = GRAPH_FIELD_SEP.join(sorted(values))
    return out
