"""``MilvusVectorIndex``: the :class:`hexrag.ports.VectorIndex` port on Milvus / Milvus Lite.

The index holds a layout strategy (:mod:`hexrag.adapters.milvus.layouts`): hexrag's own (the
default, below) or LightRAG 1.5.7's (``MilvusVectorDBStorage``'s collections, ranked by
LightRAG's own call, as its ``traits`` declare). How hexrag's layout keeps the port's promises:

* **Schema.** Created on first use, explicit (no dynamic fields); see
  :mod:`hexrag.adapters.milvus._convert` for the columns. Scope values are stored as
  ``ARRAY<VARCHAR>`` columns (``product_ids``, ``category_ids``, ``doc_ids``) computed by
  :func:`hexrag.core.scope.scope_values`, so the scope pre-filter runs inside Milvus and
  ``top_k`` counts only admitted records. An existing collection is checked (dimension,
  fields) and loaded instead. Requires Milvus >= 2.5 (nullable fields) or Milvus Lite >= 3.
* **Filters.** Built only by :mod:`hexrag.adapters.milvus._filter` from escaped literals;
  ``get``/``delete`` never use pymilvus' ``ids=`` shortcut, which pastes ids into
  ``'...'`` unescaped.
* **Threshold and ranking.** LightRAG passes ``radius=cosine_threshold`` (Milvus range
  search keeps ``score > radius``, strictly). The port wants ``score >= threshold``, best
  first, ties by id. The adapter asks Milvus for candidates with a slightly lower radius and
  some slack beyond ``top_k``, re-scores them exactly (float64, :func:`cosine_scores`) and
  sorts by ``(-score, id)``. If the slack is exhausted while candidates still tie with the
  cut (within float32 noise), it asks again with a larger limit - the only case in which a
  query takes more than one round trip. Results equal a brute-force oracle when the index is
  exact (``FLAT``, the default); with an ANN index (``HNSW``, ``IVF_FLAT``, ``AUTOINDEX`` -
  which on Milvus Lite 3.2 also turns approximate once its background index build has run
  after a flush) Milvus may miss candidates, including in-scope hits of a filtered search.
* **Read-your-writes.** The collection is created with ``Strong`` consistency and every
  read passes ``consistency_level="Strong"`` (an existing collection may have another level).
* **Round trips.** ``upsert``/``query``/``get``/``get_vectors``/``delete``/``count`` are one
  Milvus call each (plus a one-off collection check/creation on the instance's first use).
  pymilvus is synchronous; calls run in a worker thread so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack, get_args

import numpy as np

from hexrag.adapters._names import checked_name
from hexrag.adapters._vector_index_props import LayoutProps
from hexrag.adapters._vector_lightrag import widened_hits
from hexrag.adapters.milvus._convert import cosine_scores, vector_of, vectors_by_id
from hexrag.adapters.milvus._errors import translate
from hexrag.adapters.milvus._filter import ids_filter, quote_string
from hexrag.adapters.milvus.layouts import MilvusLayout
from hexrag.domain.errors import ConfigurationError, HexragError, NotFound
from hexrag.domain.records import VectorHit, VectorNamespace, VectorRecord
from hexrag.domain.scope import QueryScope
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

if TYPE_CHECKING:
    from pymilvus import MilvusClient

__all__ = ["IndexType", "MilvusIndexOptions", "MilvusVectorIndex"]

IndexType = Literal["AUTOINDEX", "FLAT", "HNSW", "IVF_FLAT"]
_INDEX_TYPES: tuple[str, ...] = get_args(IndexType)
_NAMESPACES: tuple[str, ...] = get_args(VectorNamespace)
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")

# Milvus' maximum topk / query limit.
MAX_LIMIT = 16384
# Bound on |Milvus' float32 score - exact score| (float32 dot products over up to a few
# thousand dimensions stay well inside it).
_SCORE_EPS = 1e-4
_MIN_SLACK = 16

_T = TypeVar("_T")

#: seconds each Milvus call may take unless ``timeout`` says otherwise
_DEFAULT_TIMEOUT = 30.0


class MilvusIndexOptions(TypedDict, total=False):
    """The options :class:`MilvusVectorIndex` and its :meth:`~MilvusVectorIndex.from_uri` share
    (documented on the constructor)."""

    cosine_threshold: float
    index_type: IndexType
    index_params: Mapping[str, Any] | None
    search_params: Mapping[str, Any] | None
    timeout: float | None
    layout: MilvusLayout | None


class MilvusVectorIndex(LayoutProps[MilvusLayout]):
    """A :class:`~hexrag.ports.VectorIndex` stored in one Milvus collection.

    The main constructor takes a ready ``pymilvus.MilvusClient`` and opens no connection;
    :meth:`from_uri` is the convenience path (Milvus Lite for a local ``*.db`` path, a
    server for ``http(s)://host:port``). Driver exceptions surface as
    :class:`~hexrag.core.errors.BackendUnavailable`, :class:`~hexrag.core.errors.BackendTimeout`,
    :class:`~hexrag.core.errors.ConfigurationError`, :class:`~hexrag.core.errors.NotFound` or
    :class:`~hexrag.core.errors.BackendError` with ``backend="milvus"``.
    """

    def __init__(
        self,
        client: MilvusClient,
        *,
        collection: str,
        namespace: VectorNamespace,
        dim: int,
        **options: Unpack[MilvusIndexOptions],
    ) -> None:
        """Wrap ``client``; nothing is sent to Milvus until the first call.

        Args:
            client: a connected ``pymilvus.MilvusClient``.
            collection: the collection name (letters, digits, ``_``; not starting with a digit).
            namespace: ``"entities"``, ``"relationships"`` or ``"chunks"``.
            dim: the embedding dimension.
            cosine_threshold: minimum cosine similarity of a hit (LightRAG's
                ``cosine_better_than_threshold``; ``COSINE_THRESHOLD``, default 0.2).
            index_type: the vector index built when the collection is created. ``FLAT`` (the
                default) is exact, as the port requires; ``AUTOINDEX`` (LightRAG's default),
                ``HNSW`` and ``IVF_FLAT`` are approximate (on Milvus Lite too, once indexed)
                and trade recall for speed on large collections.
            index_params: build parameters (defaults: LightRAG's HNSW ``M=16,
                efConstruction=360``; IVF ``nlist=1024``).
            search_params: search parameters (defaults: HNSW ``ef=max(200, limit)``; IVF
                ``nprobe=16``).
            timeout: seconds each Milvus call may take (``None``: no limit).
            layout: how records sit in the collection (default: hexrag's
                :class:`~hexrag.adapters.milvus.layouts.MilvusLayout`).
        """
        self._setup(
            client=client,
            factory=None,
            where="the given MilvusClient",
            collection=collection,
            namespace=namespace,
            dim=dim,
            **options,
        )

    @classmethod
    def from_uri(
        cls,
        uri: str = "./hexrag_milvus.db",
        *,
        namespace: VectorNamespace,
        dim: int,
        collection: str | None = None,
        token: str | None = None,
        user: str | None = None,
        password: str | None = None,
        db_name: str | None = None,
        **options: Unpack[MilvusIndexOptions],
    ) -> MilvusVectorIndex:
        """An index on the Milvus at ``uri``; the client connects lazily, on the first call.

        ``uri`` is a Milvus Lite file (a path ending in ``.db`` whose directory exists) or a
        server address (``http://host:19530``). Credentials default to the environment
        (``MILVUS_TOKEN``, ``MILVUS_USER``, ``MILVUS_PASSWORD``, ``MILVUS_DB_NAME``), as in
        LightRAG. ``collection`` defaults to ``hexrag_<namespace>``; ``options`` are the
        constructor's.
        """
        timeout = options.get("timeout", _DEFAULT_TIMEOUT)
        token = token if token is not None else os.environ.get("MILVUS_TOKEN", "")
        user = user if user is not None else os.environ.get("MILVUS_USER", "")
        password = password if password is not None else os.environ.get("MILVUS_PASSWORD", "")
        db_name = db_name if db_name is not None else os.environ.get("MILVUS_DB_NAME", "")

        def factory() -> MilvusClient:
            from pymilvus import MilvusClient

            return MilvusClient(
                uri=uri,
                user=user,
                password=password,
                token=token,
                db_name=db_name,
                timeout=timeout,
                **lite_client_options(uri),
            )

        index = cls.__new__(cls)
        index._setup(
            client=None,
            factory=factory,
            where=uri,
            collection=collection or f"hexrag_{namespace}",
            namespace=namespace,
            dim=dim,
            **options,
        )
        return index

    def _setup(
        self,
        *,
        client: MilvusClient | None,
        factory: Callable[[], MilvusClient] | None,
        where: str,
        collection: str,
        namespace: str,
        dim: int,
        cosine_threshold: float = 0.2,
        index_type: str = "FLAT",
        index_params: Mapping[str, Any] | None = None,
        search_params: Mapping[str, Any] | None = None,
        timeout: float | None = _DEFAULT_TIMEOUT,
        layout: MilvusLayout | None = None,
    ) -> None:
        if namespace not in _NAMESPACES:
            raise ConfigurationError(
                f"unknown vector namespace {namespace!r}; expected one of {list(_NAMESPACES)}"
            )
        checked_name(
            collection, _NAME_RE,
            f"invalid Milvus collection name {collection!r}: use letters, digits and '_', "
            "not starting with a digit, at most 255 characters",
        )
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ConfigurationError(f"dim must be a positive integer, got {dim!r}")
        threshold = float(cosine_threshold)
        if not math.isfinite(threshold):
            raise ConfigurationError(f"cosine_threshold must be finite, got {cosine_threshold!r}")
        if index_type not in _INDEX_TYPES:
            raise ConfigurationError(
                f"unsupported Milvus index_type {index_type!r}; expected one of "
                f"{list(_INDEX_TYPES)}"
            )
        if timeout is not None and not timeout > 0:
            raise ConfigurationError(f"timeout must be positive or None, got {timeout!r}")
        self._client = client
        self._factory = factory
        self._layout = layout or MilvusLayout(namespace)
        self._client_lock = threading.Lock()
        self._where = where
        self._collection_id: Any = None  # read on the first scan
        self._collection = collection
        self._namespace = namespace
        self._dim = dim
        self._threshold = threshold
        self._index_type = index_type
        self._index_params = dict(index_params or {})
        self._search_params = dict(search_params or {})
        self._timeout = timeout
        self._ready = False
        self._ready_lock: asyncio.Lock | None = None

    # ------------------------------------------------------------------ plumbing

    def _get_client(self) -> MilvusClient:
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    assert self._factory is not None
                    self._client = self._factory()
        return self._client

    async def _call(self, action: str, fn: Callable[[MilvusClient], _T]) -> _T:
        """Run ``fn(client)`` in a worker thread; translate driver errors."""

        def run() -> _T:
            return fn(self._get_client())

        try:
            return await asyncio.to_thread(run)
        except HexragError:
            raise
        except Exception as exc:
            error = translate(
                exc,
                action=action,
                collection=self._collection,
                where=self._where,
                timeout=self._timeout,
            )
            if isinstance(error, NotFound):
                self._ready = False  # recreate it on the next call
            raise error from exc

    async def _ensure(self) -> None:
        if self._ready:
            return
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if not self._ready:
                await self._call("collection setup", self._ensure_sync)
                self._ready = True

    def _ensure_sync(self, client: MilvusClient) -> None:
        timeout, layout = self._timeout, self._layout
        if client.has_collection(self._collection, timeout=timeout):
            layout.check_existing(client, self._collection, self._dim, timeout)
        else:
            try:
                client.create_collection(
                    self._collection,
                    schema=layout.schema(self._dim),
                    timeout=timeout,
                    **layout.create_options(),
                )
            except Exception:
                # Lost a creation race with another process: use theirs if it fits.
                if not client.has_collection(self._collection, timeout=timeout):
                    raise
                layout.check_existing(client, self._collection, self._dim, timeout)
            else:
                index = client.prepare_index_params()
                index.add_index(
                    field_name="vector",
                    index_type=self._index_type,
                    metric_type="COSINE",
                    params=self._build_params(),
                )
                # sync=False: creating an index on an empty collection is immediate; the
                # synchronous path polls with 0.5 s sleeps. load_collection waits anyway.
                client.create_index(self._collection, index, timeout=timeout, sync=False)
        client.load_collection(self._collection, timeout=timeout)

    def _build_params(self) -> dict[str, Any]:
        if self._index_params:
            return dict(self._index_params)
        if self._index_type == "HNSW":
            return {"M": 16, "efConstruction": 360}
        if self._index_type == "IVF_FLAT":
            return {"nlist": 1024}
        return {}

    def _search_params_for(self, limit: int) -> dict[str, Any]:
        params: dict[str, Any] = dict(self._search_params)
        if self._index_type == "HNSW":
            params["ef"] = max(int(params.get("ef", 200)), limit)
        elif self._index_type == "IVF_FLAT":
            params.setdefault("nprobe", 16)
        radius = self._threshold - _SCORE_EPS
        if radius > -1.0 and self._index_type != "FLAT":
            # An exact index gains nothing from a range search: the best ``limit`` rows are
            # the same, the threshold is applied here after re-scoring, and Milvus Lite
            # materialises five times ``limit`` rows for a range search.
            params["radius"] = radius
        return {"metric_type": "COSINE", "params": params}

    # ------------------------------------------------------------------ port

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id (the last write of an id wins); one Milvus call."""
        now = int(time.time())
        rows_by_id: dict[str, dict[str, Any]] = {}
        for record in records:
            row = self._layout.row(record, self._dim, now)  # validates before writing
            rows_by_id.pop(row["id"], None)
            rows_by_id[row["id"]] = row
        if not rows_by_id:
            return
        await self._ensure()
        rows = list(rows_by_id.values())
        await self._call(
            "upsert",
            lambda c: c.upsert(self._collection, rows, timeout=self._timeout),
        )

    def _query_vector(self, vector: np.ndarray | Sequence[float]) -> np.ndarray:
        return vector_of(vector, self._dim, what="query vector")

    async def _exact(self, q: np.ndarray, top_k: int, scope: QueryScope | None) -> list[VectorHit]:
        """The port's ranking: candidates re-scored exactly, ties by id (see the module)."""
        expr = self._layout.scope_expr(scope)
        limit = min(top_k + max(top_k, _MIN_SLACK), MAX_LIMIT)
        while True:
            rows = await self._search(q, limit, expr=expr, params=self._search_params_for(limit),
                                      strong=True)
            if not rows:
                return []
            vectors = np.asarray([row["vector"] for row in rows], dtype=np.float32)
            scores = cosine_scores(q, vectors)
            ranked = sorted(
                (
                    (float(score), row)
                    for score, row in zip(scores, rows, strict=True)
                    if score >= self._threshold
                ),
                key=lambda item: (-item[0], item[1]["id"]),
            )[:top_k]
            if len(rows) < limit or limit >= MAX_LIMIT:
                break  # Milvus returned every candidate above the radius
            # Rows Milvus did not return score at most its lowest returned score (+ noise).
            unseen_max = min(float(row["distance"]) for row in rows) + _SCORE_EPS
            cut = ranked[-1][0] if len(ranked) == top_k else self._threshold
            if unseen_max < cut:
                break
            limit = min(limit * 4, MAX_LIMIT)
        return [
            VectorHit(record=self._layout.record(row, with_vector=False), score=score)
            for score, row in ranked
        ]

    async def _as_backend(
        self, q: np.ndarray, top_k: int, scope: QueryScope | None
    ) -> list[VectorHit]:
        """The backend's own call (LightRAG's: strict radius, Milvus' order); a scope widens
        it until ``top_k`` admitted rows are found or the rows run out."""
        params = self._layout.backend_search_params(self._threshold, self._index_type)

        async def search(limit: int) -> list[VectorHit]:
            rows = await self._search(q, limit, expr="", params=params, strong=False)
            return [
                VectorHit(record=self._layout.record(r, with_vector=False),
                          score=float(r["distance"]))
                for r in rows
            ]

        return await widened_hits(search, top_k, scope, MAX_LIMIT)

    async def _search(
        self, q: np.ndarray, limit: int, *, expr: str, params: dict[str, Any], strong: bool
    ) -> list[dict[str, Any]]:
        # the exact ranking re-scores the returned vectors; the backend's keeps its scores
        output = self._layout.output_fields
        if not strong:
            output = [f for f in output if f != "vector"]
        options: dict[str, Any] = {"consistency_level": "Strong"} if strong else {}
        if expr:
            options["filter"] = expr

        def run(client: MilvusClient) -> list[dict[str, Any]]:
            result = client.search(
                self._collection,
                data=[q.tolist()],
                limit=limit,
                output_fields=output,
                search_params=params,
                timeout=self._timeout,
                **options,
            )
            hits = result[0] if result else []
            return [{**hit["entity"], "id": hit["id"], "distance": hit["distance"]} for hit in hits]

        return await self._call("search", run)

    async def get(self, ids: Sequence[str]) -> list[VectorRecord | None]:
        """Records by id, in request order, ``None`` for a missing id; one Milvus call."""
        if not ids:
            return []
        found = await self._fetch(ids, self._layout.output_fields, "get")
        record = self._layout.record
        return [record(found[i], with_vector=True) if i in found else None for i in ids]

    async def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors (float32, 1-D) of the ids found; one Milvus call."""
        if not ids:
            return {}
        await self._ensure()
        expr = ids_filter(ids)
        return await self._call(
            "get_vectors",
            lambda c: vectors_by_id(
                c.query(self._collection, filter=expr, output_fields=["id", "vector"],
                        timeout=self._timeout, consistency_level="Strong"),
                ids,
            ),
        )

    async def _fetch(
        self, ids: Sequence[str], fields: list[str], action: str
    ) -> dict[str, dict[str, Any]]:
        await self._ensure()
        expr = ids_filter(ids)
        rows = await self._call(
            action,
            lambda c: c.query(
                self._collection,
                filter=expr,
                output_fields=fields,
                timeout=self._timeout,
                consistency_level="Strong",
            ),
        )
        return {row["id"]: dict(row) for row in rows}

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove records by id; unknown ids are ignored; one Milvus call."""
        if not ids:
            return
        await self._ensure()
        expr = ids_filter(ids)
        await self._call(
            "delete",
            lambda c: c.delete(self._collection, filter=expr, timeout=self._timeout),
        )

    async def count(self) -> int:
        """Number of stored records; one Milvus call."""
        await self._ensure()
        rows = await self._call(
            "count",
            lambda c: c.query(
                self._collection,
                filter="",
                output_fields=["count(*)"],
                timeout=self._timeout,
                consistency_level="Strong",
            ),
        )
        return int(rows[0]["count(*)"]) if rows else 0

    async def scan_records(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[VectorRecord]:
        """A page of records with their vectors, by id (the scan capability).

        Keyset pagination on the primary key: ``id > <cursor>`` (an escaped literal) with
        ``limit``, in Milvus's *iterator* mode (``iterator``, ``reduce_stop_for_best`` and the
        collection id, as pymilvus's ``QueryIterator`` sends them), in which Milvus returns the
        smallest ids in order; a plain ``query`` with a ``limit`` returns arbitrary ones. One
        Milvus call per page (the collection id is read once).
        """
        check_scan_limit(limit)
        await self._ensure()
        if self._collection_id is None:
            info = await self._call(
                "describe_collection",
                lambda c: c.describe_collection(self._collection, timeout=self._timeout),
            )
            self._collection_id = info["collection_id"]
        expr = "" if cursor is None else f"id > {quote_string(cursor)}"
        collection_id = self._collection_id
        fields = self._layout.output_fields
        rows = await self._call(
            "scan",
            lambda c: c.query(
                self._collection,
                filter=expr,
                output_fields=fields,
                limit=limit,
                timeout=self._timeout,
                consistency_level="Strong",
                iterator="True",
                reduce_stop_for_best="True",
                collection_id=collection_id,
            ),
        )
        items = [self._layout.record(dict(row), with_vector=True) for row in rows]
        return Page(items, items[-1].id if len(items) == limit else None)

    # ------------------------------------------------------------------ housekeeping

    async def close(self) -> None:
        """Close the client if :meth:`from_uri` created it (a client passed in is the caller's)."""
        if self._factory is not None and self._client is not None:
            client, self._client = self._client, None
            self._ready = False
            await asyncio.to_thread(client.close)

    async def drop(self) -> None:
        """Drop the collection (all records of this index). Not part of the port."""
        await self._call(
            "drop",
            lambda c: c.drop_collection(self._collection, timeout=self._timeout),
        )
        self._ready = False
        self._collection_id = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(collection={self._collection!r}, "
            f"namespace={self._namespace!r}, dim={self._dim}, "
            f"cosine_threshold={self._threshold}, index_type={self._index_type!r}, "
            f"layout={type(self._layout).__name__}, where={self._where!r})"
        )


def lite_client_options(uri: str) -> dict[str, Any]:
    """Client options for a Milvus Lite file: no keepalive pings on an idle connection.

    pymilvus pings every 10 s, also without calls in flight; Milvus Lite's gRPC server keeps
    gRPC's default policy (no more than one ping per 5 minutes without data) and answers with
    ``GOAWAY too_many_pings``. A connection left idle for minutes (a server between requests,
    a long test session) then failed its next call with ``UNAVAILABLE: Too many pings``, and
    pymilvus's recovery did not always reconnect. A remote server keeps pymilvus's defaults.
    """
    if not uri.endswith(".db"):
        return {}
    return {"grpc_options": {"grpc.keepalive_permit_without_calls": 0,
                             "grpc.keepalive_time_ms": 300_000}}
