"""The playground page (``/`` and ``/playground``; ``/webui`` too unless LightRAG's WebUI is
served), the scope values it offers, and LightRAG's own WebUI (``/webui/``) on request.

The page (``hexrag/api/static/``) is plain HTML + JavaScript with the graph-drawing library
cytoscape vendored from the npm registry (``tools/webui/build.sh``): nothing is loaded from a
CDN, it works offline. It calls the API like any client (``/query/data``, ``/query/stream``,
``/scope/values``, ``/workspaces``), sending the API key and the workspace header the user
enters. The page and its static files hold no data, so they are served without a key.

LightRAG's React WebUI is served at ``/webui/`` (as LightRAG does) when the settings ask for it
(``hexrag serve --lightrag-webui``, ``HEXRAG_LIGHTRAG_WEBUI=1``): the built files shipped in
the installed ``lightrag-hku`` wheel (``lightrag/api/webui/``, found with importlib, never
copied), its ``index.html`` given LightRAG's runtime configuration. ``/webui`` then redirects
to ``/webui/``; the playground stays at ``/`` and ``/playground``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

from hexrag.api.auth_routes import UI_OPEN_PATHS
from hexrag.core.errors import ConfigurationError
from hexrag.core.scope import chunk_meta

__all__ = ["STATIC_DIR", "WEBUI_PATHS", "add_webui_routes", "lightrag_webui_dir"]

STATIC_DIR = Path(__file__).parent / "static"
#: Paths of the pages and their files (whitelisted from the API key: they hold no data),
#: and what LightRAG's WebUI reads before login (``/auth-status``, ``/login``,
#: ``/ui/customization``: LightRAG serves them to anyone too).
WEBUI_PATHS = ("/", "/playground", "/webui/*", "/workspace/*", *UI_OPEN_PATHS)
_RUNTIME_PLACEHOLDER = b"<!-- __LIGHTRAG_RUNTIME_CONFIG__ -->"
#: At most this many chunks are read to list scope values, and this many values per field.
MAX_SCANNED_CHUNKS = 200_000
MAX_VALUES = 1000
CACHE_SECONDS = 30.0


def add_webui_routes(app: FastAPI, engine: Any) -> None:
    """Mount the page, its static files, ``GET /scope/values`` and ``GET /workspaces`` on
    ``app``."""
    app.mount("/webui/static", StaticFiles(directory=STATIC_DIR), name="webui-static")
    page = STATIC_DIR / "index.html"
    settings = getattr(app.state, "settings", None)
    lightrag = lightrag_webui_dir() if getattr(settings, "lightrag_webui", False) else None
    app.state.lightrag_webui = lightrag
    app.state.lightrag_workspace = lightrag is not None and (lightrag / "workspace.html").is_file()

    @app.get("/", include_in_schema=False)
    async def root() -> FileResponse:
        return FileResponse(page, media_type="text/html")

    @app.get("/playground", include_in_schema=False)
    async def playground() -> FileResponse:
        return FileResponse(page, media_type="text/html")

    @app.get("/webui", include_in_schema=False)
    async def webui() -> Response:
        if lightrag is not None:
            return RedirectResponse(url="/webui/")
        return FileResponse(page, media_type="text/html")

    if lightrag is not None:
        app.mount("/webui", LightRAGWebUI(directory=lightrag, html=True), name="lightrag-webui")
        if app.state.lightrag_workspace:  # LightRAG's query-user entry
            app.mount("/workspace", LightRAGWebUI(directory=lightrag, html=True,
                                                  entry="workspace.html"),
                      name="lightrag-workspace")

    @app.get("/workspaces", tags=["ops"])
    async def workspaces() -> dict[str, Any]:
        """The workspaces of this server: one stack serves only the default one (a server
        with workspaces answers this itself, see :mod:`hexrag.api.workspaces`)."""
        return {"default": getattr(app.state, "workspace", ""), "declared": [],
                "pattern": None, "open": [getattr(app.state, "workspace", "")]}

    cached: dict[str, Any] = {"at": -1.0, "values": None}

    @app.get("/scope/values", tags=["ops"])
    async def scope_values() -> dict[str, Any]:
        """The scope values present in the chunk store (``product_id``, ``category_id``),
        sorted; read from at most 200,000 chunks, kept for 30 s."""
        if cached["values"] is not None and time.monotonic() - cached["at"] < CACHE_SECONDS:
            return dict(cached["values"])
        values = await _collect(engine.stores.chunk_store)
        cached.update(at=time.monotonic(), values=values)
        return dict(values)


def lightrag_webui_dir() -> Path:
    """The built WebUI inside the installed ``lightrag-hku`` package; a
    :class:`~hexrag.core.errors.ConfigurationError` naming the package when it is missing."""
    import importlib.util

    spec = importlib.util.find_spec("lightrag")
    if spec is None or spec.origin is None:
        raise ConfigurationError("--lightrag-webui serves the WebUI shipped in the lightrag-hku "
                                 "package, which is not installed (pip install "
                                 "lightrag-hku==1.5.7)")
    folder = Path(spec.origin).parent / "api" / "webui"
    if not (folder / "index.html").is_file():
        raise ConfigurationError(f"--lightrag-webui: the installed lightrag-hku has no built "
                                 f"WebUI ({folder / 'index.html'} is missing)")
    return folder


def _runtime_config() -> bytes:
    """LightRAG's ``window.__LIGHTRAG_CONFIG__`` script (the API at the server's root,
    ``WEBUI_TITLE`` as the page title)."""
    import json

    from hexrag.api.auth_routes import ui_identity

    payload = json.dumps({"apiPrefix": "", "webuiPrefix": "/webui/",
                          "webuiTitle": ui_identity()["webui_title"]}).replace("</", "<\\/")
    return (f"<script>window.__LIGHTRAG_CONFIG__ = {payload};"
            "if(window.__LIGHTRAG_CONFIG__.webuiTitle)"
            "{document.title=window.__LIGHTRAG_CONFIG__.webuiTitle;}</script>").encode()


class LightRAGWebUI(StaticFiles):
    """LightRAG's WebUI files as LightRAG's server serves them: the ``entry`` page
    (``index.html`` at ``/webui/``, ``workspace.html`` at ``/workspace/``) at the mount's root
    with the runtime configuration (API at the server's root) and no caching, hashed assets
    cached for a year, the other entry page not served here."""

    def __init__(self, *args: Any, entry: str = "index.html", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entry = entry
        self.other = "workspace.html" if entry == "index.html" else "index.html"

    async def get_response(self, path: str, scope: Scope) -> Response:
        """The file at ``path``; the entry page with its configuration."""
        if path.lower() == self.other:
            return Response(b'{"detail":"Not Found"}', status_code=404,
                            media_type="application/json")
        if path in ("", ".", self.entry):
            assert self.directory is not None
            html = (Path(self.directory) / self.entry).read_bytes()
            html = html.replace(_RUNTIME_PLACEHOLDER, _runtime_config())
            return Response(html, media_type="text/html", headers={
                "Cache-Control": "no-cache, no-store, must-revalidate"})
        response = await super().get_response(path, scope)
        if path.startswith("assets/") and response.status_code == 200:
            response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
        return response


async def _collect(store: Any) -> dict[str, Any]:
    from hexrag.ports.scan import scan_all

    found: dict[str, set[str]] = {"product_id": set(), "category_id": set()}
    scanned = 0
    complete = True
    scan = getattr(store, "scan_chunks", None)
    if scan is None:
        return {"product_id": [], "category_id": [], "complete": False, "scanned": 0}
    async for page in scan_all(scan, limit=1000):
        for chunk in page.items:
            for meta in chunk_meta(chunk):
                if meta.product_id:
                    found["product_id"].add(meta.product_id)
                if meta.category_id:
                    found["category_id"].add(meta.category_id)
        scanned += len(page.items)
        if scanned >= MAX_SCANNED_CHUNKS:
            complete = page.cursor is None
            break
    return {
        "product_id": sorted(found["product_id"])[:MAX_VALUES],
        "category_id": sorted(found["category_id"])[:MAX_VALUES],
        "complete": complete and all(len(v) <= MAX_VALUES for v in found.values()),
        "scanned": scanned,
    }
