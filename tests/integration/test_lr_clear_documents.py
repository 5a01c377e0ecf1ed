"""``DELETE /documents`` (LightRAG's clear-all) against LightRAG 1.5.7's own server.

LightRAG's whole server ingests two documents with the offline stand-in model; a copy of its
working directory is served by LightRAG's server again and another by ``hexrag serve``, each
with an input directory holding two files and a subdirectory. Both are cleared: the same
answer (status and message, counting the files deleted), the same files left (the
subdirectory's), no label, no document, no retrieved context, the same stored files (every
record store empty, the LLM cache's extractions kept; LightRAG's server reads hexrag's
cleared directory as empty), the same pipeline status; then both take a
document again and draw the same labels. The busy refusal and the guard against new work
while the stack is emptied are in :mod:`tests.integration.test_lr_clear_documents_guards`.
"""

from __future__ import annotations

import json
import shutil
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.lr_ops_servers import HexragServe, LightRAGFull, standin_model

pytest.importorskip("lightrag")
pytest.importorskip("jwt")  # LightRAG's server needs PyJWT (the parity extra)

DOCS = {
    "acme.txt": "Alice Smith works at Acme Corporation in Berlin. Acme Corporation builds "
                "Rockets for Mars missions.",
    "globex.txt": "Globex Industries sells Widgets in Paris. Carol White leads Globex "
                  "Industries.",
}
AGAIN = "Initech makes Staplers in Austin. Dave Brown founded Initech."


