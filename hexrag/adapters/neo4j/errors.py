"""Neo4j driver exceptions -> hexrag errors (the adapter boundary).

One mapping table (:data:`ERRORS`, first match wins); the driver's classes are named
(``"neo4j.AuthError"``), not imported.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from hexrag.adapters._error_map import ErrorMap, Rule, from_module, matches, translating
from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
)

__all__ = ["BACKEND", "ERRORS", "translate_error", "translate_errors"]

BACKEND = "neo4j"

#: What :func:`translate_errors` hands to the table; any other ``neo4j`` exception is a
#: plain backend error.
_DRIVER = ("neo4j.Neo4jError", "neo4j.DriverError", OSError)


def _code_has(word: str) -> Callable[[BaseException], bool]:
    def test(exc: BaseException) -> bool:
        return word in str(getattr(exc, "code", "") or "")

    return test


_WHERE = "neo4j: {action} failed"

#: The mapping table, first match wins.
ERRORS = ErrorMap(BACKEND, [
    Rule("neo4j.AuthError", ConfigurationError,
         _WHERE + ": authentication refused ({exc}); check NEO4J_USER / NEO4J_PASSWORD"),
    Rule("neo4j.ConfigurationError", ConfigurationError,
         _WHERE + ": driver configuration rejected ({exc})"),
    Rule(_code_has("DatabaseNotFound"), ConfigurationError,
         _WHERE + ": database not found ({exc}); check the database name (NEO4J_DATABASE)"),
    Rule(("neo4j.ConnectionAcquisitionTimeoutError", _code_has("TimedOut")), BackendTimeout,
         _WHERE + ": timed out ({exc}); check the server load and the driver timeouts"),
    Rule(TimeoutError, BackendTimeout, _WHERE + ": timed out ({exc})"),
    Rule(("neo4j.ServiceUnavailable", "neo4j.SessionExpired", "neo4j.TransientError", OSError),
         BackendUnavailable,
         _WHERE + ": cannot reach a usable server ({exc}); check that Neo4j is running and "
         "NEO4J_URI (scheme bolt:// or neo4j://, host, port) is right"),
    Rule(("neo4j.Neo4jError", "neo4j.DriverError"), BackendError, _WHERE + ": {exc}"),
], otherwise=_WHERE + ": {kind}: {exc}")


def translate_error(exc: BaseException, action: str) -> HexragError:
    """The hexrag error for a driver (or socket) exception raised during ``action``."""
    return ERRORS.translate(exc, action=action, kind=type(exc).__name__)


def _in_block(exc: BaseException, action: str) -> HexragError:
    if matches(exc, _DRIVER):
        return translate_error(exc, action)
    # any other driver failure (GqlError, ...) is a backend error
    return ERRORS.build(BackendError, _WHERE + ": {exc!r}", exc, {"action": action})


def _caught(exc: BaseException) -> bool:
    return not isinstance(exc, HexragError) and (
        matches(exc, _DRIVER) or from_module(exc, "neo4j")
    )


def translate_errors(action: str) -> AbstractContextManager[None]:
    """Run a block, re-raising driver exceptions as hexrag errors (``from`` the original)."""
    return translating(lambda exc: _in_block(exc, action), catch=_caught)
