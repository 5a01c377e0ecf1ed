"""``hexrag serve --workers 2`` on a real PostgreSQL stack over real HTTP: the workers share
nothing but the stores, and the answer cache, the corpus version and the workspaces stay
correct across them.

Each response names its worker (``X-Hexrag-Worker``); a request meant for "the other
worker" is re-sent on fresh connections until that worker takes it (only requests whose
repetition is part of what is checked are re-sent). The model is the scripted
OpenAI-compatible server: extraction from :func:`~hexrag.devtools.scripted_kg.chat_responder`,
answers numbered by a counter, so a stale cached answer is told apart from a fresh one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from hexrag.devtools.scripted_kg import chat_responder
from hexrag.devtools.scripted_openai import ScriptedOpenAIServer
from hexrag.serve_workers import WORKER_HEADER
from tests.integration.test_cli_serve_answer import _free_port
from tests.services.postgres import pg_dsn, pg_pool, pg_schema  # noqa: F401

SALTED_SPEC = "tests.integration.stack_models:SALTED"
CRM = ("Acme CRM syncs contacts with Mailchimp every night. Mailchimp sends the Newsletter. "
       "Acme CRM exports Invoices to Xero for Finance teams.")
ERP = "Acme ERP books Invoices in Xero. Xero reports to Finance. Acme ERP plans Inventory."
HR = "Acme HR pays Salaries through Payroll. Payroll informs Finance about Bonuses."
QUESTION = "How does Acme sync contacts?"
ASK = {"query": QUESTION, "mode": "mix", "hl_keywords": ["contacts"],
       "ll_keywords": ["Mailchimp", "Xero"], "chunk_top_k": 20}
ATTEMPTS = 400  # fresh connections tried to reach a given worker


class _Answers:
    """The scripted model: extraction as :func:`chat_responder`, answers ``answer #n``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answers = 0

    def __call__(self, messages: Sequence[Mapping[str, Any]]) -> str:
        system = str(messages[0].get("content", "")) if messages else ""
        if "Knowledge Graph Data" in system or "Document Chunks" in system:
            with self.lock:
                self.answers += 1
                return f"answer #{self.answers}"
        return chat_responder(messages)


@pytest.fixture
def answers() -> Iterator[tuple[ScriptedOpenAIServer, _Answers]]:
    model = _Answers()
    with ScriptedOpenAIServer() as server:
        server.set_chat_responder(model)
        yield server, model


def _worker(response: httpx.Response) -> str:
    return response.headers[WORKER_HEADER]


def _on(url: str, worker: str, method: str, path: str, **kw: Any) -> list[httpx.Response]:
    """Send the request on fresh connections until ``worker`` answers it; every response."""
    seen = []
    for _ in range(ATTEMPTS):
        r = httpx.request(method, url + path, timeout=60, **kw)
        seen.append(r)
        if _worker(r) == worker:
            return seen
    raise AssertionError(f"worker {worker} took none of {ATTEMPTS} connections")


