"""Where a query's time goes on a PostgreSQL stack: per-stage timings, round trips per store,
the statements themselves (EXPLAIN (ANALYZE, BUFFERS)) and "the floor".

Used by ``bench/lightrag_pg_bench.py``; works on any stack whose stores are
:class:`hexrag.adapters.postgres._base.PgAdapter` instances (LightRAG's layout or hexrag's).

* :class:`Probe` instruments the store *instances* of a composed engine (nothing in hexrag
  changes): every public read is timed (an interval per call, stages being unions of intervals,
  since the engine runs branches concurrently) and every statement the adapter sends
  (``_fetch`` / ``_fetchval`` / ``_execute``) is counted and recorded with its arguments.
* :func:`floor_seconds` replays the statements one query sent, back to back, on one bare
  asyncpg connection: what the database and the driver cost for that query with no engine at
  all. hexrag's time divided by it is "x floor" (below 1 is possible: hexrag runs the local
  and global branches concurrently on a pool).
* :func:`explain` runs ``EXPLAIN (ANALYZE, BUFFERS)`` on recorded statements.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "STAGES",
    "Probe",
    "QueryProfile",
    "explain",
    "floor_seconds",
    "summarise",
]

STAGES = ("embed", "search", "graph", "chunks", "other")
"""``search``: vector searches; ``graph``: graph expansion (nodes, edges, degrees, the
relation lookup); ``chunks``: chunk recovery (chunk rows, stored chunk vectors for VECTOR
picking); ``other``: the rest of the wall time (truncation, merging, context, Python)."""

_SEARCH = {"query"}
_CHUNK_VECTOR_READS = {"get", "get_vectors", "score_ids"}
_STATEMENT_METHODS = ("_fetch", "_fetchval", "_execute")
_GRAPH_READS = (
    "get_nodes", "node_degrees", "edge_degrees", "get_node_edges", "get_edges_by_pairs",
    "get_edges_by_chunk_ids", "get_edges_by_chunk_ids_of_pairs", "get_node_edges_with_degrees",
)


@dataclass
class QueryProfile:
    """One query: wall time, per-stage busy time, statements per store."""

    wall: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    round_trips: dict[str, int] = field(default_factory=dict)
    statements: list[tuple[str, str, tuple[Any, ...]]] = field(default_factory=list)


def _union(intervals: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


class Probe:
    """Instruments the stores of one stack (``{"entities": ..., "graph": ...}``) in place."""

    def __init__(self, stores: dict[str, Any], embedder: Any | None = None) -> None:
        self._intervals: list[tuple[str, float, float]] = []
        self._statements: list[tuple[str, str, tuple[Any, ...]]] = []
        self._trips: dict[str, int] = defaultdict(int)
        for key, store in stores.items():
            self._wrap_reads(key, store)
            for name in _STATEMENT_METHODS:
                if hasattr(store, name):
                    setattr(store, name, self._counted(key, getattr(store, name)))
        if embedder is not None:
            embedder.embed = self._timed("embed", embedder.embed)

    def _wrap_reads(self, key: str, store: Any) -> None:
        if key == "graph":
            names: Iterable[str] = _GRAPH_READS
        elif key == "chunk_store":
            names = ("get_chunks", "get_chunks_and_presence", "get_chunk_metadata")
        else:
            names = (*_SEARCH, *_CHUNK_VECTOR_READS)
        for name in names:
            if not hasattr(type(store), name):
                continue
            if key == "graph":
                stage = "graph"
            elif key == "chunk_store" or name in _CHUNK_VECTOR_READS:
                stage = "chunks"
            else:
                stage = "search"
            setattr(store, name, self._timed(stage, getattr(store, name)))

    def _timed(self, stage: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self._intervals.append((stage, t0, time.perf_counter()))

        return timed

    def _counted(self, key: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def counted(action: str, sql: str, *args: Any) -> Any:
            self._trips[key] += 1
            self._statements.append((key, sql, args))
            return await fn(action, sql, *args)

        return counted

    async def measure(self, call: Callable[[], Awaitable[Any]]) -> tuple[Any, QueryProfile]:
        """Run ``call`` (one query) and return its result and profile."""
        self._intervals.clear()
        self._statements.clear()
        self._trips.clear()
        t0 = time.perf_counter()
        result = await call()
        wall = time.perf_counter() - t0
        by_stage: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for stage, a, b in self._intervals:
            by_stage[stage].append((a, b))
        stages = {s: _union(by_stage.get(s, [])) for s in STAGES if s != "other"}
        stages["other"] = max(0.0, wall - _union((a, b) for _, a, b in self._intervals))
        return result, QueryProfile(wall, stages, dict(self._trips), list(self._statements))


async def floor_seconds(conn: Any, statements: Sequence[tuple[str, str, tuple[Any, ...]]]) -> float:
    """The statements issued back to back on one bare asyncpg connection (rows fetched)."""
    t0 = time.perf_counter()
    for _key, sql, args in statements:
        await conn.fetch(sql, *args)
    return time.perf_counter() - t0


async def explain(
    conn: Any, statements: Sequence[tuple[str, str, tuple[Any, ...]]]
) -> list[tuple[str, float, str]]:
    """``(store, execution ms, first plan line)`` per statement, from EXPLAIN (ANALYZE,
    BUFFERS)."""
    out = []
    for key, sql, args in statements:
        rows = await conn.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", *args)
        lines = [r[0] for r in rows]
        ms = next(
            (float(line.split(":")[1].split()[0]) for line in lines
             if line.startswith("Execution Time")),
            float("nan"),
        )
        out.append((key, ms, lines[0].strip()[:90]))
    return out


def summarise(profiles: Sequence[QueryProfile]) -> dict[str, Any]:
    """Medians over queries: stage ms, round trips per store (and in all)."""
    stages = {s: 1000 * statistics.median(p.stages.get(s, 0.0) for p in profiles) for s in STAGES}
    keys = sorted({k for p in profiles for k in p.round_trips})
    trips = {k: statistics.median(p.round_trips.get(k, 0) for p in profiles) for k in keys}
    total = statistics.median(sum(p.round_trips.values()) for p in profiles)
    return {"stages": stages, "round_trips": trips, "total_trips": total}
