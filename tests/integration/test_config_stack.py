"""Building real stacks from configuration: memory, a LightRAG working directory, PostgreSQL,
Redis and Milvus (test servers from ``tests/services``), with a real OpenAI-compatible HTTP
server as the LLM. Each stack gets the demo knowledge base written through it, answers a
question, and must not serve that answer from the cache after a write.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.memory import HashingEmbedder, MemoryCache
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.adapters.workdir import WorkdirStack, load_workdir, save_workdir
from hexrag.bootstrap import Stack, build_engine, build_stack
from hexrag.config import StackConfig, load_config
from hexrag.core.errors import BackendUnavailable, ConfigurationError
from hexrag.core.model import Chunk, QueryParam, VectorRecord
from hexrag.core.query.engine import QueryEngine
from hexrag.core.query.run import Stores
from hexrag.core.versioning import CORPUS_VERSION_KEY, TrackedChunkStore, TrackedVectorIndex
from hexrag.demo import DEFAULT_QUESTION, DemoStack, build_demo_engine
from hexrag.devtools.scripted_openai import Reply, ScriptedOpenAIServer
from tests.services.milvus import milvus_uri  # noqa: F401
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401
from tests.services.redis import redis_client, redis_server, redis_workspace  # noqa: F401

DIM = 32
KEYWORDS = {"high_level_keywords": ["single sign-on"], "low_level_keywords": ["Okta", "SSO"]}


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stacks below are configured explicitly; ambient HEXRAG_/LightRAG variables must
    not change them."""
    import os

    for name in list(os.environ):
        if name.startswith("HEXRAG_") and name not in (
            "HEXRAG_REQUIRE_BACKENDS", "HEXRAG_POSTGRES_DSN", "HEXRAG_REDIS_URL",
            "HEXRAG_MILVUS_URI",
        ):
            monkeypatch.delenv(name)
    for name in ("LLM_BINDING", "EMBEDDING_BINDING", "RERANK_BINDING_HOST", "OPENAI_API_KEY",
                 "OPENAI_BASE_URL", "LLM_BINDING_HOST", "EMBEDDING_DIM", "LLM_MODEL",
                 "COSINE_THRESHOLD", "WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def llm_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def llm(llm_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    llm_server.reset()
    return llm_server


def _llm_options(server: ScriptedOpenAIServer) -> dict[str, Any]:
    return {
        "llm": "openai:scripted-model",
        "openai_base_url": server.base_url,
        "openai_api_key": "test-key",
    }


@pytest.fixture
async def demo() -> DemoStack:
    return await build_demo_engine(dim=DIM)


async def _copy_demo(demo: DemoStack, stores: Stores) -> None:
    """Write the demo knowledge base through ``stores`` (the stack's tracked stores)."""
    for ns in ("entities", "relationships", "chunks"):
        matrix, records = getattr(demo, ns).export_arrays()
        rows = [dataclasses.replace(r, vector=np.array(v)) for r, v in zip(records, matrix,
                                                                           strict=True)]
        await getattr(stores, ns).upsert(rows)
    await stores.graph.upsert_nodes(list(demo.graph.iter_nodes()))
    await stores.graph.upsert_edges(list(demo.graph.iter_edges()))
    await stores.chunk_store.upsert_chunks(list(demo.chunk_store.iter_chunks()))


def _data_param(mode: str) -> QueryParam:
    """Supplied keywords: the stacks (with an LLM) and the demo engine (without) agree."""
    return QueryParam(
        mode=mode,  # type: ignore[arg-type]
        hl_keywords=KEYWORDS["high_level_keywords"],
        ll_keywords=KEYWORDS["low_level_keywords"],
    )


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    d = data["data"]
    return {
        "entities": [e["entity_name"] for e in d["entities"]],
        "relationships": sorted((r["src_id"], r["tgt_id"]) for r in d["relationships"]),
        "chunks": sorted(c["chunk_id"] for c in d["chunks"]),
    }


async def _new_fact(stores: Stores) -> None:
    """A write through the stack: a new chunk (text and vector) about the question."""
    text = f"NEWFACT: {DEFAULT_QUESTION} Use the SCIM connector."
    (vector,) = await HashingEmbedder(DIM).embed([text])
    chunk = Chunk(id="chunk-newfact", content=text, file_path="acme-crm/sso.md",
                  full_doc_id="doc-sso", metadata={"product_id": "p-crm", "category_id": "crm"})
    await stores.chunk_store.upsert_chunks([chunk])
    await stores.chunks.upsert([VectorRecord(id=chunk.id, vector=vector, content=text,
                                             file_path=chunk.file_path,
                                             full_doc_id=chunk.full_doc_id,
                                             metadata=chunk.metadata)])


async def _check_answers_follow_writes(stack: Stack, llm: ScriptedOpenAIServer) -> None:
    """Answer, answer again from the cache, write, and get a fresh answer (keywords cached)."""
    llm.script("chat", Reply.text(json.dumps(KEYWORDS)), Reply.text("answer one"))
    engine = stack.engine
    param = QueryParam(mode="mix")
    first = await engine.query_result(DEFAULT_QUESTION, param)
    assert (first.content, first.cache_hit) == ("answer one", False)
    assert llm.count("chat") == 2  # keywords + answer
    again = await engine.query_result(DEFAULT_QUESTION, param)
    assert (again.content, again.cache_hit) == ("answer one", True)
    assert llm.count("chat") == 2

    await _new_fact(engine.stores)
    llm.script("chat", Reply.text("answer two"))
    after = await engine.query_result(DEFAULT_QUESTION, param)
    assert (after.content, after.cache_hit) == ("answer two", False)
    assert llm.count("chat") == 3  # the answer only: the keyword cache still holds
    last = llm.requests_for("chat")[-1].body
    assert "response_format" not in last
    assert "NEWFACT" in last["messages"][0]["content"]  # the fresh answer saw the write


# ----------------------------------------------------------------------------- memory


async def test_memory_stack_answers_and_never_serves_a_stale_answer(
    demo: DemoStack, llm: ScriptedOpenAIServer
) -> None:
    stack = await build_stack(StackConfig(embedder=f"hashing:{DIM}", **_llm_options(llm)))
    try:
        assert isinstance(stack.engine.stores.chunk_store, TrackedChunkStore)
        assert stack.version is not None
        await _copy_demo(demo, stack.engine.stores)
        data = await stack.engine.query_data(DEFAULT_QUESTION, _data_param("hybrid"))
        expected = await demo.engine.query_data(DEFAULT_QUESTION, _data_param("hybrid"))
        assert data["data"] == expected["data"]
        await _check_answers_follow_writes(stack, llm)
    finally:
        await stack.aclose()


async def test_build_engine_returns_engine_and_close() -> None:
    engine, close = await build_engine(StackConfig(embedder="hashing:16", cache="none"))
    try:
        assert engine.cache is None and engine.corpus_version is None
        assert engine.llm is None and engine.embedder.dim == 16
        assert not isinstance(engine.stores.chunks, TrackedVectorIndex)
    finally:
        await close()


async def test_versioning_can_be_turned_off() -> None:
    stack = await build_stack(StackConfig(corpus_versioning=False))
    assert stack.version is None and stack.engine.corpus_version is None
    assert isinstance(stack.engine.cache, MemoryCache)


# ----------------------------------------------------------------------------- workdir


@pytest.fixture
async def workdir(tmp_path: Path, demo: DemoStack) -> Path:
    """The demo knowledge base saved as a LightRAG working directory."""
    wd = WorkdirStack(
        entities=demo.entities,
        relationships=demo.relationships,
        chunks=demo.chunks,
        graph=demo.graph,
        chunk_store=demo.chunk_store,
        cache=MemoryCache(),
        embedding_dim=DIM,
    )
    return save_workdir(wd, tmp_path / "rag_storage")


async def test_workdir_stack_from_a_toml_file(
    tmp_path: Path, workdir: Path, llm: ScriptedOpenAIServer
) -> None:
    config_file = tmp_path / "stack.toml"
    config_file.write_text(
        'workdir = "rag_storage"\n'  # relative to the file
        'llm = "openai:scripted-model"\n'
        f'openai_base_url = "{llm.base_url}"\n'
        "[settings]\ncosine_threshold = 0.2\n",
        encoding="utf-8",
    )
    lines: list[str] = []
    stack = await build_stack(load_config(config_file), progress=lines.append)
    # What the configuration must amount to: the directory loaded by hand.
    reference = QueryEngine(**load_workdir(workdir).engine_stores(), embedder=HashingEmbedder(DIM),
                            tokenizer=default_tokenizer())
    try:
        assert stack.engine.embedder.dim == DIM  # hashing adapts to the directory
        assert any("loading LightRAG working directory" in line for line in lines)
        assert any(line.startswith("stores ready") for line in lines)
        for mode in ("local", "global", "mix", "naive"):
            param = _data_param(mode)
            got = await stack.engine.query_data(DEFAULT_QUESTION, param)
            want = await reference.query_data(DEFAULT_QUESTION, param)
            assert got["data"] == want["data"], mode
            assert got["data"]["chunks"], mode
        await _check_answers_follow_writes(stack, llm)
    finally:
        await stack.aclose()


async def test_workdir_with_the_wrong_embedder_dimension(workdir: Path) -> None:
    with pytest.raises(ConfigurationError, match="dimension mismatch"):
        await build_stack(StackConfig(workdir=workdir, embedder="hashing:16"))
    with pytest.raises(ConfigurationError, match="stores 32-dimensional vectors"):
        await build_stack(StackConfig(workdir=workdir, embedding_dim=64))


async def test_workdir_that_does_not_exist(tmp_path: Path) -> None:
    from hexrag.core.errors import NotFound

    with pytest.raises(NotFound, match="not found"):
        await build_stack(StackConfig(workdir=tmp_path / "missing"))


async def test_workdir_with_its_cache_turned_off(workdir: Path) -> None:
    stack = await build_stack(StackConfig(workdir=workdir, cache="none"))
    assert stack.engine.cache is None and stack.version is None


# ----------------------------------------------------------------------------- PostgreSQL


async def test_postgres_stack(
    pg_dsn: str, pg_schema: str, demo: DemoStack, llm: ScriptedOpenAIServer  # noqa: F811
) -> None:
    config = StackConfig(
        vector_index=pg_dsn, graph_store=pg_dsn, chunk_store=pg_dsn, cache=pg_dsn,
        postgres_schema=pg_schema, embedder=f"hashing:{DIM}", **_llm_options(llm),
    )
    stack = await build_stack(config)
    try:
        pools = [c for name, c in stack.closers if name == "postgres pool"]
        assert len(pools) == 1  # one pool shared by every PostgreSQL adapter
        await _copy_demo(demo, stack.engine.stores)
        got = await stack.engine.query_data(DEFAULT_QUESTION, _data_param("mix"))
        want = await demo.engine.query_data(DEFAULT_QUESTION, _data_param("mix"))
        assert _summary(got) == _summary(want)
        await _check_answers_follow_writes(stack, llm)
    finally:
        await stack.aclose()

    # The tables now hold 32-dimensional vectors: another embedder is refused at startup.
    wrong = StackConfig(vector_index=pg_dsn, postgres_schema=pg_schema, embedder="hashing:16")
    with pytest.raises(ConfigurationError, match="16"):
        await build_stack(wrong)


async def test_postgres_that_cannot_be_reached() -> None:
    with pytest.raises(BackendUnavailable, match="postgres"):
        await build_stack(StackConfig(chunk_store="postgresql://nobody@127.0.0.1:1/none"))


# ----------------------------------------------------------------------------- Redis


async def test_redis_cache_is_shared_so_a_write_in_one_process_invalidates_another(
    redis_server: str,  # noqa: F811
    redis_workspace: str,  # noqa: F811
    demo: DemoStack,
    llm: ScriptedOpenAIServer,
) -> None:
    config = StackConfig(
        chunk_store=redis_server, cache=redis_server, namespace=redis_workspace,
        embedder=f"hashing:{DIM}", **_llm_options(llm),
    )
    reader = await build_stack(config)
    writer = await build_stack(config)
    try:
        await _copy_demo(demo, reader.engine.stores)
        await _copy_demo(demo, writer.engine.stores)  # same Redis chunks, own memory vectors
        llm.script("chat", Reply.text(json.dumps(KEYWORDS)), Reply.text("answer one"))
        param = QueryParam(mode="mix")
        assert (await reader.engine.query_result(DEFAULT_QUESTION, param)).content == "answer one"
        assert (await reader.engine.query_result(DEFAULT_QUESTION, param)).cache_hit

        await writer.engine.stores.chunk_store.upsert_chunks(
            [Chunk(id=f"chunk-{uuid.uuid4().hex}", content="written elsewhere")]
        )
        llm.script("chat", Reply.text("answer two"))
        fresh = await reader.engine.query_result(DEFAULT_QUESTION, param)
        assert (fresh.content, fresh.cache_hit) == ("answer two", False)
        (entry,) = await writer.engine.cache.get_many([CORPUS_VERSION_KEY])  # type: ignore[union-attr]
        assert entry is not None
    finally:
        await reader.aclose()
        await writer.aclose()


# ----------------------------------------------------------------------------- Milvus


async def test_milvus_stack(
    milvus_uri: str, demo: DemoStack, llm: ScriptedOpenAIServer  # noqa: F811
) -> None:
    namespace = f"t{uuid.uuid4().hex[:12]}"
    spec = f"milvus://{milvus_uri}" if milvus_uri.endswith(".db") else milvus_uri
    config = StackConfig(vector_index=spec, namespace=namespace, embedder=f"hashing:{DIM}",
                         **_llm_options(llm))
    stack = await build_stack(config)
    try:
        await _copy_demo(demo, stack.engine.stores)
        got = await stack.engine.query_data(DEFAULT_QUESTION, _data_param("mix"))
        want = await demo.engine.query_data(DEFAULT_QUESTION, _data_param("mix"))
        assert _summary(got) == _summary(want)
        await _check_answers_follow_writes(stack, llm)
    finally:
        for ns in ("entities", "relationships", "chunks"):
            await getattr(stack.engine.stores, ns).drop()  # the adapter's extra, via the wrapper
        await stack.aclose()
