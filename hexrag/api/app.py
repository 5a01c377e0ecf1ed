"""The HTTP API: LightRAG's ``/query``, ``/query/stream`` and ``/query/data``; health; metrics.

A thin driving adapter over :class:`~hexrag.core.query.engine.QueryEngine`. Existing LightRAG
clients
work unchanged; hexrag adds the ``scope`` request field and ``processing_info`` details.

Status codes: request validation -> 422 (``/query``, ``/query/stream``) or 400 with LightRAG's
failure body (``/query/data``); a body over ``MAX_REQUEST_BODY_BYTES`` -> 413; a missing or
wrong ``X-API-Key`` (when ``LIGHTRAG_API_KEY`` is set) -> 403; a backend that cannot be reached
-> 503, a timeout (or a query over ``QUERY_TIMEOUT``) -> 504, an engine without the model an
endpoint needs -> 503; anything else -> 500 with an error id, and the connection stays open.
A stack trace never reaches the client, and a rejection never echoes more than a short,
sanitised excerpt of the input (see :mod:`hexrag.api.limits` for every limit).

:func:`create_app` composes the app: the middleware, then the error answers
(:mod:`hexrag.api.error_answers`), the query routes (:mod:`hexrag.api.query_routes`),
``/health`` and ``/metrics`` (:mod:`hexrag.api.ops_routes`), the web UI
(:mod:`hexrag.api.webui`) and the document routes (:mod:`hexrag.api.documents`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from typing import Any

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.middleware.cors import CORSMiddleware

from hexrag.api.auth_routes import add_auth_routes
from hexrag.api.auth_tokens import Tokens
from hexrag.api.deadlines import HealthProbes, engine_with_deadlines
from hexrag.api.documents import DocumentQueue, add_document_routes
from hexrag.api.error_answers import _QUERY_ERRORS, add_error_handlers
from hexrag.api.error_answers import safe_text as safe_text
from hexrag.api.limits import ApiSettings
from hexrag.api.lr_document_routes import add_lr_document_routes
from hexrag.api.lr_graph_routes import add_lr_graph_routes
from hexrag.api.metrics import Metrics
from hexrag.api.middleware import ApiKeyMiddleware, BodyLimitMiddleware, CatchAllMiddleware
from hexrag.api.ollama_routes import add_ollama_routes
from hexrag.api.ops_routes import add_ops_routes
from hexrag.api.query_routes import add_query_routes
from hexrag.api.strict_json import StrictJsonMiddleware
from hexrag.api.webui import WEBUI_PATHS, add_webui_routes
from hexrag.api.workspace_guard import WorkspaceBodyGuardMiddleware, WorkspaceGuardMiddleware
from hexrag.core.ingest.ingestion import Ingestor
from hexrag.core.query.engine import QueryEngine

__all__ = ["DEFAULT_REQUIRED_STORES", "Metrics", "create_app", "safe_text"]

Probe = Callable[[], Awaitable[Any]]

#: Stores that must answer *and* hold records for ``/health`` to be green.
DEFAULT_REQUIRED_STORES = ("entities", "relationships", "chunks", "graph", "chunk_store")
#: Seconds each ``/health`` probe may take (default of ``PROBE_TIMEOUT``).
PROBE_TIMEOUT = 2.0


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
    app.state.tokens = Tokens(config.auth)  # LightRAG's JWTs (accounts, guest mode)

    # Starlette wraps each add_middleware around the ones added before: the LAST added is the
    # OUTERMOST and runs first. Order of a request: CatchAll -> CORS -> API key -> workspace
    # -> body limit -> body's workspace -> strict JSON -> app, so the key is checked on the
    # headers alone, before any body is read.
    app.add_middleware(StrictJsonMiddleware, max_bytes=limits.max_request_body_bytes,
                       on_reject=lambda: metrics.errors.labels("validation").inc())
    if workspace is not None:  # a JSON body's "workspace" naming another one: 404
        app.add_middleware(WorkspaceBodyGuardMiddleware, workspace=workspace)
    app.add_middleware(BodyLimitMiddleware, max_bytes=limits.max_request_body_bytes,
                       larger={"/documents/upload": limits.max_upload_bytes})
    if workspace is not None:  # after the key, before any body: another workspace is 404
        app.add_middleware(WorkspaceGuardMiddleware, workspace=workspace)
    if config.api_key or config.auth.configured:  # the key, or LightRAG's accounts
        app.add_middleware(ApiKeyMiddleware, api_key=config.api_key,
                           whitelist=config.open_paths(*WEBUI_PATHS), tokens=app.state.tokens)
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, **config.cors_options())
    app.add_middleware(
        CatchAllMiddleware, on_error=lambda: metrics.errors.labels("internal").inc()
    )
    if config.api_key:
        _declare_api_key(app)

    add_error_handlers(app, metrics)
    add_query_routes(app, engine, limits, metrics)
    add_ops_routes(app, engine, health_probes, required=required, metrics=metrics,
                   consistency=consistency, consistency_interval=consistency_interval)
    add_webui_routes(app, engine)
    add_auth_routes(app, app.state.tokens, config.api_key)  # /login, /auth-status, /ui/...
    add_ollama_routes(app, engine, limits)  # LightRAG's Ollama-compatible /api/*

    queue = DocumentQueue(ingestor)
    if ingest_unavailable:
        queue.why_not = ingest_unavailable
    add_document_routes(app, queue, responses=_QUERY_ERRORS)
    add_lr_document_routes(app, queue, responses=_QUERY_ERRORS)  # LightRAG's document manager
    add_lr_graph_routes(app, responses=_QUERY_ERRORS)  # LightRAG's graph routes
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
