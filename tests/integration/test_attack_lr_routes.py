"""The LightRAG-compatible routes attacked over real HTTP, with an API key set.

A real uvicorn serves the demo answered by :class:`~hexrag.adapters.openai.OpenAILLM` (the
scripted OpenAI-compatible server on loopback), with the document routes on. Hostile bodies -
NaN, ±Infinity, ``1e999``, a 5000-digit number, lone surrogates, NUL bytes, a 100k-value list,
a top-level scope field, a 100 MB body - go to ``/query``, ``/query/data``,
``/query/stream``, ``/api/chat``, ``/api/generate``, ``/graphs``, ``/graph/entity/edit``,
``/documents/paginated`` and ``/login``: never a 5xx, never an answer echoing more than a few
KB, and ``/health`` keeps answering while the attack runs.

The Ollama-compatible routes read JSON whatever the content type (as LightRAG), so the strict
JSON middleware (JSON content types only) does not see a ``text/plain`` body: they hold it to
the same rules themselves (regression: ``1e999``, a lone surrogate or a NUL in ``options`` or
an unknown field of a ``text/plain`` body was answered 200).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hexrag.api.limits import ApiSettings
from hexrag.api.strict_json import json_body_problem
from hexrag.demo import DEFAULT_QUESTION
from hexrag.devtools.scripted_openai import ScriptedOpenAIServer
from tests.integration.live import LiveServer
from tests.integration.scripted_demo import scripted_demo_app

openai = pytest.importorskip("openai", reason="the openai extra: pip install 'hexrag[openai]'")

KEY = "attack-key"
Q = DEFAULT_QUESTION
MAX_ANSWER_BYTES = 4096
#: Generous: /health answers in milliseconds; this only catches a blocked event loop.
HEALTH_BOUND_S = 0.5

BAD_VALUES = {
    "NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity", "1e999": "1e999",
    "5000-digit int": "1" + "0" * 5000, "lone surrogate": '"a\\ud800b"',
    "lone surrogate key": '{"\\udfff": 1}', "NUL": '"a\\u0000b"', "NUL key": '{"k\\u0000": 1}',
}

#: (path, a valid JSON object body without its closing brace).
JSON_ROUTES = {
    "/query": f'{{"query": "{Q}", "mode": "mix"',
    "/query/data": f'{{"query": "{Q}", "mode": "mix"',
    "/query/stream": f'{{"query": "{Q}", "mode": "mix"',
    "/api/chat": f'{{"model": "m", "stream": false, '
                 f'"messages": [{{"role": "user", "content": "{Q}"}}]',
    "/api/generate": f'{{"model": "m", "stream": false, "prompt": "{Q}"',
    "/graph/entity/edit": '{"entity_name": "NoSuchEntity", "updated_data": {"description": "x"}',
    "/documents/paginated": '{"page": 1, "page_size": 10',
}

BIG_LIST = json.dumps([f"v{i}" for i in range(100_000)])


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(model_server: ScriptedOpenAIServer) -> Iterator[LiveServer]:
    live = LiveServer(scripted_demo_app(model_server.base_url, ApiSettings(api_key=KEY)))
    yield live
    live.stop()


def _post(server: LiveServer, path: str, body: str, content_type: str = "application/json"
          ) -> Any:
    return server.client.post(path, content=body.encode("utf-8", "surrogatepass"),
                              headers={"content-type": content_type, "X-API-Key": KEY})


def _short_answer(r: Any, what: str) -> None:
    assert r.status_code < 500, (what, r.status_code, r.text[:300])
    assert len(r.content) <= MAX_ANSWER_BYTES, (what, len(r.content))


class _HealthWatch:
    """Polls /health on its own connection while the attack runs; keeps the latencies."""

    def __init__(self, server: LiveServer) -> None:
        self.server, self._stop = server, threading.Event()
        self.samples: list[tuple[float, int]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import httpx

        with httpx.Client(base_url=str(self.server.client.base_url), timeout=10) as client:
            while not self._stop.is_set():
                start = time.monotonic()
                status = client.get("/health").status_code
                self.samples.append((time.monotonic() - start, status))
                self._stop.wait(0.05)

    def __enter__(self) -> _HealthWatch:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.samples and time.monotonic() < deadline:  # polling has begun
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("path", list(JSON_ROUTES))
def test_hostile_json_bodies_are_short_4xx_while_health_answers(server: LiveServer,
                                                                path: str) -> None:
    baseline = len(_post(server, path, f"{JSON_ROUTES[path]}}}").content)
    with _HealthWatch(server) as watch:
        for name, value in BAD_VALUES.items():
            r = _post(server, path, f'{JSON_ROUTES[path]}, "x": {value}}}')
            _short_answer(r, name)
            assert 400 <= r.status_code < 500, (name, r.text[:300])
            assert json_body_problem(r.content) is None
        for name, extra in {"100k list": f'"x": {BIG_LIST}',
                            "scope field": '"product_id": "p1"',
                            "100k-value scope": f'"product_id": {BIG_LIST}',
                            "1 MB scope": '"product_id": "' + "A" * 900_000 + '"'}.items():
            r = _post(server, path, f"{JSON_ROUTES[path]}, {extra}}}")
            assert r.status_code < 500, (name, r.status_code, r.text[:300])
            # the route's own answer (data, an answer) may be long; nothing sent is echoed
            assert len(r.content) <= baseline + MAX_ANSWER_BYTES, (name, len(r.content))
            assert b'"v99999"' not in r.content and b"A" * 1000 not in r.content
    assert watch.samples and all(s == 200 for _, s in watch.samples)
    assert max(t for t, _ in watch.samples) < HEALTH_BOUND_S, watch.samples


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
@pytest.mark.parametrize("path", ["/api/chat", "/api/generate"])
@pytest.mark.parametrize("stream", ["false", "true"])
def test_ollama_routes_hold_any_content_type_to_strict_json(
        server: LiveServer, path: str, content_type: str, stream: str) -> None:
    """Regression: these bodies were answered 200 when not sent as application/json."""
    base = JSON_ROUTES[path].replace('"stream": false', f'"stream": {stream}')
    for name, value in BAD_VALUES.items():
        for where in (f'"options": {{"temperature": {value}}}', f'"client": [{{"x": {value}}}]'):
            r = _post(server, path, f"{base}, {where}}}", content_type)
            assert r.status_code == 400, (name, where, r.status_code, r.text[:300])
            assert r.json()["detail"].startswith("Invalid JSON in request body"), r.text
            _short_answer(r, name)
    r = _post(server, path, f'{base}, "options": {{"temperature": 0.5}}}}', content_type)
    assert r.status_code == 200, r.text[:300]


def test_graphs_and_login_refuse_hostile_parameters(server: LiveServer) -> None:
    headers = {"X-API-Key": KEY}
    for query in ("label=a%00b", "label=%ED%A0%80", "label=%ED%A0%80&max_depth=NaN",
                  "label=Acme&max_nodes=Infinity", "label=Acme&max_nodes=1" + "0" * 30,
                  "label=Acme&product_id=p1", "label=" + "A" * 60_000,
                  "&".join(["label=a"] * 5000)):
        _short_answer(server.client.get(f"/graphs?{query}", headers=headers), query[:40])
    for form in ("username=a%00b&password=x", "username=%ED%A0%80&password=x",
                 "username=NaN&password=Infinity", "username=a&password=b&product_id=p1",
                 "username=" + "A" * 900_000 + "&password=x",
                 "&".join(f"username=v{i}" for i in range(50_000)) + "&password=x"):
        _short_answer(_post(server, "/login", form, "application/x-www-form-urlencoded"),
                      form[:40])


def _stream_body(server: LiveServer, path: str, size: int) -> tuple[int, bytes]:
    """Send a ``size``-byte JSON body over a raw socket (the server may answer early)."""
    url = server.client.base_url
    with socket.create_connection((url.host, url.port), timeout=30) as sock:
        sock.sendall((f"POST {path} HTTP/1.1\r\nHost: {url.host}\r\nX-API-Key: {KEY}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {size}\r\n"
                      "Connection: close\r\n\r\n").encode())
        chunk, sent = b"[" + b"1," * (1 << 19), 0
        try:
            while sent < size:
                part = chunk[:size - sent]
                sock.sendall(part)
                sent += len(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the end: the answer is waiting
        answer = b""
        while data := sock.recv(65536):
            answer += data
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize("path", [*JSON_ROUTES, "/login", "/graphs"])
def test_a_100_mb_body_is_413(server: LiveServer, path: str) -> None:
    with _HealthWatch(server) as watch:
        status, body = _stream_body(server, path, 100 * 1024 * 1024)
    assert status == 413, body[:300]
    assert len(body) <= MAX_ANSWER_BYTES
    assert watch.samples and max(t for t, _ in watch.samples) < HEALTH_BOUND_S, watch.samples
