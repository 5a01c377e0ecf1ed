"""Stage 3 when only the head of the merged chunk list can be shown (fast form).

Without a reranker and with ``chunk_top_k`` set, stage 4 cuts the merged list to its first
``chunk_top_k`` chunks before it reads a single text (heading paths, token truncation,
references). LightRAG, and :func:`hexrag.core.query.chunks.recover_chunks`, still read every
candidate chunk: hundreds per KG query, megabytes on a real store. This form picks exactly
as :func:`~hexrag.core.query.chunks.recover_chunks` does (the same picks, the same redone
relation pick, the same missing ids in the same order, the same merge), but it asks the chunk
store (:class:`~hexrag.ports.chunk_presence.ChunksWithPresence`) which candidates exist and
reads whole only the few that can reach the head, in one call. It returns the head and the
length of the whole merged list (``merged_chunks_count``).

Property-tested equal to ``recover_chunks`` followed by the head cut, store calls included
(``tests/unit/test_chunk_head.py``); the rule itself is stated plainly in
:mod:`hexrag.core.reference.reference`.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from hexrag.core.query.chunks import Picking, _entity_picks, _item, _source_lists
from hexrag.core.query.merge import round_robin
from hexrag.core.query.run import ChunkItem, EntityItem, QueryRun, RelationItem
from hexrag.domain.records import Chunk
from hexrag.ports import VectorIndex
from hexrag.ports.chunk_presence import ChunksWithPresence

__all__ = ["HEAD_SLACK", "recover_chunk_head"]

HEAD_SLACK = 8
"""Chunks read whole beyond the head, so that a few missing candidates (which move later
chunks up) cost no second call."""


def _missing_order(
    base: Sequence[str], ent_ids: Sequence[str], rel_ids: Sequence[str],
    later: Sequence[str], present: set[str],
) -> list[str]:
    """The missing ids as ``chunks._fetch_in_order`` records them."""
    first = [*ent_ids, *later] if ent_ids else []
    second = rel_ids if ent_ids else [*rel_ids, *later]
    order = dict.fromkeys(base)
    for cid in chain(first, second):
        if cid not in order and cid not in present:
            order[cid] = None
    return list(order)


def _merged_head(
    vec_ids: Sequence[str], ent_ids: Sequence[str], rel_ids: Sequence[str], head: int
) -> tuple[list[tuple[str, int]], int]:
    """The first ``head`` ids of ``round_robin([vec, ent, rel])`` (each with its position in
    ``vec_ids``, or -1) and the merged list's length, without building the rest of it."""
    n_merged = len(set(chain(vec_ids, ent_ids, rel_ids)) - {""})
    top: list[tuple[str, int]] = []
    seen: set[str] = set()
    sources: list[Sequence[str]] = [vec_ids, ent_ids, rel_ids]
    limit = min(head, n_merged)
    i = 0
    while len(top) < limit:
        for s, src in enumerate(sources):
            if i < len(src):
                cid = src[i]
                if cid and cid not in seen:
                    seen.add(cid)
                    top.append((cid, i if s == 0 else -1))
                    if len(top) == limit:
                        break
        i += 1
    return top, n_merged


async def recover_chunk_head(
    chunk_index: VectorIndex,
    chunk_store: ChunksWithPresence,
    run: QueryRun,
    entities: list[EntityItem],
    relations: list[RelationItem],
    vector_chunks: list[dict[str, Any]],
    picking: Picking,
    head: int,
) -> tuple[list[ChunkItem], int]:
    """``recover_chunks(...)[:head]`` and ``len(recover_chunks(...))``, for an unscoped
    query."""
    assert run.scope is None and head > 0
    stats = run.stats
    stats.chunk_pick_method = picking.method
    ent_lists, rel_raw = _source_lists(run, entities, relations)
    ent_selected, pick_relations = await _entity_picks(
        chunk_index, run, ent_lists, rel_raw, picking
    )
    ent_unique = list(dict.fromkeys(ent_selected))
    fallbacks = stats.chunk_pick_fallbacks
    base = list(stats.missing_chunk_ids)
    rel_selected = pick_relations(ent_unique)
    vec_ids = [v["chunk_id"] for v in vector_chunks]
    later = vec_ids if picking.prefetch_vector_chunks else []

    # One call: the likely head whole (as if every candidate were stored), the rest probed.
    guess = round_robin(
        [vec_ids, ent_unique, list(dict.fromkeys(rel_selected))], key=None,
        limit=head + HEAD_SLACK,
    )
    probed = list(dict.fromkeys(chain(ent_unique, rel_selected, later)))
    records, present = await chunk_store.get_chunks_and_presence(guess, probed)
    whole: dict[str, Chunk] = {cid: rec for cid, rec in zip(guess, records, strict=True)
                               if rec is not None}
    present.update(c for c in probed if c in whole)
    fetched = bool(ent_unique or rel_selected)  # as _fetch_in_order: nothing is otherwise
    if not fetched:
        probed = []  # the full form fetched none of them: the vector chunks stay unknown
    entity_chunks = [cid for cid in ent_unique if cid in present]
    if len(entity_chunks) != len(ent_unique):
        # a missing entity chunk: the relation pick is redone without skipping it
        stats.chunk_pick_fallbacks = fallbacks
        rel_selected = pick_relations(entity_chunks)
        known = set(probed)
        unknown = [c for c in dict.fromkeys(rel_selected) if c not in known]
        if unknown:
            _, more = await chunk_store.get_chunks_and_presence([], unknown)
            present.update(more)
            probed.extend(unknown)
    if fetched:
        missing = stats.missing_chunk_ids
        missing.clear()
        missing.update(dict.fromkeys(
            _missing_order(base, ent_unique, rel_selected, later, present)))
    relation_chunks = [cid for cid in dict.fromkeys(rel_selected) if cid in present]

    # What the fetcher of the full form would know: the whole records, the missing ids.
    run.fetcher.remember({c: None for c in probed if c not in present})
    run.fetcher.remember(whole)

    top, n_merged = _merged_head(vec_ids, entity_chunks, relation_chunks, head)
    lacking = [c for c, i in top if i < 0 and c not in whole]
    if lacking:  # more candidates were missing than the slack covers
        for cid, rec in zip(lacking, await run.fetcher.get(lacking), strict=True):
            if rec is not None:
                whole[cid] = rec
    items: list[ChunkItem] = []
    for cid, i in top:
        if i >= 0:
            v = vector_chunks[i]
            items.append(ChunkItem(chunk_id=cid, content=v["content"], file_path=v["file_path"]))
        else:
            items.append(_item(cid, whole[cid]))
    return items, n_merged
