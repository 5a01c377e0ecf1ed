"""``hexrag ingest`` through the real command line, with an OpenAI-compatible server (the
scripted one, answering extraction, gleaning and summary prompts deterministically): a new
working directory is written that LightRAG's format reader loads, product metadata reaches
every record's file_path, and a scoped query sees only its product's chunks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hexrag.devtools.scripted_kg import chat_responder
from hexrag.devtools.scripted_openai import ScriptedOpenAIServer

CRM = ("Acme CRM syncs contacts with Mailchimp every night. Mailchimp sends the Newsletter. "
       "Acme CRM exports Invoices to Xero for Finance teams.")
ERP = "Acme ERP books Invoices in Xero. Xero reports to Finance. Acme ERP plans Inventory."


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as s:
        s.set_chat_responder(chat_responder)
        yield s


def _cli(server: ScriptedOpenAIServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
    return subprocess.run([sys.executable, "-m", "hexrag.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_ingest_writes_a_scoped_working_directory(server: ScriptedOpenAIServer,
                                                  tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "crm").mkdir(parents=True)
    (docs / "erp").mkdir(parents=True)
    (docs / "crm" / "crm.md").write_text(CRM, encoding="utf-8")
    (docs / "erp" / "erp.txt").write_text(ERP, encoding="utf-8")
    rag = tmp_path / "rag"
    for folder, pid in (("crm", "p-crm"), ("erp", "p-erp")):
        done = _cli(server, "ingest", str(docs / folder), "--stack", str(rag),
                    "--llm", "openai:scripted", "--embedder", "hashing:64",
                    "--product-id", pid, "--category", folder,
                    "--chunk-size", "20", "--chunk-overlap", "4")
        assert done.returncode == 0, done.stderr[-3000:]
        totals = json.loads(done.stdout.split(": ", 1)[1])
        assert totals["documents"] == 1 and totals["chunks"] >= 2 and totals["entities"] >= 4
        assert totals["llm_calls"] >= 2 * totals["chunks"]  # extraction + gleaning per chunk
    assert server.count("chat") > 0

    from hexrag.adapters.workdir import load_workdir

    wd = load_workdir(rag)
    chunks = list(wd.chunk_store.iter_chunks())
    assert {c.file_path for c in chunks} == {"product_id:p-crm:category:crm:source:crm.md",
                                             "product_id:p-erp:category:erp:source:erp.txt"}
    xero = next(e for e in wd.graph.iter_nodes() if e.name == "Xero")
    assert "p-crm" in (xero.file_path or "") and "p-erp" in (xero.file_path or "")

    scoped = subprocess.run(
        [sys.executable, "-m", "hexrag.cli", "query", "Who books invoices in Xero?",
         "--workdir", str(rag), "--embedder", "hashing", "--mode", "mix", "--json",
         "--scope", "product_id=p-erp", "--hl", "Xero invoices", "--ll", "Xero"],
        capture_output=True, text=True, timeout=300,
    )
    assert scoped.returncode == 0, scoped.stderr[-3000:]
    data = json.loads(scoped.stdout)
    files = {c["file_path"] for c in data["data"]["chunks"]}
    assert files == {"product_id:p-erp:category:erp:source:erp.txt"}, files


def test_ingest_without_an_llm_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "a.txt"
    doc.write_text("Acme CRM.", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "hexrag.cli", "ingest", str(doc), "--stack",
                           str(tmp_path / "rag")], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items()
                               if k not in ("HEXRAG_LLM", "LLM_BINDING")})
    assert done.returncode != 0 and "needs an LLM" in done.stderr


def test_documents_and_delete_through_the_cli(server: ScriptedOpenAIServer,
                                               tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crm.md").write_text(CRM, encoding="utf-8")
    (docs / "erp.txt").write_text(ERP, encoding="utf-8")
    rag = tmp_path / "rag"
    common = ("--llm", "openai:scripted", "--embedder", "hashing:64",
              "--chunk-size", "20", "--chunk-overlap", "4")
    done = _cli(server, "ingest", str(docs), "--stack", str(rag), *common,
                "--product-id", "p-1", "--metadata", "owner=ops")
    assert done.returncode == 0, done.stderr[-3000:]
    again = _cli(server, "ingest", str(docs), "--stack", str(rag), *common)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout.split(": ", 1)[1])["skipped"] == 2

    listed = _cli(server, "documents", "--stack", str(rag), "--json")
    assert listed.returncode == 0, listed.stderr[-3000:]
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    # the second ingestion left LightRAG's duplicate rows (failed, dup-...) beside the two
    dups = [r for r in rows if r["id"].startswith("dup-")]
    assert len(dups) == 2 and {r["status"] for r in dups} == {"failed"}
    rows = [r for r in rows if r not in dups]
    assert {r["status"] for r in rows} == {"processed"} and len(rows) == 2
    crm = next(r for r in rows if r["file_path"].endswith("crm.md"))
    assert crm["chunks_count"] >= 2

    gone = _cli(server, "delete", crm["id"], "doc-unknown", "--stack", str(rag),
                "--llm", "openai:scripted")
    assert gone.returncode == 0, gone.stderr[-3000:]
    report = json.loads(gone.stdout)
    assert report["deleted"] == [crm["id"]] and report["not_found"] == ["doc-unknown"]
    assert report["entities_deleted"] >= 1 and report["chunks"] == crm["chunks_count"]

    from hexrag.adapters.workdir import load_workdir

    wd = load_workdir(rag)
    assert {c.file_path for c in wd.chunk_store.iter_chunks()} == {
        "product_id:p-1:source:erp.txt"}
    names = {e.name for e in wd.graph.iter_nodes()}
    assert "Mailchimp" not in names and "Xero" in names
    xero = next(e for e in wd.graph.iter_nodes() if e.name == "Xero")
    assert "crm.md" not in (xero.file_path or "")
    left = _cli(server, "documents", "--stack", str(rag), "--json")
    assert [json.loads(line)["id"] for line in left.stdout.splitlines()] != [crm["id"]]
    # (LightRAG's duplicate rows still name it as their original, as LightRAG keeps them)
    assert crm["id"] not in [json.loads(line)["id"] for line in left.stdout.splitlines()]

    missing = _cli(server, "delete", "doc-unknown", "--stack", str(rag))
    assert missing.returncode == 1 and json.loads(missing.stdout)["not_found"] == ["doc-unknown"]


def test_failed_documents_are_resumed(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crm.md").write_text(CRM, encoding="utf-8")
    (docs / "bad.pdf").write_bytes(b"%PDF-1.4 broken")
    rag = tmp_path / "rag"
    common = ("--embedder", "hashing:64", "--chunk-size", "20", "--chunk-overlap", "4")
    env = {**os.environ, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "t",
           "OPENAI_MAX_RETRIES": "0"}
    down = subprocess.run([sys.executable, "-m", "hexrag.cli", "ingest", str(docs), "--stack",
                           str(rag), "--llm", "openai:scripted", *common],
                          capture_output=True, text=True, timeout=300, env=env)
    assert down.returncode == 1, down.stderr[-2000:]
    assert "bad.pdf is not a readable PDF" in down.stderr and "crm.md" in down.stderr
    listed = _cli(server, "documents", "--stack", str(rag), "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["status"] for r in rows] == ["failed"] and rows[0]["error_msg"]
    assert "content" not in rows[0]

    done = _cli(server, "ingest", "--resume", "--stack", str(rag), "--llm", "openai:scripted",
                *common)
    assert done.returncode == 0, done.stderr[-3000:]
    totals = json.loads(done.stdout.split(": ", 1)[1])
    assert totals["resumed"] == 1 and totals["chunks"] >= 2 and totals["failed"] == 0
    rows = [json.loads(line) for line in _cli(server, "documents", "--stack", str(rag),
                                              "--json").stdout.splitlines()]
    assert [r["status"] for r in rows] == ["processed"] and "content" not in rows[0]
    nothing = _cli(server, "ingest", "--stack", str(rag))
    assert nothing.returncode != 0 and "--resume" in nothing.stderr


def test_ingest_documents_and_delete_per_workspace(server: ScriptedOpenAIServer,
                                                   tmp_path: Path) -> None:
    (tmp_path / "crm.md").write_text(CRM, encoding="utf-8")
    (tmp_path / "erp.md").write_text(ERP, encoding="utf-8")
    rag = tmp_path / "rag"
    common = ("--llm", "openai:scripted", "--embedder", "hashing:64")
    for ws, doc in (("alpha", "crm.md"), ("beta", "erp.md")):
        done = _cli(server, "ingest", str(tmp_path / doc), "--stack", str(rag),
                    "--workspace", ws, *common)
        assert done.returncode == 0, done.stderr[-2000:]
    assert (rag / "alpha" / "kv_store_text_chunks.json").is_file()
    listed = {ws: [json.loads(line)["file_path"] for line in _cli(
        server, "documents", "--stack", str(rag), "--workspace", ws, "--json").stdout.splitlines()]
        for ws in ("alpha", "beta")}
    assert listed == {"alpha": ["crm.md"], "beta": ["erp.md"]}
    bad = _cli(server, "documents", "--stack", str(rag), "--workspace", "../beta")
    assert bad.returncode != 0 and "workspace" in bad.stderr
