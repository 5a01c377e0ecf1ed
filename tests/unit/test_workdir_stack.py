"""load_workdir / save_workdir: conversions, round trips, errors, atomic writes."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from hexrag.adapters.memory import MemoryChunkStore
from hexrag.adapters.workdir import load_workdir, resolve_workdir, save_workdir
from hexrag.adapters.workdir.nanovdb import (
    encode_row_vector,
    read_nano_vdb,
)
from hexrag.core.errors import ConfigurationError, NotFound
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, QueryScope, Relation
from hexrag.ports.cache import KV_NAMESPACES

DIM = 8

GRAPHML = """<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="d9" for="edge" attr.name="truncate" attr.type="string" />
  <key id="d8" for="edge" attr.name="weight" attr.type="long" />
  <key id="d7" for="edge" attr.name="created_at" attr.type="long" />
  <key id="d6" for="edge" attr.name="keywords" attr.type="string" />
  <key id="d5" for="edge" attr.name="source_id" attr.type="string" />
  <key id="d4" for="node" attr.name="created_at" attr.type="string" />
  <key id="d3" for="node" attr.name="source_id" attr.type="string" />
  <key id="d2" for="node" attr.name="description" attr.type="string" />
  <key id="d1" for="node" attr.name="entity_type" attr.type="string" />
  <key id="d0" for="node" attr.name="entity_id" attr.type="string" />
  <graph edgedefault="undirected">
    <node id="Alice">
      <data key="d0">Alice</data>
      <data key="d1">person</data>
      <data key="d2">An "engineer" &amp; more</data>
      <data key="d3">chunk-1&lt;SEP&gt;chunk-10</data>
    </node>
    <node id="Acme Corp">
      <data key="d0">ACME</data>
      <data key="d1">organization</data>
      <data key="d2" />
      <data key="d4">yesterday</data>
    </node>
    <node id="Globex" />
    <node id="Zoë" />
    <edge source="Globex" target="Zoë">
      <data key="d8">3</data>
    </edge>
    <edge source="Alice" target="Acme Corp">
      <data key="d5">chunk-1</data>
      <data key="d6">employment</data>
      <data key="d7">1700000000</data>
      <data key="d9">yes</data>
    </edge>
    <edge source="Acme Corp" target="Globex">
      <data key="d6">partnership</data>
    </edge>
    <edge source="Zoë" target="Alice" />
  </graph>
