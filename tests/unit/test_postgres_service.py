"""The PostgreSQL test service skips when it cannot start, and fails when CI requires it."""

from __future__ import annotations

import sys

import pytest

from tests.services import postgres as service


@pytest.fixture
def no_pgserver(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the pgserver wheel were not installed (and no server had been started yet)."""
    monkeypatch.setitem(sys.modules, "pgserver", None)  # makes `import pgserver` fail
    monkeypatch.setattr(service, "_SERVER", None)
    monkeypatch.setattr(service, "_START_ERROR", None)
    monkeypatch.delenv("HEXRAG_POSTGRES_DSN", raising=False)


@pytest.mark.usefixtures("no_pgserver")
def test_skips_with_a_reason_that_says_how_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEXRAG_REQUIRE_BACKENDS", raising=False)
    with pytest.raises(pytest.skip.Exception) as info:
        service.postgres_dsn()
    assert "pip install pgserver" in str(info.value)
    assert "HEXRAG_POSTGRES_DSN" in str(info.value)


@pytest.mark.usefixtures("no_pgserver")
def test_fails_when_backends_are_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEXRAG_REQUIRE_BACKENDS", "1")
    with pytest.raises(pytest.fail.Exception, match="HEXRAG_REQUIRE_BACKENDS=1"):
        service.postgres_dsn()


def test_external_dsn_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEXRAG_POSTGRES_DSN", "postgresql://u@db.example/x")
    assert service.postgres_dsn() == "postgresql://u@db.example/x"
