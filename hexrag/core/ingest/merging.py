"""Merging an entity's extracted fragments into its graph node: LightRAG 1.5.7's rule, plainly.

:func:`merge_entity` is LightRAG's ``_merge_nodes_then_upsert`` (``operate.py``) without the
storage calls - the caller passes the stored node and chunk-tracking row and writes the result:

* chunk ids: the tracking row's list (the node's ``source_id`` when there is no row) merged
  with the fragments' chunk ids (order kept, ``<SEP>``-split, de-duplicated); the node keeps
  at most ``max_source_ids`` of them - the first ones (``KEEP``, the default; fragments from
  dropped chunks are then ignored, and a node already full is left as it is) or the last ones
  (``FIFO``);
* type: the most frequent of the fragments' types and the stored one (first seen wins ties);
* description: the stored fragments, then the new ones - unique by text, ordered by
  timestamp then longest first - de-duplicated after sanitising, then joined or summarised
  (:func:`hexrag.core.ingest.summary.merge_descriptions`); ``"Entity <name>"`` when there is none;
* file paths: stored then new, unique, at most ``max_file_paths`` plus LightRAG's
  ``...truncated...(KEEP Old)`` / ``(FIFO)`` marker;
* the vector record: id ``ent-`` + md5(name), content ``"<name>\\n<description>"`` (cut to the
  embedding model's token limit when one is set).

``tests/unit/test_merging.py`` proves it equal to LightRAG's own function.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hexrag.core.ingest.extraction import sanitize_text_for_encoding, split_by_markers
from hexrag.core.ingest.ids import entity_id, mdhash_id
from hexrag.core.ingest.summary import SummaryLimits, merge_descriptions
from hexrag.core.ingest.vector_contents import entity_vector_content, relation_vector_content
from hexrag.core.tokenizer import Tokenizer
from hexrag.domain.records import GRAPH_FIELD_SEP

__all__ = [
    "EndpointUpdate",
    "MergeSettings",
    "MergedEntity",
    "MergedRelation",
    "merge_entity",
    "merge_relation",
    "merge_source_ids",
]

#: Source ids that are no evidence of a relation (LightRAG's RELATION_NO_EVIDENCE_SOURCE_IDS).
NO_EVIDENCE = frozenset({"manual_creation", "UNKNOWN"})


@dataclass(frozen=True, slots=True)
class MergeSettings:
    """LightRAG's ``MAX_SOURCE_IDS_PER_ENTITY`` (200), ``SOURCE_IDS_LIMIT_METHOD`` (KEEP),
    ``MAX_FILE_PATHS`` (75), the file-path placeholder, the summary limits and the embedding
    model's token limit (``None``: vector contents are not cut)."""

    max_source_ids: int = 200
    max_source_ids_relation: int = 200
    limit_method: str = "KEEP"
    max_file_paths: int = 75
    file_path_placeholder: str = "truncated"
    summary: SummaryLimits = field(default_factory=SummaryLimits)
    embedding_token_limit: int | None = None


@dataclass(frozen=True)
class MergedEntity:
    """The node to write, its vector record and chunk-tracking row (``None`` when the node is
    left as stored: a ``KEEP`` node already full), and whether the LLM summarised."""

    node: dict[str, Any]
    vector: dict[str, Any] | None
    tracked_chunk_ids: list[str] | None
    llm_used: bool = False
    changed: bool = True


def merge_source_ids(*sequences: Sequence[Any] | None) -> list[str]:
    """LightRAG's ``merge_source_ids``: flattened, ``<SEP>``-split, stripped, unique."""
    merged: list[str] = []
    seen: set[str] = set()
    for sequence in sequences:
        for source_id in sequence or ():
            if not source_id:
                continue
            for sid in split_by_markers(str(source_id), [GRAPH_FIELD_SEP]):
                if sid not in seen:
                    seen.add(sid)
                    merged.append(sid)
    return merged


def _limit(ids: list[str], limit: int, method: str) -> list[str]:
    if limit <= 0:
        return []
    if len(ids) <= limit:
        return list(ids)
    return ids[-limit:] if method.upper() == "FIFO" else ids[:limit]


def _dedup_sanitized(*groups: Sequence[str]) -> tuple[list[str], int]:
    combined: list[str] = []
    seen: set[str] = set()
    boundary = 0
    for i, group in enumerate(groups):
        for desc in group:
            clean = sanitize_text_for_encoding(desc)
            if clean and clean not in seen:
                seen.add(clean)
                combined.append(clean)
        if i == 0:
            boundary = len(combined)
    return combined, boundary


