"""LightRAG 1.5.7's document-manager routes: hexrag answers as LightRAG's own server does.

LightRAG's server (its ``create_document_routes`` over a working directory with
``doc_status`` rows of every state, its own process) and hexrag's server on the same data -
a copy of the working directory, a memory stack and a PostgreSQL stack filled from it - get
the same requests: ``/documents/paginated`` (filters, each sort field and direction, pages,
refused bodies), ``/documents/status_counts``, ``/documents/track_status/{track_id}``,
``/documents/source_conflicts`` (pages, cursor) and its repair (dry run, refusals, commit),
``/documents/cancel_pipeline`` and ``/documents/recovery/force_reset`` when idle,
``/documents/clear_cache``, an unknown scan job. Status codes and bodies must be equal;
``/documents/pipeline_status`` must carry every LightRAG field with LightRAG's idle values,
``/documents/supported_file_types`` LightRAG's shape.

hexrag-only, on a memory stack with an extraction LLM: an inserted text's ``track_id`` is
found by ``/documents/track_status``; ``/documents/scan`` queues the input directory's new
files and its job is reported done; ``/documents/cancel_pipeline`` fails the queued
documents; ``/documents/reprocess_failed`` processes a failed one again; ``GET /documents``
lists a working directory's statuses.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.api.limits import ApiSettings
from hexrag.bootstrap import build_stack
from hexrag.config import StackConfig
from hexrag.core.ingest.ingestion import IngestSettings
from hexrag.devtools.scripted_kg import ScriptedKGLLM
from hexrag.serving import stack_app
from tests.integration.live import LiveServer
from tests.integration.lr_routes_world import (
    DIM,
    WS,
    HexragServer,
    LightRAGServer,
    copy_base,
    make_base,
    validation_view,
)
from tests.services.postgres import pg_dsn  # noqa: F401

pytestmark = pytest.mark.parity

if not all(importlib.util.find_spec(m) for m in ("lightrag", "jwt", "aiofiles")):
    # (not imported here: LightRAG's api package parses the command line at import)
    if "1" in (os.environ.get("HEXRAG_REQUIRE_BACKENDS"), os.environ.get("HEXRAG_REQUIRE_PARITY")):
        raise ImportError("lightrag-hku[api] 1.5.7 is required")
    pytest.skip("needs lightrag-hku[api] 1.5.7 (its server routes)", allow_module_level=True)

SHARED = "shared-source.txt"
Step = tuple[str, str, Any]


def _steps() -> list[Step]:
    paged: list[Step] = [("POST", "/documents/paginated", body) for body in (
        {},
        {"page_size": 10},
        {"page_size": 10, "page": 2},
        {"page_size": 10, "page": 99},
        {"status_filters": ["processed", "failed"], "sort_field": "created_at",
         "sort_direction": "asc", "page_size": 10},
        {"status_filter": "pending", "sort_field": "id", "sort_direction": "asc"},
        {"status_filter": "pending", "status_filters": ["failed"]},
        {"status_filters": [], "sort_field": "file_path", "sort_direction": "asc"},
        {"sort_field": "file_path", "page_size": 10, "page": 2},
        {"sort_field": "id", "sort_direction": "desc", "page_size": 200},
        {"page_size": 5},
        {"page_size": 201},
        {"page": 0},
        {"sort_field": "content_length"},
        {"status_filters": ["done"]},
    )]
    return [
        ("GET", "/documents/status_counts", None),
        *paged,
        ("GET", "/documents/track_status/insert_20250101_000000_00000000", None),
        ("GET", "/documents/track_status/insert_20250101_000000_00000002", None),
        ("GET", "/documents/track_status/no-such-track", None),
        ("GET", "/documents/track_status/%20", None),
        ("GET", "/documents/source_conflicts", None),
        ("GET", "/documents/source_conflicts?limit=1", None),
        ("GET", "/documents/source_conflicts?limit=0", None),
        ("GET", "/documents/source_conflicts?cursor=!!notbase64", None),
        ("GET", "/documents/scan/status/scan_20250101_000000_deadbeef", None),
        ("POST", "/documents/cancel_pipeline", {}),
        ("POST", "/documents/recovery/force_reset", {}),
        ("POST", "/documents/recovery/force_reset", {"confirm": True}),
        ("POST", "/documents/clear_cache", {}),
        ("POST", "/documents/source_conflicts/repair", {
            "canonical_source_key": SHARED, "primary_doc_id": "doc-none"}),
        ("POST", "/documents/source_conflicts/repair", {
            "canonical_source_key": SHARED, "primary_doc_id": "x", "dry_run": False}),
    ]


def _answer(client: Any, step: Step) -> tuple[int, Any]:
    method, path, body = step
    r = client.request(method, path, **({} if body is None else {"json": body}))
    data = r.json()
    return r.status_code, validation_view(data) if r.status_code == 422 else data


class World:
    """The base directory (three documents share one source name) and LightRAG's answers."""

    def __init__(self, tmp: Path) -> None:
        import json

        self.base = make_base(tmp / "base", n_entities=40, extra_docs=40)
        status = self.base / WS / "kv_store_doc_status.json"
        rows = json.loads(status.read_text())
        self.shared = sorted(rows)[3:6]
        for doc_id in self.shared:
            rows[doc_id]["file_path"] = SHARED
        status.write_text(json.dumps(rows, ensure_ascii=False))
        assert len(rows) > 25, len(rows)
        lr = LightRAGServer(copy_base(self.base, tmp / "lr"), tmp / "inputs", tmp / "lr.log")
        try:
            self.steps = _steps()
            self.answers = [_answer(lr.client, s) for s in self.steps]
            first = lr.client.get("/documents/source_conflicts?limit=1").json()
            self._add(lr, ("GET", "/documents/source_conflicts?limit=1&cursor="
                           + first["next_cursor"], None))
            token = self._add(lr, ("POST", "/documents/source_conflicts/repair", {
                "canonical_source_key": SHARED, "primary_doc_id": self.shared[1]}))
            for count in (2, token["candidate_count"]):  # a stale token, then the right one
                self._add(lr, ("POST", "/documents/source_conflicts/repair", {
                    "canonical_source_key": SHARED, "primary_doc_id": self.shared[1],
                    "dry_run": False, "expected_candidate_count": count,
                    "expected_candidate_fingerprint": token["fingerprint"]}))
            self._add(lr, ("GET", "/documents/source_conflicts", None))
            self._add(lr, ("POST", "/documents/paginated", {"sort_field": "id",
                                                            "page_size": 200}))
            self.pipeline = lr.client.get("/documents/pipeline_status").json()
            self.types = lr.client.get("/documents/supported_file_types").json()
            # last (they start LightRAG's pipeline, whose LLM refuses): the busy-free answers
            self.scan = lr.client.post("/documents/scan").json()
            deadline = time.monotonic() + 30
            while True:
                job = lr.client.get(f"/documents/scan/status/{self.scan['track_id']}")
                if job.status_code == 200 and job.json()["status"] != "running":
                    break
                assert time.monotonic() < deadline, job.text
                time.sleep(0.1)
            self.scan_job = job.json()
            self.reprocess = lr.client.post("/documents/reprocess_failed").json()
        finally:
            lr.stop()


    def _add(self, lr: LightRAGServer, step: Step) -> Any:
        self.steps.append(step)
        self.answers.append(_answer(lr.client, step))
        return self.answers[-1][1]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("lr-docs"))


