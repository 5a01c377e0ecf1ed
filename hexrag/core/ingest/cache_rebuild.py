"""Rebuilding entities and relations from the extraction cache: LightRAG 1.5.7's deletion rule.

On data without hexrag's description fragments (a stack LightRAG built), a document is
deleted as LightRAG's ``adelete_by_doc_id`` deletes it (``lightrag.py``
``_purge_derived_kg_contributions`` and ``operate.py`` ``rebuild_knowledge_from_chunks``):

1. candidates: the document's ``full_entities`` / ``full_relations`` rows (or, without them,
   the entities and relations of the deleted chunks' cached extractions and every edge that
   cites a deleted chunk);
2. a candidate's chunks are its ``entity_chunks`` / ``relation_chunks`` row (its graph
   ``source_id`` when there is no row); without the deleted chunks nothing left -> deleted
   (with its vector, tracking row and, for an entity, its edges), something left and changed
   -> rebuilt from the remaining chunks;
3. a rebuilt record takes the cached extraction answers (``llm_cache_list`` of each chunk,
   ``cache_type`` ``extract``) of its first ``MAX_SOURCE_IDS_PER_*`` remaining chunks
   (``KEEP``; the last ones with ``FIFO``), parsed as at insertion; descriptions in chunk
   order, de-duplicated and joined or summarised (:func:`~hexrag.core.ingest.summary.
   merge_descriptions`); the type is the most frequent; file paths unique, at most
   ``MAX_FILE_PATHS`` plus LightRAG's ``...<placeholder>...(<METHOD> <max>/<n>)`` marker;
   a relation's keywords are joined with ``", "`` and its weight is the sum of the weights,
   at least the number of its chunks.

:func:`chunk_extractions` parses the cache entries, :func:`rebuild_entity` and
:func:`rebuild_relation` compute the records; the I/O is the caller's
(:mod:`hexrag.core.ingest.document_deletion`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from hexrag.core.ingest.extraction import parse_extraction
from hexrag.core.ingest.ids import entity_id, mdhash_id
from hexrag.core.ingest.merging import NO_EVIDENCE, MergeSettings
from hexrag.core.ingest.summary import merge_descriptions
from hexrag.core.ingest.vector_contents import entity_vector_content, relation_vector_content
from hexrag.core.tokenizer import Tokenizer
from hexrag.domain.records import GRAPH_FIELD_SEP

__all__ = [
    "ChunkExtraction",
    "chunk_extractions",
    "limit_ids",
    "rebuild_entity",
    "rebuild_relation",
    "subtract_ids",
]

Summarize = Callable[[str], Awaitable[str]]


@dataclass
class ChunkExtraction:
    """What one chunk's cached extraction answers hold: records by entity name and by
    relation pair (as extracted, unsorted)."""

    entities: dict[str, list[dict[str, Any]]]
    relations: dict[tuple[str, str], list[dict[str, Any]]]


def subtract_ids(ids: Sequence[str], gone: frozenset[str] | set[str]) -> list[str]:
    """LightRAG's ``subtract_source_ids``: ``ids`` without ``gone`` (order kept)."""
    return [i for i in ids if i and i not in gone]


def limit_ids(ids: Sequence[str], limit: int, method: str) -> list[str]:
    """LightRAG's ``apply_source_ids_limit``: the first ``limit`` ids, the last with FIFO."""
    if limit <= 0:
        return []
    if len(ids) <= limit:
        return list(ids)
    return list(ids[-limit:]) if method.upper() == "FIFO" else list(ids[:limit])


_K = TypeVar("_K")


def _keep_longer(
    found: dict[_K, list[dict[str, Any]]], parsed: Mapping[_K, Sequence[Any]]
) -> None:
    """Take each parsed record list (as dicts) into ``found`` unless ``found`` already holds
    one for its key whose first description is at least as long."""
    for key, records in parsed.items():
        new = [asdict(r) for r in records]
        have = found.get(key)
        if not have or len(new[0]["description"] or "") > len(
                have[0].get("description") or ""):
            found[key] = new


