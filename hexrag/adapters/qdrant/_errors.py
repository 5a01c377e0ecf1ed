"""Translation of qdrant-client exceptions into hexrag's error tree (the adapter boundary).

One mapping table (:data:`ERRORS`), checked in order: the first row whose test matches an
exception decides the hexrag class and the hint. Driver classes are recognised by name (and
an HTTP status where there is one), so this module imports no driver.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from hexrag.adapters._error_map import ErrorMap, Rule, grpc_code, matches, translating
from hexrag.domain.errors import (
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    NotFound,
)

__all__ = ["BACKEND", "ERRORS", "translate", "translate_errors"]

BACKEND = "qdrant"


def _describe(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # a half-built driver exception whose __str__ fails
        return type(exc).__name__


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _grpc(exc: BaseException) -> str:
    return grpc_code(exc) or ""


def _not_found(exc: BaseException) -> bool:
    text = _describe(exc).lower()
    return _status(exc) == 404 or _grpc(exc) == "NOT_FOUND" or (
        isinstance(exc, ValueError) and "not found" in text
    )


def _timeout(exc: BaseException) -> bool:
    return (
        isinstance(exc, TimeoutError)
        or matches(exc, ("TimeoutException", "ReadTimeout", "ConnectTimeout"))
        or _grpc(exc) == "DEADLINE_EXCEEDED"
    )


def _unavailable(exc: BaseException) -> bool:
    return (
        isinstance(exc, ConnectionError)
        or matches(exc, ("ConnectError", "ResponseHandlingException",
                         "ResourceExhaustedResponse"))
        or _grpc(exc) in ("UNAVAILABLE", "CANCELLED", "RESOURCE_EXHAUSTED")
        or _status(exc) in (502, 503, 504, 429)
    )


def _locked(exc: BaseException) -> bool:
    text = _describe(exc)
    return isinstance(exc, RuntimeError) and "already accessed by another instance" in text


def _refused(exc: BaseException) -> bool:
    status = _status(exc)
    return (status is not None and 400 <= status < 500) or _grpc(exc) == "INVALID_ARGUMENT" or (
        isinstance(exc, (ValueError, TypeError)) and not _not_found(exc)
    )


_HINTED = "{context}: {detail}. "

#: The mapping table, first match wins; anything else is a BackendError.
ERRORS = ErrorMap(BACKEND, [
    Rule(_locked, ConfigurationError, _HINTED + "the local Qdrant directory is open in another "
         "client or process (embedded Qdrant allows one); close it or use a Qdrant server"),
    Rule(_not_found, NotFound,
         _HINTED + "the collection or point does not exist (dropped while in use?)"),
    Rule(_timeout, BackendTimeout,
         _HINTED + "check the server's load, or raise the adapter's timeout"),
    Rule(_unavailable, BackendUnavailable,
         _HINTED + "check that the Qdrant server runs and the URL is right"),
    Rule(_refused, ConfigurationError,
         _HINTED + "check the collection's vector size and the request"),
    Rule(OSError, BackendUnavailable, _HINTED + "check the local directory"),
], otherwise="{context} failed: {detail}")


def translate(exc: BaseException, *, action: str, collection: str, where: str) -> HexragError:
    """The hexrag error for a driver exception raised while doing ``action``."""
    if isinstance(exc, HexragError):
        return exc
    return ERRORS.translate(
        exc,
        context=f"Qdrant {action} on collection {collection!r} ({where})",
        detail=_describe(exc)[:300],
    )


def translate_errors(
    action: str, *, collection: str = "?", where: str = "Qdrant"
) -> AbstractContextManager[None]:
    """Re-raise driver exceptions raised inside the block as hexrag errors (:func:`translate`);
    hexrag errors and cancellation pass through."""
    return translating(
        lambda exc: translate(exc, action=action, collection=collection, where=where)
    )
