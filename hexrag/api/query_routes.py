"""LightRAG's query routes: ``POST /query``, ``/query/stream`` (NDJSON) and ``/query/data``,
within the configured limits and ``QUERY_TIMEOUT``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any, TypeVar

from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from hexrag.api.deadlines import within
from hexrag.api.error_answers import _DATA_ERRORS, _QUERY_ERRORS, _error_id, safe_text
from hexrag.api.limits import ApiLimits
from hexrag.api.metrics import Metrics
from hexrag.api.models import SCOPE_FIELDS, QueryDataResponse, QueryRequest, QueryResponse
from hexrag.api.query_progress import progress_engine
from hexrag.core.errors import BackendTimeout, InvalidQuery
from hexrag.core.model import QueryParam
from hexrag.core.query.engine import QueryEngine, QueryResult
from hexrag.core.query.validation import validate_query

log = logging.getLogger("hexrag.api")

__all__ = ["NO_CONTEXT", "add_query_routes", "ndjson_response"]

NO_CONTEXT = "No relevant context found for the query."
T = TypeVar("T")


def _references(result: QueryResult, req: QueryRequest) -> list[dict[str, Any]] | None:
    if not req.include_references:
        return None
    data = (result.raw_data or {}).get("data") or {}
    refs = [dict(r) for r in data.get("references") or []]
    if req.include_chunk_content:  # LightRAG: each reference's chunk texts, when it has any
        by_ref: dict[str, list[str]] = {}
        for c in data.get("chunks") or []:
            ref_id, content = c.get("reference_id", ""), c.get("content", "")
            if ref_id and content:
                by_ref.setdefault(ref_id, []).append(content)
        for r in refs:
            if r.get("reference_id", "") in by_ref:
                r["content"] = by_ref[r["reference_id"]]
    return refs


def _line(obj: Mapping[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode("utf-8")


def ndjson_response(lines: AsyncIterator[bytes]) -> StreamingResponse:
    """A streamed NDJSON answer with LightRAG's headers (no caching, no proxy buffering)."""
    return StreamingResponse(lines, media_type="application/x-ndjson", headers={
        "Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"})


def add_query_routes(app: FastAPI, engine: QueryEngine, limits: ApiLimits, metrics: Metrics
                     ) -> None:
    """Mount ``/query``, ``/query/stream`` and ``/query/data`` on ``app``: ``engine`` answers
    within ``limits``; every answer is recorded in ``metrics``."""

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

    @app.post("/query", response_model=QueryResponse, tags=["query"], responses=_QUERY_ERRORS)
    async def query(req: QueryRequest) -> QueryResponse:
        """Answer a question (LightRAG ``POST /query``)."""
        started = time.perf_counter()
        enforce(req)
        param = req.to_query_param(stream=False)
        result = await bounded(engine.query_result(req.query, param))
        refs = _references(result, req)
        for ref in refs or []:  # LightRAG's ReferenceItem: content null when it has none
            ref.setdefault("content", None)
        content = result.content or ""
        elapsed = time.perf_counter() - started
        metrics.observe("/query", param.mode, result.raw_data, elapsed, cache_hit=result.cache_hit)
        return QueryResponse(
            response=content or NO_CONTEXT,
            references=refs,
            response_time=round(elapsed, 3),
            llm_generated=bool(content) and result.llm_generated,
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
        if req.include_progress:
            return _progress_stream(req, param, started)
        result = await bounded(engine.query_result(req.query, param))
        return ndjson_response(_answer_lines(req, param, result, started))

    def _progress_stream(req: QueryRequest, param: QueryParam, started: float
                         ) -> StreamingResponse:
        """LightRAG's ``include_progress``: ``{"progress": step}`` lines as the query runs,
        then the answer's lines. An invalid query is still refused before the stream."""
        validate_query(req.query, param.mode)
        events: asyncio.Queue[str | None] = asyncio.Queue()
        watched = progress_engine(engine, param, events.put_nowait)

        async def run() -> QueryResult:
            try:
                return await bounded(watched.query_result(req.query, param))
            finally:
                events.put_nowait(None)

        task = asyncio.create_task(run())

        async def lines() -> AsyncIterator[bytes]:
            try:
                while (step := await events.get()) is not None:
                    yield _line({"progress": step})
                try:
                    result = await task
                except Exception as exc:
                    yield _failed(exc)
                    return
                async for line in _answer_lines(req, param, result, started):
                    yield line
            finally:
                if not task.done():
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)

        return ndjson_response(lines())

    def _failed(exc: Exception) -> bytes:
        """The in-band failure line of a stream that has started."""
        error_id = _error_id()
        metrics.errors.labels("stream").inc()
        log.warning("stream failed (error_id=%s): %s", error_id, exc)
        return _line({"status": "failed", "error": safe_text(exc) or type(exc).__name__,
                      "error_id": error_id})

    async def _answer_lines(req: QueryRequest, param: QueryParam, result: QueryResult,
                            started: float) -> AsyncIterator[bytes]:
        """References, response pieces, then the final status line."""
        refs = _references(result, req)
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
            yield _failed(exc)
            return
        elapsed = time.perf_counter() - started
        metrics.observe("/query/stream", param.mode, result.raw_data, elapsed,
                        cache_hit=result.cache_hit)
        yield _line({"status": "done", "response_time": round(elapsed, 3)})

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
