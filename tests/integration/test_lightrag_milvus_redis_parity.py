"""hexrag served in place on a LightRAG 1.5.7 Milvus + Redis + NetworkX deployment.

The deployment is written by LightRAG's own storage classes (``MilvusVectorDBStorage`` with
model-suffixed collections on the tests' Milvus Lite, ``RedisKVStorage`` on the tests'
redis-server, ``NetworkXStorage``'s GraphML file). LightRAG's ``aquery_data`` and hexrag's
``query_data`` over hexrag's LightRAG-layout adapters
(:mod:`hexrag.adapters.milvus.lightrag_layout`, :mod:`hexrag.adapters.redis.lightrag_layout`,
:func:`hexrag.adapters.workdir.load_graph`) must agree for every keyword query and mode:
WEIGHT picking exactly, VECTOR picking with chunks as sets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.devtools.lightrag_data import (
    PARITY_DATASETS,
    diff_query_data,
    generate_dataset,
    hexrag_query_data,
    keyword_queries,
    lightrag_query_data,
    parity_embedder,
    parity_settings,
    require_lightrag,
)

pytestmark = [pytest.mark.parity, pytest.mark.backend("milvus"), pytest.mark.backend("redis")]

require_lightrag()

KEY = "flat300"
WORKSPACE = "lr_mr_parity"
MODES = ("local", "global", "hybrid", "mix", "naive")
QUERIES = keyword_queries(generate_dataset(PARITY_DATASETS[KEY]), 5)


class World:
    def __init__(self, milvus_uri: str, redis_url: str, working_dir: Path) -> None:
        self.milvus_uri = milvus_uri
        self.redis_url = redis_url
        self.working_dir = working_dir
        self.runner = asyncio.Runner()
        self.embedder = parity_embedder()
        self.rags: dict[str, Any] = {}
        self.engines: dict[str, Any] = {}
        self.stores: dict[str, Any] = {}
        self.closers: list[Any] = []

    def run(self, coro: Any) -> Any:
        return self.runner.run(coro)

    def open_stores(self, workspace: str) -> dict[str, Any]:
        from hexrag.adapters.milvus.lightrag_layout import LightRAGMilvusVectorIndex
        from hexrag.adapters.redis.lightrag_layout import LightRAGRedisChunkStore
        from hexrag.adapters.workdir import load_graph
        from hexrag.devtools.lightrag_milvus import MODEL_NAME
        from tests.services.milvus import shared_milvus

        _uri, client = shared_milvus()
        stores: dict[str, Any] = {
            ns: LightRAGMilvusVectorIndex.open(
                client, namespace=ns, dim=self.embedder.dim, workspace=workspace,
                model_name=MODEL_NAME,
            )
            for ns in ("entities", "relationships", "chunks")
        }
        stores["graph"] = load_graph(self.working_dir / workspace)
        chunk_store = LightRAGRedisChunkStore.from_url(self.redis_url, workspace=workspace)
        self.closers.append(chunk_store.aclose)
        stores["chunk_store"] = chunk_store
        return stores


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from hexrag.core.query.engine import QueryEngine
    from hexrag.devtools.lightrag_milvus import (
        init_lightrag_milvus_redis,
        make_lightrag_milvus_redis,
        write_lightrag_milvus_redis,
    )
    from tests.services.milvus import shared_milvus
    from tests.services.redis import redis_server_url

    uri, _client = shared_milvus()
    w = World(uri, redis_server_url(), tmp_path_factory.mktemp("lightrag-mr"))
    try:
        dataset = generate_dataset(PARITY_DATASETS[KEY])
        w.run(write_lightrag_milvus_redis(
            dataset, uri, w.redis_url, w.embedder, working_dir=w.working_dir,
            workspace=WORKSPACE,
        ))
        w.stores = w.open_stores(WORKSPACE)
        for pick in ("WEIGHT", "VECTOR"):
            rag = make_lightrag_milvus_redis(
                uri, w.redis_url, w.embedder, working_dir=w.working_dir, workspace=WORKSPACE,
                kg_chunk_pick_method=pick,
            )
            w.run(init_lightrag_milvus_redis(rag, uri, w.redis_url))
            w.rags[pick] = rag
            w.engines[pick] = QueryEngine(
                tokenizer=default_tokenizer(),
                **w.stores, embedder=w.embedder, settings=parity_settings(pick)
            )
        yield w
    finally:
        for rag in w.rags.values():
            w.run(rag.finalize_storages())
        for close in w.closers:
            w.run(close())
        w.runner.close()


def test_collections_and_keys_are_lightrags_own(world: World) -> None:
    from hexrag.devtools.lightrag_milvus import MODEL_NAME
    from tests.services.milvus import shared_milvus

    _uri, client = shared_milvus()
    names = set(client.list_collections())
    dim = world.embedder.dim
    for ns in ("entities", "relationships", "chunks"):
        assert f"{WORKSPACE}_{ns}_{MODEL_NAME}_{dim}d" in names
    chunk_store = world.stores["chunk_store"]
    assert world.run(chunk_store.count()) == len(generate_dataset(PARITY_DATASETS[KEY]).chunks)
    assert (world.working_dir / WORKSPACE / "graph_chunk_entity_relation.graphml").is_file()


@pytest.mark.parametrize("pick", ["WEIGHT", "VECTOR"])
@pytest.mark.parametrize("mode", MODES)
def test_query_data_equals_lightrag_on_milvus_redis(world: World, mode: str, pick: str) -> None:
    diffs: list[str] = []
    found = 0
    for q in QUERIES:
        lr = world.run(lightrag_query_data(world.rags[pick], mode, q))
        hx = world.run(hexrag_query_data(world.engines[pick], mode, q))
        assert lr.get("status") == "success", lr.get("message")
        found += len(lr["data"]["chunks"]) + len(lr["data"]["entities"])
        for d in diff_query_data(lr, hx, exact=pick == "WEIGHT"):
            diffs.append(f"{q.label}: {d}")
    assert not diffs, f"mode={mode} pick={pick}:\n" + "\n".join(diffs[:20])
    assert found > 3 * len(QUERIES), "the queries must retrieve something"


def _toml(world: World, workspace: str, path: Path) -> Path:
    from hexrag.devtools.lightrag_milvus import MODEL_NAME

    path.write_text(
        f'layout = "lightrag"\nworkdir = "{world.working_dir}"\nworkspace = "{workspace}"\n'
        f'vector_index = "milvus://{world.milvus_uri}"\nchunk_store = "{world.redis_url}"\n'
        f'cache = "{world.redis_url}"\nlightrag_model_name = "{MODEL_NAME}"\n'
        'embedder = "hexrag.devtools.lightrag_data:parity_embed"\n'
        '[settings]\nkg_chunk_pick_method = "WEIGHT"\n'
        'relation_lookup = {local = "pair", global = "pair", hybrid = "pair", mix = "pair"}\n',
        encoding="utf-8",
    )
    return path


def test_a_stack_toml_serves_the_deployment_in_place(world: World, tmp_path: Path) -> None:
    """``layout = "lightrag"`` + ``workdir`` (LightRAG's working_dir: the NetworkX graph) +
    Milvus + Redis URLs: the configured engine answers as the engine above (and LightRAG)."""
    from hexrag.bootstrap import build_stack
    from hexrag.config import load_config

    stack = world.run(build_stack(load_config(_toml(world, WORKSPACE, tmp_path / "s.toml"))))
    try:
        names = {type(getattr(stack.engine.stores, n).inner).__name__  # corpus-version wrappers
                 for n in ("entities", "chunk_store")}
        assert names == {"LightRAGMilvusVectorIndex", "LightRAGRedisChunkStore"}
        for q in QUERIES[:3]:
            for mode in ("local", "hybrid", "mix", "naive"):
                got = world.run(hexrag_query_data(stack.engine, mode, q))
                want = world.run(lightrag_query_data(world.rags["WEIGHT"], mode, q))
                assert not diff_query_data(want, got), (q.label, mode)
    finally:
        world.run(stack.aclose())


def test_hexrag_migrates_into_a_deployment_lightrag_reads(world: World, tmp_path: Path) -> None:
    """``migrate`` from the deployment into a new workspace *in LightRAG's layout* (Milvus
    collections created with LightRAG's schema, Redis keys, the GraphML file): LightRAG's own
    classes then answer every query there exactly as on the original."""
    from hexrag.bootstrap import open_stack
    from hexrag.devtools.lightrag_milvus import (
        init_lightrag_milvus_redis,
        make_lightrag_milvus_redis,
    )
    from hexrag.transfer.migrate import migrate_stack

    copy_ws = WORKSPACE + "_copy"

    async def migrate() -> tuple[dict[str, int], dict[str, int]]:
        src = await open_stack(_toml(world, WORKSPACE, tmp_path / "a.toml"),
                               embedder=world.embedder)
        dst = await open_stack(_toml(world, copy_ws, tmp_path / "b.toml"),
                               embedder=world.embedder)
        try:
            await migrate_stack(src.stores, dst.stores, state_path=tmp_path / "s.json",
                                page_size=97, overwrite=True)
            await dst.commit()
            return await src.stores.counts(), await dst.stores.counts()
        finally:
            await src.aclose()
            await dst.aclose()

    before, after = world.run(migrate())
    assert after == before and before["entities"] > 0
    rag = make_lightrag_milvus_redis(
        world.milvus_uri, world.redis_url, world.embedder, working_dir=world.working_dir,
        workspace=copy_ws,
    )
    world.run(init_lightrag_milvus_redis(rag, world.milvus_uri, world.redis_url))
    try:
        diffs: list[str] = []
        for q in QUERIES:
            for mode in MODES:
                want = world.run(lightrag_query_data(world.rags["WEIGHT"], mode, q))
                got = world.run(lightrag_query_data(rag, mode, q))
                diffs += [f"{q.label} {mode}: {d}" for d in diff_query_data(want, got)]
        assert not diffs, "\n".join(diffs[:20])
    finally:
        world.run(rag.finalize_storages())


def test_the_llm_cache_is_shared_with_lightrag(world: World) -> None:
    """hexrag's LightRAG-layout Redis cache and LightRAG's ``llm_response_cache`` read each
    other's entries (keys are LightRAG's flattened cache ids)."""
    from hexrag.adapters.redis.lightrag_layout import LightRAGRedisCache
    from hexrag.ports.scan import scan_all

    cache = LightRAGRedisCache.from_url(world.redis_url, workspace=WORKSPACE)
    key = "mix:keywords:0123456789abcdef"
    entry = {"return": '{"high_level_keywords": ["x"]}', "cache_type": "keywords",
             "original_prompt": "q é", "chunk_id": None, "queryparam": {"mode": "mix"}}
    rag = world.rags["WEIGHT"]
    try:
        world.run(cache.set_many({key: entry}))
        (seen,) = world.run(rag.llm_response_cache.get_by_ids([key]))
        assert seen is not None and seen["return"] == entry["return"]
        assert seen["queryparam"] == {"mode": "mix"} and seen["original_prompt"] == "q é"
        world.run(rag.llm_response_cache.upsert(
            {"hybrid:query:fedcba": {"return": "answer", "cache_type": "query",
                                     "original_prompt": "p", "chunk_id": None}}
        ))
        world.run(rag.llm_response_cache.index_done_callback())
        (theirs,) = world.run(cache.get_many(["hybrid:query:fedcba"]))
        assert theirs is not None and theirs["return"] == "answer"

        async def keys() -> list[str]:
            out: list[str] = []
            async for page in scan_all(cache.scan_entries, limit=1):
                out += [k for k, _ in page.items]
            return out

        assert {key, "hybrid:query:fedcba"} <= set(world.run(keys()))
        world.run(cache.delete_many([key, "hybrid:query:fedcba"]))
        assert world.run(cache.get_many([key])) == [None]
        assert world.run(rag.llm_response_cache.get_by_ids([key])) == [None]
    finally:
        world.run(cache.aclose())
