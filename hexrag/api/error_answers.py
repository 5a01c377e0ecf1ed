"""How the API answers a failure: a hexrag error's status (422, 404, 504, 503, else 500 with an
error id), request validation as 422 or (``/query/data``) LightRAG's 400 failure body, short
sanitised messages (:func:`safe_text`), and the error answers the OpenAPI document lists.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hexrag.api.metrics import Metrics
from hexrag.api.models import ErrorResponse, QueryDataResponse, ValidationErrorResponse
from hexrag.core.errors import (
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    InvalidDocument,
    InvalidQuery,
    NotFound,
)

log = logging.getLogger("hexrag.api")

__all__ = ["MAX_MESSAGE_CHARS", "add_error_handlers", "safe_text"]

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


def add_error_handlers(app: FastAPI, metrics: Metrics) -> None:
    """Answer hexrag errors, validation errors and FastAPI's own refusals on ``app`` (each
    counted in ``metrics``)."""

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
