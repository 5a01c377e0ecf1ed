"""One way to translate a driver's exceptions into hexrag's error tree: a mapping table.

In the style of httpx's ``map_exceptions``: each backend declares an :class:`ErrorMap`, an
ordered table of :class:`Rule` rows (which exceptions -> which hexrag error, with a message
template); the first row that matches an exception decides. The table is read top to bottom,
so a narrower row must come before a wider one (``TimeoutError`` before ``OSError``).

A row's ``when`` is an exception class, a class *name* (so that a table can name a driver's
classes without importing the driver), a predicate, or a tuple of those (any of them). A name
``"Name"`` matches a class of that name anywhere in the exception's MRO; ``"pkg.Name"``
matches only a class of that name defined in package ``pkg`` (or one of its modules).

The message is a :meth:`str.format` template; ``{exc}`` is the exception (``{exc!r}`` its
repr) and every other field is what the caller passes to :meth:`ErrorMap.translate`::

    ERRORS = ErrorMap("redis", [
        Rule(("redis.TimeoutError", TimeoutError), BackendTimeout, "redis: {action} timed out"),
        Rule("redis.RedisError", BackendError, "redis: {action} failed: {exc}"),
    ], otherwise="redis: {action} failed: {exc!r}")

    with ERRORS.translating(action="get"):   # raise ERRORS.translate(exc, ...) from exc
        ...

Backend errors get ``backend=`` the map's backend. A :class:`HexragError` is returned
unchanged, and by default passes a ``translating`` block untouched, as does cancellation.
This module imports nothing of hexrag but the domain's errors, and no driver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from hexrag.domain.errors import BackendError, HexragError

__all__ = [
    "ErrorMap",
    "Matcher",
    "Rule",
    "class_names",
    "from_module",
    "grpc_code",
    "matches",
    "translating",
]

#: What a row can match on: a class, a class name (``"Name"`` or ``"pkg.Name"``), a predicate.
Matcher = type[BaseException] | str | Callable[[BaseException], bool]


def class_names(exc: BaseException) -> set[str]:
    """The names of every class in ``exc``'s MRO (driver classes recognised without import)."""
    return {cls.__name__ for cls in type(exc).__mro__}


def _has_class(exc: BaseException, qualified: str) -> bool:
    package, _, name = qualified.rpartition(".")
    for cls in type(exc).__mro__:
        if cls.__name__ != name:
            continue
        module = cls.__module__
        if not package or module == package or module.startswith(package + "."):
            return True
    return False


def from_module(exc: BaseException, *prefixes: str) -> bool:
    """Whether the name of the module defining ``exc``'s class starts with one of
    ``prefixes`` (``"httpx"`` takes ``httpx._exceptions``, and ``httpx2`` too)."""
    return type(exc).__module__.startswith(prefixes)


def grpc_code(exc: BaseException) -> str | None:
    """The name of a gRPC error's status code (``"UNAVAILABLE"``, ...), else None."""
    code = getattr(exc, "code", None)
    if not callable(code):
        return None
    try:
        value = code()
    except Exception:
        return None
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else None


def matches(exc: BaseException, when: Matcher | tuple[Matcher, ...]) -> bool:
    """Whether ``exc`` matches ``when`` (a tuple: any of its items)."""
    if isinstance(when, tuple):
        return any(matches(exc, item) for item in when)
    if isinstance(when, str):
        return _has_class(exc, when)
    if isinstance(when, type):
        return isinstance(exc, when)
    return bool(when(exc))


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of an :class:`ErrorMap`: exceptions matching ``when`` become ``error`` with
    ``message`` (a :meth:`str.format` template, see the module docstring)."""

    when: Matcher | tuple[Matcher, ...]
    error: type[HexragError]
    message: str


class ErrorMap:
    """An ordered table of :class:`Rule` rows for one backend; the first match decides.

    ``otherwise`` is the message of the :class:`BackendError` for an exception no row
    matches (default ``"{exc!r}"``). ``keep`` says which exceptions :meth:`translate`
    returns unchanged (default: every :class:`HexragError`).
    """

    def __init__(
        self,
        backend: str,
        rules: Iterable[Rule],
        *,
        otherwise: str = "{exc!r}",
        keep: Callable[[BaseException], bool] | None = None,
    ) -> None:
        self.backend = backend
        self.rules = tuple(rules)
        self.otherwise = otherwise
        self._keep = _is_hexrag if keep is None else keep

    def translate(self, exc: BaseException, **fields: Any) -> HexragError:
        """The hexrag error for ``exc`` (``fields`` fill the message template); a
        :class:`HexragError` (what ``keep`` accepts) is returned unchanged. The caller raises
        the result ``from exc``."""
        if self._keep(exc) and isinstance(exc, HexragError):
            return exc
        for rule in self.rules:
            if matches(exc, rule.when):
                return self.build(rule.error, rule.message, exc, fields)
        return self.build(BackendError, self.otherwise, exc, fields)

    def build(
        self, error: type[HexragError], template: str, exc: BaseException, fields: dict[str, Any]
    ) -> HexragError:
        """``error`` with the filled ``template`` (and ``backend=`` for a backend error)."""
        message = template.format(exc=exc, **fields)
        if issubclass(error, BackendError):
            return error(message, backend=self.backend)
        return error(message)

    def translating(
        self, *, catch: Callable[[BaseException], bool] | None = None, **fields: Any
    ) -> AbstractContextManager[None]:
        """A block whose exceptions are re-raised as :meth:`translate` gives them (see
        :func:`translating`)."""
        return translating(lambda exc: self.translate(exc, **fields), catch=catch)


def _is_hexrag(exc: BaseException) -> bool:
    return isinstance(exc, HexragError)


def _not_hexrag(exc: BaseException) -> bool:
    return not isinstance(exc, HexragError)


@contextmanager
def translating(
    translate: Callable[[BaseException], HexragError],
    *,
    catch: Callable[[BaseException], bool] | None = None,
) -> Iterator[None]:
    """Re-raise an exception of the block that ``catch`` accepts (default: any but a
    :class:`HexragError`) as ``translate(exc)``, ``from`` the original; anything else, and
    cancellation, passes through unchanged."""
    accept = _not_hexrag if catch is None else catch
    try:
        yield
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if not accept(exc):
            raise
        raise translate(exc) from exc