def _merged_descriptions(
    stored_descs: Sequence[str], fragments: Sequence[Mapping[str, Any]]
) -> list[str]:
    """The stored descriptions, then the fragments' new ones (first fragment of each
    description kept, ordered by timestamp then longest first), sanitised and deduplicated
    (LightRAG's order for both entities and relations)."""
    unique: dict[str, Mapping[str, Any]] = {}
    for dp in fragments:
        desc = dp.get("description")
        if desc and desc not in unique:
            unique[desc] = dp
    ordered = sorted(
        unique.values(), key=lambda x: (x.get("timestamp", 0), -len(x.get("description", "")))
    )
    descriptions, _ = _dedup_sanitized(stored_descs, [dp["description"] for dp in ordered])
    return descriptions


def _file_paths(
    stored: list[str], fragments: Sequence[Mapping[str, Any]], settings: MergeSettings
) -> str:
    placeholder = settings.file_path_placeholder
    paths: list[str] = []
    seen: set[str] = set()
    truncated_before = False
    for fp in stored:
        if fp and fp.startswith(f"...{placeholder}"):
            truncated_before = True
            continue
        if fp and fp not in seen:
            paths.append(fp)
            seen.add(fp)
    for dp in fragments:
        item = dp.get("file_path")
        if item and item not in seen:
            paths.append(item)
            seen.add(item)
    del truncated_before  # only LightRAG's log line uses it
    if len(paths) > settings.max_file_paths:
        if settings.limit_method.upper() == "FIFO":
            paths = [*paths[-settings.max_file_paths :], f"...{placeholder}...(FIFO)"]
        else:
            paths = [*paths[: settings.max_file_paths], f"...{placeholder}...(KEEP Old)"]
    return GRAPH_FIELD_SEP.join(paths)


@dataclass(frozen=True, slots=True)
class _Sources:
    """A merge's chunk ids under LightRAG's source-id limit (entities and relations alike)."""

    full_ids: list[str]
    source_ids: list[str]
    fragments: Sequence[Mapping[str, Any]]
    keep: bool
    saturated: bool

    @property
    def tracked(self) -> list[str] | None:
        """The full id list for the tracking row (``None`` when empty)."""
        return self.full_ids if self.full_ids else None

    @property
    def truncation(self) -> str:
        """LightRAG's truncation note (empty when no id was cut)."""
        if len(self.source_ids) < len(self.full_ids):
            if not self.keep:
                return f"FIFO {len(self.source_ids)}/{len(self.full_ids)}"
            return "KEEP Old"
        return ""


def _limit_sources(
    fragments: Sequence[Mapping[str, Any]],
    tracking: Mapping[str, Any] | None,
    stored_ids: list[str],
    limit: int,
    method: str,
    *,
    excluded: frozenset[str] = frozenset(),
) -> _Sources:
    """The existing ids (the tracking row's, else the stored ones, minus ``excluded``) merged
    with the fragments' and cut to ``limit``; under KEEP, the fragments whose new id was cut
    are dropped, and ``saturated`` says the limit was already reached with nothing left."""
    new_ids = [dp["source_id"] for dp in fragments if dp.get("source_id")]
    has_row = isinstance(tracking, Mapping) and isinstance(tracking.get("chunk_ids"), list)
    existing = tracking["chunk_ids"] if has_row and tracking is not None else stored_ids
    existing_full = [c for c in existing if c and c not in excluded]
    full_ids = merge_source_ids(existing_full, new_ids)
    source_ids = _limit(full_ids, limit, method)
    keep = method.upper() != "FIFO"
    saturated = False
    if keep:
        allowed = set(source_ids)
        fragments = [
            dp for dp in fragments
            if not (dp.get("source_id") and dp["source_id"] not in allowed
                    and dp["source_id"] not in existing_full)
        ]
        saturated = len(existing_full) >= limit and not fragments
    return _Sources(full_ids, source_ids, fragments, keep, saturated)


