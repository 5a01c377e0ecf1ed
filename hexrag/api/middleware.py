"""Pure ASGI middleware of the HTTP API: body limit, API key, and a last-resort 500.

They run before FastAPI reads a body, so a request over the limit or without its key costs
nothing, and they answer with short JSON bodies that never echo the input.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

__all__ = [
    "ApiKeyCheck",
    "ApiKeyMiddleware",
    "BodyLimitMiddleware",
    "CatchAllMiddleware",
    "body_workspace",
    "path_matches",
]

log = logging.getLogger("hexrag.api")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def send_json(send: Send, status: int, body: dict[str, Any], **headers: str) -> None:
    """Send a complete JSON response."""
    data = json.dumps(body).encode("utf-8")
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *((k.encode(), v.encode()) for k, v in headers.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": data})


class ClientGone(Exception):
    """The client disconnected before its body was complete."""


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, read chunk by chunk; ``None`` as soon as it exceeds ``limit``
    bytes (``limit <= 0``: no limit). Raises :class:`ClientGone` if the client leaves first."""
    parts: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone
        chunk = message.get("body", b"")
        total += len(chunk)
        if 0 < limit < total:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def body_workspace(body: bytes) -> str:
    """The top-level ``"workspace"`` string of a JSON body (hexrag's alternative to the
    ``LIGHTRAG-WORKSPACE`` header); ``""`` when absent, not a string, or not JSON."""
    if b'"workspace"' not in body:
        return ""
    try:
        value = json.loads(body).get("workspace")
    except (ValueError, AttributeError, RecursionError):
        return ""
    return value if isinstance(value, str) else ""


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that first hands the app ``body`` in one piece, then defers to
    ``receive`` (for the disconnect)."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class BodyLimitMiddleware:
    """413 for a body over ``max_bytes``: refused on its ``Content-Length`` before anything is
    read, else while it streams in. The body is read here (at most ``max_bytes`` of it) and
    handed to the app in one piece, so the app never sees a partial body. ``larger`` gives
    some paths their own limit (``/documents/upload``: ``MAX_UPLOAD_BYTES``)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int,
                 larger: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.larger = dict(larger or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.max_bytes
        if scope["type"] == "http":
            limit = self.larger.get(scope.get("path", ""), limit)
        if scope["type"] != "http" or limit <= 0:
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await send_json(send, 400, {"detail": "invalid Content-Length header"})
                    return
                if declared > limit:
                    await self._refuse(send, limit)
                    return
        try:
            body = await read_body(receive, limit)
        except ClientGone:
            return
        if body is None:
            await self._refuse(send, limit)
            return
        await self.app(scope, replaying(body, receive), send)

    async def _refuse(self, send: Send, limit: int) -> None:
        name = "MAX_REQUEST_BODY_BYTES" if limit == self.max_bytes else "MAX_UPLOAD_BYTES"
        await send_json(
            send,
            413,
            {"detail": f"request body too large (limit {limit} bytes, {name})"},
            connection="close",
        )


def path_matches(path: str, patterns: tuple[str, ...]) -> bool:
    """``path`` equals a pattern, or is under a ``/prefix/*`` pattern (segment boundary)."""
    for pattern in patterns:
        if pattern.endswith("/*"):
            prefix = pattern[:-2]
            if path == prefix or path.startswith(prefix + "/") or prefix == "":
                return True
        elif path == pattern:
            return True
    return False


class ApiKeyCheck:
    """The access check shared by :class:`ApiKeyMiddleware` and the workspace router.

    A request is let in when its ``X-API-Key`` header equals the key (constant-time
    comparison) or, with ``tokens`` (:class:`~hexrag.api.auth_tokens.Tokens`), when its
    bearer token authenticates it by LightRAG's rules (:func:`~hexrag.api.auth_tokens.decide`:
    an account's token, or a guest token where nothing is protected). :meth:`denial` gives
    LightRAG's status and message otherwise; :meth:`is_open` tells whether the request's path
    is served without credentials (the ``whitelist``)."""

    def __init__(self, api_key: str | None, whitelist: tuple[str, ...],
                 tokens: Any = None) -> None:
        self.key = api_key.encode("utf-8") if api_key else None
        self.whitelist = whitelist
        self.tokens = tokens

    def is_open(self, scope: Scope) -> bool:
        """Whether ``scope``'s path is whitelisted (served without the key)."""
        return path_matches(scope.get("path", ""), self.whitelist)

    def denial(self, scope: Scope) -> tuple[int, str, dict[str, Any] | None]:
        """``(0, "", claims)`` when the request's credentials let it in (``claims``: its
        token's, when a token did), else ``(status, detail, None)``: 403 ``API Key
        required`` / ``Invalid API Key``, or LightRAG's 401s for tokens."""
        headers = scope.get("headers", [])
        given = next((v for n, v in headers if n == b"x-api-key"), None)
        if self.tokens is None:
            if given is None:
                return 403, "API Key required", None
            if self.key is None or not hmac.compare_digest(given, self.key):
                return 403, "Invalid API Key", None
            return 0, "", None
        from hexrag.api.auth_tokens import bearer_token, decide

        status, detail = decide(token=bearer_token(headers), key_given=given,
                                api_key=self.key, tokens=self.tokens)
        if status is not None:
            return status, str(detail), None
        return 0, "", detail if isinstance(detail, dict) else None

    def refusal(self, scope: Scope) -> str | None:
        """``None`` when the request carries the key (or a token that stands for it), else
        why not (:meth:`denial`'s message)."""
        status, detail, _ = self.denial(scope)
        return detail if status else None


class ApiKeyMiddleware:
    """403 unless the ``X-API-Key`` header equals the key (:class:`ApiKeyCheck`), except on
    whitelisted paths and CORS preflight requests. LightRAG's messages: ``API Key
    required`` when the header is missing, ``Invalid API Key`` when it is wrong. With
    ``tokens`` a bearer token is checked by LightRAG's rules too (401s for tokens), and a
    token past half its life gets a fresh one in the ``X-New-Token`` response header.

    It answers from the headers alone, without reading the body: it must sit outside
    :class:`BodyLimitMiddleware`, so that a stranger's request is refused at once, even
    when its body is large or never comes (the server then discards the body unread)."""

    def __init__(self, app: ASGIApp, *, api_key: str | None, whitelist: tuple[str, ...],
                 tokens: Any = None) -> None:
        self.app = app
        self.check = ApiKeyCheck(api_key, whitelist, tokens)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        if self.check.is_open(scope):
            await self.app(scope, receive, send)
            return
        status, detail, claims = self.check.denial(scope)
        if status:
            await send_json(send, status, {"detail": detail})
            return
        fresh = (self.check.tokens.renewal(scope.get("path", ""), claims)
                 if claims is not None and self.check.tokens is not None else None)
        if fresh is None:
            await self.app(scope, receive, send)
            return

        async def renewing(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [*message.get("headers", []),
                                      (b"x-new-token", fresh.encode("ascii"))]
            await send(message)

        await self.app(scope, receive, renewing)


class CatchAllMiddleware:
    """Any exception that escapes the app becomes a 500 JSON response with an error id, and is
    **not** re-raised, so the server keeps the client's keep-alive connection (Starlette's
    own last-resort handler re-raises, and uvicorn then drops the connection)."""

    def __init__(self, app: ASGIApp, *, on_error: Callable[[], None] | None = None) -> None:
        self.app = app
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception:
            error_id = secrets.token_hex(6)
            log.exception("internal error (error_id=%s)", error_id)
            if self.on_error is not None:
                self.on_error()
            if started:
                return  # the response is under way: nothing more can be said
            await send_json(
                send,
                500,
                {"detail": f"Internal server error (error_id: {error_id})", "error_id": error_id},
            )
