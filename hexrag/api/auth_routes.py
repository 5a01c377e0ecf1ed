"""LightRAG's login and UI routes: ``POST /login``, ``GET /auth-status``, ``GET /auth/verify``,
``GET /ui/customization`` (and its assets route).

As in LightRAG 1.5.7's server:

* ``/auth-status`` (open): in guest mode (no ``AUTH_ACCOUNTS``) a guest token and
  ``auth_configured: false``; with accounts ``auth_configured: true`` and no token. Both with
  ``core_version``, ``api_version``, ``webui_title``, ``webui_description``,
  ``ai_content_notice_enabled``;
* ``/login`` (open, an OAuth2 password form ``username`` / ``password``): a guest token in
  guest mode; an account's token for the right password; 401 ``Incorrect credentials``;
  429 with ``Retry-After`` after ``LOGIN_MAX_FAILED_ATTEMPTS`` wrong passwords for one client
  address and user within ``LOGIN_LOCKOUT_WINDOW_SECONDS``;
* ``/auth/verify``: ``{"status": "ok"}`` when the credentials authenticate (the whitelist is
  ignored here), else the 401/403 every protected route gives;
* ``/ui/customization`` (open): ``{"customized": false, "brand": {title, description}}``
  from ``WEBUI_TITLE`` / ``WEBUI_DESCRIPTION``; hexrag has no customization bundle
  (LightRAG's ``UI_TEMPLATES_DIR``), so every asset is 404 ``Unknown asset``.

The versions reported are the LightRAG server's hexrag answers as (:data:`CORE_VERSION`,
:data:`API_VERSION`); hexrag's own is in ``/health`` (``hexrag_version``).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Form, Request
from fastapi.responses import JSONResponse

from hexrag.api.auth_tokens import LoginLimiter, Tokens, bearer_token, decide, verify_password

__all__ = ["API_VERSION", "CORE_VERSION", "UI_OPEN_PATHS", "add_auth_routes", "ui_identity"]

#: The LightRAG server version hexrag answers as (``core_version``).
CORE_VERSION = "1.5.7"
#: LightRAG 1.5.7's API version (``api_version``).
API_VERSION = "0344"
#: Paths LightRAG serves to anyone (the WebUI reads them before login).
UI_OPEN_PATHS = ("/auth-status", "/login", "/ui/customization", "/ui/customization/assets/*")
_TRUE = ("1", "true", "yes", "on", "t", "y")


def ui_identity(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The fields LightRAG adds to ``/health``, ``/auth-status`` and ``/login``: versions,
    ``webui_title``, ``webui_description`` (``WEBUI_TITLE``, ``WEBUI_DESCRIPTION``, else
    ``None``), ``ai_content_notice_enabled`` (``ENABLE_AI_CONTENT_NOTICE``)."""
    env = os.environ if env is None else env
    return {
        "core_version": CORE_VERSION,
        "api_version": API_VERSION,
        "webui_title": env.get("WEBUI_TITLE") or None,
        "webui_description": env.get("WEBUI_DESCRIPTION") or None,
        "ai_content_notice_enabled": (env.get("ENABLE_AI_CONTENT_NOTICE") or "").strip().lower()
        in _TRUE,
    }


def add_auth_routes(app: FastAPI, tokens: Tokens, api_key: str | None) -> None:
    """Mount ``/login``, ``/auth-status``, ``/auth/verify`` and ``/ui/customization`` on
    ``app`` (``tokens``: the app's :class:`~hexrag.api.auth_tokens.Tokens`; ``api_key``:
    ``LIGHTRAG_API_KEY``)."""
    settings = tokens.settings
    limiter = LoginLimiter(settings.login_max_failed, settings.login_window_seconds)
    key = api_key.encode("utf-8") if api_key else None

    def guest() -> str:
        return tokens.create("guest", "guest", {"auth_mode": "disabled"})

    @app.get("/auth-status", tags=["auth"])
    async def auth_status() -> dict[str, Any]:
        """Whether accounts are configured; a guest token when they are not."""
        ident = ui_identity()
        if not settings.configured:
            return {"auth_configured": False, "access_token": guest(), "token_type": "bearer",
                    "auth_mode": "disabled",
                    "message": "Authentication is disabled. Using guest access.", **ident}
        return {"auth_configured": True, "auth_mode": "enabled", **ident}

    @app.post("/login", tags=["auth"], responses={
        401: {"description": "Incorrect credentials"},
        429: {"description": "Too many failed login attempts"}})
    async def login(request: Request, username: str = Form(), password: str = Form()) -> Any:
        """An account's bearer token (LightRAG's OAuth2 password form), or a guest token
        when no account is configured."""
        ident = ui_identity()
        if not settings.configured:
            return {"access_token": guest(), "token_type": "bearer", "auth_mode": "disabled",
                    "message": "Authentication is disabled. Using guest access.", **ident}
        client = request.client.host if request.client else "unknown"
        bucket = f"{client}:{username[:256]}"
        wait = limiter.retry_after(bucket)
        if wait is not None:
            return JSONResponse(
                status_code=429,
                content={"detail": "Too many failed login attempts. Please try again later."},
                headers={"Retry-After": str(math.ceil(wait) + 1)})
        limiter.failed(bucket)  # counted before the check: concurrent guesses cannot pass
        if not await asyncio.to_thread(verify_password, settings, username, password):
            return JSONResponse(status_code=401, content={"detail": "Incorrect credentials"})
        limiter.reset(bucket)
        return {"access_token": tokens.create(username, "user", {"auth_mode": "enabled"}),
                "token_type": "bearer", "auth_mode": "enabled", **ident}

    @app.get("/auth/verify", tags=["auth"], responses={
        401: {"description": "Invalid or missing token"},
        403: {"description": "Missing or wrong API key"}})
    async def verify(request: Request) -> Any:
        """``{"status": "ok"}`` when the request's credentials authenticate (never
        whitelisted), else the refusal a protected route gives."""
        headers = request.scope.get("headers", [])
        given = next((v for n, v in headers if n == b"x-api-key"), None)
        status, detail = decide(token=bearer_token(headers), key_given=given, api_key=key,
                                tokens=tokens)
        if status is not None:
            return JSONResponse(status_code=status, content={"detail": detail})
        return {"status": "ok"}

    @app.get("/ui/customization", tags=["ui-customization"])
    async def ui_customization(locale: str = "") -> JSONResponse:
        """The WebUI's branding (``WEBUI_TITLE``, ``WEBUI_DESCRIPTION``); hexrag serves no
        customization bundle (``customized`` is false)."""
        ident = ui_identity()
        brand = {"title": ident["webui_title"] or "LightRAG",
                 "description": ident["webui_description"] or "Simple and Fast RAG"}
        return JSONResponse({"customized": False, "brand": brand},
                            headers={"Cache-Control": "no-store"})

    @app.get("/ui/customization/assets/{asset_hash}/{asset_id}", tags=["ui-customization"],
             responses={404: {"description": "Unknown asset"}})
    async def ui_asset(asset_hash: str, asset_id: str) -> JSONResponse:
        """No bundle, no asset: 404."""
        return JSONResponse(status_code=404, content={"detail": "Unknown asset"})
