"""The HTTP API over real HTTP: uvicorn on a free loopback port, httpx as the client.

Engines run over the demo knowledge base: with the recording ``FakeLLM``, with no LLM, with a
chunk store whose server is down (a Redis URL nobody listens on), and with ``OpenAILLM`` talking
to the scripted OpenAI-compatible server (streaming, a stream cut mid-way, a failing model).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from hexrag.adapters.memory import FakeLLM, MemoryCache
from hexrag.api import create_app
from hexrag.core.model import Entity
from hexrag.core.query.engine import QueryEngine
from hexrag.core.versioning import CorpusVersion, track_writes
from hexrag.demo import DEFAULT_QUESTION, DemoStack, build_demo_engine
from hexrag.devtools.scripted_openai import Reply, ScriptedOpenAIServer
from tests.integration.live import LiveServer

Q = DEFAULT_QUESTION
KEYWORDS = {"hl_keywords": ["single sign-on"], "ll_keywords": ["Okta", "SSO"]}


def _demo() -> DemoStack:
    # Memory adapters are not bound to an event loop: build here, serve from uvicorn's loop.
    return asyncio.run(build_demo_engine())


@dataclass
class Served:
    server: LiveServer
    engine: QueryEngine
    llm: Any = None
    demo: DemoStack | None = None

    @property
    def http(self) -> httpx.Client:
        return self.server.client


def _serve(engine: QueryEngine, **served: Any) -> Iterator[Served]:
    server = LiveServer(create_app(engine))
    try:
        yield Served(server, engine, **served)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def api() -> Iterator[Served]:
    """The demo with a recording FakeLLM, an answer cache and corpus versioning."""
    demo = _demo()
    cache = MemoryCache()
    version = CorpusVersion(cache)
    stores = track_writes(
        version, entities=demo.entities, relationships=demo.relationships, chunks=demo.chunks,
        graph=demo.graph, chunk_store=demo.chunk_store,
    )
    llm = FakeLLM()
    engine = QueryEngine(**stores, embedder=demo.engine.embedder, llm=llm, cache=cache,
                         corpus_version=version, tokenizer=demo.engine.tokenizer)
    yield from _serve(engine, llm=llm, demo=demo)


@pytest.fixture(scope="module")
def no_llm_api() -> Iterator[Served]:
    """The demo without any LLM, and with one chunk's text missing from the chunk store."""
    demo = _demo()
    asyncio.run(demo.chunk_store.delete_chunks(["doc-crm-overview-chunk-000"]))
    yield from _serve(demo.engine, demo=demo)


@pytest.fixture(scope="module")
def broken_api() -> Iterator[Served]:
    """The demo with its chunk store on a Redis server that is not running."""
    pytest.importorskip("redis", reason="needs the redis extra: pip install 'hexrag[redis]'")
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from hexrag.adapters.redis import RedisChunkStore

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    demo = _demo()
    down = RedisChunkStore.from_url(f"redis://127.0.0.1:{port}/0", retry=Retry(NoBackoff(), 0))
    engine = QueryEngine(
        tokenizer=demo.engine.tokenizer,
        entities=demo.entities, relationships=demo.relationships, chunks=demo.chunks,
        graph=demo.graph, chunk_store=down, embedder=demo.engine.embedder, llm=FakeLLM(),
    )
    yield from _serve(engine)


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def openai_api(model_server: ScriptedOpenAIServer) -> Iterator[Served]:
    """The demo answered by OpenAILLM through the scripted OpenAI-compatible server."""
    pytest.importorskip("openai", reason="needs the openai extra: pip install 'hexrag[openai]'")
    import openai

    from hexrag.adapters.openai import OpenAILLM

    demo = _demo()
    client = openai.AsyncOpenAI(base_url=model_server.base_url, api_key="test")
    llm = OpenAILLM(client, model="scripted-model", max_retries=0, timeout=10)
    engine = QueryEngine(
        tokenizer=demo.engine.tokenizer,
        entities=demo.entities, relationships=demo.relationships, chunks=demo.chunks,
        graph=demo.graph, chunk_store=demo.chunk_store, embedder=demo.engine.embedder, llm=llm,
    )
    yield from _serve(engine, llm=llm)


