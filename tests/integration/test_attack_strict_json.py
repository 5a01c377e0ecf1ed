"""Issue 20, holes 5 and 6, over real HTTP: strict JSON bodies and bounded scope echoes.

The server answers with a real LLM adapter (:class:`~hexrag.adapters.openai.OpenAILLM`
against the scripted OpenAI-compatible server on loopback), because that is where the 500
came from: the adapter sends every field of each ``conversation_history`` message as JSON,
and NaN, ±Infinity, ``1e999`` or a lone surrogate in an extra field made it raise. Every
variant, in history extras, in unknown top-level fields, nested or not, in values and keys,
must be a short 4xx on every JSON route - never a 5xx, never a 200 stream with a failed line
- while valid requests with unknown fields still succeed, and a 1 MB scope value must not be
echoed back in ``processing_info``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hexrag.api.limits import ApiSettings
from hexrag.api.strict_json import LOCATE_MAX_BYTES, MAX_NUMBER_CHARS, json_body_problem
from hexrag.core.errors import InvalidQuery
from hexrag.core.model import QueryParam, QueryScope
from hexrag.core.query.engine import QueryEngine
from hexrag.core.query.run import ECHO_VALUE_CHARS, ECHO_VALUES, RunStats
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from hexrag.devtools.scripted_openai import ScriptedOpenAIServer
from tests.integration.live import LiveServer
from tests.integration.scripted_demo import scripted_demo_app

openai = pytest.importorskip("openai", reason="the openai extra: pip install 'hexrag[openai]'")

Q = DEFAULT_QUESTION
MAX_REJECTION_BYTES = 4096

#: Raw JSON values the strict parser refuses (the source text, as a hostile client sends it).
BAD_VALUES = {
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "1e999": "1e999",
    "-1e999": "-1e999",
    "5000-digit int": "1" + "0" * 5000,
    f"{MAX_NUMBER_CHARS + 1}-digit int": "9" * (MAX_NUMBER_CHARS + 1),
    "long float": "0." + "1" * MAX_NUMBER_CHARS,
    "lone high surrogate": '"ab\\ud800cd"',
    "lone low surrogate": '"\\udfff"',
    "lone surrogate in a key": '{"\\ud800": 1}',
    "NUL in a value": '"a\\u0000b"',
    "NUL in a key": '{"k\\u0000": "v"}',
}


def _placements(value: str) -> dict[str, str]:
    """Where a bad value hides in a /query body (known and unknown fields, nested or not)."""
    history = (
        '[{"role": "user", "content": "What is Acme CRM?", "name": "u1", '
        f'"meta": {{"client": {{"deep": [1, 2, {{"x": {value}}}]}}}}}},'
        ' {"role": "assistant", "content": "A CRM."}]'
    )
    return {
        "history extra": (
            f'{{"query": "{Q}", "conversation_history": [{{"role": "user", '
            f'"content": "hi", "x": {value}}}]}}'
        ),
        "history extra, nested deep": f'{{"query": "{Q}", "conversation_history": {history}}}',
        "unknown top-level field": f'{{"query": "{Q}", "client_version": {value}}}',
        "unknown field, nested": f'{{"query": "{Q}", "client": {{"opts": [{{"a": {value}}}]}}}}',
    }


def _document_bodies(value: str) -> dict[str, tuple[str, str, str]]:
    """(method, path, body) of the JSON document routes, with a bad value in an unknown field."""
    return {
        "/documents/text": ("POST", "/documents/text",
                            f'{{"text": "Acme CRM syncs contacts.", "meta": {{"v": [{value}]}}}}'),
        "/documents/texts": ("POST", "/documents/texts",
                             f'{{"texts": ["Acme CRM syncs contacts."], "extra": {value}}}'),
        "/documents/delete_document": (
            "DELETE", "/documents/delete_document",
            f'{{"doc_ids": ["doc-nothing"], "client": {{"x": {value}}}}}',
        ),
    }


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(model_server: ScriptedOpenAIServer) -> Iterator[LiveServer]:
    """The demo answered by OpenAILLM (scripted server), with the document routes enabled."""
    live = LiveServer(scripted_demo_app(model_server.base_url, ApiSettings()))
    yield live
    live.stop()


def _send(server: LiveServer, method: str, path: str, body: str, **headers: str) -> Any:
    return server.client.request(
        method, path, content=body.encode("utf-8"),
        headers={"content-type": "application/json", **headers},
    )


def _strictly_refused(r: Any, path: str) -> str:
    """A short 4xx in the route's own error shape, itself strict JSON, echoing nothing."""
    assert r.status_code < 500, (path, r.status_code, r.text[:300])
    assert len(r.content) <= MAX_REJECTION_BYTES, f"{len(r.content)}-byte rejection"
    assert json_body_problem(r.content) is None  # no NaN, no surrogate in the answer
    assert b"\\ud800" not in r.content and b"\\u0000" not in r.content
    body = r.json()
    if path == "/query/data":  # LightRAG's failure body, 400, like its other refusals
        assert r.status_code == 400, r.text[:300]
        assert body["status"] == "failure" and body["data"] == {} and body["metadata"] == {}
        message: str = body["message"]
    else:
        assert r.status_code == 422, (path, r.text[:300])
        assert isinstance(body["detail"], list) and body["detail"][0]["loc"][0] == "body"
        message = body["detail"][0]["msg"]
    assert "Traceback" not in r.text and "failed" not in r.text
    return message


