"""LightRAG 1.5.7's graph routes: hexrag answers as LightRAG's own server does.

LightRAG's server (its ``create_graph_routes`` over a working directory, its own process)
and hexrag's server on the same data - a copy of the working directory, a memory stack and a
PostgreSQL stack filled from it - get the same requests: the label listings, ``/graphs``
(BFS, depth and node limits, ``is_truncated``, ``*``), ``/graph/entity/exists``, then one
sequence of entity / relation creations, edits, renames, merges and deletions (refusals
included), and the whole graph after it. Status codes and bodies must be equal, up to
``created_at`` stamps and the order LightRAG's ``set`` gives merged ``<SEP>`` lists.

A hexrag-only test: an entity created and edited over HTTP is found by ``/query/data`` at
once (re-embedded with the stack's embedder), and the corpus version moved (cached answers
are retired).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.lr_routes_world import (
    HexragServer,
    LightRAGServer,
    copy_base,
    make_base,
    scrub,
    validation_view,
)
from tests.services.postgres import pg_dsn  # noqa: F401

pytestmark = pytest.mark.parity

if not all(importlib.util.find_spec(m) for m in ("lightrag", "jwt", "aiofiles")):
    # (not imported here: LightRAG's api package parses the command line at import)
    if "1" in (os.environ.get("HEXRAG_REQUIRE_BACKENDS"), os.environ.get("HEXRAG_REQUIRE_PARITY")):
        raise
    pytest.skip("needs lightrag-hku[api] 1.5.7 (its server routes)", allow_module_level=True)

READS = [
    "/graph/label/list",
    "/graph/label/popular",
    "/graph/label/popular?limit=7",
    "/graph/label/search?q=data",
    "/graph/label/search?q=a&limit=5",
    "/graph/label/search?q=%20",
    "/graph/label/search?q=zzzz-none",
    "/graphs?label=*",
    "/graphs?label=*&max_nodes=5",
    "/graphs?label=no%20such%20entity",
    "/graph/entity/exists?name=no%20such%20entity",
    "/graph/label/popular?limit=0",
    "/graphs?label=*&max_depth=0",
]

Step = tuple[str, str, Any]


def _edits(a: str, b: str, c: str, d: str) -> list[Step]:
    """The edit sequence, over four existing entities ``a``..``d`` (a-b not related)."""
    return [
        ("POST", "/graph/entity/create", {"entity_name": "Widget X", "entity_data": {
            "description": "A widget.", "entity_type": "product"}}),
        ("POST", "/graph/entity/create", {"entity_name": "Widget X", "entity_data": {
            "description": "again"}}),
        ("POST", "/graph/entity/create", {"entity_name": "Widget Y", "entity_data": {
            "description": "Y widget", "source_id": "c1<SEP>c2", "colour": "ignored"}}),
        ("POST", "/graph/entity/create", {"entity_name": "W", "entity_data": {}}),
        ("POST", "/graph/entity/create", {"entity_name": "  ", "entity_data": {
            "description": "x"}}),
        ("POST", "/graph/relation/create", {"source_entity": "Widget Y",
                                            "target_entity": "Widget X", "relation_data": {
            "description": "Y uses X", "keywords": "uses", "weight": 2.0}}),
        ("POST", "/graph/relation/create", {"source_entity": "Widget Y", "target_entity": a,
                                            "relation_data": {
            "description": "Y near a", "source_id": "c1<SEP>c2<SEP>c3", "weight": 1}}),
        ("POST", "/graph/relation/create", {"source_entity": "Widget Y", "target_entity": a,
                                            "relation_data": {
            "description": "Y near a", "source_id": "c1<SEP>c2<SEP>c3", "weight": 3}}),
        ("POST", "/graph/relation/create", {"source_entity": "Widget Y",
                                            "target_entity": "Widget Y",
                                            "relation_data": {"description": "self"}}),
        ("POST", "/graph/relation/create", {"source_entity": "Widget Y",
                                            "target_entity": "Nobody",
                                            "relation_data": {"description": "x"}}),
        ("POST", "/graph/entity/edit", {"entity_name": "Widget X", "updated_data": {
            "description": "A better widget."}}),
        ("POST", "/graph/entity/edit", {"entity_name": "Widget X", "updated_data": {
            "colour": "red"}}),
        ("POST", "/graph/entity/edit", {"entity_name": "Widget X", "updated_data": {
            "description": ""}}),
        ("POST", "/graph/entity/edit", {"entity_name": "Widget X", "updated_data": {
            "entity_name": "Widget Z"}}),
        ("POST", "/graph/entity/edit", {"entity_name": "Widget X", "updated_data": {
            "entity_name": "Widget Z"}, "allow_rename": True}),
        ("POST", "/graph/entity/edit", {"entity_name": "Nobody", "updated_data": {
            "description": "x"}}),
        ("POST", "/graph/relation/edit", {"source_id": "Widget Z", "target_id": "Widget Y",
                                          "updated_data": {"description": "Y uses Z now",
                                                           "weight": 5}}),
        ("POST", "/graph/relation/edit", {"source_id": "Widget Z", "target_id": "Widget Y",
                                          "updated_data": {"weight": -1}}),
        ("POST", "/graph/relation/edit", {"source_id": "Widget Z", "target_id": "Nobody",
                                          "updated_data": {"description": "x"}}),
        ("POST", "/graph/relation/edit", {"source_id": a, "target_id": "Widget Y",
                                          "updated_data": {"keywords": "near, close"}}),
        ("POST", "/graph/entity/edit", {"entity_name": "Widget Y", "updated_data": {
            "entity_name": a, "description": "merged in"}, "allow_rename": True,
            "allow_merge": True}),
        ("POST", "/graph/entities/merge", {"entities_to_change": ["Widget Z", b],
                                           "entity_to_change_into": c}),
        ("POST", "/graph/entities/merge", {"entities_to_change": ["Nobody"],
                                           "entity_to_change_into": c}),
        ("POST", "/graph/entities/merge", {"entities_to_change": [],
                                           "entity_to_change_into": c}),
        ("POST", "/graph/entities/merge", {"entities_to_change": [d],
                                           "entity_to_change_into": "Brand New"}),
        ("DELETE", "/graph/relation/delete", {"source_entity": c, "target_entity": a}),
        ("DELETE", "/graph/relation/delete", {"source_entity": c, "target_entity": "Nobody"}),
        ("DELETE", "/graph/entity/delete", {"entity_name": "Brand New"}),
        ("DELETE", "/graph/entity/delete", {"entity_name": "Brand New"}),
        ("DELETE", "/graph/entity/delete", {"entity_name": ""}),
        ("GET", "/graph/entity/exists?name=Brand%20New", None),
        ("GET", "/graph/entity/exists?name=Widget%20Z", None),
        ("GET", "/graphs?label=*", None),
        ("GET", "/graph/label/popular?limit=1000", None),
        ("GET", "/graph/label/list", None),
    ]


def _answer(client: Any, step: Step) -> tuple[int, Any]:
    method, path, body = step
    r = client.request(method, path, **({} if body is None else {"json": body}))
    data = r.json()
    return r.status_code, scrub(validation_view(data) if r.status_code == 422 else data)


class World:
    """The base working directory, LightRAG's answers to every read and edit step."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.base = make_base(tmp / "base")
        lr = LightRAGServer(copy_base(self.base, tmp / "lr"), tmp / "inputs", tmp / "lr.log")
        try:
            popular = lr.client.get("/graph/label/popular?limit=1000").json()
            top = popular[0]
            self.reads = [*READS, f"/graphs?label={top}&max_depth=1",
                          f"/graphs?label={top}&max_depth=1&max_nodes=3",
                          f"/graphs?label={top}&max_depth=2&max_nodes=1000",
                          f"/graphs?label={popular[-1]}&max_depth=3",
                          f"/graph/entity/exists?name={top}"]
            self.read_answers = [_answer(lr.client, ("GET", p, None)) for p in self.reads]
            whole = lr.client.get("/graphs?label=*").json()
            related = {frozenset((e["source"], e["target"])) for e in whole["edges"]}
            a, c, d = popular[0], popular[1], popular[2]
            b = next(n for n in popular[3:] if frozenset((a, n)) not in related)
            self.steps = _edits(a, b, c, d)
            self.edit_answers = [_answer(lr.client, s) for s in self.steps]
        finally:
            lr.stop()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("lr-graph"))


