"""Stage 3's head form (:func:`hexrag.core.query.chunk_head.recover_chunk_head`) returns what
the full form returns, cut to the head: the same chunks (ids, texts, paths), the same merged
count, the same missing ids in the same order, the same pick fallbacks, and afterwards the
query's chunk fetcher answers the head's records (stage 4's heading paths) with the same
missing ids recorded, while the candidates outside the head are only probed, not read."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.memory import MemoryChunkStore
from hexrag.core.model import Chunk, Entity, QueryParam, Relation
from hexrag.core.query.chunk_head import recover_chunk_head
from hexrag.core.query.chunks import Picking, recover_chunks
from hexrag.core.query.run import ChunkFetcher, EntityItem, QueryRun, RelationItem, RunStats
from hexrag.ports.chunk_presence import ChunksWithPresence

SEP = "<SEP>"
ids = st.sampled_from([f"c{i}" for i in range(24)])
lists = st.lists(st.lists(ids, min_size=1, max_size=6), max_size=8)


class CountingStore(MemoryChunkStore):
    """A memory chunk store that records the ids it returned whole."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        super().__init__(chunks)
        self.read_whole: list[str] = []
        self.calls = 0

    async def get_chunks(self, wanted: Sequence[str]) -> list[Chunk | None]:
        self.calls += 1
        self.read_whole.extend(wanted)
        return await super().get_chunks(wanted)

    async def get_chunks_and_presence(
        self, wanted: Sequence[str], probe: Sequence[str]
    ) -> tuple[list[Chunk | None], set[str]]:
        self.calls += 1
        self.read_whole.extend(wanted)
        return await super().get_chunks_and_presence(wanted, probe)


def _run(store: CountingStore, base_missing: Sequence[str]) -> QueryRun:
    stats = RunStats()
    for cid in base_missing:
        stats.missing_chunk_ids[cid] = None
    return QueryRun(query="q", param=QueryParam(mode="mix"), stats=stats,
                    fetcher=ChunkFetcher(store, stats))


def _inputs(ent_lists: list[list[str]], rel_lists: list[list[str]], vector: list[str]) -> Any:
    entities = [EntityItem(Entity(name=f"e{i}", source_id=SEP.join(x)), rank=None,
                           created_at=None) for i, x in enumerate(ent_lists)]
    relations = [RelationItem(Relation(id=f"r{i}", src_id="a", tgt_id=f"b{i}",
                                       source_id=SEP.join(x)), "a", f"b{i}", rank=None,
                              created_at=None, resolved_by="local")
                 for i, x in enumerate(rel_lists)]
    vec = [{"chunk_id": c, "content": f"vector text of {c}", "file_path": "v.md"}
           for c in vector]
    return entities, relations, vec


def _store(found: set[str]) -> CountingStore:
    return CountingStore([
        Chunk(id=c, content=f"text of {c}", file_path=None if c.endswith("3") else f"{c}.md",
              metadata={"heading": {"path": [c]}})
        for c in sorted(found)
    ])


@settings(max_examples=400, deadline=None)
@given(lists, lists, st.sets(ids), st.lists(ids, max_size=6, unique=True), st.integers(1, 5),
       st.integers(1, 12), st.booleans(), st.lists(ids, max_size=2))
def test_head_form_equals_the_full_form_cut_to_the_head(
    ent_lists: list[list[str]], rel_lists: list[list[str]], found: set[str],
    vector: list[str], related: int, head: int, prefetch: bool, base_missing: list[str],
) -> None:
    picking = Picking("WEIGHT", related, prefetch_vector_chunks=prefetch)

    full_store = _store(found)
    full_run = _run(full_store, base_missing)
    entities, relations, vec = _inputs(ent_lists, rel_lists, vector)
    merged: Any = asyncio.run(recover_chunks(None, full_run, entities, relations, vec,  # type: ignore[arg-type]
                                             picking))
    want_head = merged[:head]

    head_store = _store(found)
    assert isinstance(head_store, ChunksWithPresence)
    head_run = _run(head_store, base_missing)
    entities, relations, vec = _inputs(ent_lists, rel_lists, vector)
    got, count = asyncio.run(recover_chunk_head(
        None, head_store, head_run, entities, relations, vec, picking, head))  # type: ignore[arg-type]

    assert count == len(merged)
    assert [(c.chunk_id, c.content, c.file_path) for c in got] == [
        (c.chunk_id, c.content, c.file_path) for c in want_head]
    assert list(head_run.stats.missing_chunk_ids) == list(full_run.stats.missing_chunk_ids)
    assert head_run.stats.chunk_pick_fallbacks == full_run.stats.chunk_pick_fallbacks

    # stage 4 reads the head's records (heading paths): same records, same missing ids
    wanted = [c.chunk_id for c in want_head]
    full_records = asyncio.run(full_run.fetcher.get(wanted))
    head_records = asyncio.run(head_run.fetcher.get(wanted))
    assert head_records == full_records
    assert list(head_run.stats.missing_chunk_ids) == list(full_run.stats.missing_chunk_ids)
    # at most one call more than the full form (a redone pick, or a head past the slack)
    assert head_store.calls <= full_store.calls + 1


def test_candidates_outside_the_head_are_probed_not_read() -> None:
    found = {f"c{i}" for i in range(24)}
    ent_lists = [[f"c{i}", f"c{i + 1}", f"c{i + 2}"] for i in range(0, 18, 3)]
    rel_lists = [[f"c{i}"] for i in range(18, 24)]
    store = _store(found)
    run = _run(store, [])
    entities, relations, vec = _inputs(ent_lists, rel_lists, [])
    got, count = asyncio.run(recover_chunk_head(
        None, store, run, entities, relations, vec, Picking("WEIGHT", 5), 2))  # type: ignore[arg-type]
    assert count == 24 and len(got) == 2
    assert len(store.read_whole) == 2 + 8  # the head and the slack, not the 24 candidates
    assert store.calls == 1
