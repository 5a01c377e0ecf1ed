"""``DELETE /documents`` (LightRAG's clear-all) on every stack kind: a LightRAG working
directory served in place, a memory stack, hexrag's PostgreSQL layout and LightRAG's own
PostgreSQL tables read in place (``layout = "lightrag"``), each holding the same LightRAG data.

Each is cleared over HTTP: ``success``, then no label, no node in ``/graphs``, no document,
no entity, relation or chunk found by a query in any mode, and ``/documents`` status counts
of zero. On the working directory the files say the same once opened again; on PostgreSQL
another namespace (hexrag's layout) or LightRAG workspace of the same server keeps its data.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.lr_routes_world import HexragServer, make_base
from tests.services.postgres import pg_dsn  # noqa: F401

if not all(importlib.util.find_spec(m) for m in ("lightrag", "aiofiles")):
    pytest.skip("needs lightrag-hku 1.5.7 (the dataset is written by its classes)",
                allow_module_level=True)

QUERY = {"query": "products and their integrations", "hl_keywords": ["products"],
         "ll_keywords": ["integration"]}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_base(tmp_path_factory.mktemp("clear-base") / "base", n_entities=30)


@pytest.fixture
def served(request: pytest.FixtureRequest, base: Path, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[HexragServer]:
    monkeypatch.setenv("INPUT_DIR", str(tmp_path / "inputs"))
    kind = request.param
    dsn = request.getfixturevalue("pg_dsn") if kind in ("postgres", "pg-lightrag") else None
    hx = HexragServer(kind, base, tmp_path, dsn)
    try:
        yield hx
    finally:
        hx.stop()


def _cleared(hx: HexragServer) -> None:
    client = hx.client
    assert client.get("/graph/label/list").json(), hx.kind  # data before
    r = client.delete("/documents")
    assert (r.status_code, r.json()) == (200, {
        "status": "success",
        "message": "All documents cleared successfully. Deleted 0 files."}), hx.kind
    assert client.get("/graph/label/list").json() == []
    whole = client.get("/graphs", params={"label": "*"}).json()
    assert (whole["nodes"], whole["edges"]) == ([], [])
    counts = client.get("/documents/status_counts").json()["status_counts"]
    assert not any(counts.values()), counts
    assert client.post("/documents/paginated", json={"page": 1}).json()["documents"] == []
    for mode in ("local", "global", "naive", "mix"):
        body = client.post("/query/data", json={**QUERY, "mode": mode}).json()
        data = body.get("data") or {}
        assert not any(data.get(k) for k in ("entities", "relationships", "chunks")), mode


@pytest.mark.parametrize("served", ["workdir", "memory"], indirect=True)
def test_clear_on_a_working_directory_and_memory(served: HexragServer) -> None:
    _cleared(served)
    if served.kind == "workdir":  # the files hold the emptied stack
        again = HexragServer("workdir", served.workdir_root, served.workdir_root.parent / "again")
        try:
            assert again.client.get("/graph/label/list").json() == []
            counts = again.client.get("/documents/status_counts").json()["status_counts"]
            assert not any(counts.values())
        finally:
            again.stop()


@pytest.mark.backend("postgres")
@pytest.mark.parametrize("served", ["postgres", "pg-lightrag"], indirect=True)
def test_clear_on_postgres(served: HexragServer, base: Path, tmp_path: Path,
                           pg_dsn: str) -> None:  # noqa: F811
    # another namespace (hexrag's layout) or LightRAG workspace on the same server
    other = HexragServer(served.kind, base, tmp_path / "other", pg_dsn)
    try:
        labels = other.client.get("/graph/label/list").json()
        _cleared(served)
        assert other.client.get("/graph/label/list").json() == labels != []
        counts = other.client.get("/documents/status_counts").json()["status_counts"]
        assert counts["all"] > 0
    finally:
        other.stop()
