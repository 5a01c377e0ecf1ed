"""A ~1 MB ``entity_type`` stored through ``/graph/entity/edit`` does not stall later queries.

Over real HTTP, with an API key: an authenticated client stores a huge field on an entity that
the demo question retrieves (LightRAG accepts it). Stage 2 of every later query renders that
entity as a JSON line and cuts the lines to ``max_entity_tokens``; it must not tokenize the
huge line whole on the event loop. Three concurrent ``/query/data`` calls then answer, and
``/health`` keeps answering, within a generous 2 s (the promise is about latency under
attack), and the engine's tokenizer - metered in process - encodes far less than the field.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hexrag.adapters.tiktoken_offline import TiktokenTokenizer
from hexrag.api import create_app
from hexrag.api.limits import ApiSettings
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from tests.integration.live import LiveServer

KEY = "huge-field-key"
BOUND_S = 2.0
HEADERS = {"X-API-Key": KEY}


class _Meter:
    """Characters the engine's tokenizer encodes or counts (wraps the instance in place)."""

    def __init__(self, tok: TiktokenTokenizer) -> None:
        self.chars = 0
        count, encode = tok._count, tok.encode

        def metered_count(text: str) -> int:
            self.chars += len(text)
            return count(text)

        def metered_encode(text: str) -> list[int]:
            self.chars += len(text)
            return encode(text)

        tok._count = metered_count
        tok.encode = metered_encode  # type: ignore[method-assign]


@pytest.fixture
def served() -> Iterator[tuple[LiveServer, _Meter]]:
    demo = asyncio.run(build_demo_engine())
    tok = demo.engine.tokenizer
    assert isinstance(tok, TiktokenTokenizer)
    meter = _Meter(tok)
    live = LiveServer(create_app(demo.engine, settings=ApiSettings(api_key=KEY)))
    yield live, meter
    live.stop()


def _huge_words(size: int) -> str:
    rnd = random.Random(11)
    words = ["graph", "entity", "Acme", "river", "x9", "the", "model", "of"]
    return " ".join(rnd.choice(words) for _ in range(size // 4))[:size]


def _entities(server: LiveServer) -> list[dict[str, Any]]:
    r = server.client.post(
        "/query/data", json={"query": DEFAULT_QUESTION, "mode": "local"}, headers=HEADERS
    )
    assert r.status_code == 200, r.text[:300]
    entities: list[dict[str, Any]] = r.json()["data"]["entities"]
    return entities


@pytest.mark.parametrize("field", ["words", "one giant piece"])
def test_a_1mb_entity_type_does_not_stall_queries_or_health(
    served: tuple[LiveServer, _Meter], field: str
) -> None:
    server, meter = served
    entities = _entities(server)
    assert entities, "the demo question retrieves entities"
    target = entities[0]["entity_name"]
    # ~1 MB, under the 1 MiB body limit with the rest of the request
    huge = _huge_words(1_040_000) if field == "words" else "x" * 1_040_000
    r = server.client.post(
        "/graph/entity/edit",
        json={"entity_name": target, "updated_data": {"entity_type": huge}},
        headers=HEADERS,
    )
    assert r.status_code == 200, r.text[:300]
    assert server.client.get(
        "/graph/entity/exists", params={"name": target}, headers=HEADERS
    ).json()["exists"]

    # the first query after the edit (a giant piece is encoded once here): the entity is still
    # retrieved, and its line, far over max_entity_tokens, is cut (LightRAG's kept prefix)
    kept = [e["entity_name"] for e in _entities(server)]
    assert target not in kept
    assert kept == []  # it came first: LightRAG keeps no line before it
    health: list[float] = []
    answers: list[tuple[float, int, int]] = []
    stop = threading.Event()

    def poll_health() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            while not stop.is_set():
                start = time.monotonic()
                assert client.get("/health").status_code == 200
                health.append(time.monotonic() - start)
                stop.wait(0.02)

    def query() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            start = time.monotonic()
            r = client.post(
                "/query/data",
                json={"query": DEFAULT_QUESTION, "mode": "local"},
                headers=HEADERS,
            )
            kept = [e["entity_name"] for e in r.json()["data"]["entities"]]
            answers.append((time.monotonic() - start, r.status_code, len(kept)))

    watcher = threading.Thread(target=poll_health, daemon=True)
    watcher.start()
    before = meter.chars
    for _ in range(2):
        queries = [threading.Thread(target=query) for _ in range(3)]
        for t in queries:
            t.start()
        for t in queries:
            t.join()
    stop.set()
    watcher.join()
    per_query = (meter.chars - before) / 6
    assert [status for _, status, _ in answers] == [200] * 6, answers
    assert max(t for t, _, _ in answers) < BOUND_S, answers
    assert health and max(health) < BOUND_S, max(health)
    # the 1 MB line is neither counted nor encoded whole by any of the six queries
    assert per_query < 200_000, per_query