def _compare(world: World, hx: HexragServer) -> None:
    for path, expected in zip(world.reads, world.read_answers, strict=True):
        assert _answer(hx.client, ("GET", path, None)) == expected, (hx.kind, path)
    for step, expected in zip(world.steps, world.edit_answers, strict=True):
        got = _answer(hx.client, step)
        assert got == expected, (hx.kind, step, got, expected)


def test_lightrag_answers_the_steps_as_expected(world: World) -> None:
    """The reference itself: the sequence exercises successes and each kind of refusal."""
    codes = [code for code, _ in world.edit_answers]
    assert codes.count(200) >= 15 and {400, 404, 422} <= set(codes), codes
    assert any(a[1]["is_truncated"] for a in world.read_answers
               if isinstance(a[1], dict) and "is_truncated" in a[1])


@pytest.fixture
def served(request: pytest.FixtureRequest, world: World, tmp_path: Path) -> Iterator[HexragServer]:
    kind = request.param
    dsn = request.getfixturevalue("pg_dsn") if kind in ("postgres", "pg-lightrag") else None
    hx = HexragServer(kind, world.base, tmp_path, dsn)
    try:
        yield hx
    finally:
        hx.stop()


@pytest.mark.parametrize("served", ["workdir", "memory"], indirect=True)
def test_graph_routes_equal_lightrag(served: HexragServer, world: World) -> None:
    _compare(world, served)


