"""Scope semantics: the single oracle every layer and every adapter agrees with.

A *source* is one origin of a record: a chunk, or one ``<SEP>`` segment of a ``file_path``
encoded as ``product_id:<id>:category:<cat>:source:<src>``. Each source has a
:class:`SourceMeta` (product, category, document; any may be unknown).

* :func:`scope_values` flattens a stored record into field -> set of values; it is what a
  vector index filters on (layer a). A field the record does not know is an empty set and
  does **not** exclude the record at that layer (it is decided later, by the graph and chunk
  layers), so pre-filtering never drops a record that might be in scope.
* :func:`sources_verdict` decides a graph record (layer b): in scope when at least one source
  satisfies every scoped field; ``None`` when the record's own fields cannot tell (the engine
  then asks the chunk store about the record's chunks).
* :func:`chunk_in_scope` is the authoritative chunk guard (layer c): a chunk is in scope only
  when its own metadata proves it. Unknown means out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hexrag.core.encoded_fields import encoded_fields
from hexrag.domain.records import GRAPH_FIELD_SEP, Chunk
from hexrag.domain.scope import QueryScope

__all__ = [
    "SourceMeta",
    "chunk_in_scope",
    "chunk_meta",
    "parse_file_path",
    "prefilter_match",
    "record_sources",
    "scope_values",
    "sources_verdict",
]

_KEYS = {
    "product_id": "product_id",
    "category": "category_id",
    "category_id": "category_id",
    "source": "source",
    "doc_id": "doc_id",
}


@dataclass(frozen=True, slots=True)
class SourceMeta:
    """What one source says about itself; ``None`` = unknown."""

    product_id: str | None = None
    category_id: str | None = None
    doc_id: str | None = None

    def get(self, scope_field: str) -> str | None:
        """The value for a ``QueryScope`` field name."""
        if scope_field == "doc_ids":
            return self.doc_id
        return getattr(self, scope_field)  # type: ignore[no-any-return]


def _parse_segment(segment: str) -> SourceMeta | None:
    tokens = segment.strip().split(":")
    if len(tokens) < 2 or tokens[0] not in _KEYS:
        return None
    found = encoded_fields(tokens, _KEYS)
    if "product_id" not in found and "category_id" not in found and "doc_id" not in found:
        return None
    return SourceMeta(
        product_id=found.get("product_id") or None,
        category_id=found.get("category_id") or None,
        doc_id=found.get("doc_id") or None,
    )


def parse_file_path(file_path: str | None) -> list[SourceMeta]:
    """Parse an encoded ``file_path`` (``<SEP>``-joined segments); unencoded ones are skipped."""
    if not file_path:
        return []
    metas = []
    for segment in file_path.split(GRAPH_FIELD_SEP):
        meta = _parse_segment(segment)
        if meta is not None:
            metas.append(meta)
    return metas


def _as_values(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # one value, or a <SEP>-joined set of them
        return [v for v in value.split(GRAPH_FIELD_SEP) if v]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [str(v) for v in value if v is not None and str(v) != ""]
    return [str(value)]


def _first_class(metadata: Mapping[str, Any], *names: str) -> list[str]:
    for name in names:
        values = _as_values(metadata.get(name))
        if values:
            return values
    return []


def record_sources(
    metadata: Mapping[str, Any], file_path: str | None, full_doc_id: str | None = None
) -> list[SourceMeta]:
    """The sources of a record: its first-class metadata if it has any, else its ``file_path``.

    First-class fields: ``product_id``/``product_ids``, ``category_id``/``category_ids``/
    ``category``, ``doc_ids``/``full_doc_id``. A record with first-class lists is one source
    per combination is not knowable, so it is treated as one source per value of the longest
    list, the other fields shared (a record stored with ``product_id=["p1","p2"]`` and
    ``category_id="crm"`` has sources (p1, crm) and (p2, crm)).
    """
    products = _first_class(metadata, "product_id", "product_ids")
    categories = _first_class(metadata, "category_id", "category_ids", "category")
    docs = _first_class(metadata, "doc_ids", "full_doc_id") or _as_values(full_doc_id)
    if products or categories:
        metas: list[SourceMeta] = []
        for p in products or [None]:  # type: ignore[list-item]
            for c in categories or [None]:  # type: ignore[list-item]
                for d in docs or [None]:  # type: ignore[list-item]
                    metas.append(SourceMeta(product_id=p, category_id=c, doc_id=d))
        return metas
    parsed = parse_file_path(file_path)
    if docs:
        if not parsed:
            return [SourceMeta(doc_id=d) for d in docs]
        return [
            SourceMeta(product_id=m.product_id, category_id=m.category_id, doc_id=m.doc_id or d)
            for m in parsed
            for d in docs
        ]
    return parsed


def scope_values(
    metadata: Mapping[str, Any], file_path: str | None, full_doc_id: str | None = None
) -> dict[str, frozenset[str]]:
    """Flattened field -> values of a stored record (what a vector index filters on)."""
    metas = record_sources(metadata, file_path, full_doc_id)
    return {
        "product_id": frozenset(m.product_id for m in metas if m.product_id),
        "category_id": frozenset(m.category_id for m in metas if m.category_id),
        "doc_ids": frozenset(m.doc_id for m in metas if m.doc_id),
    }


def prefilter_match(scope: QueryScope | None, values: Mapping[str, Iterable[str]]) -> bool:
    """Layer (a): keep a record unless a field it *knows* contradicts the scope.

    For each scoped field: a record with no value for it passes (undecided here); a record
    with values passes only if one of them is admitted.
    """
    if scope is None or scope.is_empty:
        return True
    for name, admitted in scope.fields().items():
        known = set(values.get(name, ()))
        if known and not (known & set(admitted)):
            return False
    return True


def sources_verdict(scope: QueryScope | None, sources: Iterable[SourceMeta]) -> bool | None:
    """Layer (b) on a record's own sources.

    ``True``: some source satisfies every scoped field. ``False``: every source contradicts
    some field with a known value. ``None``: no source proves it but some source leaves a
    scoped field unknown (or there are no sources), so the chunks must decide.
    """
    if scope is None or scope.is_empty:
        return True
    fields = scope.fields()
    undecided = False
    any_source = False
    for meta in sources:
        any_source = True
        ok = True
        unknown = False
        for name, admitted in fields.items():
            value = meta.get(name)
            if value is None:
                unknown = True
            elif value not in admitted:
                ok = False
                break
        if ok and not unknown:
            return True
        if ok and unknown:
            undecided = True
    if not any_source:
        return None
    return None if undecided else False


def chunk_meta(chunk: Chunk) -> list[SourceMeta]:
    """The sources a chunk proves about itself (first-class metadata, else its file_path)."""
    return record_sources(chunk.metadata, chunk.file_path, chunk.full_doc_id)


def chunk_in_scope(scope: QueryScope | None, chunk: Chunk) -> bool:
    """Layer (c), authoritative: the chunk's own metadata must prove every scoped field."""
    if scope is None or scope.is_empty:
        return True
    return sources_verdict(scope, chunk_meta(chunk)) is True
