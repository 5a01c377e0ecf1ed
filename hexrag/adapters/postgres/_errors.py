"""Translation of asyncpg / OS exceptions into hexrag's error tree (the adapter boundary)."""

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
    InvalidQuery,
    NotFound,
)

__all__ = ["BACKEND", "translate_error", "translate_errors"]

BACKEND = "postgres"

_CHECK_SERVER = (
    "check that the PostgreSQL server is running and that the DSN (host, port, socket) is right"
)

# SQLSTATEs, grouped by what the caller can do about them.
_TIMEOUT_STATES = {
    "57014",  # query_canceled (statement_timeout, pg_cancel_backend)
    "55P03",  # lock_not_available (lock_timeout)
}
_UNAVAILABLE_STATES = {
    "57P01",  # admin_shutdown
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now (starting up / shutting down / recovery)
    "53300",  # too_many_connections
    "53000",  # insufficient_resources
}
_AUTH_STATES = {"28000", "28P01"}  # invalid_authorization_specification, invalid_password
_MISSING_RELATION_STATES = {"42P01", "3F000"}  # undefined_table, invalid_schema_name
# data exceptions caused by a parameter value (NUL byte, bad encoding)
_INPUT_STATES = {
    "22021",  # character_not_in_repertoire (e.g. 0x00 in a text parameter)
    "22P05",  # untranslatable_character
    "22P02",  # invalid_text_representation
}


def translate_error(exc: BaseException, *, action: str) -> HexragError:
    """The hexrag error for a driver/OS exception raised while doing ``action``.

    The message names the backend and what to check; the caller raises it ``from exc``.
    A :class:`~hexrag.core.errors.HexragError` is returned unchanged.
    """
    if isinstance(exc, HexragError):
        return exc
    # TimeoutError is an OSError subclass: test it first.
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return BackendTimeout(
            f"postgres: {action} timed out; check the server load, locks held by other "
            "sessions, and the adapter's timeout setting",
            backend=BACKEND,
        )
    try:
        import asyncpg
    except ImportError:  # pragma: no cover - the adapter cannot run without asyncpg anyway
        asyncpg = None  # type: ignore[assignment]

    if isinstance(exc, UnicodeError):
        # a parameter PostgreSQL cannot take (a lone surrogate): the request's fault, and the
        # message names no table
        return InvalidQuery("postgres: a value of the request is not valid Unicode")
    if asyncpg is not None and isinstance(exc, asyncpg.PostgresError):
        state = getattr(exc, "sqlstate", None) or ""
        if state in _INPUT_STATES:
            return InvalidQuery(
                "postgres: a value of the request cannot be stored or searched "
                "(NUL characters and invalid byte sequences are not allowed in text)"
            )
        if state in _TIMEOUT_STATES:
            return BackendTimeout(
                f"postgres: {action} was cancelled by the server ({exc}); check "
                "statement_timeout / lock_timeout and locks held by other sessions",
                backend=BACKEND,
            )
        if state in _UNAVAILABLE_STATES or state.startswith("08"):
            return BackendUnavailable(
                f"postgres: {action} failed: the server refused or dropped the connection "
                f"({exc}); {_CHECK_SERVER}, and max_connections",
                backend=BACKEND,
            )
        if state in _AUTH_STATES:
            return ConfigurationError(
                f"postgres: {action} failed: authentication refused ({exc}); check the user "
                "and password in the DSN and pg_hba.conf"
            )
        if state == "3D000":  # invalid_catalog_name
            return ConfigurationError(
                f"postgres: {action} failed: {exc}; check the database name in the DSN"
            )
        if state == "42501":  # insufficient_privilege
            return ConfigurationError(
                f"postgres: {action} failed: {exc}; check that the DSN's role may create and "
                "use hexrag's tables (and the vector extension) in the configured schema"
            )
        if state == "42704" or state == "58P01":  # undefined_object, undefined_file
            return ConfigurationError(
                f"postgres: {action} failed: {exc}; check that the pgvector extension is "
                "installed on the server and that its schema is on the search_path"
            )
        if state in _MISSING_RELATION_STATES:
            if "lightrag_" in str(exc).lower():  # LightRAG's own tables: never hexrag's to make
                return NotFound(
                    f"postgres: {action} failed: {exc}; this LightRAG table does not exist: "
                    "check the database, schema and workspace, and that LightRAG initialised "
                    "its storages there (hexrag reads LightRAG's tables, it does not create them)"
                )
            return NotFound(
                f"postgres: {action} failed: {exc}; check that hexrag's tables exist (a "
                "command that writes creates them on first use unless create_tables=False; "
                "check, documents and export only read, so a missing table means a wrong "
                "database, schema, namespace or workspace)"
            )
        return BackendError(f"postgres: {action} failed: {exc}", backend=BACKEND)

    if asyncpg is not None and isinstance(exc, asyncpg.InterfaceError):
        text = str(exc).lower()
        if (
            "closed" in text
            or "closing" in text
            or isinstance(exc, asyncpg.ConnectionDoesNotExistError)
        ):
            return BackendUnavailable(
                f"postgres: {action} failed: the connection or pool is closed ({exc}); "
                f"{_CHECK_SERVER}, and that the pool was not closed",
                backend=BACKEND,
            )
        if isinstance(exc, asyncpg.ClientConfigurationError):
            return ConfigurationError(f"postgres: {action} failed: {exc}; check the DSN")
        return BackendError(f"postgres: {action} failed: {exc}", backend=BACKEND)

    if isinstance(exc, OSError):  # refused, no such socket file, unknown host, reset ...
        return BackendUnavailable(
            f"postgres: {action} failed: cannot reach the server ({exc}); {_CHECK_SERVER}",
            backend=BACKEND,
        )
    if isinstance(exc, ValueError):  # asyncpg's DSN parser
        return ConfigurationError(f"postgres: {action} failed: {exc}; check the DSN")
    return BackendError(f"postgres: {action} failed: {exc!r}", backend=BACKEND)


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Re-raise driver/OS exceptions raised inside the block as hexrag errors."""
    try:
        yield
    except HexragError:
        raise
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise translate_error(exc, action=action) from exc
