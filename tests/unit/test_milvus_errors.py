"""Driver exception -> hexrag error mapping of the Milvus adapter, with real driver exceptions.

The end-to-end cases (a hung server, an unreachable address, a bad Lite path, a dropped
collection) run against Milvus Lite in ``tests/integration/test_milvus_index.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.adapters.milvus._errors import translate
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    NotFound,
)

exceptions: Any = pytest.importorskip("pymilvus.exceptions", reason="pymilvus is not installed")
grpc: Any = pytest.importorskip("grpc", reason="grpc comes with pymilvus")


def _translate(exc: BaseException) -> HexragError:
    return translate(exc, action="search", collection="col_x", where="http://h:1", timeout=2.5)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            exceptions.MilvusException(code=2, message="Fail connecting to server"),
            BackendUnavailable,
        ),
        (exceptions.MilvusUnavailableException(message="down"), BackendUnavailable),
        (exceptions.ConnectError(message="refused"), BackendUnavailable),
        (ConnectionRefusedError("refused"), BackendUnavailable),
        (
            exceptions.ConnectionConfigException(message="uri: ftp://x is illegal"),
            ConfigurationError,
        ),
        (exceptions.ParamError(message="bad limit"), ConfigurationError),
        (exceptions.DataNotMatchException(message="dim"), ConfigurationError),
        (
            exceptions.MilvusException(code=65535, message="bad", is_input_error=True),
            ConfigurationError,
        ),
        (exceptions.MilvusException(code=100, message="collection not found"), NotFound),
        (
            exceptions.MilvusException(
                code=100, message="[query] Retry timeout: 1s, message=collection 'x' is missing"
            ),
            NotFound,
        ),
        (
            exceptions.MilvusException(code=1, message="wait for loading collection timeout"),
            BackendTimeout,
        ),
        (TimeoutError("slow"), BackendTimeout),
        (exceptions.MilvusException(code=1, message="segment corrupted"), BackendError),
        (RuntimeError("???"), BackendError),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else v.__name__,
)
def test_mapping(exc: BaseException, expected: type[HexragError]) -> None:
    error = _translate(exc)
    assert type(error) is expected
    text = str(error)
    assert "Milvus search on collection 'col_x' (http://h:1)" in text
    if isinstance(error, BackendError):
        assert error.backend == "milvus"


def test_messages_say_what_to_check() -> None:
    assert "server is running" in str(_translate(exceptions.MilvusUnavailableException()))
    assert "timeout=" in str(_translate(TimeoutError()))
    assert "2.5 s" in str(_translate(TimeoutError()))
    assert ".db" in str(_translate(exceptions.ConnectionConfigException(message="x")))
    assert "schema" in str(_translate(exceptions.ParamError(message="x")))


def test_hexrag_errors_pass_through() -> None:
    original = ConfigurationError("already translated")
    assert _translate(original) is original


def test_grpc_status_codes() -> None:
    class _Rpc(grpc.RpcError):  # type: ignore[misc]
        """grpc's concrete errors need a live call; this carries just the status code."""

        def __init__(self, code: object) -> None:
            self._code = code

        def code(self) -> object:
            return self._code

        def details(self) -> str:
            return "details"

    assert type(_translate(_Rpc(grpc.StatusCode.DEADLINE_EXCEEDED))) is BackendTimeout
    assert type(_translate(_Rpc(grpc.StatusCode.UNAVAILABLE))) is BackendUnavailable
    assert type(_translate(_Rpc(grpc.StatusCode.INTERNAL))) is BackendError
