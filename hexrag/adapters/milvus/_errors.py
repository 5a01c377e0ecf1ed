"""Translation of pymilvus / gRPC exceptions into hexrag's error tree (the adapter boundary).

Driver classes are recognised by name and attributes, so this module imports no driver and
the mapping can be unit-tested with real driver exception objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    NotFound,
)

__all__ = ["BACKEND", "translate"]

BACKEND = "milvus"

# pymilvus Status codes / ErrorCode values we care about.
_CONNECT_FAILED = 2
_COLLECTION_NOT_FOUND = 100

_INPUT_CLASSES = {
    "ParamError",
    "DataTypeNotMatchException",
    "DataTypeNotSupportException",
    "DataNotMatchException",
    "PrimaryKeyException",
    "FieldsTypeException",
    "FieldTypeException",
    "InvalidConsistencyLevel",
    "CannotInferSchemaException",
    "SchemaMismatchRetryableException",
}
_UNAVAILABLE_CLASSES = {
    "MilvusUnavailableException",
    "ConnectError",
    "ConnectionNotExistException",
}
_TIMEOUT_WORDS = ("deadline exceeded", "timed out", "timeout")


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _grpc_code_name(exc: BaseException) -> str | None:
    code = getattr(exc, "code", None)
    if not callable(code):
        return None
    try:
        value = code()
    except Exception:
        return None
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else None


def _describe(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        return message
    details = getattr(exc, "details", None)
    if callable(details):
        try:
            text = details()
        except Exception:
            text = None
        if isinstance(text, str) and text:
            return text
    return str(exc) or type(exc).__name__


def translate(
    exc: BaseException, *, action: str, collection: str, where: str, timeout: float | None
) -> HexragError:
    """The hexrag error for a driver exception raised while doing ``action``.

    ``where`` names the endpoint (URI or "the given MilvusClient") for the message; the
    caller raises the result ``from exc``.
    """
    if isinstance(exc, HexragError):
        return exc
    names = _class_names(exc)
    detail = _describe(exc)
    context = f"Milvus {action} on collection {collection!r} ({where})"
    lower = detail.lower()

    if "ConnectionConfigException" in names:
        return ConfigurationError(
            f"{context}: bad connection settings: {detail}. Use http(s)://host:port for a "
            "server or a path ending in .db (in an existing directory) for Milvus Lite"
        )
    if "MilvusException" in names and getattr(exc, "code", None) == _COLLECTION_NOT_FOUND:
        return NotFound(
            f"{context}: the collection does not exist (dropped while in use?): {detail}"
        )
    grpc_code = _grpc_code_name(exc) if "RpcError" in names else None
    if (
        grpc_code == "DEADLINE_EXCEEDED"
        or isinstance(exc, TimeoutError)
        or ("MilvusException" in names and any(w in lower for w in _TIMEOUT_WORDS))
    ):
        limit = f"{timeout:g} s" if timeout is not None else "the deadline"
        return BackendTimeout(
            f"{context} did not answer within {limit}: {detail}. Check the server's load and "
            "health, or raise the adapter's timeout=",
            backend=BACKEND,
        )
    if (
        grpc_code in ("UNAVAILABLE", "CANCELLED")
        or names & _UNAVAILABLE_CLASSES
        or ("MilvusException" in names and getattr(exc, "code", None) == _CONNECT_FAILED)
        or isinstance(exc, ConnectionError)
    ):
        return BackendUnavailable(
            f"{context}: cannot reach Milvus: {detail}. Check that the server is running and "
            "that the URI (MILVUS_URI), token and network are right",
            backend=BACKEND,
        )
    if names & _INPUT_CLASSES or getattr(exc, "is_input_error", False) is True:
        return ConfigurationError(
            f"{context} was refused as invalid: {detail}. Check that the collection's schema "
            "matches this adapter (dim, fields) and the index settings",
        )
    if "MilvusException" in names or "RpcError" in names:
        return BackendError(
            f"{context} failed: {detail}. Check the Milvus server logs", backend=BACKEND
        )
    if isinstance(exc, OSError):
        return BackendUnavailable(
            f"{context}: I/O failure: {detail}. Check the Milvus Lite file and disk",
            backend=BACKEND,
        )
    return BackendError(f"{context} failed unexpectedly: {exc!r}", backend=BACKEND)


@contextmanager
def translate_errors(
    action: str, *, collection: str = "?", where: str = "Milvus", timeout: float | None = None
) -> Iterator[None]:
    """Re-raise driver exceptions raised inside the block as hexrag errors (:func:`translate`);
    hexrag errors and cancellation pass through."""
    try:
        yield
    except HexragError:
        raise
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise translate(
            exc, action=action, collection=collection, where=where, timeout=timeout
        ) from exc
