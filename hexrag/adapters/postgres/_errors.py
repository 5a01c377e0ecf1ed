"""Translation of asyncpg / OS exceptions into hexrag's error tree (the adapter boundary).

One mapping table (:data:`ERRORS`, read top to bottom, first match wins); asyncpg's classes
are named, not imported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager

from hexrag.adapters._error_map import ErrorMap, Rule, matches
from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    InvalidQuery,
    NotFound,
)

__all__ = ["BACKEND", "ERRORS", "translate_error", "translate_errors"]

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
_PG = "asyncpg.PostgresError"
_INTERFACE = "asyncpg.InterfaceError"


def _state(*states: str, prefix: str | None = None) -> Callable[[BaseException], bool]:
    """A test: an asyncpg server error whose SQLSTATE is one of ``states`` (or has ``prefix``)."""
    wanted = frozenset(states)

    def test(exc: BaseException) -> bool:
        if not matches(exc, _PG):
            return False
        state = getattr(exc, "sqlstate", None) or ""
        return state in wanted or (prefix is not None and state.startswith(prefix))

    return test


def _lightrag_table_missing(exc: BaseException) -> bool:
    # LightRAG's own tables: never hexrag's to make
    return _state(*_MISSING_RELATION_STATES)(exc) and "lightrag_" in str(exc).lower()


def _closed(exc: BaseException) -> bool:
    text = str(exc).lower()
    return matches(exc, _INTERFACE) and (
        "closed" in text or "closing" in text
        or matches(exc, "asyncpg.ConnectionDoesNotExistError")
    )


_FAILED = "postgres: {action} failed: {exc}"

#: The mapping table, first match wins (TimeoutError is an OSError subclass: it comes first).
ERRORS = ErrorMap(BACKEND, [
    Rule((asyncio.TimeoutError, TimeoutError), BackendTimeout,
         "postgres: {action} timed out; check the server load, locks held by other "
         "sessions, and the adapter's timeout setting"),
    # a parameter PostgreSQL cannot take (a lone surrogate): the request's fault, and the
    # message names no table
    Rule(UnicodeError, InvalidQuery, "postgres: a value of the request is not valid Unicode"),
    Rule(_state(*_INPUT_STATES), InvalidQuery,
         "postgres: a value of the request cannot be stored or searched "
         "(NUL characters and invalid byte sequences are not allowed in text)"),
    Rule(_state(*_TIMEOUT_STATES), BackendTimeout,
         "postgres: {action} was cancelled by the server ({exc}); check "
         "statement_timeout / lock_timeout and locks held by other sessions"),
    Rule(_state(*_UNAVAILABLE_STATES, prefix="08"), BackendUnavailable,
         "postgres: {action} failed: the server refused or dropped the connection "
         "({exc}); " + _CHECK_SERVER + ", and max_connections"),
    Rule(_state(*_AUTH_STATES), ConfigurationError,
         "postgres: {action} failed: authentication refused ({exc}); check the user "
         "and password in the DSN and pg_hba.conf"),
    Rule(_state("3D000"), ConfigurationError,  # invalid_catalog_name
         _FAILED + "; check the database name in the DSN"),
    Rule(_state("42501"), ConfigurationError,  # insufficient_privilege
         _FAILED + "; check that the DSN's role may create and "
         "use hexrag's tables (and the vector extension) in the configured schema"),
    Rule(_state("42704", "58P01"), ConfigurationError,  # undefined_object, undefined_file
         _FAILED + "; check that the pgvector extension is "
         "installed on the server and that its schema is on the search_path"),
    Rule(_lightrag_table_missing, NotFound,
         _FAILED + "; this LightRAG table does not exist: "
         "check the database, schema and workspace, and that LightRAG initialised "
         "its storages there (hexrag reads LightRAG's tables, it does not create them)"),
    Rule(_state(*_MISSING_RELATION_STATES), NotFound,
         _FAILED + "; check that hexrag's tables exist (a "
         "command that writes creates them on first use unless create_tables=False; "
         "check, documents and export only read, so a missing table means a wrong "
         "database, schema, namespace or workspace)"),
    Rule(_PG, BackendError, _FAILED),
    Rule(_closed, BackendUnavailable,
         "postgres: {action} failed: the connection or pool is closed ({exc}); "
         + _CHECK_SERVER + ", and that the pool was not closed"),
    Rule("asyncpg.ClientConfigurationError", ConfigurationError, _FAILED + "; check the DSN"),
    Rule(_INTERFACE, BackendError, _FAILED),
    # refused, no such socket file, unknown host, reset ...
    Rule(OSError, BackendUnavailable,
         "postgres: {action} failed: cannot reach the server ({exc}); " + _CHECK_SERVER),
    Rule(ValueError, ConfigurationError, _FAILED + "; check the DSN"),  # asyncpg's DSN parser
], otherwise="postgres: {action} failed: {exc!r}")


def translate_error(exc: BaseException, *, action: str) -> HexragError:
    """The hexrag error for a driver/OS exception raised while doing ``action``.

    The message names the backend and what to check; the caller raises it ``from exc``.
    A :class:`~hexrag.domain.errors.HexragError` is returned unchanged.
    """
    return ERRORS.translate(exc, action=action)


def translate_errors(action: str) -> AbstractContextManager[None]:
    """Re-raise driver/OS exceptions raised inside the block as hexrag errors."""
    return ERRORS.translating(action=action)
