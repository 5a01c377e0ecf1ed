"""``QdrantVectorIndex``: the :class:`hexrag.ports.VectorIndex` port on Qdrant.

How the port's promises are kept (hexrag's layout; LightRAG's differs where its
:mod:`~hexrag.adapters.qdrant.layouts` strategy says so):

* **Threshold and ranking.** Qdrant keeps ``score > score_threshold`` (strict, checked on
  qdrant-client 1.20's embedded mode) in an order that does not break ties. The adapter asks for
  candidates with a slightly lower threshold and slack beyond ``top_k``, re-scores them exactly
  (float64, :func:`hexrag.core.query.pick.cosine_scores` of the stored, normalised vectors) and
  sorts
  by ``(-score, id)``; while candidates could still tie with the cut it asks again with a
  larger limit.
* **Scope** is a typed payload filter (``IsEmpty`` or ``MatchAny`` per scoped field) inside the
  one ``query_points`` call, so ``top_k`` counts admitted records; no user value is ever
  pasted into a string.
* **Round trips.** ``upsert``/``query``/``get``/``get_vectors``/``delete``/``count`` are one
  client call each (plus a one-off collection check or creation on first use). Writes wait
  for the operation (``wait=True``), so reads see them. One ``upsert`` is one request: a
  server's request size limit (32 MB by default) bounds the batch a caller may pass.
* **Embedded Qdrant** (a directory) runs inside ``AsyncQdrantClient`` synchronously, on the
  event loop, and allows one client per directory; a server is reached over HTTP (async).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hexrag.adapters._vector_check import checked_vector
from hexrag.adapters._vector_index_props import LayoutProps
from hexrag.adapters._vector_lightrag import widened_hits
from hexrag.adapters.qdrant._errors import translate_errors
from hexrag.adapters.qdrant.layouts import HexragLayout, QdrantLayout
from hexrag.core.query.pick import cosine_scores
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import VectorHit, VectorNamespace, VectorRecord
from hexrag.domain.scope import QueryScope
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

__all__ = ["MAX_LIMIT", "QdrantVectorIndex", "connect"]

MAX_LIMIT = 16_384
_MIN_SLACK = 16
_SCORE_EPS = 1e-3


def connect(url: str, *, api_key: str | None = None, timeout: float | None = 30.0) -> Any:
    """An ``AsyncQdrantClient``: a directory path (embedded Qdrant, no server), ``:memory:``,
    or an ``http(s)://host:port`` server URL."""
    try:
        from qdrant_client import AsyncQdrantClient
    except ImportError:  # pragma: no cover - depends on the extra
        raise ConfigurationError(
            "Qdrant needs qdrant-client: pip install 'hexrag[qdrant]'"
        ) from None
    with translate_errors("connect", where=url):
        if url == ":memory:":
            return AsyncQdrantClient(location=":memory:")
        if "://" not in url:
            return AsyncQdrantClient(path=url)
        return AsyncQdrantClient(
            url=url, api_key=api_key, timeout=math.ceil(timeout) if timeout else None
        )


def vector_of(value: Any, dim: int, *, what: str) -> np.ndarray:
    """``value`` as a 1-D float32 array of length ``dim``, else :class:`ConfigurationError`."""
    return checked_vector(value, dim, what=what, backend="Qdrant", finite=True)


def _embedded(client: Any) -> bool:
    """Embedded Qdrant (its payload indexes do nothing and only warn)."""
    return "Local" in type(getattr(client, "_client", None)).__name__


