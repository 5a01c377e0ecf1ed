"""Retry policy, error mapping and environment configuration of the OpenAI adapters (no server)."""

from __future__ import annotations

import email.utils
from typing import Any

import pytest

pytest.importorskip("openai")
import openai

try:  # the transport library the installed SDK speaks (httpx2 for openai>=3, httpx before)
    import httpx2 as http
except ImportError:  # pragma: no cover - older SDKs
    import httpx as http  # type: ignore[no-redef]

from hexrag.adapters.openai import OpenAIEmbedder, OpenAILLM
from hexrag.adapters.openai._common import (
    Endpoint,
    MalformedResponse,
    RetryPolicy,
    is_retryable,
    map_error,
    parse_retry_after,
    retry_after_of,
)
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
)

URL = "http://127.0.0.1:9/v1"
ENDPOINT = Endpoint(URL, "some-model", 7.0)


def _status_error(status: int, *, code: str | None = None,
                  headers: dict[str, str] | None = None) -> Any:
    request = http.Request("POST", URL + "/chat/completions")
    body = {"error": {"message": f"status {status}", "type": "x", "code": code}}
    response = http.Response(status, request=request, headers=headers or {}, json=body)
    classes = {
        400: openai.BadRequestError, 401: openai.AuthenticationError,
        403: openai.PermissionDeniedError, 404: openai.NotFoundError,
        429: openai.RateLimitError,
    }
    fallback = openai.InternalServerError if status >= 500 else openai.APIStatusError
    cls = classes.get(status, fallback)
    return cls(f"status {status}", response=response, body=body["error"])


def _request() -> Any:
    return http.Request("POST", URL + "/chat/completions")


# ---- retry policy ----------------------------------------------------------------------


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(max_retries=5, backoff=0.5, max_wait=3.0)
    assert [policy.delay(k, None) for k in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(max_retries=3, backoff=0.5, max_wait=10.0)
    assert policy.delay(0, 2.5) == 2.5
    assert policy.delay(2, 0.0) == 0.0
    assert policy.delay(0, 3600.0) == 10.0
    assert policy.delay(1, float("inf")) == 1.0  # nonsense header: plain backoff


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"Retry-After": "-4"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=1_000_000) == 30.0


def test_retry_after_is_read_from_a_status_error() -> None:
    assert retry_after_of(_status_error(429, headers={"Retry-After": "4"})) == 4.0
    assert retry_after_of(_status_error(429)) is None
    assert retry_after_of(ValueError("x")) is None


@pytest.mark.parametrize(
    ("exc", "retryable"),
    [
        (_status_error(429), True),
        (_status_error(429, code="insufficient_quota"), False),
        (_status_error(500), True),
        (_status_error(503), True),
        (_status_error(408), True),
        (_status_error(400), False),
        (_status_error(401), False),
        (_status_error(404), False),
        (openai.APIConnectionError(request=_request()), True),
        (openai.APITimeoutError(request=_request()), True),
        (MalformedResponse("x"), True),
        (ValueError("a bug"), False),
    ],
)
def test_which_failures_are_retried(exc: BaseException, retryable: bool) -> None:
    assert is_retryable(exc) is retryable


# ---- error mapping ---------------------------------------------------------------------


def test_timeout_maps_to_backend_timeout() -> None:
    err = map_error(openai.APITimeoutError(request=_request()), ENDPOINT, "chat completion")
    assert isinstance(err, BackendTimeout)
    assert err.backend == "openai"
    assert "7s" in str(err)


def test_connection_error_maps_to_unavailable_naming_the_base_url_variable() -> None:
    err = map_error(openai.APIConnectionError(request=_request()), ENDPOINT, "chat completion")
    assert isinstance(err, BackendUnavailable)
    assert err.backend == "openai"
    assert "OPENAI_BASE_URL" in str(err) and URL in str(err)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_are_configuration_errors_naming_the_key(status: int) -> None:
    err = map_error(_status_error(status), ENDPOINT, "chat completion")
    assert isinstance(err, ConfigurationError)
    assert "OPENAI_API_KEY" in str(err)


