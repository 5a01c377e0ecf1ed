"""The document endpoints over real HTTP: LightRAG's insert bodies, background ingestion with
statuses, then queries that see the new documents (scoped by their product), hostile bodies
refused with 4xx, and 503 when the stack has no LLM."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from hexrag.adapters.memory import (
    HashingEmbedder,
    MemoryChunkStore,
    MemoryDocumentStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.api.app import create_app
from hexrag.bootstrap import compose_engine
from hexrag.core.ingest.ingestion import Ingestor, IngestSettings
from hexrag.devtools.scripted_kg import kg_reply
from tests.integration.live import LiveServer

DIM = 32


class ScriptedLLM:
    model_name = "scripted"

    async def complete(self, prompt: str, *, system_prompt: str | None = None,
                       history: Sequence[Mapping[str, Any]] = (), json_mode: bool = False) -> str:
        if "boom" in prompt and system_prompt:
            raise RuntimeError("model down")
        return kg_reply(prompt, system_prompt, history)

    async def stream(self, prompt: str, **_: Any) -> Any:  # pragma: no cover - unused
        yield await self.complete(prompt)


def _app(with_llm: bool = True, documents: bool = True, settings: Any = None) -> Any:
    stores = {
        **{ns: MemoryVectorIndex(ns, DIM) for ns in ("entities", "relationships", "chunks")},
        "graph": MemoryGraphStore(), "chunk_store": MemoryChunkStore(),
    }
    engine = compose_engine(stores, embedder=HashingEmbedder(DIM))
    ingestor = Ingestor(
        **stores, llm=ScriptedLLM(), embedder=HashingEmbedder(DIM),
        tokenizer=default_tokenizer(), clock=lambda: int(time.time()),
        settings=IngestSettings(chunk_token_size=30, chunk_overlap_token_size=5),
        documents=MemoryDocumentStore() if documents else None,
    ) if with_llm else None
    return create_app(engine, ingestor=ingestor, required_stores=(), settings=settings)


@pytest.fixture
def live() -> Iterator[LiveServer]:
    server = LiveServer(_app())
    try:
        yield server
    finally:
        server.stop()


def _wait_idle(live: LiveServer) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not live.client.get("/documents/pipeline_status").json()["busy"]:
            statuses = live.client.get("/documents").json()["statuses"]
            if not statuses.get("pending") and not statuses.get("processing"):
                return
        time.sleep(0.05)
    raise AssertionError("ingestion did not finish")


def test_insert_then_query_scoped(live: LiveServer) -> None:
    r = live.client.post("/documents/text", json={
        "text": "Acme CRM syncs contacts with Mailchimp. Mailchimp sends the Newsletter.",
        "file_source": "crm.md", "product_id": "p-crm", "category": "crm"})
    assert r.status_code == 200 and r.json()["status"] == "success", r.text
    r = live.client.post("/documents/texts", json={
        "texts": ["Acme ERP books Invoices in Xero. Xero reports to Finance.",
                  "Acme ERP plans Inventory with Xero."],
        "file_sources": ["erp1.txt", "erp2.txt"], "product_id": "p-erp"})
    assert r.status_code == 200 and r.json()["status"] == "success", r.text
    _wait_idle(live)
    statuses = live.client.get("/documents").json()["statuses"]
    assert len(statuses["processed"]) == 3 and "failed" not in statuses, statuses
    pipeline = live.client.get("/documents/pipeline_status").json()
    assert sum("processed doc-" in m for m in pipeline["history_messages"]) == 3
    assert pipeline["docs"] == 0 and pipeline["busy"] is False
    again = live.client.post("/documents/text", json={
        "text": "Acme ERP plans Inventory with Xero.", "product_id": "p-erp"})
    assert again.json()["status"] == "duplicated"
    data = live.client.post("/query/data", json={
        "query": "Who books invoices?", "mode": "mix", "hl_keywords": ["Xero invoices"],
        "ll_keywords": ["Xero"], "scope": {"product_id": "p-erp"}}).json()
    files = {c["file_path"] for c in data["data"]["chunks"]}
    assert files and all(f.startswith("product_id:p-erp:") for f in files), files


def test_a_failing_document_is_recorded_not_raised(live: LiveServer) -> None:
    r = live.client.post("/documents/text", json={"text": "boom goes Acme."})
    assert r.status_code == 200
    _wait_idle(live)
    failed = live.client.get("/documents").json()["statuses"]["failed"]
    assert failed[0]["error_msg"] == "RuntimeError"
    assert live.client.get("/health").status_code in (200, 503)  # the server still answers


@pytest.mark.parametrize("body", [
    {"text": ""}, {"text": "a\x00b"}, {"text": "\ud800"}, {"text": 12},
    {"texts": []}, {"texts": ["x"] * 1001}, {"texts": ["ok"], "file_sources": ["a", "b"]},
    {"text": "ok", "product_id": "x" * 600}, {"text": "\x07\x07"},
])
def test_hostile_bodies_are_4xx(live: LiveServer, body: dict[str, Any]) -> None:
    path = "/documents/texts" if "texts" in body else "/documents/text"
    if body.get("text") == "\ud800":  # a lone surrogate, as JSON escapes send it
        r = live.client.post(path, content=b'{"text": "\\ud800"}',
                             headers={"content-type": "application/json"})
    else:
        r = live.client.post(path, json=body)
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    assert len(r.text) < 2000


def test_no_llm_is_503_with_the_reason() -> None:
    server = LiveServer(_app(with_llm=False))
    try:
        r = server.client.post("/documents/text", json={"text": "Acme CRM."})
        assert r.status_code == 503 and "no LLM" in r.text
    finally:
        server.stop()


def _wait_deleted(live: LiveServer) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = live.client.get("/documents/pipeline_status").json()
        if not status["busy"] and not status["queued_deletions"]:
            return str(status["latest_message"])
        time.sleep(0.05)
    raise AssertionError("deletion did not finish")


def test_delete_a_document_over_http(live: LiveServer) -> None:
    crm = "Acme CRM syncs contacts with Mailchimp. Mailchimp sends the Newsletter to Europe."
    live.client.post("/documents/text", json={"text": crm, "product_id": "p-crm"})
    live.client.post("/documents/text", json={
        "text": "Acme ERP books Invoices in Xero. Xero reports to Finance in Europe.",
        "product_id": "p-erp"})
    _wait_idle(live)
    processed = live.client.get("/documents").json()["statuses"]["processed"]
    by_path = {d["file_path"]: d for d in processed}
    crm_doc = by_path["product_id:p-crm:source:unknown_source"]
    assert crm_doc["chunks_count"] >= 1 and crm_doc["content_summary"].startswith("Acme CRM")

    def seen() -> set[str]:
        out = set()
        for mode in ("local", "global", "hybrid", "mix", "naive"):
            d = live.client.post("/query/data", json={
                "query": "Mailchimp Newsletter Europe", "mode": mode,
                "hl_keywords": ["Mailchimp Newsletter"], "ll_keywords": ["Mailchimp", "Europe"],
            }).json()["data"]
            out |= {c["file_path"] for c in d.get("chunks", [])}
            out |= {e["file_path"] for e in d.get("entities", []) + d.get("relationships", [])}
        return {p for f in out for p in f.split("<SEP>")}

    assert "product_id:p-crm:source:unknown_source" in seen()
    r = live.client.request("DELETE", "/documents/delete_document",
                            json={"doc_ids": [crm_doc["id"], "doc-unknown"]})
    assert r.status_code == 200 and r.json()["status"] == "deletion_started", r.text
    assert "deleted 1 document(s), 1 not found" in _wait_deleted(live)
    left = live.client.get("/documents").json()["statuses"]
    assert [d["id"] for d in left["processed"]] != [] and crm_doc["id"] not in {
        d["id"] for group in left.values() for d in group}
    assert "product_id:p-crm:source:unknown_source" not in seen()
    # re-inserting it is accepted again (the server forgot it)
    again = live.client.post("/documents/text", json={"text": crm, "product_id": "p-crm"})
    assert again.json()["status"] == "success"


@pytest.mark.parametrize("body", [
    {}, {"doc_ids": []}, {"doc_ids": "doc-1"}, {"doc_ids": ["a\x00b"]}, {"doc_ids": [""]},
    {"doc_ids": ["d"] * 1001}, {"doc_ids": ["x" * 600]}, {"doc_ids": [1]},
])
def test_hostile_delete_bodies_are_4xx(live: LiveServer, body: dict[str, Any]) -> None:
    r = live.client.request("DELETE", "/documents/delete_document", json=body)
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    assert len(r.text) < 2000


def test_delete_without_a_document_store_is_503() -> None:
    server = LiveServer(_app(documents=False))
    try:
        r = server.client.request("DELETE", "/documents/delete_document",
                                  json={"doc_ids": ["doc-1"]})
        assert r.status_code == 503 and "document store" in r.text
    finally:
        server.stop()


def test_upload_text_pdf_and_docx_then_query(live: LiveServer) -> None:
    from tests.unit.test_parsers import tiny_docx, tiny_pdf

    files = [
        ("crm.md", b"Acme CRM syncs contacts with Mailchimp. Mailchimp sends the Newsletter.",
         {"product_id": "p-crm"}),
        ("erp.pdf", tiny_pdf(["Acme ERP books Invoices in Xero.", "Xero reports to Finance."]),
         {"product_id": "p-erp", "category": "erp"}),
        ("dir/ledger.docx", tiny_docx(["Ledger Pro imports Invoices from Xero."]), {}),
    ]
    for name, data, form in files:
        r = live.client.post("/documents/upload", files={"file": (name, data)}, data=form)
        assert r.status_code == 200 and r.json()["status"] == "success", r.text
    _wait_idle(live)
    processed = live.client.get("/documents").json()["statuses"]["processed"]
    assert {d["file_path"] for d in processed} == {
        "product_id:p-crm:source:crm.md", "product_id:p-erp:category:erp:source:erp.pdf",
        "ledger.docx"}
    again = live.client.post("/documents/upload", files={"file": ("copy.md", files[0][1])},
                             data={"product_id": "p-crm"})
    assert again.json()["status"] == "duplicated"
    data = live.client.post("/query/data", json={
        "query": "Who books invoices?", "mode": "naive", "scope": {"product_id": "p-erp"},
    }).json()
    assert [c["content"] for c in data["data"]["chunks"]] and all(
        "Acme ERP books Invoices in Xero." in c["content"] for c in data["data"]["chunks"])


@pytest.mark.parametrize(("name", "data", "form", "status"), [
    ("x.exe", b"MZ", {}, 422),
    ("x.txt", b"\xff\xfe\xfa", {}, 422),
    ("x.pdf", b"%PDF-1.4 junk", {}, 422),
    ("x.docx", b"PK junk", {}, 422),
    ("", b"text", {}, 422),
    ("x.txt", b"text", {"product_id": "p\x00"}, 422),
    ("x.txt", b"text", {"product_id": "p" * 600}, 422),
    ("x" * 600 + ".txt", b"text", {}, 422),
])
def test_hostile_uploads_are_4xx(live: LiveServer, name: str, data: bytes,
                                 form: dict[str, str], status: int) -> None:
    r = live.client.post("/documents/upload", files={"file": (name, data)}, data=form)
    assert r.status_code == status, (r.status_code, r.text[:300])
    assert len(r.text) < 2000 and "Traceback" not in r.text
    assert not live.client.get("/documents").json()["statuses"]


def test_upload_size_is_bounded_by_max_upload_bytes() -> None:
    from hexrag.api.limits import ApiLimits, ApiSettings

    server = LiveServer(_app(settings=ApiSettings(limits=ApiLimits(
        max_request_body_bytes=1000, max_upload_bytes=20_000))))
    try:
        ok = server.client.post("/documents/upload",
                                files={"file": ("a.txt", b"Acme CRM. " * 500)})
        assert ok.status_code == 200, ok.text  # over the JSON limit, under the upload one
        big = server.client.post("/documents/upload",
                                 files={"file": ("b.txt", b"Acme CRM. " * 3000)})
        assert big.status_code == 413 and "MAX_UPLOAD_BYTES" in big.text
        text = server.client.post("/documents/text", json={"text": "Acme CRM. " * 200})
        assert text.status_code == 413 and "MAX_REQUEST_BODY_BYTES" in text.text
    finally:
        server.stop()


def test_a_restarted_server_resumes_unfinished_documents() -> None:
    """Server A accepts two documents and dies while the LLM hangs on the first; server B
    on the same stores resumes both at start-up (LightRAG's pipeline picks up pending and
    processing documents)."""
    import asyncio

    class Hanging(ScriptedLLM):
        async def complete(self, prompt: str, **kw: Any) -> str:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    stores = {
        **{ns: MemoryVectorIndex(ns, DIM) for ns in ("entities", "relationships", "chunks")},
        "graph": MemoryGraphStore(), "chunk_store": MemoryChunkStore(),
    }
    documents = MemoryDocumentStore()

    def app(llm: Any) -> Any:
        ingestor = Ingestor(
            **stores, llm=llm, embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(),
            clock=lambda: int(time.time()),
            settings=IngestSettings(chunk_token_size=30, chunk_overlap_token_size=5),
            documents=documents,
        )
        return create_app(compose_engine(stores, embedder=HashingEmbedder(DIM)),
                          ingestor=ingestor, required_stores=())

    first = LiveServer(app(Hanging()), lifespan="on")
    try:
        r = first.client.post("/documents/texts", json={
            "texts": ["Acme CRM syncs contacts with Mailchimp.", "Acme ERP books Invoices."],
            "product_id": "p-1"})
        assert r.json()["status"] == "success"
        deadline = time.monotonic() + 10
        while not first.client.get("/documents").json()["statuses"].get("processing"):
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        first.stop()
    rows = asyncio.run(documents.list_docs())
    assert sorted(r.status for r in rows) == ["pending", "processing"]
    assert not list(stores["chunk_store"].iter_chunks())

    second = LiveServer(app(ScriptedLLM()), lifespan="on")
    try:
        _wait_idle(second)
        statuses = second.client.get("/documents").json()["statuses"]
        assert len(statuses.get("processed", [])) == 2 and set(statuses) == {"processed"}
        data = second.client.post("/query/data", json={
            "query": "Mailchimp", "mode": "naive", "scope": {"product_id": "p-1"}}).json()
        assert any("Mailchimp" in c["content"] for c in data["data"]["chunks"])
    finally:
        second.stop()
    assert all("content" not in r.extra for r in asyncio.run(documents.list_docs()))