def _wait_processed(url: str, names: set[str], headers: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + 120
    while True:
        body = httpx.get(f"{url}/documents", headers=headers, timeout=30).json()
        done = {d["file_path"] for d in body["statuses"].get("processed", [])}
        failed = body["statuses"].get("failed")
        assert not failed, failed
        if names <= done:
            return
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def _chunks(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return " ".join(c["content"] for c in response.json()["data"].get("chunks", []))


def test_two_workers_share_cache_versions_and_workspaces(
    tmp_path: Path, pg_dsn: str, pg_schema: str,  # noqa: F811
    answers: tuple[ScriptedOpenAIServer, _Answers],
) -> None:
    server, model = answers
    toml = tmp_path / "pg.toml"
    toml.write_text(f'vector_index = "{pg_dsn}"\ngraph_store = "{pg_dsn}"\n'
                    f'chunk_store = "{pg_dsn}"\ncache = "{pg_dsn}"\n'
                    f'postgres_schema = "{pg_schema}"\nembedder = "{SALTED_SPEC}"\n'
                    'llm = "openai:scripted"\nworkspace_pattern = "t_[a-z]+"\n',
                    encoding="utf-8")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "LLM_", "HEXRAG_EMBEDDER", "HEXRAG_LLM"))}
    env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test", COLUMNS="200")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hexrag.cli", "serve", "--stack", str(toml), "--port", str(port),
         "--workers", "2", "--allow-empty", "--log-level", "warning"],
        env=env, cwd=Path(__file__).parents[2], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        # both workers serve the port, each numbered
        deadline = time.monotonic() + 90
        workers: set[str] = set()
        while workers != {"1", "2"}:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, f"workers answering: {workers}"
            try:
                workers.add(_worker(httpx.get(f"{url}/health", timeout=5)))
            except httpx.TransportError:
                time.sleep(0.2)

        # a document ingested through worker A is retrieved by worker B
        r = httpx.post(f"{url}/documents/text", json={"text": CRM, "file_source": "crm.txt"},
                       timeout=60)
        assert r.status_code == 200, r.text
        a = _worker(r)
        b = "2" if a == "1" else "1"
        _wait_processed(url, {"crm.txt"})
        got = _on(url, b, "POST", "/query/data", json=ASK)[-1]
        assert "Mailchimp" in _chunks(got)

        # an answer computed by one worker is a cache hit on the other
        calls = server.count("chat")
        first = httpx.post(f"{url}/query", json=ASK, timeout=60)
        assert first.status_code == 200, first.text
        assert first.json()["response"] == "answer #1" and server.count("chat") == calls + 1
        x = _worker(first)
        y = "2" if x == "1" else "1"
        for again in _on(url, y, "POST", "/query", json=ASK):
            assert again.json()["response"] == "answer #1"
        assert server.count("chat") == calls + 1 and model.answers == 1  # no second answer
        metrics = _on(url, y, "GET", "/metrics")[-1].text
        hits = [line for line in metrics.splitlines()
                if line.startswith("hexrag_answer_cache_hits_total")]
        assert hits and float(hits[0].split()[-1]) >= 1, hits

        # a document ingested through worker Z makes the other worker's cached answer stale
        r = httpx.post(f"{url}/documents/text", json={"text": ERP, "file_source": "erp.txt"},
                       timeout=60)
        assert r.status_code == 200, r.text
        z = _worker(r)
        w = "2" if z == "1" else "1"
        _wait_processed(url, {"crm.txt", "erp.txt"})
        before = model.answers
        after = _on(url, w, "POST", "/query", json=ASK)
        for fresh in after:
            assert fresh.json()["response"] == f"answer #{before + 1}"  # not the stale #1
        assert model.answers == before + 1  # one miss after the write, then shared hits
        erp_ask = {**ASK, "ll_keywords": ["Inventory", "Xero"], "hl_keywords": ["plans"]}
        assert "Inventory" in _chunks(_on(url, w, "POST", "/query/data", json=erp_ask)[-1])

        # a pattern workspace opened (and written) by one worker works in the other
        ws = {"LIGHTRAG-WORKSPACE": "t_hr"}
        r = httpx.post(f"{url}/documents/text", json={"text": HR, "file_source": "hr.txt"},
                       headers=ws, timeout=60)
        assert r.status_code == 200, r.text
        other = "2" if _worker(r) == "1" else "1"
        _wait_processed(url, {"hr.txt"}, headers=ws)
        hr_ask = {**ASK, "ll_keywords": ["Payroll", "Salaries"], "hl_keywords": ["pay"]}
        text = _chunks(_on(url, other, "POST", "/query/data", json=hr_ask, headers=ws)[-1])
        assert "Payroll" in text and "Mailchimp" not in text and "Inventory" not in text
        default = _chunks(_on(url, other, "POST", "/query/data", json=hr_ask)[-1])
        assert "Payroll" not in default  # the default workspace does not see t_hr's data
        listed = _on(url, other, "GET", "/documents", headers=ws)[-1].json()
        assert {d["file_path"] for d in listed["statuses"]["processed"]} == {"hr.txt"}
    finally:
        proc.send_signal(2)  # SIGINT: the parent stops both workers gracefully
        try:
            _out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
    assert proc.returncode == 0, err[-3000:]


def test_a_worker_that_cannot_start_stops_the_server(tmp_path: Path) -> None:
    """An empty stack is refused by each worker: the parent exits 2 with one line, no
    traceback, and leaves no worker behind."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "kv_store_doc_status.json").write_text("{}")
    result = subprocess.run(
        [sys.executable, "-m", "hexrag.cli", "serve", "-w", str(fresh), "--workers", "2",
         "--port", str(_free_port())],
        capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "COLUMNS": "200"},
        cwd=Path(__file__).parents[2])
    assert result.returncode == 2, result.stderr[-2000:]
    assert "holds no data" in result.stderr and "Traceback" not in result.stderr
