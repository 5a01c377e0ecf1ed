"""The playground page (``/`` and ``/webui``) and the scope values it offers.

The page (``hexrag/api/static/``) is plain HTML + JavaScript with the graph-drawing library
cytoscape vendored from the npm registry (``tools/webui/build.sh``): nothing is loaded from a
CDN, it works offline. It calls the API like any client (``/query/data``, ``/query/stream``,
``/scope/values``, ``/workspaces``), sending the API key and the workspace header the user
enters. The page and its static files hold no data, so they are served without a key.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from hexrag.core.scope import chunk_meta

__all__ = ["STATIC_DIR", "WEBUI_PATHS", "add_webui_routes"]

STATIC_DIR = Path(__file__).parent / "static"
#: Paths of the page and its files (whitelisted from the API key: they hold no data).
WEBUI_PATHS = ("/", "/webui", "/webui/static/*")
#: At most this many chunks are read to list scope values, and this many values per field.
MAX_SCANNED_CHUNKS = 200_000
MAX_VALUES = 1000
CACHE_SECONDS = 30.0


def add_webui_routes(app: FastAPI, engine: Any) -> None:
    """Mount the page, its static files, ``GET /scope/values`` and ``GET /workspaces`` on
    ``app``."""
    app.mount("/webui/static", StaticFiles(directory=STATIC_DIR), name="webui-static")
    page = STATIC_DIR / "index.html"

    @app.get("/", include_in_schema=False)
    async def root() -> FileResponse:
        return FileResponse(page, media_type="text/html")

    @app.get("/webui", include_in_schema=False)
    async def webui() -> FileResponse:
        return FileResponse(page, media_type="text/html")

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