def _ndjson(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def _answers(llm: FakeLLM) -> int:
    return sum(1 for c in llm.calls if not c.json_mode)


def _metric(text: str, name: str, **labels: str) -> float:
    """The value of one Prometheus sample (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        if head == (f"{name}{{{want}}}" if want else name):
            return float(value)
    return 0.0


# ----------------------------------------------------------------------------- /query


def test_query_answers_with_references_and_serves_a_repeat_from_the_cache(api: Served) -> None:
    before = _answers(api.llm)
    r = api.http.post("/query", json={"query": Q, "mode": "mix"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == ["response", "references", "response_time", "llm_generated"]
    assert body["response"].startswith("Answer: ")
    assert body["llm_generated"] is True
    refs = body["references"]
    # LightRAG's ReferenceItem: content null unless include_chunk_content
    assert refs and all(ref == {"reference_id": ref["reference_id"], "file_path": ref["file_path"],
                                "content": None} for ref in refs)
    assert _answers(api.llm) == before + 1

    hits = _metric(api.http.get("/metrics").text, "hexrag_answer_cache_hits_total")
    again = api.http.post("/query", json={"query": Q, "mode": "mix"}).json()
    assert again["response"] == body["response"]
    assert _answers(api.llm) == before + 1  # no model call: the cache answered
    metrics = api.http.get("/metrics").text
    assert _metric(metrics, "hexrag_answer_cache_hits_total") == hits + 1


def test_query_include_chunk_content_and_no_references(api: Served) -> None:
    body = api.http.post(
        "/query", json={"query": Q, "mode": "naive", "include_chunk_content": True}
    ).json()
    data = api.http.post("/query/data", json={"query": Q, "mode": "naive"}).json()
    by_ref: dict[str, list[str]] = {}
    for chunk in data["data"]["chunks"]:
        by_ref.setdefault(chunk["reference_id"], []).append(chunk["content"])
    assert body["references"]
    for ref in body["references"]:
        assert ref["content"] == by_ref[ref["reference_id"]]
    body = api.http.post("/query", json={"query": Q, "include_references": False}).json()
    assert body["references"] is None


def test_query_only_need_context_needs_no_llm(no_llm_api: Served) -> None:
    r = no_llm_api.http.post("/query", json={"query": Q, "only_need_context": True})
    assert r.status_code == 200
    assert "Knowledge Graph Data (Entity)" in r.json()["response"]
    assert r.json()["llm_generated"] is False


def test_query_without_an_llm_is_503_with_a_readable_message(no_llm_api: Served) -> None:
    r = no_llm_api.http.post("/query", json={"query": Q})
    assert r.status_code == 503
    body = r.json()
    assert "no LLM is configured" in body["detail"]
    assert body["error_id"] in body["detail"]
    assert "Traceback" not in r.text


def test_a_write_through_the_stack_is_never_answered_from_the_cache(api: Served) -> None:
    payload = {"query": Q, "mode": "local", "response_type": "Single Paragraph"}
    first = api.http.post("/query", json=payload).json()["response"]
    calls = _answers(api.llm)
    assert api.http.post("/query", json=payload).json()["response"] == first
    assert _answers(api.llm) == calls
    # A write through the engine's (tracked) stores, while the server is idle.
    unrelated = Entity(name="Unrelated", description="x")
    asyncio.run(api.engine.stores.graph.upsert_nodes([unrelated]))
    api.http.post("/query", json=payload)
    assert _answers(api.llm) == calls + 1


# ----------------------------------------------------------------------------- /query/stream


def test_stream_sends_references_then_pieces_then_done(api: Served) -> None:
    payload = {"query": Q, "mode": "hybrid", "response_type": "Bullet Points"}
    with api.http.stream("POST", "/query/stream", json=payload) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/x-ndjson")
        assert r.headers["cache-control"] == "no-cache"
        r.read()
    lines = _ndjson(r)
    assert list(lines[0]) == ["references"] and lines[0]["references"]
    pieces = [line["response"] for line in lines[1:-1]]
    assert len(pieces) > 1 and all(list(line) == ["response"] for line in lines[1:-1])
    assert lines[-1]["status"] == "done" and "response_time" in lines[-1]
    last = api.llm.calls[-1]
    assert last.stream is True
    # the pieces add up to the model's answer for that prompt
    from hexrag.adapters.memory import default_answer

    assert "".join(pieces) == default_answer(last.prompt, last.system_prompt)


def test_stream_of_a_cached_answer_is_one_line_then_done(api: Served) -> None:
    payload = {"query": Q, "mode": "global"}
    api.http.post("/query", json=payload)  # fills the cache
    lines = _ndjson(api.http.post("/query/stream", json=payload))
    assert list(lines[0]) == ["response", "llm_generated", "references"]
    assert lines[0]["response"].startswith("Answer: ")
    assert lines[-1]["status"] == "done"
    assert len(lines) == 2


def test_stream_with_the_scripted_openai_server(
    openai_api: Served, model_server: ScriptedOpenAIServer
) -> None:
    model_server.reset()
    model_server.script("chat", Reply.text("Okta SSO is set up in Settings.",
                                           pieces=["Okta SSO ", "is set up ", "in Settings."]))
    payload = {"query": Q, "mode": "mix", "include_references": False, **KEYWORDS}
    lines = _ndjson(openai_api.http.post("/query/stream", json=payload))
    assert lines == [
        {"response": "Okta SSO "},
        {"response": "is set up "},
        {"response": "in Settings."},
        lines[-1],
    ]
    assert lines[-1]["status"] == "done"
    assert model_server.requests_for("chat")[0].body["stream"] is True


def test_a_model_failing_mid_stream_ends_with_a_failed_line(
    openai_api: Served, model_server: ScriptedOpenAIServer
) -> None:
    model_server.reset()
    model_server.script(
        "chat", Reply(content="one two three four", pieces=("one ", "two ", "three ", "four"),
                      abort_after=2)
    )
    payload = {"query": Q, "mode": "mix", **KEYWORDS}
    r = openai_api.http.post("/query/stream", json=payload)
    assert r.status_code == 200  # the stream had started
    lines = _ndjson(r)
    assert "references" in lines[0]
    assert [line.get("response") for line in lines[1:-1]] == ["one ", "two "]
    final = lines[-1]
    assert final["status"] == "failed"
    assert final["error"] and len(final["error_id"]) == 12
    assert "Traceback" not in r.text


def test_a_model_failing_before_the_answer_is_503_with_an_error_id(
    openai_api: Served, model_server: ScriptedOpenAIServer
) -> None:
    model_server.reset()
    model_server.script("chat", Reply.server_error(503, "overloaded"))
    r = openai_api.http.post("/query", json={"query": Q, **KEYWORDS})
    assert r.status_code == 503
    body = r.json()
    assert "openai" in body["detail"] and body["error_id"] in body["detail"]


# ----------------------------------------------------------------------------- /query/data


def test_query_data_has_the_lightrag_shape_and_honours_scope(api: Served) -> None:
    r = api.http.post(
        "/query/data",
        json={"query": Q, "mode": "hybrid", "scope": {"product_id": "p-crm"}},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == ["status", "message", "data", "metadata"]
    assert (body["status"], body["message"]) == ("success", "Query processed successfully")
    assert list(body["data"]) == ["entities", "relationships", "chunks", "references"]
    chunks = body["data"]["chunks"]
    assert chunks and all(c["file_path"].startswith("acme-crm/") for c in chunks)
    assert set(chunks[0]) == {"reference_id", "content", "file_path", "chunk_id"}
    meta = body["metadata"]
    assert meta["query_mode"] == "hybrid"
    assert set(meta["keywords"]) == {"high_level", "low_level"}
    info = meta["processing_info"]
    for key in ("total_entities_found", "total_relations_found", "entities_after_truncation",
                "relations_after_truncation", "merged_chunks_count", "final_chunks_count"):
        assert isinstance(info[key], int)
    assert info["scope"]["applied"] is True
    assert info["scope"]["filter"] == {"product_id": ["p-crm"]}
    assert "missing_chunk_count" in info and "keyword_source" in info

    unscoped = api.http.post("/query/data", json={"query": Q, "mode": "hybrid"}).json()
    assert any(not c["file_path"].startswith("acme-crm/") for c in unscoped["data"]["chunks"])


def test_query_data_reports_missing_chunks_in_data_and_metrics(no_llm_api: Served) -> None:
    before = _metric(no_llm_api.http.get("/metrics").text, "hexrag_missing_chunks_total")
    body = no_llm_api.http.post("/query/data", json={"query": Q, "mode": "mix"}).json()
    info = body["metadata"]["processing_info"]
    assert info["missing_chunk_count"] >= 1
    assert "doc-crm-overview-chunk-000" in info["missing_chunk_sample"]
    metrics = no_llm_api.http.get("/metrics").text
    assert _metric(metrics, "hexrag_missing_chunks_total") == before + info["missing_chunk_count"]


# ----------------------------------------------------------------------------- validation

LONG = "q" * 65536
VALIDATION_CASES: dict[str, Any] = {
    "empty query": {"query": ""},
    "blank query": {"query": "   "},
    "missing query": {"mode": "mix"},
    "query not a string": {"query": 5},
    "too short": {"query": "ab"},
    "one CJK character": {"query": "中"},
    "query too long": {"query": LONG + "q"},
    "top_k 0": {"query": Q, "top_k": 0},
    "top_k 1001": {"query": Q, "top_k": 1001},
    "empty response_type": {"query": Q, "response_type": ""},
    "65 keywords": {"query": Q, "hl_keywords": ["k"] * 65},
    "keyword of 513 chars": {"query": Q, "ll_keywords": ["x" * 513]},
    "history without role": {"query": Q, "conversation_history": [{"content": "hi"}]},
    "history content not a string": {
        "query": Q, "conversation_history": [{"role": "user", "content": None}]
    },
    "aggregate too long": {
        "query": LONG, "user_prompt": "u" * 65536,
        "conversation_history": [{"role": "user", "content": "x"}],
    },
    "unknown mode": {"query": Q, "mode": "fast"},
    "unknown scope field": {"query": Q, "scope": {"tenant": "t1"}},
    "empty scope value": {"query": Q, "scope": {"product_id": ""}},
    "empty scope list": {"query": Q, "scope": {"category_id": []}},
    "scope value not a string": {"query": Q, "scope": {"doc_ids": [7]}},
}


@pytest.mark.parametrize("case", list(VALIDATION_CASES))
def test_validation_errors_are_4xx_never_500(api: Served, case: str) -> None:
    payload = VALIDATION_CASES[case]
    for path in ("/query", "/query/stream"):
        r = api.http.post(path, json=payload)
        assert r.status_code == 422, (path, r.status_code, r.text[:300])
        detail = r.json()["detail"]
        assert isinstance(detail, list) and detail and all("msg" in d for d in detail)
        assert "Traceback" not in r.text
    r = api.http.post("/query/data", json=payload)
    assert r.status_code == 400, r.text[:300]
    body = r.json()
    assert body["status"] == "failure"
    assert body["message"].startswith("Validation error: ")
    assert (body["data"], body["metadata"]) == ({}, {})
    assert "Traceback" not in r.text


def test_a_body_that_is_not_json_is_4xx(api: Served) -> None:
    headers = {"content-type": "application/json"}
    assert api.http.post("/query", content=b"{not json", headers=headers).status_code == 422
    assert api.http.post("/query/data", content=b"{not json", headers=headers).status_code == 400


# ----------------------------------------------------------------------------- failures, ops


def test_a_backend_that_is_down_is_503_with_an_error_id(broken_api: Served) -> None:
    r = broken_api.http.post("/query/data", json={"query": Q, "mode": "mix"})
    assert r.status_code == 503
    body = r.json()
    assert "redis" in body["detail"] and len(body["error_id"]) == 12
    assert "Traceback" not in r.text
    r = broken_api.http.post("/query", json={"query": Q})
    assert r.status_code == 503


def test_health_probes_every_store(api: Served, broken_api: Served) -> None:
    r = api.http.get("/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "healthy" and body["llm"] is True
    assert set(body["stores"]) == {"entities", "relationships", "chunks", "graph", "chunk_store"}
    assert all(s["status"] == "ok" for s in body["stores"].values())
    assert body["stores"]["chunk_store"]["count"] >= 9

    r = broken_api.http.get("/health")
    assert r.status_code == 503
    body = r.json()
    assert body["status"] == "degraded"
    assert body["stores"]["chunk_store"]["status"] == "error"
    assert "BackendUnavailable" in body["stores"]["chunk_store"]["error"]
    assert body["stores"]["graph"]["status"] == "ok"


def test_metrics_count_queries_by_endpoint_and_mode(api: Served) -> None:
    def count(text: str) -> float:
        return _metric(text, "hexrag_queries_total",
                       endpoint="/query/data", mode="naive", status="success")

    before_text = api.http.get("/metrics").text
    with_chunks = _metric(before_text, "hexrag_chunk_retrieval_total", outcome="with_chunks")
    api.http.post("/query/data", json={"query": Q, "mode": "naive"})
    r = api.http.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert count(text) == count(before_text) + 1
    assert _metric(text, "hexrag_chunk_retrieval_total", outcome="with_chunks") == with_chunks + 1
    assert "hexrag_query_latency_seconds_bucket" in text
    assert "# TYPE hexrag_missing_chunks_total counter" in text
    assert "# TYPE hexrag_answer_cache_hits_total counter" in text


def test_openapi_lists_the_endpoints(api: Served) -> None:
    spec = api.http.get("/openapi.json").json()
    for path in ("/query", "/query/stream", "/query/data", "/health", "/metrics"):
        assert path in spec["paths"], path
    request = spec["components"]["schemas"]["QueryRequest"]["properties"]
    assert "scope" in request and "conversation_history" in request
    assert api.http.get("/docs").status_code == 200
