"""Deadlines that a frozen store cannot stretch.

``asyncio.wait_for`` cancels the awaited call on timeout and then *waits for it to finish*. A
driver call on a frozen server (PostgreSQL stopped by SIGSTOP: the socket is open, nothing
answers) does not finish when cancelled: asyncpg's cancellation and connection clean-up wait
for the server too. So ``wait_for(call, 2)`` returned only when the server resumed, which is
how ``/health`` said "no answer within 2 s" after 50 s.

:func:`within` runs the call as a task, waits for it with :func:`asyncio.wait` (which never
waits for a cancelled task), and on timeout cancels the task *without awaiting it*: the
caller gets its error at the deadline, the abandoned call finishes (or fails) whenever the
server lets it, and its outcome is retrieved by a done-callback so that nothing logs "exception
was never retrieved".

:class:`StoreDeadline` applies that to every coroutine method (and every ``async for`` step) of
any port object, naming the store's role and backend in the
:class:`~hexrag.core.errors.BackendTimeout`; :func:`engine_with_deadlines` wraps every store of a
:class:`~hexrag.core.query.engine.QueryEngine` that way (the HTTP API does it at composition, with
``STORE_TIMEOUT``). A store whose abandoned calls pile up (``max_abandoned`` still running)
fails new calls at once instead of stacking more of them on the frozen server.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

from hexrag.core.errors import BackendTimeout

__all__ = [
    "MAX_ABANDONED",
    "HealthProbes",
    "StoreDeadline",
    "abandon",
    "backend_of",
    "engine_with_deadlines",
    "within",
]

T = TypeVar("T")

#: Abandoned calls a store may have still running before new calls fail at once.
MAX_ABANDONED = 64
#: Attributes under which wrappers (tracked stores, the corpus version) keep what they wrap.
_WRAPPED = ("_inner", "inner", "_store", "_cache")


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Done-callback of an abandoned task: read its outcome (nobody else will)."""
    if not task.cancelled():
        task.exception()


