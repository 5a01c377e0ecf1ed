"""The HTTP API: LightRAG's ``/query``, ``/query/stream`` and ``/query/data``; health; metrics.

A thin driving adapter over :class:`~hexrag.core.engine.QueryEngine`. Existing LightRAG clients
work unchanged; hexrag adds the ``scope`` request field and ``processing_info`` details.

Status codes: request validation -> 422 (``/query``, ``/query/stream``) or 400 with LightRAG's
failure body (``/query/data``); a backend that cannot be reached -> 503, a timeout -> 504, an
engine without the model an endpoint needs -> 503; anything else -> 500 with an error id. A
stack trace never reaches the client.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

from hexrag.api.models import QueryDataResponse, QueryRequest, QueryResponse
from hexrag.core.engine import QueryEngine, QueryResult
from hexrag.core.errors import (
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    InvalidQuery,
    NotFound,
)

__all__ = ["Metrics", "create_app"]

log = logging.getLogger("hexrag.api")

NO_CONTEXT = "No relevant context found for the query."
Probe = Callable[[], Awaitable[Any]]


class Metrics:
    """Prometheus metrics of one app (own registry, so several apps can live in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.queries = Counter(
            "hexrag_queries_total",
            "Queries served",
            ["endpoint", "mode", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "hexrag_query_latency_seconds",
            "Query latency",
            ["endpoint", "mode"],
            registry=self.registry,
        )
        self.chunk_retrieval = Counter(
            "hexrag_chunk_retrieval_total",
            "Successful queries by whether they returned chunks (success rate = with_chunks/all)",
            ["outcome"],
            registry=self.registry,
        )
        self.missing_chunks = Counter(
            "hexrag_missing_chunks_total",
            "Chunk ids named by the graph or an index but absent from the chunk store",
            registry=self.registry,
        )
        self.cache_hits = Counter(
            "hexrag_answer_cache_hits_total",
            "Answers served from the cache",
            registry=self.registry,
        )
        self.errors = Counter(
            "hexrag_errors_total", "Failed requests by kind", ["kind"], registry=self.registry
        )

    def observe(
        self,
        endpoint: str,
        mode: str,
        raw: Mapping[str, Any] | None,
        seconds: float,
        *,
        cache_hit: bool = False,
    ) -> None:
        """Record one answered query."""
        status = (raw or {}).get("status", "success")
        self.queries.labels(endpoint, mode, status).inc()
        self.latency.labels(endpoint, mode).observe(seconds)
        if cache_hit:
            self.cache_hits.inc()
        info = ((raw or {}).get("metadata") or {}).get("processing_info") or {}
        if info.get("missing_chunk_count"):
            self.missing_chunks.inc(info["missing_chunk_count"])
        if status == "success":
            chunks = ((raw or {}).get("data") or {}).get("chunks") or []
            self.chunk_retrieval.labels("with_chunks" if chunks else "without_chunks").inc()


def _error_id() -> str:
    return secrets.token_hex(6)


def _status_for(exc: Exception) -> int:
    if isinstance(exc, InvalidQuery):
        return 422
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, BackendTimeout):
        return 504
    if isinstance(exc, (BackendUnavailable, ConfigurationError)):
        return 503
    return 500


def _references(result: QueryResult, req: QueryRequest) -> list[dict[str, Any]] | None:
    if not req.include_references:
        return None
    data = (result.raw_data or {}).get("data") or {}
    refs = [dict(r) for r in data.get("references") or []]
    if req.include_chunk_content:
        by_ref: dict[str, list[str]] = {}
        for c in data.get("chunks") or []:
            by_ref.setdefault(c.get("reference_id", ""), []).append(c.get("content", ""))
        for r in refs:
            r["content"] = by_ref.get(r["reference_id"], [])
    return refs


def _line(obj: Mapping[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode("utf-8")


def create_app(
    engine: QueryEngine,
    *,
    probes: Mapping[str, Probe] | None = None,
    title: str = "hexrag",
) -> FastAPI:
    """Build the app around ``engine``.

    ``probes`` maps a store name to an async callable that raises when the store is unhealthy;
    by default every store of the engine is probed with its cheapest count.
    """
    app = FastAPI(
        title=title,
        version="0.1.0",
        description="LightRAG-compatible graph-RAG query API (hexrag).",
    )
    metrics = Metrics()
    app.state.metrics = metrics
    app.state.engine = engine
    if probes is None:
        s = engine.stores
        probes = {
            "entities": s.entities.count,
            "relationships": s.relationships.count,
            "chunks": s.chunks.count,
            "graph": s.graph.count_nodes,
            "chunk_store": s.chunk_store.count,
        }

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        metrics.errors.labels("validation").inc()
        errors = jsonable_encoder(exc.errors(), custom_encoder={Exception: str})
        for err in errors:
            err.pop("ctx", None)
            err.pop("url", None)
        if request.url.path == "/query/data":
            parts = [
                f"{' -> '.join(str(x) for x in e.get('loc', ()))}: {e.get('msg', '')}"
                for e in errors
            ]
            return JSONResponse(
                status_code=400,
                content={
                    "status": "failure",
                    "message": "Validation error: " + "; ".join(parts),
                    "data": {},
                    "metadata": {},
                },
            )
        return JSONResponse(status_code=422, content={"detail": errors})

    @app.exception_handler(HexragError)
    async def _hexrag(request: Request, exc: HexragError) -> JSONResponse:
        status = _status_for(exc)
        kind = type(exc).__name__
        metrics.errors.labels(kind).inc()
        if status == 422:
            if request.url.path == "/query/data":
                return JSONResponse(
                    status_code=400,
                    content={
                        "status": "failure",
                        "message": f"Validation error: {exc}",
                        "data": {},
                        "metadata": {},
                    },
                )
            return JSONResponse(
                status_code=422,
                content={"detail": [{"loc": ["body"], "msg": str(exc), "type": "value_error"}]},
            )
        error_id = _error_id()
        log.warning("request failed (%s, error_id=%s): %s", kind, error_id, exc)
        return JSONResponse(
            status_code=status,
            content={"detail": f"{exc} (error_id: {error_id})", "error_id": error_id},
        )

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        error_id = _error_id()
        metrics.errors.labels("internal").inc()
        log.exception("internal error (error_id=%s)", error_id)
        return JSONResponse(
            status_code=500,
            content={
                "detail": f"Internal server error (error_id: {error_id})",
                "error_id": error_id,
            },
        )

    @app.post("/query", response_model=QueryResponse, tags=["query"])
    async def query(req: QueryRequest) -> QueryResponse:
        """Answer a question (LightRAG ``POST /query``)."""
        started = time.perf_counter()
        param = req.to_query_param(stream=False)
        result = await engine.query_result(req.query, param)
        content = result.content or ""
        elapsed = time.perf_counter() - started
        metrics.observe("/query", param.mode, result.raw_data, elapsed, cache_hit=result.cache_hit)
        if not content:
            return QueryResponse(
                response=NO_CONTEXT,
                references=_references(result, req),
                response_time=round(elapsed, 3),
                llm_generated=False,
            )
        return QueryResponse(
            response=content,
            references=_references(result, req),
            response_time=round(elapsed, 3),
            llm_generated=result.llm_generated,
        )

    @app.post(
        "/query/stream",
        tags=["query"],
        response_class=StreamingResponse,
        responses={200: {"content": {"application/x-ndjson": {}}}},
    )
    async def query_stream(req: QueryRequest) -> StreamingResponse:
        """Answer as NDJSON: references, response pieces, then a final status line."""
        started = time.perf_counter()
        stream = req.stream if req.stream is not None else True
        param = req.to_query_param(stream=stream)
        result = await engine.query_result(req.query, param)
        refs = _references(result, req)

        async def lines() -> AsyncIterator[bytes]:
            try:
                if result.response_iterator is not None:
                    if refs is not None:
                        yield _line({"references": refs})
                    async for piece in result.response_iterator:
                        if piece:
                            yield _line({"response": piece})
                else:
                    body: dict[str, Any] = {
                        "response": result.content or NO_CONTEXT,
                        "llm_generated": bool(result.content) and result.llm_generated,
                    }
                    if refs is not None:
                        body["references"] = refs
                    yield _line(body)
            except Exception as exc:  # the stream has started: report in-band, then stop
                error_id = _error_id()
                metrics.errors.labels("stream").inc()
                log.warning("stream failed (error_id=%s): %s", error_id, exc)
                yield _line(
                    {
                        "status": "failed",
                        "error": str(exc) or type(exc).__name__,
                        "error_id": error_id,
                    }
                )
                return
            elapsed = time.perf_counter() - started
            metrics.observe(
                "/query/stream", param.mode, result.raw_data, elapsed, cache_hit=result.cache_hit
            )
            yield _line({"status": "done", "response_time": round(elapsed, 3)})

        return StreamingResponse(
            lines(),
            media_type="application/x-ndjson",
            headers={
                "Cache-Control": "no-cache",
                "Connection": "keep-alive",
                "X-Accel-Buffering": "no",
            },
        )

    @app.post("/query/data", response_model=QueryDataResponse, tags=["query"])
    async def query_data(req: QueryRequest) -> QueryDataResponse:
        """Retrieval only: entities, relationships, chunks, references (LightRAG's route)."""
        started = time.perf_counter()
        param = req.to_query_param(stream=False)
        raw = await engine.query_data(req.query, param)
        metrics.observe("/query/data", param.mode, raw, time.perf_counter() - started)
        return QueryDataResponse(
            status=raw.get("status", "failure"),
            message=raw.get("message", ""),
            data=raw.get("data", {}),
            metadata=raw.get("metadata", {}),
        )

    @app.get("/health", tags=["ops"])
    async def health() -> JSONResponse:
        """Probe every configured store; 503 when one fails."""
        stores: dict[str, Any] = {}
        ok = True
        for name, probe in probes.items():
            t0 = time.perf_counter()
            try:
                value = await probe()
                stores[name] = {
                    "status": "ok",
                    "latency_ms": round(1000 * (time.perf_counter() - t0), 2),
                    "count": value if isinstance(value, int) else None,
                }
            except Exception as exc:
                ok = False
                stores[name] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        body = {
            "status": "ok" if ok else "degraded",
            "stores": stores,
            "llm": engine.llm is not None,
            "reranker": engine.reranker is not None,
        }
        return JSONResponse(status_code=200 if ok else 503, content=body)

    @app.get("/metrics", tags=["ops"])
    async def prometheus() -> PlainTextResponse:
        """Prometheus text format."""
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
