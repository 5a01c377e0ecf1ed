"""LightRAG's query-side routes on its own PostgreSQL tables against LightRAG 1.5.7's server
(issue 24).

LightRAG's whole server (``lightrag_server.create_app``, its own process) runs on its own
PostgreSQL storages (``PGKVStorage`` + ``PGVectorStorage`` + ``PGTableGraphStorage`` +
``PGDocStatusStorage``, as :mod:`hexrag.devtools.lightrag_pg` deploys them) in a workspace of
this module, and ingests three documents through its ``/documents/texts`` with the offline
stand-in model. It is then restarted on those tables (as the working-directory pair reads its
files afresh), and ``hexrag serve --config`` reads the same tables in place
(``layout = "lightrag"``) with the same model. ``/query``, ``/query/data``,
``/query/stream`` with ``include_progress``, Ollama's ``/api/generate`` and ``/api/chat``
with a mode prefix, ``/query`` and ``/query/data`` with LightRAG's other parameters
(context or prompt only, history, given keywords, ``bypass``) and ``/health``'s liveness and
pipeline fields are asked the same of both;
only what :mod:`tests.integration.test_lr_routes_ops` normalises (durations) is normalised.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.lr_ops_servers import (
    DIM,
    EMBED_MODEL,
    LLM_MODEL,
    LightRAGFull,
    Pair,
    _base_env,
    _Process,
    free_port,
    ndjson,
    standin_model,
    untimed,
)
from tests.integration.test_lr_routes_ops import DOCS, LIVENESS
from tests.services.postgres import pg_dsn  # noqa: F401

pytest.importorskip("lightrag")
pytest.importorskip("jwt")  # LightRAG's server needs PyJWT (the parity extra)

pytestmark = pytest.mark.backend("postgres")


class HexragServeConfig(_Process):
    """``hexrag serve --config <toml> --lightrag-webui`` with the stand-in model (LightRAG's
    server serves its WebUI, as the working-directory pair)."""

    def __init__(self, config: Path, model: Any, log: Path) -> None:
        port = free_port()
        full = _base_env({"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "stub",
                          "EMBEDDING_DIM": str(DIM), "COLUMNS": "200"})
        super().__init__("hexrag serve", [
            sys.executable, "-m", "hexrag.cli", "serve", "--config", str(config),
            "--embedder", f"openai:{EMBED_MODEL}", "--llm", f"openai:{LLM_MODEL}",
            "--port", str(port), "--log-level", "warning", "--lightrag-webui"], full, log.parent,
            f"http://127.0.0.1:{port}", "/auth-status", log)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, pg_dsn: str) -> Iterator[Pair]:  # noqa: F811
    from hexrag.devtools.lightrag_pg import PG_STORAGES, lightrag_pg_env

    tmp = tmp_path_factory.mktemp("lr-query-pg")
    workspace = "lrq" + uuid.uuid4().hex[:8]
    env = {**lightrag_pg_env(pg_dsn), "WORKSPACE": workspace,
           **{f"LIGHTRAG_{role.upper()}": cls for role, cls in PG_STORAGES.items()}}
    model = standin_model()
    try:
        ingesting = LightRAGFull(tmp / "rag", model, tmp / "lightrag-ingest.log", env=env)
        try:
            ingesting.ingest(DOCS)
        finally:
            ingesting.stop()
        lr = LightRAGFull(tmp / "rag", model, tmp / "lightrag.log", env=env)
        try:
            config = tmp / "stack.toml"
            config.write_text(
                f'vector_index = "{pg_dsn}"\ngraph_store = "{pg_dsn}"\n'
                f'chunk_store = "{pg_dsn}"\ncache = "{pg_dsn}"\nlayout = "lightrag"\n'
                f'workspace = "{workspace}"\nlightrag_model_name = "{EMBED_MODEL}"\n')
            hx = HexragServeConfig(config, model, tmp / "hexrag.log")
            try:
                yield Pair(lr, hx)
            finally:
                hx.stop()
        finally:
            lr.stop()
    finally:
        model.stop()


def test_health_liveness_fields(pair: Pair) -> None:
    lr, hx = (r.json() for r in pair.both("GET", "/health"))
    assert {k: hx[k] for k in LIVENESS} == {k: lr[k] for k in LIVENESS}
    assert hx["status"] == "healthy"
    for key in ("server_mode", "pipeline_scanning", "pipeline_destructive_busy",
                "pipeline_pending_enqueues"):
        assert hx[key] == lr[key], key
    for key in ("working_directory", "input_directory", "workers"):
        assert key in hx, key  # values of each server's own process and directories
    assert all(s["status"] == "ok" for s in hx["stores"].values())


QUERIES = [("mix", "Who works at Acme Corporation?"), ("local", "Who leads Globex Industries?"),
           ("global", "What do Widgets power?"), ("naive", "What does Initech supply?"),
           ("hybrid", "Who founded Initech?"),
           ("naive", "Initech makes Staplers in Austin. Dave Brown founded Initech.")]


@pytest.mark.parametrize("mode,query", QUERIES)
def test_query_and_query_data(pair: Pair, mode: str, query: str) -> None:
    body = {"query": query, "mode": mode, "include_references": True,
            "include_chunk_content": True}
    lr, hx = pair.both("POST", "/query", json=body)
    assert hx.status_code == lr.status_code == 200, (lr.text, hx.text)
    lr_body, hx_body = lr.json(), hx.json()
    assert hx_body["references"] == lr_body["references"]
    assert hx_body["response"] == lr_body["response"]
    assert hx_body["llm_generated"] == lr_body["llm_generated"]
    assert hx_body["references"] or mode != "mix"
    lr, hx = pair.both("POST", "/query/data", json={"query": query, "mode": mode})
    assert hx.status_code == lr.status_code == 200, (lr.text, hx.text)
    lr_data, hx_data = lr.json(), hx.json()
    assert (hx_data["status"], hx_data["message"]) == (lr_data["status"], lr_data["message"])
    assert set(lr_data) <= set(hx_data)
    assert set(lr_data["data"]) <= set(hx_data["data"])
    for part in lr_data["data"]:
        assert hx_data["data"][part] == lr_data["data"][part], part
    # a real retrieval, not an empty one (but for a naive question under the stand-in
    # embedder's cosine threshold: "no_results" on both)
    assert lr_data["data"].get("chunks") or query == "What does Initech supply?"
    assert _subset(lr_data["metadata"], hx_data["metadata"])  # hexrag may add fields


def _subset(lr: Any, hx: Any) -> bool:
    """``hx`` holds every field of ``lr`` with its value (dicts recursively)."""
    if isinstance(lr, dict):
        return isinstance(hx, dict) and all(k in hx and _subset(v, hx[k])
                                            for k, v in lr.items())
    return bool(lr == hx)


@pytest.mark.parametrize("mode,query", QUERIES[:4])
@pytest.mark.parametrize("stream", [True, False])
def test_query_stream_progress(pair: Pair, mode: str, query: str, stream: bool) -> None:
    body = {"query": query, "mode": mode, "stream": stream, "include_progress": True,
            "include_chunk_content": True}
    lr, hx = (ndjson(r) for r in pair.both("POST", "/query/stream", json=body))
    progress = [x["progress"] for x in lr if "progress" in x]
    assert progress, lr
    assert [x["progress"] for x in hx if "progress" in x] == progress
    assert all("progress" in x for x in hx[:len(progress)])
    assert [x["references"] for x in hx if "references" in x] == [
        x["references"] for x in lr if "references" in x]
    assert "".join(x.get("response", "") for x in hx) == "".join(
        x.get("response", "") for x in lr)


CHATS = ["Who works at Acme Corporation?", "/local Who manages the Rockets program?",
         "/global How are Widgets and Rovers related?", "/naive What does Initech make?",
         "/mix Who leads Globex Industries?", "/context Where is Initech?"]


@pytest.mark.parametrize("text", CHATS)
def test_ollama_chat(pair: Pair, text: str) -> None:
    body = {"model": "lightrag:latest", "stream": False,
            "messages": [{"role": "user", "content": text}]}
    lr, hx = pair.both("POST", "/api/chat", json=body)
    assert (hx.status_code, untimed(hx.json())) == (lr.status_code, untimed(lr.json()))
    assert hx.json()["message"]["content"]
    lr_lines, hx_lines = (ndjson(r) for r in pair.both(
        "POST", "/api/chat", json={**body, "stream": True}))
    assert "".join(x["message"]["content"] for x in hx_lines) == "".join(
        x["message"]["content"] for x in lr_lines)
    assert untimed(hx_lines[-1]) == untimed(lr_lines[-1])


@pytest.mark.parametrize("prompt", ["/local Who manages the Rockets program?",
                                    "Name the companies: Acme and Globex."])
def test_ollama_generate(pair: Pair, prompt: str) -> None:
    body = {"model": "lightrag:latest", "prompt": prompt, "system": "You are terse."}
    lr, hx = pair.both("POST", "/api/generate", json=body)
    assert (hx.status_code, untimed(hx.json())) == (lr.status_code, untimed(lr.json()))
    lr_lines, hx_lines = (ndjson(r) for r in pair.both(
        "POST", "/api/generate", json={**body, "stream": True}))
    assert "".join(x["response"] for x in hx_lines) == "".join(x["response"]
                                                             for x in lr_lines)
    assert untimed(hx_lines[-1]) == untimed(lr_lines[-1])


VARIANTS = [
    {"mode": "mix", "only_need_context": True},
    {"mode": "local", "only_need_prompt": True},
    {"mode": "hybrid", "response_type": "Bullet Points", "top_k": 3, "chunk_top_k": 2},
    {"mode": "mix", "conversation_history": [
        {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."}]},
    {"mode": "local", "hl_keywords": ["leadership"], "ll_keywords": ["Carol White"]},
    {"mode": "bypass"},
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(sorted(v)))
def test_query_parameters(pair: Pair, variant: dict[str, Any]) -> None:
    body = {"query": "Who leads Globex Industries?", "include_references": True, **variant}
    lr, hx = pair.both("POST", "/query", json=body)
    assert hx.status_code == lr.status_code == 200, (lr.text, hx.text)
    lr_body, hx_body = lr.json(), hx.json()
    for answer in (lr_body, hx_body):  # a duration: its type only
        assert isinstance(answer.pop("response_time"), (int, float))
    assert hx_body == lr_body
    assert hx_body["response"]
    lr, hx = pair.both("POST", "/query/data", json=body)
    assert hx.status_code == lr.status_code == 200, (lr.text, hx.text)
    lr_data, hx_data = lr.json(), hx.json()
    assert (hx_data["status"], hx_data["message"]) == (lr_data["status"], lr_data["message"])
    for part in lr_data["data"]:
        assert hx_data["data"][part] == lr_data["data"][part], part
    assert _subset(lr_data["metadata"], hx_data["metadata"])
