"""Where one query's milliseconds go: store round trips vs the core's Python stages.

Used by ``bench/pg_layout_bench.py`` (and usable on any composed :class:`QueryEngine`).
Nothing in hexrag changes: :class:`StageClock` wraps the store instances of one engine
(each awaited call is an interval of its store kind) and, while switched on, the stage
functions the engine module calls (``perform_search``, ``truncate``, ``recover_chunks``,
``recover_chunk_head``, ``kg_chunk_budget``, ``process_chunks``, ``user_format``, ``render_chunks``,
``render_references``). Per query it reports:

* ``sql:<kind>`` - the union of the store calls' intervals of that kind (``search``: vector
  searches; ``graph``: graph expansion; ``chunks``: chunk rows and chunk-vector scores). The
  local and global branches run concurrently, so these overlap each other in wall time;
* ``py:<stage>`` - the stage's wall time minus the store time inside it (the core's Python
  and the adapters' row decoding of that stage);
* ``py:rest`` - the wall time outside every stage and store call (parameter copy, processing
  info, the context string, the event loop).

The kinds and stages add up to more than the wall time only by the overlap of concurrent
store calls.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

__all__ = ["STAGE_FUNCTIONS", "FullChunkRead", "StageClock", "stage_table"]

STAGE_FUNCTIONS = (
    "perform_search", "vector_chunks", "truncate", "recover_chunks", "recover_chunk_head",
    "kg_chunk_budget",
    "naive_chunk_budget", "process_chunks", "user_format", "render_chunks", "render_references",
)
_STORE_KIND = {
    "entities": "search", "relationships": "search", "chunks": "search",
    "graph": "graph", "chunk_store": "chunks",
}
_CHUNK_VECTOR_READS = {"get", "get_vectors", "score_ids"}


def _union(intervals: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def _clip(
    intervals: Iterable[tuple[float, float]], a: float, b: float
) -> list[tuple[float, float]]:
    return [(max(x, a), min(y, b)) for x, y in intervals if y > a and x < b]


class _TimedStore:
    def __init__(self, kind: str, store: Any, clock: StageClock) -> None:
        self._kind = kind
        self._store = store
        self._clock = clock

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._store, attr)
        if not callable(value) or attr.startswith("_"):
            return value
        kind = self._kind
        if kind == "search" and attr in _CHUNK_VECTOR_READS:
            kind = "chunks"
        clock = self._clock

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await value(*args, **kwargs)
            finally:
                if clock.on:
                    clock.sql.append((kind, t0, time.perf_counter()))

        return timed


class StageClock:
    """Instruments one engine's stores and (while ``on``) the engine module's stages."""

    def __init__(self) -> None:
        self.on = False
        self.sql: list[tuple[str, float, float]] = []
        self.stages: list[tuple[str, float, float]] = []
        self.profiles: list[dict[str, float]] = []
        self._patched = False
        self._originals: dict[str, Callable[..., Any]] = {}

    def wrap_stores(self, stores: dict[str, Any]) -> dict[str, Any]:
        """``stores`` with each query-path store wrapped (others as they are)."""
        return {
            k: (_TimedStore(_STORE_KIND[k], v, self) if k in _STORE_KIND else v)
            for k, v in stores.items()
        }

    def patch_engine_module(self) -> None:
        """Wrap the stage functions the engine module calls (:meth:`measure` does it for the
        one query it measures and undoes it after: no other query pays for the wrappers)."""
        if self._patched:
            return
        import hexrag.core.query.engine as engine_module

        self._originals = {}
        for name in STAGE_FUNCTIONS:
            fn = getattr(engine_module, name, None)
            if fn is None:
                continue
            self._originals[name] = fn
            setattr(engine_module, name, self._stage(name, fn))
        self._patched = True

    def unpatch_engine_module(self) -> None:
        """Put the engine module's own stage functions back."""
        if not self._patched:
            return
        import hexrag.core.query.engine as engine_module

        for name, fn in self._originals.items():
            setattr(engine_module, name, fn)
        self._patched = False

    def _stage(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock = self
        import inspect

        if inspect.iscoroutinefunction(fn):

            async def astage(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    if clock.on:
                        clock.stages.append((name, t0, time.perf_counter()))

            return astage

        def stage(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if clock.on:
                    clock.stages.append((name, t0, time.perf_counter()))

        return stage

    async def measure(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """Run one query with the clock on; its breakdown is appended to ``profiles``."""
        self.sql.clear()
        self.stages.clear()
        self.patch_engine_module()
        self.on = True
        t0 = time.perf_counter()
        try:
            result = await call()
        finally:
            wall = time.perf_counter() - t0
            self.on = False
            self.unpatch_engine_module()
        prof: dict[str, float] = {"wall": wall}
        by_kind: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for kind, a, b in self.sql:
            by_kind[kind].append((a, b))
        for kind, iv in by_kind.items():
            prof[f"sql:{kind}"] = _union(iv)
        all_sql = [(a, b) for _, a, b in self.sql]
        covered: list[tuple[float, float]] = list(all_sql)
        for name, a, b in self.stages:
            inside = _union(_clip(all_sql, a, b))
            prof[f"py:{name}"] = prof.get(f"py:{name}", 0.0) + max(0.0, (b - a) - inside)
            covered.append((a, b))
        prof["py:rest"] = max(0.0, wall - _union(covered))
        self.profiles.append(prof)
        return result


def stage_table(profiles: list[dict[str, float]]) -> dict[str, float]:
    """Median ms per key over ``profiles`` (a missing key counts 0)."""
    keys = sorted({k for p in profiles for k in p}, key=lambda k: (k != "wall", k))
    return {k: 1000 * statistics.median(p.get(k, 0.0) for p in profiles) for k in keys}


class FullChunkRead:
    """A chunk store without the presence probe (``ChunksWithPresence``): stage 3 then reads
    every candidate chunk whole, as hexrag did before the head form (the "before" column)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, attr: str) -> Any:
        if attr == "get_chunks_and_presence":
            raise AttributeError(attr)
        return getattr(self._store, attr)
