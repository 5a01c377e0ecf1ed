"""Neo4j for tests: an external server (``NEO4J_URI``) or a testcontainers Neo4j 5.

No Neo4j can run in hexrag's CI (no Docker engine, no package), so Neo4j is the one backend
exempt from ``HEXRAG_REQUIRE_BACKENDS``: without a server its tests skip with :data:`HOW_TO`.
Each test gets its own workspace label and drops it afterwards.
"""

from __future__ import annotations

import atexit
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.services import require_backends

__all__ = [
    "HOW_TO",
    "Neo4jTarget",
    "neo4j_store",
    "neo4j_target",
    "new_workspace",
    "require_backends",
]

HOW_TO = (
    "set NEO4J_URI (and NEO4J_USER / NEO4J_PASSWORD, optionally NEO4J_DATABASE) to a disposable "
    "Neo4j 5 server, e.g. `docker run -p 7687:7687 -e NEO4J_AUTH=neo4j/password neo4j:5` then "
    "NEO4J_URI=bolt://localhost:7687 NEO4J_USER=neo4j NEO4J_PASSWORD=password; or install "
    "`testcontainers` with a running Docker engine"
)

NEO4J_IMAGE = os.environ.get("HEXRAG_NEO4J_IMAGE", "neo4j:5")


@dataclass(frozen=True)
class Neo4jTarget:
    """Where the tests' Neo4j lives."""

    uri: str
    user: str | None
    password: str | None
    database: str | None


_TARGET: Neo4jTarget | None = None
_REASON: str | None = None


def _docker_works() -> bool:
    try:
        import docker
    except ImportError:
        return False
    try:
        docker.from_env().ping()
    except Exception:
        return False
    return True


def _start_container() -> Neo4jTarget | None:
    global _REASON
    try:
        from testcontainers.neo4j import Neo4jContainer
    except ImportError:
        _REASON = "NEO4J_URI is not set and testcontainers is not installed"
        return None
    if not _docker_works():
        _REASON = "NEO4J_URI is not set and no Docker engine answers"
        return None
    container = Neo4jContainer(NEO4J_IMAGE)
    try:
        container.start()
    except Exception as exc:
        _REASON = f"could not start a {NEO4J_IMAGE} container: {exc}"
        return None
    atexit.register(container.stop)
    return Neo4jTarget(
        uri=container.get_connection_url(),
        user=getattr(container, "username", "neo4j"),
        password=container.password,
        database=None,
    )


def target() -> Neo4jTarget:
    """The Neo4j to test against; skips the test (with :data:`HOW_TO`) when there is none."""
    global _TARGET, _REASON
    if _TARGET is None and _REASON is None:
        uri = os.environ.get("NEO4J_URI")
        if uri:
            _TARGET = Neo4jTarget(
                uri=uri,
                user=os.environ.get("NEO4J_USER") or os.environ.get("NEO4J_USERNAME"),
                password=os.environ.get("NEO4J_PASSWORD"),
                database=os.environ.get("NEO4J_DATABASE") or None,
            )
        else:
            _TARGET = _start_container()
    if _TARGET is None:
        # Neo4j is exempt from HEXRAG_REQUIRE_BACKENDS: CI cannot run it.
        pytest.skip(f"Neo4j unavailable ({_REASON}); to run: {HOW_TO}")
    return _TARGET


def new_workspace() -> str:
    """A fresh workspace label for one test."""
    return f"hexrag_test_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def neo4j_target() -> Neo4jTarget:
    """The test Neo4j (skips when none)."""
    return target()


@pytest.fixture
async def neo4j_driver(neo4j_target: Neo4jTarget) -> AsyncIterator[Any]:
    """An async driver on the test Neo4j, closed after the test."""
    from neo4j import AsyncGraphDatabase

    auth = (neo4j_target.user, neo4j_target.password or "") if neo4j_target.user else None
    driver = AsyncGraphDatabase.driver(neo4j_target.uri, auth=auth)
    try:
        yield driver
    finally:
        await driver.close()


@pytest.fixture
async def neo4j_store(neo4j_driver: Any, neo4j_target: Neo4jTarget) -> AsyncIterator[Any]:
    """A fresh :class:`Neo4jGraphStore` in its own workspace label, dropped afterwards."""
    from hexrag.adapters.neo4j import Neo4jGraphStore

    store = Neo4jGraphStore(neo4j_driver, workspace=new_workspace(), database=neo4j_target.database)
    try:
        yield store
    finally:
        await store.drop()