async def merge_entity(
    name: str,
    fragments: Sequence[Mapping[str, Any]],
    stored: Mapping[str, Any] | None,
    tracking: Mapping[str, Any] | None,
    *,
    settings: MergeSettings,
    tokenizer: Tokenizer,
    summarize: Callable[[str], Awaitable[str]],
) -> MergedEntity:
    """Merge ``fragments`` (LightRAG's extracted entity dicts: ``entity_type``,
    ``description``, ``source_id``, ``file_path``, ``timestamp``) into the ``stored`` node
    (its properties, or ``None``) given the entity's ``tracking`` row (``{"chunk_ids": [...]}``
    or ``None``)."""
    stored_types: list[str] = []
    stored_ids: list[str] = []
    stored_paths: list[str] = []
    stored_descs: list[str] = []
    if stored:
        etype = stored.get("entity_type")
        if not isinstance(etype, str) or not etype.strip():
            etype = "UNKNOWN"
        if "," in etype:
            tokens = [t.strip() for t in etype.split(",") if t.strip()]
            etype = tokens[0] if tokens else "UNKNOWN"
        stored_types.append(etype)
        stored_ids.extend((stored.get("source_id") or "").split(GRAPH_FIELD_SEP))
        stored_paths.extend((stored.get("file_path") or "unknown_source").split(GRAPH_FIELD_SEP))
        desc = (stored.get("description") or "").strip()
        if desc:
            stored_descs.extend(desc.split(GRAPH_FIELD_SEP))
    sources = _limit_sources(fragments, tracking, stored_ids, settings.max_source_ids,
                             settings.limit_method)
    fragments, source_ids = sources.fragments, sources.source_ids
    tracked = sources.tracked
    if sources.saturated:
        if not stored:
            raise ValueError(f"Internal Error: already_node missing for `{name}`")
        return MergedEntity(dict(stored), None, tracked, changed=False)
    counts = Counter([dp["entity_type"] for dp in fragments] + stored_types)
    entity_type = sorted(counts.items(), key=lambda x: x[1], reverse=True)[0][0]
    descriptions = _merged_descriptions(stored_descs, fragments)
    if not descriptions:
        descriptions = [f"Entity {name}"]
    description, llm_used = await merge_descriptions(
        "Entity", name, descriptions, GRAPH_FIELD_SEP,
        tokenizer=tokenizer, limits=settings.summary, summarize=summarize,
    )
    file_path = _file_paths(stored_paths, fragments, settings)
    truncation = sources.truncation
    source_id = GRAPH_FIELD_SEP.join(source_ids)
    node = {
        "entity_id": name,
        "entity_type": entity_type,
        "description": description,
        "source_id": source_id,
        "file_path": file_path,
        "truncate": truncation,
    }
    vector = {
        "id": entity_id(name),
        "entity_name": name,
        "entity_type": entity_type,
        "content": entity_vector_content(name, description, tokenizer,
                                         settings.embedding_token_limit),
        "source_id": source_id,
        "file_path": file_path,
    }
    return MergedEntity(node, vector, tracked, llm_used)


@dataclass(frozen=True)
class EndpointUpdate:
    """What a relation merge does to one endpoint entity: a node to write (``created``: it
    did not exist), its vector record and chunk-tracking row (``None``: unchanged)."""

    name: str
    node: dict[str, Any] | None
    vector: dict[str, Any] | None
    tracked_chunk_ids: list[str] | None
    created: bool = False


@dataclass(frozen=True)
class MergedRelation:
    """The edge to write (``None``: left as stored), its vector record (``id``, and the
    reverse-pair id to delete), the tracking row, the endpoint updates, LLM use."""

    edge: dict[str, Any] | None
    vector: dict[str, Any] | None
    stale_vector_ids: list[str]
    tracked_chunk_ids: list[str] | None
    endpoints: list[EndpointUpdate]
    llm_used: bool = False


def _endpoint(
    name: str,
    stored: Mapping[str, Any] | None,
    tracking: Mapping[str, Any] | None,
    *,
    description: str,
    source_id: str,
    source_ids: list[str],
    full_ids: list[str],
    file_path: str,
    settings: MergeSettings,
    tokenizer: Tokenizer,
) -> EndpointUpdate:
    if stored is None:
        node = {
            "entity_id": name, "source_id": source_id, "description": description,
            "entity_type": "UNKNOWN", "file_path": file_path, "truncate": "",
        }
        vector = {
            "id": entity_id(name), "content": entity_vector_content(
                name, description, tokenizer, settings.embedding_token_limit),
            "entity_name": name, "source_id": source_id, "entity_type": "UNKNOWN",
            "file_path": file_path,
        }
        tracked = [c for c in full_ids if c] or None
        return EndpointUpdate(name, node, vector, tracked, created=True)
    has_row = isinstance(tracking, Mapping) and isinstance(tracking.get("chunk_ids"), list)
    existing: list[str] = []
    if has_row:
        assert tracking is not None
        existing = [c for c in tracking["chunk_ids"] if c]
    elif stored.get("source_id"):
        existing = str(stored["source_id"]).split(GRAPH_FIELD_SEP)
    merged = merge_source_ids(existing, [c for c in source_ids if c])
    tracked = merged if merged != existing else None
    limited = GRAPH_FIELD_SEP.join(_limit(merged, settings.max_source_ids, settings.limit_method))
    if limited == stored.get("source_id", ""):
        return EndpointUpdate(name, None, None, tracked)
    node = {**stored, "source_id": limited}
    vector = {
        "id": entity_id(name),
        "content": entity_vector_content(name, stored.get("description", ""), tokenizer,
                                         settings.embedding_token_limit),
        "entity_name": name, "source_id": limited,
        "entity_type": stored.get("entity_type", "UNKNOWN"),
        "file_path": stored.get("file_path", "unknown_source"),
    }
    return EndpointUpdate(name, node, vector, tracked)


