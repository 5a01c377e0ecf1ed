"""Corpus versioning: a write through the stack means no cached answer from before it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.memory import (
    FakeLLM,
    HashingEmbedder,
    MemoryCache,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
    default_keywords,
)
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import Chunk, Entity, QueryParam, Relation, VectorRecord
from hexrag.core.query.engine import QueryEngine
from hexrag.core.versioning import (
    CORPUS_VERSION_KEY,
    INITIAL_VERSION,
    CorpusVersion,
    TrackedChunkStore,
    TrackedGraphStore,
    TrackedVectorIndex,
    track_writes,
)
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from hexrag.ports import ChunkStore, GraphStore, VectorIndex

# ----------------------------------------------------------------------------- CorpusVersion


async def test_version_starts_initial_and_every_bump_is_new() -> None:
    cache = MemoryCache()
    version = CorpusVersion(cache)
    assert await version.current() == INITIAL_VERSION
    seen = {INITIAL_VERSION}
    for _ in range(20):
        token = await version.bump()
        assert token not in seen
        seen.add(token)
        assert await version() == token


async def test_version_entry_is_a_lightrag_shaped_cache_entry() -> None:
    cache = MemoryCache()
    token = await CorpusVersion(cache).bump()
    (entry,) = await cache.get_many([CORPUS_VERSION_KEY])
    assert entry is not None
    assert entry["return"] == token
    assert entry["cache_type"] == "corpus_version"
    assert entry["_id"] == CORPUS_VERSION_KEY


async def test_clearing_the_cache_resets_the_version() -> None:
    cache = MemoryCache()
    version = CorpusVersion(cache)
    await version.bump()
    await cache.clear()
    assert await version.current() == INITIAL_VERSION


async def test_a_malformed_entry_reads_as_initial() -> None:
    cache = MemoryCache()
    await cache.set_many({CORPUS_VERSION_KEY: {"return": 42}})
    assert await CorpusVersion(cache).current() == INITIAL_VERSION


async def test_custom_key_leaves_the_default_alone() -> None:
    cache = MemoryCache()
    a, b = CorpusVersion(cache), CorpusVersion(cache, key="hexrag:other_version")
    await b.bump()
    assert await a.current() == INITIAL_VERSION
    assert await b.current() != INITIAL_VERSION


# ----------------------------------------------------------------------------- wrappers

DIM = 16


def _vec(seed: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[seed % DIM] = 1.0
    return v


class _Probe:
    """A version plus helpers to see whether an operation bumped it."""

    def __init__(self) -> None:
        self.cache = MemoryCache()
        self.version = CorpusVersion(self.cache)

    async def bumped_by(self, op: Any) -> bool:
        before = await self.version.current()
        await op
        return await self.version.current() != before


async def test_vector_index_writes_bump_and_reads_do_not() -> None:
    probe = _Probe()
    index = TrackedVectorIndex(MemoryVectorIndex("entities", DIM), probe.version)
    assert isinstance(index, VectorIndex)
    assert (index.namespace, index.dim, index.cosine_threshold) == ("entities", DIM, 0.2)
    rec = VectorRecord(id="ent-a", vector=_vec(1), entity_name="A", content="A")
    assert await probe.bumped_by(index.upsert([rec]))
    assert not await probe.bumped_by(index.query(_vec(1), 5))
    assert not await probe.bumped_by(index.get(["ent-a"]))
    assert not await probe.bumped_by(index.get_vectors(["ent-a"]))
    assert not await probe.bumped_by(index.count())
    assert await probe.bumped_by(index.delete(["ent-a"]))
    assert await index.count() == 0


async def test_graph_store_writes_bump_and_reads_do_not() -> None:
    probe = _Probe()
    graph = TrackedGraphStore(MemoryGraphStore(), probe.version)
    assert isinstance(graph, GraphStore)
    assert await probe.bumped_by(graph.upsert_nodes([Entity(name="A"), Entity(name="B")]))
    rel = Relation(id="rel-1", src_id="A", tgt_id="B", source_id="chunk-1")
    assert await probe.bumped_by(graph.upsert_edges([rel]))
    for read in (
        graph.get_nodes(["A"]),
        graph.node_degrees(["A"]),
        graph.edge_degrees([("A", "B")]),
        graph.get_node_edges(["A"]),
        graph.get_edges_by_pairs([("A", "B")]),
        graph.get_edges_by_chunk_ids(["chunk-1"]),
        graph.count_nodes(),
        graph.count_edges(),
    ):
        assert not await probe.bumped_by(read)
    assert await probe.bumped_by(graph.delete_edges(["rel-1"]))
    assert await probe.bumped_by(graph.delete_nodes(["A"]))
    assert await graph.count_nodes() == 1


async def test_chunk_store_writes_bump_and_reads_do_not() -> None:
    probe = _Probe()
    store = TrackedChunkStore(MemoryChunkStore(), probe.version)
    assert isinstance(store, ChunkStore)
    assert await probe.bumped_by(store.upsert_chunks([Chunk(id="chunk-1", content="x")]))
    assert not await probe.bumped_by(store.get_chunks(["chunk-1"]))
    assert not await probe.bumped_by(store.count())
    assert await probe.bumped_by(store.delete_chunks(["chunk-1"]))


async def test_a_failed_write_still_bumps_and_raises_its_own_error() -> None:
    probe = _Probe()
    index = TrackedVectorIndex(MemoryVectorIndex("chunks", DIM), probe.version)
    before = await probe.version.current()
    bad = VectorRecord(id="c", vector=np.ones(DIM + 1, dtype=np.float32))
    with pytest.raises(ConfigurationError):
        await index.upsert([bad])
    assert await probe.version.current() != before


class _FailingWriteCache(MemoryCache):
    """A cache that cannot write (a real cache whose backend went read-only)."""

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        raise ConfigurationError("cache is read-only")


async def test_a_failed_bump_after_a_successful_write_is_reported() -> None:
    version = CorpusVersion(_FailingWriteCache())
    store = TrackedChunkStore(MemoryChunkStore(), version)
    with pytest.raises(ConfigurationError, match="read-only"):
        await store.upsert_chunks([Chunk(id="c", content="x")])
    assert await store.count() == 1  # the write itself landed


async def test_extras_of_the_adapter_stay_reachable_and_wrapping_is_idempotent() -> None:
    probe = _Probe()
    inner = MemoryGraphStore()
    await inner.upsert_nodes([Entity(name="A")])
    stores = track_writes(
        probe.version,
        entities=MemoryVectorIndex("entities", DIM),
        relationships=MemoryVectorIndex("relationships", DIM),
        chunks=MemoryVectorIndex("chunks", DIM),
        graph=inner,
        chunk_store=MemoryChunkStore(),
    )
    graph = stores["graph"]
    assert isinstance(graph, TrackedGraphStore) and graph.inner is inner
    assert [e.name for e in graph.iter_nodes()] == ["A"]  # adapter extra, via the wrapper
    again = track_writes(probe.version, **stores)
    assert all(again[k] is stores[k] for k in stores)


# ----------------------------------------------------------------------------- the engine


class _CountingAnswers:
    """FakeLLM script: keyword JSON by default; answers numbered and saying what they saw."""

    def __init__(self) -> None:
        self.answers = 0

    def __call__(
        self, prompt: str, system_prompt: str | None, history: Sequence[Any], json_mode: bool
    ) -> str:
        if json_mode:
            return json.dumps(default_keywords(prompt))
        self.answers += 1
        saw = "NEWFACT" in (system_prompt or "")
        return f"answer #{self.answers} (saw new fact: {saw})"


async def _versioned_engine() -> tuple[QueryEngine, FakeLLM, MemoryCache, dict[str, Any]]:
    demo = await build_demo_engine()
    cache = MemoryCache()
    version = CorpusVersion(cache)
    stores = track_writes(
        version,
        entities=demo.entities,
        relationships=demo.relationships,
        chunks=demo.chunks,
        graph=demo.graph,
        chunk_store=demo.chunk_store,
    )
    llm = FakeLLM(_CountingAnswers())
    engine = QueryEngine(
        tokenizer=demo.engine.tokenizer,
        **stores, embedder=demo.engine.embedder, llm=llm, cache=cache, corpus_version=version
    )
    return engine, llm, cache, stores


def _answer_calls(llm: FakeLLM) -> int:
    return sum(1 for c in llm.calls if not c.json_mode)


def _keyword_calls(llm: FakeLLM) -> int:
    return sum(1 for c in llm.calls if c.json_mode)


@pytest.mark.parametrize("mode", ["mix", "naive"])
async def test_a_write_through_the_stack_invalidates_cached_answers(mode: str) -> None:
    engine, llm, _cache, stores = await _versioned_engine()
    param = QueryParam(mode=mode)

    first = await engine.query_result(DEFAULT_QUESTION, param)
    assert (first.content, first.cache_hit) == ("answer #1 (saw new fact: False)", False)
    again = await engine.query_result(DEFAULT_QUESTION, param)
    assert (again.content, again.cache_hit) == (first.content, True)
    assert _answer_calls(llm) == 1
    keyword_calls = _keyword_calls(llm)

    # A new chunk about the question, written through the tracked stores.
    text = "NEWFACT: single sign-on with Okta now needs the SCIM connector."
    embedder = engine.embedder
    (vector,) = await embedder.embed([text])
    chunk = Chunk(id="chunk-newfact", content=text, file_path="acme-crm/sso.md",
                  full_doc_id="doc-sso", metadata={"product_id": "p-crm", "category_id": "crm"})
    await stores["chunk_store"].upsert_chunks([chunk])
    await stores["chunks"].upsert(
        [VectorRecord(id=chunk.id, vector=vector, content=text, file_path=chunk.file_path,
                      full_doc_id=chunk.full_doc_id, metadata=chunk.metadata)]
    )

    after = await engine.query_result(DEFAULT_QUESTION, param)
    assert after.cache_hit is False
    assert after.content == "answer #2 (saw new fact: True)"
    assert _answer_calls(llm) == 2
    # The keyword cache is keyed by the query only: the write did not touch it.
    assert _keyword_calls(llm) == keyword_calls
    # ... and the fresh answer is cached under the new version.
    cached = await engine.query_result(DEFAULT_QUESTION, param)
    assert (cached.content, cached.cache_hit) == (after.content, True)


async def test_a_graph_only_write_also_invalidates() -> None:
    engine, llm, _cache, stores = await _versioned_engine()
    param = QueryParam(mode="local")
    await engine.query_result(DEFAULT_QUESTION, param)
    await stores["graph"].upsert_nodes([Entity(name="Unrelated", description="x")])
    result = await engine.query_result(DEFAULT_QUESTION, param)
    assert result.cache_hit is False and _answer_calls(llm) == 2


async def test_the_version_is_read_before_retrieval_starts() -> None:
    demo = await build_demo_engine()
    embedder: HashingEmbedder = demo.engine.embedder  # type: ignore[assignment]
    embed_calls_at_read: list[int] = []

    async def version() -> str:
        embed_calls_at_read.append(len(embedder.calls))
        return "v1"

    engine = QueryEngine(
        tokenizer=demo.engine.tokenizer,
        entities=demo.entities,
        relationships=demo.relationships,
        chunks=demo.chunks,
        graph=demo.graph,
        chunk_store=demo.chunk_store,
        embedder=embedder,
        llm=FakeLLM(),
        cache=MemoryCache(),
        corpus_version=version,
    )
    before = len(embedder.calls)
    await engine.query_result(DEFAULT_QUESTION, QueryParam(mode="hybrid"))
    assert embed_calls_at_read == [before]
    assert len(embedder.calls) > before


@pytest.mark.parametrize(
    "update",
    [
        {"only_need_context": True},
        {"only_need_prompt": True},
        {"conversation_history": [{"role": "user", "content": "hi"}]},
    ],
)
async def test_the_version_is_not_read_when_no_answer_is_cached(update: dict[str, Any]) -> None:
    demo = await build_demo_engine()
    reads: list[str] = []

    async def version() -> str:
        reads.append("read")
        return "v1"

    engine = QueryEngine(
        tokenizer=demo.engine.tokenizer,
        entities=demo.entities,
        relationships=demo.relationships,
        chunks=demo.chunks,
        graph=demo.graph,
        chunk_store=demo.chunk_store,
        embedder=demo.engine.embedder,
        llm=FakeLLM(),
        cache=MemoryCache(),
        corpus_version=version,
    )
    await engine.query_result(DEFAULT_QUESTION, QueryParam(mode="mix", **update))
    await engine.query_data(DEFAULT_QUESTION, QueryParam(mode="mix"))
    assert reads == []
