"""Issue 20, hole 7 (check and retry), over the real command line and real HTTP.

* Every file of a LightRAG-written working directory (LightRAG 1.5.7's own ``ainsert`` with a
  scripted LLM writes all twelve), truncated in a copy: ``hexrag check`` exits non-zero naming
  it, and ``hexrag serve`` refuses the directory naming the files it would read.
* An empty ``kv_store_text_chunks.json`` is refused naming the file.
* A document that failed while a PostgreSQL store was down (a private pgserver, stopped and
  started again) becomes ``processed`` once the store is back, with no user action, the
  retry visible in ``pipeline_status``; ``hexrag ingest --retry-failed`` ingests a stack's failed
  documents again.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from hexrag.adapters.memory import HashingEmbedder
from hexrag.cli import app
from hexrag.devtools.lightrag_data import (
    _quiet_lightrag,
    lightrag_embedding_func,
    register_offline_tiktoken,
    require_lightrag,
)
from hexrag.devtools.scripted_kg import chat_responder, kg_reply
from hexrag.devtools.scripted_openai import Reply, ScriptedOpenAIServer
from tests.integration.test_cli_serve_answer import _free_port, _Served
from tests.services import unavailable
from tests.services.postgres import pg_dsn, start_pgserver  # noqa: F401

DIM = 32
DOCS = [
    "Acme Corp builds Acme CRM. Acme CRM syncs contacts with Mailchimp every night. "
    "Mailchimp sends the Newsletter.",
    "Zapier connects Acme CRM to Slack. Slack notifies Sales when Mailchimp bounces.",
]
LIGHTRAG_FILES = (
    "graph_chunk_entity_relation.graphml", "kv_store_doc_status.json",
    "kv_store_entity_chunks.json", "kv_store_full_docs.json", "kv_store_full_entities.json",
    "kv_store_full_relations.json", "kv_store_llm_response_cache.json",
    "kv_store_relation_chunks.json", "kv_store_text_chunks.json", "vdb_chunks.json",
    "vdb_entities.json", "vdb_relationships.json",
)
# the files the loader used to keep as bytes without reading them (the repro)
KEPT_FILES = ("kv_store_full_docs.json", "kv_store_entity_chunks.json",
              "kv_store_full_entities.json")


@pytest.fixture(scope="module")
def lightrag_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory LightRAG 1.5.7 wrote with ``ainsert`` (every file it has)."""
    require_lightrag()
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.kg.shared_storage import finalize_share_data
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()
    root = tmp_path_factory.mktemp("lightrag")
    workspace = "cr" + uuid.uuid4().hex[:8]  # LightRAG shares storages per workspace

    async def llm(prompt: str, system_prompt: str | None = None,
                  history_messages: list[dict[str, Any]] | None = None, **_: Any) -> str:
        return kg_reply(prompt, system_prompt, history_messages or [])

    async def run() -> None:
        rag = LightRAG(
            working_dir=str(root), workspace=workspace,
            embedding_func=lightrag_embedding_func(HashingEmbedder(DIM)), llm_model_func=llm,
            tokenizer=TiktokenTokenizer("gpt-4o-mini"), chunk_token_size=20,
            chunk_overlap_token_size=4,
        )
        await rag.initialize_storages()
        try:
            for doc in DOCS:
                await rag.ainsert(doc)
        finally:
            await rag.finalize_storages()
            finalize_share_data()

    asyncio.run(run())
    path = root / workspace
    assert sorted(p.name for p in path.iterdir()) == sorted(LIGHTRAG_FILES)
    return path