def chunk_extractions(
    chunks: Mapping[str, Mapping[str, Any]],
    entries: Mapping[str, Mapping[str, Any] | None],
) -> dict[str, ChunkExtraction]:
    """Parse the cached extraction answers of ``chunks`` (chunk id -> ``{"file_path",
    "llm_cache_list"}``) found in ``entries`` (cache key -> entry): per chunk, its answers
    in ``create_time`` order, a later answer's record replacing an earlier one's only when
    its description is longer (LightRAG's rule for the gleaning round)."""
    out: dict[str, ChunkExtraction] = {}
    for cid, chunk in chunks.items():
        answers: list[tuple[int, int, str]] = []
        for pos, key in enumerate(chunk.get("llm_cache_list") or []):
            entry = entries.get(key)
            if (entry is not None and entry.get("cache_type") == "extract"
                    and entry.get("chunk_id") == cid and isinstance(entry.get("return"), str)):
                answers.append((int(entry.get("create_time") or 0), pos, entry["return"]))
        if not answers:
            continue
        answers.sort()
        found = ChunkExtraction({}, {})
        path = str(chunk.get("file_path") or "unknown_source")
        for stamp_, _, text in answers:
            nodes, edges = parse_extraction(text, cid, stamp_, path)
            _keep_longer(found.entities, nodes)
            _keep_longer(found.relations, edges)
        out[cid] = found
    return out


def _file_paths(paths: list[str], settings: MergeSettings) -> list[str]:
    method = settings.limit_method
    limit = settings.max_file_paths
    total = len(paths)
    if total > limit:
        paths = paths[-limit:] if method.upper() == "FIFO" else paths[:limit]
        paths = [*paths, f"...{settings.file_path_placeholder}...({method} {limit}/{total})"]
    return paths


