"""hexrag's ingestion equals LightRAG 1.5.7's ``ainsert`` on the same documents and the same
scripted LLM: identical chunks, entities, relations (descriptions, types, keywords, weights,
source ids, file paths) and vector records (ids, contents, vectors).

The LLM's answers are computed from the chunk text in the prompt (capitalised words become
entities, neighbours become relations; the gleaning round lengthens one description, which
LightRAG keeps), and description summaries answer with a digest of their prompt. Small chunks
(20 tokens, 4 overlapping) spread every entity over many chunks, so fragments are merged, and
summarised from three on (``force_llm_summary_on_merge = 3``). Both sides run with the same
frozen clock; LightRAG writes its working directory, hexrag writes the same format
(``save_workdir``) and both are read back with ``load_workdir``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.adapters.workdir import empty_workdir_stack, load_workdir, save_workdir
from hexrag.core.ingest.extraction_prompts import TUPLE_DELIMITER
from hexrag.core.ingest.ingestion import Ingestor, IngestSettings
from hexrag.core.ingest.merging import MergeSettings
from hexrag.core.ingest.summary import SummaryLimits
from hexrag.devtools.lightrag_data import (
    _quiet_lightrag,
    lightrag_embedding_func,
    register_offline_tiktoken,
    require_lightrag,
)
from hexrag.devtools.scripted_kg import ScriptedKGLLM, kg_reply
from tests.services.postgres import pg_dsn  # noqa: F401

require_lightrag()

D = TUPLE_DELIMITER
NOW = 1_700_000_000
DIM = 32
DOCS = [
    "Acme Corp builds Acme CRM. Acme CRM syncs contacts with Mailchimp every night. "
    "Mailchimp sends the Newsletter. The Newsletter reaches Europe and Asia. "
    "Acme CRM also exports Invoices to Xero for Finance teams.",
    "Zapier connects Acme CRM to Slack. Slack notifies Sales when Mailchimp bounces. "
    "Sales reviews Invoices in Xero. Acme Corp hires Support in Europe.",
]


def scripted(prompt: str, system: str | None, history: Sequence[Mapping[str, Any]]) -> str:
    """Deterministic answers from the prompt alone (both sides get the same)."""
    return kg_reply(prompt, system, history)


def _lightrag(tmp: Path, monkeypatch: pytest.MonkeyPatch, *, cache: bool = False
             ) -> tuple[Path, int]:
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()
    calls = 0

    async def llm(prompt: str, system_prompt: str | None = None,
                  history_messages: list[dict[str, Any]] | None = None, **_: Any) -> str:
        nonlocal calls
        calls += 1
        return scripted(prompt, system_prompt, history_messages or [])

    monkeypatch.setattr(time, "time", lambda: float(NOW))

    import uuid

    workspace = "lr" + uuid.uuid4().hex[:8]  # LightRAG shares storages per workspace in-process

    async def run() -> None:
        rag = LightRAG(
            working_dir=str(tmp), workspace=workspace,
            embedding_func=lightrag_embedding_func(HashingEmbedder(DIM)),
            llm_model_func=llm, tokenizer=TiktokenTokenizer("gpt-4o-mini"),
            chunk_token_size=20, chunk_overlap_token_size=4, force_llm_summary_on_merge=3,
            enable_llm_cache=False, enable_llm_cache_for_entity_extract=cache,
        )
        await rag.initialize_storages()
        try:
            for doc in DOCS:
                await rag.ainsert(doc)
        finally:
            await rag.finalize_storages()

    asyncio.run(run())
    monkeypatch.undo()
    return tmp / workspace, calls


def _hexrag(tmp: Path, *, metadata: bool = False) -> tuple[Path, int]:
    stack = empty_workdir_stack(DIM)
    llm = ScriptedKGLLM()
    ingestor = _ingestor(stack, llm)

    async def run() -> None:
        for i, doc in enumerate(DOCS):
            if metadata:  # first-class fields on every record, an encoded file_path
                await ingestor.ingest_text(doc, metadata={
                    "product_id": f"p-{i % 2}", "category_id": "apps", "owner": "ops"})
            else:
                await ingestor.ingest_text(doc)

    asyncio.run(run())
    import uuid

    out = tmp / ("hx" + uuid.uuid4().hex[:8])  # LightRAG shares storages per workspace name
    save_workdir(stack, out)
    return out, llm.calls


async def _view_of(stores: Any) -> dict[str, Any]:
    """Every record of a stack, through the scan capability, in comparable form."""
    from hexrag.ports.scan import scan_all

    out: dict[str, Any] = {}
    chunks = []
    async for page in scan_all(stores.chunk_store.scan_chunks):
        chunks += page.items
    out["chunks"] = {c.id: (c.content, c.tokens, c.full_doc_id, c.chunk_order_index,
                            c.file_path) for c in chunks}
    nodes = []
    async for page in scan_all(stores.graph.scan_nodes):
        nodes += page.items
    out["nodes"] = {e.name: (e.entity_type, e.description, e.source_id, e.file_path,
                             e.created_at, dict(e.properties)) for e in nodes}
    edges = []
    async for page in scan_all(stores.graph.scan_edges):
        edges += page.items
    out["edges"] = {r.pair: (r.description, r.keywords, r.weight, r.source_id,
                             r.file_path, dict(r.properties)) for r in edges}
    for ns in ("entities", "relationships", "chunks"):
        index = getattr(stores, ns)
        records = []
        async for page in scan_all(index.scan_records):
            records += page.items
        out["vec_" + ns] = {
            r.id: (r.content, r.source_id, r.file_path, r.entity_name, r.src_id, r.tgt_id,
                   r.full_doc_id,
                   np.round(np.asarray(r.vector, dtype=np.float64), 5).tolist())
            for r in records
        }
    return out


def _view(path: Path) -> dict[str, Any]:
    return asyncio.run(_view_of(load_workdir(path, embedder_dim=DIM)))


def _compare(want: dict[str, Any], got: dict[str, Any]) -> None:
    for part in ("chunks", "nodes", "edges", "vec_entities", "vec_relationships", "vec_chunks"):
        assert got[part] == want[part], part


def _ingestor(stores: Any, llm: ScriptedKGLLM, kv: Mapping[str, Any] | None = None) -> Ingestor:
    return Ingestor(
        kv=kv,
        entities=stores.entities, relationships=stores.relationships, chunks=stores.chunks,
        graph=stores.graph, chunk_store=stores.chunk_store, llm=llm,
        embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(), clock=lambda: NOW,
        settings=IngestSettings(
            chunk_token_size=20, chunk_overlap_token_size=4,
            merge=MergeSettings(summary=SummaryLimits(force_llm_summary_on_merge=3)),
        ),
    )


_KV_FIELDS = {"full_docs": ("content", "file_path", "parse_format", "content_hash",
                             "chunk_options"),
              "full_entities": ("entity_names", "count"),
              "full_relations": ("relation_pairs", "count"),
              "entity_chunks": ("chunk_ids", "count"), "relation_chunks": ("chunk_ids", "count")}


async def _kv_matches(lr_dir: Path, kv: Mapping[str, Any]) -> None:
    """Every record of LightRAG's kv files is in ``kv`` (and nothing else), equal on the
    fields every backend keeps (LightRAG's layouts differ in their bookkeeping fields)."""
    import json

    from hexrag.ports.scan import scan_all

    for ns, fields in _KV_FIELDS.items():
        want = json.loads((lr_dir / f"kv_store_{ns}.json").read_text(encoding="utf-8"))
        got: dict[str, Any] = {}
        async for page in scan_all(kv[ns].scan_entries):
            got.update(page.items)
        assert len(want) > 1, ns
        assert {k: {f: v.get(f) for f in fields} for k, v in got.items()} == {
            k: {f: v.get(f) for f in fields} for k, v in want.items()}, ns


def test_ingestion_equals_lightrags_insert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lr_dir, lr_calls = _lightrag(tmp_path, monkeypatch)
    hx_dir, hx_calls = _hexrag(tmp_path)
    want, got = _view(lr_dir), _view(hx_dir)
    assert len(want["chunks"]) > 4 and len(want["nodes"]) > 8 and len(want["edges"]) > 8
    assert any(d.startswith("Summary ") for (_, d, *_rest) in want["nodes"].values()), \
        "some entity must have been summarised by the LLM"
    _compare(want, got)
    assert hx_calls == lr_calls


@pytest.mark.backend("postgres")
def test_ingestion_into_postgres_equals_lightrags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_dsn: str  # noqa: F811
) -> None:
    """The same documents ingested into hexrag's PostgreSQL stores (pgvector, graph, chunks)
    hold exactly what LightRAG's insert wrote."""
    import uuid
    from types import SimpleNamespace

    from hexrag.adapters.postgres import (
        PgCache,
        PgChunkStore,
        PgGraphStore,
        PgVectorIndex,
        create_pool,
    )
    from hexrag.adapters.postgres.lightrag_kv import LightRAGPgKV, create_lightrag_kv_tables
    from hexrag.ports.cache import KV_NAMESPACES

    lr_dir, _ = _lightrag(tmp_path, monkeypatch)
    want = _view(lr_dir)

    async def run() -> dict[str, Any]:
        pool = await create_pool(pg_dsn)
        prefix = "ing" + uuid.uuid4().hex[:8]
        try:
            stores = SimpleNamespace(
                **{ns: PgVectorIndex(pool, namespace=ns, dim=DIM, table_prefix=prefix)  # type: ignore[arg-type]
                   for ns in ("entities", "relationships", "chunks")},
                graph=PgGraphStore(pool, table_prefix=prefix),
                chunk_store=PgChunkStore(pool, table_prefix=prefix),
            )
            # LightRAG's document-side stores: hexrag's own cache table, one namespace each,
            # and (a second run) LightRAG's own tables
            await create_lightrag_kv_tables(pool)
            layouts: list[dict[str, Any]] = [{ns: PgCache(pool, namespace=ns, table_prefix=prefix)
                        for ns in KV_NAMESPACES},
                       {ns: LightRAGPgKV(pool, namespace=ns, workspace=prefix)
                        for ns in KV_NAMESPACES}]
            ingestor = _ingestor(stores, ScriptedKGLLM(), layouts[0])
            for doc in DOCS:
                await ingestor.ingest_text(doc)
            await _kv_matches(lr_dir, layouts[0])
            again = SimpleNamespace(
                **{ns: PgVectorIndex(pool, namespace=ns, dim=DIM, table_prefix=prefix + "b")  # type: ignore[arg-type]
                   for ns in ("entities", "relationships", "chunks")},
                graph=PgGraphStore(pool, table_prefix=prefix + "b"),
                chunk_store=PgChunkStore(pool, table_prefix=prefix + "b"),
            )
            second = _ingestor(again, ScriptedKGLLM(), layouts[1])
            for doc in DOCS:
                await second.ingest_text(doc)
            await _kv_matches(lr_dir, layouts[1])
            return await _view_of(stores)
        finally:
            await pool.close()

    _compare(want, asyncio.run(run()))


