"""Test services: real backend servers started on free ports in temp dirs.

A backend that cannot start skips its tests with a reason that says how to run them, or fails
them when CI asks for every backend (``HEXRAG_REQUIRE_BACKENDS=1``; Neo4j is exempt).
"""

from __future__ import annotations

import os

import pytest

__all__ = ["require_backends", "unavailable"]


def require_backends() -> bool:
    """True when CI asked for every backend (``HEXRAG_REQUIRE_BACKENDS=1``)."""
    return os.environ.get("HEXRAG_REQUIRE_BACKENDS", "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str) -> None:
    """Skip the test with ``reason``; fail instead when backends are required."""
    if require_backends():
        pytest.fail(f"{reason} (HEXRAG_REQUIRE_BACKENDS=1 makes this a failure)", pytrace=False)
    pytest.skip(reason)
