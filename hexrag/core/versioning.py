"""Corpus versioning: the answer cache never serves an answer computed from older data.

LightRAG keys its answer cache by the query and its parameters only, so an answer cached
before an ingestion keeps being served after it. hexrag adds a *corpus version* to the key
(``QueryEngine(corpus_version=...)``): a token stored in the :class:`~hexrag.ports.Cache`
under the reserved key :data:`CORPUS_VERSION_KEY` and replaced by a new random token after
every write that goes through the ``Tracked*`` wrappers below. A new token means new answer
keys, so every answer computed before the write becomes unreachable (keyword-cache entries
are untouched: keywords depend on the query only).

Why this is safe under concurrency:

* a bump writes a fresh random token instead of incrementing a counter, so two writers never
  lose an update and never produce a token a reader already saw;
* the wrappers bump *after* the write has landed, and the engine reads the version *before*
  retrieval starts, so an answer stored under a version was computed from data at least as
  new as that version (a query racing a write may cache an answer under the old version,
  which no later query asks for);
* the version lives in the same cache as the answers, so every process sharing that cache
  (a Redis or PostgreSQL cache) sees a bump at once. Clearing the cache removes the version
  together with the answers it guarded.

Writes that bypass the wrappers (another program writing to the same database) are not seen;
such a writer should call :meth:`CorpusVersion.bump` or clear the cache.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Generic, TypeVar

import numpy as np

from hexrag.core.query.pick import score_ids
from hexrag.ports import Cache, ChunkStore, GraphStore, VectorIndex

__all__ = [
    "CORPUS_VERSION_KEY",
    "INITIAL_VERSION",
    "CorpusVersion",
    "TrackedChunkStore",
    "TrackedGraphStore",
    "TrackedVectorIndex",
    "track_writes",
]

log = logging.getLogger("hexrag.versioning")

#: The cache key holding the corpus version. It cannot collide with LightRAG's keys
#: (``{mode}:{cache_type}:{hash}``, modes never being ``hexrag``).
CORPUS_VERSION_KEY = "hexrag:corpus_version"

#: The version of a cache that has never seen a tracked write (or was cleared since).
INITIAL_VERSION = "0"


def _epoch_seconds() -> int:
    """The system clock in whole seconds (the default clock)."""
    return int(time.time())


class CorpusVersion:
    """The corpus version kept in ``cache`` under ``key``.

    The entry is shaped like a LightRAG cache entry (``return`` holds the token) so that
    LightRAG tools reading the same cache file or table are not surprised by it.
    Use :meth:`current` (or the instance itself) as ``QueryEngine(corpus_version=...)``.
    ``clock`` gives the epoch seconds stamped on the entry (default: the system clock).
    """

    def __init__(
        self,
        cache: Cache,
        *,
        key: str = CORPUS_VERSION_KEY,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self._cache = cache
        self._key = key
        self._clock: Callable[[], int] = clock if clock is not None else _epoch_seconds

    @property
    def key(self) -> str:
        """The reserved cache key."""
        return self._key

    @property
    def cache(self) -> Cache:
        """The cache holding the version."""
        return self._cache

    async def current(self) -> str:
        """The current version (:data:`INITIAL_VERSION` when none was stored). One round trip."""
        (entry,) = await self._cache.get_many([self._key])
        if entry is None:
            return INITIAL_VERSION
        value = entry.get("return")
        return value if isinstance(value, str) and value else INITIAL_VERSION

    async def __call__(self) -> str:
        """Same as :meth:`current`."""
        return await self.current()

    async def bump(self) -> str:
        """Store a new, never-seen version and return it. One round trip."""
        token = f"{time.time_ns():x}-{secrets.token_hex(8)}"  # a nonce, not a timestamp
        now = self._clock()
        await self._cache.set_many(
            {
                self._key: {
                    "return": token,
                    "cache_type": "corpus_version",
                    "chunk_id": None,
                    "original_prompt": "",
                    "create_time": now,
                    "update_time": now,
                    "_id": self._key,
                }
            }
        )
        return token

    def __repr__(self) -> str:
        return f"CorpusVersion(key={self._key!r}, cache={self._cache!r})"


_S = TypeVar("_S", VectorIndex, GraphStore, ChunkStore)


class _Read:
    """An unchanged read: the wrapped store's own attribute of that name (a method comes back
    bound to the wrapped store, a property as its value)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __get__(self, obj: _Tracked[Any] | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj._inner, self._name)


