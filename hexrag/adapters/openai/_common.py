"""Retries, error mapping and environment reading shared by the OpenAI adapters.

Retry ownership is ours, not the SDK's: the adapters give the client ``max_retries=0`` and run
:func:`retrying`, so the policy (which failures, how long to wait, the ``Retry-After`` cap) is
the same for chat and embeddings, logged, and testable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import openai

from hexrag.adapters._env_values import env_bool as env_bool  # the adapters' settings
from hexrag.adapters._env_values import env_number as env_number
from hexrag.adapters._env_values import env_str as env_str
from hexrag.adapters._error_map import ErrorMap, Rule, from_module, matches, translating
from hexrag.adapters._http_retry import RetryPolicy, parse_retry_after
from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
)

BACKEND = "openai"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

logger = logging.getLogger("hexrag.adapters.openai")

T = TypeVar("T")

# 429 bodies that mean "stop", not "slow down" (OpenAI quota, LiteLLM budget).
_PERMANENT_429_CODES = frozenset({"insufficient_quota", "budget_exceeded"})
_RETRYABLE_STATUS = frozenset({408, 409, 429})


class MalformedResponse(BackendError):
    """The server answered 2xx with a body that is not a valid response (retryable)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, backend=BACKEND)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What error messages need to tell the user what to check."""

    base_url: str
    model: str
    timeout: float
    base_url_var: str = "OPENAI_BASE_URL"
    api_key_var: str = "OPENAI_API_KEY"
    model_var: str = "LLM_MODEL"


def _error_code(exc: openai.APIStatusError) -> str | None:
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        return code
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            for key in ("code", "type"):
                value = inner.get(key)
                if isinstance(value, str):
                    return value
    return None


def is_transport_error(exc: BaseException) -> bool:
    """An HTTP-transport failure of httpx/httpx2 (the SDK normally wraps these itself)."""
    return matches(exc, ("TransportError", "TimeoutException", TimeoutError))


def is_driver_error(exc: BaseException) -> bool:
    """An exception this adapter translates into the hexrag error tree."""
    return isinstance(exc, (openai.OpenAIError, MalformedResponse)) or is_transport_error(exc)


def is_retryable(exc: BaseException) -> bool:
    """429 (but not a spent quota), 408/409, 5xx, connection errors, timeouts, bad bodies."""
    if isinstance(exc, (openai.APIConnectionError, MalformedResponse)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APIStatusError) and isinstance(status, int):
        if status == 429:
            return _error_code(exc) not in _PERMANENT_429_CODES
        return status in _RETRYABLE_STATUS or status >= 500
    return is_transport_error(exc)


def retry_after_of(exc: BaseException) -> float | None:
    """The wait a status error's response asked for, if any."""
    if isinstance(exc, openai.APIStatusError):
        try:
            return parse_retry_after(dict(exc.response.headers))
        except Exception:  # a response object without usable headers
            return None
    return None


def describe(exc: BaseException) -> str:
    """A short description of a driver exception for logs and messages."""
    if isinstance(exc, openai.APIStatusError) and hasattr(exc, "status_code"):
        return f"HTTP {exc.status_code}: {_server_message(exc)}"
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    cause = exc.__cause__
    text = str(exc) or type(exc).__name__
    if cause is not None and str(cause):
        text = f"{text} ({cause})"
    return text