def _inputs(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_text("a file waiting in the input directory")
    (root / "b.md").write_text("# another one")
    (root / "kept").mkdir(exist_ok=True)
    (root / "kept" / "c.txt").write_text("in a subdirectory: kept")
    return root


def _left(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _stored(workdir: Path) -> dict[str, Any]:
    """What the working directory holds, per file: key-value files' keys (the LLM cache's
    extraction entries only), vector files' row count, the graph's node and edge counts.
    A missing graph or vector file counts as empty (LightRAG's drop removes them, hexrag's
    writes them empty: each server reads either as empty); hexrag's own fragments file is
    left out."""
    out: dict[str, Any] = {"graph_chunk_entity_relation.graphml": (0, 0),
                           **{f"vdb_{ns}.json": 0
                              for ns in ("chunks", "entities", "relationships")}}
    for path in sorted(workdir.iterdir()):
        if path.name == "kv_store_hexrag_fragments.json":
            assert json.loads(path.read_text()) == {}
        elif path.name == "kv_store_llm_response_cache.json":
            out[path.name] = sorted(k for k in json.loads(path.read_text()) if ":extract:" in k)
        elif path.name.startswith("kv_store_") and path.suffix == ".json":
            out[path.name] = sorted(json.loads(path.read_text()))
        elif path.name.startswith("vdb_") and path.suffix == ".json":
            out[path.name] = len(json.loads(path.read_text()).get("data", []))
        elif path.suffix == ".graphml":
            root = ET.parse(path).getroot()
            out[path.name] = (len(root.findall(".//{*}node")), len(root.findall(".//{*}edge")))
    return out


def _wait_processed(client: httpx.Client, n: int) -> None:
    deadline = time.monotonic() + 120
    while True:
        counts = client.get("/documents/status_counts").json()["status_counts"]
        busy = client.get("/documents/pipeline_status").json()["busy"]
        if counts.get("processed") == n and not busy:
            return
        assert not counts.get("failed") and time.monotonic() < deadline, counts
        time.sleep(0.3)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("lr-clear")
    model = standin_model()
    try:
        ingesting = LightRAGFull(tmp / "rag", model, tmp / "lightrag-ingest.log")
        try:
            ingesting.ingest(DOCS)
        finally:
            ingesting.stop()
        shutil.copytree(tmp / "rag", tmp / "lr")
        lr_inputs = _inputs(tmp / "lr-inputs")  # LightRAGFull's INPUT_DIR
        lr = LightRAGFull(tmp / "lr", model, tmp / "lightrag.log")
        try:
            hx_inputs = _inputs(tmp / "hx-inputs")
            hx = HexragServe(tmp / "rag", tmp / "hx", model, tmp / "hexrag.log",
                             env={"INPUT_DIR": str(hx_inputs)})
            try:
                yield {"lr": lr, "hx": hx, "lr_inputs": lr_inputs, "hx_inputs": hx_inputs,
                       "lr_dir": tmp / "lr", "hx_dir": tmp / "hx", "model": model}
            finally:
                hx.stop()
        finally:
            lr.stop()
    finally:
        model.stop()


def test_clear_documents_as_lightrag(pair: dict[str, Any]) -> None:
    lr: LightRAGFull = pair["lr"]
    hx: HexragServe = pair["hx"]
    before = {name: s.client.get("/graph/label/list").json() for name, s in (("lr", lr),
                                                                              ("hx", hx))}
    assert before["lr"] and before["hx"] == before["lr"]
    lr_cache = _stored(pair["lr_dir"])["kv_store_llm_response_cache.json"]
    assert lr_cache

    answers = [s.client.delete("/documents") for s in (lr, hx)]
    assert [(r.status_code, r.json()) for r in answers] == [
        (200, {"status": "success",
               "message": "All documents cleared successfully. Deleted 2 files."})] * 2
    assert _left(pair["lr_inputs"]) == _left(pair["hx_inputs"]) == ["kept/c.txt"]

    for path in ("/graph/label/list", "/documents/status_counts"):
        lr_r, hx_r = (s.client.get(path) for s in (lr, hx))
        assert hx_r.status_code == lr_r.status_code == 200
        assert hx_r.json() == lr_r.json(), path
    assert hx.client.get("/graph/label/list").json() == []
    page = {"page": 1, "page_size": 10}
    lr_r, hx_r = (s.client.post("/documents/paginated", json=page) for s in (lr, hx))
    assert hx_r.json()["documents"] == lr_r.json()["documents"] == []
    assert hx_r.json()["status_counts"] == lr_r.json()["status_counts"]
    q = {"query": "Who works at Acme Corporation?", "mode": "mix"}
    lr_q, hx_q = (s.client.post("/query/data", json=q) for s in (lr, hx))
    hx_body = hx_q.json()
    hx_body["metadata"].pop("processing_info")  # hexrag's own field
    assert (hx_q.status_code, hx_body) == (lr_q.status_code, lr_q.json())
    assert not any(hx_q.json()["data"].get(k) for k in ("entities", "relationships", "chunks"))
    lr_p, hx_p = (s.client.get("/documents/pipeline_status").json() for s in (lr, hx))
    for key in ("busy", "destructive_busy", "scanning", "latest_message"):
        assert hx_p[key] == lr_p[key], key
    assert hx_p["latest_message"] == "Document clearing process completed"

    # on disk: every record store empty, the LLM cache kept (LightRAG does not drop it)
    lr_files, hx_files = _stored(pair["lr_dir"]), _stored(pair["hx_dir"])
    assert hx_files == lr_files
    assert lr_files["kv_store_llm_response_cache.json"] == lr_cache
    assert all(v in ([], 0, (0, 0)) for k, v in lr_files.items() if "llm_response" not in k)
    # LightRAG's server reads hexrag's cleared directory as it reads its own
    shutil.copytree(pair["hx_dir"], pair["hx_dir"].parent / "hx-read")
    reader = LightRAGFull(pair["hx_dir"].parent / "hx-read", pair["model"],
                          pair["hx_dir"].parent / "lightrag-read.log")
    try:
        for path in ("/graph/label/list", "/documents/status_counts"):
            assert reader.client.get(path).json() == lr.client.get(path).json(), path
    finally:
        reader.stop()


def test_documents_after_a_clear(pair: dict[str, Any]) -> None:
    lr: LightRAGFull = pair["lr"]
    hx: HexragServe = pair["hx"]
    body = {"text": AGAIN, "file_source": "initech.txt"}
    for s in (lr, hx):
        r = s.client.delete("/documents")
        assert r.json()["status"] == "success", r.text
        assert s.client.post("/documents/text", json=body).status_code == 200
        _wait_processed(s.client, 1)
    labels = [s.client.get("/graph/label/list").json() for s in (lr, hx)]
    assert labels[0] and labels[1] == labels[0]
    assert "Initech" in labels[1] and "Acme Corporation" not in labels[1]
