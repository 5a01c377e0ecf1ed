"""Scope-correct descriptions: a scoped query shows what *in-scope* sources said.

An entity or relation merged from several products' text has one stored description, written
from all of them (LightRAG joins the fragments, or an LLM summarises them). A query scoped to
one product would show the other products' statements (HKUDS/LightRAG#1320). hexrag keeps
every extracted record as a :class:`~hexrag.core.documents.Fragment` (with the inserting
document's metadata), so a scoped query can re-render the description from the in-scope
fragments alone, without an LLM call.

The rule, for each entity / relation that stage 1 kept:

1. its fragments are those stored for it (entity name, or sorted relation pair);
2. a fragment is in scope when its own sources (the document's metadata, else the record's
   encoded ``file_path``, and its document id) prove every scoped field
   (:func:`hexrag.core.scope.sources_verdict` is ``True``);
3. when some fragment is out of scope and some is in scope, the description becomes
   LightRAG's pre-summary join of the in-scope fragments: document by document in insertion
   order, each document's distinct descriptions ordered by ``(timestamp, -length)``, the
   whole de-duplicated (after LightRAG's text sanitising) and ``<SEP>``-joined - exactly the
   list ``_merge_nodes_then_upsert`` would summarise - and ``file_path`` becomes the in-scope
   fragments' paths, de-duplicated in order. Otherwise the record is left as stored (all
   sources in scope, or no fragment known: the data predates fragments).

The number of narrowed records is reported as ``processing_info.scope.narrowed_descriptions``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from hexrag.core.ingest.extraction import sanitize_text_for_encoding
from hexrag.core.query.item_records import replace_records
from hexrag.core.query.run import EntityItem, RelationItem
from hexrag.core.scope import record_sources, sources_verdict
from hexrag.domain.documents import Fragment
from hexrag.domain.records import GRAPH_FIELD_SEP
from hexrag.domain.scope import QueryScope

__all__ = ["Narrowed", "fragment_in_scope", "narrow_items", "narrowed", "presummary_join"]


def fragment_in_scope(scope: QueryScope, fragment: Fragment) -> bool:
    """Whether the fragment's own sources prove every scoped field."""
    sources = record_sources(fragment.metadata, fragment.data.get("file_path"), fragment.doc_id)
    return sources_verdict(scope, sources) is True


def presummary_join(fragments: Sequence[Fragment]) -> str:
    """LightRAG's description list for these fragments, ``<SEP>``-joined (no summary).

    Documents in insertion order (``seq``); within one document the distinct descriptions
    ordered by ``(timestamp, -len(description))``; sanitised and de-duplicated overall.
    """
    by_doc: dict[int, list[Fragment]] = {}
    for f in sorted(fragments, key=lambda f: (f.seq, f.pos)):
        by_doc.setdefault(f.seq, []).append(f)
    out: list[str] = []
    seen: set[str] = set()
    for group in by_doc.values():
        unique: dict[str, Fragment] = {}
        for f in group:
            desc = f.data.get("description")
            if desc and desc not in unique:
                unique[desc] = f
        ordered = sorted(unique.items(),
                         key=lambda kv: (kv[1].data.get("timestamp", 0), -len(kv[0])))
        for desc, _ in ordered:
            clean = sanitize_text_for_encoding(desc)
            if clean and clean not in seen:
                seen.add(clean)
                out.append(clean)
    return GRAPH_FIELD_SEP.join(out)


@dataclasses.dataclass(frozen=True)
class Narrowed:
    """The in-scope rendering of one record."""

    description: str
    file_path: str


def narrowed(scope: QueryScope, fragments: Sequence[Fragment]) -> Narrowed | None:
    """The in-scope description of a record with these fragments, or ``None`` to keep it."""
    inside = [f for f in fragments if fragment_in_scope(scope, f)]
    if not inside or len(inside) == len(fragments):
        return None
    description = presummary_join(inside)
    if not description:
        return None
    paths: dict[str, None] = {}
    for f in sorted(inside, key=lambda f: (f.seq, f.pos)):
        for fp in str(f.data.get("file_path") or "").split(GRAPH_FIELD_SEP):
            if fp:
                paths[fp] = None
    return Narrowed(description, GRAPH_FIELD_SEP.join(paths))


def _owners(fragments: Iterable[Fragment]) -> dict[Any, list[Fragment]]:
    out: dict[Any, list[Fragment]] = {}
    for f in fragments:
        out.setdefault(f.owner, []).append(f)
    return out


def narrow_items(
    scope: QueryScope,
    entities: list[EntityItem],
    relations: list[RelationItem],
    fragments: Iterable[Fragment],
) -> tuple[list[EntityItem], list[RelationItem], int]:
    """Stage 1's entities and relations with in-scope descriptions, and how many changed."""
    owners = _owners(fragments)
    def description_change(owner: Any) -> dict[str, Any] | None:
        n = narrowed(scope, owners.get(owner, []))
        return None if n is None else {"description": n.description, "file_path": n.file_path}

    out_e, changed_e = replace_records(entities, "entity", lambda e: description_change(e.name))
    out_r, changed_r = replace_records(
        relations, "relation", lambda r: description_change(r.relation.pair)
    )
    changed = changed_e + changed_r
    return out_e, out_r, changed
