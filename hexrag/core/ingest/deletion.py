"""Deleting documents exactly: what goes, what is rebuilt, and from which fragments.

LightRAG's ``adelete_by_doc_id`` removes a document's chunks and rebuilds the entities and
relations they touched from the cached extraction results of the chunks that remain. hexrag
does the same from its stored :class:`~hexrag.core.documents.Fragment` records, and replays
them in insertion order, so the graph after a deletion is the graph the remaining documents
would have built (and re-inserting the document gives back the stores of the first insert):

1. the deleted chunks are the documents' ``chunks_list``;
2. the *affected relations* are those with a fragment in a deleted chunk; the *affected
   entities* those with an entity fragment there, plus both ends of every affected relation
   (a relation's chunks also count as its endpoints' sources);
3. every remaining fragment about an affected entity (its own, and those of relations at
   either end) is replayed document by document, sorted by ``(seq, pos)``: within a document
   the entities are merged first, then the relations in order, exactly as
   :meth:`~hexrag.core.ingest.ingestion.Ingestor.ingest_text` merged them;
4. affected entities and relations the replay leaves empty are deleted with their vectors;
   the others are written back. Records whose stored sources include chunks no fragment
   accounts for (data ingested before hexrag kept fragments, e.g. by LightRAG) cannot be
   replayed; they lose the deleted chunks from ``source_id`` (deleted when no source
   remains) and are then rebuilt from the extraction cache of their remaining chunks, as
   LightRAG rebuilds them (:mod:`hexrag.core.ingest.cache_rebuild`).

A document without fragments at all (LightRAG ingested it) is deleted as LightRAG deletes it:
:mod:`hexrag.core.ingest.document_deletion`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hexrag.domain.documents import Fragment
from hexrag.domain.records import GRAPH_FIELD_SEP

__all__ = ["DeletePlan", "DeleteReport", "plan_deletion", "replay_groups"]


@dataclass
class DeleteReport:
    """What a deletion did."""

    deleted: list[str] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)
    chunks: int = 0
    entities_deleted: list[str] = field(default_factory=list)
    entities_rebuilt: list[str] = field(default_factory=list)
    relations_deleted: list[tuple[str, str]] = field(default_factory=list)
    relations_rebuilt: list[tuple[str, str]] = field(default_factory=list)
    legacy: int = 0
    llm_calls: int = 0
    llm_cache_deleted: int = 0


@dataclass(frozen=True)
class DeletePlan:
    """The affected entities and relations and the fragments to replay."""

    chunk_ids: frozenset[str]
    entities: list[str]
    relations: list[tuple[str, str]]
    replay: list[Fragment]
    covered: dict[str, set[str]]


def plan_deletion(
    chunk_ids: Iterable[str], deleted: Sequence[Fragment], about: Sequence[Fragment]
) -> DeletePlan:
    """Steps 1-3 of the module docstring: ``deleted`` are the fragments of the deleted
    chunks, ``about`` every fragment about the affected entities (deleted ones included)."""
    gone = frozenset(chunk_ids)
    relations = list(dict.fromkeys((f.src, f.tgt) for f in deleted if f.kind == "relation"))
    entities = list(dict.fromkeys(
        [f.src for f in deleted if f.kind == "entity"] + [n for pair in relations for n in pair]
    ))
    covered: dict[str, set[str]] = {}
    for f in about:
        key = f.src if f.kind == "entity" else f"{f.src}{GRAPH_FIELD_SEP}{f.tgt}"
        covered.setdefault(key, set()).add(f.chunk_id)
        if f.kind == "relation":
            for n in f.names:
                covered.setdefault(n, set()).add(f.chunk_id)
    replay = sorted((f for f in about if f.chunk_id not in gone), key=lambda f: (f.seq, f.pos))
    return DeletePlan(gone, entities, relations, replay, covered)


def replay_groups(fragments: Sequence[Fragment]) -> list[list[Fragment]]:
    """Fragments (sorted by ``(seq, pos)``) grouped by document insertion."""
    groups: list[list[Fragment]] = []
    last: int | None = None
    for f in fragments:
        if f.seq != last:
            groups.append([])
            last = f.seq
        groups[-1].append(f)
    return groups


def strip_sources(joined: str | None, gone: frozenset[str]) -> str:
    """A ``<SEP>``-joined id list without the ``gone`` ids."""
    return GRAPH_FIELD_SEP.join(
        s for s in (joined or "").split(GRAPH_FIELD_SEP) if s and s not in gone
    )