async def merge_relation(
    src: str,
    tgt: str,
    fragments: Sequence[Mapping[str, Any]],
    stored: Mapping[str, Any] | None,
    tracking: Mapping[str, Any] | None,
    endpoints: Mapping[str, tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]],
    *,
    settings: MergeSettings,
    tokenizer: Tokenizer,
    summarize: Callable[[str], Awaitable[str]],
) -> MergedRelation | None:
    """LightRAG's ``_merge_edges_then_upsert`` without the storage calls: ``stored`` is the
    pair's edge (or ``None``), ``tracking`` its chunk-tracking row, ``endpoints`` maps each
    endpoint name to its stored node and tracking row. ``None`` for a self-loop."""
    if src == tgt:
        return None
    weights: list[float] = []
    stored_ids: list[str] = []
    stored_paths: list[str] = []
    stored_descs: list[str] = []
    stored_keywords: list[str] = []
    if stored:
        weights.append(stored.get("weight", 1.0))
        if stored.get("source_id") is not None:
            stored_ids.extend(stored["source_id"].split(GRAPH_FIELD_SEP))
        if stored.get("file_path") is not None:
            stored_paths.extend(stored["file_path"].split(GRAPH_FIELD_SEP))
        if stored.get("description") is not None:
            stored_descs.extend(stored["description"].split(GRAPH_FIELD_SEP))
        if stored.get("keywords") is not None:
            stored_keywords.extend(split_by_markers(stored["keywords"], [GRAPH_FIELD_SEP]))
    sources = _limit_sources(fragments, tracking, stored_ids,
                             settings.max_source_ids_relation, settings.limit_method,
                             excluded=NO_EVIDENCE)
    fragments, full_ids, source_ids = sources.fragments, sources.full_ids, sources.source_ids
    tracked = sources.tracked
    if sources.saturated:
        if not stored:
            raise ValueError(f"Internal Error: already_node missing for `{src}`~`{tgt}`")
        return MergedRelation(None, None, [], tracked, [])
    source_id = GRAPH_FIELD_SEP.join(source_ids)
    seen_sources = set(stored_ids)
    weight = sum(
        [dp["weight"] for dp in fragments
         if dp.get("source_id") and dp["source_id"] not in seen_sources] + weights
    )
    evidence = len({c for c in source_ids if c and c not in NO_EVIDENCE})
    weight = max(float(weight), float(evidence))
    keywords_set: set[str] = set()
    for text in stored_keywords:
        if text:
            keywords_set.update(k.strip() for k in text.split(",") if k.strip())
    for dp in fragments:
        if dp.get("keywords"):
            keywords_set.update(k.strip() for k in dp["keywords"].split(",") if k.strip())
    keywords = ",".join(sorted(keywords_set))
    descriptions = _merged_descriptions(stored_descs, fragments)
    if not descriptions:
        raise ValueError(f"Relation {src}~{tgt} has no description")
    description, llm_used = await merge_descriptions(
        "Relation", f"({src}, {tgt})", descriptions, GRAPH_FIELD_SEP,
        tokenizer=tokenizer, limits=settings.summary, summarize=summarize,
    )
    file_path = _file_paths(stored_paths, fragments, settings)
    truncation = sources.truncation
    updates = [
        _endpoint(name, *endpoints.get(name, (None, None)), description=description,
                  source_id=source_id, source_ids=source_ids, full_ids=full_ids,
                  file_path=file_path, settings=settings, tokenizer=tokenizer)
        for name in (src, tgt)
    ]
    a, b = (tgt, src) if src > tgt else (src, tgt)
    rid = relation_id_of(a, b)
    reverse = relation_id_of(b, a)
    vector = {
        "id": rid, "src_id": a, "tgt_id": b, "source_id": source_id,
        "content": relation_vector_content(keywords, a, b, description, tokenizer,
                                           settings.embedding_token_limit),
        "keywords": keywords, "description": description, "weight": weight,
        "file_path": file_path,
    }
    edge = {
        "weight": weight, "description": description, "keywords": keywords,
        "source_id": source_id, "file_path": file_path, "truncate": truncation,
    }
    return MergedRelation(edge, vector, [reverse] if reverse != rid else [], tracked, updates,
                          llm_used)


def relation_id_of(a: str, b: str) -> str:
    """``rel-`` + md5 of the concatenated names, in the given order (LightRAG's vector id)."""
    return mdhash_id(a + b, "rel-")
