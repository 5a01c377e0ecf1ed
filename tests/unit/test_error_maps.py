"""Every adapter has one error mapping, a ``translate_errors`` context manager, and every
exception class its driver defines comes out of it as a :class:`HexragError`.

The classes are found by walking each driver's exception module (``asyncpg.exceptions``,
``redis.exceptions``, ``pymilvus.exceptions``, ``neo4j.exceptions``, ``openai`` and
``httpx``), so a driver upgrade that adds a class is covered without editing this test.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from hexrag.core.errors import HexragError


def _exception_classes(*modules: ModuleType) -> list[type[BaseException]]:
    seen: dict[str, type[BaseException]] = {}
    for module in modules:
        for _name, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Exception) and not issubclass(obj, Warning):
                seen.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return list(seen.values())


def _instance(cls: type[BaseException]) -> BaseException | None:
    for args in (("boom",), (), ("boom", None), ("boom", "detail")):
        try:
            return cls(*args)
        except Exception:
            continue
    try:
        exc = cls.__new__(cls)
        exc.args = ("boom",)
        return exc
    except Exception:
        return None


def _check(cm: Callable[[], contextlib.AbstractContextManager[Any]],
           classes: list[type[BaseException]], extra: tuple[BaseException, ...] = ()) -> int:
    failures = []
    checked = 0
    for exc in [*(e for c in classes if (e := _instance(c)) is not None), *extra]:
        try:
            with cm():
                raise exc
        except HexragError as out:
            checked += 1
            assert out.__cause__ is exc or out is exc
        except BaseException as other:
            failures.append(f"{type(exc).__module__}.{type(exc).__name__} -> {type(other)!r}")
    assert not failures, "\n".join(failures)
    return checked


_COMMON = (TimeoutError("t"), ConnectionRefusedError("r"), OSError("o"))


def test_postgres() -> None:
    import asyncpg.exceptions

    from hexrag.adapters.postgres._errors import translate_errors

    classes = _exception_classes(asyncpg.exceptions)
    assert _check(lambda: translate_errors("testing"), classes, _COMMON) >= 200


def test_redis() -> None:
    import redis.exceptions

    from hexrag.adapters.redis._base import translate_errors

    classes = _exception_classes(redis.exceptions)
    assert _check(lambda: translate_errors("testing"), classes, _COMMON) >= 20


def test_milvus() -> None:
    import grpc
    import pymilvus.exceptions

    from hexrag.adapters.milvus._errors import translate_errors

    classes = [*_exception_classes(pymilvus.exceptions), grpc.RpcError]
    assert _check(lambda: translate_errors("testing"), classes, _COMMON) >= 30


def test_neo4j() -> None:
    import neo4j.exceptions

    from hexrag.adapters.neo4j.errors import translate_errors

    classes = _exception_classes(neo4j.exceptions)
    assert _check(lambda: translate_errors("testing"), classes, _COMMON) >= 30


def test_openai_and_its_transport() -> None:
    import httpx
    import openai

    from hexrag.adapters.openai._common import Endpoint, MalformedResponse, translate_errors

    endpoint = Endpoint(base_url="http://127.0.0.1:9/v1", model="m", timeout=5.0)
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx.Response(500, request=request)
    extra: tuple[BaseException, ...] = (
        *_COMMON,
        MalformedResponse("not JSON"),
        openai.APIStatusError("bad", response=response, body=None),
        openai.APIConnectionError(request=request),
        openai.APITimeoutError(request=request),
    )
    classes = [c for c in _exception_classes(openai, httpx) if "openai" in c.__module__
               or "httpx" in c.__module__]
    assert _check(lambda: translate_errors(endpoint, "testing"), classes, extra) >= 30


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def test_the_checker_itself_fails_on_an_unmapped_class() -> None:
    with pytest.raises(AssertionError):
        _check(_nothing, [KeyError])


def test_every_public_exception_is_a_hexrag_error() -> None:
    """``TokenBudgetError`` and the OpenAI adapter's ``MalformedResponse`` included."""
    import hexrag
    from hexrag.adapters.openai._common import MalformedResponse
    from hexrag.core.tokenizer import TokenBudgetError

    public = [getattr(hexrag, n) for n in hexrag.__all__]
    errors = [c for c in public if inspect.isclass(c) and issubclass(c, BaseException)]
    assert errors and all(issubclass(c, HexragError) for c in errors)
    assert issubclass(TokenBudgetError, HexragError)
    assert issubclass(MalformedResponse, HexragError)
