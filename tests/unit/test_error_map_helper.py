"""The shared error-translation helper (``hexrag.adapters._error_map``): an ordered mapping
table, first match wins, and the context manager every backend's ``translate_errors`` uses."""

from __future__ import annotations

import asyncio

import pytest

from hexrag.adapters._error_map import (
    ErrorMap,
    Rule,
    class_names,
    from_module,
    grpc_code,
    matches,
    translating,
)
from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    NotFound,
)


def _driver_class(name: str, module: str, base: type[Exception] = Exception) -> type[Exception]:
    """A class as a driver would define it, without importing a driver."""
    return type(name, (base,), {"__module__": module})


DriverError = _driver_class("DriverError", "fakedriver._errors")
DriverTimeout = _driver_class("DriverTimeout", "fakedriver.net", DriverError)
ElsewhereError = _driver_class("DriverError", "otherpkg.errors")  # same name, other package

MAP = ErrorMap("fake", [
    Rule((DriverTimeout, TimeoutError), BackendTimeout, "fake: {action} timed out ({exc})"),
    Rule("fakedriver.DriverError", BackendError, "fake: {action} failed: {exc}"),
    Rule(lambda exc: "missing" in str(exc), NotFound, "fake: {action}: no such thing"),
    Rule(OSError, BackendUnavailable, "fake: {action}: cannot reach it"),
    Rule(ValueError, ConfigurationError, "fake: {action}: bad setting {exc!r}"),
], otherwise="fake: {action} failed unexpectedly: {exc!r}")


def test_the_first_matching_row_decides() -> None:
    # DriverTimeout is also a DriverError: the narrower row above wins
    out = MAP.translate(DriverTimeout("slow"), action="get")
    assert type(out) is BackendTimeout
    assert str(out) == "fake: get timed out (slow)"
    # TimeoutError is an OSError: its row comes first
    assert type(MAP.translate(TimeoutError("t"), action="get")) is BackendTimeout
    assert type(MAP.translate(ConnectionRefusedError("r"), action="get")) is BackendUnavailable


def test_a_qualified_name_matches_only_that_package() -> None:
    assert type(MAP.translate(DriverError("x"), action="a")) is BackendError
    # the same class name from another package is not the driver's: the fallback takes it
    out = MAP.translate(ElsewhereError("x"), action="a")
    assert type(out) is BackendError
    assert str(out).startswith("fake: a failed unexpectedly: ")
    assert matches(DriverTimeout(), "DriverError")  # an unqualified name: any package
    assert matches(ElsewhereError(), "DriverError")
    assert not matches(ElsewhereError(), "fakedriver.DriverError")
    assert matches(DriverTimeout(), "fakedriver.DriverError")  # a base class in the MRO


def test_predicates_tuples_and_templates() -> None:
    out = MAP.translate(KeyError("missing key"), action="read")
    assert type(out) is NotFound and str(out) == "fake: read: no such thing"
    out = MAP.translate(ValueError("v"), action="open")
    assert type(out) is ConfigurationError
    assert str(out) == "fake: open: bad setting ValueError('v')"
    assert matches(ValueError(), (KeyError, lambda exc: isinstance(exc, ValueError)))
    assert not matches(ValueError(), (KeyError, "TypeError"))


def test_backend_errors_name_the_backend_and_others_do_not() -> None:
    out = MAP.translate(DriverError("x"), action="a")
    assert isinstance(out, BackendError) and out.backend == "fake"
    assert not hasattr(MAP.translate(ValueError("v"), action="a"), "backend")


def test_an_unknown_exception_is_a_backend_error_with_its_repr() -> None:
    out = MAP.translate(RuntimeError("odd"), action="a")
    assert type(out) is BackendError and out.backend == "fake"
    assert str(out) == "fake: a failed unexpectedly: RuntimeError('odd')"


def test_hexrag_errors_are_kept_unless_keep_says_otherwise() -> None:
    mine = NotFound("mine")
    assert MAP.translate(mine, action="a") is mine
    mapping_everything = ErrorMap("fake", [Rule(NotFound, BackendError, "wrapped: {exc}")],
                                  keep=lambda exc: False)
    out = mapping_everything.translate(mine)
    assert type(out) is BackendError and str(out) == "wrapped: mine"


def test_translating_raises_the_mapped_error_from_the_original() -> None:
    original = DriverError("boom")
    with pytest.raises(BackendError) as info, MAP.translating(action="write"):
        raise original
    assert info.value.__cause__ is original
    assert str(info.value) == "fake: write failed: boom"


def test_translating_lets_hexrag_errors_cancellation_and_refused_exceptions_through() -> None:
    mine = ConfigurationError("mine")
    with pytest.raises(ConfigurationError) as info, MAP.translating(action="a"):
        raise mine
    assert info.value is mine
    with pytest.raises(asyncio.CancelledError), MAP.translating(action="a"):
        raise asyncio.CancelledError
    only_driver = MAP.translating(catch=lambda exc: from_module(exc, "fakedriver"), action="a")
    with pytest.raises(KeyError), only_driver:
        raise KeyError("our own bug")
    with pytest.raises(BackendTimeout), translating(
        lambda exc: BackendTimeout(f"t: {exc}", backend="x")
    ):
        raise ValueError("v")


def test_the_small_helpers() -> None:
    assert {"DriverTimeout", "DriverError", "Exception"} <= class_names(DriverTimeout())
    assert from_module(DriverTimeout(), "fakedriver")
    assert not from_module(ValueError(), "fakedriver")

    class Code:
        name = "UNAVAILABLE"

    class Rpc(Exception):
        def code(self) -> Code:
            return Code()

    class Broken(Exception):
        def code(self) -> Code:
            raise RuntimeError("half-built")

    assert grpc_code(Rpc()) == "UNAVAILABLE"
    assert grpc_code(Broken()) is None
    assert grpc_code(ValueError()) is None


def test_every_backend_declares_its_table_with_this_helper() -> None:
    """The error translators of the adapters are tables of this helper, not hand-written
    if-chains (the issue-23 rule: one way to translate errors)."""
    from hexrag.adapters.milvus import _errors as milvus
    from hexrag.adapters.neo4j import errors as neo4j
    from hexrag.adapters.openai import _common as openai
    from hexrag.adapters.postgres import _errors as postgres
    from hexrag.adapters.qdrant import _errors as qdrant
    from hexrag.adapters.redis import _base as redis
    from hexrag.adapters.rerank_http import reranker as rerank

    for module, backend in ((milvus, "milvus"), (neo4j, "neo4j"), (openai, "openai"),
                            (postgres, "postgres"), (qdrant, "qdrant"), (redis, "redis"),
                            (rerank, "rerank")):
        assert isinstance(module.ERRORS, ErrorMap), module.__name__
        assert module.ERRORS.backend == backend
        assert module.ERRORS.rules and all(isinstance(r, Rule) for r in module.ERRORS.rules)
        assert all(issubclass(r.error, HexragError) for r in module.ERRORS.rules)