@pytest.mark.backend("postgres")
@pytest.mark.parametrize("served", ["postgres"], indirect=True)
def test_graph_routes_equal_lightrag_on_postgres(served: HexragServer, world: World) -> None:
    _compare(world, served)


@pytest.mark.backend("postgres")
@pytest.mark.parametrize("served", ["pg-lightrag"], indirect=True)
def test_graph_routes_equal_lightrag_on_its_postgres_tables(served: HexragServer,
                                                            world: World) -> None:
    """A LightRAG PostgreSQL deployment read in place (``layout = "lightrag"``): every read
    and edit answers as LightRAG's server on the working directory holding the same data."""
    opened: Any = served.server.server.config.app  # the stack opened in the server's loop
    graph = opened.stack.stores.graph
    graph = getattr(graph, "_inner", graph)  # under the answer cache's versioning wrapper
    assert type(graph).__name__ == "LightRAGPgGraphStore"
    _compare(world, served)


def test_working_directory_keeps_the_edits(world: World, tmp_path: Path) -> None:
    """The edits are written back to the working directory: a server opened on it again
    draws the same graph LightRAG drew after the sequence."""
    hx = HexragServer("workdir", world.base, tmp_path)
    try:
        for step in world.steps:
            _answer(hx.client, step)
    finally:
        hx.stop()
    again = HexragServer("workdir", hx.workdir_root, tmp_path / "again")
    try:
        expected = dict(zip([p for _, p, _ in world.steps], world.edit_answers, strict=True))
        assert _answer(again.client, ("GET", "/graphs?label=*", None)) == \
            expected["/graphs?label=*"]
    finally:
        again.stop()


