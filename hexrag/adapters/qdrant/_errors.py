"""Translation of qdrant-client exceptions into hexrag's error tree (the adapter boundary).

One mapping table, checked in order: the first row whose test matches an exception decides
the hexrag class and the hint. Driver classes are recognised by name (and an HTTP status
where there is one), so this module imports no driver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    NotFound,
)

__all__ = ["BACKEND", "translate", "translate_errors"]

BACKEND = "qdrant"


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _describe(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # a half-built driver exception whose __str__ fails
        return type(exc).__name__


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _grpc(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    try:
        value = code() if callable(code) else None
    except Exception:
        return ""
    return str(getattr(value, "name", "") or "")


def _not_found(exc: BaseException) -> bool:
    text = _describe(exc).lower()
    return _status(exc) == 404 or _grpc(exc) == "NOT_FOUND" or (
        isinstance(exc, ValueError) and "not found" in text
    )


def _timeout(exc: BaseException) -> bool:
    return (
        isinstance(exc, TimeoutError)
        or bool(_names(exc) & {"TimeoutException", "ReadTimeout", "ConnectTimeout"})
        or _grpc(exc) == "DEADLINE_EXCEEDED"
    )


def _unavailable(exc: BaseException) -> bool:
    return (
        isinstance(exc, ConnectionError)
        or bool(_names(exc) & {"ConnectError", "ResponseHandlingException",
                               "ResourceExhaustedResponse"})
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


#: (test, hexrag class, hint), first match wins; anything else is a BackendError.
MAPPING: tuple[tuple[Callable[[BaseException], bool], type[HexragError], str], ...] = (
    (_locked, ConfigurationError, "the local Qdrant directory is open in another client or "
     "process (embedded Qdrant allows one); close it or use a Qdrant server"),
    (_not_found, NotFound, "the collection or point does not exist (dropped while in use?)"),
    (_timeout, BackendTimeout, "check the server's load, or raise the adapter's timeout"),
    (_unavailable, BackendUnavailable, "check that the Qdrant server runs and the URL is right"),
    (_refused, ConfigurationError, "check the collection's vector size and the request"),
    (lambda exc: isinstance(exc, OSError), BackendUnavailable, "check the local directory"),
)


def translate(exc: BaseException, *, action: str, collection: str, where: str) -> HexragError:
    """The hexrag error for a driver exception raised while doing ``action``."""
    if isinstance(exc, HexragError):
        return exc
    detail = _describe(exc)[:300]
    context = f"Qdrant {action} on collection {collection!r} ({where})"
    for test, cls, hint in MAPPING:
        if test(exc):
            if issubclass(cls, BackendError):
                return cls(f"{context}: {detail}. {hint}", backend=BACKEND)
            return cls(f"{context}: {detail}. {hint}")
    return BackendError(f"{context} failed: {detail}", backend=BACKEND)


@contextmanager
def translate_errors(
    action: str, *, collection: str = "?", where: str = "Qdrant"
) -> Iterator[None]:
    """Re-raise driver exceptions raised inside the block as hexrag errors (:func:`translate`);
    hexrag errors and cancellation pass through."""
    try:
        yield
    except (HexragError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise translate(exc, action=action, collection=collection, where=where) from exc
