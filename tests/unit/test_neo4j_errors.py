"""Neo4j driver exceptions become hexrag errors at the adapter boundary."""

from __future__ import annotations

import socket
from types import SimpleNamespace
from typing import Any

import pytest
from neo4j import exceptions as nexc

from hexrag.adapters.neo4j import Neo4jGraphStore
from hexrag.adapters.neo4j.errors import translate_error
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
)


def _server_error(code: str) -> nexc.Neo4jError:
    return nexc.Neo4jError._hydrate_neo4j(code=code, message="from the server")


CASES: list[tuple[BaseException, type[Exception]]] = [
    (nexc.ServiceUnavailable("down"), BackendUnavailable),
    (nexc.SessionExpired("gone"), BackendUnavailable),
    (_server_error("Neo.TransientError.General.DatabaseUnavailable"), BackendUnavailable),
    (ConnectionRefusedError("refused"), BackendUnavailable),
    (nexc.ConnectionAcquisitionTimeoutError("pool"), BackendTimeout),
    (_server_error("Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration"),
     BackendTimeout),
    (TimeoutError("slow"), BackendTimeout),
    (_server_error("Neo.ClientError.Security.Unauthorized"), ConfigurationError),
    (_server_error("Neo.ClientError.Database.DatabaseNotFound"), ConfigurationError),
    (nexc.ConfigurationError("bad option"), ConfigurationError),
    (_server_error("Neo.ClientError.Statement.SyntaxError"), BackendError),
    (nexc.ResultConsumedError(None, "consumed"), BackendError),
]


@pytest.mark.parametrize(("exc", "expected"), CASES, ids=lambda v: type(v).__name__)
def test_translate_error(exc: BaseException, expected: type[Exception]) -> None:
    mapped = translate_error(exc, "get_nodes")
    assert type(mapped) is expected
    assert "neo4j" in str(mapped) and "get_nodes" in str(mapped)
    if isinstance(mapped, BackendError):
        assert mapped.backend == "neo4j"


class FailingDriver:
    """A driver whose every query raises ``exc``."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    async def execute_query(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc


@pytest.mark.parametrize(("exc", "expected"), CASES, ids=lambda v: type(v).__name__)
async def test_every_method_raises_hexrag_errors(
    exc: BaseException, expected: type[Exception]
) -> None:
    store = Neo4jGraphStore(FailingDriver(exc), workspace="w")  # type: ignore[arg-type]
    with pytest.raises(expected) as info:
        await store.count_nodes()
    assert info.value.__cause__ is exc


async def test_hexrag_errors_pass_through() -> None:
    store = Neo4jGraphStore(FailingDriver(BackendTimeout("x", backend="neo4j")),  # type: ignore[arg-type]
                            workspace="w")
    with pytest.raises(BackendTimeout):
        await store.get_nodes(["a"])


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_real_driver_without_server_is_backend_unavailable() -> None:
    store = Neo4jGraphStore.from_url(
        f"bolt://127.0.0.1:{_closed_port()}",
        workspace="w",
        user="neo4j",
        password="x",
        connection_timeout=1.0,
        max_transaction_retry_time=0.0,
    )
    try:
        with pytest.raises(BackendUnavailable) as info:
            await store.get_nodes(["a"])
        assert info.value.backend == "neo4j"
        assert "NEO4J_URI" in str(info.value)
    finally:
        await store.aclose()


def test_from_url_needs_a_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEO4J_URI", raising=False)
    with pytest.raises(ConfigurationError, match="NEO4J_URI"):
        Neo4jGraphStore.from_url(workspace="w")


def test_constructing_opens_no_connection() -> None:
    calls: list[Any] = []
    driver = SimpleNamespace(execute_query=lambda *a, **k: calls.append(a))
    Neo4jGraphStore(driver, workspace="w")  # type: ignore[arg-type]
    assert calls == []
