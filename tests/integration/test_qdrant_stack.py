"""A stack whose vector indexes are Qdrant, named by URL in a TOML file: ``qdrant:///dir``
(embedded Qdrant, no server). It is built by the ordinary stack builder, answers queries as
the same stack on memory indexes does, and keeps its vectors in the directory across a
close and a reopen. Also: the URL forms the configuration accepts and refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hexrag.config import StackConfig, load_config, parse_store
from hexrag.core.errors import ConfigurationError

CHUNKS = [
    ("chunk-a", "Xero invoices are reconciled by the finance team every Friday."),
    ("chunk-b", "The CRM stores every customer contact and its account owner."),
    ("chunk-c", "Payroll runs in the ERP on the last working day of the month."),
    ("chunk-d", "Finance reports to the CFO; the CFO reports to the CEO."),
    ("chunk-e", "Support tickets are triaged in the helpdesk within one hour."),
]
QUERIES = ["When does payroll run?", "Which team reconciles the Xero invoices?",
           "every customer contact and its account owner"]


@pytest.mark.parametrize(
    ("spec", "url"),
    [
        ("qdrant:///srv/rag/qdrant", "/srv/rag/qdrant"),
        ("qdrant://./data/qdrant", "./data/qdrant"),
        ("qdrant://qdrant-host:6333", "http://qdrant-host:6333"),
        ("QDRANT:///a%20b", "/a b"),
    ],
)
def test_qdrant_urls(spec: str, url: str) -> None:
    parsed = parse_store("vector_index", spec)
    assert (parsed.kind, parsed.url) == ("qdrant", url)


@pytest.mark.parametrize(
    ("role", "spec"),
    [("vector_index", "qdrant://"), ("vector_index", "qdrant:///"),
     ("graph_store", "qdrant:///x"), ("chunk_store", "qdrant://h:6333")],
)
def test_qdrant_urls_refused(role: str, spec: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_store(role, spec)  # type: ignore[arg-type]


async def _fill(app: Any) -> None:
    from hexrag.core.model import Chunk, VectorRecord

    await app.stores.chunk_store.upsert_chunks(
        [Chunk(id=cid, content=text, full_doc_id="doc-1", chunk_order_index=i,
               file_path="notes.txt") for i, (cid, text) in enumerate(CHUNKS)]
    )
    vectors = await app.engine.embedder.embed([text for _, text in CHUNKS])
    await app.stores.chunks.upsert([
        VectorRecord(id=cid, vector=vec, content=text, full_doc_id="doc-1",
                     file_path="notes.txt")
        for (cid, text), vec in zip(CHUNKS, vectors, strict=True)
    ])


async def _answers(app: Any) -> list[dict[str, Any]]:
    from hexrag.core.model import QueryParam

    return [await app.engine.query_data(q, QueryParam(mode="naive", chunk_top_k=3))
            for q in QUERIES]


async def test_a_toml_stack_on_embedded_qdrant(tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client", reason="the qdrant extra: pip install 'hexrag[qdrant]'")
    import hexrag.adapters.tiktoken_offline  # noqa: F401  (the default tokenizer, registered)
    from hexrag.adapters.qdrant import QdrantVectorIndex
    from hexrag.bootstrap import build_stack

    toml = tmp_path / "stack.toml"
    toml.write_text(
        f'vector_index = "qdrant://{tmp_path / "qdrant"}"\nembedder = "hashing:32"\n'
        'namespace = "kb"\n[settings]\ncosine_threshold = 0.0\n', encoding="utf-8")
    app = await build_stack(load_config(toml))
    try:
        inner = getattr(app.stores.chunks, "inner", app.stores.chunks)
        assert isinstance(inner, QdrantVectorIndex) and inner.collection == "kb_chunks"
        await _fill(app)
        got = await _answers(app)
    finally:
        await app.aclose()
    memory = await build_stack(StackConfig(embedder="hashing:32", namespace="kb",
                                           settings={"cosine_threshold": 0.0}))
    try:
        await _fill(memory)
        want = await _answers(memory)
    finally:
        await memory.aclose()
    assert got == want
    assert all(answer["data"]["chunks"] for answer in got), "the queries must find chunks"

    again = await build_stack(load_config(toml))  # the vectors stayed in the directory
    try:
        assert await again.stores.chunks.count() == len(CHUNKS)
    finally:
        await again.aclose()
