"""Issue 24 point 5 over real HTTP.

* Under a scope, every list of chunk ids a ``/query/data`` answer carries (each entity's and
  relation's ``source_id``, the chunks, the missing-chunk sample) names only chunks whose own
  stored metadata is in scope - on the memory stack and on PostgreSQL.
* A server whose stack declares no workspaces answers 404 for a ``LIGHTRAG-WORKSPACE`` header
  naming another workspace, after the API key (403 first) and before the body is read, and
  for a JSON body's ``"workspace"`` naming another (when no header is sent); an empty header,
  none, or the stack's own workspace (a working directory's LightRAG ``workspace``) is served.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.api.limits import ApiSettings
from hexrag.bootstrap import build_stack
from hexrag.config import StackConfig
from hexrag.core.ingest.ingestion import IngestSettings
from hexrag.core.query.source_ids import split_lightrag
from hexrag.core.scope import chunk_in_scope
from hexrag.devtools.scripted_kg import ScriptedKGLLM
from hexrag.serving import stack_app
from tests.integration.live import LiveServer, StackInServerLoop
from tests.services.postgres import pg_dsn  # noqa: F401

DIM = 32
KEY = "k-" + uuid.uuid4().hex[:8]
DOCS = [
    ("Acme Corp builds Acme CRM. Acme CRM syncs contacts with Mailchimp every night. "
     "Mailchimp sends the Newsletter. The Newsletter reaches Europe and Asia. "
     "Acme CRM also exports Invoices to Xero for Finance teams.", "p-crm"),
    ("Zapier connects Acme CRM to Slack. Slack notifies Sales when Mailchimp bounces. "
     "Sales reviews Invoices in Xero. Acme Corp hires Support in Europe.", "p-zap"),
    ("Ledger Pro imports Invoices from Xero. Ledger Pro reconciles Payments for Finance. "
     "Mailchimp bills Acme Corp monthly. Quarterly Reports go to Finance.", "p-ledger"),
]
QUESTIONS = ("Acme CRM Mailchimp Xero", "Who sends invoices to Xero for Finance?",
             "Acme Corp Slack Sales Europe")
KG_MODES = ("local", "global", "hybrid", "mix")


class Served:
    """A built stack served over HTTP (with the API key), closed by :meth:`close`."""

    def __init__(self, config: StackConfig, *, ingest: bool, in_memory: bool = True) -> None:
        self.loop = asyncio.new_event_loop()
        self.stack = self.loop.run_until_complete(
            build_stack(config, embedder=HashingEmbedder(DIM)))
        if ingest:
            self.loop.run_until_complete(self._ingest())
        if in_memory:  # the data lives in this stack's objects: serve them
            self.server = LiveServer(stack_app(self.stack, ApiSettings(api_key=KEY)))
        else:  # a server's clients belong to one event loop: the server opens its own
            app = StackInServerLoop(config, ApiSettings(api_key=KEY), DIM)
            self.server = LiveServer(app, lifespan="on")
        self.http = self.server.client

    async def _ingest(self) -> None:
        await self.stack.record_model()
        ingestor = self.stack.ingestor(ScriptedKGLLM(), settings=IngestSettings(
            chunk_token_size=20, chunk_overlap_token_size=4))
        for text, product in DOCS:
            await ingestor.ingest_text(text, metadata={"product_id": product,
                                                       "source": f"{product}.txt"})

    def chunks(self, ids: list[str]) -> list[Any]:
        return self.loop.run_until_complete(self.stack.stores.chunk_store.get_chunks(ids))

    def close(self) -> None:
        self.server.stop()
        self.loop.run_until_complete(self.stack.aclose())
        self.loop.close()



def _check_scoped_ids(served: Served) -> None:
    from hexrag.core.model import QueryScope

    scope = QueryScope(product_id=["p-crm"])
    checked = narrowed = 0
    for q in QUESTIONS:
        for mode in KG_MODES:
            body = {"query": q, "mode": mode, "enable_rerank": False,
                    "scope": {"product_id": ["p-crm"]}}
            r = served.http.post("/query/data", json=body, headers={"X-API-Key": KEY})
            assert r.status_code == 200, r.text
            data = r.json()
            if data["status"] != "success":
                continue
            d = data["data"]
            lists = [split_lightrag(x["source_id"]) for x in (*d["entities"],
                                                              *d["relationships"])]
            assert all(lists), d  # every kept record names an in-scope chunk
            lists.append([c["chunk_id"] for c in d["chunks"]])
            info = data["metadata"]["processing_info"]
            lists.append(list(info["missing_chunk_sample"]))
            for ids in lists:
                for cid, rec in zip(ids, served.chunks(ids), strict=True):
                    assert rec is not None and chunk_in_scope(scope, rec), (q, mode, cid)
                    checked += 1
            narrowed += info["scope"]["narrowed_source_ids"]
            # the same question unscoped names other products' chunks: the scope did the work
            body.pop("scope")
            whole = served.http.post("/query/data", json=body,
                                     headers={"X-API-Key": KEY}).json()
            assert whole["metadata"]["processing_info"]["scope"]["narrowed_source_ids"] == 0
    assert checked > 20 and narrowed > 0, (checked, narrowed)


@pytest.fixture
def memory_served() -> Iterator[Served]:
    served = Served(StackConfig(embedder=f"hashing:{DIM}"), ingest=True)
    try:
        yield served
    finally:
        served.close()


def test_memory_stack_scoped_answers_name_only_in_scope_chunks(memory_served: Served) -> None:
    _check_scoped_ids(memory_served)


@pytest.mark.backend("postgres")
def test_postgres_scoped_answers_name_only_in_scope_chunks(pg_dsn: str) -> None:  # noqa: F811
    namespace = "sid" + uuid.uuid4().hex[:8]
    config = StackConfig(vector_index=pg_dsn, graph_store=pg_dsn, chunk_store=pg_dsn,
                         cache=pg_dsn, namespace=namespace, embedder=f"hashing:{DIM}")
    served = Served(config, ingest=True, in_memory=False)
    try:
        _check_scoped_ids(served)
    finally:
        served.close()


def _ws(name: str, key: str | None = KEY) -> dict[str, str]:
    headers = {"LIGHTRAG-WORKSPACE": name}
    if key is not None:
        headers["X-API-Key"] = key
    return headers


def test_one_stack_server_refuses_other_workspaces(memory_served: Served) -> None:
    http = memory_served.http
    q = {"query": "Acme CRM", "mode": "naive", "enable_rerank": False}
    served = http.post("/query/data", json=q, headers={"X-API-Key": KEY})
    assert served.status_code == 200 and served.json()["data"]["chunks"], served.text
    # the key first: a stranger gets 403, whatever workspace it names
    assert http.post("/query/data", json=q, headers=_ws("acme", None)).status_code == 403
    assert http.post("/query/data", json=q, headers=_ws("acme", "wrong")).status_code == 403
    # with the key: another workspace is 404, on every route, with no data
    for method, path, body in (("POST", "/query/data", q), ("POST", "/query", q),
                               ("GET", "/documents", None), ("GET", "/health", None),
                               ("POST", "/documents/text", {"text": "Zeta Corp"})):
        r = http.request(method, path, json=body, headers=_ws("acme"))
        assert r.status_code == 404, (path, r.status_code, r.text)
        assert r.json() == {"detail": "unknown workspace 'acme'"}
    # an open path (no key needed) naming another workspace is 404 too
    assert http.get("/health", headers=_ws("acme", None)).status_code == 404
    # before the body is read: an oversized body naming another workspace is 404, not 413
    big = b"x" * (64 * 1024 * 1024)
    r = http.post("/query/data", content=big, headers={**_ws("acme"),
                                                      "content-type": "application/json"})
    assert r.status_code == 404
    # an empty header is the default: served as without one
    r = http.post("/query/data", json=q, headers=_ws(""))
    assert r.status_code == 200 and r.json() == served.json()
    # a JSON body's "workspace" (hexrag's alternative to the header) is held to the same rule
    r = http.post("/query/data", json={**q, "workspace": "acme"}, headers={"X-API-Key": KEY})
    assert r.status_code == 404 and r.json() == {"detail": "unknown workspace 'acme'"}
    r = http.post("/documents/text", json={"text": "Zeta Corp", "workspace": "acme"},
                  headers={"X-API-Key": KEY})
    assert r.status_code == 404
    for same in ("", None):  # empty or null: the stack itself
        r = http.post("/query/data", json={**q, "workspace": same}, headers={"X-API-Key": KEY})
        assert r.status_code == 200 and r.json() == served.json(), r.text
    # ... unless a header names one: the header wins, as on the workspace router
    r = http.post("/query/data", json={**q, "workspace": "acme"}, headers=_ws(""))
    assert r.status_code == 200 and r.json() == served.json()
    # malformed JSON is still the strict parser's 4xx, not the guard's
    r = http.post("/query/data", content=b'{"workspace": "acme", ', headers={
        "X-API-Key": KEY, "content-type": "application/json"})
    assert 400 <= r.status_code < 500 and r.status_code != 404, r.text
    # two headers must agree
    r = http.post("/query/data", json=q, headers=[("X-API-Key", KEY),
                                                  ("LIGHTRAG-WORKSPACE", ""),
                                                  ("LIGHTRAG-WORKSPACE", "acme")])
    assert r.status_code == 404


def test_working_directory_accepts_its_own_workspace_only(tmp_path: Path) -> None:
    from hexrag.adapters.workdir import empty_workdir_stack, save_workdir

    save_workdir(empty_workdir_stack(DIM), tmp_path / "prod")
    served = Served(StackConfig(workdir=tmp_path, workspace="prod", embedder=f"hashing:{DIM}"),
                    ingest=False)
    try:
        http = served.http
        q = {"query": "anything", "mode": "naive", "enable_rerank": False}
        own = http.post("/query/data", json=q, headers=_ws("prod"))
        assert own.status_code == 200, own.text
        assert http.post("/query/data", json=q, headers={"X-API-Key": KEY}).json() == own.json()
        key = {"X-API-Key": KEY}
        assert http.post("/query/data", json={**q, "workspace": "prod"},
                         headers=key).json() == own.json()
        for other in ("dev", "prod2", "Prod"):
            r = http.post("/query/data", json=q, headers=_ws(other))
            assert r.status_code == 404, (other, r.text)
            r = http.post("/query/data", json={**q, "workspace": other}, headers=key)
            assert r.status_code == 404, (other, r.text)
    finally:
        served.close()
