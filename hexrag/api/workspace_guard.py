"""The one-stack server's workspace check: no other workspace is served by mistake.

A server whose stack declares no workspaces serves one knowledge base. A LightRAG client that
names another one with LightRAG's ``LIGHTRAG-WORKSPACE`` header must not get this one's data
(nor write into it): it gets 404 ``unknown workspace``, as a server with workspaces answers a
name it does not admit. An absent or empty header, or the stack's own workspace name (its
LightRAG ``workspace``, ``""`` for hexrag's layout), is served.

The check reads the headers alone. It sits inside the API key check (a request without the
key gets its 403 first) and outside the body limit (no body is read before it answers).
``OPTIONS`` (CORS preflight) passes through untouched, as on a server with workspaces.
"""

from __future__ import annotations

from hexrag.api.middleware import ASGIApp, Receive, Scope, Send, send_json

__all__ = ["WorkspaceGuardMiddleware"]

_HEADER = b"lightrag-workspace"


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