@pytest.mark.backend("milvus")
@pytest.mark.backend("redis")
def test_ingestion_into_milvus_redis_equals_lightrags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same documents ingested into Milvus Lite (vectors) + Redis (chunks) + the memory
    graph hold exactly what LightRAG's insert wrote."""
    import uuid
    from types import SimpleNamespace

    from hexrag.adapters.memory import MemoryGraphStore
    from hexrag.adapters.milvus import MilvusVectorIndex
    from hexrag.adapters.redis import RedisChunkStore
    from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV
    from hexrag.ports.cache import KV_NAMESPACES
    from tests.services.milvus import shared_milvus
    from tests.services.redis import redis_server_url

    lr_dir, _ = _lightrag(tmp_path, monkeypatch)
    want = _view(lr_dir)
    _uri, client = shared_milvus()
    tag = uuid.uuid4().hex[:8]

    async def run() -> dict[str, Any]:
        chunk_store = RedisChunkStore.from_url(redis_server_url(), workspace="ing" + tag)
        stores = SimpleNamespace(
            **{ns: MilvusVectorIndex(client, collection=f"ing_{tag}_{ns}", namespace=ns,  # type: ignore[arg-type]
                                     dim=DIM, index_type="FLAT")
               for ns in ("entities", "relationships", "chunks")},
            graph=MemoryGraphStore(), chunk_store=chunk_store,
        )
        kv = {ns: LightRAGRedisKV.from_url(redis_server_url(), namespace=ns,
                                           workspace="ing" + tag) for ns in KV_NAMESPACES}
        try:
            ingestor = _ingestor(stores, ScriptedKGLLM(), kv)
            for doc in DOCS:
                await ingestor.ingest_text(doc)
            await _kv_matches(lr_dir, kv)
            return await _view_of(stores)
        finally:
            await chunk_store.clear()
            await chunk_store.aclose()
            for store in kv.values():
                await store.clear()
                await store.aclose()
            for ns in ("entities", "relationships", "chunks"):
                await getattr(stores, ns).drop()

    _compare(want, asyncio.run(run()))


