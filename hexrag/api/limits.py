"""The HTTP API's limits and access settings, with LightRAG-style environment names.

======================  ========================  =========  ==============================
setting                 environment variable      default    over the limit
======================  ========================  =========  ==============================
request body            ``MAX_REQUEST_BODY_BYTES``  1 MiB    413 (counted while streaming)
file upload body        ``MAX_UPLOAD_BYTES``      50 MiB     413 (``/documents/upload`` only)
query length            ``MAX_QUERY_CHARS``       65536      422
scope values per field  ``MAX_SCOPE_VALUES``      256        422
history turns           ``MAX_HISTORY_MESSAGES``  64         422 (``conversation_history``)
keywords per list       ``MAX_KEYWORDS``          64         422 (``hl_``/``ll_keywords``)
query time              ``QUERY_TIMEOUT``         120 s      504
store call time         ``STORE_TIMEOUT``         10 s       504 naming the store
health probe time       ``PROBE_TIMEOUT``         2 s        503 naming the store
API key                 ``LIGHTRAG_API_KEY``      (none)     403 (header ``X-API-Key``)
unauthenticated paths   ``WHITELIST_PATHS``       ``/health``  (``/docs`` and its assets too)
CORS origins            ``CORS_ORIGINS``          (none)     no CORS headers
open workspaces         ``MAX_WORKSPACES``        64         least recently used one closed
======================  ========================  =========  ==============================

``MAX_REQUEST_BODY_BYTES=0`` (``MAX_UPLOAD_BYTES=0``) disables the body (upload) limit, like
LightRAG. ``WHITELIST_PATHS`` and
``CORS_ORIGINS`` are comma-separated; a ``/*`` suffix whitelists a path and everything under
it; ``CORS_ORIGINS=*`` allows every origin.

``MAX_WORKSPACES`` bounds the workspaces a server with workspaces keeps open, the default and
declared ones included (those are never closed). Opening one more closes the least recently
used workspace admitted by ``workspace_pattern`` whose document pipeline is idle, once its
requests in flight are answered; when none can be closed the request gets 503. It must leave
room for one pattern workspace when a pattern is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from hexrag.core.errors import ConfigurationError

if TYPE_CHECKING:
    from hexrag.api.auth_tokens import AuthSettings

__all__ = ["DOCS_PATHS", "ApiLimits", "ApiSettings"]

#: Hard upper bounds of the request model (the OpenAPI schema states them); the configured
#: limits can only be lower.
HARD_MAX_QUERY_CHARS = 65536
HARD_MAX_SCOPE_VALUES = 1000
HARD_MAX_HISTORY = 128
HARD_MAX_KEYWORDS = 64
HARD_MAX_WORKSPACES = 100_000
#: Paths always served without the key, besides ``WHITELIST_PATHS``: the API docs and their
#: offline assets (the web UI adds its own, :data:`hexrag.api.webui.WEBUI_PATHS`).
DOCS_PATHS = ("/docs", "/openapi.json", "/static-offline-docs/*")


@dataclass(frozen=True)
class ApiLimits:
    """Size and time bounds of one request (see the module docstring)."""

    max_request_body_bytes: int = 1024 * 1024
    max_upload_bytes: int = 50 * 1024 * 1024
    max_query_chars: int = HARD_MAX_QUERY_CHARS
    max_scope_values: int = 256
    max_history_messages: int = 64
    max_keywords: int = HARD_MAX_KEYWORDS
    query_timeout: float = 120.0
    max_workspaces: int = 64
    #: Seconds one store call may take (at most ``query_timeout``: the smaller one holds).
    store_timeout: float = 10.0
    #: Seconds ``/health`` waits for its probes.
    probe_timeout: float = 2.0

    def __post_init__(self) -> None:
        checks = {
            "MAX_REQUEST_BODY_BYTES": (self.max_request_body_bytes, 0, 1 << 34),
            "MAX_UPLOAD_BYTES": (self.max_upload_bytes, 0, 1 << 34),
            "MAX_QUERY_CHARS": (self.max_query_chars, 1, HARD_MAX_QUERY_CHARS),
            "MAX_SCOPE_VALUES": (self.max_scope_values, 1, HARD_MAX_SCOPE_VALUES),
            "MAX_HISTORY_MESSAGES": (self.max_history_messages, 0, HARD_MAX_HISTORY),
            "MAX_KEYWORDS": (self.max_keywords, 0, HARD_MAX_KEYWORDS),
            "MAX_WORKSPACES": (self.max_workspaces, 1, HARD_MAX_WORKSPACES),
        }
        for name, (value, lo, hi) in checks.items():
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ConfigurationError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
        for name, t in (("QUERY_TIMEOUT", self.query_timeout),
                        ("STORE_TIMEOUT", self.store_timeout),
                        ("PROBE_TIMEOUT", self.probe_timeout)):
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 86400:
                raise ConfigurationError(
                    f"{name} must be a number of seconds in (0, 86400], got {t!r}"
                )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ApiLimits:
        """The limits set in ``env`` (default: ``os.environ``), defaults elsewhere."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for attr, name, kind in (
            ("max_request_body_bytes", "MAX_REQUEST_BODY_BYTES", int),
            ("max_upload_bytes", "MAX_UPLOAD_BYTES", int),
            ("max_query_chars", "MAX_QUERY_CHARS", int),
            ("max_scope_values", "MAX_SCOPE_VALUES", int),
            ("max_history_messages", "MAX_HISTORY_MESSAGES", int),
            ("max_keywords", "MAX_KEYWORDS", int),
            ("query_timeout", "QUERY_TIMEOUT", float),
            ("max_workspaces", "MAX_WORKSPACES", int),
            ("store_timeout", "STORE_TIMEOUT", float),
            ("probe_timeout", "PROBE_TIMEOUT", float),
        ):
            raw = env.get(name)
            if raw is None or raw.strip() == "":
                continue
            try:
                values[attr] = kind(raw)
            except ValueError:
                raise ConfigurationError(f"{name}={raw!r} is not a valid {kind.__name__}") from None
        return cls(**values)