def _compare(world: World, hx: HexragServer) -> None:
    for step, expected in zip(world.steps, world.answers, strict=True):
        got = _answer(hx.client, step)
        assert got == expected, (hx.kind, step, got, expected)
    pipeline = hx.client.get("/documents/pipeline_status").json()
    assert set(world.pipeline) <= set(pipeline), set(world.pipeline) - set(pipeline)
    for key in ("busy", "job_name", "job_start", "docs", "batchs", "cur_batch",
                "latest_message", "history_messages", "recovery_required", "recovery_kind",
                "recovery_message", "destructive_busy", "scanning", "scanning_exclusive",
                "pending_enqueues"):
        assert pipeline[key] == world.pipeline[key], key
    assert isinstance(pipeline["update_status"], dict)
    types = hx.client.get("/documents/supported_file_types").json()
    assert set(types) == set(world.types)
    assert set(types["supported_extensions"]) >= {".txt", ".md", ".pdf", ".docx"}
    assert types["supported_extensions"] == sorted(types["supported_extensions"])
    assert all(s.startswith(".") and s == s.lower() for s in types["supported_extensions"])


def test_lightrag_answers_cover_the_routes(world: World) -> None:
    """The reference itself: pages, filters and refusals are all exercised."""
    codes = [code for code, _ in world.answers]
    assert {200, 400, 404, 409, 422} <= set(codes), codes
    assert any(a[1].get("documents") and a[1]["pagination"]["has_next"]
               for a in world.answers if isinstance(a[1], dict) and "pagination" in a[1])
    assert world.answers[-1][0] == 200


