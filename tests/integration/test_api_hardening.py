"""The API under hostile input, over real HTTP (uvicorn on loopback, httpx and raw sockets).

Every attack class of the hardening issue: non-finite numbers, lone surrogates, NUL bytes,
keep-alive after a server error, huge scope lists, huge bodies, echoed input, top-level scope
fields, the API key, CORS, offline docs, honest health and the query timeout. Each answer must
be a short 4xx (never >= 500 for bad input) that does not echo the input.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hexrag.adapters.memory import (
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.api import create_app
from hexrag.api.limits import ApiLimits, ApiSettings
from hexrag.core.query.engine import QueryEngine
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from tests.integration.live import LiveServer

Q = DEFAULT_QUESTION
ENDPOINTS = ("/query", "/query/stream", "/query/data")
MAX_REJECTION_BYTES = 4096


def _demo_engine(**overrides: Any) -> QueryEngine:
    demo = asyncio.run(build_demo_engine())
    stores = {
        "entities": demo.entities,
        "relationships": demo.relationships,
        "chunks": demo.chunks,
        "graph": demo.graph,
        "chunk_store": demo.chunk_store,
        **overrides,
    }
    return QueryEngine(tokenizer=demo.engine.tokenizer, **stores, embedder=demo.engine.embedder)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    live = LiveServer(create_app(_demo_engine(), settings=ApiSettings()))
    yield live
    live.stop()


def _raw(server: LiveServer, path: str, body: str | bytes) -> httpx.Response:
    data = body.encode("utf-8") if isinstance(body, str) else body
    return server.client.post(path, content=data, headers={"content-type": "application/json"})


def _rejected(r: httpx.Response, *statuses: int) -> dict[str, Any]:
    assert r.status_code in statuses, (r.status_code, r.text[:300])
    assert len(r.content) <= MAX_REJECTION_BYTES, f"{len(r.content)}-byte rejection"
    assert "Traceback" not in r.text
    body: dict[str, Any] = r.json()  # always valid JSON (no lone surrogate, no NaN)
    return body


def _bad(path: str) -> tuple[int, ...]:
    return (400,) if path == "/query/data" else (422,)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
@pytest.mark.parametrize("field", ["top_k", "chunk_top_k", "max_total_tokens", "history_turns"])
def test_non_finite_numbers_are_4xx(server: LiveServer, field: str, number: str) -> None:
    for path in ENDPOINTS:
        _rejected(_raw(server, path, f'{{"query": "{Q}", "{field}": {number}}}'), *_bad(path))


SURROGATE_BODIES = {
    "query": '{"query": "How do I set up SSO \\ud800?"}',
    "user_prompt": f'{{"query": "{Q}", "user_prompt": "x\\udfff"}}',
    "response_type": f'{{"query": "{Q}", "response_type": "\\ud800"}}',
    "hl_keywords": f'{{"query": "{Q}", "hl_keywords": ["sso\\ud800"]}}',
    "ll_keywords": f'{{"query": "{Q}", "ll_keywords": ["\\udc00"]}}',
    "history": (
        f'{{"query": "{Q}", "conversation_history": [{{"role": "user", "content": "\\ud800"}}]}}'
    ),
    "history key": (
        f'{{"query": "{Q}", '
        '"conversation_history": [{"role": "user", "content": "x", "\\ud800": 1}]}'
    ),
    "scope": f'{{"query": "{Q}", "scope": {{"product_id": ["p-crm", "\\ud800"]}}}}',
    "top-level scope": f'{{"query": "{Q}", "category_id": "\\ud800"}}',
    "NUL in scope": f'{{"query": "{Q}", "scope": {{"product_id": "p-crm\\u0000"}}}}',
    "NUL in doc_ids": f'{{"query": "{Q}", "scope": {{"doc_ids": ["\\u0000"]}}}}',
    "NUL in keyword": f'{{"query": "{Q}", "ll_keywords": ["a\\u0000b"]}}',
    "NUL in query": '{"query": "How do I set up single sign-on\\u0000 with Okta?"}',
    "control char in scope": f'{{"query": "{Q}", "scope": {{"product_id": "p\\u0007"}}}}',
}


@pytest.mark.parametrize("case", list(SURROGATE_BODIES))
def test_lone_surrogates_and_nul_are_4xx_and_never_echoed(server: LiveServer, case: str) -> None:
    for path in ENDPOINTS:
        r = _raw(server, path, SURROGATE_BODIES[case])
        _rejected(r, *_bad(path))  # parses as strict UTF-8 JSON: no surrogate came back
        assert b"\\ud800" not in r.content and b"\\u0000" not in r.content


def test_keep_alive_survives_rejections_and_server_errors() -> None:
    """A server error (an adapter raising a plain exception) is a 500 with an error id, and
    the same TCP connection then serves the next requests."""

    class Broken(MemoryChunkStore):
        async def get_chunks(self, ids: Any) -> Any:
            raise RuntimeError("adapter bug")

        async def get_chunk_metadata(self, ids: Any) -> Any:  # naive mode's heading read
            raise RuntimeError("adapter bug")

    live = LiveServer(create_app(_demo_engine(chunk_store=Broken()), settings=ApiSettings()))
    try:
        host, port = live.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            fh = sock.makefile("rb")
            bodies = [
                '{"query": "x", "top_k": NaN}',
                json.dumps({"query": Q, "mode": "naive"}),  # 500: the adapter raises
                '{"query": "\\ud800"}',
                json.dumps({"query": Q, "mode": "naive"}),
            ]
            statuses = []
            for body in bodies:
                data = body.encode()
                sock.sendall(
                    b"POST /query/data HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                status_line = fh.readline()
                assert status_line, "the server closed the connection"
                statuses.append(int(status_line.split()[1]))
                length = 0
                while (line := fh.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                    assert not (name.lower() == "connection" and "close" in value.lower())
                payload = json.loads(fh.read(length))
                if statuses[-1] == 500:
                    assert len(payload["error_id"]) == 12 and "adapter bug" not in str(payload)
        assert statuses == [400, 500, 400, 500]
    finally:
        live.stop()


def test_scope_lists_are_capped_and_health_never_waits(server: LiveServer) -> None:
    over = {"query": Q, "scope": {"product_id": [f"p{i}" for i in range(257)]}}
    body = _rejected(server.client.post("/query", json=over), 422)
    assert "MAX_SCOPE_VALUES=256" in json.dumps(body)
    huge = {"query": Q, "scope": {"product_id": [f"p-{i:07d}" for i in range(60_000)]}}
    _rejected(server.client.post("/query", json=huge), 413, 422)
    within = {"query": Q, "scope": {"product_id": [f"p{i}" for i in range(256)]}}
    assert server.client.post("/query/data", json=within).status_code == 200

    stop = threading.Event()
    payload = json.dumps({"query": Q, "scope": {"doc_ids": [f"d{i:06d}" for i in range(80_000)]}})

    def hostile() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            while not stop.is_set():
                c.post("/query", content=payload, headers={"content-type": "application/json"})

    threads = [threading.Thread(target=hostile, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.2)
        worst = 0.0
        for _ in range(10):
            t0 = time.perf_counter()
            assert server.client.get("/health").status_code == 200
            worst = max(worst, time.perf_counter() - t0)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    # a functional bound (the defect was a multi-second stall), generous for a loaded CI box
    assert worst < 0.5, f"/health waited {worst:.3f}s behind hostile requests"


def test_body_limit_is_413_declared_or_streamed() -> None:
    settings = ApiSettings(limits=ApiLimits(max_request_body_bytes=10_000))
    live = LiveServer(create_app(_demo_engine(), settings=settings))
    try:
        big = json.dumps({"query": Q, "user_prompt": "x" * 20_000})
        body = _rejected(_raw(live, "/query", big), 413)
        assert "MAX_REQUEST_BODY_BYTES" in body["detail"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
            data = big.encode()
            for i in range(0, len(data), 1000):
                yield data[i : i + 1000]

        headers = {"content-type": "application/json"}
        r = live.client.post("/query/data", content=chunks(), headers=headers)
        _rejected(r, 413)
        assert live.client.post("/query/data", json={"query": Q}).status_code == 200
    finally:
        live.stop()


def test_default_body_limit_refuses_100_mb(server: LiveServer) -> None:
    r = server.client.post(
        "/query", content=b"x" * (2 * 1024 * 1024), headers={"content-type": "application/json"}
    )
    _rejected(r, 413)


def test_a_long_query_is_not_echoed(server: LiveServer) -> None:
    for path in ENDPOINTS:
        r = server.client.post(path, json={"query": "q" * 200_000})
        _rejected(r, *_bad(path), 413)
        assert "q" * 200 not in r.text


def test_top_level_scope_fields_are_honoured(server: LiveServer) -> None:
    top = server.client.post("/query/data", json={"query": Q, "product_id": "p-crm"}).json()
    nested = server.client.post(
        "/query/data", json={"query": Q, "scope": {"product_id": "p-crm"}}
    ).json()
    info = top["metadata"]["processing_info"]["scope"]
    assert info["applied"] is True and info["filter"] == {"product_id": ["p-crm"]}
    assert top["data"] == nested["data"]
    both = server.client.post(
        "/query/data",
        json={"query": Q, "product_id": "p-crm", "scope": {"category_id": "crm"}},
    ).json()
    assert both["metadata"]["processing_info"]["scope"]["filter"] == {
        "product_id": ["p-crm"],
        "category_id": ["crm"],
    }
    conflict = {"query": Q, "product_id": "p-crm", "scope": {"product_id": "p-erp"}}
    for path in ENDPOINTS:
        _rejected(server.client.post(path, json=conflict), *_bad(path))
    # other unknown top-level fields (LightRAG clients send some) are still accepted
    assert server.client.post("/query/data", json={"query": Q, "extra": 1}).status_code == 200


def test_api_key_cors_and_offline_docs() -> None:
    settings = ApiSettings(api_key="s3cret", cors_origins=("https://app.example",))
    live = LiveServer(create_app(_demo_engine(), settings=settings))
    try:
        c = live.client
        assert c.post("/query/data", json={"query": Q}).json() == {"detail": "API Key required"}
        r = c.post("/query/data", json={"query": Q}, headers={"X-API-Key": "wrong"})
        assert (r.status_code, r.json()) == (403, {"detail": "Invalid API Key"})
        ok = c.post("/query/data", json={"query": Q}, headers={"X-API-Key": "s3cret"})
        assert ok.status_code == 200
        assert c.get("/metrics").status_code == 403
        assert c.get("/health").status_code == 200  # whitelisted
        # a key check comes before the body is read: no 413/422 leaks to a stranger
        assert c.post("/query", content=b"{bad").status_code == 403
        pre = c.options(
            "/query/data",
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "x-api-key,content-type",
            },
        )
        assert pre.headers.get("access-control-allow-origin") == "https://app.example"
        docs = c.get("/docs")
        assert docs.status_code == 200
        assert "cdn" not in docs.text.lower() and "https://" not in docs.text
        assert c.get("/static-offline-docs/swagger-ui-bundle.js").status_code == 200
        spec = c.get("/openapi.json").json()
        assert spec["components"]["securitySchemes"]["APIKey"]["name"] == "X-API-Key"
    finally:
        live.stop()


def test_health_is_red_for_empty_or_hanging_stores() -> None:
    empty = QueryEngine(
        tokenizer=default_tokenizer(),
        entities=MemoryVectorIndex("entities", 384),
        relationships=MemoryVectorIndex("relationships", 384),
        chunks=MemoryVectorIndex("chunks", 384),
        graph=MemoryGraphStore(),
        chunk_store=MemoryChunkStore(),
        embedder=_demo_engine().embedder,
    )
    live = LiveServer(create_app(empty, settings=ApiSettings()))
    try:
        r = live.client.get("/health")
        assert r.status_code == 503
        body = r.json()
        assert body["status"] == "degraded"
        assert "graph: holds no records" in body["problems"]
        assert body["stores"]["chunk_store"]["status"] == "empty"
    finally:
        live.stop()

    async def hang() -> int:
        await asyncio.sleep(30)
        return 1

    engine = _demo_engine()
    probes = {"entities": engine.stores.entities.count, "graph": hang}
    live = LiveServer(
        create_app(
            engine,
            probes=probes,
            settings=ApiSettings(),
            required_stores=("entities", "graph"),
            probe_timeout=0.3,
        )
    )
    try:
        t0 = time.perf_counter()
        r = live.client.get("/health")
        assert time.perf_counter() - t0 < 5
        assert r.status_code == 503
        assert r.json()["problems"] == ["graph: no answer within 0.3s"]
    finally:
        live.stop()


def test_a_query_over_the_timeout_is_504() -> None:
    class Slow(MemoryChunkStore):
        async def get_chunks(self, ids: Any) -> Any:
            await asyncio.sleep(5)
            return []

        async def get_chunk_metadata(self, ids: Any) -> Any:  # naive mode's heading read
            await asyncio.sleep(5)
            return []

    settings = ApiSettings(limits=ApiLimits(query_timeout=0.3))
    live = LiveServer(create_app(_demo_engine(chunk_store=Slow()), settings=settings))
    try:
        t0 = time.perf_counter()
        r = live.client.post("/query/data", json={"query": Q, "mode": "naive"})
        assert time.perf_counter() - t0 < 4
        assert r.status_code == 504 and "QUERY_TIMEOUT" in r.json()["detail"]
    finally:
        live.stop()


def test_limits_from_the_environment() -> None:
    env = {
        "MAX_REQUEST_BODY_BYTES": "2048",
        "MAX_SCOPE_VALUES": "3",
        "QUERY_TIMEOUT": "9.5",
        "LIGHTRAG_API_KEY": "k",
        "WHITELIST_PATHS": "/health,/metrics",
        "CORS_ORIGINS": "https://a, https://b",
    }
    s = ApiSettings.from_env(env)
    assert s.limits == ApiLimits(max_request_body_bytes=2048, max_scope_values=3, query_timeout=9.5)
    assert (s.api_key, s.whitelist_paths) == ("k", ("/health", "/metrics"))
    assert s.cors_origins == ("https://a", "https://b")
    assert ApiSettings.from_env(env, api_key="cli").api_key == "cli"
    from hexrag.core.errors import ConfigurationError

    for bad in ({"MAX_SCOPE_VALUES": "0"}, {"QUERY_TIMEOUT": "nan"}, {"MAX_KEYWORDS": "x"}):
        with pytest.raises(ConfigurationError):
            ApiSettings.from_env(bad)


# ------------------------------------------------------------------ the same attacks on PostgreSQL


@pytest.fixture(scope="module")
def pg_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``hexrag serve`` (a real process) on the demo KB copied into PostgreSQL tables."""
    from hexrag.adapters.postgres import PgChunkStore, PgGraphStore, PgVectorIndex, create_pool
    from hexrag.transfer import StackStores
    from hexrag.transfer.migrate import migrate_stack
    from tests.integration.test_cli_serve_answer import _Served
    from tests.services.postgres import postgres_dsn

    dsn = postgres_dsn()
    tmp = tmp_path_factory.mktemp("attack-pg")

    async def fill() -> None:
        demo = await build_demo_engine()
        pool = await create_pool(dsn)
        try:
            opts: dict[str, Any] = {"table_prefix": "atk"}
            target = StackStores(
                entities=PgVectorIndex(pool, namespace="entities", dim=384, **opts),
                relationships=PgVectorIndex(pool, namespace="relationships", dim=384, **opts),
                chunks=PgVectorIndex(pool, namespace="chunks", dim=384, **opts),
                graph=PgGraphStore(pool, **opts),
                chunk_store=PgChunkStore(pool, **opts),
            )
            source = StackStores(
                entities=demo.entities,
                relationships=demo.relationships,
                chunks=demo.chunks,
                graph=demo.graph,
                chunk_store=demo.chunk_store,
            )
            await migrate_stack(source, target, state_path=tmp / "state.json", overwrite=True)
        finally:
            await pool.close()

    asyncio.run(fill())
    config = tmp / "stack.toml"
    config.write_text(
        f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
        'cache = "none"\nnamespace = "atk"\nembedder = "hashing:384"\n',
        encoding="utf-8",
    )
    served = _Served(["--config", str(config)], env={})
    try:
        yield served.url
    finally:
        served.stop()


