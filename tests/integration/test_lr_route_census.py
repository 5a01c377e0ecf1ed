"""Route census (issue 24 point 1): every route of LightRAG 1.5.7's server is one of hexrag's.

LightRAG's route table is read from its own ``lightrag_server.create_app`` (built as
``lightrag-server`` builds it, in its own process: :mod:`tests.integration.lr_route_table`);
hexrag's from :func:`hexrag.api.create_app` with LightRAG's WebUI on. Every ``(method, path)``
of LightRAG's - its 45 API routes and the ``/webui`` and ``/workspace`` mounts - must be
hexrag's too; only FastAPI's documentation pages are left out (hexrag serves its own at
``/docs``). Each route is then asked once on a live hexrag server: none may answer the
router's own 404 (``{"detail": "Not Found"}``) or 405. README and docs/compat.md must name
every route (the issue's "Done when").
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from hexrag.api.limits import ApiSettings
from tests.integration.live import LiveServer
from tests.integration.lr_route_table import DOCS_ROUTES, lightrag_routes, route_table
from tests.integration.test_api_documents import _app

pytest.importorskip("lightrag")
pytest.importorskip("jwt")  # LightRAG's server needs PyJWT (the parity extra)

#: LightRAG 1.5.7's API routes (lightrag/api/routers/*.py and lightrag_server.py).
LIGHTRAG_API_ROUTES = 45
MOUNTS = {("MOUNT", "/webui"), ("MOUNT", "/workspace")}


@pytest.fixture(scope="module")
def lightrag(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[str, str]]:
    return lightrag_routes(tmp_path_factory.mktemp("census"))


def _hexrag_app() -> Any:
    return _app(settings=dataclasses.replace(ApiSettings(), lightrag_webui=True))


def test_lightrag_has_the_routes_the_issue_counts(lightrag: set[tuple[str, str]]) -> None:
    api = {r for r in lightrag if r not in DOCS_ROUTES and r[0] != "MOUNT"}
    assert len(api) == LIGHTRAG_API_ROUTES, sorted(api)
    assert {r for r in lightrag if r[0] == "MOUNT"} - DOCS_ROUTES == MOUNTS
    assert ("DELETE", "/documents") in api  # the clear-all this census found missing


def test_every_lightrag_route_is_hexrags(lightrag: set[tuple[str, str]]) -> None:
    hexrag = set(route_table(_hexrag_app().routes))
    missing = sorted(r for r in lightrag - DOCS_ROUTES if r not in hexrag)
    assert missing == [], f"LightRAG routes hexrag lacks: {missing}"


def test_every_lightrag_route_answers_on_hexrag(lightrag: set[tuple[str, str]],
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INPUT_DIR", str(tmp_path / "inputs"))  # DELETE /documents empties it
    server = LiveServer(_hexrag_app())
    try:
        for method, path in sorted(lightrag - DOCS_ROUTES):
            url = (path.replace("{track_id}", "upload_x").replace("{asset_hash}", "h")
                   .replace("{asset_id}", "a"))
            if method == "MOUNT":
                method, url = "GET", url + "/"
            if method == "HEAD":
                continue
            body: dict[str, Any] | None = {} if method in ("POST", "DELETE") else None
            r = server.client.request(method, url, json=body)
            assert r.status_code != 405, (method, path, r.text)
            if r.status_code == 404:
                assert r.json() != {"detail": "Not Found"}, (method, path)
    finally:
        server.stop()


def _named(route: tuple[str, str]) -> str:
    method, path = route
    return f"`{path}/` (mount)" if method == "MOUNT" else f"`{method} {path}`"


def test_readme_and_compat_list_every_route(lightrag: set[tuple[str, str]]) -> None:
    repo = Path(__file__).resolve().parents[2]
    compat = (repo / "docs" / "compat.md").read_text()
    readme = (repo / "README.md").read_text()
    routes = sorted(r for r in lightrag - DOCS_ROUTES if r[0] != "HEAD")
    rows = [_named(r) for r in routes]
    assert [n for n in rows if f"| {n} |" not in compat] == []
    in_readme = [f"`{path}/`" if method == "MOUNT" else f"`{method} {path}`"
                 for method, path in routes]
    assert [n for n in in_readme if n not in readme] == []