@pytest.mark.parametrize("variant", list(BAD_VALUES))
def test_query_routes_refuse_every_variant_before_the_llm(
    server: LiveServer, model_server: ScriptedOpenAIServer, variant: str
) -> None:
    chats = model_server.count("chat")
    for where, body in _placements(BAD_VALUES[variant]).items():
        for path in ("/query", "/query/stream", "/query/data"):
            r = _send(server, "POST", path, body)
            message = _strictly_refused(r, path)
            assert message, (variant, where, path)
            # a stream never started: no NDJSON "failed" line behind a 200
            assert not r.headers.get("content-type", "").startswith("application/x-ndjson")
    assert model_server.count("chat") == chats, "a refused request reached the model"


@pytest.mark.parametrize("variant", list(BAD_VALUES))
def test_document_routes_refuse_every_variant(server: LiveServer, variant: str) -> None:
    def documents() -> int:
        r = server.client.get("/documents")
        assert r.status_code == 200
        return sum(len(v) for v in r.json()["statuses"].values())

    before = documents()
    for name, (method, path, body) in _document_bodies(BAD_VALUES[variant]).items():
        _strictly_refused(_send(server, method, path, body), name)
    assert documents() == before  # nothing was queued by a refused insert


def test_the_refusal_names_the_place_not_the_value(server: LiveServer) -> None:
    body = _placements("NaN")["history extra, nested deep"]
    r = _send(server, "POST", "/query", body)
    detail = r.json()["detail"][0]
    assert detail["loc"] == ["body", "conversation_history", 0, "meta", "client", "deep", 2, "x"]
    assert detail["msg"] == "NaN is not valid JSON"
    data = _send(server, "POST", "/query/data", body).json()
    assert data["message"].startswith("Validation error: body -> conversation_history -> 0")
    key = _send(server, "POST", "/query", _placements('{"\\ud800": 1}')["history extra"])
    assert key.json()["detail"][0]["msg"] == "a key contains a lone surrogate (not valid Unicode)"


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8",
                                          "Application/JSON", "application/merge-patch+json"])
def test_every_json_content_type_is_checked(server: LiveServer, content_type: str) -> None:
    """FastAPI parses a body as JSON with any ``application/json`` or ``+json`` type."""
    body = _placements("Infinity")["unknown top-level field"].encode()
    r = server.client.post("/query", content=body, headers={"content-type": content_type})
    _strictly_refused(r, "/query")


def test_valid_requests_with_unknown_fields_still_succeed(
    server: LiveServer, model_server: ScriptedOpenAIServer
) -> None:
    history = [
        {"role": "user", "content": "What is Acme CRM?", "name": "u1",
         "meta": {"score": 1.5, "n": 10**200, "tags": ["a", "é", "😀"], "none": None}},
        {"role": "assistant", "content": "A CRM."},
    ]
    body = {"query": Q, "conversation_history": history, "client_version": "9.9",
            "extra": {"nested": [1, -2.5e10, True, {"k": "v"}]}}
    before = model_server.count("chat")
    r = server.client.post("/query", json=body)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["llm_generated"] is True
    sent = model_server.requests_for("chat")[before:]
    assert sent, "the model was not asked"
    forwarded = sent[-1].body["messages"]
    assert forwarded[1]["meta"]["n"] == 10**200  # extras travel to the model (as LightRAG's)

    stream = server.client.post("/query/stream", json=body)
    assert stream.status_code == 200
    lines = [json.loads(x) for x in stream.text.splitlines() if x.strip()]
    assert lines[-1]["status"] == "done" and not any(x.get("status") == "failed" for x in lines)

    data = server.client.post("/query/data", json=body)
    assert data.status_code == 200 and data.json()["status"] == "success"

    insert = server.client.post("/documents/text",
                                json={"text": "Acme Pager pages the on-call engineer.",
                                      "client": {"v": 2.5}})
    assert insert.status_code == 200 and insert.json()["status"] == "success", insert.text
    delete = server.client.request("DELETE", "/documents/delete_document",
                                   json={"doc_ids": ["doc-nothing"], "client": {"v": 1}})
    assert delete.status_code == 200, delete.text


def test_multipart_uploads_are_not_read_as_json(server: LiveServer) -> None:
    files = {"file": ("nan.md", b'{"a": NaN, "b": "\\ud800"} Acme Ledger handles invoices.')}
    r = server.client.post("/documents/upload", files=files)
    assert r.status_code == 200 and r.json()["status"] == "success", r.text[:300]


