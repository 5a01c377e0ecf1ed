"""HttpReranker against a real Cohere/Jina-shaped rerank endpoint on loopback (scripted server)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("httpx")
import httpx

from hexrag.adapters.rerank_http import HttpReranker
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
)
from hexrag.core.model import RerankResult
from hexrag.devtools.scripted_openai import Reply, ScriptedOpenAIServer, overlap_score
from hexrag.ports import Reranker

if importlib.util.find_spec("uvicorn") is None:
    if os.environ.get("HEXRAG_REQUIRE_BACKENDS") == "1":
        raise RuntimeError("uvicorn is required for the scripted server (pip install "
                           "'hexrag[api]')")
    pytest.skip("uvicorn not installed: pip install 'hexrag[api]' to run the scripted server",
                allow_module_level=True)

MakeReranker = Callable[..., HttpReranker]
DOCS = [
    "Milvus stores vectors",
    "Neo4j stores the knowledge graph and its edges",
    "Redis keeps chunks",
    "the graph has edges between entities",
]
QUERY = "graph edges"


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key="rr-key") as srv:
        yield srv


@pytest.fixture
def server(running_server: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    running_server.reset()
    yield running_server
    running_server.reset()


@pytest.fixture
async def make_reranker(server: ScriptedOpenAIServer) -> AsyncIterator[MakeReranker]:
    made: list[HttpReranker] = []

    def make(url: str | None = None, **options: Any) -> HttpReranker:
        settings: dict[str, Any] = {"model": "rerank-test", "api_key": "rr-key", "timeout": 5.0,
                                    "retry_backoff": 0.001, "max_retry_wait": 0.05}
        settings.update(options)
        reranker = HttpReranker(url or server.rerank_url, **settings)
        made.append(reranker)
        return reranker

    yield make
    for reranker in made:
        await reranker.aclose()


def _expected(query: str, docs: list[str], top_n: int | None = None) -> list[RerankResult]:
    scored = sorted(((overlap_score(query, d), i) for i, d in enumerate(docs)),
                    key=lambda si: (-si[0], si[1]))
    return [RerankResult(i, s) for s, i in scored[:top_n]]


async def test_is_a_reranker_port(make_reranker: MakeReranker) -> None:
    assert isinstance(make_reranker(), Reranker)


async def test_request_shape_and_provider_order(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    results = await make_reranker().rerank(QUERY, DOCS, top_n=2)
    assert results == _expected(QUERY, DOCS, 2)
    assert [r.index for r in results] == [1, 3]
    (request,) = server.requests_for("rerank")
    assert request.body == {"model": "rerank-test", "query": QUERY, "documents": DOCS, "top_n": 2}
    assert request.headers["authorization"] == "Bearer rr-key"
    assert request.headers["content-type"].startswith("application/json")


async def test_without_top_n_all_results_come_back(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    results = await make_reranker().rerank(QUERY, DOCS)
    assert results == _expected(QUERY, DOCS)
    assert "top_n" not in server.requests_for("rerank")[0].body


async def test_provider_order_is_kept_even_when_not_sorted(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    server.script("rerank", Reply(json_body={"results": [
        {"index": 2, "relevance_score": 0.1},
        {"index": 0, "relevance_score": 0.9},
        {"index": "bad"},
        {"index": 1, "relevance_score": 0.5},
    ]}))
    results = await make_reranker().rerank("q", ["a", "b", "c"], top_n=3)
    assert results == [RerankResult(2, 0.1), RerankResult(0, 0.9), RerankResult(1, 0.5)]


async def test_no_documents_means_no_request(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    assert await make_reranker().rerank("q", []) == []
    assert await make_reranker().rerank("q", ["a"], top_n=0) == []
    assert server.count("rerank") == 0


async def test_429_and_5xx_are_retried(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    server.script("rerank", Reply.rate_limited("0"), Reply.server_error(502), Reply())
    assert await make_reranker(max_retries=2).rerank(QUERY, DOCS) == _expected(QUERY, DOCS)
    assert server.count("rerank") == 3


async def test_retries_are_bounded(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    server.script("rerank", *[Reply.rate_limited("0")] * 4)
    with pytest.raises(BackendUnavailable) as info:
        await make_reranker(max_retries=1).rerank(QUERY, DOCS)
    assert info.value.backend == "rerank"
    assert server.count("rerank") == 2


async def test_wrong_key_is_a_configuration_error(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    with pytest.raises(ConfigurationError, match="RERANK_BINDING_API_KEY"):
        await make_reranker(api_key="wrong").rerank(QUERY, DOCS)
    assert server.count("rerank") == 1


async def test_wrong_endpoint_is_a_configuration_error(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    with pytest.raises(ConfigurationError, match="RERANK_BINDING_HOST"):
        await make_reranker(url=server.url + "/v1/no-such-endpoint").rerank(QUERY, DOCS)


async def test_bad_request_is_a_backend_error_with_the_server_message(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    server.script("rerank", Reply.bad_request("too many documents"))
    with pytest.raises(BackendError, match="too many documents"):
        await make_reranker().rerank(QUERY, DOCS)
    assert server.count("rerank") == 1


async def test_malformed_body_is_retried_then_reported(
    make_reranker: MakeReranker, server: ScriptedOpenAIServer
) -> None:
    server.script("rerank", Reply.broken_body(), Reply(json_body={"data": []}))
    with pytest.raises(BackendError, match="malformed"):
        await make_reranker(max_retries=1).rerank(QUERY, DOCS)
    assert server.count("rerank") == 2


async def test_timeout(make_reranker: MakeReranker, server: ScriptedOpenAIServer) -> None:
    server.script("rerank", Reply.slow(30), Reply.slow(30))
    with pytest.raises(BackendTimeout) as info:
        await make_reranker(timeout=0.2, max_retries=1).rerank(QUERY, DOCS)
    assert info.value.backend == "rerank"
    assert server.count("rerank") == 2


async def test_connection_refused_names_the_host_variable(make_reranker: MakeReranker) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(BackendUnavailable, match="RERANK_BINDING_HOST") as info:
        await make_reranker(url=f"http://127.0.0.1:{port}/v1/rerank", max_retries=1).rerank(
            QUERY, DOCS)
    assert info.value.backend == "rerank"


async def test_concurrency_limit(make_reranker: MakeReranker, server: ScriptedOpenAIServer) -> None:
    server.script("rerank", *[Reply(wait_for_in_flight=3, gate_timeout=0.3)] * 2)
    reranker = make_reranker(max_concurrency=2)
    results = await asyncio.gather(*(reranker.rerank(QUERY, DOCS, top_n=1) for _ in range(5)))
    assert all(r == _expected(QUERY, DOCS, 1) for r in results)
    assert server.max_in_flight("rerank") == 2


async def test_a_given_client_is_used_and_left_open(
    server: ScriptedOpenAIServer,
) -> None:
    async with httpx.AsyncClient() as client:
        reranker = HttpReranker(server.rerank_url, model="m", api_key="rr-key", client=client)
        assert await reranker.rerank(QUERY, DOCS, top_n=1) == _expected(QUERY, DOCS, 1)
        await reranker.aclose()
        assert not client.is_closed
        assert await reranker.rerank(QUERY, DOCS, top_n=1) == _expected(QUERY, DOCS, 1)


async def test_from_env_against_the_server(server: ScriptedOpenAIServer) -> None:
    reranker = HttpReranker.from_env({
        "RERANK_BINDING_HOST": server.rerank_url,
        "RERANK_BINDING_API_KEY": "rr-key",
        "RERANK_MODEL": "env-model",
    })
    try:
        assert await reranker.rerank(QUERY, DOCS, top_n=2) == _expected(QUERY, DOCS, 2)
    finally:
        await reranker.aclose()
    assert server.requests_for("rerank")[0].body["model"] == "env-model"
