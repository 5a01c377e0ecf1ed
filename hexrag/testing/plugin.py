"""hexrag's pytest plugin (entry point ``pytest11: hexrag``): the contract suite runs in any
project's pytest configuration.

Installed with hexrag, it is active in every pytest run of an environment that has hexrag, and
it only touches classes derived from a contract base (:data:`CONTRACT_BASES`):

* every ``async def`` test of such a class (a hypothesis ``@given`` one included) gets
  ``pytest.mark.asyncio``, so pytest-asyncio runs it in *strict* mode too (auto mode would have
  run it anyway);
* an ``async def`` fixture that such a class defines with a plain ``@pytest.fixture`` (the
  fixture a backend overrides) is run by pytest-asyncio as if it were declared with
  ``@pytest_asyncio.fixture``.

So a third party needs no ``asyncio_mode``, no marker and no ``pytest_asyncio`` import: a
``Test*`` subclass and one fixture. pytest-asyncio itself must be installed (a dependency of
the ``test`` extra).
"""

from __future__ import annotations

import inspect
from collections.abc import Generator
from typing import Any

import pytest

__all__ = ["CONTRACT_BASES", "is_contract_class"]


def _bases() -> tuple[type, ...]:
    from hexrag.testing._guard import ContractGuard

    return (ContractGuard,)


CONTRACT_BASES: tuple[type, ...] = ()
"""The contract base (every contract class and capability mixin derives from
:class:`~hexrag.testing._guard.ContractGuard`); filled on first use."""


def is_contract_class(cls: Any) -> bool:
    """Whether ``cls`` derives from one of hexrag's contract classes."""
    global CONTRACT_BASES
    if not inspect.isclass(cls):
        return False
    if not CONTRACT_BASES:
        CONTRACT_BASES = _bases()
    return issubclass(cls, CONTRACT_BASES)


def _async(func: Any) -> bool:
    func = getattr(func, "__func__", func)
    return inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> None:
    """Mark the async tests of contract classes with ``asyncio`` before pytest-asyncio looks."""
    if (
        isinstance(collector, pytest.Class)
        and is_contract_class(collector.obj)
        and name.startswith("test")
        and (_async(obj) or _async(getattr(getattr(obj, "hypothesis", None), "inner_test", None)))
    ):
        marks = getattr(obj, "pytestmark", [])
        if not any(getattr(m, "name", None) == "asyncio" for m in marks):
            pytest.mark.asyncio(obj)


@pytest.hookimpl(tryfirst=True, wrapper=True)
def pytest_fixture_setup(
    fixturedef: Any, request: pytest.FixtureRequest
) -> Generator[None, Any, Any]:
    """Let pytest-asyncio run a contract class's plain ``@pytest.fixture async def``."""
    func = getattr(fixturedef.func, "__func__", fixturedef.func)
    cls = getattr(request, "cls", None)
    if _async(func) and cls is not None and is_contract_class(cls):
        qualname = getattr(func, "__qualname__", "")
        owners = {c.__qualname__ for c in cls.__mro__}
        if qualname.rpartition(".")[0] in owners and not getattr(
            func, "_force_asyncio_fixture", False
        ):
            func._force_asyncio_fixture = True
            func._loop_scope = getattr(func, "_loop_scope", None)
    return (yield)
