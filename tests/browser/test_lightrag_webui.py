"""LightRAG's own React WebUI (shipped built in the ``lightrag-hku`` wheel, served unchanged by
``hexrag serve --lightrag-webui``) against hexrag, in Debian's chromium (issue 24).

LightRAG's server ingests three documents with the offline stand-in model into a working
directory; ``hexrag serve --workdir <a copy> --lightrag-webui`` serves it with the same model.
The WebUI, as a LightRAG user opens it at ``/webui/``:

* connects (guest mode: ``/auth-status`` gives it a token) and shows the API status:
  ``Connected``, the version, the status dialog with the model and directories;
* lists the documents (``/documents/paginated``) with their status;
* draws a label's subgraph (``/graph/label/search``, ``/graphs``) with the nodes hexrag's
  ``/graphs`` returns;
* answers a retrieval query (``/query/stream`` with progress lines) with the stand-in's
  answer drawn from the documents and the references.

Every API call the WebUI makes must be answered below 400. Screenshots go to
``$HEXRAG_ARTIFACTS`` (default ``test-artifacts/``): ``lightrag-webui-*.png``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.lr_ops_servers import HexragServe, LightRAGFull, standin_model
from tests.integration.test_lr_routes_ops import DOCS

pytest.importorskip("lightrag")
pytest.importorskip("jwt")

ARTIFACTS = Path(os.environ.get("HEXRAG_ARTIFACTS", "test-artifacts"))
#: Calls of the WebUI that are not hexrag's API (its own files).
_FILES = re.compile(r"/webui/|/favicon|^blob:|^data:")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HexragServe]:
    """``hexrag serve --lightrag-webui`` on LightRAG's working directory."""
    tmp = tmp_path_factory.mktemp("lr-webui")
    model = standin_model()
    try:
        lr = LightRAGFull(tmp / "rag", model, tmp / "lightrag.log")
        try:
            lr.ingest(DOCS)
        finally:
            lr.stop()
        hx = HexragServe(tmp / "rag", tmp / "hx", model, tmp / "hexrag.log",
                         args=["--lightrag-webui"])
        try:
            yield hx
        finally:
            hx.stop()
    finally:
        model.stop()


class Calls:
    """The API requests a page makes, with their statuses."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.seen: list[tuple[str, str, int]] = []

    def __call__(self, response: Any) -> None:
        url = response.url.removeprefix(self.base)
        if not _FILES.search(url):
            self.seen.append((response.request.method, url, response.status))

    def paths(self) -> set[str]:
        """The paths called (no query string)."""
        return {url.split("?")[0] for _, url, _ in self.seen}

    def failed(self) -> list[tuple[str, str, int]]:
        """Calls answered 400 or above."""
        return [c for c in self.seen if c[2] >= 400]


@pytest.fixture
def page(browser: Any, served: HexragServe) -> Iterator[tuple[Any, Calls]]:
    """A fresh page on ``/webui/`` with its calls recorded (connected)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    calls = Calls(served.url)
    pg.on("response", calls)
    pg.goto(served.url + "/webui/")
    pg.get_by_text("Connected").wait_for(timeout=20_000)
    try:
        yield pg, calls
    finally:
        context.close()


def _shot(pg: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"lightrag-webui-{name}.png"))


def test_the_webui_connects_and_shows_the_api_status(page: tuple[Any, Calls]) -> None:
    pg, calls = page
    wanted = {"/auth-status", "/health", "/ui/customization"}
    for _ in range(100):  # a response event may be delivered after the page already shows it
        if wanted <= calls.paths():
            break
        pg.wait_for_timeout(100)
    assert wanted <= calls.paths(), calls.paths()
    pg.get_by_text("v1.5.7/0344").wait_for(timeout=10_000)
    pg.get_by_text("Connected").click()
    dialog = pg.get_by_role("dialog")
    dialog.wait_for(timeout=10_000)
    text = dialog.inner_text()
    assert "standin" in text, text  # the LLM model of the configuration
    assert "standin-embed" in text, text
    _shot(pg, "status")
    assert not calls.failed(), calls.failed()