@pytest.fixture
def served(request: pytest.FixtureRequest, world: World, tmp_path: Path) -> Iterator[HexragServer]:
    kind = request.param
    dsn = request.getfixturevalue("pg_dsn") if kind == "postgres" else None
    hx = HexragServer(kind, world.base, tmp_path, dsn)
    try:
        yield hx
    finally:
        hx.stop()


@pytest.mark.parametrize("served", ["workdir", "memory"], indirect=True)
def test_document_routes_equal_lightrag(served: HexragServer, world: World) -> None:
    _compare(world, served)


@pytest.mark.backend("postgres")
@pytest.mark.parametrize("served", ["postgres"], indirect=True)
def test_document_routes_equal_lightrag_on_postgres(served: HexragServer,
                                                    world: World) -> None:
    _compare(world, served)


def test_working_directory_lists_its_statuses(world: World, tmp_path: Path) -> None:
    hx = HexragServer("workdir", world.base, tmp_path)
    try:
        statuses = hx.client.get("/documents").json()["statuses"]
        counts = hx.client.get("/documents/status_counts").json()["status_counts"]
        assert {k: len(v) for k, v in statuses.items()} == {
            k: v for k, v in counts.items() if v and k != "all"}
        assert sum(map(len, statuses.values())) == counts["all"] > 25
        # ingestion needs a server-backed stack: refused with 503, as documented
        assert hx.client.post("/documents/scan").status_code == 503
        assert hx.client.post("/documents/reprocess_failed").status_code == 503
    finally:
        hx.stop()


# ---------------------------------------------------------------------------- hexrag only


