"""Neo4j driver exceptions -> hexrag errors (the adapter boundary)."""

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
)

__all__ = ["BACKEND", "translate_error", "translate_errors"]

BACKEND = "neo4j"


def translate_error(exc: BaseException, action: str) -> HexragError:
    """The hexrag error for a driver (or socket) exception raised during ``action``."""
    from neo4j import exceptions as nexc

    code = str(getattr(exc, "code", "") or "")
    where = f"neo4j: {action} failed"
    if isinstance(exc, HexragError):
        return exc
    if isinstance(exc, nexc.AuthError):
        return ConfigurationError(
            f"{where}: authentication refused ({exc}); check NEO4J_USER / NEO4J_PASSWORD"
        )
    if isinstance(exc, nexc.ConfigurationError):
        return ConfigurationError(f"{where}: driver configuration rejected ({exc})")
    if "DatabaseNotFound" in code:
        return ConfigurationError(
            f"{where}: database not found ({exc}); check the database name (NEO4J_DATABASE)"
        )
    if isinstance(exc, nexc.ConnectionAcquisitionTimeoutError) or "TimedOut" in code:
        return BackendTimeout(
            f"{where}: timed out ({exc}); check the server load and the driver timeouts",
            backend=BACKEND,
        )
    if isinstance(exc, TimeoutError):
        return BackendTimeout(f"{where}: timed out ({exc})", backend=BACKEND)
    if isinstance(
        exc, (nexc.ServiceUnavailable, nexc.SessionExpired, nexc.TransientError, OSError)
    ):
        return BackendUnavailable(
            f"{where}: cannot reach a usable server ({exc}); check that Neo4j is running and "
            "NEO4J_URI (scheme bolt:// or neo4j://, host, port) is right",
            backend=BACKEND,
        )
    if isinstance(exc, (nexc.Neo4jError, nexc.DriverError)):
        return BackendError(f"{where}: {exc}", backend=BACKEND)
    return BackendError(f"{where}: {type(exc).__name__}: {exc}", backend=BACKEND)


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Run a block, re-raising driver exceptions as hexrag errors (``from`` the original)."""
    from neo4j import exceptions as nexc

    try:
        yield
    except HexragError:
        raise
    except (nexc.Neo4jError, nexc.DriverError, OSError) as exc:
        raise translate_error(exc, action) from exc
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # any other driver failure (GqlError, ...) is a backend error
        if type(exc).__module__.startswith("neo4j"):
            raise BackendError(f"neo4j: {action} failed: {exc!r}", backend=BACKEND) from exc
        raise
