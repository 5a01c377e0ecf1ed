"""The one-stack server's workspace check: no other workspace is served by mistake.

A server whose stack declares no workspaces serves one knowledge base. A LightRAG client that
names another one with LightRAG's ``LIGHTRAG-WORKSPACE`` header must not get this one's data
(nor write into it): it gets 404 ``unknown workspace``, as a server with workspaces answers a
name it does not admit. An absent or empty header, or the stack's own workspace name (its
LightRAG ``workspace``, ``""`` for hexrag's layout), is served. A JSON body's top-level
``"workspace"`` field (hexrag's alternative to the header, read by the workspace router when
no header names one) is held to the same rule by :class:`WorkspaceBodyGuardMiddleware`.

The check reads the headers alone. It sits inside the API key check (a request without the
key gets its 403 first) and outside the body limit (no body is read before it answers).
``OPTIONS`` (CORS preflight) passes through untouched, as on a server with workspaces. The
body check sits inside the body limit, which hands the whole body over in one message.
"""

from __future__ import annotations

from hexrag.api.middleware import ASGIApp, ClientGone, Receive, Scope, Send, send_json
from hexrag.api.workspaces import WORKSPACE_HEADER, body_named_workspace

__all__ = ["WorkspaceBodyGuardMiddleware", "WorkspaceGuardMiddleware"]

_HEADER = WORKSPACE_HEADER.encode()


class WorkspaceGuardMiddleware:
    """404 for a request whose ``LIGHTRAG-WORKSPACE`` header names a workspace other than
    ``workspace`` (the header stripped, as LightRAG does; empty means the default)."""

    def __init__(self, app: ASGIApp, *, workspace: str) -> None:
        self.app = app
        self.workspace = workspace

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") != "OPTIONS":
            for key, value in scope.get("headers", []):
                if key != _HEADER:
                    continue
                named = value.decode("latin-1").strip()
                if named and named != self.workspace:  # every such header must agree
                    await send_json(send, 404,
                                    {"detail": f"unknown workspace {named[:40]!r}"})
                    return
        await self.app(scope, receive, send)


class WorkspaceBodyGuardMiddleware:
    """404 for a ``POST`` JSON body whose top-level ``"workspace"`` names a workspace other
    than ``workspace``, when the request has no ``LIGHTRAG-WORKSPACE`` header (the header
    wins, even empty, as on the workspace router). Anything else, malformed JSON included,
    passes unchanged."""

    def __init__(self, app: ASGIApp, *, workspace: str) -> None:
        self.app = app
        self.workspace = workspace

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _header_names(scope):
            await self.app(scope, receive, send)
            return
        try:  # the workspace router's own reading; bounded by the body limit outside
            named, receive = await body_named_workspace(scope, receive, 0)
        except ClientGone:
            return
        if named and named != self.workspace:
            await send_json(send, 404, {"detail": f"unknown workspace {named[:40]!r}"})
            return
        await self.app(scope, receive, send)


def _header_names(scope: Scope) -> bool:
    """Whether a ``LIGHTRAG-WORKSPACE`` header is present (empty: the default, as on the
    router, which then reads no body either)."""
    return any(key == _HEADER for key, _ in scope.get("headers", []))
