"""MemoryChunkStore and MemoryCache: isolation from callers, exporters, initial content."""

from __future__ import annotations

import pytest

from hexrag.adapters.memory import MemoryCache, MemoryChunkStore
from hexrag.core.model import Chunk
from hexrag.testing import corpus


async def test_chunk_store_copies_metadata_on_write() -> None:
    meta = {"nested": {"a": [1]}}
    store = MemoryChunkStore([Chunk(id="c1", content="x", metadata=meta)])
    meta["nested"]["a"].append(2)
    got = (await store.get_chunks(["c1"]))[0]
    assert got is not None and got.metadata == {"nested": {"a": [1]}}


async def test_chunk_store_iter_chunks_in_insertion_order() -> None:
    chunks = corpus.chunks()
    store = MemoryChunkStore(chunks[:3])
    await store.upsert_chunks(chunks[3:])
    await store.upsert_chunks([Chunk(id=chunks[0].id, content="replaced")])
    assert [c.id for c in store.iter_chunks()] == [c.id for c in chunks]
    assert next(store.iter_chunks()).content == "replaced"


async def test_cache_copies_on_write_and_read() -> None:
    items: list[int] = [1, 2]
    value = {"return": "x", "list": items}
    cache = MemoryCache(entries={"k0": {"v": (1, 2)}})
    await cache.set_many({"k": value})
    items.append(3)
    first = (await cache.get_many(["k"]))[0]
    assert first == {"return": "x", "list": [1, 2]}
    first["list"].append(99)  # type: ignore[index]
    assert (await cache.get_many(["k"]))[0] == {"return": "x", "list": [1, 2]}
    assert list(cache.items()) == [("k0", {"v": [1, 2]}), ("k", {"return": "x", "list": [1, 2]})]
    assert len(cache) == 2 and cache.namespace == "llm_response_cache"


async def test_cache_rejects_non_json_values_without_partial_write() -> None:
    cache = MemoryCache()
    with pytest.raises(TypeError):
        await cache.set_many({"ok": {"v": 1}, "bad": {"v": object()}})
    assert await cache.get_many(["ok", "bad"]) == [None, None]
