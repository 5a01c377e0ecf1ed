"""``HttpReranker``: the Reranker port over Cohere/Jina-style HTTP rerank APIs (httpx)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from hexrag.adapters._env_values import env_number, env_str
from hexrag.adapters._error_map import ErrorMap, Rule
from hexrag.adapters._http_retry import RetryPolicy, parse_retry_after
from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
)
from hexrag.domain.records import RerankResult

__all__ = ["HttpReranker", "build_payload", "parse_results"]

BACKEND = "rerank"
logger = logging.getLogger("hexrag.adapters.rerank_http")

# LightRAG's defaults per RERANK_BINDING (lightrag/rerank.py).
_BINDING_DEFAULTS: dict[str, tuple[str, str]] = {
    "cohere": ("https://api.cohere.com/v2/rerank", "rerank-v3.5"),
    "jina": ("https://api.jina.ai/v1/rerank", "jina-reranker-v2-base-multilingual"),
}
_RETRYABLE_STATUS = frozenset({408, 409, 429})


class _Malformed(Exception):
    """A 2xx answer whose body is not a rerank response."""


class _Status(Exception):
    """A non-2xx answer."""

    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.headers = dict(response.headers)
        self.message = _error_message(response)
        super().__init__(f"HTTP {self.status}: {self.message}")


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        if text.lower().startswith("<!doctype html") or "text/html" in response.headers.get(
            "content-type", ""
        ):
            return "HTML error page"
        return text[:300] or response.reason_phrase
    if isinstance(body, Mapping):
        for key in ("error", "message", "detail"):
            value = body.get(key)
            if isinstance(value, Mapping) and isinstance(value.get("message"), str):
                return str(value["message"])
            if isinstance(value, str):
                return value
    return json.dumps(body)[:300]


def build_payload(
    model: str | None,
    query: str,
    documents: Sequence[str],
    top_n: int | None,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The request body: ``{model, query, documents, top_n}`` (``model``/``top_n`` when set)."""
    payload: dict[str, Any] = {"query": query, "documents": list(documents)}
    if model:
        payload = {"model": model, **payload}
    if top_n is not None:
        payload["top_n"] = top_n
    if extra_body:
        payload.update(extra_body)
    return payload


def parse_results(body: Any, top_n: int | None = None) -> list[RerankResult]:
    """``{"results": [{"index", "relevance_score"}, ...]}`` as RerankResults, provider order.

    Entries that cannot be typed (not an object, a non-integer or boolean index, a
    non-numeric or boolean score) are dropped with a warning; range and finiteness are the
    engine's to check. At most ``top_n`` results are kept.
    """
    if not isinstance(body, Mapping) or not isinstance(body.get("results"), list):
        raise _Malformed(f"expected an object with a 'results' list, got {_preview(body)}")
    out: list[RerankResult] = []
    dropped = 0
    for item in body["results"]:
        result = _result(item)
        if result is None:
            dropped += 1
        else:
            out.append(result)
    if dropped:
        logger.warning("rerank: dropped %d malformed result(s)", dropped)
    return out if top_n is None else out[:top_n]


def _result(item: Any) -> RerankResult | None:
    if not isinstance(item, Mapping):
        return None
    index = item.get("index")
    score = item.get("relevance_score")
    if isinstance(index, bool) or not isinstance(index, int):
        return None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    return RerankResult(index=index, relevance_score=float(score))


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, _Status):
        return exc.status in _RETRYABLE_STATUS or exc.status >= 500
    return isinstance(exc, (httpx.TransportError, _Malformed))


def _status_is(test: Callable[[int], bool]) -> Callable[[BaseException], bool]:
    def matcher(exc: BaseException) -> bool:
        return isinstance(exc, _Status) and test(exc.status)

    return matcher


#: The mapping table, first match wins (a timeout is a transport error: it comes first).
ERRORS = ErrorMap(BACKEND, [
    Rule(httpx.TimeoutException, BackendTimeout,
         "{where} did not answer within {timeout:g}s{tries}; raise RERANK_TIMEOUT or check "
         "the service"),
    Rule(httpx.TransportError, BackendUnavailable,
         "cannot reach {where}{tries} ({kind}: {exc}); check RERANK_BINDING_HOST and that the "
         "service is running"),
    Rule(_status_is(lambda status: status in (401, 403)), ConfigurationError,
         "{where} rejected the API key ({exc}); check RERANK_BINDING_API_KEY"),
    Rule(_status_is(lambda status: status == 404), ConfigurationError,
         "{where} answered {exc}; check RERANK_BINDING_HOST (the full rerank endpoint URL) "
         "and RERANK_MODEL"),
    Rule(_status_is(lambda status: status in (429, 502, 503)), BackendUnavailable,
         "{where} is unavailable{tries} ({exc})"),
    Rule(_status_is(lambda status: status == 504), BackendTimeout,
         "{where} timed out{tries} ({exc})"),
    Rule(_status_is(lambda status: status >= 500), BackendError, "{where} failed{tries} ({exc})"),
    Rule(_Status, BackendError, "{where} rejected the request ({exc})"),
    Rule(_Malformed, BackendError, "{where} sent a malformed response{tries}: {exc}"),
], otherwise="{where} failed: {exc}")