def test_the_webui_lists_the_documents(page: tuple[Any, Calls], served: HexragServe) -> None:
    pg, calls = page
    pg.get_by_role("tab", name="Documents").click()
    first = next(iter(DOCS.values()))[:40]
    pg.get_by_text(first, exact=False).first.wait_for(timeout=20_000)
    body = pg.inner_text("body")
    for text in DOCS.values():
        assert text[:40] in body
    assert f"Completed ({len(DOCS)})" in body, body[:2000]
    _shot(pg, "documents")
    assert "/documents/paginated" in calls.paths()
    assert not calls.failed(), calls.failed()


def test_the_webui_draws_a_labels_subgraph(page: tuple[Any, Calls],
                                           served: HexragServe) -> None:
    pg, calls = page
    pg.get_by_role("tab", name="Knowledge Graph").click()
    pg.locator("button[role=combobox]").first.click()
    pg.keyboard.type("Acme")
    pg.get_by_role("option", name="Acme", exact=True).first.click(timeout=20_000)
    want = served.client.get("/graphs", params={"label": "Acme", "max_depth": 3,
                                                "max_nodes": 1000}).json()
    assert want["nodes"], want
    status = pg.get_by_text(re.compile(r"node: \d+"))
    status.wait_for(timeout=20_000)
    pg.wait_for_function(
        "n => document.body.innerText.includes('node: ' + n)", arg=len(want["nodes"]),
        timeout=20_000)
    assert f"edge: {len(want['edges'])}" in pg.inner_text("body")
    _shot(pg, "graph")
    assert any(u.startswith("/graphs?label=Acme") for _, u, _ in calls.seen), calls.seen
    assert "/graph/label/search" in calls.paths()
    assert not calls.failed(), calls.failed()


def test_the_webui_answers_a_retrieval_query(page: tuple[Any, Calls]) -> None:
    pg, calls = page
    pg.get_by_role("tab", name="Retrieval").click()
    pg.get_by_placeholder("Enter your query", exact=False).fill(
        "Who works at Acme Corporation?")
    pg.get_by_role("button", name="Send").click()
    # the stand-in's answer: the context's sentences on the question, cited, then references
    pg.wait_for_function("() => document.body.innerText.includes('From the knowledge base')"
                         " && document.body.innerText.includes('acme.txt')", timeout=30_000)
    text = pg.inner_text("body")
    assert "Alice Smith works at Acme Corporation in Berlin." in text, text[-3000:]
    assert "References" in text
    _shot(pg, "retrieval")
    assert "/query/stream" in calls.paths()
    assert not calls.failed(), calls.failed()


def test_the_webui_shows_a_nodes_properties(page: tuple[Any, Calls],
                                            served: HexragServe) -> None:
    pg, calls = page
    pg.get_by_role("tab", name="Knowledge Graph").click()
    pg.get_by_text(re.compile(r"node: [1-9]")).wait_for(timeout=20_000)  # the whole graph
    pg.get_by_placeholder("Search nodes in page", exact=False).click()
    pg.keyboard.type("Acme")
    pg.get_by_role("option", name="Acme", exact=True).first.click(timeout=20_000)
    graph = served.client.get("/graphs", params={"label": "Acme", "max_depth": 1}).json()
    node = next(n for n in graph["nodes"] if n["id"] == "Acme")
    pg.get_by_text(node["properties"]["description"]).first.wait_for(timeout=20_000)
    text = pg.inner_text("body")
    assert node["properties"]["file_path"] in text and node["properties"]["source_id"] in text
    for edge in graph["edges"]:  # its neighbours, listed as LightRAG lists them
        other = edge["target"] if edge["source"] == "Acme" else edge["source"]
        assert other in text
    _shot(pg, "node")
    assert not calls.failed(), calls.failed()