@pytest.mark.parametrize("metadata", [False, True], ids=["plain", "with-metadata"])
def test_lightrag_answers_from_what_hexrag_ingested(tmp_path: Path, metadata: bool) -> None:
    """LightRAG 1.5.7 opens the working directory hexrag ingested and answers every mode as
    hexrag answers on it (WEIGHT picking, keywords supplied), also when the documents carried
    metadata (extra node / edge / vector fields, encoded file paths)."""
    from hexrag.devtools.lightrag_data import (
        KeywordQuery,
        LightRAGDir,
        diff_query_data,
        hexrag_query_data,
        lightrag_query_data,
        open_hexrag,
        open_lightrag,
    )

    out, _ = _hexrag(tmp_path, metadata=metadata)
    wd = LightRAGDir(out.parent, out.name)
    queries = [
        KeywordQuery("How does Acme CRM sync with Mailchimp?", ("co-occurs",),
                     ("Acme", "Mailchimp")),
        KeywordQuery("Who reviews invoices in Xero?", ("text",), ("Xero", "Sales")),
    ]

    async def run() -> list[str]:
        embedder = HashingEmbedder(DIM)
        rag = await open_lightrag(wd, embedder, kg_chunk_pick_method="WEIGHT")
        engine = await open_hexrag(out, embedder, kg_chunk_pick_method="WEIGHT")
        diffs: list[str] = []
        found = 0
        try:
            for q in queries:
                for mode in ("local", "global", "hybrid", "mix", "naive"):
                    lr = await lightrag_query_data(rag, mode, q)
                    hx = await hexrag_query_data(engine, mode, q)
                    found += len(lr["data"].get("entities", [])) + len(lr["data"].get("chunks", []))
                    diffs += [f"{q.query} {mode}: {d}" for d in diff_query_data(lr, hx)]
        finally:
            await rag.finalize_storages()
        assert found > 10
        return diffs

    assert asyncio.run(run()) == []