@pytest.mark.backend("postgres")
def test_every_attack_class_on_postgres_is_4xx(pg_served: str) -> None:
    bodies: list[str | bytes] = list(SURROGATE_BODIES.values())
    bodies += [f'{{"query": "{Q}", "top_k": {n}}}' for n in ("NaN", "Infinity", "-Infinity")]
    bodies += [
        json.dumps({"query": Q, "scope": {"product_id": [f"p{i}" for i in range(5000)]}}),
        json.dumps({"query": "q" * 200_000}),
        b"x" * (2 * 1024 * 1024),
        json.dumps({"query": Q, "product_id": "p-crm", "scope": {"product_id": "p-erp"}}),
    ]
    statuses = []
    with httpx.Client(base_url=pg_served, timeout=30) as c:
        for body in bodies:
            data = body.encode("utf-8") if isinstance(body, str) else body
            for path in ENDPOINTS:
                r = c.post(path, content=data, headers={"content-type": "application/json"})
                statuses.append(r.status_code)
                assert r.status_code < 500, (path, r.status_code, r.text[:300])
                assert len(r.content) <= MAX_REJECTION_BYTES
                assert "atk_" not in r.text  # no table name leaks
        ok = c.post("/query/data", json={"query": Q, "scope": {"product_id": "p-crm"}})
        assert ok.status_code == 200 and ok.json()["data"]["chunks"]
    assert all(400 <= s < 500 for s in statuses)


def test_health_reports_the_last_consistency_check() -> None:
    from hexrag.transfer import StackStores, check_stack

    engine = _demo_engine()
    s = engine.stores
    runs: list[int] = []

    async def consistency() -> dict[str, Any]:
        runs.append(1)
        stores = StackStores(entities=s.entities, relationships=s.relationships,
                             chunks=s.chunks, graph=s.graph, chunk_store=s.chunk_store)
        return (await check_stack(stores, page_size=3)).to_json()

    live = LiveServer(create_app(engine, settings=ApiSettings(), consistency=consistency))
    try:
        deadline = time.monotonic() + 10
        while True:
            body = live.client.get("/health").json()
            if body["consistency"]["status"] == "done" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        summary = body["consistency"]
        assert summary["status"] == "done" and summary["clean"] is True, summary
        assert set(summary["errors"]) >= {"relation_vectors_without_edge", "dangling_source_ids"}
        assert body["status"] == "healthy"
        live.client.get("/health")
        assert len(runs) == 1  # cached until consistency_interval passes
    finally:
        live.stop()
