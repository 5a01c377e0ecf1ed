"""hexrag served in place on a LightRAG 1.5.7 Qdrant deployment (embedded Qdrant, no server).

The deployment is written by LightRAG's own classes (``QdrantVectorDBStorage`` with
model-suffixed ``lightrag_vdb_*`` collections in an embedded Qdrant directory, ``JsonKVStorage``
and ``NetworkXStorage`` in the working directory). Embedded Qdrant allows one client per
directory, so LightRAG answers every query first (its own client, closed by
``finalize_storages``), then hexrag opens the same directory with
:class:`hexrag.adapters.qdrant.QdrantVectorIndex` in LightRAG's layout, the graph and text
chunks from the working directory, and must answer every keyword query in every mode as
LightRAG did: WEIGHT picking exactly, VECTOR picking with chunks as sets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("qdrant_client", reason="the qdrant extra: pip install 'hexrag[qdrant]'")

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

pytestmark = [pytest.mark.parity]

require_lightrag()

KEY = "flat300"
WORKSPACE = "lr_qdrant_parity"
MODES = ("local", "global", "hybrid", "mix", "naive")
PICKS = ("WEIGHT", "VECTOR")
QUERIES = keyword_queries(generate_dataset(PARITY_DATASETS[KEY]), 5)


@dataclass
class World:
    qdrant_path: Path
    working_dir: Path
    embedder: Any
    queries: list[Any]
    #: (pick, mode, query label) -> (LightRAG's result, hexrag's result)
    results: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = field(
        default_factory=dict
    )
    collections: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


async def _lightrag_answers(w: World, pick: str) -> dict[tuple[str, str], dict[str, Any]]:
    from hexrag.devtools.lightrag_qdrant import make_lightrag_qdrant

    rag = make_lightrag_qdrant(w.qdrant_path, w.embedder, working_dir=w.working_dir,
                               workspace=WORKSPACE, kg_chunk_pick_method=pick)
    await rag.initialize_storages()
    try:
        if not w.collections:
            w.collections = sorted(c.name for c in rag.chunks_vdb._client.get_collections()
                                   .collections)
        return {(mode, q.label): await lightrag_query_data(rag, mode, q)
                for mode in MODES for q in w.queries}
    finally:
        await rag.finalize_storages()


async def _hexrag_answers(
    w: World, pick: str, indexes: dict[str, Any]
) -> dict[tuple[str, str], dict[str, Any]]:
    from hexrag.adapters.workdir import load_graph
    from hexrag.adapters.workdir.stack import load_chunk_store
    from hexrag.core.query.engine import QueryEngine

    directory = w.working_dir / WORKSPACE
    engine = QueryEngine(
        tokenizer=default_tokenizer(),
        **indexes, graph=load_graph(directory), chunk_store=load_chunk_store(directory),
        embedder=w.embedder, settings=parity_settings(pick),
    )
    return {(mode, q.label): await hexrag_query_data(engine, mode, q)
            for mode in MODES for q in w.queries}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield _world(KEY, tmp_path_factory)


@pytest.fixture(scope="module")
def ties_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """``ties300``: many exactly equal scores, so the order among ties must be Qdrant's."""
    yield _world("ties300", tmp_path_factory)


def _world(key: str, tmp_path_factory: pytest.TempPathFactory) -> World:
    from hexrag.adapters.qdrant import open_qdrant_indexes
    from hexrag.devtools.lightrag_qdrant import MODEL_NAME, write_lightrag_qdrant

    base = tmp_path_factory.mktemp("lightrag-qdrant")
    dataset = generate_dataset(PARITY_DATASETS[key])
    w = World(base / "qdrant", base / "rag", parity_embedder(), keyword_queries(dataset, 5))

    async def build() -> None:
        await write_lightrag_qdrant(dataset, w.qdrant_path, w.embedder,
                                    working_dir=w.working_dir, workspace=WORKSPACE)
        lightrag = {pick: await _lightrag_answers(w, pick) for pick in PICKS}
        indexes, client = open_qdrant_indexes(
            str(w.qdrant_path), dim=w.embedder.dim, layout="lightrag", workspace=WORKSPACE,
            model_name=MODEL_NAME,
        )
        try:
            w.counts = {ns: await index.count() for ns, index in indexes.items()}
            for pick in PICKS:
                hexrag = await _hexrag_answers(w, pick, indexes)
                for (mode, label), lr in lightrag[pick].items():
                    w.results[(pick, mode, label)] = (lr, hexrag[(mode, label)])
        finally:
            await client.close()

    asyncio.run(build())
    return w