def _damaged(src: Path, tmp: Path, name: str, how: str = "half") -> Path:
    out = tmp / f"copy-{name}-{how}"
    shutil.copytree(src, out)
    target = out / name
    data = target.read_bytes()
    if how == "half":
        target.write_bytes(data[: len(data) // 2])
    elif how == "last_byte":  # cut after the last record: only the closing '}' / '>' missing
        target.write_bytes(data.rstrip()[:-1])
    elif how == "empty":
        target.write_bytes(b"")
    elif how == "list":
        target.write_bytes(b"[]")
    return out


def _check(path: Path, *extra: str) -> Any:
    return CliRunner().invoke(app, ["check", str(path), *extra])


def test_a_sound_directory_checks_clean(lightrag_dir: Path) -> None:
    done = _check(lightrag_dir)
    assert done.exit_code == 0, done.output
    assert "clean" in done.output.splitlines()


@pytest.mark.parametrize("how", ["half", "last_byte"])
@pytest.mark.parametrize("name", LIGHTRAG_FILES)
def test_check_names_each_truncated_file(lightrag_dir: Path, tmp_path: Path, name: str,
                                         how: str) -> None:
    damaged = _damaged(lightrag_dir, tmp_path, name, how)
    done = _check(damaged)
    assert done.exit_code != 0, done.output
    assert f"damaged file {name}" in done.output, done.output
    assert "NOT clean" in done.output.splitlines()
    as_json = _check(damaged, "--json")
    body = json.loads(as_json.stdout)
    assert as_json.exit_code != 0 and body["clean"] is False
    assert list(body["files"]) == [name] and name in body["files"][name]


def test_check_lists_every_damaged_file_at_once(lightrag_dir: Path, tmp_path: Path) -> None:
    damaged = _damaged(lightrag_dir, tmp_path, "kv_store_full_docs.json")
    for name, how in (("kv_store_entity_chunks.json", "list"),
                      ("kv_store_full_entities.json", "empty"), ("vdb_chunks.json", "half")):
        _damaged_in_place(damaged / name, how)
    body = json.loads(_check(damaged, "--json").stdout)
    assert sorted(body["files"]) == sorted(["kv_store_full_docs.json", "vdb_chunks.json",
                                            "kv_store_entity_chunks.json",
                                            "kv_store_full_entities.json"])
    assert "must hold a JSON object" in body["files"]["kv_store_entity_chunks.json"]
    assert "is empty" in body["files"]["kv_store_full_entities.json"]


def _damaged_in_place(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes({"list": b"[]", "empty": b"", "half": data[: len(data) // 2]}[how])


def test_check_with_a_workspace_reads_its_files(lightrag_dir: Path, tmp_path: Path) -> None:
    damaged = _damaged(lightrag_dir, tmp_path, "kv_store_full_relations.json")
    root = tmp_path / "root"
    root.mkdir()
    damaged.rename(root / "ws")
    done = _check(root, "--workspace", "ws")
    assert done.exit_code != 0 and "damaged file kv_store_full_relations.json" in done.output


def _serve_refusal(path: Path) -> str:
    """``hexrag serve`` on ``path``: it must exit non-zero; its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "hexrag.cli", "serve", "--workdir", str(path), "--embedder",
         f"hashing:{DIM}", "--port", str(_free_port())],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "300"},
    )
    assert done.returncode != 0, done.stdout[-2000:] + done.stderr[-2000:]
    return " ".join(done.stderr.split())


@pytest.mark.parametrize("name", KEPT_FILES)
def test_serve_refuses_a_truncated_file_it_would_delete_with(lightrag_dir: Path, tmp_path: Path,
                                                             name: str) -> None:
    err = _serve_refusal(_damaged(lightrag_dir, tmp_path, name))
    assert name in err, err


def test_an_empty_text_chunks_file_is_refused_naming_it(lightrag_dir: Path,
                                                       tmp_path: Path) -> None:
    damaged = _damaged(lightrag_dir, tmp_path, "kv_store_text_chunks.json", "empty")
    err = _serve_refusal(damaged)
    assert "kv_store_text_chunks.json" in err and "empty" in err, err
    done = _check(damaged)
    assert done.exit_code != 0 and "damaged file kv_store_text_chunks.json" in done.output

    from hexrag.adapters.workdir import load_workdir
    from hexrag.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"kv_store_text_chunks\.json"):
        load_workdir(damaged, require_complete=True)


# ---------------------------------------------------------------- retries


def _cli(server: ScriptedOpenAIServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
    return subprocess.run([sys.executable, "-m", "hexrag.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env)


def _documents(server: ScriptedOpenAIServer, rag: Path) -> list[dict[str, Any]]:
    listed = _cli(server, "documents", "--stack", str(rag), "--json")
    assert listed.returncode == 0, listed.stderr[-3000:]
    return [json.loads(line) for line in listed.stdout.splitlines()]


def test_ingest_retry_failed_through_the_cli(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crm.md").write_text(DOCS[0], encoding="utf-8")
    (docs / "zap.md").write_text(DOCS[1], encoding="utf-8")
    rag = tmp_path / "rag"
    common = ("--stack", str(rag), "--llm", "openai:scripted", "--embedder", f"hashing:{DIM}",
              "--chunk-size", "20", "--chunk-overlap", "4")
    with ScriptedOpenAIServer() as down:
        down.set_default("chat", Reply.unauthorized())
        first = _cli(down, "ingest", str(docs), *common)
        assert first.returncode != 0 and "failed" in first.stderr, first.stderr[-3000:]
        rows = _documents(down, rag)
    assert {r["status"] for r in rows} == {"failed"} and len(rows) == 2, rows

    with ScriptedOpenAIServer() as up:
        up.set_chat_responder(chat_responder)
        nothing = _cli(up, "ingest", *common)
        assert nothing.returncode != 0 and "--retry-failed" in nothing.stderr
        again = _cli(up, "ingest", "--retry-failed", *common)
        assert again.returncode == 0, again.stderr[-3000:]
        totals = json.loads(again.stdout.split(": ", 1)[1])
        assert totals["resumed"] == 2 and totals["failed"] == 0 and totals["chunks"] >= 2
        assert again.stderr.count("resuming doc-") == 2
        rows = _documents(up, rag)
        assert {r["status"] for r in rows} == {"processed"} and len(rows) == 2, rows
        quiet = _cli(up, "ingest", "--retry-failed", *common)  # nothing failed any more
        assert quiet.returncode == 0 and "resuming" not in quiet.stderr
    assert _check(rag).exit_code == 0


def _pgserver(pgdata: str) -> Any:
    try:
        return start_pgserver(pgdata)
    except ImportError as exc:
        unavailable(f"pgserver is not installed: {exc}")


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as s:
        s.set_chat_responder(chat_responder)
        yield s


@pytest.mark.backend("postgres")
def test_a_document_failed_on_a_stopped_store_is_processed_when_it_is_back(
    pg_dsn: str, tmp_path: Path, scripted_llm: ScriptedOpenAIServer  # noqa: F811
) -> None:
    # a short path the pgserver user may enter (its socket lives in the data directory)
    pgroot = tempfile.mkdtemp(prefix="hexrag-retry-")
    os.chmod(pgroot, 0o755)
    pgdata = os.path.join(pgroot, "pgdata")
    pg = _pgserver(pgdata)
    uri = pg.get_uri()
    namespace = "retry" + uuid.uuid4().hex[:8]
    config = tmp_path / "stack.toml"
    # vectors and graph on the private server (stopped below); chunks, cache and document
    # status rows on the shared one, so the document is received while the store is down
    config.write_text(
        f'vector_index = "{uri}"\ngraph_store = "{uri}"\nchunk_store = "{pg_dsn}"\n'
        f'cache = "{pg_dsn}"\nembedder = "hashing:{DIM}"\nllm = "openai:scripted"\n'
        f'namespace = "{namespace}"\nstore_timeout = 3\n',
        encoding="utf-8",
    )
    served = _Served(
        ["--config", str(config), "--allow-empty"],
        env={"OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "test",
             "INGEST_RETRY_FIRST_DELAY": "0.5", "INGEST_RETRY_MAX_DELAY": "2",
             "INGEST_RETRY_ATTEMPTS": "60", "CHUNK_SIZE": "20", "CHUNK_OVERLAP_SIZE": "4"},
        health=503,
    )
    client = httpx.Client(base_url=served.url, timeout=30)
    try:
        pg.cleanup()  # the store goes down
        r = client.post("/documents/text", json={"text": DOCS[0], "file_source": "crm.md"})
        assert r.status_code == 200 and r.json()["status"] == "success", r.text

        def failed_and_waiting() -> dict[str, Any] | None:
            pipeline = client.get("/documents/pipeline_status").json()
            failed = client.get("/documents").json()["statuses"].get("failed", [])
            return pipeline if failed and pipeline["retries_waiting"] == 1 else None

        pipeline = _until(failed_and_waiting, 60, "the document never failed on the store")
        assert pipeline["retries"][0]["failed_tries"] >= 1
        assert pipeline["retry_policy"]["attempts"] == 60
        failed = client.get("/documents").json()["statuses"]["failed"][0]
        assert "postgres" in failed["error_msg"] and "next try in" in failed["error_msg"]
        time.sleep(2)  # a few more tries fail while the store stays down
        assert client.get("/documents").json()["statuses"].get("processed") is None

        pg = _pgserver(pgdata)  # the store comes back; nobody touches the document
        assert pg.get_uri() == uri

        def processed() -> list[dict[str, Any]] | None:
            statuses = client.get("/documents").json()["statuses"]
            return statuses.get("processed") if not statuses.get("failed") else None

        done = _until(processed, 90, "the document was not retried after the store came back")
        assert len(done) == 1 and done[0]["chunks_count"] >= 1
        pipeline = client.get("/documents/pipeline_status").json()
        assert pipeline["retries_waiting"] == 0
        assert any("retrying doc-" in m for m in pipeline["history_messages"])
        data = client.post("/query/data", json={
            "query": "What syncs with Mailchimp?", "mode": "local", "ll_keywords": ["Mailchimp"],
            "hl_keywords": ["contacts"]}).json()
        names = {e["entity_name"] for e in data["data"]["entities"]}
        assert "Mailchimp" in names, data  # written to the store that was down
    finally:
        client.close()
        code, _out, err = served.stop()
        try:
            pg.cleanup()
        except Exception:
            pass
        shutil.rmtree(pgroot, ignore_errors=True)
    assert code == 0, err[-2000:]


def _until(probe: Any, seconds: float, why: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(why)