def _server_message(exc: openai.APIStatusError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", "") or exc)


async def retrying(
    op: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    what: str,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T:
    """Run ``op``; retry retryable failures at most ``policy.max_retries`` times."""
    attempt = 0
    while True:
        try:
            return await op()
        except Exception as exc:
            if attempt >= policy.max_retries or not is_retryable(exc):
                try:
                    exc._hexrag_attempts = attempt + 1  # type: ignore[attr-defined]
                except AttributeError:  # exception types with __slots__
                    pass
                raise
            wait = policy.delay(attempt, retry_after_of(exc))
            logger.warning(
                "openai: %s failed (%s); retry %d/%d in %.2fs",
                what, describe(exc), attempt + 1, policy.max_retries, wait,
            )
            await sleep(wait)
            attempt += 1


def _status_is(test: Callable[[int], bool]) -> Callable[[BaseException], bool]:
    def matcher(exc: BaseException) -> bool:
        status = getattr(exc, "status_code", None)
        return isinstance(exc, openai.APIStatusError) and isinstance(status, int) and test(status)

    return matcher


#: The mapping table, first match wins (a timeout is a connection error: it comes first).
ERRORS = ErrorMap(BACKEND, [
    Rule((openai.APITimeoutError,
          lambda exc: not isinstance(exc, openai.OpenAIError) and _is_timeout(exc)),
         BackendTimeout,
         "openai: {what} at {where} timed out after {timeout:g}s{tries}; raise the "
         "timeout or check the server's load"),
    Rule((openai.APIConnectionError, is_transport_error), BackendUnavailable,
         "openai: cannot reach {base_url} for {what}{tries} ({desc}); check "
         "{base_url_var} and that the server is running"),
    Rule((openai.AuthenticationError, openai.PermissionDeniedError), ConfigurationError,
         "openai: {base_url} rejected the API key for {what} ({desc}); check {api_key_var}"),
    Rule(openai.NotFoundError, ConfigurationError,
         "openai: {base_url} answered {desc} for {what} with model {model!r}; check "
         "{model_var} and that {base_url_var} is the API root (usually ending in /v1)"),
    Rule(_status_is(lambda status: status == 429), BackendUnavailable,
         "openai: {where} is rate limiting {what}{tries} ({desc}); lower the "
         "concurrency or try later"),
    Rule(_status_is(lambda status: status == 504), BackendTimeout,
         "openai: {where} timed out on {what}{tries} ({desc})"),
    Rule(_status_is(lambda status: status in (502, 503)), BackendUnavailable,
         "openai: {where} is unavailable for {what}{tries} ({desc})"),
    Rule(_status_is(lambda status: status >= 500), BackendError,
         "openai: {where} failed on {what}{tries} ({desc})"),
    Rule(_status_is(lambda status: True), BackendError,
         "openai: {where} rejected the {what} request ({desc})"),
    Rule(MalformedResponse, BackendError,
         "openai: {where} sent a malformed {what} response{tries}: {exc}"),
], otherwise="openai: {what} at {where} failed: {desc}",
   keep=lambda exc: False)  # map_error maps whatever it is given


def map_error(exc: BaseException, endpoint: Endpoint, what: str) -> HexragError:
    """Translate a driver exception into the hexrag error tree, naming what to check."""
    attempts = getattr(exc, "_hexrag_attempts", 1)
    return ERRORS.translate(
        exc,
        what=what,
        where=f"{endpoint.base_url} (model {endpoint.model!r})",
        tries=f" after {attempts} attempt(s)" if attempts > 1 else "",
        desc=describe(exc),
        **asdict(endpoint),  # base_url, model, timeout and the variables to check
    )


def _caught(exc: BaseException) -> bool:
    if isinstance(exc, HexragError) and not isinstance(exc, MalformedResponse):
        return False
    return is_driver_error(exc) or from_module(exc, "openai", "httpx") or isinstance(exc, OSError)


def translate_errors(endpoint: Endpoint, what: str) -> AbstractContextManager[None]:
    """Re-raise the driver's (``openai``, ``httpx``) and OS exceptions raised inside the block
    as hexrag errors (:func:`map_error`; what it does not know is a :class:`BackendError`);
    hexrag errors (other than :class:`MalformedResponse`, mapped with its context), our own
    bugs and cancellation pass through."""
    return translating(lambda exc: map_error(exc, endpoint, what), catch=_caught)


def driver_errors_mapped(endpoint: Endpoint, what: str) -> AbstractContextManager[None]:
    """Re-raise a driver exception of the block (:func:`is_driver_error`) as
    :func:`map_error` gives it, ``from`` the original; anything else passes through. The
    boundary of every request the adapters make (narrower than :func:`translate_errors`)."""
    return translating(lambda exc: map_error(exc, endpoint, what), catch=is_driver_error)


def _is_timeout(exc: BaseException) -> bool:
    return matches(exc, ("TimeoutException", TimeoutError))


# --------------------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------------------


def make_client(
    *,
    api_key: str | None,
    base_url: str | None,
    timeout: float,
    api_key_var: str,
) -> openai.AsyncOpenAI:
    """An ``AsyncOpenAI`` client (no I/O). A missing key is fine for a self-hosted server."""
    url = base_url or OPENAI_DEFAULT_BASE_URL
    if api_key is None:
        if url.rstrip("/") == OPENAI_DEFAULT_BASE_URL:
            raise ConfigurationError(
                f"no API key for {url}: set {api_key_var} (or point OPENAI_BASE_URL at a "
                f"self-hosted OpenAI-compatible server)"
            )
        api_key = "not-needed"  # local servers ignore it; the SDK insists on one
    return openai.AsyncOpenAI(api_key=api_key, base_url=url, timeout=timeout, max_retries=0)


@dataclass(frozen=True, slots=True)
class ClientVars:
    """The environment variables an adapter's ``from_env`` reads its client from: the first
    set variable of ``api_key``/``base_url``; ``api_key_hint`` names the key in the
    missing-key message."""

    api_key: tuple[str, ...]
    base_url: tuple[str, ...]
    api_key_hint: str


def client_from_env(
    env: Mapping[str, str], timeout: float, names: ClientVars
) -> openai.AsyncOpenAI:
    """:func:`make_client` with the key and base URL read from ``env`` as ``names`` says."""
    return make_client(
        api_key=env_str(env, *names.api_key),
        base_url=env_str(env, *names.base_url),
        timeout=timeout,
        api_key_var=names.api_key_hint,
    )


class OwnedClient:
    """Mixin of the OpenAI adapters: the client plumbing both keep (:meth:`_use_client`), their
    ``model_name``, and :meth:`aclose`, which closes ``_base_client`` when ``_owns_client``
    (the adapter created it, ``from_env``)."""

    _base_client: openai.AsyncOpenAI
    _owns_client: bool
    _model: str

    def _use_client(
        self,
        client: openai.AsyncOpenAI,
        *,
        model: str,
        timeout: float,
        max_concurrency: int,
        policy: RetryPolicy,
        owns_client: bool,
        env_vars: tuple[str, str, str],
    ) -> None:
        """Keep ``client`` and a copy of it with the SDK's own retries off and ``timeout``
        seconds per request, at most ``max_concurrency`` requests at once, the retry
        ``policy``, and the :class:`Endpoint` error messages name (``env_vars``: the base-URL,
        API-key and model variables to check)."""
        self._base_client = client
        self._client = client.with_options(max_retries=0, timeout=timeout)
        self._model = model
        self._owns_client = owns_client
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._policy = policy
        self._endpoint = Endpoint(str(client.base_url), model, float(timeout), *env_vars)

    @property
    def model_name(self) -> str:
        """The model's name, as sent to the server (part of the cache identity)."""
        return self._model

    async def aclose(self) -> None:
        """Close the client if this adapter created it (``from_env``)."""
        if self._owns_client:
            await self._base_client.close()


def check_positive(name: str, value: float, *, minimum: float = 1) -> None:
    """ConfigurationError unless ``value >= minimum``."""
    if not value >= minimum:
        raise ConfigurationError(f"{name} must be >= {minimum:g}, got {value!r}")
