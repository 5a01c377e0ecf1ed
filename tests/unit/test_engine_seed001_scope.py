"""Chunk-based relation lookup (seed 001) and the three scope layers, end to end in memory."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.core.model import QueryParam, QueryScope
from tests.unit.kg_builder import KG, axis


def seed001_kg() -> KG:
    """Seed 001: the vector index keeps one relation for the pair, with PostgreSQL array text
    chunk ids; the graph keeps 21 relations between the pair, and only one of them names the
    chunk the vector meant (the others name chunks that are gone from the chunk store)."""
    kg = KG()
    kg.queries = {"integrations": axis(3), "q text": axis(6)}
    kg.entity("Airtable", None, source_id="chunk-a")
    kg.entity("n8n", None, source_id="chunk-b")
    for i in range(21):
        kg.relation(
            "Airtable",
            "n8n",
            axis(3) if i == 7 else None,
            rid=f"rel-{i:02d}",
            weight=1.0,
            description=f"edge {i}",
            source_id="chunk-feb9" if i == 7 else f"chunk-old{i}<SEP>chunk-feb9-1{i}",
            vector_source_id="{chunk-feb9}",
        )
    kg.chunk("chunk-feb9", "Airtable triggers n8n workflows.", file_path="integrations.md")
    kg.chunk("chunk-a", "Airtable is a database.", file_path="a.md")
    kg.chunk("chunk-b", "n8n is a workflow tool.", file_path="b.md")
    return kg


def hybrid(**kw: Any) -> QueryParam:
    return QueryParam(mode="hybrid", hl_keywords=["integrations"], enable_rerank=False, **kw)


async def test_chunk_lookup_finds_the_edge_the_vector_meant() -> None:
    engine, _ = await seed001_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", hybrid())
    rels = data["data"]["relationships"]
    assert [r["description"] for r in rels] == ["edge 7"]
    # the entities' own chunks, and the relation's: the one the vector meant
    assert [c["chunk_id"] for c in data["data"]["chunks"]] == ["chunk-a", "chunk-feb9", "chunk-b"]
    info = data["metadata"]["processing_info"]
    assert info["relation_lookup"] == "chunk"
    assert info["relations_resolved_by_chunk"] == 1
    assert info["relations_resolved_by_pair"] == 0
    assert info["missing_chunk_count"] == 0


async def test_pair_lookup_reproduces_the_zero_chunk_failure_and_says_so() -> None:
    engine, _ = await seed001_kg().engine(
        kg_chunk_pick_method="WEIGHT", relation_lookup={"hybrid": "pair"}
    )
    data = await engine.query_data("q text", hybrid())
    assert [r["description"] for r in data["data"]["relationships"]] == ["edge 0"]
    # the relation's chunks are gone from the store: only the entities' chunks remain
    assert [c["chunk_id"] for c in data["data"]["chunks"]] == ["chunk-a", "chunk-b"]
    info = data["metadata"]["processing_info"]
    assert info["relations_resolved_by_pair"] == 1
    assert info["missing_chunk_count"] == 2  # never a silent zero
    assert info["missing_chunk_sample"] == ["chunk-old0", "chunk-feb9-10"]


async def test_whole_id_matching_does_not_confuse_prefixes() -> None:
    # edges 10..20 name "chunk-feb9-1<i>", which contains "chunk-feb9" as a substring
    engine, _ = await seed001_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", hybrid())
    assert len(data["data"]["relationships"]) == 1


async def test_hit_without_chunk_ids_falls_back_to_pair() -> None:
    kg = seed001_kg()
    kg.relations = [(r, v, "" if v is not None else vs) for r, v, vs in kg.relations]
    engine, _ = await kg.engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", hybrid())
    info = data["metadata"]["processing_info"]
    assert info["relations_resolved_by_pair"] == 1 and info["relations_resolved_by_chunk"] == 0


# ------------------------------------------------------------------------------------- scope


def scoped_kg(assign: list[tuple[str, str]]) -> KG:
    """Entities E0..En, each backed by one chunk whose product/category come from ``assign``;
    entity file_paths encode the same, relations chain the entities."""
    kg = KG()
    kg.queries = {"ents": axis(0), "rels": axis(3), "q text": axis(6)}
    for i, (prod, cat) in enumerate(assign):
        fp = f"product_id:{prod}:category:{cat}:source:s{i}"
        kg.chunk(
            f"c{i}",
            f"text {i}",
            axis(6, 7, 0.1 * i),
            file_path=f"d{i}.md",
            metadata={"product_id": prod, "category_id": cat},
            full_doc_id=f"doc{i % 2}",
        )
        kg.entity(f"E{i}", axis(0, 1, 0.1 * i), source_id=f"c{i}", file_path=fp)
        if i:
            kg.relation(
                f"E{i - 1}",
                f"E{i}",
                axis(3, 4, 0.1 * i),
                weight=1.0,
                source_id=f"c{i - 1}<SEP>c{i}",
                file_path=f"product_id:{assign[i - 1][0]}:category:{assign[i - 1][1]}"
                f":source:x<SEP>{fp}",
            )
    return kg


assignments = st.lists(
    st.tuples(st.sampled_from(["p1", "p2", "p3"]), st.sampled_from(["crm", "erp"])),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    assignments,
    st.lists(st.sampled_from(["p1", "p2", "p3"]), min_size=1, max_size=2),
    st.none() | st.lists(st.sampled_from(["crm", "erp"]), min_size=1, max_size=1),
    st.sampled_from(["local", "global", "hybrid", "mix", "naive"]),
    st.sampled_from(["VECTOR", "WEIGHT"]),
)
async def test_no_out_of_scope_chunk_is_ever_returned(
    assign: list[tuple[str, str]],
    products: list[str],
    categories: list[str] | None,
    mode: str,
    method: str,
) -> None:
    kg = scoped_kg(assign)
    engine, _ = await kg.engine(kg_chunk_pick_method=method)
    scope = QueryScope(product_id=products, category_id=categories)
    data = await engine.query_data(
        "q text",
        QueryParam(
            mode=mode,
            ll_keywords=["ents"],
            hl_keywords=["rels"],  # type: ignore[arg-type]
            enable_rerank=False,
            scope=scope,
        ),
    )
    meta = {c.id: c.metadata for c in kg.chunks}
    for chunk in data.get("data", {}).get("chunks", []):
        m = meta[chunk["chunk_id"]]
        assert m["product_id"] in products
        assert categories is None or m["category_id"] in categories
    # every in-scope entity the search saw is allowed; none out of scope survives the graph layer
    for ent in data.get("data", {}).get("entities", []):
        i = int(ent["entity_name"][1:])
        prod, cat = assign[i]
        assert prod in products and (categories is None or cat in categories)


async def test_scope_top_k_counts_in_scope_hits_and_reports_layers() -> None:
    assign = [("p1", "crm"), ("p2", "crm"), ("p1", "crm"), ("p2", "erp"), ("p1", "erp")]
    engine, _ = await scoped_kg(assign).engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data(
        "q text",
        QueryParam(
            mode="local",
            ll_keywords=["ents"],
            top_k=2,
            enable_rerank=False,
            scope=QueryScope(product_id="p1"),
        ),
    )
    # pre-filtered search: two in-scope entities although the nearest neighbours are mixed
    local = [e["entity_name"] for e in data["data"]["entities"]]
    assert local == ["E0", "E2"]
    info = data["metadata"]["processing_info"]["scope"]
    assert info["applied"] is True and info["filter"] == {"product_id": ("p1",)}
    assert {c["chunk_id"] for c in data["data"]["chunks"]} <= {"c0", "c2", "c4"}


async def test_doc_scope_is_decided_by_chunks() -> None:
    assign = [("p1", "crm"), ("p1", "crm"), ("p1", "crm")]
    engine, _ = await scoped_kg(assign).engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data(
        "q text",
        QueryParam(
            mode="local",
            ll_keywords=["ents"],
            enable_rerank=False,
            scope=QueryScope(doc_ids="doc1"),
        ),
    )
    assert [e["entity_name"] for e in data["data"]["entities"]] == ["E1"]
    assert [c["chunk_id"] for c in data["data"]["chunks"]] == ["c1"]


async def test_scoped_answers_have_their_own_cache_entries() -> None:
    from hexrag.adapters.memory import FakeLLM

    assign = [("p1", "crm"), ("p2", "crm"), ("p1", "erp")]
    engine, _ = await scoped_kg(assign).engine(kg_chunk_pick_method="WEIGHT")
    llm = FakeLLM(["unscoped answer", "p1 answer", "p2 answer"])
    engine.llm = llm

    def param(scope: QueryScope | None) -> QueryParam:
        return QueryParam(mode="hybrid", ll_keywords=["ents"], hl_keywords=["rels"],
                          enable_rerank=False, scope=scope)

    assert await engine.query("q text", param(None)) == "unscoped answer"
    assert await engine.query("q text", param(QueryScope(product_id="p1"))) == "p1 answer"
    assert await engine.query("q text", param(QueryScope(product_id="p2"))) == "p2 answer"
    # each is then served from its own entry
    assert await engine.query("q text", param(QueryScope(product_id="p1"))) == "p1 answer"
    assert await engine.query("q text", param(None)) == "unscoped answer"
    assert len(llm.calls) == 3
