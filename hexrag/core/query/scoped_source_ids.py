"""Scope-correct chunk id lists: a scoped query names only in-scope chunks.

An entity or relation merged from several products' text names every chunk it came from in
its ``source_id`` (``<SEP>``-joined chunk ids). A query scoped to one product must not show
the other products' chunk ids, as it already does not show their ``file_path`` or
descriptions (:mod:`hexrag.core.query.narrowing`) or their chunks (the chunk guard,
:func:`hexrag.core.scope.chunk_in_scope`).

The rule (stated plainly by :func:`in_scope_source_id_plain`): for a scoped query, the
``source_id`` an entity or relation reports is its stored ``source_id`` split on ``<SEP>``,
each id stripped and empty ids dropped, keeping (in stored order, repeats as stored) only the
ids whose chunk the chunk store holds and whose own metadata proves it in scope - the chunk
guard's verdict, so ``"chunk-1"`` and ``"chunk-10"`` are decided each on its own record.
When no id is dropped the stored string is reported unchanged (exactly as unscoped).

Stage 3 has already fetched every candidate chunk of the kept entities and relations for its
guard, so :func:`narrow_source_ids` costs no chunk-store round trip on the engine's path (it
asks the query's fetcher, which only fetches what it has not seen). Unscoped queries are not
touched: the engine calls it only under a scope.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from typing import Any

from hexrag.core.query.item_records import replace_records
from hexrag.core.query.run import EntityItem, QueryRun, RelationItem
from hexrag.core.query.source_ids import join_source_ids, split_lightrag
from hexrag.core.scope import chunk_in_scope
from hexrag.domain.records import GRAPH_FIELD_SEP, Chunk
from hexrag.domain.scope import QueryScope

__all__ = ["in_scope_source_id", "in_scope_source_id_plain", "narrow_source_ids"]


def in_scope_source_id_plain(
    scope: QueryScope, source_id: str | None, chunk_of: Callable[[str], Chunk | None]
) -> str | None:
    """The reference statement: the in-scope form of a stored ``<SEP>`` string ``source_id``.

    ``chunk_of`` gives the stored chunk of an id (``None`` when missing). Returns ``None`` when
    every id is in scope (the stored value is then reported as it is).
    """
    if not source_id:
        return None
    kept: list[str] = []
    dropped = False
    for segment in source_id.split(GRAPH_FIELD_SEP):
        cid = segment.strip()
        if not cid:
            continue
        chunk = chunk_of(cid)
        if chunk is not None and chunk_in_scope(scope, chunk):
            kept.append(cid)
        else:
            dropped = True
    return GRAPH_FIELD_SEP.join(kept) if dropped else None


def in_scope_source_id(value: Any, in_scope: Container[str]) -> str | None:
    """The fast form: ``value``'s ids in stored order that are in ``in_scope`` (each chunk
    decided once per query), ``None`` when none is dropped. ``value`` may be a ``<SEP>``
    string or any form :func:`hexrag.core.query.source_ids.split_lightrag` reads."""
    if not value:
        return None
    ids = split_lightrag(value)
    kept = [cid for cid in ids if cid in in_scope]
    return join_source_ids(kept) if len(kept) != len(ids) else None


async def narrow_source_ids(
    run: QueryRun, entities: list[EntityItem], relations: list[RelationItem]
) -> tuple[list[EntityItem], list[RelationItem], int]:
    """The kept entities and relations with in-scope ``source_id`` s, and how many changed.

    Unscoped (``run.scope`` is ``None``) they are returned as they are.
    """
    scope = run.scope
    if scope is None:
        return entities, relations, 0
    values = [e.entity.source_id for e in entities] + [r.relation.source_id for r in relations]
    candidates = _ids(values)
    await run.fetcher.prefetch(candidates)  # already known after stage 3: no round trip
    known = run.fetcher.known
    in_scope = {cid for cid in candidates
                if (c := known(cid)) is not None and chunk_in_scope(scope, c)}
    def source_id_change(record: Any) -> dict[str, Any] | None:
        narrowed = in_scope_source_id(record.source_id, in_scope)
        return None if narrowed is None else {"source_id": narrowed}

    out_e, changed_e = replace_records(entities, "entity", lambda e: source_id_change(e.entity))
    out_r, changed_r = replace_records(
        relations, "relation", lambda r: source_id_change(r.relation)
    )
    changed = changed_e + changed_r
    return out_e, out_r, changed


def _ids(values: Iterable[Any]) -> list[str]:
    out: dict[str, None] = {}
    for value in values:
        if value:
            out.update(dict.fromkeys(split_lightrag(value)))
    return list(out)