class HttpReranker:
    """Reranking through a Cohere/Jina-compatible HTTP API.

    POSTs ``{model, query, documents, top_n}`` (JSON, ``Authorization: Bearer <api_key>`` when
    a key is given) to ``base_url`` - the full endpoint, e.g. ``https://api.cohere.com/v2/rerank``
    or ``https://api.jina.ai/v1/rerank`` - and returns the ``results`` in the provider's order.
    No documents -> ``[]`` without a request.

    Retries 429, 408/409, 5xx, transport errors and malformed bodies at most ``max_retries``
    times with exponential backoff (``Retry-After`` honoured, capped at ``max_retry_wait``);
    at most ``max_concurrency`` requests at once. Errors: timeout -> ``BackendTimeout``;
    unreachable -> ``BackendUnavailable`` (naming ``RERANK_BINDING_HOST``); 401/403 ->
    ``ConfigurationError`` (naming ``RERANK_BINDING_API_KEY``); 404 -> ``ConfigurationError``;
    others -> ``BackendError``/``BackendUnavailable``, all with ``backend="rerank"``.

    ``client``: an ``httpx.AsyncClient`` to use (not closed by :meth:`aclose`); without one the
    adapter creates its own on first use.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        client: httpx.AsyncClient | None = None,
        max_concurrency: int = 4,
        retry_backoff: float = 0.5,
        max_retry_wait: float = 20.0,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"rerank endpoint {base_url!r} is not an http(s) URL: check RERANK_BINDING_HOST"
            )
        for name, value, minimum in (
            ("timeout", timeout, 1e-6),
            ("max_retries", max_retries, 0),
            ("max_concurrency", max_concurrency, 1),
            ("retry_backoff", retry_backoff, 0),
            ("max_retry_wait", max_retry_wait, 0),
        ):
            if not value >= minimum:
                raise ConfigurationError(f"{name} must be >= {minimum:g}, got {value!r}")
        self.base_url = base_url
        self.model = model
        self._api_key = api_key
        self._timeout = float(timeout)
        self._max_retries = max_retries
        self._policy = RetryPolicy(max_retries, retry_backoff, max_retry_wait)
        self._extra_body = dict(extra_body) if extra_body else None
        self._client = client
        self._owns_client = client is None
        self._semaphore = asyncio.Semaphore(max_concurrency)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any) -> HttpReranker:
        """Build from LightRAG's variables (``env`` defaults to ``os.environ``).

        ``RERANK_BINDING_HOST`` (the endpoint URL), ``RERANK_BINDING_API_KEY``,
        ``RERANK_MODEL``, ``RERANK_TIMEOUT`` (default 30), ``MAX_ASYNC_RERANK`` (default 4).
        With ``RERANK_BINDING=cohere`` or ``jina`` the host and model default to that
        provider's (as in LightRAG).
        """
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            return env_str(env, name)

        binding = (get("RERANK_BINDING") or "").lower()
        if binding and binding not in ("null", *_BINDING_DEFAULTS):
            raise ConfigurationError(
                f"RERANK_BINDING={binding!r} is not supported by HttpReranker (cohere, jina, or "
                f"any Cohere/Jina-compatible RERANK_BINDING_HOST)"
            )
        default_host, default_model = _BINDING_DEFAULTS.get(binding, (None, None))
        host = get("RERANK_BINDING_HOST") or default_host
        if host is None:
            raise ConfigurationError(
                "no rerank endpoint: set RERANK_BINDING_HOST (e.g. "
                "https://api.cohere.com/v2/rerank)"
            )

        settings: dict[str, Any] = {
            "model": get("RERANK_MODEL") or default_model,
            "api_key": get("RERANK_BINDING_API_KEY"),
            "timeout": env_number(env, "RERANK_TIMEOUT", float, 30.0),
            "max_concurrency": env_number(env, "MAX_ASYNC_RERANK", int, 4),
        }
        settings.update(options)
        return cls(host, **settings)

    async def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]:
        """Results in the provider's order (normally best first), at most ``top_n`` of them."""
        docs = list(documents)
        if not docs or (top_n is not None and top_n <= 0):
            return []
        payload = build_payload(self.model, query, docs, top_n, self._extra_body)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        async with self._semaphore:
            attempt = 0
            while True:
                try:
                    body = await self._post(payload, headers)
                    return parse_results(body, top_n)
                except (_Status, _Malformed, httpx.HTTPError) as exc:
                    if attempt >= self._max_retries or not _retryable(exc):
                        raise self._map(exc, attempt + 1) from exc
                    wait = self._delay(attempt, exc)
                    logger.warning(
                        "rerank: %s failed (%s); retry %d/%d in %.2fs",
                        self.base_url, exc, attempt + 1, self._max_retries, wait,
                    )
                    await asyncio.sleep(wait)
                    attempt += 1

    def _delay(self, attempt: int, exc: BaseException) -> float:
        after = (
            parse_retry_after(exc.headers, milliseconds=False) if isinstance(exc, _Status) else None
        )
        return self._policy.delay(attempt, after)

    async def _post(self, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        if self._client is None:
            self._client = httpx.AsyncClient()
        response = await self._client.post(
            self.base_url, json=payload, headers=headers, timeout=self._timeout
        )
        if not response.is_success:
            raise _Status(response)
        try:
            return response.json()
        except ValueError as exc:
            raise _Malformed(f"body is not JSON ({_preview(response.text)})") from exc

    def _map(self, exc: BaseException, attempts: int) -> HexragError:
        return ERRORS.translate(
            exc,
            where=f"rerank endpoint {self.base_url} (model {self.model!r})",
            tries=f" after {attempts} attempt(s)" if attempts > 1 else "",
            timeout=self._timeout,
            kind=type(exc).__name__,
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    def __repr__(self) -> str:
        return f"HttpReranker(base_url={self.base_url!r}, model={self.model!r})"
