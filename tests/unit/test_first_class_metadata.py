"""Document metadata as first-class fields of entities and relations: each carries, per
metadata key, the set of its sources' values (``<SEP>``-joined, so every backend stores it
and LightRAG reads it as a plain attribute), in the graph and on its vector record; scope
then works without an encoded ``file_path``, and deletion shrinks the sets."""

from __future__ import annotations

import asyncio
from typing import Any

from hexrag.adapters.memory import HashingEmbedder
from hexrag.adapters.workdir import empty_workdir_stack
from hexrag.bootstrap import compose_engine
from hexrag.core.documents import merge_metadata_fields, metadata_fields
from hexrag.core.model import GRAPH_FIELD_SEP, QueryParam, QueryScope
from tests.unit.test_delete_documents import DIM, DOCS, _ingestor

SEP = GRAPH_FIELD_SEP


def _plain_stack() -> tuple[Any, Any, list[str]]:
    """DOCS ingested with metadata but plain file paths (no encoding)."""
    stack = empty_workdir_stack(DIM)
    ingestor = _ingestor(stack)

    async def run() -> list[str]:
        return [(await ingestor.ingest_text(t, file_path=f"{p}.txt", metadata={
            "product_id": p, "category_id": "apps", "owner": "ops"})).doc_id for t, p in DOCS]

    return stack, ingestor, asyncio.run(run())


def test_the_merge_rule() -> None:
    assert metadata_fields({"product_id": "p1", "category_id": "c", "n": 3, "flag": True,
                            "list": ["x"], "entity_type": "x", "empty": ""}) == {
        "product_id": "p1", "category_id": "c", "n": "3"}
    assert merge_metadata_fields({"product_id": f"p2{SEP}p1", "description": "d"},
                                 {"product_id": "p0", "source": "s"}) == {
        "product_id": f"p0{SEP}p1{SEP}p2", "source": "s"}
    assert merge_metadata_fields(None, {}) == {}


def test_entities_and_relations_carry_their_sources_values() -> None:
    stack, _, _ = _plain_stack()
    nodes = {n.name: n for n in stack.graph.iter_nodes()}
    mailchimp = nodes["Mailchimp"]
    assert mailchimp.properties["product_id"] == SEP.join(["p-crm", "p-ledger", "p-zap"])
    assert mailchimp.properties["category_id"] == "apps"
    assert mailchimp.properties["owner"] == "ops"
    assert "product_id" not in (mailchimp.file_path or "")
    zapier = nodes["Zapier"]
    assert zapier.properties["product_id"] == "p-zap"
    edges = list(stack.graph.iter_edges())
    assert edges and all(e.properties.get("product_id") for e in edges)
    records = {r.entity_name: r for r in stack.entities.export_arrays()[1]}
    assert records["Mailchimp"].metadata["product_id"] == mailchimp.properties["product_id"]


def test_scope_works_from_first_class_fields_alone() -> None:
    stack, _, _ = _plain_stack()
    engine = compose_engine(stack.engine_stores(), embedder=HashingEmbedder(DIM), cache=None)

    async def ask(mode: str) -> dict[str, Any]:
        return await engine.query_data("Zapier Slack Mailchimp", QueryParam(
            mode=mode, scope=QueryScope(product_id=["p-zap"]), enable_rerank=False))

    for mode in ("local", "global", "hybrid", "mix", "naive"):
        data = asyncio.run(ask(mode))["data"]
        assert data["chunks"], mode
        assert {c["file_path"] for c in data["chunks"]} == {"p-zap.txt"}, mode
        for e in data.get("entities", []):
            assert "Ledger Pro" != e["entity_name"], mode


def test_deletion_shrinks_the_sets() -> None:
    stack, ingestor, ids = _plain_stack()
    asyncio.run(ingestor.delete_documents([ids[1]]))
    nodes = {n.name: n for n in stack.graph.iter_nodes()}
    assert nodes["Mailchimp"].properties["product_id"] == SEP.join(["p-crm", "p-ledger"])
    assert "Zapier" not in nodes
    records = {r.entity_name: r for r in stack.entities.export_arrays()[1]}
    assert records["Mailchimp"].metadata["product_id"] == SEP.join(["p-crm", "p-ledger"])
