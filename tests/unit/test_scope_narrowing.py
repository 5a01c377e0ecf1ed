"""Scope-correct descriptions (:mod:`hexrag.core.query.narrowing`): a scoped query shows each
entity's and relation's description as its in-scope sources wrote it.

Three products' documents share entities (Acme CRM, Mailchimp, Xero, Finance ...). Scoped to
one product, every description shown is built from that product's fragments only, and equals
what a stack holding only that product's document stores (where that stack did not summarise);
unscoped queries are untouched; one fragment read per scoped query.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.bootstrap import compose_engine
from hexrag.core.model import GRAPH_FIELD_SEP, QueryParam, QueryScope
from hexrag.core.query.narrowing import fragment_in_scope, presummary_join
from tests.unit.test_delete_documents import DIM, DOCS, _stack_with

KG_MODES = ("local", "global", "hybrid", "mix")
QUESTIONS = ("Acme CRM Mailchimp Xero", "Who sends invoices to Xero for Finance?",
             "Mailchimp Newsletter Europe")


class CountingFragments:
    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    async def fragments_about(self, names: Any) -> Any:
        self.calls += 1
        return await self.inner.fragments_about(names)


@pytest.fixture(scope="module")
def stacks() -> tuple[Any, Any]:
    full, _, _ = _stack_with(DOCS)
    only_crm, _, _ = _stack_with([DOCS[0]])
    return full, only_crm


def _ask(engine: Any, q: str, mode: str, scope: QueryScope | None) -> dict[str, Any]:
    return asyncio.run(engine.query_data(q, QueryParam(mode=mode, scope=scope,
                                                       enable_rerank=False)))


def test_the_join_rule_is_lightrags_merge(stacks: tuple[Any, Any]) -> None:
    """Reference check: every stored description that was joined (not summarised) equals
    the pre-summary join of all its fragments."""
    full, _ = stacks
    checked = 0
    for node in full.graph.iter_nodes():
        frags = asyncio.run(full.documents.fragments_about([node.name]))
        mine = [f for f in frags if f.kind == "entity" and f.src == node.name]
        if not mine or (node.description or "").startswith("Summary "):
            continue
        assert presummary_join(mine) == node.description, node.name
        checked += 1
    for edge in full.graph.iter_edges():
        frags = asyncio.run(full.documents.fragments_about([edge.src_id]))
        mine = [f for f in frags if f.kind == "relation" and (f.src, f.tgt) == edge.pair]
        if not mine or (edge.description or "").startswith("Summary "):
            continue
        assert presummary_join(mine) == edge.description, edge.pair
        checked += 1
    assert checked > 10


def test_scoped_descriptions_come_from_in_scope_fragments(stacks: tuple[Any, Any]) -> None:
    full, only_crm = stacks
    reader = CountingFragments(full.documents)
    engine = compose_engine(full.engine_stores(), embedder=HashingEmbedder(DIM), cache=None,
                            fragments=reader)
    scope = QueryScope(product_id=["p-crm"])
    crm_nodes = {n.name: n for n in only_crm.graph.iter_nodes()}
    crm_edges = {e.pair: e for e in only_crm.graph.iter_edges()}
    narrowed = compared = 0
    asked = 0
    for q in QUESTIONS:
        for mode in KG_MODES:
            data = _ask(engine, q, mode, scope)
            asked += 1
            narrowed += data["metadata"]["processing_info"]["scope"]["narrowed_descriptions"]
            d = data["data"]
            for e in d["entities"]:
                frags = asyncio.run(full.documents.fragments_about([e["entity_name"]]))
                allowed = {str(f.data["description"]) for f in frags
                           if fragment_in_scope(scope, f)}
                if any(not fragment_in_scope(scope, f) for f in frags
                       if f.kind == "entity" and f.src == e["entity_name"]):
                    # narrowed: only in-scope statements, and only in-scope file paths
                    assert set(e["description"].split(GRAPH_FIELD_SEP)) <= allowed, e
                    assert "p-zap" not in e["file_path"] and "p-ledger" not in e["file_path"]
                ref = crm_nodes.get(e["entity_name"])
                if ref is not None and not (ref.description or "").startswith("Summary "):
                    assert e["description"] == ref.description, e["entity_name"]
                    compared += 1
            for r in d["relationships"]:
                pair = tuple(sorted((r["src_id"], r["tgt_id"])))
                ref_e = crm_edges.get(pair)  # type: ignore[arg-type]
                if ref_e is not None and not (ref_e.description or "").startswith("Summary "):
                    assert r["description"] == ref_e.description, pair
                    compared += 1
    assert narrowed > 0 and compared > 0
    assert reader.calls == asked  # one fragment read per scoped KG query


def test_unscoped_queries_are_untouched(stacks: tuple[Any, Any]) -> None:
    full, _ = stacks
    reader = CountingFragments(full.documents)
    with_f = compose_engine(full.engine_stores(), embedder=HashingEmbedder(DIM), cache=None,
                            fragments=reader)
    without = compose_engine({**full.engine_stores(), "documents": None},
                             embedder=HashingEmbedder(DIM), cache=None)
    assert without.fragments is None
    for mode in KG_MODES:
        a = _ask(with_f, QUESTIONS[0], mode, None)
        b = _ask(without, QUESTIONS[0], mode, None)
        assert a == b
        assert a["metadata"]["processing_info"]["scope"]["narrowed_descriptions"] == 0
    assert reader.calls == 0


def test_without_fragments_a_scoped_query_shows_the_stored_descriptions(
    stacks: tuple[Any, Any],
) -> None:
    full, _ = stacks
    engine = compose_engine({**full.engine_stores(), "documents": None},
                            embedder=HashingEmbedder(DIM), cache=None)
    stored = {n.name: n.description for n in full.graph.iter_nodes()}
    data = _ask(engine, QUESTIONS[0], "local", QueryScope(product_id=["p-crm"]))
    assert data["data"]["entities"]
    for e in data["data"]["entities"]:
        assert e["description"] == stored[e["entity_name"]]
