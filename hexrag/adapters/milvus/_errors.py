"""Translation of pymilvus / gRPC exceptions into hexrag's error tree (the adapter boundary).

Driver classes are recognised by name and attributes, so this module imports no driver and
the mapping can be unit-tested with real driver exception objects.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from hexrag.adapters._error_map import ErrorMap, Rule, grpc_code, matches, translating
from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    NotFound,
)

__all__ = ["BACKEND", "ERRORS", "translate", "translate_errors"]

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


def _milvus_code(*codes: int) -> Callable[[BaseException], bool]:
    def test(exc: BaseException) -> bool:
        return matches(exc, "MilvusException") and getattr(exc, "code", None) in codes

    return test


def _rpc_code(exc: BaseException) -> str | None:
    return grpc_code(exc) if matches(exc, "RpcError") else None


def _timed_out(exc: BaseException) -> bool:
    return _rpc_code(exc) == "DEADLINE_EXCEEDED" or (
        matches(exc, "MilvusException") and any(w in _describe(exc).lower() for w in _TIMEOUT_WORDS)
    )


def _input_error(exc: BaseException) -> bool:
    return getattr(exc, "is_input_error", False) is True


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


#: The mapping table, first match wins; ``{context}`` names the action, collection and endpoint.
ERRORS = ErrorMap(BACKEND, [
    Rule("ConnectionConfigException", ConfigurationError,
         "{context}: bad connection settings: {detail}. Use http(s)://host:port for a "
         "server or a path ending in .db (in an existing directory) for Milvus Lite"),
    Rule(_milvus_code(_COLLECTION_NOT_FOUND), NotFound,
         "{context}: the collection does not exist (dropped while in use?): {detail}"),
    Rule((_timed_out, TimeoutError), BackendTimeout,
         "{context} did not answer within {limit}: {detail}. Check the server's load and "
         "health, or raise the adapter's timeout="),
    Rule((lambda exc: _rpc_code(exc) in ("UNAVAILABLE", "CANCELLED"), *_UNAVAILABLE_CLASSES,
          _milvus_code(_CONNECT_FAILED), ConnectionError), BackendUnavailable,
         "{context}: cannot reach Milvus: {detail}. Check that the server is running and "
         "that the URI (MILVUS_URI), token and network are right"),
    Rule((*_INPUT_CLASSES, _input_error), ConfigurationError,
         "{context} was refused as invalid: {detail}. Check that the collection's schema "
         "matches this adapter (dim, fields) and the index settings"),
    Rule(("MilvusException", "RpcError"), BackendError,
         "{context} failed: {detail}. Check the Milvus server logs"),
    Rule(OSError, BackendUnavailable,
         "{context}: I/O failure: {detail}. Check the Milvus Lite file and disk"),
], otherwise="{context} failed unexpectedly: {exc!r}")


def translate(
    exc: BaseException, *, action: str, collection: str, where: str, timeout: float | None
) -> HexragError:
    """The hexrag error for a driver exception raised while doing ``action``.

    ``where`` names the endpoint (URI or "the given MilvusClient") for the message; the
    caller raises the result ``from exc``.
    """
    if isinstance(exc, HexragError):
        return exc
    return ERRORS.translate(
        exc,
        context=f"Milvus {action} on collection {collection!r} ({where})",
        detail=_describe(exc),
        limit=f"{timeout:g} s" if timeout is not None else "the deadline",
    )


def translate_errors(
    action: str, *, collection: str = "?", where: str = "Milvus", timeout: float | None = None
) -> AbstractContextManager[None]:
    """Re-raise driver exceptions raised inside the block as hexrag errors (:func:`translate`);
    hexrag errors and cancellation pass through."""
    return translating(
        lambda exc: translate(
            exc, action=action, collection=collection, where=where, timeout=timeout
        )
    )