def test_collections_are_lightrags_own(world: World) -> None:
    """LightRAG created its model-suffixed collections; hexrag reads every point of the
    workspace in each (LightRAG's point ids and workspace filter)."""
    from hexrag.devtools.lightrag_qdrant import MODEL_NAME

    dim = world.embedder.dim
    assert world.collections == sorted(
        f"lightrag_vdb_{ns}_{MODEL_NAME}_{dim}d" for ns in ("chunks", "entities", "relationships")
    )
    dataset = generate_dataset(PARITY_DATASETS[KEY])
    assert world.counts["chunks"] == len(dataset.chunks)
    assert world.counts["entities"] > 0 and world.counts["relationships"] > 0


@pytest.mark.parametrize("pick", PICKS)
@pytest.mark.parametrize("mode", MODES)
def test_query_data_equals_lightrag_on_qdrant(world: World, mode: str, pick: str) -> None:
    _check_parity(world, mode, pick)


@pytest.mark.parametrize("pick", PICKS)
@pytest.mark.parametrize("mode", MODES)
def test_query_data_equals_lightrag_with_exact_ties(ties_world: World, mode: str,
                                                    pick: str) -> None:
    _check_parity(ties_world, mode, pick)


def _check_parity(world: World, mode: str, pick: str) -> None:
    diffs: list[str] = []
    found = 0
    for q in world.queries:
        lr, hx = world.results[(pick, mode, q.label)]
        assert lr.get("status") == "success", lr.get("message")
        found += len(lr["data"]["chunks"]) + len(lr["data"]["entities"])
        for d in diff_query_data(lr, hx, exact=pick == "WEIGHT"):
            diffs.append(f"{q.label}: {d}")
    assert not diffs, f"mode={mode} pick={pick}:\n" + "\n".join(diffs[:20])
    assert found > 3 * len(world.queries), "the queries must retrieve something"