class GatedLLM(ScriptedKGLLM):
    """The scripted extraction LLM, held while ``gate`` is closed; fails any prompt naming
    ``FAILME`` while ``failing`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.failing = True

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        while not self.gate.is_set():
            await asyncio.sleep(0.01)
        if self.failing and "FAILME" in prompt:
            raise ValueError("scripted failure")
        return await super().complete(prompt, **kwargs)


class LLMServed:
    """A memory stack with :class:`GatedLLM`, served over HTTP."""

    def __init__(self) -> None:
        self.llm = GatedLLM()
        self.loop = asyncio.new_event_loop()
        self.stack = self.loop.run_until_complete(build_stack(
            StackConfig(embedder=f"hashing:{DIM}"), embedder=HashingEmbedder(DIM), llm=self.llm))
        self.server = LiveServer(stack_app(self.stack, ApiSettings()), lifespan="on")
        self.http = self.server.client

    def wait(self, doc_ids: list[str], states: set[str]) -> dict[str, str]:
        deadline = time.monotonic() + 60
        while True:
            rows = self.http.post("/documents/paginated", json={"page_size": 200}).json()
            found = {d["id"]: d["status"] for d in rows["documents"] if d["id"] in doc_ids}
            if len(found) == len(doc_ids) and set(found.values()) <= states:
                return found
            assert time.monotonic() < deadline, found
            time.sleep(0.05)

    def close(self) -> None:
        self.server.stop()
        self.loop.run_until_complete(self.stack.aclose())
        self.loop.close()


@pytest.fixture
def llm_served() -> Iterator[LLMServed]:
    served = LLMServed()
    try:
        yield served
    finally:
        served.close()


def _settings_ok() -> None:
    IngestSettings()  # the defaults ingest these short texts


def test_inserted_text_is_found_by_its_track_id(llm_served: LLMServed) -> None:
    http = llm_served.http
    r = http.post("/documents/texts", json={"texts": ["Acme Corp builds Acme CRM.",
                                                      "Mailchimp sends the Newsletter."],
                                            "file_sources": ["a.txt", "b.txt"]})
    assert r.status_code == 200, r.text
    tid = r.json()["track_id"]
    assert tid.startswith("insert_") and len(tid.split("_")) == 4
    track = http.get(f"/documents/track_status/{tid}").json()
    assert track["track_id"] == tid and track["total_count"] == 2
    ids = [d["id"] for d in track["documents"]]
    assert all(d["track_id"] == tid for d in track["documents"])
    llm_served.wait(ids, {"processed"})
    track = http.get(f"/documents/track_status/{tid}").json()
    assert track["status_summary"] == {"processed": 2}
    assert {d["file_path"] for d in track["documents"]} == {"a.txt", "b.txt"}
    counts = http.get("/documents/status_counts").json()["status_counts"]
    assert counts["processed"] == 2 and counts["all"] == 2
    # an upload's track_id too
    r = http.post("/documents/upload", files={"file": ("c.md", b"# Xero\nXero bills Finance.")})
    assert r.status_code == 200, r.text
    up = r.json()["track_id"]
    assert up.startswith("upload_")
    (doc,) = http.get(f"/documents/track_status/{up}").json()["documents"]
    assert doc["file_path"] == "c.md" and doc["track_id"] == up
    llm_served.wait([doc["id"]], {"processed"})
    assert http.get(f"/documents/track_status/{up}").json()["status_summary"] == {
        "processed": 1}


def test_scan_queues_new_files_of_the_input_directory(
        llm_served: LLMServed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        world: World) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "one.txt").write_text("Ledger Pro imports Invoices from Xero.")
    (inputs / "two.md").write_text("# Slack\nSlack notifies Sales.")
    (inputs / "skip.bin").write_bytes(b"\x00\x01")
    monkeypatch.setenv("INPUT_DIR", str(inputs))
    http = llm_served.http
    r = http.post("/documents/scan")
    assert r.status_code == 200, r.text
    scan = r.json()
    assert scan["status"] == "scanning_started" and scan["track_id"].startswith("scan_")
    assert scan.keys() == world.scan.keys() and scan["message"] == world.scan["message"]
    job = http.get(f"/documents/scan/status/{scan['track_id']}").json()
    assert job["status"] == "completed" and job["counts"]["queued"] == 2, job
    assert job.keys() == world.scan_job.keys() and job["status"] == world.scan_job["status"]
    track = http.get(f"/documents/track_status/{scan['track_id']}").json()
    assert sorted(d["file_path"] for d in track["documents"]) == ["one.txt", "two.md"]
    llm_served.wait([d["id"] for d in track["documents"]], {"processed"})
    again = http.post("/documents/scan").json()  # nothing new: nothing queued
    job = http.get(f"/documents/scan/status/{again['track_id']}").json()
    assert job["counts"]["queued"] == 0 and job["counts"]["discovered"] == 0


def test_cancel_pipeline_fails_the_queued_documents(llm_served: LLMServed) -> None:
    http = llm_served.http
    llm_served.llm.gate.clear()
    r = http.post("/documents/texts", json={"texts": [f"Doc {i}: Acme Corp hires {i}."
                                                      for i in range(3)]})
    tid = r.json()["track_id"]
    deadline = time.monotonic() + 30
    while not http.get("/documents/pipeline_status").json()["busy"]:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # a graph edit while the pipeline works is refused, as LightRAG does
    r = http.post("/graph/entity/create", json={"entity_name": "Busy Co",
                                                "entity_data": {"description": "x"}})
    assert r.status_code == 409 and r.json() == {"detail": (
        "Pipeline is busy with another operation. Wait for the running job to finish "
        "before editing the knowledge graph.")}
    r = http.post("/documents/cancel_pipeline")
    assert r.json() == {"status": "cancellation_requested", "message": (
        "Pipeline cancellation has been requested. Documents will be marked as FAILED.")}
    llm_served.llm.gate.set()
    ids = [d["id"] for d in http.get(f"/documents/track_status/{tid}").json()["documents"]]
    states = llm_served.wait(ids, {"processed", "failed"})
    assert sorted(states.values()) == ["failed", "failed", "processed"], states
    rows = llm_served.loop.run_until_complete(llm_served.stack.stores.documents.get_docs(ids))
    assert sorted(r.status for r in rows) == ["failed", "failed", "processed"]  # stored too
    assert {r.error_msg for r in rows if r.status == "failed"} == {"User cancelled"}
    assert http.post("/documents/cancel_pipeline").json()["status"] == "not_busy"


def test_reprocess_failed_processes_a_failed_document_again(llm_served: LLMServed,
                                                            world: World) -> None:
    http = llm_served.http
    r = http.post("/documents/text", json={"text": "FAILME Xero bills Finance monthly."})
    tid = r.json()["track_id"]
    (doc,) = http.get(f"/documents/track_status/{tid}").json()["documents"]
    assert llm_served.wait([doc["id"]], {"failed"}) == {doc["id"]: "failed"}
    llm_served.llm.failing = False
    r = http.post("/documents/reprocess_failed")
    assert r.status_code == 200 and r.json() == world.reprocess
    assert llm_served.wait([doc["id"]], {"processed"}) == {doc["id"]: "processed"}
    (again,) = http.get(f"/documents/track_status/{tid}").json()["documents"]
    assert again["track_id"] == tid  # keeps its original track_id


def test_working_directory_with_an_llm_takes_texts(world: World, tmp_path: Path) -> None:
    """A working directory served with an LLM takes ``/documents/text`` (LightRAG's server
    does): the document is processed, findable by its ``track_id`` and written back."""
    import json

    root = copy_base(world.base, tmp_path / "wd")
    loop = asyncio.new_event_loop()
    stack = loop.run_until_complete(build_stack(
        StackConfig(workdir=root, workspace=WS, embedder=f"hashing:{DIM}"),
        embedder=HashingEmbedder(DIM), llm=ScriptedKGLLM()))
    server = LiveServer(stack_app(stack, ApiSettings()), lifespan="on")
    try:
        http = server.client
        before = http.get("/documents/status_counts").json()["status_counts"]["all"]
        r = http.post("/documents/text", json={"text": "Zephyr Vault guards Orion.",
                                               "file_source": "zephyr.txt"})
        assert r.status_code == 200, r.text
        tid = r.json()["track_id"]
        deadline = time.monotonic() + 60
        while True:
            track = http.get(f"/documents/track_status/{tid}").json()
            if track["status_summary"] == {"processed": 1}:
                break
            assert time.monotonic() < deadline, track
            time.sleep(0.05)
        assert http.get("/documents/status_counts").json()["status_counts"]["all"] == \
            before + 1
        assert http.get("/graph/entity/exists?name=Zephyr").json() == {"exists": True}
    finally:
        server.stop()
        loop.run_until_complete(stack.aclose())
        loop.close()
    rows = json.loads((root / WS / "kv_store_doc_status.json").read_text())
    (doc_id,) = [k for k, v in rows.items() if v.get("file_path") == "zephyr.txt"]
    assert rows[doc_id]["status"] == "processed" and rows[doc_id]["track_id"] == tid
    assert ">Zephyr<" in (root / WS / "graph_chunk_entity_relation.graphml").read_text()


def test_graph_edits_survive_a_document_deletion(llm_served: LLMServed) -> None:
    """Fragments follow the graph edits: after an entity is deleted and another renamed over
    HTTP, deleting a document that mentioned both rebuilds neither the deleted entity nor the
    old name (the rebuild reads the remaining fragments)."""
    http = llm_served.http
    r = http.post("/documents/texts", json={"texts": ["Zephyr guards Orion. Quasar watches Helix.",
                                                      "Zephyr meets Quasar."],
                                            "file_sources": ["a.txt", "b.txt"]})
    tid = r.json()["track_id"]
    docs = {d["file_path"]: d["id"]
            for d in http.get(f"/documents/track_status/{tid}").json()["documents"]}
    llm_served.wait(list(docs.values()), {"processed"})
    r = http.request("DELETE", "/graph/entity/delete", json={"entity_name": "Zephyr"})
    assert r.status_code == 200, r.text
    r = http.post("/graph/entity/edit", json={"entity_name": "Quasar", "allow_rename": True,
                                              "updated_data": {"entity_name": "Quasar Prime"}})
    assert r.status_code == 200, r.text
    r = http.request("DELETE", "/documents/delete_document", json={"doc_ids": [docs["b.txt"]]})
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 60
    while docs["b.txt"] in http.get("/documents").text:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    while http.get("/documents/pipeline_status").json()["busy"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)

    def exists(name: str) -> bool:
        return bool(http.get("/graph/entity/exists", params={"name": name}).json()["exists"])

    assert not exists("Zephyr") and not exists("Quasar")
    assert exists("Quasar Prime") and exists("Orion") and exists("Helix")