def test_a_1mb_scope_value_is_not_echoed(server: LiveServer) -> None:
    value = "p" * 1_000_000
    r = server.client.post("/query/data", json={"query": Q, "scope": {"product_id": value}})
    assert r.status_code == 200, r.text[:300]
    assert len(r.content) < 20_000, f"{len(r.content)}-byte answer"
    scope = r.json()["metadata"]["processing_info"]["scope"]
    [shown] = scope["filter"]["product_id"]
    assert shown.startswith("p" * ECHO_VALUE_CHARS)
    assert shown.endswith(f"(+{1_000_000 - ECHO_VALUE_CHARS} chars)")

    many = [f"p-{i:04d}-" + "x" * 3000 for i in range(256)]  # 256 values (the limit), 780 KB
    r = server.client.post("/query/data", json={"query": Q, "product_id": many})
    assert r.status_code == 200, r.text[:300]
    assert len(r.content) < 20_000, f"{len(r.content)}-byte answer"
    scope = r.json()["metadata"]["processing_info"]["scope"]
    assert len(scope["filter"]["product_id"]) == ECHO_VALUES
    assert scope["filter_omitted"] == {"product_id": 256 - ECHO_VALUES}

    small = server.client.post("/query/data", json={"query": Q, "product_id": ["p-crm", "p-x"]})
    scope = small.json()["metadata"]["processing_info"]["scope"]
    assert scope["filter"] == {"product_id": ["p-crm", "p-x"]} and "filter_omitted" not in scope


def test_a_big_refused_body_is_not_walked_to_name_the_place(server: LiveServer) -> None:
    """Naming the place takes a Python walk of the parsed body; a body over LOCATE_MAX_BYTES
    (here 800 KB of tiny objects with decoys that look like NUL escapes, the real NUL last)
    is refused at C speed, at ``["body"]`` with the kind of problem. A small one is named."""

    def body(n: int) -> str:
        items = [{"a": [f"d{i:06d}\\u0000"]} for i in range(n)]  # literal text, not a NUL
        text = json.dumps({"query": Q, "client": items, "z": "NUL"})
        return text.replace('"z": "NUL"', '"z": "\\u0000"')  # a real NUL, last of all

    big, small = body(30_000), body(10)
    assert len(big) > LOCATE_MAX_BYTES > len(small)
    r = _send(server, "POST", "/query", big)
    assert _strictly_refused(r, "/query") == "a string or key contains a NUL character"
    assert r.json()["detail"][0]["loc"] == ["body"]
    r = _send(server, "POST", "/query", small)
    assert _strictly_refused(r, "/query") == "string contains a NUL character"
    assert r.json()["detail"][0]["loc"] == ["body", "z"]
    for decoys_only in (body(30_000).replace('"z": "\\u0000"', '"z": "x"'),
                        body(10).replace('"z": "\\u0000"', '"z": "x"')):
        ok = _send(server, "POST", "/query/data", decoys_only)
        assert ok.status_code == 200, ok.text[:300]


# ------------------------------------------------------------------ the core, without the API


def test_the_core_refuses_history_its_llm_cannot_send(model_server: ScriptedOpenAIServer) -> None:
    """Without the middleware (a library caller), the engine refuses such history with a typed
    InvalidQuery before calling the model, instead of the adapter failing mid-request."""
    from hexrag.adapters.openai import OpenAILLM

    async def run() -> list[str]:
        demo = await build_demo_engine()
        client = openai.AsyncOpenAI(base_url=model_server.base_url, api_key="test")
        llm = OpenAILLM(client, model="scripted-model", max_retries=0, timeout=10)
        engine = QueryEngine(
            tokenizer=demo.engine.tokenizer,
            entities=demo.entities, relationships=demo.relationships, chunks=demo.chunks,
            graph=demo.graph, chunk_store=demo.chunk_store, embedder=demo.engine.embedder,
            llm=llm,
        )
        messages = []
        for extra in (float("nan"), float("inf"), -float("inf"), {"deep": [{"x": "\ud800"}]},
                      {"\udc00": 1}):
            history = [{"role": "user", "content": "hi", "x": extra}]
            for stream in (False, True):
                with pytest.raises(InvalidQuery) as caught:
                    await engine.query_result(
                        Q, QueryParam(conversation_history=history, stream=stream)
                    )
                messages.append(str(caught.value))
        assert model_server.count("chat") == chats, "a refused history reached the model"
        ok = await engine.query_result(
            Q, QueryParam(conversation_history=[{"role": "user", "content": "hi", "x": 1.5}])
        )
        assert ok.llm_generated
        return messages

    chats = model_server.count("chat")
    messages = asyncio.run(run())
    assert all(m.startswith("conversation_history message 0: ") for m in messages), messages
    assert model_server.count("chat") > chats  # the valid one did


def test_the_scope_echo_is_bounded_in_the_core() -> None:
    scope = QueryScope(product_id=["a" * 500, "b"], doc_ids=[f"d{i}" for i in range(50)])
    info = RunStats().processing_info(scope, 5)["scope"]
    assert info["filter"]["product_id"] == ("a" * ECHO_VALUE_CHARS + "…(+300 chars)", "b")
    assert info["filter"]["doc_ids"] == tuple(f"d{i}" for i in range(ECHO_VALUES))
    assert info["filter_omitted"] == {"doc_ids": 50 - ECHO_VALUES}
    assert RunStats().processing_info(None, 5)["scope"]["filter"] == {}