def _auth_settings(env: Mapping[str, str] | None = None) -> AuthSettings:
    from hexrag.api.auth_tokens import AuthSettings

    return AuthSettings.from_env({} if env is None else env)


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (value or "").split(",") if p.strip())


@dataclass(frozen=True)
class ApiSettings:
    """Limits plus access control of one app."""

    limits: ApiLimits = field(default_factory=ApiLimits)
    api_key: str | None = None
    whitelist_paths: tuple[str, ...] = ("/health",)
    cors_origins: tuple[str, ...] = ()
    #: LightRAG's accounts and JWT settings (``AUTH_ACCOUNTS``, ``TOKEN_SECRET``...; guest
    #: mode when no account is set): :mod:`hexrag.api.auth_tokens`.
    auth: AuthSettings = field(default_factory=lambda: _auth_settings())
    #: Serve LightRAG's own WebUI (from the installed lightrag-hku) at ``/webui/``
    #: (``hexrag serve --lightrag-webui``, ``HEXRAG_LIGHTRAG_WEBUI=1``).
    lightrag_webui: bool = False

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, api_key: str | None = None
    ) -> ApiSettings:
        """Settings from ``env`` (``LIGHTRAG_API_KEY``, ``WHITELIST_PATHS``,
        ``CORS_ORIGINS`` and the limits); ``api_key`` (``--key``) wins over the variable."""
        env = os.environ if env is None else env
        key = api_key if api_key is not None else env.get("LIGHTRAG_API_KEY")
        whitelist = _csv(env.get("WHITELIST_PATHS")) if "WHITELIST_PATHS" in env else ("/health",)
        return cls(
            limits=ApiLimits.from_env(env),
            api_key=key or None,
            whitelist_paths=whitelist,
            cors_origins=_csv(env.get("CORS_ORIGINS")),
            auth=_auth_settings(env),
            lightrag_webui=(env.get("HEXRAG_LIGHTRAG_WEBUI") or "").strip().lower()
            in ("1", "true", "yes", "on"),
        )

    def open_paths(self, *more: str) -> tuple[str, ...]:
        """Every path served without the key: ``WHITELIST_PATHS``, :data:`DOCS_PATHS` and
        ``more`` (the web UI's pages)."""
        return (*self.whitelist_paths, *DOCS_PATHS, *more)

    def cors_options(self) -> dict[str, Any]:
        """The keyword arguments of Starlette's ``CORSMiddleware`` for ``CORS_ORIGINS``
        (one place for the app and the workspace router)."""
        return {"allow_origins": list(self.cors_origins),
                "allow_methods": ["GET", "POST", "DELETE", "OPTIONS"], "allow_headers": ["*"],
                "expose_headers": ["X-New-Token"]}  # LightRAG's: the WebUI reads renewals

    def with_key(self, api_key: str | None) -> ApiSettings:
        """A copy with ``api_key`` (``None`` or empty: no key)."""
        return replace(self, api_key=api_key or None)
