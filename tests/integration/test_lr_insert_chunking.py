"""LightRAG's ``chunking`` field of ``/documents/text`` and ``/documents/texts`` on hexrag:
the default (``fixed_token`` without parameters, or parameters all ``null``) is taken and
the server's ``CHUNK_SIZE`` applies; any other strategy or parameter is refused with 422
naming why, never silently ignored (hexrag has one chunker: docs/compat.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.live import LiveServer
from tests.integration.test_api_documents import _app


@pytest.fixture(scope="module")
def live() -> Iterator[LiveServer]:
    server = LiveServer(_app())
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("chunking", [
    None, {}, {"strategy": "fixed_token"}, {"strategy": "fixed_token", "params": {}},
    {"strategy": "fixed_token", "params": {"chunk_token_size": None}},
])
def test_the_default_chunking_is_taken(live: LiveServer, chunking: Any) -> None:
    text = f"Acme builds Rockets. {chunking!r}"
    r = live.client.post("/documents/text", json={"text": text, "chunking": chunking})
    assert r.status_code == 200 and r.json()["status"] == "success", r.text
    r = live.client.post("/documents/texts", json={"texts": [text + " again"],
                                                   "chunking": chunking})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("chunking, says", [
    ({"strategy": "semantic_vector"}, "not supported"),
    ({"strategy": "recursive_character", "params": {}}, "not supported"),
    ({"strategy": "fixed_token", "params": {"chunk_token_size": 500}}, "CHUNK_SIZE"),
    ({"strategy": "no_such"}, "must be one of"),
    ({"strategy": "fixed_token", "other": 1}, "'strategy' and 'params' only"),
    ("fixed_token", "valid dictionary"),
])
def test_other_chunking_is_refused(live: LiveServer, chunking: Any, says: str) -> None:
    for path, body in (("/documents/text", {"text": "Globex sells Widgets."}),
                       ("/documents/texts", {"texts": ["Globex sells Widgets."]})):
        r = live.client.post(path, json={**body, "chunking": chunking})
        assert r.status_code == 422, (path, r.text)
        assert says in r.text, (path, r.text)
