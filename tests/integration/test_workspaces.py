"""Workspaces over real HTTP: two workspaces with colliding entity names, chunk ids and cache
keys never see each other's data, on the memory, PostgreSQL, Milvus Lite + Redis and
working-directory stacks.

Each workspace gets the same shared document (same chunk ids, same entity names) and one
document of its own; the other workspace's own document must never show up: not in any query
mode's data, not in an answer (the scripted answer is a digest of its context, so a cache hit
across workspaces would show), not in ``/health`` counts, not in ``/documents``. Unknown
workspaces are 404; a pattern admits new (empty) ones; ``/metrics`` is labelled by workspace.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.api.limits import ApiSettings
from hexrag.config import StackConfig, workspace_config
from hexrag.devtools.scripted_kg import kg_reply
from hexrag.serving import workspace_router
from tests.integration.live import LiveServer
from tests.services.postgres import pg_dsn  # noqa: F401

DIM = 32
SHARED = ("Acme CRM syncs contacts with Mailchimp every night. Mailchimp sends the Newsletter "
          "to Europe. Acme CRM exports Invoices to Xero.")
OWN = {
    "alpha": "Zephyr Vault stores the alpha secret in Orion. Orion guards Zephyr Vault.",
    "beta": "Quasar Ledger keeps the beta secret in Helix. Helix audits Quasar Ledger.",
}
MARKS = {"alpha": ("Zephyr", "Orion", "alpha secret"), "beta": ("Quasar", "Helix", "beta secret")}
MODES = ("local", "global", "hybrid", "mix", "naive")


class ScriptedLLM:
    """Extraction as the scripted KG; an answer is a digest of the prompt it was given (so
    an answer served from another workspace's cache is visible)."""

    model_name = "scripted"

    async def complete(self, prompt: str, *, system_prompt: str | None = None,
                       history: Sequence[Mapping[str, Any]] = (), json_mode: bool = False) -> str:
        if system_prompt and "Document Chunks" in system_prompt:
            return "answer " + hashlib.md5(system_prompt.encode()).hexdigest()
        return kg_reply(prompt, system_prompt, history)

    async def stream(self, prompt: str, **kw: Any) -> Any:
        yield await self.complete(prompt, **kw)


def _serve(config: StackConfig) -> LiveServer:
    router = workspace_router(config, ApiSettings(), embedder=HashingEmbedder(DIM),
                              llm=ScriptedLLM())
    return LiveServer(router, lifespan="on")


def _check_served(config: StackConfig) -> None:
    """Isolation (with ingestion) and routing over HTTP on a server of ``config``."""
    server = _serve(config)
    try:
        _check_isolation(server.client, ingest=True)
        _check_routing(server.client)
    finally:
        server.stop()


def _h(ws: str) -> dict[str, str]:
    return {"LIGHTRAG-WORKSPACE": ws}


def _wait_idle(client: httpx.Client, ws: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not client.get("/documents/pipeline_status", headers=_h(ws)).json()["busy"]:
            statuses = client.get("/documents", headers=_h(ws)).json()["statuses"]
            if not statuses.get("pending") and not statuses.get("processing"):
                assert set(statuses) == {"processed"}, statuses
                return
        time.sleep(0.05)
    raise AssertionError("ingestion did not finish")


def _texts(data: dict[str, Any]) -> str:
    d = data.get("data", {})
    parts = [c.get("content", "") + c.get("file_path", "") for c in d.get("chunks", [])]
    parts += [str(e) for e in d.get("entities", []) + d.get("relationships", [])]
    return "\n".join(parts)


def _ask_everything(client: httpx.Client, ws: str) -> tuple[str, list[str]]:
    seen = []
    for mode in MODES:
        for words in (["Zephyr", "Orion"], ["Quasar", "Helix"], ["Acme", "Mailchimp"]):
            r = client.post("/query/data", headers=_h(ws), json={
                "query": " ".join(words), "mode": mode, "hl_keywords": words,
                "ll_keywords": words, "enable_rerank": False})
            assert r.status_code == 200, r.text[:300]
            seen.append(_texts(r.json()))
    answers = []
    for mode in ("mix", "naive"):
        r = client.post("/query", headers=_h(ws), json={
            "query": "What is kept where?", "mode": mode, "hl_keywords": ["secret"],
            "ll_keywords": ["Acme", "Zephyr", "Quasar"], "enable_rerank": False})
        assert r.status_code == 200, r.text[:300]
        answers.append(r.json()["response"])
    return "\n".join(seen), answers


def _check_isolation(client: httpx.Client, *, ingest: bool) -> None:
    if ingest:
        for ws in ("alpha", "beta"):
            r = client.post("/documents/texts", headers=_h(ws), json={
                "texts": [SHARED, OWN[ws]], "file_sources": ["shared.md", f"{ws}.md"]})
            assert r.status_code == 200 and r.json()["status"] == "success", r.text
        for ws in ("alpha", "beta"):
            _wait_idle(client, ws)
    seen = {}
    answers = {}
    for ws in ("alpha", "beta"):
        seen[ws], answers[ws] = _ask_everything(client, ws)
    for ws, other in (("alpha", "beta"), ("beta", "alpha")):
        assert any(m in seen[ws] for m in MARKS[ws]), f"{ws} must see its own document"
        assert "Mailchimp" in seen[ws]
        leaked = [m for m in MARKS[other] if m in seen[ws]]
        assert not leaked, f"{other}'s data seen in {ws}: {leaked}"
    # same question, same shared data, different own data: never the other's cached answer
    assert answers["alpha"] != answers["beta"]
    again = _ask_everything(client, "alpha")[1]
    assert again == answers["alpha"]  # and the cache does serve within a workspace
    metrics = client.get("/metrics").text
    hits = {ws: _metric(metrics, "hexrag_answer_cache_hits_total", ws) for ws in ("alpha", "beta")}
    assert hits["alpha"] >= 1 and hits["beta"] == 0, hits
    # health counts are per workspace
    counts = {ws: client.get("/health", headers=_h(ws)).json()["stores"] for ws in ("alpha",
                                                                                   "beta")}
    assert counts["alpha"]["chunks"]["count"] == counts["beta"]["chunks"]["count"] > 0
    if ingest:
        docs = {ws: {d["file_path"] for g in client.get("/documents", headers=_h(ws)).json()[
            "statuses"].values() for d in g} for ws in ("alpha", "beta")}
        assert docs == {"alpha": {"shared.md", "alpha.md"}, "beta": {"shared.md", "beta.md"}}


def _metric(text: str, name: str, ws: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and f'workspace="{ws}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _check_routing(client: httpx.Client) -> None:
    r = client.post("/query/data", headers=_h("gamma"), json={"query": "x"})
    assert r.status_code == 404 and "unknown workspace" in r.text
    r = client.post("/query/data", headers=_h("../alpha"), json={"query": "x"})
    assert r.status_code == 404
    # the body may name the workspace too
    body = {"query": "Zephyr", "mode": "naive", "workspace": "alpha", "enable_rerank": False}
    assert "Zephyr" in _texts(client.post("/query/data", json=body).json())
    body["workspace"] = "beta"
    assert "Zephyr" not in _texts(client.post("/query/data", json=body).json())
    listed = client.get("/workspaces").json()
    assert set(listed["declared"]) == {"alpha", "beta"}


@pytest.fixture
def memory_config() -> Iterator[StackConfig]:
    yield StackConfig(workspaces=["alpha", "beta"], workspace_pattern=r"t_[a-z]+",
                      embedder=f"hashing:{DIM}")


def test_memory_workspaces(memory_config: StackConfig) -> None:
    server = _serve(memory_config)
    try:
        _check_isolation(server.client, ingest=True)
        _check_routing(server.client)
        # a pattern-admitted workspace is created on first use, empty, and stays apart
        r = server.client.get("/health", headers=_h("t_new"))
        assert r.status_code == 503 and "holds no records" in r.text
        assert "t_new" in server.client.get("/workspaces").json()["open"]
        assert server.client.get("/health", headers=_h("t_1")).status_code == 404
    finally:
        server.stop()


@pytest.mark.backend("postgres")
def test_postgres_workspaces(pg_dsn: str) -> None:  # noqa: F811
    namespace = "ws" + uuid.uuid4().hex[:8]
    config = StackConfig(vector_index=pg_dsn, graph_store=pg_dsn, chunk_store=pg_dsn,
                         cache=pg_dsn, namespace=namespace, workspaces=["alpha", "beta"],
                         embedder=f"hashing:{DIM}")
    assert workspace_config(config, "alpha").namespace == f"{namespace}_alpha"
    _check_served(config)


@pytest.mark.backend("milvus")
@pytest.mark.backend("redis")
def test_milvus_redis_workspaces(tmp_path: Path) -> None:
    from tests.services.milvus import shared_milvus
    from tests.services.redis import redis_server_url

    uri, _client = shared_milvus()
    spec = f"milvus://{uri}" if uri.endswith(".db") else uri
    namespace = "ws" + uuid.uuid4().hex[:8]
    config = StackConfig(vector_index=spec, chunk_store=redis_server_url(),
                         cache=redis_server_url(), namespace=namespace,
                         workspaces=["alpha", "beta"], embedder=f"hashing:{DIM}")
    _check_served(config)


def test_working_directory_workspaces(tmp_path: Path) -> None:
    """LightRAG's own multi-workspace layout: ``<workdir>/<workspace>/``, built with hexrag's
    ingestion (a working directory takes no documents over HTTP)."""
    from hexrag.adapters.tiktoken_offline import default_tokenizer
    from hexrag.adapters.workdir import empty_workdir_stack, save_workdir
    from hexrag.core.ingest.ingestion import Ingestor, IngestSettings

    root = tmp_path / "rag"
    for ws in ("alpha", "beta"):
        stack = empty_workdir_stack(DIM)
        ingestor = Ingestor(
            entities=stack.entities, relationships=stack.relationships, chunks=stack.chunks,
            graph=stack.graph, chunk_store=stack.chunk_store, llm=ScriptedLLM(),
            embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(),
            clock=lambda: 1_700_000_000, settings=IngestSettings(chunk_token_size=40,
                                                                 chunk_overlap_token_size=5),
            documents=stack.documents,
        )

        async def run(ing: Ingestor = ingestor, w: str = ws) -> None:
            await ing.ingest_text(SHARED, file_path="shared.md")
            await ing.ingest_text(OWN[w], file_path=f"{w}.md")

        asyncio.run(run())
        save_workdir(stack, root / ws)
    config = StackConfig(workdir=root, workspaces=["alpha", "beta"], default_workspace="alpha",
                         embedder=f"hashing:{DIM}")
    server = _serve(config)
    try:
        _check_isolation(server.client, ingest=False)
        _check_routing(server.client)
        # no header: the default workspace
        body = {"query": "Zephyr", "mode": "naive", "enable_rerank": False}
        assert "Zephyr" in _texts(server.client.post("/query/data", json=body).json())
    finally:
        server.stop()
