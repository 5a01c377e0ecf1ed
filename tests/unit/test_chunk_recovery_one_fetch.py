"""Stage 3 fetches the picked entity and relation chunks in one chunk-store call, and still
returns what LightRAG's two passes return (:mod:`hexrag.core.reference.reference`): the
relation pick
skips only the entity chunks that were found, missing ids are reported in LightRAG's order,
and a missing entity chunk costs a second call only when the redone pick names new ids."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.memory import MemoryChunkStore
from hexrag.core.model import Chunk, Entity, QueryParam, Relation
from hexrag.core.query.chunks import Picking, recover_chunks
from hexrag.core.query.merge import round_robin
from hexrag.core.query.run import ChunkFetcher, EntityItem, QueryRun, RelationItem, RunStats
from hexrag.core.reference.reference import pick_chunks, sorted_chunk_lists

SEP = "<SEP>"
ids = st.sampled_from([f"c{i}" for i in range(20)])
lists = st.lists(st.lists(ids, min_size=1, max_size=6), max_size=8)


class CountingStore(MemoryChunkStore):
    """A memory chunk store that counts its ``get_chunks`` calls."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        super().__init__(chunks)
        self.calls: list[list[str]] = []

    async def get_chunks(self, wanted: Sequence[str]) -> list[Chunk | None]:
        self.calls.append(list(wanted))
        return await super().get_chunks(wanted)


def _expected(ent_lists: list[list[str]], rel_lists: list[list[str]], found: set[str],
              vector: list[str], related: int) -> tuple[list[str], list[str]]:
    """LightRAG's two passes on the reference: merged chunk ids, missing ids in order."""
    ent = pick_chunks(sorted_chunk_lists(ent_lists), method="WEIGHT",
                      related_chunk_number=related, scores=None).ids if ent_lists else []
    ent_unique = list(dict.fromkeys(ent))
    recovered = [c for c in ent_unique if c in found]
    rel_sorted = [x for x in sorted_chunk_lists(rel_lists, set(recovered)) if x]
    rel = pick_chunks(rel_sorted, method="WEIGHT", related_chunk_number=related,
                      scores=None).ids if rel_sorted else []
    rel_unique = list(dict.fromkeys(rel))
    merged = round_robin(
        [vector, recovered, [c for c in rel_unique if c in found]], key=lambda c: c
    )
    order = ([*ent_unique, *vector, *rel_unique] if ent_unique else [*rel_unique, *vector]) \
        if (ent_unique or rel_unique) else []
    missing = list(dict.fromkeys(c for c in order if c not in found))
    return merged, missing


@settings(max_examples=300, deadline=None)
@given(lists, lists, st.sets(ids), st.lists(ids, max_size=3, unique=True), st.integers(1, 5))
def test_one_fetch_returns_lightrags_two_passes(
    ent_lists: list[list[str]], rel_lists: list[list[str]], found: set[str],
    vector: list[str], related: int,
) -> None:
    store = CountingStore([Chunk(id=c, content=f"text of {c}") for c in sorted(found)])
    stats = RunStats()
    run = QueryRun(query="q", param=QueryParam(mode="mix"), stats=stats,
                   fetcher=ChunkFetcher(store, stats))
    entities = [EntityItem(Entity(name=f"e{i}", source_id=SEP.join(x)), rank=None,
                           created_at=None) for i, x in enumerate(ent_lists)]
    relations = [RelationItem(Relation(id=f"r{i}", src_id="a", tgt_id=f"b{i}",
                                       source_id=SEP.join(x)), "a", f"b{i}", rank=None,
                              created_at=None, resolved_by="local")
                 for i, x in enumerate(rel_lists)]
    vec = [{"chunk_id": c, "content": f"text of {c}", "file_path": "f"} for c in vector]
    picking = Picking("WEIGHT", related, prefetch_vector_chunks=True)
    got: Any = asyncio.run(recover_chunks(None, run, entities, relations, vec,  # type: ignore[arg-type]
                                          picking))
    merged, missing = _expected(ent_lists, rel_lists, found, vector, related)
    assert [c.chunk_id for c in got] == merged
    assert list(stats.missing_chunk_ids) == missing
    assert len(store.calls) <= 2
    ent_unique = set(pick_chunks(sorted_chunk_lists(ent_lists), method="WEIGHT",
                                 related_chunk_number=related, scores=None).ids
                     if ent_lists else [])
    if ent_unique <= found:
        assert len(store.calls) <= 1
