"""The playground page in a real browser (Playwright driving Debian's chromium) against a real
server on loopback: a scoped query, the drawn graph equal to ``/query/data``'s entities, the
removed-by-scope overlay, a node's chunks on click, the streamed answer, the API key, and
workspaces. Screenshots go to ``$HEXRAG_ARTIFACTS`` (default ``test-artifacts/``).

Chromium comes from the system (``apt-get install chromium``); the ``browser`` fixture is in
``conftest.py``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from hexrag.api.app import create_app
from hexrag.api.limits import ApiSettings
from hexrag.bootstrap import compose_engine
from hexrag.demo import DEFAULT_QUESTION, build_ingested_demo_engine
from tests.integration.live import LiveServer

ARTIFACTS = Path(os.environ.get("HEXRAG_ARTIFACTS", "test-artifacts"))


class StreamingLLM:
    """Answers in three streamed pieces; keywords come from the request."""

    model_name = "scripted"

    async def complete(self, prompt: str, *, system_prompt: str | None = None,
                       history: Sequence[Mapping[str, Any]] = (), json_mode: bool = False) -> str:
        return "Configure Okta as the identity provider. Then enable SSO. Done."

    async def stream(self, prompt: str, **_: Any) -> Any:
        for piece in ("Configure Okta as the identity provider. ", "Then enable SSO. ",
                      "Done."):
            await asyncio.sleep(0.05)
            yield piece


def _app(settings: ApiSettings | None = None) -> Any:
    from concurrent.futures import ThreadPoolExecutor

    # Playwright's sync API keeps an event loop on this thread: build the stack on another
    with ThreadPoolExecutor(1) as pool:
        demo, _ = pool.submit(asyncio.run, build_ingested_demo_engine(dim=64)).result()
    engine = compose_engine(
        {"entities": demo.entities, "relationships": demo.relationships,
         "chunks": demo.chunks, "graph": demo.graph, "chunk_store": demo.chunk_store},
        embedder=demo.engine.embedder, llm=StreamingLLM(), fragments=demo.engine.fragments,
    )
    return create_app(engine, settings=settings or ApiSettings(), required_stores=())


@pytest.fixture
def served() -> Iterator[LiveServer]:
    server = LiveServer(_app())
    try:
        yield server
    finally:
        server.stop()


def _page(browser: Any, url: str) -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(url)
    page.wait_for_function("window.hexrag !== undefined && typeof cytoscape === 'function'")
    page.errors = errors  # type: ignore[attr-defined]
    return page


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _run(page: Any, question: str, mode: str, products: list[str]) -> None:
    page.fill("#query", question)
    page.select_option("#mode", mode)
    page.wait_for_function("document.querySelectorAll('#scope-product_id option').length > 0")
    page.select_option("#scope-product_id", products)
    page.click("#run")
    page.wait_for_function("window.hexrag.state.streamDone === true", timeout=30_000)


def test_scoped_query_draws_what_was_retrieved(browser: Any, served: LiveServer) -> None:
    page = _page(browser, served.url + "/")
    page.wait_for_function("document.querySelectorAll('#scope-product_id option').length > 0")
    options = page.eval_on_selector_all("#scope-product_id option", "els => els.map(e => e.value)")
    assert options == ["p-crm", "p-erp"]
    _run(page, DEFAULT_QUESTION, "hybrid", ["p-erp"])

    body = {"query": DEFAULT_QUESTION, "mode": "hybrid", "include_references": True,
            "scope": {"product_id": ["p-erp"]}}
    data = httpx.post(served.url + "/query/data", json=body).json()["data"]
    wanted = sorted(e["entity_name"] for e in data["entities"])
    drawn = page.evaluate(
        "window.hexrag.cy.nodes('.in').map(n => n.id()).sort()")
    assert drawn == wanted and wanted
    edges = page.evaluate("window.hexrag.cy.edges('.in').length")
    assert edges == len(data["relationships"])
    removed = page.evaluate("window.hexrag.cy.nodes('.removed').map(n => n.id())")
    assert removed and not set(removed) & set(wanted)  # the scope removed some: shown apart

    # the streamed answer and its references
    assert page.inner_text("#answer") == ("Configure Okta as the identity provider. "
                                          "Then enable SSO. Done.")
    refs = page.inner_text("#references")
    assert "p-erp" in refs and "p-crm" not in refs
    info = page.inner_text("#info")
    assert "narrowed_descriptions" in info and "graph_removed_entities" in info

    # click a node that has chunks in the context: its chunks appear
    with_chunks = next(e for e in data["entities"] if any(
        c["chunk_id"] in e["source_id"].split("<SEP>") for c in data["chunks"]))
    pos = page.evaluate("(name) => { const p = window.hexrag.cy.$id(name).renderedPosition();"
                        " return [p.x, p.y]; }", with_chunks["entity_name"])
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + pos[0], box["y"] + pos[1])
    page.wait_for_selector("#detail .chunk")
    shown = page.eval_on_selector_all("#detail .chunk", "els => els.map(e => e.dataset.chunkId)")
    expected = [c["chunk_id"] for c in data["chunks"]
                if c["chunk_id"] in with_chunks["source_id"].split("<SEP>")]
    assert shown == expected
    assert with_chunks["entity_name"] in page.inner_text("#detail")
    _shot(page, "playground-scoped")
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()


def test_stored_text_is_shown_as_text(browser: Any, served: LiveServer) -> None:
    """Descriptions and chunks come from documents: markup in them must not run."""
    page = _page(browser, served.url + "/webui")
    page.evaluate("""() => {
        window.hexrag.state.data = {chunks: [
            {chunk_id: 'c1', content: '<img src=x onerror="window.pwned=1">'}]};
        window.hexrag.showDetail({id: 'x', label: '<b>x</b>', kind: 'entity',
            record: {description: '<img src=y onerror="window.pwned=2">', source_id: 'c1'}});
    }""")
    page.evaluate("""() => window.hexrag.renderAnswer(
        '**<img src=z onerror="window.pwned=3">**\\n- <b>y</b> `<i>c</i>`\\n### <u>h</u>')""")
    page.wait_for_timeout(200)
    assert page.evaluate("window.pwned === undefined")
    assert page.inner_text("#answer strong") == '<img src=z onerror="window.pwned=3">'
    assert page.inner_text("#answer li") == "<b>y</b> <i>c</i>"
    assert page.inner_text("#answer h5") == "<u>h</u>"
    text = page.inner_text("#detail")
    assert "<img src=x" in text and '<img src=y onerror="window.pwned=2">' in text
    assert "<b>x</b>" in text
    page.close()


def test_the_page_works_with_an_api_key(browser: Any) -> None:
    server = LiveServer(_app(ApiSettings(api_key="s3cret")))
    try:
        assert httpx.get(server.url + "/").status_code == 200  # the page holds no data
        assert httpx.post(server.url + "/query/data", json={"query": "x"}).status_code == 403
        page = _page(browser, server.url + "/")
        page.fill("#api-key", "s3cret")
        page.dispatch_event("#api-key", "change")
        _run(page, DEFAULT_QUESTION, "mix", ["p-crm"])
        assert page.evaluate("window.hexrag.cy.nodes('.in').length") > 0
        assert "Done." in page.inner_text("#answer")
        _shot(page, "playground-api-key")
        page.close()
    finally:
        server.stop()


def test_the_workspace_picker_switches_knowledge_bases(browser: Any, tmp_path: Path) -> None:
    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.config import StackConfig
    from hexrag.serving import workspace_router
    from tests.integration.test_workspaces import OWN, SHARED, ScriptedLLM, _wait_idle

    config = StackConfig(workspaces=["alpha", "beta"], embedder="hashing:32")
    router = workspace_router(config, ApiSettings(), embedder=HashingEmbedder(32),
                              llm=ScriptedLLM())
    server = LiveServer(router, lifespan="on")
    try:
        for ws in ("alpha", "beta"):
            r = server.client.post("/documents/texts", headers={"LIGHTRAG-WORKSPACE": ws},
                                   json={"texts": [SHARED, OWN[ws]], "product_id": f"p-{ws}"})
            assert r.status_code == 200, r.text
            _wait_idle(server.client, ws)
        page = _page(browser, server.url + "/")
        page.wait_for_function("!document.getElementById('workspace-box').hidden")
        names = page.eval_on_selector_all("#workspace option", "els => els.map(e => e.value)")
        assert set(names) == {"", "alpha", "beta"}
        drawn = {}
        for ws in ("alpha", "beta"):
            page.select_option("#workspace", ws)
            page.wait_for_function(
                "(ws) => Array.from(document.querySelectorAll('#scope-product_id option'))"
                ".map(o => o.value).join() === 'p-' + ws", arg=ws)
            _run(page, "Zephyr Orion Quasar Helix", "local", [f"p-{ws}"])
            drawn[ws] = set(page.evaluate("window.hexrag.cy.nodes().map(n => n.id())"))
            _shot(page, f"playground-workspace-{ws}")
        assert "Zephyr" in drawn["alpha"] and "Zephyr" not in drawn["beta"]
        assert "Quasar" in drawn["beta"] and "Quasar" not in drawn["alpha"]
        assert page.errors == []  # type: ignore[attr-defined]
        page.close()
    finally:
        server.stop()
