"""The stack records its embedding model (issue 21, point 1): a manifest inside the stack on
every backend (a working directory's file, a PostgreSQL row in a hexrag table, a Redis key,
a memory value); every command uses the recorded model when none is named, refuses another
one, and writes the manifest only at the first write. Real backends: working directories
through the real command line (with the scripted OpenAI-compatible server as the LLM),
PostgreSQL (pgserver), Milvus Lite + redis-server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.memory.manifest import MemoryManifestStore
from hexrag.adapters.postgres.manifest import PgManifestStore
from hexrag.adapters.redis.manifest import RedisManifestStore
from hexrag.adapters.workdir.manifest import MANIFEST_FILE, WorkdirManifestStore
from hexrag.bootstrap import build_stack
from hexrag.config import StackConfig
from hexrag.core.errors import ConfigurationError
from hexrag.devtools.scripted_kg import chat_responder
from hexrag.devtools.scripted_openai import ScriptedOpenAIServer
from hexrag.ports.stack import ManifestStore, StackManifest
from tests.integration.stack_models import SALTED
from tests.services.milvus import milvus_uri  # noqa: F401
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401
from tests.services.redis import redis_client, redis_server, redis_workspace  # noqa: F401

SALTED_SPEC = "tests.integration.stack_models:SALTED"
OTHER_SPEC = "tests.integration.stack_models:OTHER"
CRM = ("Acme CRM syncs contacts with Mailchimp every night. Mailchimp sends the Newsletter. "
       "Acme CRM exports Invoices to Xero for Finance teams.")
ERP = "Acme ERP books Invoices in Xero. Xero reports to Finance. Acme ERP plans Inventory."
HR = "Acme HR pays Salaries through Xero. Xero informs Finance about Payroll."
CHUNKING = ("--chunk-size", "20", "--chunk-overlap", "4")
MANIFEST = StackManifest(embedding_model="salted-hashing", embedding_dim=64,
                         embedder=SALTED_SPEC, layout="hexrag", workspace="w")


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HEXRAG_") and name not in (
            "HEXRAG_REQUIRE_BACKENDS", "HEXRAG_POSTGRES_DSN", "HEXRAG_REDIS_URL",
            "HEXRAG_MILVUS_URI",
        ):
            monkeypatch.delenv(name)
    for name in ("LLM_BINDING", "EMBEDDING_BINDING", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                 "LLM_BINDING_HOST", "EMBEDDING_DIM", "LLM_MODEL", "WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as s:
        s.set_chat_responder(chat_responder)
        yield s


def _cli(server: ScriptedOpenAIServer | None, *args: str) -> subprocess.CompletedProcess[str]:
    """``hexrag ARGS``; without ``server`` no LLM variable at all (read-only commands)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "LLM_", "HEXRAG_EMBEDDER"))}
    if server is not None:
        env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test")
    return subprocess.run([sys.executable, "-m", "hexrag.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=Path(__file__).parents[2])


def _docs(tmp_path: Path, **texts: str) -> Path:
    folder = tmp_path / f"docs-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    for name, text in texts.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    return folder


async def _vectors_match(stores: Any, model: Any) -> int:
    """Every stored entity and relation vector is ``model``'s embedding of its content
    (cosine > 0.999, as stored); returns how many were compared."""
    compared = 0
    for section in ("entities", "relationships"):
        index = getattr(stores, section)
        cursor = None
        while True:
            page = await index.scan_records(cursor, limit=500)
            for record in page.items:
                want = (await model.embed([record.content]))[0]
                got = np.asarray(record.vector, dtype=np.float64)
                cos = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
                assert cos > 0.999, (section, record.id, cos)
                compared += 1
            cursor = page.cursor
            if cursor is None:
                break
    return compared


# ----------------------------------------------------------------------- the adapters


async def _round_trip(store: ManifestStore) -> None:
    assert await store.read() is None
    await store.write(MANIFEST)
    assert await store.read() == MANIFEST
    moved = StackManifest(embedding_model="m2", embedding_dim=8, layout="hexrag")
    await store.write(moved)
    assert await store.read() == moved


async def test_memory_and_workdir_manifests(tmp_path: Path) -> None:
    await _round_trip(MemoryManifestStore())
    store = WorkdirManifestStore(tmp_path / "wd")
    await store.write(MANIFEST)
    assert not (tmp_path / "wd" / MANIFEST_FILE).exists()  # held until the commit
    store.flush()
    assert await WorkdirManifestStore(tmp_path / "wd").read() == MANIFEST
    (tmp_path / "wd" / MANIFEST_FILE).write_text('{"format_version": 99, '
                                                 '"embedding_model": "x", "embedding_dim": 3}')
    with pytest.raises(ConfigurationError, match="upgrade hexrag"):
        await WorkdirManifestStore(tmp_path / "wd").read()


async def test_postgres_manifest_rows(pg_pool: Any, pg_schema: str) -> None:  # noqa: F811
    hexrag_layout = PgManifestStore(pg_pool, schema=pg_schema, table_prefix="kb")
    assert await hexrag_layout.read() is None
    tables = await pg_pool.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", pg_schema)
    assert tables == []  # reading creates nothing
    await _round_trip(hexrag_layout)
    # beside a LightRAG deployment: one row per LightRAG workspace in hexrag_manifest
    one = PgManifestStore(pg_pool, schema=pg_schema, table_prefix="hexrag", key="stack.a")
    two = PgManifestStore(pg_pool, schema=pg_schema, table_prefix="hexrag", key="stack.b")
    await one.write(MANIFEST)
    assert await two.read() is None and await one.read() == MANIFEST
    names = {r["table_name"] for r in await pg_pool.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", pg_schema)}
    assert names == {"kb_manifest", "hexrag_manifest"}


async def test_redis_manifest_key(redis_client: Any, redis_workspace: str) -> None:  # noqa: F811
    store = RedisManifestStore(redis_client, workspace=redis_workspace)
    await _round_trip(store)
    assert await redis_client.exists(f"{redis_workspace}:manifest:stack") == 1


# ----------------------------------------------------------- stacks built from configuration


async def test_postgres_stack_records_and_enforces_its_model(
    pg_dsn: str, pg_schema: str  # noqa: F811
) -> None:
    base = {"vector_index": pg_dsn, "graph_store": pg_dsn, "chunk_store": pg_dsn,
            "cache": pg_dsn, "postgres_schema": pg_schema}
    first = await build_stack(StackConfig(**base, embedder=SALTED_SPEC))
    try:
        assert first.model is not None and first.model.recorded is None
        await first.record_model()  # the first write records the model
    finally:
        await first.aclose()
    row = await _pg_row(pg_dsn, pg_schema)
    assert row["embedding_model"] == "salted-hashing" and row["embedding_dim"] == 64
    assert row["embedder"] == SALTED_SPEC and row["layout"] == "hexrag"

    again = await build_stack(StackConfig(**base))  # no embedder named: the recorded one
    try:
        assert again.engine.embedder.model_name == "salted-hashing"
    finally:
        await again.aclose()
    with pytest.raises(ConfigurationError, match="was built with the embedding model "
                                                 "'salted-hashing'"):
        await build_stack(StackConfig(**base, embedder=OTHER_SPEC))


async def _pg_row(dsn: str, schema: str) -> dict[str, Any]:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        raw = await conn.fetchval(
            f'SELECT value::text FROM "{schema}".hexrag_manifest WHERE key = $1', "stack")
    finally:
        await conn.close()
    return dict(json.loads(raw))


async def test_milvus_redis_stack_keeps_its_manifest_in_redis(
    milvus_uri: str, redis_server: str, redis_client: Any  # noqa: F811
) -> None:
    namespace = f"m{uuid.uuid4().hex[:8]}"
    base = {"vector_index": f"milvus://{milvus_uri}" if milvus_uri.endswith(".db")
            else milvus_uri, "chunk_store": redis_server, "cache": redis_server,
            "namespace": namespace}
    stack = await build_stack(StackConfig(**base, embedder=SALTED_SPEC))
    try:
        await stack.record_model()
    finally:
        await stack.aclose()
    raw = await redis_client.get(f"{namespace}:manifest:stack")
    assert json.loads(raw)["embedding_model"] == "salted-hashing"
    again = await build_stack(StackConfig(**base))
    try:
        assert again.engine.embedder.model_name == "salted-hashing"
    finally:
        await again.aclose()
    with pytest.raises(ConfigurationError, match="salted-hashing"):
        await build_stack(StackConfig(**base, embedder=OTHER_SPEC))


# ------------------------------------------------------------ the command line, directories


def test_working_directory_commands_use_the_recorded_model(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    rag = tmp_path / "rag"
    docs = _docs(tmp_path, crm=CRM, erp=ERP)
    done = _cli(server, "ingest", str(docs), "--stack", str(rag), "--llm", "openai:scripted",
                "--embedder", SALTED_SPEC, *CHUNKING)
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = json.loads((rag / MANIFEST_FILE).read_text())
    assert recorded["embedding_model"] == "salted-hashing" and recorded["embedding_dim"] == 64
    assert recorded["embedder"] == SALTED_SPEC and recorded["layout"] == "workdir"

    # another model is refused, with a message naming both and the way out
    wrong = _cli(server, "ingest", str(_docs(tmp_path, hr=HR)), "--stack", str(rag),
                 "--llm", "openai:scripted", "--embedder", OTHER_SPEC, *CHUNKING)
    assert wrong.returncode == 2, wrong.stderr
    assert "salted-hashing" in wrong.stderr and "--re-embed" in wrong.stderr
    for command in (("query", "Xero", "--stack", str(rag), "--embedder", OTHER_SPEC),
                    ("check", str(rag), "--embedder", OTHER_SPEC)):
        refused = _cli(None, *command)
        if command[0] == "check" and "No such option" in refused.stderr:
            continue  # check takes no --embedder: it never embeds
        assert refused.returncode == 2 and "salted-hashing" in refused.stderr, refused.stderr

    # ingest without --embedder writes vectors of the recorded model
    more = _cli(server, "ingest", str(_docs(tmp_path, hr=HR)), "--stack", str(rag),
                "--llm", "openai:scripted", *CHUNKING)
    assert more.returncode == 0, more.stderr[-3000:]
    # read-only commands need no LLM key, and check shows the recorded model
    checked = _cli(None, "check", str(rag), "--json")
    assert json.loads(checked.stdout)["stores"]["entities"]["model"] == "salted-hashing", (
        checked.stdout[:2000] + checked.stderr[-2000:])
    listed = _cli(None, "documents", "--stack", str(rag), "--json")
    assert listed.returncode == 0, listed.stderr[-2000:]
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    crm = next(r for r in rows if r["file_path"].endswith("crm.txt"))
    asked = _cli(None, "query", "Who reports to Finance?", "--stack", str(rag), "--json")
    assert asked.returncode == 0, asked.stderr[-2000:]

    # delete without --embedder re-embeds rebuilt records with the recorded model
    gone = _cli(server, "delete", crm["id"], "--stack", str(rag), "--llm", "openai:scripted")
    assert gone.returncode == 0, gone.stderr[-3000:]
    report = json.loads(gone.stdout)
    assert report["deleted"] == [crm["id"]] and report["entities_rebuilt"] >= 1, report

    import asyncio

    from hexrag.bootstrap import open_stack

    async def compare() -> int:
        opened = await open_stack(rag)
        try:
            assert opened.engine.embedder.model_name == "salted-hashing"
            return await _vectors_match(opened.stores, SALTED)
        finally:
            await opened.aclose()

    assert asyncio.run(compare()) > 5


def test_unrecorded_directory_is_recorded_at_the_first_write_only(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    rag = tmp_path / "rag"
    done = _cli(server, "ingest", str(_docs(tmp_path, crm=CRM)), "--stack", str(rag),
                "--llm", "openai:scripted", "--embedder", SALTED_SPEC, *CHUNKING)
    assert done.returncode == 0, done.stderr[-3000:]
    (rag / MANIFEST_FILE).unlink()  # as LightRAG or an older hexrag leaves it
    for command in (("check", str(rag)), ("documents", "--stack", str(rag)),
                    ("export", str(rag), str(tmp_path / "archive"))):
        ran = _cli(None, *command)
        assert ran.returncode == 0, (command, ran.stderr[-2000:])
        assert not (rag / MANIFEST_FILE).exists(), command
    archive = json.loads((tmp_path / "archive" / "manifest.json").read_text())
    assert archive["embedding"]["model"] is None  # unknown, not a guess
    # a write into vectors of an unrecorded model needs the model named...
    guess = _cli(server, "ingest", str(_docs(tmp_path, erp=ERP)), "--stack", str(rag),
                 "--llm", "openai:scripted", *CHUNKING)
    assert guess.returncode == 2 and "records no embedding model" in guess.stderr
    # ...and then records it
    named = _cli(server, "ingest", str(_docs(tmp_path, erp=ERP)), "--stack", str(rag),
                 "--llm", "openai:scripted", "--embedder", SALTED_SPEC, *CHUNKING)
    assert named.returncode == 0, named.stderr[-3000:]
    assert json.loads((rag / MANIFEST_FILE).read_text())["embedding_model"] == "salted-hashing"

    # import and migrate targets record the model of the vectors they receive
    exported = _cli(None, "export", str(rag), str(tmp_path / "a2"))
    assert exported.returncode == 0, exported.stderr[-2000:]
    imported = _cli(None, "import", str(tmp_path / "a2"), str(tmp_path / "copy"))
    assert imported.returncode == 0, imported.stderr[-2000:]
    copied = json.loads((tmp_path / "copy" / MANIFEST_FILE).read_text())
    assert copied["embedding_model"] == "salted-hashing" and copied["embedding_dim"] == 64
    moved = _cli(None, "migrate", "--from", str(rag), "--to", str(tmp_path / "moved"),
                 "--no-verify")
    assert moved.returncode == 0, moved.stderr[-2000:]
    assert json.loads((tmp_path / "moved" / MANIFEST_FILE).read_text())[
        "embedding_model"] == "salted-hashing"
    re_embedded = _cli(None, "migrate", "--from", str(rag), "--to", str(tmp_path / "re"),
                       "--re-embed", "hashing:16")
    assert re_embedded.returncode == 0, re_embedded.stderr[-2000:]
    assert json.loads((tmp_path / "re" / MANIFEST_FILE).read_text())["embedding_dim"] == 16


def test_served_working_directory_lists_and_deletes_documents(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """``GET /documents`` and ``DELETE /documents/delete_document`` on a served working
    directory (issue 21 point 6): the deletion is written back to the files at once, with
    the recorded model; new documents still go through ``hexrag ingest``."""
    import asyncio
    import time

    from hexrag.api.limits import ApiSettings
    from hexrag.serving import stack_app
    from tests.integration.live import LiveServer

    rag = tmp_path / "rag"
    done = _cli(server, "ingest", str(_docs(tmp_path, crm=CRM, erp=ERP)), "--stack", str(rag),
                "--llm", "openai:scripted", "--embedder", SALTED_SPEC, *CHUNKING)
    assert done.returncode == 0, done.stderr[-3000:]
    stack = asyncio.run(build_stack(StackConfig(workdir=rag)))
    assert stack.engine.embedder.model_name == "salted-hashing"  # recorded, not named
    live = LiveServer(stack_app(stack, ApiSettings.from_env({})))
    try:
        listed = live.client.get("/documents")
        assert listed.status_code == 200, listed.text
        processed = listed.json()["statuses"]["processed"]
        assert len(processed) == 2
        crm = next(d for d in processed if d["file_path"].endswith("crm.txt"))
        refused = live.client.post("/documents/text", json={"text": HR})
        assert refused.status_code == 503 and "hexrag ingest" in refused.text
        r = live.client.request("DELETE", "/documents/delete_document",
                                json={"doc_ids": [crm["id"]]})
        assert r.status_code == 200 and r.json()["status"] == "deletion_started", r.text
        deadline = time.monotonic() + 30
        while True:
            status = live.client.get("/documents/pipeline_status").json()
            if not status["busy"] and not status["queued_deletions"]:
                break
            assert time.monotonic() < deadline, status
            time.sleep(0.05)
        assert "deleted 1 document(s)" in status["latest_message"], status
        left = live.client.get("/documents").json()["statuses"]
        assert [d["id"] for group in left.values() for d in group] == [
            d["id"] for d in processed if d["id"] != crm["id"]]
    finally:
        live.stop()
        asyncio.run(stack.aclose())
    # written back: a fresh reader sees the deletion, and vectors of the recorded model
    on_disk = json.loads((rag / "kv_store_doc_status.json").read_text())
    assert crm["id"] not in on_disk and len(on_disk) == 1
    listed_cli = _cli(None, "documents", "--stack", str(rag), "--json")
    assert crm["id"] not in listed_cli.stdout and listed_cli.returncode == 0

    from hexrag.bootstrap import open_stack

    async def compare() -> int:
        opened = await open_stack(rag)
        try:
            return await _vectors_match(opened.stores, SALTED)
        finally:
            await opened.aclose()

    assert asyncio.run(compare()) > 3


# -------------------------------------------- one --stack spelling; read-only commands


def test_every_command_takes_stack_and_query_opens_a_toml(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    rag = tmp_path / "rag"
    done = _cli(server, "ingest", str(_docs(tmp_path, crm=CRM, erp=ERP)), "--stack", str(rag),
                "--llm", "openai:scripted", "--embedder", SALTED_SPEC, *CHUNKING)
    assert done.returncode == 0, done.stderr[-3000:]
    # a TOML naming an LLM whose key is not set: read-only commands never ask for it
    toml = tmp_path / "stack.toml"
    toml.write_text('workdir = "rag"\nllm = "openai:gpt-4o-mini"\n', encoding="utf-8")
    for stack in (str(rag), str(toml)):
        for command in (("check", "--stack", stack, "--json"),
                        ("documents", "--stack", stack, "--json"),
                        ("export", "--stack", stack, str(tmp_path / f"a-{len(stack)}"))):
            ran = _cli(None, *command)
            assert ran.returncode == 0, (command, ran.stderr[-2000:])
    plain = tmp_path / "plain.toml"  # query uses the LLM a TOML names: here none
    plain.write_text('workdir = "rag"\n', encoding="utf-8")
    for stack in (str(rag), str(plain)):
        asked = _cli(None, "query", "Who reports to Finance?", "--stack", stack, "--json")
        assert asked.returncode == 0, (stack, asked.stderr[-2000:])
        assert json.loads(asked.stdout)["data"]["entities"], stack
    # the old spellings stay
    for command in (("check", str(rag)), ("query", "Xero", "--workdir", str(rag)),
                    ("query", "Xero", "--config", str(plain), "--context")):
        ran = _cli(None, *command)
        assert ran.returncode == 0, (command, ran.stderr[-2000:])
    imported = _cli(None, "import", str(tmp_path / f"a-{len(str(rag))}"), "--stack",
                    str(tmp_path / "copy"))
    assert imported.returncode == 0, imported.stderr[-2000:]
    moved = _cli(None, "migrate", "--stack", str(rag), "--to", str(tmp_path / "moved"),
                 "--no-verify")
    assert moved.returncode == 0, moved.stderr[-2000:]
    twice = _cli(None, "serve", "--stack", str(rag), "--workdir", str(rag))
    assert twice.returncode == 2 and "give the stack once" in twice.stderr
    missing = _cli(None, "serve", "--stack", str(tmp_path / "nothing-here"), "--port", "1")
    assert missing.returncode == 2, missing.stderr
    # ingestion does ask for the LLM the TOML names
    wants_key = _cli(None, "ingest", str(_docs(tmp_path, hr=HR)), "--stack", str(toml))
    assert wants_key.returncode != 0 and "OPENAI_API_KEY" in wants_key.stderr


def test_check_of_a_workspace_or_table_that_does_not_exist_fails(
    tmp_path: Path, pg_dsn: str, pg_schema: str  # noqa: F811
) -> None:
    (tmp_path / "rag").mkdir()
    gone = _cli(None, "check", str(tmp_path / "rag"), "--workspace", "nope")
    assert gone.returncode == 2 and "nope" in gone.stderr, gone.stderr
    toml = tmp_path / "pg.toml"
    toml.write_text(f'vector_index = "{pg_dsn}"\ngraph_store = "{pg_dsn}"\n'
                    f'chunk_store = "{pg_dsn}"\ncache = "{pg_dsn}"\n'
                    f'postgres_schema = "{pg_schema}"\nnamespace = "never_written"\n',
                    encoding="utf-8")
    for command in (("check", str(toml)), ("documents", "--stack", str(toml)),
                    ("check", str(toml), "--workspace", "w2")):
        ran = _cli(None, *command)
        assert ran.returncode == 2, (command, ran.stdout, ran.stderr[-2000:])
        assert "does not exist" in ran.stderr and "clean" not in ran.stdout, ran.stderr

    import asyncio

    async def tables() -> list[Any]:
        import asyncpg

        conn = await asyncpg.connect(pg_dsn)
        try:
            return list(await conn.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
                pg_schema))
        finally:
            await conn.close()

    assert asyncio.run(tables()) == []  # nothing was created by reading


async def test_a_missing_lightrag_table_is_not_said_to_be_created(pg_pool: Any) -> None:  # noqa: F811
    from hexrag.adapters.postgres._errors import translate_error

    try:
        await pg_pool.fetch('SELECT 1 FROM "LIGHTRAG_DOC_NOT_THERE"')
    except Exception as exc:  # asyncpg's UndefinedTableError, raised by the real server
        error = translate_error(exc, action="reading LightRAG's chunks")
    else:  # pragma: no cover - the table cannot exist
        raise AssertionError("the table exists")
    text = str(error)
    assert "LightRAG table does not exist" in text and "does not create them" in text
    assert "created on first use" not in text


def test_postgres_stack_delete_and_ingest_use_the_recorded_model(
    server: ScriptedOpenAIServer, tmp_path: Path, pg_dsn: str, pg_schema: str  # noqa: F811
) -> None:
    """The same promises on a PostgreSQL stack TOML: the TOML that built it names the
    model; a TOML naming none gets it from the stack's row; another model is refused."""
    stores = (f'vector_index = "{pg_dsn}"\ngraph_store = "{pg_dsn}"\nchunk_store = "{pg_dsn}"\n'
              f'cache = "{pg_dsn}"\npostgres_schema = "{pg_schema}"\n')
    named = tmp_path / "named.toml"
    named.write_text(stores + f'embedder = "{SALTED_SPEC}"\n', encoding="utf-8")
    bare = tmp_path / "bare.toml"
    bare.write_text(stores, encoding="utf-8")
    other = tmp_path / "other.toml"
    other.write_text(stores + f'embedder = "{OTHER_SPEC}"\n', encoding="utf-8")
    done = _cli(server, "ingest", str(_docs(tmp_path, crm=CRM, erp=ERP)), "--stack", str(named),
                "--llm", "openai:scripted", *CHUNKING)
    assert done.returncode == 0, done.stderr[-3000:]
    refused = _cli(server, "ingest", str(_docs(tmp_path, hr=HR)), "--stack", str(other),
                   "--llm", "openai:scripted", *CHUNKING)
    assert refused.returncode == 2 and "salted-hashing" in refused.stderr, refused.stderr
    more = _cli(server, "ingest", str(_docs(tmp_path, hr=HR)), "--stack", str(bare),
                "--llm", "openai:scripted", *CHUNKING)
    assert more.returncode == 0, more.stderr[-3000:]
    checked = _cli(None, "check", "--stack", str(bare), "--json")
    assert json.loads(checked.stdout)["stores"]["entities"]["model"] == "salted-hashing", (
        checked.stdout[-2000:] + checked.stderr[-2000:])
    listed = _cli(None, "documents", "--stack", str(bare), "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    crm = next(r for r in rows if r["file_path"].endswith("crm.txt"))
    gone = _cli(server, "delete", crm["id"], "--stack", str(bare), "--llm", "openai:scripted")
    assert gone.returncode == 0, gone.stderr[-3000:]
    assert json.loads(gone.stdout)["entities_rebuilt"] >= 1, gone.stdout

    import asyncio

    from hexrag.bootstrap import open_stack

    async def compare() -> int:
        opened = await open_stack(bare)
        try:
            assert opened.engine.embedder.model_name == "salted-hashing"
            return await _vectors_match(opened.stores, SALTED)
        finally:
            await opened.aclose()

    assert asyncio.run(compare()) > 5


def test_serving_records_the_model_at_the_first_http_write(
    server: ScriptedOpenAIServer, tmp_path: Path, pg_dsn: str, pg_schema: str  # noqa: F811
) -> None:
    """``hexrag serve --stack pg.toml`` writes nothing at start-up; the first document over
    HTTP records the stack's model before it writes."""
    import asyncio
    import socket
    import time

    import httpx

    toml = tmp_path / "pg.toml"
    toml.write_text(f'vector_index = "{pg_dsn}"\ngraph_store = "{pg_dsn}"\n'
                    f'chunk_store = "{pg_dsn}"\ncache = "{pg_dsn}"\n'
                    f'postgres_schema = "{pg_schema}"\nembedder = "{SALTED_SPEC}"\n'
                    'llm = "openai:scripted"\n', encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hexrag.cli", "serve", "--stack", str(toml), "--port", str(port),
         "--allow-empty", "--log-level", "warning"],
        env=env, cwd=Path(__file__).parents[2], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=20)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.get("/health")
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert asyncio.run(_pg_rows(pg_dsn, pg_schema)) == 0  # serving alone writes nothing
        r = client.post("/documents/text", json={"text": CRM, "file_source": "crm.txt"})
        assert r.status_code == 200, r.text
        while client.get("/documents/pipeline_status").json()["busy"] or not (
                client.get("/documents").json()["statuses"].get("processed")):
            assert time.monotonic() < deadline + 60
            time.sleep(0.1)
        client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    row = asyncio.run(_pg_row(pg_dsn, pg_schema))
    assert row["embedding_model"] == "salted-hashing" and row["embedder"] == SALTED_SPEC


async def _pg_rows(dsn: str, schema: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        exists = await conn.fetchval("SELECT to_regclass($1) IS NOT NULL",
                                     f'"{schema}".hexrag_manifest')
        return int(await conn.fetchval(
            f'SELECT count(*) FROM "{schema}".hexrag_manifest')) if exists else 0
    finally:
        await conn.close()


def test_ingest_and_delete_through_a_toml_naming_a_working_directory_are_written(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """A stack TOML whose stores are a working directory (``workdir = ...``): what ingest and
    delete write reaches the files, with the manifest."""
    toml = tmp_path / "wd.toml"
    toml.write_text(f'workdir = "rag"\nembedder = "{SALTED_SPEC}"\n', encoding="utf-8")
    first = _cli(server, "ingest", str(_docs(tmp_path, crm=CRM)), "--stack",
                 str(tmp_path / "rag"), "--llm", "openai:scripted", "--embedder", SALTED_SPEC,
                 *CHUNKING)
    assert first.returncode == 0, first.stderr[-3000:]
    done = _cli(server, "ingest", str(_docs(tmp_path, erp=ERP)), "--stack", str(toml),
                "--llm", "openai:scripted", *CHUNKING)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "rag" / "kv_store_doc_status.json").read_text())
    assert len([r for r in rows.values() if r["status"] == "processed"]) == 2
    assert json.loads((tmp_path / "rag" / MANIFEST_FILE).read_text())[
        "embedding_model"] == "salted-hashing"
    crm = next(k for k, r in rows.items() if r["file_path"].endswith("crm.txt"))
    gone = _cli(server, "delete", crm, "--stack", str(toml), "--llm", "openai:scripted")
    assert gone.returncode == 0, gone.stderr[-3000:]
    left = json.loads((tmp_path / "rag" / "kv_store_doc_status.json").read_text())
    assert crm not in left and len(left) == 1
