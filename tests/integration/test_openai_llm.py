"""OpenAILLM against a real OpenAI-compatible HTTP server on loopback (the scripted server).

The server counts requests and concurrent requests, so retries and the concurrency limit are
checked by counting, never by timing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("openai")
import openai

from hexrag.adapters.openai import OpenAILLM
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
)
from hexrag.devtools.scripted_openai import Reply, ScriptedOpenAIServer
from hexrag.ports import LLM

if importlib.util.find_spec("uvicorn") is None:
    if os.environ.get("HEXRAG_REQUIRE_BACKENDS") == "1":
        raise RuntimeError(
            "uvicorn is required for the scripted OpenAI server (pip install 'hexrag[api]')"
        )
    pytest.skip(
        "uvicorn not installed: pip install 'hexrag[api]' to run the scripted OpenAI server",
        allow_module_level=True,
    )

MakeLLM = Callable[..., OpenAILLM]
_TLS = ssl.create_default_context()


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key="test-key") as srv:
        yield srv


@pytest.fixture
def server(running_server: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    running_server.reset()  # each test starts from an empty script and zero counters
    yield running_server
    running_server.reset()


@pytest.fixture
async def make_llm(server: ScriptedOpenAIServer) -> AsyncIterator[MakeLLM]:
    clients: list[openai.AsyncOpenAI] = []

    def make(api_key: str = "test-key", base_url: str | None = None, **options: Any) -> OpenAILLM:
        client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url or server.base_url,
            # One shared TLS context: building one per client costs ~60 ms (unused on loopback).
            http_client=openai.DefaultAsyncHttpxClient(verify=_TLS),
        )
        clients.append(client)
        settings: dict[str, Any] = {
            "model": "scripted-chat",
            "timeout": 5.0,
            "retry_backoff": 0.001,
            "max_retry_wait": 0.05,
        }
        settings.update(options)
        return OpenAILLM(client, **settings)

    yield make
    for client in clients:
        await client.close()


def _chat_bodies(server: ScriptedOpenAIServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests_for("chat")]


async def test_is_an_llm_port(make_llm: MakeLLM) -> None:
    llm = make_llm()
    assert isinstance(llm, LLM)
    assert llm.model_name == "scripted-chat"


async def test_complete_sends_system_history_user_and_returns_the_answer(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply.text("The answer."))
    llm = make_llm(temperature=0.2)
    history = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "reply"}]
    answer = await llm.complete("What now?", system_prompt="You are terse.", history=history)
    assert answer == "The answer."
    (body,) = _chat_bodies(server)
    assert body["model"] == "scripted-chat"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": "What now?"},
    ]
    assert body["temperature"] == 0.2
    assert "response_format" not in body
    assert not body.get("stream")
    assert server.requests_for("chat")[0].headers["authorization"] == "Bearer test-key"


async def test_json_mode_sends_response_format_and_returns_content_verbatim(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    keywords = {"high_level_keywords": ["architecture"], "low_level_keywords": ["Config"]}
    server.script("chat", Reply.fenced_json(keywords), Reply.malformed_json())
    llm = make_llm()
    fenced = await llm.complete("kw prompt", json_mode=True)
    assert fenced.startswith("```json\n") and '"architecture"' in fenced
    broken = await llm.complete("kw prompt", json_mode=True)
    assert broken == Reply.malformed_json().content  # the core's parser deals with it
    assert [b.get("response_format") for b in _chat_bodies(server)] == [
        {"type": "json_object"},
        {"type": "json_object"},
    ]


async def test_server_rejecting_response_format_is_asked_again_without_it_and_remembered(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script(
        "chat",
        Reply.bad_request("Unsupported parameter: 'response_format' is not supported"),
        Reply.text('{"a": 1}'),
        Reply.text('{"b": 2}'),
    )
    llm = make_llm()
    assert await llm.complete("p", json_mode=True) == '{"a": 1}'
    assert llm.json_mode_supported is False
    assert await llm.complete("p", json_mode=True) == '{"b": 2}'
    assert ["response_format" in b for b in _chat_bodies(server)] == [True, False, False]


async def test_an_unrelated_bad_request_is_not_retried(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply.bad_request("context length exceeded"))
    llm = make_llm()
    with pytest.raises(BackendError, match="context length exceeded") as info:
        await llm.complete("p", json_mode=True)
    assert info.value.backend == "openai"
    assert server.count("chat") == 1
    assert llm.json_mode_supported is True


async def test_think_output_is_passed_through_and_reasoning_only_is_wrapped(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script(
        "chat",
        Reply.think("let me see", '{"high_level_keywords": []}'),
        Reply.reasoning_only("only thoughts"),
        Reply.reasoning_only("ignored in JSON mode"),
    )
    llm = make_llm()
    assert await llm.complete("p") == '<think>let me see</think>{"high_level_keywords": []}'
    assert await llm.complete("p") == "<think>only thoughts</think>"
    assert await llm.complete("p", json_mode=True) == ""


async def test_429_and_5xx_are_retried_until_success(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script(
        "chat",
        Reply.rate_limited(retry_after="0"),
        Reply.server_error(500),
        Reply.server_error(503),
        Reply.text("finally"),
    )
    llm = make_llm(max_retries=3)
    assert await llm.complete("p") == "finally"
    assert server.count("chat") == 4


async def test_retries_are_bounded(make_llm: MakeLLM, server: ScriptedOpenAIServer) -> None:
    server.script("chat", *[Reply.rate_limited(retry_after="0")] * 5)
    llm = make_llm(max_retries=2)
    with pytest.raises(BackendUnavailable, match="429") as info:
        await llm.complete("p")
    assert info.value.backend == "openai"
    assert "3 attempt" in str(info.value)
    assert server.count("chat") == 3
    assert server.pending("chat") == 2


async def test_retry_after_is_honoured_and_capped(
    make_llm: MakeLLM, server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(
        "chat",
        Reply.rate_limited(retry_after="0.03"),
        Reply.rate_limited(retry_after="3600"),
        Reply.text("ok"),
    )
    llm = make_llm(max_retries=3, retry_backoff=0.001, max_retry_wait=0.05)
    with caplog.at_level(logging.WARNING, logger="hexrag.adapters.openai"):
        assert await llm.complete("p") == "ok"
    waits = [r.getMessage().rsplit(" in ", 1)[1] for r in caplog.records if "retry" in r.message]
    assert waits == ["0.03s", "0.05s"]  # the server's wait, then the cap instead of an hour
    assert server.count("chat") == 3


async def test_spent_quota_is_not_retried(make_llm: MakeLLM, server: ScriptedOpenAIServer) -> None:
    server.script("chat", Reply.rate_limited(retry_after=None, code="insufficient_quota"))
    with pytest.raises(BackendUnavailable):
        await make_llm(max_retries=3).complete("p")
    assert server.count("chat") == 1


async def test_wrong_api_key_is_a_configuration_error_naming_the_variable(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    llm = make_llm(api_key="wrong-key")
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        await llm.complete("p")
    assert server.count("chat") == 1  # not retried


async def test_unknown_model_is_a_configuration_error(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply(status=404, error="model 'nope' not found"))
    with pytest.raises(ConfigurationError, match="LLM_MODEL"):
        await make_llm(model="nope").complete("p")


async def test_slow_server_times_out_after_bounded_retries(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply.slow(30), Reply.slow(30))
    llm = make_llm(timeout=0.2, max_retries=1)
    with pytest.raises(BackendTimeout) as info:
        await llm.complete("p")
    assert info.value.backend == "openai"
    assert server.count("chat") == 2


async def test_connection_refused_is_unavailable_naming_the_base_url(make_llm: MakeLLM) -> None:
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = make_llm(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(BackendUnavailable, match="OPENAI_BASE_URL") as info:
        await llm.complete("p")
    assert info.value.backend == "openai"
    assert f"127.0.0.1:{port}" in str(info.value)


async def test_broken_body_is_retried_then_reported(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply.broken_body(), Reply.text("recovered"))
    llm = make_llm(max_retries=1)
    assert await llm.complete("p") == "recovered"
    server.script("chat", Reply.broken_body(), Reply.broken_body())
    with pytest.raises(BackendError, match="malformed"):
        await llm.complete("p")
    assert server.count("chat") == 4


async def test_non_json_answer_is_malformed(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply(raw_body=b"<html>proxy error</html>", content_type="text/html"))
    with pytest.raises(BackendError, match="malformed"):
        await make_llm(max_retries=0).complete("p")


async def test_concurrency_limit_is_never_exceeded_at_the_server(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    # The first replies are held until 4 requests are in flight (or 0.3 s pass): with a limit
    # of 3 the server must see exactly 3 at once, and a 4th would show up immediately.
    server.script("chat", *[Reply(wait_for_in_flight=4, gate_timeout=0.3)] * 3)
    llm = make_llm(max_concurrency=3)
    prompts = [f"question {i}" for i in range(10)]
    answers = await asyncio.gather(*(llm.complete(p) for p in prompts))
    assert answers == [f"echo: {p}" for p in prompts]
    assert server.count("chat") == 10
    assert server.max_in_flight("chat") == 3


# ---- streaming -------------------------------------------------------------------------


async def _collect(iterator: AsyncIterator[str]) -> list[str]:
    return [piece async for piece in iterator]


async def test_stream_yields_the_server_pieces(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script(
        "chat", Reply.text("Hello, streaming world", pieces=["Hel", "lo, ", "streaming", " world"])
    )
    llm = make_llm()
    pieces = await _collect(
        llm.stream("q", system_prompt="S", history=[{"role": "assistant", "content": "h"}])
    )
    assert pieces == ["Hel", "lo, ", "streaming", " world"]
    (body,) = _chat_bodies(server)
    assert body["stream"] is True
    assert [m["role"] for m in body["messages"]] == ["system", "assistant", "user"]


async def test_stream_wraps_leading_reasoning_in_think_tags(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply(content="Answer.", reasoning="Thinking hard"))
    pieces = await _collect(make_llm().stream("q"))
    assert "".join(pieces) == "<think>Thinking hard</think>Answer."
    assert pieces[0] == "<think>"


async def test_stream_retries_before_the_first_piece(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script(
        "chat", Reply.rate_limited(retry_after="0"), Reply.server_error(502), Reply.text("ok now")
    )
    assert "".join(await _collect(make_llm(max_retries=2).stream("q"))) == "ok now"
    assert server.count("chat") == 3


async def test_stream_dropped_midway_raises_unavailable_without_retry(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply(content="one two three four", abort_after=2))
    received: list[str] = []
    with pytest.raises(BackendUnavailable) as info:
        async for piece in make_llm(max_retries=3).stream("q"):
            received.append(piece)
    assert info.value.backend == "openai"
    assert received == ["one ", "two "]
    assert server.count("chat") == 1


async def test_stream_errors_before_the_first_piece_are_mapped(make_llm: MakeLLM) -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        await _collect(make_llm(api_key="bad").stream("q"))


async def test_stream_timeout_is_backend_timeout(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply.slow(30))
    with pytest.raises(BackendTimeout):
        await _collect(make_llm(timeout=0.2, max_retries=0).stream("q"))


async def test_streams_count_against_the_concurrency_limit(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", *[Reply(content="a b c", wait_for_in_flight=3, gate_timeout=0.3)] * 2)
    llm = make_llm(max_concurrency=2)
    results = await asyncio.gather(*(_collect(llm.stream(f"q{i}")) for i in range(5)))
    assert results[0] == ["a ", "b ", "c"]
    assert server.max_in_flight("chat") == 2


async def test_closing_a_stream_early_frees_its_slot(
    make_llm: MakeLLM, server: ScriptedOpenAIServer
) -> None:
    server.script("chat", Reply.text("many pieces of text here"))
    llm = make_llm(max_concurrency=1)
    stream = llm.stream("q")
    assert await stream.__anext__() == "many "
    await stream.aclose()  # type: ignore[attr-defined]
    # With the slot still held this would hang; the guard only turns a hang into a failure.
    assert await asyncio.wait_for(llm.complete("next"), timeout=10) == "echo: next"
