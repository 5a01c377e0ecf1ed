"""The clock is injected: every cache entry the query engine or the corpus version writes carries
that clock's time."""

from __future__ import annotations

from hexrag.adapters.memory import FakeLLM, MemoryCache
from hexrag.core.query.engine import QueryEngine
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from hexrag.domain.params import QueryParam

NOW = 1_234_567_890


async def test_keyword_and_answer_cache_entries_carry_the_injected_clock() -> None:
    demo = await build_demo_engine()
    cache = MemoryCache()
    engine = QueryEngine(
        tokenizer=demo.engine.tokenizer,
        entities=demo.entities,
        relationships=demo.relationships,
        chunks=demo.chunks,
        graph=demo.graph,
        chunk_store=demo.chunk_store,
        embedder=demo.engine.embedder,
        llm=FakeLLM(),
        cache=cache,
        clock=lambda: NOW,
    )
    result = await engine.query_result(DEFAULT_QUESTION, QueryParam(mode="hybrid"))
    assert not result.cache_hit
    entries = dict(cache.items())
    kinds = {entry.get("cache_type") for entry in entries.values()}
    assert {"keywords", "query"} <= kinds, kinds  # both writes happened
    for key, entry in entries.items():
        assert (entry["create_time"], entry["update_time"]) == (NOW, NOW), key


async def test_a_corpus_version_entry_carries_the_injected_clock() -> None:
    from hexrag.core.versioning import CORPUS_VERSION_KEY, CorpusVersion

    cache = MemoryCache()
    token = await CorpusVersion(cache, clock=lambda: NOW).bump()
    (entry,) = await cache.get_many([CORPUS_VERSION_KEY])
    assert entry is not None and entry["return"] == token
    assert (entry["create_time"], entry["update_time"]) == (NOW, NOW)
