"""``DELETE /documents`` guards on hexrag (LightRAG's clear-all; compared with LightRAG's own
server in :mod:`tests.integration.test_lr_clear_documents`).

* refused with LightRAG's ``busy`` answer while a document is being processed, and nothing
  is touched;
* while the stack is being emptied: inserts are refused with LightRAG's 409, a per-document
  delete and a second clear answer ``busy``, a scan is skipped, and the pipeline status says
  ``busy`` and ``destructive_busy``;
* a section that cannot be emptied makes it ``partial_success``; the others are emptied.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
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
TEXT = "Acme CRM syncs contacts with Mailchimp. Mailchimp sends the Newsletter."
BUSY = {"status": "busy", "message": "Pipeline is busy with another operation."}
REFUSED = ("Pipeline is clearing or deleting documents. Wait for the running job to finish "
           "before submitting new work.")


class GatedLLM:
    """The scripted knowledge-graph LLM, held at ``gate`` while ``hold`` is set."""

    model_name = "scripted"

    def __init__(self) -> None:
        self.hold = False
        self.gate = threading.Event()
        self.waiting = threading.Event()

    async def complete(self, prompt: str, *, system_prompt: str | None = None,
                       history: Sequence[Mapping[str, Any]] = (), json_mode: bool = False) -> str:
        import asyncio

        if self.hold:
            self.waiting.set()
            await asyncio.to_thread(self.gate.wait, 30)
        return kg_reply(prompt, system_prompt, history)

    async def stream(self, prompt: str, **_: Any) -> Any:  # pragma: no cover - unused
        yield await self.complete(prompt)


class GatedChunks(MemoryChunkStore):
    """A memory chunk store whose scan waits at ``gate`` while ``hold`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = False
        self.gate = threading.Event()
        self.waiting = threading.Event()

    async def scan_chunks(self, cursor: str | None = None, *, limit: int = 1000) -> Any:
        import asyncio

        if self.hold:
            self.waiting.set()
            await asyncio.to_thread(self.gate.wait, 30)
        return await super().scan_chunks(cursor, limit=limit)


class Unlisted:
    """A vector index that cannot list its records (no ``scan_records``)."""

    def __init__(self, inner: MemoryVectorIndex) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "scan_records":
            raise AttributeError(name)
        return getattr(self._inner, name)


def _server(llm: GatedLLM, chunks: MemoryChunkStore, *, unlisted: bool = False
            ) -> tuple[LiveServer, dict[str, Any]]:
    stores: dict[str, Any] = {
        **{ns: MemoryVectorIndex(ns, DIM) for ns in ("entities", "relationships", "chunks")},
        "graph": MemoryGraphStore(), "chunk_store": chunks,
    }
    if unlisted:
        stores["relationships"] = Unlisted(stores["relationships"])
    engine = compose_engine(stores, embedder=HashingEmbedder(DIM))
    ingestor = Ingestor(**stores, llm=llm, embedder=HashingEmbedder(DIM),
                        tokenizer=default_tokenizer(), clock=lambda: int(time.time()),
                        settings=IngestSettings(chunk_token_size=30, chunk_overlap_token_size=5),
                        documents=MemoryDocumentStore())
    return LiveServer(create_app(engine, ingestor=ingestor, required_stores=())), stores


def _wait(live: LiveServer, pred: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status: dict[str, Any] = live.client.get("/documents/pipeline_status").json()
        if pred(status):
            return status
        time.sleep(0.05)
    raise AssertionError("the pipeline never reached the expected state")


def _ingest(live: LiveServer) -> None:
    r = live.client.post("/documents/text", json={"text": TEXT, "file_source": "crm.md"})
    assert r.status_code == 200, r.text
    _wait(live, lambda s: not s["busy"] and not s["docs"])
    assert live.client.get("/documents/status_counts").json()["status_counts"]["processed"] == 1


@pytest.fixture(autouse=True)
def _inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "inputs"
    root.mkdir()
    (root / "waiting.txt").write_text("a file")
    monkeypatch.setenv("INPUT_DIR", str(root))
    return root


def test_refused_while_a_document_is_processed(_inputs: Path) -> None:
    llm = GatedLLM()
    live, _ = _server(llm, MemoryChunkStore())
    try:
        _ingest(live)
        llm.hold = True
        r = live.client.post("/documents/text", json={"text": "Globex sells Widgets in Paris.",
                                                      "file_source": "globex.md"})
        assert r.status_code == 200
        assert llm.waiting.wait(30)
        r = live.client.delete("/documents")
        assert (r.status_code, r.json()) == (200, BUSY)
        assert live.client.get("/graph/label/list").json()  # nothing touched
        assert (_inputs / "waiting.txt").exists()
        llm.gate.set()
        _wait(live, lambda s: not s["busy"] and not s["docs"])
        counts = live.client.get("/documents/status_counts").json()["status_counts"]
        assert counts["processed"] == counts["all"] == 2
        r = live.client.delete("/documents")
        assert r.json() == {"status": "success",
                            "message": "All documents cleared successfully. Deleted 1 files."}
        assert live.client.get("/graph/label/list").json() == []
        counts = live.client.get("/documents/status_counts").json()["status_counts"]
        assert not any(counts.values()), counts
        assert not (_inputs / "waiting.txt").exists()
    finally:
        live.stop()


def test_new_work_is_refused_while_clearing() -> None:
    chunks = GatedChunks()
    live, stores = _server(GatedLLM(), chunks)
    try:
        _ingest(live)
        chunks.hold = True
        answer: dict[str, Any] = {}
        clearing = threading.Thread(target=lambda: answer.update(
            r=live.client.delete("/documents")))
        clearing.start()
        assert chunks.waiting.wait(30)
        status = _wait(live, lambda s: s["destructive_busy"])
        assert status["busy"] is True
        r = live.client.post("/documents/text", json={"text": "Globex sells Widgets."})
        assert (r.status_code, r.json()) == (409, {"detail": REFUSED})
        r = live.client.request("DELETE", "/documents/delete_document",
                                json={"doc_ids": ["doc-x"]})
        assert r.json()["status"] == "busy"
        assert live.client.delete("/documents").json() == BUSY
        assert live.client.post("/documents/scan").json()["status"] == (
            "scanning_skipped_pipeline_busy")
        chunks.gate.set()
        clearing.join(30)
        assert answer["r"].json()["status"] == "success"
        status = live.client.get("/documents/pipeline_status").json()
        assert (status["busy"], status["destructive_busy"]) == (False, False)
        assert status["latest_message"] == "Document clearing process completed"
        assert "Starting document clearing process" in " ".join(status["history_messages"])
        for ns in ("entities", "relationships", "chunks"):
            assert live_count(stores[ns]) == 0, ns
        # and the pipeline takes documents again
        _ingest(live)
    finally:
        chunks.gate.set()
        live.stop()


def live_count(index: MemoryVectorIndex) -> int:
    """Records held by a memory vector index."""
    import asyncio

    return asyncio.run(index.count())


def test_a_section_that_cannot_be_emptied_is_partial_success() -> None:
    live, stores = _server(GatedLLM(), MemoryChunkStore(), unlisted=True)
    try:
        _ingest(live)
        r = live.client.delete("/documents")
        assert (r.status_code, r.json()) == (200, {
            "status": "partial_success",
            "message": "Cleared documents with some errors. Deleted 1 files."})
        assert live.client.get("/graph/label/list").json() == []
        assert live_count(stores["entities"]) == 0
        assert live_count(stores["relationships"]._inner) > 0  # the one left
        history = live.client.get("/documents/pipeline_status").json()["history_messages"]
        assert any("with 1 errors" in m for m in history), history
    finally:
        live.stop()
