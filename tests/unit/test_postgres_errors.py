"""Driver exception -> hexrag error mapping of the PostgreSQL adapters, without a server."""

from __future__ import annotations

import asyncio
import socket

import asyncpg
import pytest

from hexrag.adapters.postgres._errors import translate_error, translate_errors
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    InvalidQuery,
    NotFound,
)

CASES: list[tuple[BaseException, type[HexragError], str]] = [
    (ConnectionRefusedError(111, "Connection refused"), BackendUnavailable, "running"),
    (
        FileNotFoundError(2, "No such file or directory: '/tmp/x/.s.PGSQL.5432'"),
        BackendUnavailable,
        "DSN",
    ),
    (socket.gaierror(-2, "Name or service not known"), BackendUnavailable, "DSN"),
    (
        asyncpg.CannotConnectNowError("the database system is starting up"),
        BackendUnavailable,
        "running",
    ),
    (
        asyncpg.TooManyConnectionsError("sorry, too many clients already"),
        BackendUnavailable,
        "max_connections",
    ),
    (asyncpg.AdminShutdownError("terminating connection"), BackendUnavailable, "running"),
    (
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        BackendUnavailable,
        "running",
    ),
    (asyncpg.InterfaceError("pool is closed"), BackendUnavailable, "pool"),
    (TimeoutError("timed out"), BackendTimeout, "timeout"),
    (
        asyncpg.QueryCanceledError("canceling statement due to statement timeout"),
        BackendTimeout,
        "statement_timeout",
    ),
    (asyncpg.LockNotAvailableError("could not obtain lock"), BackendTimeout, "lock_timeout"),
    (
        asyncpg.InvalidPasswordError("password authentication failed"),
        ConfigurationError,
        "password",
    ),
    (
        asyncpg.InvalidAuthorizationSpecificationError('role "x" does not exist'),
        ConfigurationError,
        "user",
    ),
    (
        asyncpg.InvalidCatalogNameError('database "nope" does not exist'),
        ConfigurationError,
        "database name",
    ),
    (
        asyncpg.InsufficientPrivilegeError("permission denied for schema s"),
        ConfigurationError,
        "role",
    ),
    (asyncpg.UndefinedObjectError('type "vector" does not exist'), ConfigurationError, "pgvector"),
    (
        asyncpg.UndefinedFileError('could not open extension control file "vector.control"'),
        ConfigurationError,
        "pgvector",
    ),
    (
        asyncpg.UndefinedTableError('relation "s.hexrag_chunks" does not exist'),
        NotFound,
        "tables exist",
    ),
    (asyncpg.InvalidSchemaNameError('schema "s" does not exist'), NotFound, "tables exist"),
    (asyncpg.ClientConfigurationError("invalid DSN"), ConfigurationError, "DSN"),
    (ValueError("invalid connection option"), ConfigurationError, "DSN"),
    (asyncpg.DataError("invalid input syntax"), BackendError, "failed"),
    (
        asyncpg.CharacterNotInRepertoireError('invalid byte sequence for encoding "UTF8": 0x00'),
        InvalidQuery,
        "NUL characters",
    ),
    (asyncpg.UntranslatableCharacterError("x"), InvalidQuery, "cannot be stored"),
    (
        UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"),
        InvalidQuery,
        "not valid Unicode",
    ),
    (asyncpg.InterfaceError("the server expects 2 arguments"), BackendError, "failed"),
    (RuntimeError("anything else"), BackendError, "failed"),
]


@pytest.mark.parametrize(
    ("exc", "kind", "hint"), CASES, ids=[f"{type(e).__name__}-{k.__name__}" for e, k, _ in CASES]
)
def test_mapping(exc: BaseException, kind: type[HexragError], hint: str) -> None:
    err = translate_error(exc, action="reading chunks")
    assert type(err) is kind
    message = str(err)
    if kind is InvalidQuery:  # the request's fault: the message names no table
        assert message.startswith("postgres: ") and "reading chunks" not in message
    else:
        assert message.startswith("postgres: reading chunks")
    assert hint.lower() in message.lower()
    if isinstance(err, BackendError):
        assert err.backend == "postgres"


def test_context_manager_chains_the_driver_exception() -> None:
    original = asyncpg.QueryCanceledError("canceling statement due to user request")
    with pytest.raises(BackendTimeout) as info, translate_errors("counting"):
        raise original
    assert info.value.__cause__ is original


def test_hexrag_errors_and_cancellation_pass_through() -> None:
    mine = ConfigurationError("already translated")
    with pytest.raises(ConfigurationError) as info, translate_errors("x"):
        raise mine
    assert info.value is mine
    assert translate_error(mine, action="x") is mine
    with pytest.raises(asyncio.CancelledError), translate_errors("x"):
        raise asyncio.CancelledError()
