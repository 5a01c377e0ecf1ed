"""Stage 3: recover the chunks behind the kept entities and relations (``_merge_all_chunks``).

Scope layer (c), the authoritative chunk guard, is applied here: a chunk reaches stage 4 only
when its own stored metadata proves it is in scope.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain
from typing import Any

from hexrag.core.headings import (
    SECTION_CONTEXT_MAX_TOKENS,
    format_parent_headings,
    truncate_section_context,
)
from hexrag.core.merge import round_robin
from hexrag.core.model import Chunk
from hexrag.core.pick import score_ids, vector_similarity_pick, weighted_polling
from hexrag.core.run import ChunkItem, EntityItem, QueryRun, RelationItem
from hexrag.core.scope import chunk_in_scope
from hexrag.core.source_ids import split_lightrag

__all__ = ["attach_headings", "recover_chunks"]


def _count_and_dedup(
    lists: list[list[str]], skip: set[str] | None = None
) -> tuple[list[list[str]], dict[str, int]]:
    """LightRAG's occurrence counting: a chunk stays with the first item listing it.

    ``counts`` are the final occurrence counts over all lists (ids in ``skip`` ignored); each
    list keeps the ids whose first occurrence overall is in it, in order.
    """
    if skip:
        lists = [[c for c in ids if c not in skip] for ids in lists]
    counts = Counter(chain.from_iterable(lists))
    seen: set[str] = set()
    add = seen.add
    kept_lists = [[c for c in ids if not (c in seen or add(c))] for ids in lists]
    return kept_lists, counts


def _sort_by_count(lists: list[list[str]], counts: dict[str, int]) -> list[list[str]]:
    key = counts.__getitem__  # every kept id was counted
    return [sorted(ids, key=key, reverse=True) for ids in lists]


class _Picker:
    """Chunk selection with one scoring call shared by the entity and relation passes."""

    def __init__(self, run: QueryRun) -> None:
        self.run = run
        self.scores: dict[str, float] = {}

    async def prefetch_scores(self, ids: Sequence[str]) -> None:
        """Score every id not scored yet against the query vector, in one call."""
        qv = self.run.query_vector
        wanted = [i for i in dict.fromkeys(ids) if i not in self.scores]
        if not wanted or qv is None:
            return
        scored = await score_ids(self.run.stores.chunks, wanted, qv)
        self.scores.update(zip(wanted, scored.tolist(), strict=True))

    async def pick(self, sorted_lists: list[list[str]]) -> list[str]:
        run = self.run
        method = run.settings.kg_chunk_pick_method
        max_related = run.settings.related_chunk_number
        if method == "VECTOR" and run.query and run.query_vector is not None:
            num = int(max_related * len(sorted_lists) / 2)
            await self.prefetch_scores([c for ids in sorted_lists for c in ids])
            selected = vector_similarity_pick(sorted_lists, self.scores, num)
            if selected:
                return selected
            run.stats.chunk_pick_fallbacks += 1
        return weighted_polling(sorted_lists, max_related, 1)


async def _materialise(
    run: QueryRun, selected: list[str], also: Sequence[str] = ()
) -> list[tuple[str, Chunk]]:
    unique = list(dict.fromkeys(selected))
    # ``also``: ids the query will need later anyway (vector chunks), fetched in the same call
    await run.fetcher.prefetch([*unique, *also])
    records = await run.fetcher.get(unique)
    out = []
    for cid, rec in zip(unique, records, strict=True):
        if rec is None:
            continue
        if run.scope is not None and not chunk_in_scope(run.scope, rec):
            run.stats.scope_chunk_guard_removed += 1
            continue
        out.append((cid, rec))
    return out


async def _in_scope_lists(run: QueryRun, lists: list[list[str]]) -> list[list[str]]:
    """With a scope, drop candidate ids whose chunk is missing or out of scope before picking."""
    if run.scope is None:
        return lists
    await run.fetcher.prefetch(c for ids in lists for c in ids)
    out = []
    for ids in lists:
        kept = []
        for cid in ids:
            rec = run.fetcher.known(cid)
            if rec is not None and chunk_in_scope(run.scope, rec):
                kept.append(cid)
            elif rec is not None:
                run.stats.scope_chunk_guard_removed += 1
        out.append(kept)
    return [ids for ids in out if ids]


def _file_path(rec: Chunk) -> Any:
    return "unknown_source" if rec.file_path is None else rec.file_path


async def recover_chunks(
    run: QueryRun,
    entities: list[EntityItem],
    relations: list[RelationItem],
    vector_chunks: list[dict[str, Any]],
) -> list[ChunkItem]:
    """Entity chunks, relation chunks and vector chunks, round-robin merged (vector first)."""
    picker = _Picker(run)
    run.stats.chunk_pick_method = run.settings.kg_chunk_pick_method

    ent_lists = [
        ids for e in entities if e.entity.source_id and (ids := split_lightrag(e.entity.source_id))
    ]
    rel_raw = [
        ids
        for r in relations
        if r.relation.source_id and (ids := split_lightrag(r.relation.source_id))
    ]
    if run.scope is not None:
        # one chunk-store call for every candidate the guard must see (vector chunks included)
        await run.fetcher.prefetch(
            [c for ids in ent_lists + rel_raw for c in ids] + [v["chunk_id"] for v in vector_chunks]
        )
        ent_lists = await _in_scope_lists(run, ent_lists)
        rel_raw = await _in_scope_lists(run, rel_raw)
    if run.settings.kg_chunk_pick_method == "VECTOR" and run.query_vector is not None:
        await picker.prefetch_scores([c for ids in ent_lists + rel_raw for c in ids])

    later: list[str] = []
    if vector_chunks and (run.scope is not None or run.settings.enable_content_headings):
        later = [v["chunk_id"] for v in vector_chunks]

    entity_chunks: list[tuple[str, Chunk]] = []
    if ent_lists:
        kept, counts = _count_and_dedup(ent_lists)
        selected = await picker.pick(_sort_by_count(kept, counts))
        if selected:
            entity_chunks = await _materialise(run, selected, later)

    relation_chunks: list[tuple[str, Chunk]] = []
    if rel_raw:
        taken = {cid for cid, _ in entity_chunks}
        kept, counts = _count_and_dedup(rel_raw, skip=taken)
        kept = [ids for ids in kept if ids]
        if kept:
            selected = await picker.pick(_sort_by_count(kept, counts))
            if selected:
                relation_chunks = await _materialise(run, selected, later)

    vec_items: list[ChunkItem] = []
    if vector_chunks:
        if run.scope is not None:
            records = await run.fetcher.get([v["chunk_id"] for v in vector_chunks])
            guarded = []
            for v, rec in zip(vector_chunks, records, strict=True):
                if rec is not None and chunk_in_scope(run.scope, rec):
                    guarded.append(v)
                else:
                    run.stats.scope_chunk_guard_removed += 1
            vector_chunks = guarded
        vec_items = [
            ChunkItem(chunk_id=v["chunk_id"], content=v["content"], file_path=v["file_path"])
            for v in vector_chunks
        ]
    ent_items = [
        ChunkItem(chunk_id=cid, content=rec.content, file_path=_file_path(rec))
        for cid, rec in entity_chunks
    ]
    rel_items = [
        ChunkItem(chunk_id=cid, content=rec.content, file_path=_file_path(rec))
        for cid, rec in relation_chunks
    ]
    return round_robin([vec_items, ent_items, rel_items], key=lambda c: c.chunk_id)


async def attach_headings(run: QueryRun, chunks: Sequence[ChunkItem]) -> None:
    """Set each chunk's ``content_headings`` (LightRAG's ``_attach_content_headings``).

    LightRAG formats the heading path of every merged chunk; only the chunks that survive
    rerank and ``chunk_top_k`` ever show it (rerank reads the content alone), so stage 4
    calls this after that cut and formats a few dozen paths instead of hundreds. The records
    come from the query's chunk fetcher (already fetched: no extra round trip).
    """
    if not chunks:
        return
    records = await run.fetcher.get([c.chunk_id for c in chunks])
    for item, rec in zip(chunks, records, strict=True):
        if rec is None:
            continue
        path = truncate_section_context(
            format_parent_headings(rec.metadata), run.tokenizer, SECTION_CONTEXT_MAX_TOKENS
        )
        if path:
            item.content_headings = path