class QdrantVectorIndex(LayoutProps[QdrantLayout]):
    """A :class:`~hexrag.ports.VectorIndex` on one Qdrant collection, in a layout."""

    def __init__(
        self,
        client: AsyncQdrantClient,
        *,
        collection: str,
        namespace: VectorNamespace,
        dim: int,
        cosine_threshold: float = 0.2,
        layout: QdrantLayout | None = None,
        where: str = "the given AsyncQdrantClient",
        owns_client: bool = False,
    ) -> None:
        """``client``: an ``AsyncQdrantClient`` (:func:`connect`); ``collection``: created on
        first use if missing (checked otherwise); ``layout``: :class:`HexragLayout` (default)
        or :class:`~hexrag.adapters.qdrant.layouts.LightRAGLayout`; ``owns_client``:
        :meth:`close` closes the client."""
        if dim < 1:
            raise ConfigurationError(f"dim must be positive, got {dim}")
        self._client = client
        self._collection = collection
        self._namespace = namespace
        self._dim = dim
        self._threshold = float(cosine_threshold)
        self._layout = layout or HexragLayout(namespace)
        self._where = where
        self._owns_client = owns_client
        self._ready = False
        self._lock = asyncio.Lock()

    def _errors(self, action: str) -> Any:
        return translate_errors(action, collection=self._collection, where=self._where)

    async def _ensure(self) -> None:
        if self._ready:
            return
        async with self._lock:
            if self._ready:
                return
            from qdrant_client import models

            with self._errors("setup"):
                if await self._client.collection_exists(self._collection):
                    info = await self._client.get_collection(self._collection)
                    size = getattr(info.config.params.vectors, "size", None)
                    if size is not None and int(size) != self._dim:
                        raise ConfigurationError(
                            f"Qdrant collection {self._collection!r} stores vectors of dim "
                            f"{size}, the embedder makes {self._dim}; check the embedding model"
                        )
                else:
                    await self._client.create_collection(
                        self._collection,
                        vectors_config=models.VectorParams(
                            size=self._dim, distance=models.Distance.COSINE
                        ),
                        **self._layout.create_options(),
                    )
                    tenant = self._layout.tenant_field()
                    if tenant is not None and not _embedded(self._client):
                        await self._client.create_payload_index(
                            self._collection, field_name=tenant,
                            field_schema=models.KeywordIndexParams(
                                type=models.KeywordIndexType.KEYWORD, is_tenant=True),
                        )
            self._ready = True

    # ------------------------------------------------------------------ writes

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id (the last write of an id wins; one call)."""
        from qdrant_client import models

        now = int(time.time())
        points: dict[str, Any] = {}
        for r in records:
            if not isinstance(r.id, str) or not r.id:
                raise ConfigurationError(f"record id must be a non-empty string, got {r.id!r}")
            vec = vector_of(r.vector, self._dim, what=f"record {r.id!r}")
            points[r.id] = models.PointStruct(
                id=self._layout.point_id(r.id), vector=vec.tolist(),
                payload=self._layout.payload(r, now),
            )
        if not points:
            return
        await self._ensure()
        with self._errors("upsert"):
            await self._client.upsert(self._collection, points=list(points.values()), wait=True)

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove records by id; unknown ids are ignored (one call)."""
        if not ids:
            return
        from qdrant_client import models

        await self._ensure()
        pids: list[Any] = [self._layout.point_id(i) for i in dict.fromkeys(ids)]
        with self._errors("delete"):
            await self._client.delete(
                self._collection, points_selector=models.PointIdsList(points=pids), wait=True
            )

    # ------------------------------------------------------------------ reads

    def _query_vector(self, vector: np.ndarray | Sequence[float]) -> np.ndarray:
        return vector_of(vector, self._dim, what="query vector")

    async def _points(
        self, q: np.ndarray, limit: int, threshold: float, flt: Any, vectors: bool
    ) -> list[Any]:
        with self._errors("query"):
            response = await self._client.query_points(
                self._collection, query=q.tolist(), limit=limit, with_payload=True,
                with_vectors=vectors, score_threshold=threshold, query_filter=flt,
            )
        return list(response.points)

    async def _exact(self, q: np.ndarray, top_k: int, scope: QueryScope | None) -> list[VectorHit]:
        flt = self._layout.scope_filter(scope)
        limit = min(top_k + max(top_k, _MIN_SLACK), MAX_LIMIT)
        while True:
            points = await self._points(q, limit, self._threshold - _SCORE_EPS, flt, True)
            if not points:
                return []
            matrix = np.asarray([p.vector for p in points], dtype=np.float32)
            scores = cosine_scores(matrix, q)
            ranked = sorted(
                ((float(s), p) for s, p in zip(scores, points, strict=True)
                 if s >= self._threshold),
                key=lambda item: (-item[0], str(item[1].payload["id"])),
            )[:top_k]
            if len(points) < limit or limit >= MAX_LIMIT:
                break
            unseen_max = min(float(p.score) for p in points) + _SCORE_EPS
            cut = ranked[-1][0] if len(ranked) == top_k else self._threshold
            if unseen_max < cut:
                break
            limit = min(limit * 4, MAX_LIMIT)
        return [VectorHit(record=self._layout.record(p.payload, None), score=s) for s, p in ranked]

    async def _as_backend(
        self, q: np.ndarray, top_k: int, scope: QueryScope | None
    ) -> list[VectorHit]:
        """The backend's own call (LightRAG's); a scope widens it until ``top_k`` admitted
        hits are found or the rows run out."""
        flt = self._layout.scope_filter(scope)

        async def search(limit: int) -> list[VectorHit]:
            points = await self._points(q, limit, self._threshold, flt, False)
            return [VectorHit(record=self._layout.record(p.payload, None), score=float(p.score))
                    for p in points]

        return await widened_hits(search, top_k, scope, MAX_LIMIT)

    async def _retrieve(self, ids: Sequence[str], action: str) -> dict[str, Any]:
        await self._ensure()
        pids = [self._layout.point_id(i) for i in dict.fromkeys(ids)]
        with self._errors(action):
            points = await self._client.retrieve(
                self._collection, ids=pids, with_payload=True, with_vectors=True
            )
        return {str(p.payload["id"]): p for p in points if p.payload}

    async def get(self, ids: Sequence[str]) -> list[VectorRecord | None]:
        """Records (with vectors) in request order, ``None`` for a missing id; one call."""
        if not ids:
            return []
        found = await self._retrieve(ids, "get")
        return [
            self._layout.record(found[i].payload, np.asarray(found[i].vector, dtype=np.float32))
            if i in found else None
            for i in ids
        ]

    async def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored (normalised) vectors of the ids found; one call."""
        if not ids:
            return {}
        found = await self._retrieve(ids, "get_vectors")
        return {i: np.asarray(found[i].vector, dtype=np.float32)
                for i in dict.fromkeys(ids) if i in found}

    async def count(self) -> int:
        """Number of stored records (of the layout's workspace)."""
        await self._ensure()
        with self._errors("count"):
            result = await self._client.count(
                self._collection, count_filter=self._layout.base_filter(), exact=True
            )
        return int(result.count)

    async def scan_records(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[VectorRecord]:
        """A page of records with their vectors, in point-id order (the cursor is a point id)."""
        check_scan_limit(limit)
        await self._ensure()
        with self._errors("scan"):
            points, nxt = await self._client.scroll(
                self._collection, scroll_filter=self._layout.base_filter(), limit=limit,
                offset=cursor, with_payload=True, with_vectors=True,
            )
        items = [
            self._layout.record(p.payload, np.asarray(p.vector, dtype=np.float32))
            for p in points if p.payload
        ]
        return Page(items, None if nxt is None else str(nxt))

    # ------------------------------------------------------------------ lifecycle

    async def drop(self) -> None:
        """Delete what this index holds: the collection (hexrag's layout) or the workspace's
        points (LightRAG's, whose collection is shared)."""
        from qdrant_client import models

        base = self._layout.base_filter()
        with self._errors("drop"):
            if not await self._client.collection_exists(self._collection):
                return
            if base is None:
                await self._client.delete_collection(self._collection)
            else:
                await self._client.delete(
                    self._collection, points_selector=models.FilterSelector(filter=base),
                    wait=True,
                )
        self._ready = False

    async def close(self) -> None:
        """Close the client if this index owns it."""
        if self._owns_client:
            with self._errors("close"):
                await self._client.close()

    def __repr__(self) -> str:
        return (
            f"QdrantVectorIndex(collection={self._collection!r}, namespace={self._namespace!r}, "
            f"dim={self._dim}, layout={type(self._layout).__name__})"
        )
