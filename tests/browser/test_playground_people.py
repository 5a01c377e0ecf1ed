"""The playground as people use it, measured in a real chromium (Playwright) against a real
server on loopback: the selection panel stays bounded and the page never scrolls sideways,
labels scale with the zoom and hide when zoomed out on a 120-node graph, one wheel notch zooms
like a map does and Fit brings the whole graph back, references read product / category /
source and are numbered once, the legend counts what is drawn, and the form works from the
keyboard alone. Each test saves a screenshot in ``$HEXRAG_ARTIFACTS`` (``test-artifacts/``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from hexrag.api.app import create_app
from hexrag.api.limits import ApiSettings
from hexrag.core.documents import encode_file_path
from hexrag.core.ingest.ids import relation_id
from hexrag.core.model import Chunk, Entity, Relation
from hexrag.demo import DEFAULT_QUESTION
from tests.browser.test_playground import StreamingLLM, _app, _page, _run, _shot
from tests.integration.live import LiveServer

N_NODES = 120
HUB = "Part 000"
LONG_WORD = "x" * 600  # an unbreakable token: the page must still not scroll sideways


def _path(i: int) -> str:
    return encode_file_path({"product_id": "p-big", "category_id": "parts"},
                            f"manuals/part-{i:02d}.md")


async def _big_engine() -> Any:
    """120 entities in a ring plus spokes from a hub that cites every chunk (12 long ones)."""
    from hexrag.embed import build_engine

    chunks = [Chunk(id=f"chunk-{i:02d}", content=f"Part manual {i}. " + "The machine part "
                    "is assembled and tested. " * 60 + LONG_WORD, file_path=_path(i),
                    full_doc_id=f"doc-{i:02d}", chunk_order_index=0)
              for i in range(12)]
    names = [f"Part {i:03d}" for i in range(N_NODES)]
    entities = [Entity(name=n, entity_type="component", description=f"{n} of the machine",
                       source_id=f"chunk-{i % 12:02d}", file_path=_path(i % 12))
                for i, n in enumerate(names)]
    entities[0] = Entity(name=HUB, entity_type="component",
                         description="<SEP>".join(f"The hub, as manual {i} says"
                                                  for i in range(12)),
                         source_id="<SEP>".join(c.id for c in chunks),
                         file_path="<SEP>".join(_path(i) for i in range(12)))
    pairs = [(names[i], names[(i + 1) % N_NODES]) for i in range(N_NODES)]
    pairs += [(HUB, names[i]) for i in range(10, N_NODES, 10)]
    relations = [Relation(id=relation_id(a, b), src_id=a, tgt_id=b, description="next to",
                          keywords="adjacent", weight=1.0, source_id="chunk-00",
                          file_path=_path(0)) for a, b in pairs]
    return await build_engine(chunks=chunks, entities=entities, relations=relations,
                              embedder="hashing:64", llm=StreamingLLM())


@pytest.fixture(scope="module")
def big() -> Iterator[LiveServer]:
    # Playwright's sync API keeps an event loop on this thread: build the stack on another
    with ThreadPoolExecutor(1) as pool:
        engine = pool.submit(asyncio.run, _big_engine()).result()
    server = LiveServer(create_app(engine, settings=ApiSettings(), required_stores=()))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def demo() -> Iterator[LiveServer]:
    server = LiveServer(_app())
    try:
        yield server
    finally:
        server.stop()


def _ask(page: Any, question: str, mode: str = "local") -> None:
    page.fill("#query", question)
    page.fill("#top-k", str(N_NODES))
    page.select_option("#mode", mode)
    page.click("#run")
    page.wait_for_function("window.hexrag.state.streamDone === true", timeout=30_000)


def _no_sideways_scroll(page: Any) -> None:
    width, inner = page.evaluate(
        "[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"the page scrolls sideways: {width} > {inner}"


def _rendered_label_px(page: Any, name: str) -> float:
    return float(page.evaluate(
        "(id) => parseFloat(window.hexrag.cy.$id(id).style('font-size'))"
        " * window.hexrag.cy.zoom()", name))


def _click_node(page: Any, name: str) -> None:
    page.evaluate("(id) => { window.hexrag.cy.center(window.hexrag.cy.$id(id)); }", name)
    pos = page.evaluate("(id) => { const p = window.hexrag.cy.$id(id).renderedPosition();"
                        " return [p.x, p.y]; }", name)
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + pos[0], box["y"] + pos[1])


def test_selection_panel_is_bounded_and_chunks_collapse(browser: Any, big: LiveServer) -> None:
    page = _page(browser, big.url + "/")
    _ask(page, "Part machine component")
    assert page.evaluate("window.hexrag.cy.nodes().length") == N_NODES
    _click_node(page, HUB)
    page.wait_for_selector("#detail details.chunk")
    chunks = page.eval_on_selector_all("#detail details.chunk",
                                       "els => els.map(e => [e.dataset.chunkId, e.open])")
    assert sorted(c[0] for c in chunks) == [f"chunk-{i:02d}" for i in range(12)]
    assert not any(open_ for _, open_ in chunks)  # collapsed: one summary line each
    viewport = page.evaluate("window.innerHeight")
    panel = page.locator("#detail-box").bounding_box()["height"]
    assert panel <= 0.7 * viewport, panel
    _no_sideways_scroll(page)
    _shot(page, "playground-selection-collapsed")

    # one chunk opens on click (and shows its whole text inside the panel), then all of them
    page.click("#detail details.chunk >> nth=0 >> summary")
    assert page.evaluate("document.querySelector('#detail details.chunk').open")
    text = page.inner_text("#detail details.chunk >> nth=0 >> .text")
    first = chunks[0][0]
    assert text.startswith(f"Part manual {int(first[-2:])}.") and text.endswith(LONG_WORD)
    page.click("#detail h4 button")
    assert page.evaluate("Array.from(document.querySelectorAll('#detail details.chunk'))"
                         ".every(d => d.open)")
    expanded = page.locator("#detail-box").bounding_box()["height"]
    assert expanded <= 0.7 * viewport, expanded
    assert page.evaluate("(() => { const d = document.getElementById('detail');"
                         " return d.scrollHeight > d.clientHeight; })()")  # it scrolls inside
    _no_sideways_scroll(page)
    # the hub's sources read product / category / source
    sources = page.inner_text("#detail .sources")
    assert "p-big / parts / manuals/part-00.md" in sources and "product_id:" not in sources
    _shot(page, "playground-selection-expanded")
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()


def test_labels_scale_with_zoom_and_hide_when_zoomed_out(browser: Any, big: LiveServer) -> None:
    page = _page(browser, big.url + "/")
    _ask(page, "Part machine component")
    leaf = "Part 055"  # a ring node, not a hub
    assert not page.evaluate("(id) => window.hexrag.cy.$id(id).hasClass('hub')", leaf)

    def at(zoom: float) -> tuple[float, bool, int]:
        page.evaluate("(z) => { window.hexrag.cy.zoom(z); window.hexrag.zoomBy(1); }", zoom)
        px = _rendered_label_px(page, leaf)
        shown = page.evaluate(
            "(id) => window.hexrag.cy.$id(id).style('text-opacity') !== '0'", leaf)
        visible = page.evaluate(
            "window.hexrag.cy.nodes().filter(n => n.style('text-opacity') !== '0').length")
        return px, shown, visible

    px1, shown1, visible1 = at(1.0)
    px2, shown2, visible2 = at(2.0)
    assert shown1 and shown2 and visible1 == visible2 == N_NODES
    assert 12 <= px1 < px2 <= 22  # readable, and bigger when zoomed in
    _shot(page, "playground-labels-zoomed-in")
    _, shown_low, visible_low = at(0.2)
    assert not shown_low  # zoomed out: the small nodes' labels are hidden...
    assert 0 < visible_low <= 12  # ...the hubs keep theirs
    hub_px = _rendered_label_px(page, HUB)
    assert hub_px >= 9  # and what is shown stays readable
    assert page.is_visible("#label-hint")
    _shot(page, "playground-labels-zoomed-out")
    page.close()


def test_wheel_zooms_per_notch_and_fit_shows_everything(browser: Any, big: LiveServer) -> None:
    page = _page(browser, big.url + "/")
    _ask(page, "Part machine component")
    fitted = page.evaluate("[window.hexrag.cy.zoom(), window.hexrag.cy.pan()]")
    box = page.locator("#graph").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -100)  # one notch of a mouse wheel
    page.wait_for_timeout(100)
    z1 = page.evaluate("window.hexrag.cy.zoom()")
    assert 1.15 <= z1 / fitted[0] <= 1.25, (fitted[0], z1)
    for _ in range(4):
        page.mouse.wheel(0, -100)
        page.wait_for_timeout(50)
    z5 = page.evaluate("window.hexrag.cy.zoom()")
    assert z5 / fitted[0] >= 2.0  # five notches: more than twice as close
    page.mouse.wheel(0, 100)
    page.wait_for_timeout(50)
    assert page.evaluate("window.hexrag.cy.zoom()") < z5  # and the other way out
    inside = ("(() => { const cy = window.hexrag.cy, b = cy.nodes().boundingBox(),"
              " e = cy.extent(); return b.x1 >= e.x1 - 1 && b.y1 >= e.y1 - 1"
              " && b.x2 <= e.x2 + 1 && b.y2 <= e.y2 + 1; })()")
    assert not page.evaluate(inside)  # zoomed in: part of the graph is out of view
    before = page.evaluate("[window.hexrag.cy.zoom(), window.hexrag.cy.pan()]")
    page.click("#fit")
    after = page.evaluate("[window.hexrag.cy.zoom(), window.hexrag.cy.pan()]")
    assert after != before and after[0] < before[0]
    assert page.evaluate(inside)  # every node is in view again
    page.click("#zoom-in")
    assert page.evaluate("window.hexrag.cy.zoom()") == pytest.approx(after[0] * 1.25)
    page.click("#fit")
    _shot(page, "playground-fit")
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()


def _decoded(file_path: str) -> str:
    m = re.fullmatch(r"product_id:(.*?):category:(.*?):source:(.*)", file_path)
    assert m, file_path
    return " / ".join(m.groups())


def test_references_and_legend(browser: Any, demo: LiveServer) -> None:
    page = _page(browser, demo.url + "/")
    _run(page, DEFAULT_QUESTION, "hybrid", ["p-erp", "p-crm"])
    body = {"query": DEFAULT_QUESTION, "mode": "hybrid", "include_references": True,
            "scope": {"product_id": ["p-erp", "p-crm"]}}
    data = httpx.post(demo.url + "/query/data", json=body).json()["data"]
    refs = data["references"]
    assert len(refs) >= 2 and all(r["file_path"].startswith("product_id:") for r in refs)
    items = page.eval_on_selector_all("#references li", "els => els.map(e => e.innerText)")
    assert items == [f"[{r['reference_id']}] {_decoded(r['file_path'])}" for r in refs]
    box_text = page.inner_text("#answer-box")
    for marker in ("product_id:", "category:", "source:", "<SEP>"):
        assert marker not in box_text
    refs_text = page.inner_text("#references")
    for r in refs:  # numbered once: no list marker beside the [n]
        assert refs_text.count(f"[{r['reference_id']}]") == 1
    assert page.evaluate("getComputedStyle(document.querySelector('#references li'))"
                         ".listStyleType") == "none"

    # the legend counts what is drawn
    counts = page.evaluate("""() => Object.fromEntries(Array.from(
        document.querySelectorAll('#legend [data-count]')).map(
        b => [b.dataset.count, Number(b.textContent)]))""")
    drawn = page.evaluate("""() => { const cy = window.hexrag.cy; return {
        in: cy.nodes('.in').length, endpoint: cy.nodes('.endpoint').length,
        edges: cy.edges('.in').length, removed: cy.nodes('.removed').length,
        'removed-edges': cy.edges('.removed').length}; }""")
    assert counts == drawn
    assert counts["in"] == len(data["entities"]) and counts["edges"] == len(data["relationships"])
    assert counts["in"] + counts["endpoint"] == len(
        {e["entity_name"] for e in data["entities"]}
        | {x for r in data["relationships"] for x in (r["src_id"], r["tgt_id"])})
    _shot(page, "playground-references-legend")

    # a scope that removes some: the removed ones are counted too
    page.select_option("#scope-product_id", ["p-erp"])
    page.click("#run")
    page.wait_for_function("window.hexrag.state.streamDone === true", timeout=30_000)
    counts = page.evaluate("""() => Object.fromEntries(Array.from(
        document.querySelectorAll('#legend [data-count]')).map(
        b => [b.dataset.count, Number(b.textContent)]))""")
    removed = page.evaluate("[window.hexrag.cy.nodes('.removed').length,"
                            " window.hexrag.cy.edges('.removed').length]")
    assert [counts["removed"], counts["removed-edges"]] == removed and sum(removed) > 0
    assert page.is_visible("#legend .removed-item")
    _shot(page, "playground-legend-scoped")
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()


CONTROLS = ["api-key", "query", "mode", "top-k", "scope-product_id", "scope-category_id", "run",
            "zoom-in", "zoom-out", "fit", "detail"]


def test_the_form_works_from_the_keyboard(browser: Any, demo: LiveServer) -> None:
    page = _page(browser, demo.url + "/")
    page.wait_for_function("document.querySelectorAll('#scope-product_id option').length > 0")
    # every form control has a label (buttons: their text or aria-label)
    unlabelled = page.evaluate("""() => Array.from(document.querySelectorAll(
        'input, select, textarea, button')).filter(e => !e.closest('[hidden]')).filter(e =>
        !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
        && !e.textContent.trim()).map(e => e.id)""")
    assert unlabelled == []

    order: list[str] = []
    page.focus("body")
    for _ in range(len(CONTROLS) + 5):
        page.keyboard.press("Tab")
        focused = page.evaluate("""() => { const e = document.activeElement;
            const s = getComputedStyle(e);
            return [e.id, s.outlineStyle, parseFloat(s.outlineWidth)]; }""")
        if focused[0] in CONTROLS and focused[0] not in order:
            order.append(focused[0])
            assert focused[1] != "none" and focused[2] >= 2, focused  # visible focus
        if focused[0] == "query":
            _shot(page, "playground-keyboard-focus")
    assert order == CONTROLS  # Tab reaches every control, in reading order

    # type a question, pick a product with the arrow keys, Enter runs it
    page.focus("#query")
    page.keyboard.type("How do I set up single sign-on")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("with Okta?")
    assert page.input_value("#query") == "How do I set up single sign-on\nwith Okta?"
    page.focus("#scope-product_id")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("Array.from(document.querySelector('#scope-product_id')"
                         ".selectedOptions).map(o => o.value)") == ["p-crm"]
    page.keyboard.press("Enter")
    page.wait_for_function("window.hexrag.state.streamDone === true", timeout=30_000)
    assert "Done." in page.inner_text("#answer")
    assert page.evaluate("window.hexrag.cy.nodes('.in').length") > 0
    # Enter in the question runs again (no new line)
    page.focus("#query")
    page.evaluate("window.hexrag.state.streamDone = false")
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.wait_for_function("window.hexrag.state.streamDone === true", timeout=30_000)
    assert page.input_value("#query") == "How do I set up single sign-on\nwith Okta?"
    _shot(page, "playground-keyboard-run")
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()
