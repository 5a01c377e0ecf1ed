"""hexrag served in place on a LightRAG 1.5.7 PostgreSQL deployment, against LightRAG itself.

The deployment is written by LightRAG's own storage classes (``PGKVStorage``,
``PGVectorStorage`` with model-suffixed tables, ``PGTableGraphStorage``,
``PGDocStatusStorage``) on the tests' PostgreSQL 16 + pgvector. LightRAG's ``aquery_data`` and
hexrag's ``query_data`` on hexrag's LightRAG-layout adapters
(:mod:`hexrag.adapters.postgres.lightrag_layout`) must agree for every keyword query and
mode: WEIGHT picking exactly, VECTOR picking with chunks as sets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
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
from tests.services.postgres import pg_dsn  # noqa: F401

pytestmark = [pytest.mark.parity, pytest.mark.backend("postgres")]

require_lightrag()

KEY = "flat300"
WORKSPACE = "lr_parity"
MODES = ("local", "global", "hybrid", "mix", "naive")
QUERIES = keyword_queries(generate_dataset(PARITY_DATASETS[KEY]), 5)


class World:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.runner = asyncio.Runner()
        self.embedder = parity_embedder()
        self.rags: dict[str, Any] = {}
        self.engines: dict[str, Any] = {}
        self.pool: Any = None

    def run(self, coro: Any) -> Any:
        return self.runner.run(coro)


@pytest.fixture(scope="module")
def world(pg_dsn: str) -> Iterator[World]:  # noqa: F811
    from hexrag.adapters.postgres import create_pool
    from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_stores
    from hexrag.core.query.engine import QueryEngine
    from hexrag.devtools.lightrag_pg import (
        MODEL_NAME,
        init_lightrag_pg,
        make_lightrag_pg,
        write_lightrag_pg,
    )

    w = World(pg_dsn)
    try:
        dataset = generate_dataset(PARITY_DATASETS[KEY])
        w.run(write_lightrag_pg(dataset, pg_dsn, w.embedder, workspace=WORKSPACE))
        w.pool = w.run(create_pool(pg_dsn))
        stores = open_lightrag_pg_stores(
            w.pool, workspace=WORKSPACE, embedding_dim=w.embedder.dim, model_name=MODEL_NAME
        )
        for pick in ("WEIGHT", "VECTOR"):
            rag = make_lightrag_pg(
                pg_dsn, w.embedder, workspace=WORKSPACE, kg_chunk_pick_method=pick
            )
            w.run(init_lightrag_pg(rag, pg_dsn))
            w.rags[pick] = rag
            w.engines[pick] = QueryEngine(
                tokenizer=default_tokenizer(),
                **stores, embedder=w.embedder, settings=parity_settings(pick)
            )
        yield w
    finally:
        for rag in w.rags.values():
            w.run(rag.finalize_storages())
        if w.pool is not None:
            w.run(w.pool.close())
        w.runner.close()


def test_tables_are_lightrags_own(world: World) -> None:
    async def tables() -> list[str]:
        rows = await world.pool.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'lightrag_%'"
        )
        return sorted(r[0] for r in rows)

    names = world.run(tables())
    assert "lightrag_vdb_entity_hashemb_v1_384d" in names
    assert {"lightrag_graph_nodes", "lightrag_graph_edges", "lightrag_doc_chunks"} <= set(names)


@pytest.mark.parametrize("pick", ["WEIGHT", "VECTOR"])
@pytest.mark.parametrize("mode", MODES)
def test_query_data_equals_lightrag_on_its_postgres(world: World, mode: str, pick: str) -> None:
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


def test_hexrag_serve_reads_the_deployment_in_place(world: World, tmp_path: Any) -> None:
    """``layout = "lightrag"`` in a stack TOML: ``hexrag serve`` answers from LightRAG's tables
    exactly as the engine above (and so as LightRAG) does."""
    import httpx

    from hexrag.devtools.lightrag_data import hexrag_query_param
    from hexrag.devtools.lightrag_pg import MODEL_NAME
    from tests.integration.test_cli_serve_answer import _Served

    config = tmp_path / "lightrag.toml"
    config.write_text(
        f'vector_index = "{world.dsn}"\ngraph_store = "{world.dsn}"\n'
        f'chunk_store = "{world.dsn}"\ncache = "none"\nlayout = "lightrag"\n'
        f'workspace = "{WORKSPACE}"\nlightrag_model_name = "{MODEL_NAME}"\n'
        'embedder = "hexrag.devtools.lightrag_data:parity_embed"\n'
        '[settings]\nkg_chunk_pick_method = "WEIGHT"\n'
        'relation_lookup = {local = "pair", global = "pair", hybrid = "pair", mix = "pair"}\n',
        encoding="utf-8",
    )
    served = _Served(["--config", str(config)], env={})
    try:
        for q in QUERIES[:3]:
            for mode in ("local", "hybrid", "mix"):
                param = hexrag_query_param(mode, q)
                body = {"query": q.query, "mode": mode, "hl_keywords": list(q.hl_keywords),
                        "ll_keywords": list(q.ll_keywords),
                        **{k: v for k, v in param.model_dump().items()
                           if k in ("top_k", "chunk_top_k", "max_entity_tokens",
                                    "max_relation_tokens", "max_total_tokens")}}
                got = httpx.post(f"{served.url}/query/data", json=body, timeout=60).json()
                want = world.run(hexrag_query_data(world.engines["WEIGHT"], mode, q))
                assert got["data"] == want["data"], (q.label, mode)
        health = httpx.get(f"{served.url}/health").json()
        assert health["status"] == "healthy", health
    finally:
        code, _out, err = served.stop()
    assert code == 0, err[-2000:]


def test_hexrag_writes_what_lightrag_reads(world: World, tmp_path: Any) -> None:
    """hexrag copies the deployment into another workspace *in LightRAG's layout*; LightRAG's
    own PostgreSQL classes then answer every query there exactly as on the original."""
    from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_stores
    from hexrag.devtools.lightrag_pg import MODEL_NAME, init_lightrag_pg, make_lightrag_pg
    from hexrag.transfer import StackStores
    from hexrag.transfer.migrate import migrate_stack

    dim = world.embedder.dim
    copy_ws = WORKSPACE + "_copy"

    def stores(ws: str) -> StackStores:
        return StackStores(
            **open_lightrag_pg_stores(
                world.pool, workspace=ws, embedding_dim=dim, model_name=MODEL_NAME
            )
        )

    source, target = stores(WORKSPACE), stores(copy_ws)
    world.run(
        migrate_stack(source, target, state_path=tmp_path / "s.json", page_size=97,
                      overwrite=True)
    )
    assert world.run(target.counts()) == world.run(source.counts())
    rag = make_lightrag_pg(world.dsn, world.embedder, workspace=copy_ws)
    world.run(init_lightrag_pg(rag, world.dsn))
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
    # deletes through the layout
    some = world.run(target.graph.scan_edges(None, limit=3)).items  # type: ignore[attr-defined]
    world.run(target.graph.delete_edges([r.id for r in some]))
    assert world.run(target.graph.count_edges()) == world.run(source.graph.count_edges()) - 3


def test_the_llm_cache_is_shared_with_lightrag(world: World) -> None:
    """hexrag's LightRAG-layout cache writes rows LightRAG's own ``llm_response_cache``
    storage reads back, and reads what LightRAG wrote (keys are LightRAG's cache ids)."""
    from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_cache
    from hexrag.ports.scan import scan_all

    cache = open_lightrag_pg_cache(world.pool, workspace=WORKSPACE)
    key = "mix:keywords:0123456789abcdef"
    entry = {"return": '{"high_level_keywords": ["x"]}', "cache_type": "keywords",
             "original_prompt": "q é", "chunk_id": None, "queryparam": {"mode": "mix"}}
    world.run(cache.set_many({key: entry}))
    rag = world.rags["WEIGHT"]
    (seen,) = world.run(rag.llm_response_cache.get_by_ids([key]))
    assert seen is not None and seen["return"] == entry["return"]
    assert seen["queryparam"] == {"mode": "mix"} and seen["cache_type"] == "keywords"
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


class _Seed001Embedder:
    """Hashing vectors, except that the canonical relation's content embeds as its keywords
    (as seed 001's relation vector matched the query's high-level keywords)."""

    def __init__(self, dim: int, keywords: str) -> None:
        from hexrag.adapters.memory import HashingEmbedder

        self._inner = HashingEmbedder(dim)
        self._keywords = keywords
        self.dim = dim
        self.model_name = "seed001"

    async def embed(self, texts: Any) -> Any:
        return await self._inner.embed(
            [self._keywords if t.startswith(self._keywords) else t for t in texts]
        )


def test_seed001_shape_on_rows_lightrag_wrote(world: World) -> None:
    """Seed 001 on a deployment whose vector and chunk rows LightRAG 1.5.7's own PostgreSQL
    classes wrote: the relation's chunk ids sit in LightRAG's ``character varying[]`` column
    (``{chunk-…}`` read as text), the graph holds seed 001's 21 relations between one pair
    (several edges per pair, as in the user's Neo4j; hexrag's PostgreSQL graph here, since no
    Neo4j server runs on this machine). hybrid and mix with the chunk lookup return 100% of the
    valid chunks; LightRAG's pair lookup shows its zero-chunk failure."""
    from hexrag.adapters.postgres import PgGraphStore
    from hexrag.adapters.postgres.lightrag_layout import (
        LightRAGPgChunkStore,
        LightRAGPgVectorIndex,
        lightrag_vector_table,
    )
    from hexrag.bootstrap import compose_engine
    from hexrag.core.ingest.ids import entity_id, relation_id
    from hexrag.core.model import EngineSettings, Entity, QueryParam
    from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg
    from hexrag.testing import corpus

    ws, model = "lr_seed001", "seed001"
    hl = "workflow automation integration"
    valid = (corpus.SEED_001_CHUNK, "chunk-ops-10")
    a, b = corpus.SEED_001_PAIR
    fp = "product_id:n8n:category:automation:source:docs"
    embedder = _Seed001Embedder(world.embedder.dim, hl)
    rag = make_lightrag_pg(world.dsn, embedder, workspace=ws, model_name=model)
    world.run(init_lightrag_pg(rag, world.dsn))
    texts = {
        valid[0]: "n8n's Airtable node reads and writes Airtable records in workflows.",
        valid[1]: "Workflow automation: trigger n8n from Airtable webhooks.",
    }

    async def write() -> None:
        chunks = {
            cid: {"tokens": 10, "content": text, "chunk_order_index": i,
                  "full_doc_id": "doc-n8n", "file_path": fp, "llm_cache_list": []}
            for i, (cid, text) in enumerate(texts.items())
        }
        await rag.text_chunks.upsert(chunks)
        await rag.chunks_vdb.upsert(chunks)
        await rag.entities_vdb.upsert({
            entity_id(n): {"entity_name": n, "content": f"{n}\n{n} tool", "source_id": "",
                           "file_path": fp}
            for n in (a, b)
        })
        await rag.relationships_vdb.upsert({
            relation_id(a, b): {"src_id": a, "tgt_id": b,
                                "content": f"{hl}\t{a}\n{b}\nintegration",
                                "source_id": corpus.SEED_001_CHUNK, "file_path": fp}
        })
        for storage in (rag.text_chunks, rag.chunks_vdb, rag.entities_vdb,
                        rag.relationships_vdb):
            await storage.index_done_callback()

    try:
        world.run(write())
    finally:
        world.run(rag.finalize_storages())

    table = lightrag_vector_table("relationships", model, embedder.dim)
    raw = world.run(world.pool.fetchval(
        f"SELECT chunk_ids::text FROM {table} WHERE workspace = $1 AND id = $2",
        ws, relation_id(a, b),
    ))
    assert raw == "{" + corpus.SEED_001_CHUNK + "}", raw  # seed 001's array text

    graph = PgGraphStore(world.pool, table_prefix="lrs001")
    data_entities = [
        Entity(name=n, entity_type="software", description=f"{n} tool") for n in (a, b)
    ]

    async def fill_graph() -> None:
        await graph.upsert_nodes(data_entities)
        await graph.upsert_edges(corpus.seed001_relations())

    world.run(fill_graph())
    assert world.run(graph.count_edges()) == 21
    stores = {
        ns: LightRAGPgVectorIndex(world.pool, namespace=ns, dim=embedder.dim,  # type: ignore[arg-type]
                                  workspace=ws, model_name=model)
        for ns in ("entities", "relationships", "chunks")
    }
    stores["graph"] = graph
    stores["chunk_store"] = LightRAGPgChunkStore(world.pool, workspace=ws)
    for lookup in ("chunk", "pair"):
        for mode in ("hybrid", "mix"):
            engine = compose_engine(
                stores, embedder=embedder,  # type: ignore[arg-type]
                settings=EngineSettings(relation_lookup={mode: lookup}),
            )
            param = QueryParam(mode=mode, hl_keywords=[hl], ll_keywords=[],  # type: ignore[arg-type]
                               enable_rerank=False)
            result = world.run(engine.query_data("How does n8n work with Airtable?", param))
            assert result["status"] == "success", result
            info = result["metadata"]["processing_info"]
            kg_chunks = [c["chunk_id"] for c in result["data"]["chunks"]]
            if lookup == "chunk":
                assert sorted(kg_chunks) == sorted(valid), (mode, kg_chunks)
                assert info["relations_resolved_by_chunk"] == 1, info
                assert info["missing_chunk_count"] == 0, info
            elif mode == "hybrid":
                assert kg_chunks == [], kg_chunks  # LightRAG's zero-chunk failure
                assert info["relations_resolved_by_pair"] >= 1, info
                assert info["missing_chunk_count"] > 0, info


def test_exact_switch_and_verification_of_a_copy_out_of_the_deployment(
    world: World, tmp_path: Any
) -> None:
    """LightRAG's tables carry an HNSW index; switched to exact search
    (``set_exact_search``) a LightRAG-layout index scores every row (what a brute-force
    ranking of its stored vectors gives, ties aside). A copy of the deployment into a
    working-directory stack then verifies: digests equal in every section, golden queries
    equal on both sides searched exactly; a copy missing one vector row fails."""
    import numpy as np

    from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_stores
    from hexrag.adapters.workdir import empty_workdir_stack
    from hexrag.bootstrap import compose_engine
    from hexrag.devtools.lightrag_pg import MODEL_NAME
    from hexrag.ports.scan import scan_all
    from hexrag.transfer import StackStores
    from hexrag.transfer.compare import compare_hits
    from hexrag.transfer.migrate import migrate_stack, sample_queries, verify_migration

    dim = world.embedder.dim
    source = StackStores(**open_lightrag_pg_stores(
        world.pool, workspace=WORKSPACE, embedding_dim=dim, model_name=MODEL_NAME))
    index: Any = source.entities

    async def all_records() -> list[Any]:
        out: list[Any] = []
        async for page in scan_all(index.scan_records, limit=500):
            out += page.items
        return out

    records = world.run(all_records())
    matrix = np.stack([np.asarray(r.vector, dtype=np.float64) for r in records])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    q = world.run(world.embedder.embed([QUERIES[0].ll_keywords[0]]))[0]
    scores = matrix @ (np.asarray(q, dtype=np.float64) / np.linalg.norm(q))
    order = sorted(range(len(records)), key=lambda i: (-scores[i], records[i].id))
    from hexrag.core.model import VectorHit

    top_k = 40
    want = [VectorHit(record=records[i], score=float(scores[i])) for i in order[:top_k]
            if scores[i] >= index.cosine_threshold]
    assert index.set_exact_search(True) is False
    try:
        got = world.run(index.query(q, top_k))
    finally:
        assert index.set_exact_search(False) is True
    assert compare_hits(want, got, top_k)[0] in ("same", "ties"), compare_hits(want, got, top_k)

    copy = empty_workdir_stack(dim)
    target = StackStores(**copy.stack_stores(), embedding_model=None)
    target.cache = None  # the deployment stores above have no LLM cache
    world.run(migrate_stack(source, target, state_path=tmp_path / "s.json", page_size=250))
    src_engine = compose_engine(source, embedder=world.embedder, store_cache=False)
    dst_engine = compose_engine(target, embedder=world.embedder, store_cache=False)
    queries = world.run(sample_queries(source, 6))
    report = world.run(verify_migration(source, target, src_engine, dst_engine,
                                        queries=queries))
    assert report["ok"], report["mismatches"]
    assert "source entities" in report["exact_search"]
    assert report["queries"] >= 5, report  # query_data compared for at least one query
    victim = world.run(copy.entities.scan_records(None, limit=1)).items[0]
    world.run(copy.entities.delete([victim.id]))
    broken = world.run(verify_migration(source, target, src_engine, dst_engine,
                                        queries=queries))
    assert not broken["ok"]
    assert any(m.startswith("entities:") for m in broken["mismatches"]), broken["mismatches"]