def abandon(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` without waiting for it; its outcome is retrieved when it ends."""
    task.cancel()
    task.add_done_callback(_retrieve)


async def within(
    awaitable: Awaitable[T],
    timeout: float,
    on_timeout: Callable[[], BaseException],
    *,
    abandoned: Callable[[asyncio.Future[Any]], None] | None = None,
) -> T:
    """The result of ``awaitable``, or ``on_timeout()`` raised after ``timeout`` seconds.

    The deadline holds whatever the awaited call does when cancelled: on timeout (or when the
    caller is cancelled) the call's task is cancelled and abandoned, never awaited.
    ``abandoned(task)`` is told about each abandoned task (e.g. to count them).
    """
    task = asyncio.ensure_future(awaitable)
    try:
        await asyncio.wait((task,), timeout=timeout)
    except asyncio.CancelledError:
        if not task.done():
            abandon(task)
            if abandoned is not None:
                abandoned(task)
        raise
    if task.done():
        return task.result()
    abandon(task)
    if abandoned is not None:
        abandoned(task)
    raise on_timeout()


def backend_of(store: Any) -> str:
    """The backend of ``store`` (``"postgres"``, ``"redis"``, ``"milvus"``, ``"memory"``...):
    its ``backend`` attribute, or the adapter package of the innermost wrapped object."""
    obj = store
    for _ in range(8):
        if isinstance(obj, StoreDeadline):
            return obj.backend
        named = getattr(type(obj), "backend", None)
        if isinstance(named, str) and named:
            return named
        module = type(obj).__module__ or ""
        if module.startswith("hexrag.adapters."):
            return module.split(".")[2]
        attrs = getattr(obj, "__dict__", {})
        inner = next((attrs[a] for a in _WRAPPED if attrs.get(a) is not None), None)
        if inner is None:
            break
        obj = inner
    return type(obj).__module__.split(".")[0] or "unknown"


class StoreDeadline:
    """A transparent proxy giving every coroutine method of ``inner`` its own deadline.

    Each awaited call (and each step of an async iterator a method returns) gets at most
    ``timeout`` seconds; then :class:`~hexrag.core.errors.BackendTimeout` names ``role``,
    the backend and the method, and the call is abandoned (see :func:`within`). Other
    attributes are forwarded unchanged.
    """

    def __init__(
        self,
        inner: Any,
        role: str,
        timeout: float,
        *,
        backend: str | None = None,
        setting: str = "STORE_TIMEOUT",
        max_abandoned: int = MAX_ABANDONED,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        self._inner = inner
        self.role = role
        self.backend = backend or backend_of(inner)
        self.timeout = timeout
        self._setting = setting
        self._max_abandoned = max_abandoned
        self._stuck: set[asyncio.Future[Any]] = set()

    @property
    def stuck(self) -> int:
        """Abandoned calls still running."""
        return len(self._stuck)

    def _abandoned(self, task: asyncio.Future[Any]) -> None:
        self._stuck.add(task)
        task.add_done_callback(self._stuck.discard)

    def _timeout_error(self, method: str) -> BackendTimeout:
        return BackendTimeout(
            f"{self.role} ({self.backend}): {method} did not answer within "
            f"{self._setting}={self.timeout:g}s",
            backend=self.backend,
        )

    async def call(self, method: str, awaitable: Awaitable[T]) -> T:
        """``awaitable`` (a call of ``method``) within this store's deadline."""
        if len(self._stuck) >= self._max_abandoned:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            raise BackendTimeout(
                f"{self.role} ({self.backend}): {len(self._stuck)} earlier calls have not "
                f"answered within {self._setting}={self.timeout:g}s and are still pending",
                backend=self.backend,
            )
        return await within(
            awaitable, self.timeout, lambda: self._timeout_error(method),
            abandoned=self._abandoned,
        )

    async def _iterate(self, method: str, iterator: AsyncIterator[Any]) -> AsyncIterator[Any]:
        while True:
            try:
                item = await self.call(method, iterator.__anext__())
            except StopAsyncIteration:
                return
            yield item

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._inner, attr)
        if inspect.iscoroutinefunction(value):

            @functools.wraps(value)
            async def bounded(*args: Any, **kwargs: Any) -> Any:
                return await self.call(attr, value(*args, **kwargs))

            self.__dict__[attr] = bounded  # built once: later lookups skip __getattr__
            return bounded
        if inspect.isasyncgenfunction(value):

            @functools.wraps(value)
            def iterate(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                return self._iterate(attr, value(*args, **kwargs))

            self.__dict__[attr] = iterate
            return iterate
        return value

    def __repr__(self) -> str:
        return f"StoreDeadline({self._inner!r}, {self.role!r}, {self.timeout:g})"


def _wrap(store: Any, role: str, timeout: float) -> Any:
    if store is None or isinstance(store, StoreDeadline):
        return store
    return StoreDeadline(store, role, timeout)


def engine_with_deadlines(engine: Any, timeout: float) -> Any:
    """A shallow copy of ``engine`` (a :class:`~hexrag.core.query.engine.QueryEngine`) whose stores,
    cache, fragments and corpus-version read each answer within ``timeout`` seconds or raise
    :class:`~hexrag.core.errors.BackendTimeout` naming the store. ``engine`` is unchanged."""
    out = copy.copy(engine)
    stores = engine.stores
    out.stores = dataclasses.replace(
        stores,
        **{f.name: _wrap(getattr(stores, f.name), f.name, timeout)
           for f in dataclasses.fields(stores)},
    )
    out.cache = _wrap(engine.cache, "cache", timeout)
    out.fragments = _wrap(engine.fragments, "fragments", timeout)
    version = engine.corpus_version
    if version is not None and not getattr(version, "_hexrag_deadline", False):
        owner = getattr(version, "__self__", version)
        backend = backend_of(owner)

        async def corpus_version() -> str:
            return await within(
                version(), timeout,
                lambda: BackendTimeout(
                    f"corpus version ({backend}) did not answer within STORE_TIMEOUT="
                    f"{timeout:g}s",
                    backend=backend,
                ),
            )

        corpus_version._hexrag_deadline = True  # type: ignore[attr-defined]
        out.corpus_version = corpus_version
    return out


class HealthProbes:
    """``/health``'s probes: concurrent, with a deadline the answer keeps.

    ``probes`` maps a store name to an async callable that raises when the store is unhealthy
    (an ``int`` result is its record count). :meth:`run` starts each probe as a task and answers
    after at most ``timeout`` seconds, whatever the tasks do afterwards; a store whose probe
    has not answered by then is reported as such. A probe still running from an earlier
    :meth:`run` is waited for again, not started a second time, so a frozen store never has
    more than one probe stuck on it.
    """

    def __init__(
        self,
        probes: Mapping[str, Callable[[], Awaitable[Any]]],
        timeout: float,
        *,
        required: Collection[str] = (),
    ) -> None:
        self.probes = dict(probes)
        self.timeout = timeout
        self.required = frozenset(required)
        self._running: dict[str, tuple[asyncio.Task[tuple[Any, float]], float]] = {}

    async def _measure(self, check: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
        t0 = time.perf_counter()
        value = await check()
        return value, time.perf_counter() - t0

    async def run(self) -> dict[str, dict[str, Any]]:
        """Each store's ``status`` (``ok``, ``empty``: a required store with no records, or
        ``error`` with the ``error``), ``latency_ms`` and ``count``."""
        now = time.monotonic()
        tasks: dict[str, tuple[asyncio.Task[tuple[Any, float]], float]] = {}
        for name, check in self.probes.items():
            running = self._running.get(name)
            if running is None or running[0].done():
                task = asyncio.ensure_future(self._measure(check))
                task.add_done_callback(_retrieve)
                running = (task, now)
                self._running[name] = running
            tasks[name] = running
        pending = [task for task, _ in tasks.values() if not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.timeout)
        return {name: self._report(name, task, started, now)
                for name, (task, started) in tasks.items()}

    def _report(
        self, name: str, task: asyncio.Task[tuple[Any, float]], started: float, now: float
    ) -> dict[str, Any]:
        if not task.done():
            error = f"no answer within {self.timeout:g}s"
            if started < now:
                error += f" (its probe has been waiting for {time.monotonic() - started:.0f}s)"
            return {"status": "error", "error": error}
        if task.cancelled():
            return {"status": "error", "error": "probe cancelled"}
        exc = task.exception()
        if exc is not None:
            return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        value, seconds = task.result()
        count = value if isinstance(value, int) and not isinstance(value, bool) else None
        return {
            "status": "empty" if count == 0 and name in self.required else "ok",
            "latency_ms": round(1000 * seconds, 2),
            "count": count,
        }

    def cancel(self) -> None:
        """Abandon every probe still running (at shutdown)."""
        for task, _ in self._running.values():
            if not task.done():
                abandon(task)
        self._running.clear()
