"""Scope-correct chunk id lists (:mod:`hexrag.core.query.scoped_source_ids`).

Under a scope, every entity's and relation's ``source_id`` in ``/query/data`` names only
in-scope chunks (in stored order), as its ``file_path`` and description already do; the fast
form equals the plain statement on generated data (ids that are prefixes of one another,
whitespace, empty segments, repeats); unscoped answers keep the stored value.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.memory import HashingEmbedder
from hexrag.bootstrap import compose_engine
from hexrag.core.model import GRAPH_FIELD_SEP, Chunk, QueryParam, QueryScope
from hexrag.core.query.scoped_source_ids import in_scope_source_id, in_scope_source_id_plain
from hexrag.core.query.source_ids import split_lightrag
from hexrag.core.scope import chunk_in_scope
from tests.unit.test_delete_documents import DIM, DOCS, _stack_with

KG_MODES = ("local", "global", "hybrid", "mix")
QUESTIONS = ("Acme CRM Mailchimp Xero", "Who sends invoices to Xero for Finance?",
             "Mailchimp Newsletter Europe", "Acme Corp Slack Sales")
SCOPE = QueryScope(product_id=["p-crm"])

# ids that are prefixes / substrings of one another: chunk-1, chunk-10, chunk-100, ...
IDS = [f"chunk-{n}" for n in (1, 10, 100, 11, 2, 21)] + ["chunk-1 x", "chunk-1x"]


def _chunk(cid: str, product: str | None) -> Chunk:
    meta = {"product_id": product} if product is not None else {}
    return Chunk(id=cid, content=cid, tokens=1, full_doc_id="doc-" + cid,
                 chunk_order_index=0, file_path=None, metadata=meta)


@settings(max_examples=400, deadline=None)
@given(
    segments=st.lists(
        st.tuples(st.sampled_from(IDS), st.sampled_from(["", " ", "\t", "\n "]),
                  st.sampled_from(["", " "])),
        max_size=12,
    ),
    empties=st.lists(st.integers(0, 12), max_size=3),
    products=st.dictionaries(st.sampled_from(IDS),
                             st.sampled_from(["p-crm", "p-zap", None]), max_size=len(IDS)),
)
def test_fast_form_equals_the_plain_statement(
    segments: list[tuple[str, str, str]], empties: list[int],
    products: dict[str, str | None],
) -> None:
    parts = [f"{pre}{cid}{post}" for cid, pre, post in segments]
    for at in empties:  # empty segments, as a stored "a<SEP><SEP>b" holds
        parts.insert(min(at, len(parts)), "")
    source_id = GRAPH_FIELD_SEP.join(parts)
    chunks = {cid: _chunk(cid, p) for cid, p in products.items()}  # absent: missing chunk
    in_scope = {cid for cid, c in chunks.items() if chunk_in_scope(SCOPE, c)}

    plain = in_scope_source_id_plain(SCOPE, source_id, chunks.get)
    fast = in_scope_source_id(source_id, in_scope)
    assert fast == plain
    shown = source_id if fast is None else fast
    ids = split_lightrag(shown)
    if fast is not None:  # narrowed: only in-scope ids, in stored order, none lost
        assert set(ids) <= in_scope
        assert ids == [c for c in split_lightrag(source_id) if c in in_scope]
    else:  # kept as stored: every id was in scope already
        assert set(ids) <= in_scope


def test_prefix_ids_are_decided_each_on_its_own_chunk() -> None:
    chunks = {"chunk-1": _chunk("chunk-1", "p-zap"), "chunk-10": _chunk("chunk-10", "p-crm"),
              "chunk-100": _chunk("chunk-100", "p-zap")}
    value = "chunk-10<SEP>chunk-1<SEP>chunk-100<SEP>chunk-10"
    assert in_scope_source_id_plain(SCOPE, value, chunks.get) == "chunk-10<SEP>chunk-10"
    assert in_scope_source_id(value, {"chunk-10"}) == "chunk-10<SEP>chunk-10"
    # nothing dropped: the stored value is shown as it is
    assert in_scope_source_id("chunk-10 <SEP>chunk-10", {"chunk-10"}) is None
    # PostgreSQL array text is read as ids too
    assert in_scope_source_id("{chunk-1,chunk-10}", {"chunk-10"}) == "chunk-10"


@pytest.fixture(scope="module")
def full() -> Any:
    stack, _, _ = _stack_with(DOCS)
    return stack


def _ask(engine: Any, q: str, mode: str, scope: QueryScope | None) -> dict[str, Any]:
    return asyncio.run(engine.query_data(q, QueryParam(mode=mode, scope=scope,
                                                       enable_rerank=False)))


def _lists_of_chunk_ids(data: dict[str, Any]) -> list[list[str]]:
    d = data["data"]
    out = [split_lightrag(x["source_id"]) for x in (*d["entities"], *d["relationships"])]
    out.append([c["chunk_id"] for c in d["chunks"]])
    out.append(list(data["metadata"]["processing_info"]["missing_chunk_sample"]))
    return out


@pytest.mark.parametrize("with_fragments", [True, False])
def test_scoped_answers_name_only_in_scope_chunks(full: Any, with_fragments: bool) -> None:
    stores = full.engine_stores() if with_fragments else {**full.engine_stores(),
                                                          "documents": None}
    engine = compose_engine(stores, embedder=HashingEmbedder(DIM), cache=None)
    stored_e = {n.name: n.source_id for n in full.graph.iter_nodes()}
    stored_r = {e.pair: e.source_id for e in full.graph.iter_edges()}
    narrowed = checked = 0
    for q in QUESTIONS:
        for mode in KG_MODES:
            data = _ask(engine, q, mode, SCOPE)
            for ids in _lists_of_chunk_ids(data):
                records = asyncio.run(full.chunk_store.get_chunks(ids))
                for cid, rec in zip(ids, records, strict=True):
                    assert rec is not None and chunk_in_scope(SCOPE, rec), (q, mode, cid)
                    checked += 1
            for e in data["data"]["entities"]:  # stored order, only out-of-scope ids dropped
                stored = split_lightrag(stored_e[e["entity_name"]])
                shown = split_lightrag(e["source_id"])
                assert shown == [c for c in stored if c in set(shown)]
                assert shown, e  # a kept entity has an in-scope chunk
            for r in data["data"]["relationships"]:
                pair = tuple(sorted((r["src_id"], r["tgt_id"])))
                stored = split_lightrag(stored_r[pair])  # type: ignore[index]
                shown = split_lightrag(r["source_id"])
                assert shown == [c for c in stored if c in set(shown)] and shown, r
            narrowed += data["metadata"]["processing_info"]["scope"]["narrowed_source_ids"]
    assert narrowed > 0 and checked > 0


def test_unscoped_answers_show_the_stored_source_ids(full: Any) -> None:
    engine = compose_engine(full.engine_stores(), embedder=HashingEmbedder(DIM), cache=None)
    stored_e = {n.name: n.source_id for n in full.graph.iter_nodes()}
    seen_other_products = False
    for mode in KG_MODES:
        data = _ask(engine, QUESTIONS[0], mode, None)
        assert data["metadata"]["processing_info"]["scope"]["narrowed_source_ids"] == 0
        for e in data["data"]["entities"]:
            assert e["source_id"] == stored_e[e["entity_name"]]
            recs = asyncio.run(full.chunk_store.get_chunks(split_lightrag(e["source_id"])))
            seen_other_products |= any(r is not None and not chunk_in_scope(SCOPE, r)
                                       for r in recs)
    assert seen_other_products  # the data does hold ids a scope must drop


def test_the_scoped_llm_context_names_no_out_of_scope_chunk(full: Any) -> None:
    """LightRAG's context carries no chunk id lists (entities and relations show entity,
    type, description; chunks their reference id and content): under a scope it names no
    out-of-scope chunk id and holds no out-of-scope chunk's text."""
    engine = compose_engine(full.engine_stores(), embedder=HashingEmbedder(DIM), cache=None)
    outside = [c for c in full.chunk_store.iter_chunks() if not chunk_in_scope(SCOPE, c)]
    assert outside
    for q in QUESTIONS:
        for mode in KG_MODES:
            param = QueryParam(mode=mode, scope=SCOPE, enable_rerank=False,
                               only_need_context=True)
            context = asyncio.run(engine.query(q, param))
            assert isinstance(context, str) and context
            for c in outside:
                assert c.id not in context, (q, mode, c.id)
                assert c.content not in context, (q, mode, c.id)