def test_not_found_is_a_configuration_error_naming_model_and_url() -> None:
    err = map_error(_status_error(404), ENDPOINT, "chat completion")
    assert isinstance(err, ConfigurationError)
    assert "LLM_MODEL" in str(err) and "OPENAI_BASE_URL" in str(err)


@pytest.mark.parametrize(
    ("status", "kind"),
    [(429, BackendUnavailable), (502, BackendUnavailable), (503, BackendUnavailable),
     (504, BackendTimeout), (500, BackendError), (400, BackendError)],
)
def test_status_errors(status: int, kind: type[BackendError]) -> None:
    err = map_error(_status_error(status), ENDPOINT, "chat completion")
    assert type(err) is kind
    assert isinstance(err, BackendError) and err.backend == "openai"
    assert f"status {status}" in str(err)  # the server's own message is kept


def test_malformed_response_maps_to_backend_error() -> None:
    err = map_error(MalformedResponse("no choices"), ENDPOINT, "chat completion")
    assert type(err) is BackendError
    assert "no choices" in str(err)


def test_custom_variable_names_appear_in_messages() -> None:
    ep = Endpoint(URL, "m", 1.0, "EMBEDDING_BINDING_HOST", "EMBEDDING_BINDING_API_KEY")
    assert "EMBEDDING_BINDING_HOST" in str(
        map_error(openai.APIConnectionError(request=_request()), ep, "embeddings"))
    assert "EMBEDDING_BINDING_API_KEY" in str(map_error(_status_error(401), ep, "embeddings"))


# ---- from_env and construction ---------------------------------------------------------


def test_llm_from_env_reads_lightrag_names() -> None:
    llm = OpenAILLM.from_env({
        "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "LLM_MODEL": "qwen", "LLM_TIMEOUT": "12", "MAX_ASYNC": "2",
    })
    assert llm.model_name == "qwen"
    assert llm.max_concurrency == 2
    assert "127.0.0.1:9" in repr(llm)


def test_llm_model_prefers_hexrag_variable_and_binding_host_is_a_fallback() -> None:
    llm = OpenAILLM.from_env({
        "HEXRAG_LLM_MODEL": "mine", "LLM_MODEL": "theirs",
        "LLM_BINDING_HOST": "http://127.0.0.1:8/v1",
    })
    assert llm.model_name == "mine"
    assert "127.0.0.1:8" in repr(llm)
    assert OpenAILLM.from_env({"OPENAI_API_KEY": "k"}).model_name == "gpt-4o-mini"


def test_llm_from_env_without_key_for_openai_itself_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAILLM.from_env({})


def test_bad_numbers_in_env_name_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="LLM_TIMEOUT"):
        OpenAILLM.from_env({"OPENAI_API_KEY": "k", "LLM_TIMEOUT": "soon"})
    with pytest.raises(ConfigurationError, match="EMBEDDING_DIM"):
        OpenAIEmbedder.from_env({"OPENAI_API_KEY": "k", "EMBEDDING_DIM": "big"})


def test_constructor_rejects_nonsense() -> None:
    client = openai.AsyncOpenAI(api_key="k", base_url=URL)
    with pytest.raises(ConfigurationError):
        OpenAILLM(client, model="")
    with pytest.raises(ConfigurationError):
        OpenAILLM(client, model="m", max_concurrency=0)
    with pytest.raises(ConfigurationError):
        OpenAIEmbedder(client, model="e", batch_size=0)
    with pytest.raises(ConfigurationError):
        OpenAIEmbedder(client, model="e", send_dimensions=True)  # no dim to send


def test_embedder_from_env() -> None:
    emb = OpenAIEmbedder.from_env({
        "EMBEDDING_BINDING_HOST": "http://127.0.0.1:7/v1", "EMBEDDING_MODEL": "bge-m3",
        "EMBEDDING_DIM": "1024", "EMBEDDING_BATCH_NUM": "10",
    })
    assert emb.model_name == "bge-m3"
    assert emb.dim == 1024
    assert "127.0.0.1:7" in repr(emb)


def test_embedder_dim_is_unknown_until_discovered() -> None:
    emb = OpenAIEmbedder.from_env({"OPENAI_BASE_URL": "http://127.0.0.1:7/v1"})
    with pytest.raises(ConfigurationError, match="EMBEDDING_DIM"):
        _ = emb.dim