async def rebuild_entity(
    name: str,
    current: Mapping[str, Any],
    chunk_ids: Sequence[str],
    extractions: Mapping[str, ChunkExtraction],
    edge_records: Sequence[Mapping[str, Any]],
    *,
    now: int,
    settings: MergeSettings,
    tokenizer: Tokenizer,
    summarize: Summarize,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """LightRAG's ``_rebuild_single_entity``: the node (``current`` updated) and its vector
    record, from the remaining ``chunk_ids``; ``edge_records`` (the entity's edges) serve
    only when no remaining chunk's extraction names the entity."""
    limited = limit_ids(chunk_ids, settings.max_source_ids, settings.limit_method)
    data = [r for c in limited if c in extractions
            for r in extractions[c].entities.get(name, [])]
    lim = settings.summary
    if not data:
        descs = list(dict.fromkeys(e["description"] for e in edge_records
                                   if e.get("description")))
        paths_set: dict[str, None] = {}
        for e in edge_records:
            for fp in str(e.get("file_path") or "").split(GRAPH_FIELD_SEP):
                if fp:
                    paths_set[fp] = None
        description = current.get("description", "")
        if descs:
            description, _ = await merge_descriptions(
                "Entity", name, descs, GRAPH_FIELD_SEP, tokenizer=tokenizer, limits=lim,
                summarize=summarize)
        entity_type = current.get("entity_type", "UNKNOWN")
        paths = sorted(paths_set)
        truncation = ""
    else:
        paths = list(dict.fromkeys(r["file_path"] for r in data if r.get("file_path")))
        paths = _file_paths(paths, settings)
        types = [r["entity_type"] for r in data if r.get("entity_type")]
        entity_type = (sorted(Counter(types).items(), key=lambda x: x[1], reverse=True)[0][0]
                       if types else current.get("entity_type", "UNKNOWN"))
        descs = list(dict.fromkeys(r["description"] for r in data if r.get("description")))
        description = current.get("description", "")
        if descs:
            description, _ = await merge_descriptions(
                "Entity", name, descs, GRAPH_FIELD_SEP, tokenizer=tokenizer, limits=lim,
                summarize=summarize)
        truncation = (f"{settings.limit_method} {len(limited)}/{len(chunk_ids)}"
                      if len(limited) < len(chunk_ids) else "")
    node = {
        **current, "description": description, "entity_type": entity_type,
        "source_id": GRAPH_FIELD_SEP.join(limited),
        "file_path": (GRAPH_FIELD_SEP.join(paths) if paths
                      else current.get("file_path", "unknown_source")),
        "created_at": now, "truncate": truncation,
    }
    vector = {
        "id": entity_id(name), "entity_name": name, "entity_type": entity_type,
        "content": entity_vector_content(name, description, tokenizer,
                                         settings.embedding_token_limit),
        "source_id": node["source_id"], "file_path": node["file_path"],
    }
    return node, vector


@dataclass(frozen=True)
class RebuiltRelation:
    """A rebuilt edge, its vector record, the vector ids to delete first, the tracked
    (normalised) chunk ids and the endpoint nodes to create (missing from the graph)."""

    edge: dict[str, Any]
    vector: dict[str, Any]
    stale_ids: list[str]
    tracked: list[str]
    limited: list[str]


async def rebuild_relation(
    src: str,
    tgt: str,
    current: Mapping[str, Any],
    chunk_ids: Sequence[str],
    extractions: Mapping[str, ChunkExtraction],
    *,
    settings: MergeSettings,
    tokenizer: Tokenizer,
    summarize: Summarize,
) -> RebuiltRelation | None:
    """LightRAG's ``_rebuild_single_relationship`` (``best_effort``): ``None`` when no
    remaining chunk's extraction holds the relation (LightRAG then leaves it unchanged)."""
    tracked = [c for c in chunk_ids if c and c not in NO_EVIDENCE]
    limited = limit_ids(tracked, settings.max_source_ids_relation, settings.limit_method)
    data = [r for c in limited if c in extractions
            for key in ((src, tgt), (tgt, src))
            for r in extractions[c].relations.get(key, [])]
    if not data:
        return None
    descs = list(dict.fromkeys(r["description"] for r in data if r.get("description")))
    keywords: set[str] = set()
    for r in data:
        if r.get("keywords"):
            keywords.update(k.strip() for k in r["keywords"].split(",") if k.strip())
    weights = [r["weight"] for r in data if r.get("weight")]
    paths = _file_paths(list(dict.fromkeys(r["file_path"] for r in data
                                           if r.get("file_path"))), settings)
    combined = ", ".join(sorted(keywords)) if keywords else current.get("keywords", "")
    weight = sum(weights) if weights else current.get("weight", 1.0)
    weight = max(float(weight), float(len(set(limited))))
    description = current.get("description", "")
    if descs:
        description, _ = await merge_descriptions(
            "Relation", f"{src}-{tgt}", descs, GRAPH_FIELD_SEP, tokenizer=tokenizer,
            limits=settings.summary, summarize=summarize)
    truncation = (f"{settings.limit_method} {len(limited)}/{len(tracked)}"
                  if len(limited) < len(tracked) else "")
    edge = {
        **current, "description": description or current.get("description", ""),
        "keywords": combined, "weight": weight, "source_id": GRAPH_FIELD_SEP.join(limited),
        "file_path": (GRAPH_FIELD_SEP.join(p for p in paths if p) if paths
                      else current.get("file_path", "unknown_source")),
        "truncate": truncation,
    }
    a, b = (tgt, src) if src > tgt else (src, tgt)
    rid, reverse = mdhash_id(a + b, "rel-"), mdhash_id(b + a, "rel-")
    vector = {
        "id": rid, "src_id": a, "tgt_id": b, "source_id": edge["source_id"],
        "content": relation_vector_content(combined, a, b, description, tokenizer,
                                           settings.embedding_token_limit),
        "keywords": combined, "description": description, "weight": weight,
        "file_path": edge["file_path"],
    }
    return RebuiltRelation(edge, vector, [rid, reverse], tracked, limited)
