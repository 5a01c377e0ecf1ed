"""A stack hexrag ingested, migrated with ``hexrag migrate`` into PostgreSQL and into Milvus
Lite + Redis, keeps its documents there: ``hexrag documents`` lists them, and ``hexrag
delete`` removes one (the answer of issue 21: before, the copy showed 0 documents and delete
answered not_found)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hexrag.devtools.scripted_openai import ScriptedOpenAIServer
from tests.integration.test_cli_ingest import CRM, ERP, _cli, server  # noqa: F401
from tests.services.redis import redis_server  # noqa: F401

pytestmark = [pytest.mark.backend("postgres"), pytest.mark.backend("milvus"),
              pytest.mark.backend("redis")]


def _ingested(server: ScriptedOpenAIServer, tmp_path: Path) -> Path:  # noqa: F811
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crm.md").write_text(CRM, encoding="utf-8")
    (docs / "erp.txt").write_text(ERP, encoding="utf-8")
    rag = tmp_path / "rag"
    done = _cli(server, "ingest", str(docs), "--stack", str(rag), "--llm", "openai:scripted",
                "--embedder", "hashing:32", "--chunk-size", "20", "--chunk-overlap", "4")
    assert done.returncode == 0, done.stderr[-3000:]
    return rag


def _documents(server: ScriptedOpenAIServer, stack: Path) -> list[dict[str, object]]:  # noqa: F811
    r = _cli(server, "documents", "--stack", str(stack), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("target", ["postgres", "milvus_redis"])
def test_migrated_stack_keeps_its_documents(
    server: ScriptedOpenAIServer,  # noqa: F811
    tmp_path: Path,
    target: str,
    redis_server: str,  # noqa: F811
) -> None:
    from tests.services.postgres import postgres_dsn

    rag = _ingested(server, tmp_path)
    want = _documents(server, rag)
    assert len(want) == 2
    dsn = postgres_dsn()
    ns = "migdocs" + uuid.uuid4().hex[:6]
    stack = tmp_path / "target.toml"
    if target == "postgres":
        stores = (f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
                  f'cache = "{dsn}"\n')
    else:
        # a Milvus Lite file of the command's own (the test process must not hold its lock)
        milvus = f"milvus://{tmp_path / 'milvus.db'}"
        stores = (f'vector_index = "{milvus}"\ngraph_store = "{dsn}"\n'
                  f'chunk_store = "{redis_server}"\ncache = "{redis_server}"\n')
    stack.write_text(stores + f'namespace = "{ns}"\nembedder = "hashing:32"\n',
                     encoding="utf-8")
    r = _cli(server, "migrate", "--from", str(rag), "--to", str(stack))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["ok"] is True
    for section in ("doc_status", "fragments", "full_docs", "entity_chunks"):
        got = report["digests"][section]
        assert got["source"] == got["target"] and got["target"]["count"] > 0, section
    got = _documents(server, stack)
    assert [d["id"] for d in got] == [d["id"] for d in want]
    assert [d["status"] for d in got] == ["processed", "processed"]
    r = _cli(server, "delete", str(got[0]["id"]), "--stack", str(stack),
             "--llm", "openai:scripted")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert [d["id"] for d in _documents(server, stack)] == [want[1]["id"]]
