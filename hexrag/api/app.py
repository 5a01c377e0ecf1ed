"""The HTTP API: LightRAG's ``/query``, ``/query/stream`` and ``/query/data``; health; metrics.

A thin driving adapter over :class:`~hexrag.core.engine.QueryEngine`. Existing LightRAG clients
work unchanged; hexrag adds the ``scope`` request field and ``processing_info`` details.

Status codes: request validation -> 422 (``/query``, ``/query/stream``) or 400 with LightRAG's
failure body (``/query/data``); a body over ``MAX_REQUEST_BODY_BYTES`` -> 413; a missing or
wrong ``X-API-Key`` (when ``LIGHTRAG_API_KEY`` is set) -> 403; a backend that cannot be reached
-> 503, a timeout (or a query over ``QUERY_TIMEOUT``) -> 504, an engine without the model an
endpoint needs -> 503; anything else -> 500 with an error id, and the connection stays open.
A stack trace never reaches the client, and a rejection never echoes more than a short,
sanitised excerpt of the input (see :mod:`hexrag.api.limits` for every limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi_offline import FastAPIOffline
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware

from hexrag.api.deadlines import HealthProbes, engine_with_deadlines, within
from hexrag.api.documents import DocumentQueue, add_document_routes
from hexrag.api.limits import ApiSettings
from hexrag.api.middleware import ApiKeyMiddleware, BodyLimitMiddleware, CatchAllMiddleware
from hexrag.api.models import (
    SCOPE_FIELDS,
    ErrorResponse,
    QueryDataResponse,
    QueryRequest,
    QueryResponse,
    ValidationErrorResponse,
)
from hexrag.api.strict_json import StrictJsonMiddleware
from hexrag.api.webui import WEBUI_PATHS, add_webui_routes
from hexrag.api.workspace_guard import WorkspaceGuardMiddleware
from hexrag.core.engine import QueryEngine, QueryResult
from hexrag.core.errors import (
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    InvalidDocument,
    InvalidQuery,
    NotFound,
)
from hexrag.core.ingestion import Ingestor

__all__ = ["DEFAULT_REQUIRED_STORES", "Metrics", "create_app", "safe_text"]

log = logging.getLogger("hexrag.api")

NO_CONTEXT = "No relevant context found for the query."
Probe = Callable[[], Awaitable[Any]]
T = TypeVar("T")

#: Stores that must answer *and* hold records for ``/health`` to be green.
DEFAULT_REQUIRED_STORES = ("entities", "relationships", "chunks", "graph", "chunk_store")
#: Seconds each ``/health`` probe may take (default of ``PROBE_TIMEOUT``).
PROBE_TIMEOUT = 2.0
#: Longest excerpt of a message (and of each location part) in an error body.
MAX_MESSAGE_CHARS = 300


_COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorResponse, "description": "Missing or wrong X-API-Key"},
    413: {"model": ErrorResponse, "description": "Body over MAX_REQUEST_BODY_BYTES"},
    500: {"model": ErrorResponse, "description": "Internal error (with an error id)"},
    503: {"model": ErrorResponse, "description": "A store or model is unavailable"},
    504: {"model": ErrorResponse, "description": "A store or the query timed out"},
}
_QUERY_ERRORS: dict[int | str, dict[str, Any]] = {
    **_COMMON_ERRORS,
    400: {"model": ErrorResponse, "description": "Unreadable body"},
    422: {"model": ValidationErrorResponse, "description": "Invalid request"},
}
_DATA_ERRORS: dict[int | str, dict[str, Any]] = {
    **_COMMON_ERRORS,
    400: {"model": QueryDataResponse, "description": "Invalid request (LightRAG's failure body)"},
}


def safe_text(value: Any, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``value`` as a short string that JSON can always carry: lone surrogates escaped,
    at most ``limit`` characters (an ellipsis marks a cut)."""
    text = str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clean_errors(errors: list[Any]) -> list[dict[str, Any]]:
    """pydantic's errors without ``input``/``ctx``/``url`` (they echo the request)."""
    out = []
    for err in errors[:20]:
        out.append(
            {
                "type": safe_text(err.get("type", "value_error"), 60),
                "loc": [x if isinstance(x, int) else safe_text(x, 60) for x in err.get("loc", ())],
                "msg": safe_text(err.get("msg", "invalid value")),
            }
        )
    return out


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
    if isinstance(exc, (InvalidQuery, InvalidDocument)):
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
    settings: ApiSettings | None = None,
    required_stores: Collection[str] = DEFAULT_REQUIRED_STORES,
    probe_timeout: float | None = None,
    consistency: Callable[[], Awaitable[Mapping[str, Any]]] | None = None,
    consistency_interval: float = 3600.0,
    ingestor: Ingestor | None = None,
    ingest_unavailable: str | None = None,
    workspace: str | None = None,
) -> FastAPI:
    """Build the app around ``engine``.

    ``ingestor`` enables the document endpoints (:mod:`hexrag.api.documents`); without one
    they answer 503 with ``ingest_unavailable`` (default: the stack needs an LLM).

    ``probes`` maps a store name to an async callable that raises when the store is unhealthy
    (its result, when an ``int``, is the store's record count); by default every store of the
    engine is probed with its cheapest count. ``/health`` is red (503) when a probe fails or
    times out (``probe_timeout``, default ``PROBE_TIMEOUT`` of the limits), or when a store of
    ``required_stores`` counts 0 records, and names the store; it answers by that deadline
    even when a store is frozen (:class:`~hexrag.api.deadlines.HealthProbes`). ``settings``
    holds the limits, the API key, the whitelisted paths and the CORS origins (default:
    :meth:`ApiSettings.from_env`).

    Every store call of the engine gets its own deadline (``STORE_TIMEOUT``, at most
    ``QUERY_TIMEOUT``): the app serves a copy of ``engine`` whose stores are wrapped by
    :func:`~hexrag.api.deadlines.engine_with_deadlines`, so a frozen store is a 504 naming it.

    ``consistency`` (e.g. :func:`hexrag.transfer.check_stack` as JSON) is run in the
    background on the first ``/health`` and again when its result is older than
    ``consistency_interval`` seconds; ``/health`` reports the last result's summary under
    ``consistency`` (informational: drift does not turn ``/health`` red).

    ``workspace``: the name of the one workspace this app serves (``""``: the default); a
    request whose ``LIGHTRAG-WORKSPACE`` header names another gets 404 after the key check
    (:mod:`hexrag.api.workspace_guard`). ``None``: no check.
    """
    config = settings if settings is not None else ApiSettings.from_env()
    limits = config.limits
    from hexrag import __version__

    if probes is None:
        s = engine.stores
        probes = {
            "entities": s.entities.count,
            "relationships": s.relationships.count,
            "chunks": s.chunks.count,
            "graph": s.graph.count_nodes,
            "chunk_store": s.chunk_store.count,
        }
    required = frozenset(required_stores)
    health_probes = HealthProbes(
        probes, limits.probe_timeout if probe_timeout is None else probe_timeout,
        required=required,
    )
    engine = engine_with_deadlines(engine, min(limits.store_timeout, limits.query_timeout))

    @contextlib.asynccontextmanager
    async def lifespan(app_: FastAPI) -> AsyncIterator[None]:
        for hook in list(app_.state.startup_hooks):
            await hook()
        yield
        health_probes.cancel()

    app = FastAPIOffline(
        title=title,
        version=__version__,
        description="LightRAG-compatible graph-RAG query API (hexrag).",
        lifespan=lifespan,
    )
    #: Coroutines run when the server starts (the document queue resumes unfinished work).
    app.state.startup_hooks = []
    metrics = Metrics()
    app.state.metrics = metrics
    app.state.engine = engine
    app.state.settings = config
    check_state: dict[str, Any] = {"task": None, "result": None, "at": 0.0}

    def consistency_summary() -> dict[str, Any] | None:
        if consistency is None:
            return None
        task = check_state["task"]
        stale = time.monotonic() - check_state["at"] > consistency_interval
        if (task is None or task.done()) and (check_state["result"] is None or stale):

            async def run() -> None:
                try:
                    report = dict(await consistency())
                    summary = {
                        "status": "done",
                        "clean": report.get("clean"),
                        "errors": report.get("errors"),
                        "warnings": report.get("warnings"),
                    }
                except Exception as exc:
                    summary = {"status": "failed", "error": safe_text(exc)}
                summary["checked_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                check_state["result"], check_state["at"] = summary, time.monotonic()

            check_state["task"] = asyncio.create_task(run())
        result = check_state["result"]
        return result if result is not None else {"status": "running"}

    # Starlette wraps each add_middleware around the ones added before: the LAST added is the
    # OUTERMOST and runs first. Order of a request: CatchAll -> CORS -> API key -> workspace
    # -> body limit -> strict JSON -> app, so the key is checked on the headers alone, before
    # any body is read.
    app.add_middleware(StrictJsonMiddleware, max_bytes=limits.max_request_body_bytes,
                       on_reject=lambda: metrics.errors.labels("validation").inc())
    app.add_middleware(BodyLimitMiddleware, max_bytes=limits.max_request_body_bytes,
                       larger={"/documents/upload": limits.max_upload_bytes})
    if workspace is not None:  # after the key, before any body: another workspace is 404
        app.add_middleware(WorkspaceGuardMiddleware, workspace=workspace)
    if config.api_key:
        app.add_middleware(ApiKeyMiddleware, api_key=config.api_key,
                           whitelist=config.open_paths(*WEBUI_PATHS))
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, **config.cors_options())
    app.add_middleware(
        CatchAllMiddleware, on_error=lambda: metrics.errors.labels("internal").inc()
    )
    if config.api_key:
        _declare_api_key(app)

    def enforce(req: QueryRequest) -> None:
        """The configured limits (the request model holds the hard caps)."""
        if len(req.query) > limits.max_query_chars:
            raise InvalidQuery(f"query is longer than MAX_QUERY_CHARS={limits.max_query_chars}")
        for name in ("hl_keywords", "ll_keywords"):
            if len(getattr(req, name)) > limits.max_keywords:
                raise InvalidQuery(f"{name} has more than MAX_KEYWORDS={limits.max_keywords}")
        history = req.conversation_history or []
        if len(history) > limits.max_history_messages:
            raise InvalidQuery(
                "conversation_history has more than "
                f"MAX_HISTORY_MESSAGES={limits.max_history_messages} messages"
            )
        if req.scope is not None:
            for name in SCOPE_FIELDS:
                values = getattr(req.scope, name)
                if isinstance(values, list) and len(values) > limits.max_scope_values:
                    raise InvalidQuery(
                        f"scope.{name} has more than MAX_SCOPE_VALUES="
                        f"{limits.max_scope_values} values"
                    )

    async def bounded(awaitable: Awaitable[T]) -> T:
        """``awaitable`` within ``QUERY_TIMEOUT``, never waiting for it once abandoned."""
        return await within(
            awaitable, limits.query_timeout,
            lambda: BackendTimeout(
                f"the query did not finish within QUERY_TIMEOUT={limits.query_timeout:g}s"
            ),
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        metrics.errors.labels("validation").inc()
        errors = _clean_errors(list(exc.errors()))
        if request.url.path == "/query/data":
            parts = [
                f"{' -> '.join(str(x) for x in e.get('loc', ()))}: {e.get('msg', '')}"
                for e in errors
            ]
            return JSONResponse(
                status_code=400,
                content={
                    "status": "failure",
                    "message": safe_text("Validation error: " + "; ".join(parts), 1000),
                    "data": {},
                    "metadata": {},
                },
            )
        return JSONResponse(status_code=422, content={"detail": errors})

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI's own refusals (an unreadable body is 400): short, and on /query/data in
        # LightRAG's failure shape like every other refusal there
        detail = safe_text(exc.detail)
        if request.url.path == "/query/data" and exc.status_code == 400:
            return JSONResponse(
                status_code=400,
                content={"status": "failure", "message": detail, "data": {}, "metadata": {}},
            )
        return JSONResponse(
            status_code=exc.status_code, content={"detail": detail}, headers=exc.headers
        )

    @app.exception_handler(HexragError)
    async def _hexrag(request: Request, exc: HexragError) -> JSONResponse:
        status = _status_for(exc)
        kind = type(exc).__name__
        metrics.errors.labels(kind).inc()
        message = safe_text(exc)
        if status == 422:
            if request.url.path == "/query/data":
                return JSONResponse(
                    status_code=400,
                    content={
                        "status": "failure",
                        "message": f"Validation error: {message}",
                        "data": {},
                        "metadata": {},
                    },
                )
            return JSONResponse(
                status_code=422,
                content={"detail": [{"loc": ["body"], "msg": message, "type": "value_error"}]},
            )
        error_id = _error_id()
        log.warning("request failed (%s, error_id=%s): %s", kind, error_id, message)
        return JSONResponse(
            status_code=status,
            content={"detail": f"{message} (error_id: {error_id})", "error_id": error_id},
        )

    @app.post("/query", response_model=QueryResponse, tags=["query"], responses=_QUERY_ERRORS)
    async def query(req: QueryRequest) -> QueryResponse:
        """Answer a question (LightRAG ``POST /query``)."""
        started = time.perf_counter()
        enforce(req)
        param = req.to_query_param(stream=False)
        result = await bounded(engine.query_result(req.query, param))
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
        responses={200: {"content": {"application/x-ndjson": {}}}, **_QUERY_ERRORS},
    )
    async def query_stream(req: QueryRequest) -> StreamingResponse:
        """Answer as NDJSON: references, response pieces, then a final status line."""
        started = time.perf_counter()
        enforce(req)
        stream = req.stream if req.stream is not None else True
        param = req.to_query_param(stream=stream)
        result = await bounded(engine.query_result(req.query, param))
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
                        "error": safe_text(exc) or type(exc).__name__,
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

    @app.post(
        "/query/data", response_model=QueryDataResponse, tags=["query"], responses=_DATA_ERRORS
    )
    async def query_data(req: QueryRequest) -> QueryDataResponse:
        """Retrieval only: entities, relationships, chunks, references (LightRAG's route)."""
        started = time.perf_counter()
        enforce(req)
        param = req.to_query_param(stream=False)
        raw = await bounded(engine.query_data(req.query, param))
        metrics.observe("/query/data", param.mode, raw, time.perf_counter() - started)
        return QueryDataResponse(
            status=raw.get("status", "failure"),
            message=raw.get("message", ""),
            data=raw.get("data", {}),
            metadata=raw.get("metadata", {}),
        )

    @app.get(
        "/health",
        tags=["ops"],
        responses={503: {"description": "A store failed, timed out, or is empty"}},
    )
    async def health() -> JSONResponse:
        """Probe every store (concurrently; the answer comes by ``PROBE_TIMEOUT``).

        200 ``ok`` when every store answers and every required store holds records; 503
        ``degraded`` otherwise, with ``problems`` naming each store and why."""
        stores = await health_probes.run()
        for r in stores.values():
            if "error" in r:
                r["error"] = safe_text(r["error"])
        problems = [
            f"{n}: {r['error']}" if r["status"] == "error" else f"{n}: holds no records"
            for n, r in stores.items()
            if r["status"] != "ok"
        ]
        problems += [f"{n}: not probed" for n in sorted(required - set(stores))]
        ok = not problems
        body = {
            "status": "ok" if ok else "degraded",
            "stores": stores,
            "problems": problems,
            "llm": engine.llm is not None,
            "reranker": engine.reranker is not None,
        }
        summary = consistency_summary()
        if summary is not None:
            body["consistency"] = summary
        return JSONResponse(status_code=200 if ok else 503, content=body)

    @app.get(
        "/metrics",
        tags=["ops"],
        response_class=PlainTextResponse,
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
            403: _COMMON_ERRORS[403],
        },
    )
    async def prometheus() -> PlainTextResponse:
        """Prometheus text format."""
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    add_webui_routes(app, engine)

    queue = DocumentQueue(ingestor)
    if ingest_unavailable:
        queue.why_not = ingest_unavailable
    add_document_routes(app, queue, responses=_QUERY_ERRORS)
    return app


def _declare_api_key(app: FastAPI) -> None:
    """Put the ``X-API-Key`` scheme into the OpenAPI document (Swagger's Authorize box)."""
    base = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = base()
            schema.setdefault("components", {}).setdefault("securitySchemes", {})["APIKey"] = {
                "type": "apiKey",
                "in": "header",
                "name": "X-API-Key",
            }
            schema["security"] = [{"APIKey": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