class _Write(_Read):
    """A write: the wrapped store's method of that name, then a version bump
    (:meth:`_Tracked._write`)."""

    def __get__(self, obj: _Tracked[Any] | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return partial(obj._write, getattr(obj._inner, self._name))


class _Tracked(Generic[_S]):
    """Shared plumbing: run a write, then bump the version.

    A subclass names its port's ``writes`` (each runs the wrapped store's method, then bumps
    the version) and ``reads`` (each is the wrapped store's own, unchanged) as class keywords;
    they become class attributes, so the wrapper declares every member of its port.

    After a successful write a failing bump propagates (the caller must learn that cached
    answers may be stale). After a failed write the version is bumped anyway, because the
    write may have landed partly; a bump failure is then logged and the write's error raised.
    """

    def __init_subclass__(
        cls, *, writes: Sequence[str] = (), reads: Sequence[str] = (), **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        for name in writes:
            setattr(cls, name, _Write(name))
        for name in reads:
            setattr(cls, name, _Read(name))

    def __init__(self, inner: _S, version: CorpusVersion) -> None:
        self._inner: _S = inner
        self._version = version

    @property
    def inner(self) -> Any:
        """The wrapped store."""
        return self._inner

    @property
    def version(self) -> CorpusVersion:
        """The corpus version this wrapper bumps."""
        return self._version

    async def _write(
        self, write: Callable[..., Awaitable[None]], *args: Any, **kwargs: Any
    ) -> None:
        """``await write(*args, **kwargs)``, then bump the version (after a failure too, see
        above)."""
        try:
            await write(*args, **kwargs)
        except BaseException as exc:
            await self._after_write(exc)
            raise
        await self._after_write(None)

    async def _after_write(self, failed: BaseException | None) -> None:
        if failed is None:
            await self._version.bump()
            return
        try:
            await self._version.bump()
        except Exception as exc:  # the write's own error matters more
            log.warning("could not bump the corpus version after a failed write: %s", exc)

    def __getattr__(self, name: str) -> Any:
        # Adapter extras (aclose, ensure_tables, iter_nodes...) stay reachable. Private names
        # are not forwarded (and copy/pickle probes never recurse through a missing _inner).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inner!r})"


class TrackedVectorIndex(
    _Tracked[VectorIndex],
    writes=("upsert", "delete"),
    reads=("namespace", "dim", "cosine_threshold", "query", "get", "get_vectors", "count"),
):
    """A :class:`~hexrag.ports.VectorIndex` that bumps the corpus version after each write
    (``upsert``, ``delete``); its reads are the wrapped index's own."""

    async def score_ids(self, ids: Sequence[str], vector: np.ndarray) -> np.ndarray:
        """Unchanged read (the inner index's own scoring when it has one)."""
        return await score_ids(self._inner, ids, vector)


class TrackedGraphStore(
    _Tracked[GraphStore],
    writes=("upsert_nodes", "upsert_edges", "delete_nodes", "delete_edges"),
    reads=(
        "get_nodes", "node_degrees", "edge_degrees", "get_node_edges", "get_edges_by_pairs",
        "get_edges_by_chunk_ids", "count_nodes", "count_edges",
    ),
):
    """A :class:`~hexrag.ports.GraphStore` that bumps the corpus version after each write
    (``upsert_nodes``, ``upsert_edges``, ``delete_nodes``, ``delete_edges``); its reads are the
    wrapped store's own."""


class TrackedChunkStore(
    _Tracked[ChunkStore],
    writes=("upsert_chunks", "delete_chunks"),
    reads=("get_chunks", "count"),
):
    """A :class:`~hexrag.ports.ChunkStore` that bumps the corpus version after each write
    (``upsert_chunks``, ``delete_chunks``); its reads are the wrapped store's own."""


def track_writes(
    version: CorpusVersion,
    *,
    entities: VectorIndex,
    relationships: VectorIndex,
    chunks: VectorIndex,
    graph: GraphStore,
    chunk_store: ChunkStore,
) -> dict[str, Any]:
    """The five stores wrapped so that each write bumps ``version``.

    Returns ``QueryEngine`` keyword arguments (``entities``, ``relationships``, ``chunks``,
    ``graph``, ``chunk_store``). Wrapping an already tracked store is a no-op.
    """

    def vec(index: VectorIndex) -> VectorIndex:
        if isinstance(index, TrackedVectorIndex):
            return index
        return TrackedVectorIndex(index, version)

    return {
        "entities": vec(entities),
        "relationships": vec(relationships),
        "chunks": vec(chunks),
        "graph": graph
        if isinstance(graph, TrackedGraphStore)
        else TrackedGraphStore(graph, version),
        "chunk_store": chunk_store
        if isinstance(chunk_store, TrackedChunkStore)
        else TrackedChunkStore(chunk_store, version),
    }