@pytest.mark.backend("redis")
def test_a_stack_toml_serves_a_qdrant_redis_deployment(world: World, tmp_path: Path) -> None:
    """A second workspace in the same Qdrant collections, its KV in LightRAG's
    ``RedisKVStorage``: ``layout = "lightrag"`` + ``workdir`` (the NetworkX graph) +
    ``vector_index = "qdrant:///dir"`` + the Redis URL build a stack through the ordinary
    builder that answers as LightRAG does there, and the first workspace's points are untouched
    (LightRAG's ``workspace_id`` filter, kept by hexrag's reads). Then ``migrate`` copies the
    workspace into another embedded Qdrant directory (one client per directory) in LightRAG's
    layout, and LightRAG's own classes answer there as on the original."""
    import uuid

    from hexrag.adapters.qdrant import QdrantVectorIndex, open_qdrant_indexes
    from hexrag.bootstrap import build_stack
    from hexrag.config import load_config
    from hexrag.devtools.lightrag_qdrant import (
        MODEL_NAME,
        init_lightrag_qdrant,
        make_lightrag_qdrant,
        write_lightrag_qdrant,
    )
    from tests.services.redis import redis_server_url

    redis_url = redis_server_url()
    ws = "lr_qdrant_toml_" + uuid.uuid4().hex[:8]
    dataset = generate_dataset(PARITY_DATASETS[KEY])
    copy_ws, copy_dir = ws + "_copy", tmp_path / "qdrant_copy"

    def toml_for(workspace: str, qdrant_dir: Path, name: str) -> Path:
        path = tmp_path / name
        path.write_text(
            f'layout = "lightrag"\nworkdir = "{world.working_dir}"\nworkspace = "{workspace}"\n'
            f'vector_index = "qdrant://{qdrant_dir}"\nchunk_store = "{redis_url}"\n'
            f'cache = "{redis_url}"\nlightrag_model_name = "{MODEL_NAME}"\n'
            'embedder = "hexrag.devtools.lightrag_data:parity_embed"\n'
            '[settings]\nkg_chunk_pick_method = "WEIGHT"\n'
            'relation_lookup = {local = "pair", global = "pair", hybrid = "pair", mix = "pair"}\n',
            encoding="utf-8",
        )
        return path

    toml = toml_for(ws, world.qdrant_path, "stack.toml")
    modes = ("local", "hybrid", "mix", "naive")

    async def run() -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], Any], int,
                             dict[tuple[str, str], Any], tuple[Any, Any]]:
        await write_lightrag_qdrant(dataset, world.qdrant_path, world.embedder,
                                    working_dir=world.working_dir, workspace=ws,
                                    redis_url=redis_url)
        rag = make_lightrag_qdrant(world.qdrant_path, world.embedder,
                                   working_dir=world.working_dir, workspace=ws,
                                   redis_url=redis_url)
        await init_lightrag_qdrant(rag, redis_url)
        try:
            want = {(m, q.label): await lightrag_query_data(rag, m, q)
                    for m in modes for q in QUERIES[:3]}
        finally:
            await rag.finalize_storages()
        stack = await build_stack(load_config(toml))
        try:
            inner = getattr(stack.stores.entities, "inner", stack.stores.entities)
            assert isinstance(inner, QdrantVectorIndex)
            assert inner.collection == f"lightrag_vdb_entities_{MODEL_NAME}_{world.embedder.dim}d"
            got = {(m, q.label): await hexrag_query_data(stack.engine, m, q)
                   for m in modes for q in QUERIES[:3]}
        finally:
            await stack.aclose()
        indexes, client = open_qdrant_indexes(
            str(world.qdrant_path), dim=world.embedder.dim, layout="lightrag",
            workspace=WORKSPACE, model_name=MODEL_NAME)
        try:
            first = await indexes["chunks"].count()
        finally:
            await client.close()
        counts = await _migrate(toml, toml_for(copy_ws, copy_dir, "copy.toml"))
        rag = make_lightrag_qdrant(copy_dir, world.embedder, working_dir=world.working_dir,
                                   workspace=copy_ws, redis_url=redis_url)
        await init_lightrag_qdrant(rag, redis_url)
        try:
            copied = {(m, q.label): await lightrag_query_data(rag, m, q)
                      for m in modes for q in QUERIES[:3]}
        finally:
            await rag.finalize_storages()
        return want, got, first, copied, counts

    async def _migrate(src_toml: Path, dst_toml: Path) -> tuple[Any, Any]:
        from hexrag.bootstrap import open_stack
        from hexrag.transfer.archive import export_stack
        from hexrag.transfer.check import check_stack
        from hexrag.transfer.migrate import migrate_stack

        src = await open_stack(src_toml, embedder=world.embedder)
        dst = await open_stack(dst_toml, embedder=world.embedder)
        try:
            await migrate_stack(src.stores, dst.stores, state_path=tmp_path / "s.json",
                                page_size=97, overwrite=True)
            await dst.commit()
            # check scans both Qdrant stacks: the copy has exactly the original's findings (the
            # original is not clean: check reports entity vectors without a graph node there)
            found, copied = await check_stack(src.stores), await check_stack(dst.stores)
            assert copied.counts == found.counts and not copied.files, copied.to_json()
            assert copied.stores["entities"] == found.stores["entities"]
            await export_stack(dst.stores, tmp_path / "archive", page_size=97)
            assert any((tmp_path / "archive").iterdir())
            return await src.stores.counts(), await dst.stores.counts()
        finally:
            await src.aclose()
            await dst.aclose()

    want, got, first, copied, (before, after) = asyncio.run(run())
    assert after == before and before["entities"] > 0
    for key, lr in want.items():
        assert not diff_query_data(lr, copied[key]), ("copy", key)
    for key, lr in want.items():
        assert lr.get("status") == "success", lr.get("message")
        assert not diff_query_data(lr, got[key]), key
    assert first == world.counts["chunks"]
