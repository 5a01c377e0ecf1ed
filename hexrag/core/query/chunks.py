"""Stage 3: recover the chunks behind the kept entities and relations (``_merge_all_chunks``).

Scope layer (c), the authoritative chunk guard, is applied here: a chunk reaches stage 4 only
when its own stored metadata proves it is in scope.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from hexrag.core.query.headings import (
    SECTION_CONTEXT_MAX_TOKENS,
    format_parent_headings,
    truncate_section_context,
)
from hexrag.core.query.merge import round_robin
from hexrag.core.query.pick import score_ids, weighted_polling
from hexrag.core.query.run import ChunkItem, EntityItem, QueryRun, RelationItem
from hexrag.core.query.source_ids import split_lightrag
from hexrag.core.scope import chunk_in_scope
from hexrag.core.tokenizer import Tokenizer
from hexrag.domain.records import Chunk
from hexrag.ports import VectorIndex

__all__ = ["Picking", "attach_headings", "recover_chunks"]


class _Candidates:
    """The candidate chunk ids of the entity and relation lists, coded as small integers.

    LightRAG's occurrence counting, de-duplication, per-list sort and VECTOR ranking run over
    thousands of ids per query (popular entities name dozens of chunks each); on integer
    codes they are a handful of numpy operations instead of several Python passes.
    ``ids[code]`` is the chunk id of ``code``; codes follow first appearance.
    """

    def __init__(self, ent_lists: list[list[str]], rel_lists: list[list[str]]) -> None:
        self.ids: list[str] = list(dict.fromkeys(chain.from_iterable(chain(ent_lists, rel_lists))))
        self.code: dict[str, int] = dict(zip(self.ids, range(len(self.ids)), strict=True))
        self.ent = self._encode(ent_lists)
        self.rel = self._encode(rel_lists)
        self.scores: np.ndarray | None = None  # cosine per code (NaN: no vector)

    def _encode(self, lists: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        flat = list(chain.from_iterable(lists))
        codes = np.fromiter(map(self.code.__getitem__, flat), dtype=np.intp, count=len(flat))
        owner = np.repeat(np.arange(len(lists), dtype=np.intp), [len(ids) for ids in lists])
        return codes, owner


def _dedup_and_sort(
    codes: np.ndarray, owner: np.ndarray, n_codes: int, skip: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """LightRAG's occurrence counting and per-list ordering, on codes.

    Ids in ``skip`` are dropped first; an id then stays with the first list naming it;
    ``counts`` are occurrences over all lists; each list is sorted by count, descending,
    ties in list order (Python's stable ``sorted(..., reverse=True)``). Returns the kept
    codes, list after list, and the list each belongs to.
    """
    if skip is not None and len(codes):
        keep = ~skip[codes]
        codes, owner = codes[keep], owner[keep]
    if not len(codes):
        return codes, owner
    counts = np.bincount(codes, minlength=n_codes)
    _, first = np.unique(codes, return_index=True)
    first.sort()
    codes, owner = codes[first], owner[first]
    order = np.lexsort((-counts[codes], owner))  # stable: ties keep their list order
    return codes[order], owner[order]


def _lists_of(
    codes: np.ndarray, owner: np.ndarray, n_lists: int, keep_empty: bool
) -> list[list[int]]:
    bounds = np.searchsorted(owner, np.arange(n_lists + 1)).tolist()
    flat = codes.tolist()
    lists = [flat[bounds[i] : bounds[i + 1]] for i in range(n_lists)]
    return lists if keep_empty else [ids for ids in lists if ids]


def _pick(
    run: QueryRun,
    cand: _Candidates,
    codes: np.ndarray,
    owner: np.ndarray,
    n_lists: int,
    keep_empty: bool,
    picking: Picking,
) -> list[str]:
    """LightRAG's chunk selection over one pass's sorted lists (``n_lists`` of them)."""
    max_related = picking.related_chunk_number
    if keep_empty:
        n_sorted = n_lists
    else:
        n_sorted = int(np.count_nonzero(np.diff(owner, prepend=-1))) if len(owner) else 0
    if picking.method == "VECTOR" and run.query and cand.scores is not None:
        num = int(max_related * n_sorted / 2)
        values = cand.scores[codes]
        if num > 0 and len(values) and not np.isnan(values).any():
            # pick_by_vector_similarity: candidates (already unique) ranked by cosine, stable
            best = codes[np.argsort(-values, kind="stable")[:num]]
            return [cand.ids[c] for c in best.tolist()]
        run.stats.chunk_pick_fallbacks += 1
    lists = _lists_of(codes, owner, n_lists, keep_empty)
    return [cand.ids[c] for c in weighted_polling(lists, max_related, 1)]


async def _materialise(
    run: QueryRun, selected: list[str], also: Sequence[str] = ()
) -> list[tuple[str, Chunk]]:
    unique = list(dict.fromkeys(selected))
    # ``also``: ids the query will need later anyway (vector chunks), fetched in the same call
    await run.fetcher.prefetch([*unique, *also])
    known = run.fetcher.known
    scope = run.scope
    if scope is None:
        return [(cid, rec) for cid in unique if (rec := known(cid)) is not None]
    out = []
    for cid in unique:
        rec = known(cid)
        if rec is None:
            continue
        if not chunk_in_scope(scope, rec):
            run.stats.scope_chunk_guard_removed += 1
            continue
        out.append((cid, rec))
    return out


async def _fetch_in_order(
    run: QueryRun, ent_ids: list[str], rel_ids: list[str], later: Sequence[str],
    base: list[str],
) -> None:
    """Fetch the picked entity and relation chunks (and ``later``) in one call, recording
    missing ids after ``base`` (those recorded before the picks) in the order two calls
    (entity chunks and ``later``, then relation chunks) would: ``missing_chunk_sample`` stays
    as it was. Called again after a relation pick was redone, ids only the first pick named
    are no longer reported missing."""
    if not ent_ids and not rel_ids:
        return
    first = [*ent_ids, *later] if ent_ids else []
    second = rel_ids if ent_ids else [*rel_ids, *later]
    await run.fetcher.prefetch([*first, *second])
    known = run.fetcher.known
    order = dict.fromkeys(base)
    for cid in chain(first, second):
        if cid not in order and known(cid) is None:
            order[cid] = None
    missing = run.stats.missing_chunk_ids
    missing.clear()
    missing.update(order)


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


def _item(cid: str, rec: Chunk) -> ChunkItem:
    fp = rec.file_path
    return ChunkItem(cid, rec.content, "unknown_source" if fp is None else fp)


def _chunk_key(item: ChunkItem) -> str:
    return item.chunk_id


@dataclass(frozen=True)
class Picking:
    """How stage 3 picks chunks (LightRAG's ``kg_chunk_pick_method``,
    ``related_chunk_number``; ``prefetch_vector_chunks``: fetch the vector chunks' records in
    the same chunk-store call, as stage 4 will read them for heading paths)."""

    method: str
    related_chunk_number: int
    prefetch_vector_chunks: bool = False


def _source_lists(
    run: QueryRun, entities: list[EntityItem], relations: list[RelationItem]
) -> tuple[list[list[str]], list[list[str]]]:
    """The non-empty chunk-id lists (``source_id`` split) of the entities and the relations."""
    ent_lists = [
        ids
        for e in entities
        if e.entity.source_id and (ids := split_lightrag(e.entity.source_id, run.memo))
    ]
    rel_raw = [
        ids
        for r in relations
        if r.relation.source_id and (ids := split_lightrag(r.relation.source_id, run.memo))
    ]
    return ent_lists, rel_raw


async def _entity_picks(
    chunk_index: VectorIndex,
    run: QueryRun,
    ent_lists: list[list[str]],
    rel_raw: list[list[str]],
    picking: Picking,
) -> tuple[list[str], Callable[[Sequence[str]], list[str]]]:
    """The entity chunk pick, and the relation pick as a function of the chunk ids it skips.

    Candidates are scored once (VECTOR picking) for both passes.
    """
    cand = _Candidates(ent_lists, rel_raw)
    qv = run.query_vector
    if picking.method == "VECTOR" and qv is not None and cand.ids:
        # one scoring call for both passes
        cand.scores = await score_ids(chunk_index, cand.ids, qv)

    n_codes = len(cand.ids)
    ent_selected: list[str] = []
    if ent_lists:
        codes, owner = _dedup_and_sort(*cand.ent, n_codes)
        ent_selected = _pick(run, cand, codes, owner, len(ent_lists), True, picking)

    def pick_relations(taken_ids: Sequence[str]) -> list[str]:
        if not rel_raw:
            return []
        taken = np.zeros(n_codes, dtype=bool)
        taken[[cand.code[cid] for cid in taken_ids]] = True
        codes, owner = _dedup_and_sort(*cand.rel, n_codes, skip=taken)
        if not len(codes):
            return []
        return _pick(run, cand, codes, owner, len(rel_raw), False, picking)

    return ent_selected, pick_relations


async def recover_chunks(
    chunk_index: VectorIndex,
    run: QueryRun,
    entities: list[EntityItem],
    relations: list[RelationItem],
    vector_chunks: list[dict[str, Any]],
    picking: Picking,
) -> list[ChunkItem]:
    """Entity chunks, relation chunks and vector chunks, round-robin merged (vector first).

    ``chunk_index`` scores candidates for VECTOR picking (one call). LightRAG's rules are
    stated plainly in :mod:`hexrag.core.reference.reference`; this is their fast form.
    """
    run.stats.chunk_pick_method = picking.method

    ent_lists, rel_raw = _source_lists(run, entities, relations)
    if run.scope is not None:
        # one chunk-store call for every candidate the guard must see (vector chunks included)
        await run.fetcher.prefetch(
            [c for ids in ent_lists + rel_raw for c in ids] + [v["chunk_id"] for v in vector_chunks]
        )
        ent_lists = await _in_scope_lists(run, ent_lists)
        rel_raw = await _in_scope_lists(run, rel_raw)
    ent_selected, pick_relations = await _entity_picks(
        chunk_index, run, ent_lists, rel_raw, picking
    )

    later: list[str] = []
    if vector_chunks and (run.scope is not None or picking.prefetch_vector_chunks):
        later = [v["chunk_id"] for v in vector_chunks]

    # The relation pick skips the entity chunks that were found: picked first on the
    # assumption that every entity chunk is found, so both are fetched in one chunk-store
    # call; picked again (rarely) when one was missing or out of scope.
    ent_unique = list(dict.fromkeys(ent_selected))
    fallbacks = run.stats.chunk_pick_fallbacks
    base = list(run.stats.missing_chunk_ids)
    rel_selected = pick_relations(ent_unique)
    await _fetch_in_order(run, ent_unique, rel_selected, later, base)
    entity_chunks = await _materialise(run, ent_selected, later) if ent_selected else []
    if len(entity_chunks) != len(ent_unique):
        run.stats.chunk_pick_fallbacks = fallbacks
        rel_selected = pick_relations([cid for cid, _ in entity_chunks])
        await _fetch_in_order(run, ent_unique, rel_selected, later, base)
    relation_chunks = await _materialise(run, rel_selected, later) if rel_selected else []

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
    ent_items = [_item(cid, rec) for cid, rec in entity_chunks]
    rel_items = [_item(cid, rec) for cid, rec in relation_chunks]
    return round_robin([vec_items, ent_items, rel_items], key=_chunk_key)


async def attach_headings(
    run: QueryRun, chunks: Sequence[ChunkItem], tokenizer: Tokenizer
) -> None:
    """Set each chunk's ``content_headings`` (LightRAG's ``_attach_content_headings``).

    LightRAG formats the heading path of every merged chunk; only the chunks that survive
    rerank and ``chunk_top_k`` ever show it (rerank reads the content alone), so stage 4
    calls this after that cut and formats a few dozen paths instead of hundreds. The records
    come from the query's chunk fetcher (in KG modes already fetched: no extra round trip;
    in naive mode their metadata alone, when the store can read it without the texts).
    """
    if not chunks:
        return
    metadata = await run.fetcher.metadata([c.chunk_id for c in chunks])
    for item, meta in zip(chunks, metadata, strict=True):
        if meta is None:
            continue
        path = truncate_section_context(
            format_parent_headings(meta, run.memo), tokenizer, SECTION_CONTEXT_MAX_TOKENS
        )
        if path:
            item.content_headings = path
