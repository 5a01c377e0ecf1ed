"""The operations routes: ``GET /health`` (every store probed by its deadline, the background
consistency check's summary, LightRAG's fields) and ``GET /metrics`` (Prometheus text).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from hexrag.api.auth_tokens import accepted, bearer_token
from hexrag.api.deadlines import HealthProbes
from hexrag.api.error_answers import _COMMON_ERRORS, safe_text
from hexrag.api.health_fields import configuration, liveness
from hexrag.api.metrics import Metrics
from hexrag.core.query.engine import QueryEngine

__all__ = ["add_ops_routes"]


def _authenticated(request: Request) -> bool:
    """Whether the request's credentials would open a protected route (LightRAG's
    ``get_auth_status_dependency``: nothing protected counts as authenticated)."""
    state = request.app.state
    tokens = getattr(state, "tokens", None)
    settings = getattr(state, "settings", None)
    api_key = getattr(settings, "api_key", None)
    if tokens is None:
        return not api_key
    headers = request.scope.get("headers", [])
    given = next((v for n, v in headers if n == b"x-api-key"), None)
    return accepted(token=bearer_token(headers), key_given=given,
                    api_key=api_key.encode("utf-8") if api_key else None, tokens=tokens)


def add_ops_routes(
    app: FastAPI,
    engine: QueryEngine,
    health_probes: HealthProbes,
    *,
    required: frozenset[str],
    metrics: Metrics,
    consistency: Callable[[], Awaitable[Mapping[str, Any]]] | None,
    consistency_interval: float,
) -> None:
    """Mount ``/health`` and ``/metrics`` on ``app`` (see :func:`hexrag.api.app.create_app` for
    ``required``, ``consistency`` and ``consistency_interval``)."""
    from hexrag import __version__

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

    @app.get(
        "/health",
        tags=["ops"],
        responses={503: {"description": "A store failed, timed out, or is empty"}},
    )
    async def health(request: Request) -> JSONResponse:
        """Probe every store (concurrently; the answer comes by ``PROBE_TIMEOUT``).

        200 ``healthy`` (LightRAG's word) when every store answers and every required store
        holds records; 503 ``degraded`` otherwise, with ``problems`` naming each store and
        why. With LightRAG's fields (:mod:`hexrag.api.health_fields`): versions,
        ``auth_mode``, ``pipeline_busy``... for anyone; ``configuration``, directories and
        the stack's description only for authenticated callers (a valid key or token, or
        any caller when nothing is protected)."""
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
            "status": "healthy" if ok else "degraded",
            **liveness(request.app.state),
            "stores": stores,
            "problems": problems,
            "llm": engine.llm is not None,
            "reranker": engine.reranker is not None,
            "hexrag_version": __version__,
        }
        if _authenticated(request):
            body.update(configuration(request.app.state))
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