async def test_scoped_missing_chunks_are_counted_but_not_named() -> None:
    """An entity naming an in-scope chunk, an out-of-scope one and a missing one, with ids
    that are prefixes of one another: the scoped answer names the in-scope chunk alone."""
    from tests.unit.kg_builder import KG, axis

    kg = KG()
    kg.queries = {"q text": axis(1), "acme": axis(1)}
    kg.entity("Acme", axis(1), source_id="chunk-10<SEP>chunk-1<SEP>chunk-100",
              file_path="a.md<SEP>b.md")
    kg.chunk("chunk-10", "Acme in CRM.", metadata={"product_id": "p-crm"}, file_path="a.md")
    kg.chunk("chunk-1", "Acme in Zap.", metadata={"product_id": "p-zap"}, file_path="b.md")
    engine, _ = await kg.engine(kg_chunk_pick_method="WEIGHT")
    param = QueryParam(mode="local", ll_keywords=["acme"], hl_keywords=[], enable_rerank=False)

    scoped = await engine.query_data("q text", param.model_copy(update={"scope": SCOPE}))
    (entity,) = scoped["data"]["entities"]
    assert entity["source_id"] == "chunk-10"
    assert [c["chunk_id"] for c in scoped["data"]["chunks"]] == ["chunk-10"]
    info = scoped["metadata"]["processing_info"]
    assert info["missing_chunk_count"] == 1 and info["missing_chunk_sample"] == []
    assert info["scope"]["narrowed_source_ids"] == 1

    unscoped = await engine.query_data("q text", param)
    (entity,) = unscoped["data"]["entities"]
    assert entity["source_id"] == "chunk-10<SEP>chunk-1<SEP>chunk-100"
    assert unscoped["metadata"]["processing_info"]["missing_chunk_sample"] == ["chunk-100"]