</graphml>
"""


def _vdb(rows: list[dict[str, Any]], seed: int, dim: int = DIM) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal((len(rows), dim)).astype(np.float32)
    for row, vec in zip(rows, raw, strict=True):
        row["vector"] = encode_row_vector(vec)
    matrix = (raw / np.linalg.norm(raw, axis=-1, keepdims=True)).astype(np.float32)
    return {
        "embedding_dim": dim,
        "data": rows,
        "matrix": base64.b64encode(matrix.tobytes()).decode(),
    }


def make_workdir(path: Path, *, dim: int = DIM) -> Path:
    """A small LightRAG-format working directory with the awkward cases in it."""
    path.mkdir(parents=True, exist_ok=True)
    entities = [
        {
            "__id__": entity_id(name),
            "__created_at__": 1_700_000_000,
            "__write_seq__": 1_700_000_000_123_456_789,
            "content": f"{name}\ndescription",
            "entity_name": name,
            "source_id": "chunk-1",
            "file_path": "docs/p1/a.md",
            "product_id": "p1" if name != "Globex" else "p2",
        }
        for name in ("Alice", "Acme Corp", "Globex", "Zoë")
    ]
    relations = [
        {
            "__id__": relation_id(a, b),
            "__created_at__": 1_700_000_001,
            "src_id": min(a, b),
            "tgt_id": max(a, b),
            "source_id": "chunk-1",
            "content": f"kw\t{min(a, b)}\n{max(a, b)}\ndesc",
            "file_path": "a.md",
        }
        for a, b in (("Alice", "Acme Corp"), ("Acme Corp", "Globex"), ("Globex", "Zoë"))
    ]
    chunks = [
        {"__id__": "chunk-1", "__created_at__": 5, "content": "Alice works at Acme.",
         "full_doc_id": "doc-1", "file_path": "a.md"},
        {"__id__": "chunk-10", "__created_at__": 5, "content": "Globex.", "full_doc_id": "doc-2",
         "file_path": None},
    ]
    (path / "vdb_entities.json").write_text(
        json.dumps(_vdb(entities, 1, dim), ensure_ascii=False), encoding="utf-8"
    )
    (path / "vdb_relationships.json").write_text(
        json.dumps(_vdb(relations, 2, dim), ensure_ascii=False), encoding="utf-8"
    )
    (path / "vdb_chunks.json").write_text(
        json.dumps(_vdb(chunks, 3, dim), ensure_ascii=False), encoding="utf-8"
    )
    (path / "graph_chunk_entity_relation.graphml").write_text(GRAPHML, encoding="utf-8")
    text_chunks = {
        "chunk-1": {
            "tokens": 5,
            "content": "Alice works at Acme.",
            "chunk_order_index": 0,
            "full_doc_id": "doc-1",
            "file_path": "a.md",
            "llm_cache_list": ["default:extract:x"],
            "heading": {"level": 2, "text": "Intro"},
            "product_id": "p1",
            "nothing": None,
            "create_time": 1,
            "update_time": 2,
            "_id": "chunk-1",
        },
        "chunk-10": {"content": "Globex.", "tokens": "7", "full_doc_id": "doc-2"},
    }
    (path / "kv_store_text_chunks.json").write_text(
        json.dumps(text_chunks, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    legacy_cache = {
        "mix": {"abc": {"return": "answer", "cache_type": "query"}},
        "default": {"def": {"return": "x"}},
    }
    (path / "kv_store_llm_response_cache.json").write_text(
        "\ufeff" + json.dumps(legacy_cache), encoding="utf-8"
    )
    (path / "kv_store_full_docs.json").write_text('{"doc-1": {"content": "é"}}', encoding="utf-8")
    (path / "kv_store_doc_status.json").write_bytes(b'{\n  "doc-1": {"status": "processed"}\n}')
    return path


async def test_load_converts_every_file(tmp_path: Path) -> None:
    stack = load_workdir(make_workdir(tmp_path / "wd"), embedder_dim=DIM)
    assert stack.embedding_dim == DIM
    assert await stack.entities.count() == 4
    assert await stack.relationships.count() == 3
    assert await stack.chunks.count() == 2

    [rec] = await stack.entities.get([entity_id("Alice")])
    assert rec is not None
    assert (rec.entity_name, rec.source_id, rec.file_path, rec.created_at) == (
        "Alice", "chunk-1", "docs/p1/a.md", 1_700_000_000)
    assert rec.content == "Alice\ndescription"
    assert rec.metadata == {"__write_seq__": 1_700_000_000_123_456_789, "product_id": "p1"}
    assert rec.vector is None
    [crec] = await stack.chunks.get(["chunk-10"])
    assert crec is not None and crec.full_doc_id == "doc-2"
    assert crec.file_path is None and crec.metadata == {"file_path": None}

    nodes = await stack.graph.get_nodes(["Alice", "Acme Corp", "Globex"])
    alice, acme = nodes["Alice"], nodes["Acme Corp"]
    assert alice.entity_type == "person"
    assert alice.description == 'An "engineer" & more'
    assert alice.source_id == "chunk-1<SEP>chunk-10"
    assert alice.properties == {}  # entity_id equal to the node id is implied
    # a differing entity_id and a string created_at stay in properties; "" stays ""
    assert acme.description == ""
    assert acme.created_at is None
    assert acme.properties == {"entity_id": "ACME", "created_at": "yesterday"}
    assert nodes["Globex"].properties == {} and nodes["Globex"].description is None

    edges = await stack.graph.get_node_edges(["Alice"])
    rel = next(r for r in edges["Alice"] if r.pair == ("Acme Corp", "Alice"))
    assert rel.id == relation_id("Alice", "Acme Corp")
    assert (rel.keywords, rel.source_id, rel.created_at, rel.weight) == (
        "employment", "chunk-1", 1_700_000_000, None)
    assert rel.properties == {"truncate": "yes"}
    weighted = (await stack.graph.get_edges_by_pairs([("Zoë", "Globex")]))[("Zoë", "Globex")]
    assert weighted[0].weight == 3.0 and isinstance(weighted[0].weight, float)

    [c1, c10] = await stack.chunk_store.get_chunks(["chunk-1", "chunk-10"])
    assert c1 is not None and c10 is not None
    assert (c1.tokens, c1.chunk_order_index, c1.full_doc_id, c1.file_path) == (
        5, 0, "doc-1", "a.md")
    assert c1.metadata == {
        "llm_cache_list": ["default:extract:x"],
        "heading": {"level": 2, "text": "Intro"},
        "product_id": "p1",
        "nothing": None,
        "create_time": 1,
        "update_time": 2,
        "_id": "chunk-1",
    }
    assert c10.tokens is None and c10.metadata == {"tokens": "7"}  # wrong type kept as stored

    # legacy nested cache migrated like LightRAG does (cache_type defaults to "extract")
    assert dict(stack.cache.items()) == {
        "mix:query:abc": {"return": "answer", "cache_type": "query"},
        "default:extract:def": {"return": "x"},
    }
    assert set(stack.extra_files) == {"kv_store_doc_status.json"}
    full_docs = json.loads((tmp_path / "wd" / "kv_store_full_docs.json").read_text())
    assert dict(stack.kv["full_docs"].items()) == full_docs  # a section, not opaque bytes
    assert sorted(stack.kv) == sorted(KV_NAMESPACES)


async def test_scope_metadata_filters_vector_queries(tmp_path: Path) -> None:
    stack = load_workdir(make_workdir(tmp_path / "wd"), embedder_dim=DIM)
    matrix, records = stack.entities.export_arrays()
    globex_row = [r.entity_name for r in records].index("Globex")
    p1 = QueryScope(product_id="p1")
    hits = await stack.entities.query(matrix[globex_row].copy(), 10, scope=p1)
    assert hits and all(h.record.entity_name != "Globex" for h in hits)
    hits = await stack.entities.query(matrix[globex_row].copy(), 1)
    assert hits[0].record.entity_name == "Globex"


async def test_neighbour_order_is_networkx_order(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd")
    stack = load_workdir(wd, embedder_dim=DIM)
    g = nx.read_graphml(wd / "graph_chunk_entity_relation.graphml")
    edges = await stack.graph.get_node_edges(list(g.nodes))
    for node in g.nodes:
        neighbours = [r.tgt_id if r.src_id == node else r.src_id for r in edges[node]]
        assert neighbours == list(g.adj[node]), node
    assert [r.pair for r in stack.graph.iter_edges()] == [
        tuple(sorted(e)) for e in g.edges()
    ]


async def test_save_then_load_gives_the_same_stack(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd")
    first = load_workdir(wd, embedder_dim=DIM)
    out = save_workdir(first, tmp_path / "out")
    assert not [p for p in out.iterdir() if ".tmp." in p.name]
    second = load_workdir(out, embedder_dim=DIM)
    for ns in ("entities", "relationships", "chunks"):
        m1, r1 = first.vector_index(ns).export_arrays()
        m2, r2 = second.vector_index(ns).export_arrays()
        # the stored vectors are written back as stored (never re-normalised), so the
        # loaded, normalised matrix is the same bit for bit, and so are the file's rows
        assert np.array_equal(m2.view(np.uint32), m1.view(np.uint32)), ns
        s1, _ = first.vector_index(ns).export_stored_arrays()
        s2, _ = second.vector_index(ns).export_stored_arrays()
        assert np.array_equal(s1.view(np.uint32), s2.view(np.uint32)), ns
        name = f"vdb_{ns}.json"
        original = read_nano_vdb(wd / name, normalize=False).matrix
        saved = read_nano_vdb(out / name, normalize=False).matrix
        assert np.array_equal(original.view(np.uint32), saved.view(np.uint32)), ns
        assert r1 == r2, ns
    assert list(first.graph.iter_nodes()) == list(second.graph.iter_nodes())
    assert list(first.graph.iter_edges()) == list(second.graph.iter_edges())
    assert list(first.chunk_store.iter_chunks()) == list(second.chunk_store.iter_chunks())
    assert dict(first.cache.items()) == dict(second.cache.items())
    for name, content in first.extra_files.items():
        assert (out / name).read_bytes() == content
    # the chunk file stays a LightRAG JSON KV file
    saved = json.loads((out / "kv_store_text_chunks.json").read_text(encoding="utf-8"))
    assert saved["chunk-1"]["heading"] == {"level": 2, "text": "Intro"}
    assert list(saved["chunk-1"])[:5] == [
        "tokens", "content", "chunk_order_index", "full_doc_id", "file_path"]
    # networkx reads the saved graph with the same data and order
    g1 = nx.read_graphml(wd / "graph_chunk_entity_relation.graphml")
    g2 = nx.read_graphml(out / "graph_chunk_entity_relation.graphml")
    assert list(g2.nodes) == list(g1.nodes)
    assert [tuple(sorted(e)) for e in g2.edges] == [tuple(sorted(e)) for e in g1.edges]
    assert g2.nodes["Acme Corp"]["entity_id"] == "ACME"
    assert g2.nodes["Globex"] == {"entity_id": "Globex"}


async def test_multi_relations_are_merged_for_lightrag_graph(tmp_path: Path) -> None:
    stack = load_workdir(make_workdir(tmp_path / "wd"), embedder_dim=DIM)
    await stack.graph.upsert_edges(
        [
            Relation(id="extra-1", src_id="Alice", tgt_id="Acme Corp", description="d2",
                     keywords="k2", weight=2.0, source_id=["chunk-2", "chunk-1"],
                     created_at=1_600_000_000),
        ]
    )
    out = save_workdir(stack, tmp_path / "out")
    g = nx.read_graphml(out / "graph_chunk_entity_relation.graphml")
    data = g.edges["Alice", "Acme Corp"]
    assert data["keywords"] == "employment,k2"
    assert data["description"] == "d2"
    assert data["weight"] == 2.0
    assert data["source_id"] == "chunk-1<SEP>chunk-2"
    assert data["created_at"] == 1_600_000_000


def test_missing_optional_files_give_empty_stores(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "kv_store_text_chunks.json").write_text("", encoding="utf-8")  # blank = missing
    with pytest.raises(ConfigurationError, match="embedding dimension is unknown"):
        load_workdir(wd)
    stack = load_workdir(wd, embedder_dim=16)
    assert stack.embedding_dim == 16 and stack.entities.dim == 16
    assert len(list(stack.chunk_store.iter_chunks())) == 0
    assert list(stack.graph.iter_nodes()) == []


def test_dimension_mismatch_names_both_numbers_and_the_file(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd")
    with pytest.raises(ConfigurationError) as err:
        load_workdir(wd, embedder_dim=384)
    message = str(err.value)
    assert "384" in message and str(DIM) in message and "vdb_entities.json" in message


def test_vector_files_that_disagree_on_dim(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd")
    other = make_workdir(tmp_path / "other", dim=4)
    (wd / "vdb_chunks.json").write_bytes((other / "vdb_chunks.json").read_bytes())
    with pytest.raises(ConfigurationError, match="disagree on embedding_dim"):
        load_workdir(wd)


@pytest.mark.parametrize(
    ("setup", "error", "needle"),
    [
        ("missing", NotFound, "not found"),
        ("file", NotFound, "not a directory"),
        ("empty", NotFound, "not a LightRAG working directory"),
        ("workspaces", NotFound, "workspace sub-directories: alpha, beta"),
        ("bad_json", ConfigurationError, "malformed JSON"),
        ("chunk_not_object", ConfigurationError, "is not a JSON object"),
        ("kv_not_object", ConfigurationError, "must hold a JSON object"),
        ("bad_graph", ConfigurationError, "malformed GraphML"),
    ],
)
def test_bad_directories(tmp_path: Path, setup: str, error: type[Exception], needle: str) -> None:
    target = tmp_path / "wd"
    if setup == "file":
        target.write_text("x", encoding="utf-8")
    elif setup == "empty":
        target.mkdir()
        (target / "notes.txt").write_text("x", encoding="utf-8")
    elif setup == "workspaces":
        make_workdir(target / "alpha")
        make_workdir(target / "beta")
    elif setup == "bad_json":
        make_workdir(target)
        (target / "kv_store_text_chunks.json").write_text('{"a": ', encoding="utf-8")
    elif setup == "chunk_not_object":
        make_workdir(target)
        (target / "kv_store_text_chunks.json").write_text('{"a": 1}', encoding="utf-8")
    elif setup == "kv_not_object":
        make_workdir(target)
        (target / "kv_store_llm_response_cache.json").write_text("[1]", encoding="utf-8")
    elif setup == "bad_graph":
        make_workdir(target)
        (target / "graph_chunk_entity_relation.graphml").write_text("<graphml>", encoding="utf-8")
    with pytest.raises(error) as err:
        load_workdir(target, embedder_dim=DIM)
    assert needle in str(err.value)
    assert "wd" in str(err.value)


def test_workspaces(tmp_path: Path) -> None:
    make_workdir(tmp_path / "root" / "alpha")
    stack = load_workdir(tmp_path / "root", workspace="alpha", embedder_dim=DIM)
    assert stack.source == tmp_path / "root" / "alpha"
    with pytest.raises(NotFound, match=r"workspace 'beta' not found.*alpha"):
        load_workdir(tmp_path / "root", workspace="beta")
    for bad in ("../x", "a/b", "..", "a\\b"):
        with pytest.raises(ConfigurationError, match="invalid workspace"):
            resolve_workdir(tmp_path / "root", bad)
    out = save_workdir(stack, tmp_path / "copy", workspace="alpha")
    assert out == tmp_path / "copy" / "alpha"
    assert load_workdir(tmp_path / "copy", workspace="alpha").embedding_dim == DIM


async def test_failed_save_leaves_old_files_and_no_temporaries(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd")
    stack = load_workdir(wd, embedder_dim=DIM)
    out = save_workdir(stack, tmp_path / "out")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    await stack.chunks.delete(["chunk-10"])
    # a chunk whose metadata cannot be JSON-encoded makes the save fail half-way
    stack.chunk_store = MemoryChunkStore([Chunk(id="bad", content="x", metadata={"s": {1, 2}})])
    with pytest.raises(TypeError):
        save_workdir(stack, out)
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert after == before  # vdb_chunks.json was staged but never published


def test_saved_files_keep_their_permissions(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd")
    os.chmod(wd / "vdb_entities.json", 0o600)
    save_workdir(load_workdir(wd), wd)
    assert (wd / "vdb_entities.json").stat().st_mode & 0o777 == 0o600
