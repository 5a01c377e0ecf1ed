"""hexrag.api.deadlines: deadlines that hold even when the abandoned call ignores cancellation
(as a driver call on a frozen server does; the real thing is in
tests/integration/test_attack_frozen_store.py)."""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

import pytest

from hexrag.adapters.memory import MemoryChunkStore
from hexrag.api.deadlines import HealthProbes, StoreDeadline, engine_with_deadlines, within
from hexrag.core.errors import BackendTimeout
from hexrag.core.model import QueryParam
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine


class Stubborn:
    """A store whose calls wait for ``release`` and swallow cancellation until then."""

    backend = "stubborn"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls = 0
        self.finished = 0

    async def count(self) -> int:
        self.calls += 1
        while True:
            try:
                await self.release.wait()
                self.finished += 1
                return 7
            except asyncio.CancelledError:
                continue

    async def scan(self) -> Any:
        yield 1
        await self.count()
        yield 2


def _unretrieved(loop: asyncio.AbstractEventLoop) -> list[str]:
    seen: list[str] = []
    loop.set_exception_handler(lambda _loop, ctx: seen.append(str(ctx.get("message"))))
    return seen


async def test_within_answers_at_the_deadline_and_never_waits_for_the_abandoned_call() -> None:
    seen = _unretrieved(asyncio.get_running_loop())
    store = Stubborn()
    t0 = time.perf_counter()
    with pytest.raises(BackendTimeout, match="late"):
        await within(store.count(), 0.2, lambda: BackendTimeout("late"))
    assert time.perf_counter() - t0 < 1.5
    assert store.finished == 0  # still running, abandoned
    store.release.set()
    await asyncio.sleep(0.05)
    assert store.finished == 1
    # asyncio.wait_for would have waited for it: the bug of issue 20
    store2 = Stubborn()
    task = asyncio.ensure_future(asyncio.wait_for(store2.count(), 0.1))
    await asyncio.sleep(0.5)
    assert not task.done()
    store2.release.set()
    assert await task == 7
    gc.collect()
    assert seen == []


async def test_a_failing_abandoned_call_is_retrieved() -> None:
    seen = _unretrieved(asyncio.get_running_loop())
    gate = asyncio.Event()

    async def fails_late() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await gate.wait()
            raise RuntimeError("driver cleanup failed") from None

    with pytest.raises(BackendTimeout):
        await within(fails_late(), 0.05, lambda: BackendTimeout("t"))
    gate.set()
    await asyncio.sleep(0.05)
    gc.collect()
    assert seen == []


async def test_store_deadline_names_role_backend_and_method() -> None:
    store = Stubborn()
    wrapped = StoreDeadline(store, "graph", 0.1)
    assert wrapped.backend == "stubborn" and wrapped.calls == 0  # attributes forwarded
    with pytest.raises(BackendTimeout) as caught:
        await wrapped.count()
    assert str(caught.value) == "graph (stubborn): count did not answer within STORE_TIMEOUT=0.1s"
    assert caught.value.backend == "stubborn"
    assert wrapped.stuck == 1
    # async iteration: each step has the deadline
    got = []
    with pytest.raises(BackendTimeout, match="scan"):
        async for item in wrapped.scan():
            got.append(item)
    assert got == [1]
    store.release.set()
    await asyncio.sleep(0.05)
    assert wrapped.stuck == 0
    assert await wrapped.count() == 7


async def test_a_store_with_too_many_stuck_calls_fails_at_once() -> None:
    store = Stubborn()
    wrapped = StoreDeadline(store, "chunk_store", 0.05, max_abandoned=3)
    for _ in range(3):
        with pytest.raises(BackendTimeout, match="did not answer"):
            await wrapped.count()
    t0 = time.perf_counter()
    with pytest.raises(BackendTimeout, match="3 earlier calls"):
        await wrapped.count()
    assert time.perf_counter() - t0 < 0.04
    assert store.calls == 3  # the refused call never reached the store
    store.release.set()
    await asyncio.sleep(0.05)
    assert await wrapped.count() == 7


async def test_a_cancelled_caller_abandons_the_call_without_waiting() -> None:
    store = Stubborn()
    wrapped = StoreDeadline(store, "entities", 30)
    caller = asyncio.ensure_future(wrapped.count())
    await asyncio.sleep(0.05)
    caller.cancel()
    t0 = time.perf_counter()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert time.perf_counter() - t0 < 0.5
    assert wrapped.stuck == 1
    store.release.set()
    await asyncio.sleep(0.05)
    assert wrapped.stuck == 0


async def test_health_probes_keep_their_deadline_and_do_not_stack_up() -> None:
    store = Stubborn()
    good = MemoryChunkStore()
    probes = HealthProbes({"graph": store.count, "chunk_store": good.count}, 0.2,
                          required={"graph"})
    for _ in range(3):
        t0 = time.perf_counter()
        result = await probes.run()
        assert time.perf_counter() - t0 < 1.0
        assert result["graph"]["status"] == "error"
        assert result["graph"]["error"].startswith("no answer within 0.2s")
        assert result["chunk_store"]["status"] == "ok" and result["chunk_store"]["count"] == 0
    assert store.calls == 1  # the stuck probe was waited for again, never started twice
    store.release.set()
    await asyncio.sleep(0.05)
    result = await probes.run()
    assert result["graph"]["status"] == "ok" and result["graph"]["count"] == 7
    assert store.calls == 2  # the stuck probe ended: the next /health probes afresh
    probes.cancel()


async def test_engine_with_deadlines_answers_the_same_and_leaves_the_engine_alone() -> None:
    demo = await build_demo_engine()
    wrapped = engine_with_deadlines(demo.engine, 5.0)
    assert wrapped is not demo.engine
    assert not isinstance(demo.engine.stores.graph, StoreDeadline)
    assert isinstance(wrapped.stores.graph, StoreDeadline)
    assert wrapped.stores.graph.backend == "memory"
    param = QueryParam(mode="mix")
    assert await wrapped.query_data(DEFAULT_QUESTION, param) == await demo.engine.query_data(
        DEFAULT_QUESTION, param
    )
    again = engine_with_deadlines(wrapped, 1.0)
    assert again.stores.graph is wrapped.stores.graph  # never wrapped twice