def test_extraction_cache_equals_lightrags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the extraction LLM cache on (LightRAG's default), hexrag writes LightRAG's cache
    entries (same keys, answers, prompts, chunk ids) and chunk ``llm_cache_list``s; a second
    ingestion of the same documents into a new stack sharing that cache calls no LLM and
    builds the same stores."""
    import json

    from hexrag.adapters.workdir.stack import LLM_CACHE_FILE

    lr_dir, lr_calls = _lightrag(tmp_path / "lr", monkeypatch, cache=True)
    stack = empty_workdir_stack(DIM)
    llm = ScriptedKGLLM()
    ingestor = Ingestor(
        entities=stack.entities, relationships=stack.relationships, chunks=stack.chunks,
        graph=stack.graph, chunk_store=stack.chunk_store, llm=llm,
        embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(), clock=lambda: NOW,
        settings=IngestSettings(
            chunk_token_size=20, chunk_overlap_token_size=4,
            merge=MergeSettings(summary=SummaryLimits(force_llm_summary_on_merge=3)),
            llm_identity={"role": "extract", "binding": None, "model": "gpt-4o-mini",
                          "host": None},
        ),
        cache=stack.cache,
    )

    async def run(ing: Ingestor) -> int:
        hits = 0
        for doc in DOCS:
            hits += (await ing.ingest_text(doc)).cache_hits
        return hits

    assert asyncio.run(run(ingestor)) == 0
    assert llm.calls == lr_calls > 0
    save_workdir(stack, tmp_path / "hx")
    want = json.loads((lr_dir / LLM_CACHE_FILE).read_text(encoding="utf-8"))
    got = json.loads((tmp_path / "hx" / LLM_CACHE_FILE).read_text(encoding="utf-8"))
    fields = ("return", "cache_type", "chunk_id", "original_prompt")
    assert {k: {f: v.get(f) for f in fields} for k, v in got.items()} == {
        k: {f: v.get(f) for f in fields} for k, v in want.items()}
    assert {v["cache_type"] for v in want.values()} >= {"extract", "summary"}
    lr_chunks = json.loads((lr_dir / "kv_store_text_chunks.json").read_text(encoding="utf-8"))
    hx_chunks = json.loads((tmp_path / "hx" / "kv_store_text_chunks.json").read_text(
        encoding="utf-8"))
    assert {k: sorted(v["llm_cache_list"]) for k, v in hx_chunks.items()} == {
        k: sorted(v["llm_cache_list"]) for k, v in lr_chunks.items()}

    # a new stack sharing the cache: every answer comes from it
    again = empty_workdir_stack(DIM)
    silent = ScriptedKGLLM()
    second = Ingestor(
        entities=again.entities, relationships=again.relationships, chunks=again.chunks,
        graph=again.graph, chunk_store=again.chunk_store, llm=silent,
        embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(), clock=lambda: NOW + 99,
        settings=ingestor._settings, cache=stack.cache,
    )
    assert asyncio.run(run(second)) == lr_calls and silent.calls == 0
    first_view, second_view = asyncio.run(_view_of(stack)), asyncio.run(_view_of(again))
    for part in ("chunks", "vec_chunks"):
        assert first_view[part] == second_view[part], part
    # fragments carry the cached answers' times, so descriptions merge identically
    assert {n: v[:4] for n, v in first_view["nodes"].items()} == {
        n: v[:4] for n, v in second_view["nodes"].items()}
