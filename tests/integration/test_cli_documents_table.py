"""``hexrag documents`` at 80 columns, through the real command line on a working directory
ingested by ``hexrag ingest`` (the offline stand-in answering): one line per document (ids
shortened, the file path read as product / category / source, a failure's error cut),
``--wide`` for the full ids and stored file paths, ``--json`` unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hexrag.cli_documents_table import readable_file_path, short_id
from hexrag.devtools.scripted_openai import Reply, ScriptedOpenAIServer
from hexrag.devtools.standin_llm import standin_responder

REPO = Path(__file__).resolve().parents[2]
LONG_NAME = "a-rather-long-document-name-about-single-sign-on-and-provisioning.md"


def _cli(server: ScriptedOpenAIServer, *args: str, columns: int = 80
         ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "offline",
           "COLUMNS": str(columns), "OPENAI_MAX_RETRIES": "0"}
    env.pop("TERM", None)
    return subprocess.run([sys.executable, "-m", "hexrag.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=REPO)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ScriptedOpenAIServer, Path]]:
    root = tmp_path_factory.mktemp("docs-table")
    rag = root / "rag"
    extra = root / "extra"
    extra.mkdir()
    (extra / LONG_NAME).write_text("Acme Portal signs users in through Okta. Okta sends SAML "
                                   "assertions to Acme Portal.", encoding="utf-8")
    (extra / "broken.md").write_text("Globex Billing exports Invoices to Xero.",
                                     encoding="utf-8")
    with ScriptedOpenAIServer() as server:
        server.set_chat_responder(standin_responder)
        for folder, pid, cat in (("examples/docs/erp", "p-erp", "erp"),
                                 ("examples/docs/crm", "p-crm", "crm")):
            done = _cli(server, "ingest", str(REPO / folder), "--stack", str(rag), "--llm",
                        "openai:gpt-4o-mini", "--embedder", "hashing:64", "--product-id", pid,
                        "--category", cat)
            assert done.returncode == 0, done.stderr[-3000:]
        done = _cli(server, "ingest", str(extra / LONG_NAME), "--stack", str(rag), "--llm",
                    "openai:gpt-4o-mini", "--embedder", "hashing:64", "--product-id",
                    "p-portal-with-a-long-product-id", "--category", "identity-and-access")
        assert done.returncode == 0, done.stderr[-3000:]
        # one document fails: the model server refuses its extraction
        server.script("chat", Reply(status=400, error="context length exceeded " * 20,
                                    error_type="invalid_request_error"))
        _cli(server, "ingest", str(extra / "broken.md"), "--stack", str(rag), "--llm",
             "openai:gpt-4o-mini", "--embedder", "hashing:64", "--product-id", "p-billing")
        yield server, rag


def _docs(server: ScriptedOpenAIServer, rag: Path) -> list[dict[str, object]]:
    done = _cli(server, "documents", "--stack", str(rag), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_one_line_per_document_at_80_columns(stack: tuple[ScriptedOpenAIServer, Path]) -> None:
    server, rag = stack
    docs = _docs(server, rag)
    assert len(docs) == 4
    assert sorted(str(d["status"]) for d in docs) == ["failed", "processed", "processed",
                                                       "processed"]
    done = _cli(server, "documents", "--stack", str(rag))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, "\n".join(lines)
    cut = lines.index("errors (whole: --wide or --json):")
    table, below = lines[:cut], lines[cut + 1:]
    for d in docs:
        doc_id = str(d["id"])
        rows = [line for line in table if short_id(doc_id) in line]
        assert len(rows) == 1, (doc_id, lines)  # the row did not wrap onto another line
        row = rows[0]
        assert doc_id not in row and str(d["status"]) in row
        assert "product_id:" not in row and "source:" not in row
    assert sum("doc-" in line for line in table) == len(docs)  # no folded id pieces
    erp = next(line for line in table if "sso.md" in line)
    assert "p-erp / erp / sso.md" in erp
    long_row = next(line for line in table if "p-portal" in line)
    assert long_row.rstrip().endswith("…")  # the long path is cut, not wrapped
    # the failure's error: one line of its own below the table, cut at the width
    failed = next(d for d in docs if d["status"] == "failed")
    assert below[0].startswith(f"{short_id(str(failed['id']))} failed: BackendError")
    assert below[0].rstrip().endswith("…") and "context length" in str(failed["error_msg"])
    assert below[1:] == [f"{len(docs)} documents"]


def test_wide_shows_whole_values(stack: tuple[ScriptedOpenAIServer, Path]) -> None:
    server, rag = stack
    docs = _docs(server, rag)
    done = _cli(server, "documents", "--stack", str(rag), "--wide", columns=400)
    assert done.returncode == 0, done.stderr[-3000:]
    for d in docs:
        assert str(d["id"]) in done.stdout
        assert str(d["file_path"]) in done.stdout  # the stored value, encoded
    assert "context length exceeded" in done.stdout  # the error, in its column
    narrow = _cli(server, "documents", "--stack", str(rag), "--wide")  # 80 columns: folded
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    assert all(str(d["id"])[:12] in narrow.stdout for d in docs)  # folded, not cut


def test_short_ids_and_readable_paths() -> None:
    assert short_id("doc-83f31d09d071b96ad384604f90a82e8b") == "doc-83f31d09…"
    assert short_id("doc-1") == "doc-1"
    assert readable_file_path("product_id:p-erp:category:erp:source:guides/sso.md") == (
        "p-erp / erp / guides/sso.md")
    assert readable_file_path("product_id:p:source:a:b.md") == "p / a:b.md"
    assert readable_file_path("plain/file.md") == "plain/file.md"
    assert readable_file_path("product_id:a:source:x.md<SEP>product_id:b:source:y.md") == (
        "a / x.md; b / y.md")