def test_edited_entity_is_found_by_query_data_at_once(world: World, tmp_path: Path) -> None:
    hx = HexragServer("memory", world.base, tmp_path)
    try:
        version = hx.stack.stores.cache

        async def corpus_version() -> Any:
            from hexrag.core.versioning import CORPUS_VERSION_KEY

            (row,) = await version.get_many([CORPUS_VERSION_KEY])
            return row

        before = hx.run(corpus_version())
        q = {"query": "zorblax", "mode": "local", "ll_keywords": ["Zorblax quantum flux"],
             "hl_keywords": [], "enable_rerank": False}

        def names() -> list[str]:
            r = hx.client.post("/query/data", json=q)
            assert r.status_code == 200, r.text
            return [e["entity_name"] for e in r.json()["data"]["entities"]]

        assert "Zorblax" not in names()
        r = hx.client.post("/graph/entity/create", json={"entity_name": "Zorblax",
                                                         "entity_data": {
            "description": "Zorblax quantum flux capacitor", "entity_type": "product"}})
        assert r.status_code == 200, r.text
        assert names()[0] == "Zorblax"
        after = hx.run(corpus_version())
        assert after is not None and after != before  # cached answers are retired
        r = hx.client.post("/graph/entity/edit", json={
            "entity_name": "Zorblax", "updated_data": {"entity_name": "Quorblax",
                                                       "description": "Quorblax flux"},
            "allow_rename": True})
        assert r.status_code == 200, r.text
        got = names()
        assert "Zorblax" not in got and "Quorblax" in got
        q["ll_keywords"] = ["Quorblax flux"]
        assert names()[0] == "Quorblax"
    finally:
        hx.stop()


def test_graph_routes_per_workspace(world: World, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Per ``LIGHTRAG-WORKSPACE`` on a workspace router (a working directory per workspace):
    an entity created in one workspace exists there only, and is written to its directory;
    ``DELETE /documents`` clears one workspace only."""
    monkeypatch.setenv("INPUT_DIR", str(tmp_path / "inputs"))
    import shutil

    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.api.limits import ApiSettings
    from hexrag.config import StackConfig
    from hexrag.serving import workspace_router
    from tests.integration.live import LiveServer
    from tests.integration.lr_routes_world import DIM, WS

    root = tmp_path / "rag"
    for ws in ("alpha", "beta"):
        shutil.copytree(world.base / WS, root / ws)
    config = StackConfig(workdir=root, workspaces=["alpha", "beta"], default_workspace="alpha",
                         embedder=f"hashing:{DIM}")
    server = LiveServer(workspace_router(config, ApiSettings(), embedder=HashingEmbedder(DIM)),
                        lifespan="on")
    try:
        http = server.client

        def h(ws: str) -> dict[str, str]:
            return {"LIGHTRAG-WORKSPACE": ws}

        labels = http.get("/graph/label/list", headers=h("alpha")).json()
        assert labels == http.get("/graph/label/list", headers=h("beta")).json()
        assert labels == world.read_answers[0][1]
        r = http.post("/graph/entity/create", headers=h("beta"), json={
            "entity_name": "Only Beta", "entity_data": {"description": "beta's own"}})
        assert r.status_code == 200, r.text
        exists = "/graph/entity/exists?name=Only%20Beta"
        assert http.get(exists, headers=h("beta")).json() == {"exists": True}
        assert http.get(exists, headers=h("alpha")).json() == {"exists": False}
        assert http.get(exists).json() == {"exists": False}  # no header: the default
        assert http.get(exists, headers=h("gamma")).status_code == 404
        assert http.get("/graph/label/list", headers=h("alpha")).json() == labels
        # the document routes are per workspace too
        counts = http.get("/documents/status_counts", headers=h("alpha")).json()
        assert counts == http.get("/documents/status_counts", headers=h("beta")).json()
        assert counts["status_counts"]["all"] > 0
        assert http.get("/documents/status_counts", headers=h("gamma")).status_code == 404
        # clearing one workspace leaves the other whole
        assert http.delete("/documents", headers=h("gamma")).status_code == 404
        r = http.delete("/documents", headers=h("alpha"))
        assert r.json()["status"] == "success", r.text
        assert http.get("/graph/label/list", headers=h("alpha")).json() == []
        assert set(http.get("/graph/label/list", headers=h("beta")).json()) == {
            *labels, "Only Beta"}
        assert http.get("/documents/status_counts", headers=h("beta")).json() == counts
    finally:
        server.stop()
    assert "Only Beta" in (root / "beta" / "graph_chunk_entity_relation.graphml").read_text()
    assert "Only Beta" not in (root / "alpha" / "graph_chunk_entity_relation.graphml").read_text()
