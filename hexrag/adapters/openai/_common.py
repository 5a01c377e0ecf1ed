"""Retries, error mapping and environment reading shared by the OpenAI adapters.

Retry ownership is ours, not the SDK's: the adapters give the client ``max_retries=0`` and run
:func:`retrying`, so the policy (which failures, how long to wait, the ``Retry-After`` cap) is
the same for chat and embeddings, logged, and testable.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import openai

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
class RetryPolicy:
    """Bounded exponential backoff; a server's ``Retry-After`` wins but is capped.

    Attempt ``k`` (0-based) that failed waits ``min(backoff * 2**k, max_wait)``, or
    ``min(retry_after, max_wait)`` when the server said how long to wait.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_wait: float = 20.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based)."""
        if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
            return min(retry_after, self.max_wait)
        return min(self.backoff * (2.0**attempt), self.max_wait)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What error messages need to tell the user what to check."""

    base_url: str
    model: str
    timeout: float
    base_url_var: str = "OPENAI_BASE_URL"
    api_key_var: str = "OPENAI_API_KEY"
    model_var: str = "LLM_MODEL"


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date), else None."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        when = email.utils.mktime_tz(parsed)
        return max(when - (time.time() if now is None else now), 0.0)
    return max(value, 0.0) if math.isfinite(value) else None


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
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TransportError", "TimeoutException"}) or isinstance(exc, TimeoutError)


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


def map_error(exc: BaseException, endpoint: Endpoint, what: str) -> HexragError:
    """Translate a driver exception into the hexrag error tree, naming what to check."""
    ep = endpoint
    attempts = getattr(exc, "_hexrag_attempts", 1)
    where = f"{ep.base_url} (model {ep.model!r})"
    tries = f" after {attempts} attempt(s)" if attempts > 1 else ""
    if isinstance(exc, openai.APITimeoutError) or (
        not isinstance(exc, openai.OpenAIError) and _is_timeout(exc)
    ):
        return BackendTimeout(
            f"openai: {what} at {where} timed out after {ep.timeout:g}s{tries}; raise the "
            f"timeout or check the server's load",
            backend=BACKEND,
        )
    if isinstance(exc, openai.APIConnectionError) or is_transport_error(exc):
        return BackendUnavailable(
            f"openai: cannot reach {ep.base_url} for {what}{tries} ({describe(exc)}); check "
            f"{ep.base_url_var} and that the server is running",
            backend=BACKEND,
        )
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return ConfigurationError(
            f"openai: {ep.base_url} rejected the API key for {what} ({describe(exc)}); check "
            f"{ep.api_key_var}"
        )
    if isinstance(exc, openai.NotFoundError):
        return ConfigurationError(
            f"openai: {ep.base_url} answered {describe(exc)} for {what} with model "
            f"{ep.model!r}; check {ep.model_var} and that {ep.base_url_var} is the API root "
            f"(usually ending in /v1)"
        )
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APIStatusError) and isinstance(status, int):
        if status == 429:
            return BackendUnavailable(
                f"openai: {where} is rate limiting {what}{tries} ({describe(exc)}); lower the "
                f"concurrency or try later",
                backend=BACKEND,
            )
        if status == 504:
            return BackendTimeout(
                f"openai: {where} timed out on {what}{tries} ({describe(exc)})", backend=BACKEND
            )
        if status in (502, 503):
            return BackendUnavailable(
                f"openai: {where} is unavailable for {what}{tries} ({describe(exc)})",
                backend=BACKEND,
            )
        if status >= 500:
            return BackendError(
                f"openai: {where} failed on {what}{tries} ({describe(exc)})", backend=BACKEND
            )
        return BackendError(
            f"openai: {where} rejected the {what} request ({describe(exc)})", backend=BACKEND
        )
    if isinstance(exc, MalformedResponse):
        return BackendError(
            f"openai: {where} sent a malformed {what} response{tries}: {exc}", backend=BACKEND
        )
    return BackendError(f"openai: {what} at {where} failed: {describe(exc)}", backend=BACKEND)


@contextmanager
def translate_errors(endpoint: Endpoint, what: str) -> Iterator[None]:
    """Re-raise the driver's (``openai``, ``httpx``) and OS exceptions raised inside the block
    as hexrag errors (:func:`map_error`; what it does not know is a :class:`BackendError`);
    hexrag errors (other than :class:`MalformedResponse`, mapped with its context), our own
    bugs and cancellation pass through."""
    try:
        yield
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if isinstance(exc, HexragError) and not isinstance(exc, MalformedResponse):
            raise
        if (
            is_driver_error(exc)
            or type(exc).__module__.startswith(("openai", "httpx"))
            or isinstance(exc, OSError)
        ):
            raise map_error(exc, endpoint, what) from exc
        raise


def _is_timeout(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "TimeoutException" in names or isinstance(exc, TimeoutError)


# --------------------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------------------


def env_str(env: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` set to a non-blank value."""
    for name in names:
        value = env.get(name)
        if value is not None and value.strip():
            return value.strip()
    return None


def env_number(env: Mapping[str, str], name: str, kind: type[Any], default: Any) -> Any:
    """``env[name]`` parsed as ``kind``; ``default`` when unset; ConfigurationError when bad."""
    raw = env_str(env, name)
    if raw is None:
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name}={raw!r} is not a valid {kind.__name__}") from exc


def env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    """LightRAG-style boolean: true/1/yes/t/on."""
    raw = env_str(env, name)
    if raw is None:
        return default
    return raw.lower() in ("true", "1", "yes", "t", "on")


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


def check_positive(name: str, value: float, *, minimum: float = 1) -> None:
    """ConfigurationError unless ``value >= minimum``."""
    if not value >= minimum:
        raise ConfigurationError(f"{name} must be >= {minimum:g}, got {value!r}")
