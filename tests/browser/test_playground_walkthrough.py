"""The README's offline walk-through, as a new user runs it: the stand-in started with
``python -m hexrag.devtools.scripted_openai``, the two example products ingested with
``hexrag ingest``, ``hexrag serve`` on the working directory with the stand-in as its LLM, and
a question asked in the playground (chromium): the answer panel shows a real answer drawn from
the documents, citing its reference, and the keywords came from the stand-in's JSON. The
screenshot is the README's (``test-artifacts/playground-walkthrough.png``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.test_playground import ARTIFACTS, _page

REPO = Path(__file__).resolve().parents[2]
QUESTION = "How do users sign in?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("walkthrough")
    llm_port, api_port = _free_port(), _free_port()
    env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
           "OPENAI_API_KEY": "offline"}
    standin = subprocess.Popen([sys.executable, "-m", "hexrag.devtools.scripted_openai",
                                "--port", str(llm_port)], env=env, cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = None
    try:
        _wait(f"http://127.0.0.1:{llm_port}/v1/models", standin)
        rag = root / "rag_storage"
        for folder, pid, cat in (("erp", "p-erp", "erp"), ("crm", "p-crm", "crm")):
            done = subprocess.run(
                [sys.executable, "-m", "hexrag.cli", "ingest", f"examples/docs/{folder}",
                 "--stack", str(rag), "--llm", "openai:gpt-4o-mini", "--embedder",
                 "hashing:64", "--product-id", pid, "--category", cat],
                env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
        server = subprocess.Popen(
            [sys.executable, "-m", "hexrag.cli", "serve", "--workdir", str(rag), "--llm",
             "openai:gpt-4o-mini", "--port", str(api_port)], env=env, cwd=REPO,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(f"http://127.0.0.1:{api_port}/health", server)
        yield f"http://127.0.0.1:{api_port}"
    finally:
        if server is not None:
            _stop(server)
        _stop(standin)


def test_the_readme_walkthrough_shows_a_real_answer(browser: Any, walkthrough: str) -> None:
    page = _page(browser, walkthrough + "/")
    page.set_viewport_size({"width": 1400, "height": 900})
    page.wait_for_function("document.querySelectorAll('#scope-product_id option').length > 0")
    page.fill("#query", QUESTION)
    page.select_option("#mode", "hybrid")
    page.select_option("#scope-product_id", ["p-erp"])
    page.click("#run")
    page.wait_for_function("window.hexrag.state.streamDone === true", timeout=60_000)

    answer = page.evaluate("window.hexrag.state.answer")  # the streamed Markdown
    assert "<|COMPLETE|>" not in answer and "Summary " not in answer
    lines = answer.splitlines()
    assert "- Acme ERP signs users in through Okta. [1]" in lines
    assert "### References" in lines and "- [1] sso.md (p-erp / erp)" in lines
    assert "Mailchimp" not in answer  # the CRM document is out of scope
    # drawn as Markdown: a list, a heading
    items = page.eval_on_selector_all("#answer li", "els => els.map(e => e.innerText)")
    assert "Acme ERP signs users in through Okta. [1]" in items
    assert "[1] sso.md (p-erp / erp)" in items
    assert page.inner_text("#answer h5") == "References"
    assert page.eval_on_selector_all("#references li", "els => els.map(e => e.innerText)") == [
        "[1] p-erp / erp / sso.md"]
    # the keywords were the stand-in's JSON, not hexrag's fallback
    meta = page.evaluate("window.hexrag.state.data.metadata")
    assert meta["processing_info"]["keyword_source"] == "llm"
    assert "keyword_llm_error" not in meta["processing_info"]
    assert meta["keywords"]["high_level"] and meta["keywords"]["low_level"]
    assert page.evaluate("window.hexrag.cy.nodes('.in').length") > 0
    # the README's picture: a retrieved entity selected (Okta if it is one), its chunk opened
    name = page.evaluate("""() => {
        const ids = new Set(window.hexrag.state.data.chunks.map(c => c.chunk_id));
        const found = window.hexrag.cy.nodes('.in').filter(n => String(
            n.data('record').source_id).split('<SEP>').some(id => ids.has(id)));
        const okta = found.filter(n => n.id() === 'Okta');
        return (okta.length ? okta : found)[0].id(); }""")
    pos = page.evaluate("(id) => { const p = window.hexrag.cy.$id(id).renderedPosition();"
                        " return [p.x, p.y]; }", name)
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + pos[0], box["y"] + pos[1])
    page.wait_for_selector("#detail details.chunk")
    page.click("#detail details.chunk >> nth=0 >> summary")
    page.evaluate("window.scrollTo(0, 0)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "playground-walkthrough.png"))
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()
