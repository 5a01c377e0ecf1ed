"""The four stages against the reference spec's rules, on real memory adapters."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hexrag.adapters.memory import FakeLLM, FakeReranker
from hexrag.core.errors import ConfigurationError, InvalidQuery
from hexrag.core.model import QueryParam
from hexrag.core.query import prompts
from tests.unit.kg_builder import KG, axis


def graph_kg() -> KG:
    kg = KG()
    kg.queries = {"a-key": axis(0), "rel-key": axis(3), "q text": axis(6)}
    kg.entity("A", axis(0), entity_type="T", description="about A", source_id="c1<SEP>c2")
    kg.entity("B", axis(0, 1, 0.5), description="about B", source_id="c2<SEP>c3")
    kg.entity("Z", axis(0, 1, 2.0), entity_type="T", source_id="c4")
    for name in ("X", "X1", "X2", "X3", "C", "D"):
        kg.entity(name, None, source_id="c5")
    kg.relation("A", "B", axis(3, 4, 1.0), weight=1.0, description="A-B", source_id="c3<SEP>c6")
    kg.relation("A", "X", weight=3.0, description="A-X", source_id="c6")
    kg.relation("Z", "X1", weight=1.0, source_id="c7")
    kg.relation("Z", "X2", source_id="c7")  # no weight: 1.0
    kg.relation("Z", "X3", weight=1.0, source_id="c8")
    kg.relation("D", "C", axis(3), weight=1.0, description="C-D", source_id="c8")
    for i in range(1, 9):
        kg.chunk(f"c{i}", f"chunk {i}", file_path=f"doc{i % 3}.md")
    return kg


def names(data: dict[str, Any]) -> list[str]:
    return [e["entity_name"] for e in data["data"]["entities"]]


def pairs(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["src_id"], r["tgt_id"]) for r in data["data"]["relationships"]]


def p(mode: str, **kw: Any) -> QueryParam:
    kw.setdefault("enable_rerank", False)
    return QueryParam(mode=mode, **kw)  # type: ignore[arg-type]


async def test_local_keeps_vector_order_and_sorts_relations_by_rank_then_weight() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", p("local", ll_keywords=["a-key"], top_k=3))
    assert names(data) == ["A", "B", "Z"]  # vector order, although Z has the highest degree
    # rank = deg(a)+deg(b): the Z edges have 4, A-X and A-B 3; ties by weight, then discovery
    assert pairs(data) == [("X1", "Z"), ("X2", "Z"), ("X3", "Z"), ("A", "X"), ("A", "B")]
    weights = [r["weight"] for r in data["data"]["relationships"]]
    assert weights == [1.0, 1.0, 1.0, 3.0, 1.0]
    assert data["metadata"]["keywords"] == {"high_level": [], "low_level": ["a-key"]}


async def test_global_keeps_vector_order_and_orientation() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", p("global", hl_keywords=["rel-key"], top_k=5))
    assert pairs(data) == [("D", "C"), ("A", "B")]
    assert names(data) == ["D", "C", "A", "B"]  # src then tgt, first appearance


async def test_hybrid_round_robin_merge() -> None:
    engine, _ = await graph_kg().engine(
        kg_chunk_pick_method="WEIGHT", relation_lookup={"hybrid": "pair"}
    )
    data = await engine.query_data(
        "q text", p("hybrid", ll_keywords=["a-key"], hl_keywords=["rel-key"], top_k=3)
    )
    assert names(data) == ["A", "D", "B", "C", "Z"]
    assert pairs(data) == [
        ("X1", "Z"),
        ("D", "C"),
        ("X2", "Z"),
        ("A", "B"),
        ("X3", "Z"),
        ("A", "X"),
    ]


async def test_local_falls_through_to_relations_without_low_level_keywords() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", p("local", hl_keywords=["rel-key"]))
    assert pairs(data) == [("D", "C"), ("A", "B")]


async def test_one_embedding_call_per_query() -> None:
    engine, embedder = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    await engine.query_data("q text", p("mix", ll_keywords=["a-key"], hl_keywords=["rel-key"]))
    assert embedder.calls == [["q text", "a-key", "rel-key"]]


async def test_entity_and_relation_chunks_weight_method() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT", related_chunk_number=2)
    data = await engine.query_data("q text", p("local", ll_keywords=["a-key"], top_k=2))
    # entities A (c1, c2) and B (c2 claimed by A -> c3): counts c2=2 so A's list is [c2, c1]
    # quotas for 2 entities with max 2: [2, 1] -> c2, c1, c3. Relations then skip taken ids.
    # Relations A-B (c3 taken by B -> c6), A-X (c6 again), Z-edges absent (top_k=2): [c6].
    # Round-robin merge, entity chunk then relation chunk at each position.
    ids = [c["chunk_id"] for c in data["data"]["chunks"]]
    assert ids == ["c2", "c6", "c1", "c3"]
    info = data["metadata"]["processing_info"]
    assert info["merged_chunks_count"] == len(ids)
    assert info["chunk_pick_method"] == "WEIGHT"


async def test_references_by_count_then_first_appearance() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", p("local", ll_keywords=["a-key"]))
    chunks = data["data"]["chunks"]
    counts: dict[str, int] = {}
    for c in chunks:
        counts[c["file_path"]] = counts.get(c["file_path"], 0) + 1
    refs = data["data"]["references"]
    ordered = [r["file_path"] for r in refs]
    first = {c["file_path"]: i for i, c in reversed(list(enumerate(chunks)))}
    assert ordered == sorted(counts, key=lambda f: (-counts[f], first[f]))
    assert [r["reference_id"] for r in refs] == [str(i + 1) for i in range(len(refs))]
    ref_of = {r["file_path"]: r["reference_id"] for r in refs}
    assert all(c["reference_id"] == ref_of[c["file_path"]] for c in chunks)


async def test_context_string_is_lightrag_template() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    param = p("local", ll_keywords=["a-key"], top_k=1, only_need_context=True)
    context = await engine.query("q text", param)
    data = await engine.query_data("q text", p("local", ll_keywords=["a-key"], top_k=1))
    ent_lines = [
        json.dumps(
            {"entity": e["entity_name"], "type": e["entity_type"], "description": e["description"]},
            ensure_ascii=False,
        )
        for e in data["data"]["entities"]
    ]
    assert ent_lines == ['{"entity": "A", "type": "T", "description": "about A"}']
    rel_lines = [
        json.dumps(
            {"entity1": r["src_id"], "entity2": r["tgt_id"], "description": r["description"]},
            ensure_ascii=False,
        )
        for r in data["data"]["relationships"]
    ]
    chunk_lines = [
        json.dumps({"reference_id": c["reference_id"], "content": c["content"]}, ensure_ascii=False)
        for c in data["data"]["chunks"]
    ]
    refs = [f"[{r['reference_id']}] {r['file_path']}" for r in data["data"]["references"]]
    expected = prompts.KG_QUERY_CONTEXT.format(
        entities_str="\n".join(ent_lines),
        relations_str="\n".join(rel_lines),
        text_chunks_str="\n".join(chunk_lines),
        reference_list_str="\n".join(refs),
    )
    assert context == expected
    assert context.startswith('\nKnowledge Graph Data (Entity):\n\n```json\n{"entity": "A"')


async def test_missing_description_and_type_render_unknown() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    ctx = await engine.query("q text", p("local", ll_keywords=["a-key"], only_need_context=True))
    assert '{"entity": "Z", "type": "T", "description": "UNKNOWN"}' in ctx
    assert '{"entity": "B", "type": "UNKNOWN", "description": "about B"}' in ctx
    data = await engine.query_data("q text", p("local", ll_keywords=["a-key"]))
    z = next(e for e in data["data"]["entities"] if e["entity_name"] == "Z")
    assert z["description"] == "" and z["file_path"] == "unknown_source"


async def test_entity_token_budget_keeps_whole_prefix() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    full = await engine.query_data("q text", p("local", ll_keywords=["a-key"]))
    cut = await engine.query_data("q text", p("local", ll_keywords=["a-key"], max_entity_tokens=30))
    assert 0 < len(cut["data"]["entities"]) < len(full["data"]["entities"])
    assert names(cut) == names(full)[: len(names(cut))]
    none = await engine.query_data("q text", p("local", ll_keywords=["a-key"], max_entity_tokens=0))
    assert none["data"]["entities"] == []


async def test_total_budget_exhausted_gives_zero_chunks_but_success() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", p("local", ll_keywords=["a-key"], max_total_tokens=10))
    assert data["status"] == "success"
    assert data["data"]["chunks"] == []
    assert data["metadata"]["processing_info"]["final_chunks_count"] == 0


async def test_chunk_top_k_caps_final_chunks() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data(
        "q text", p("hybrid", ll_keywords=["a-key"], hl_keywords=["rel-key"], chunk_top_k=2)
    )
    assert len(data["data"]["chunks"]) == 2


async def test_rerank_keeps_provider_order_and_min_score() -> None:
    def scorer(query: str, doc: str) -> float:
        return {"chunk 3": 0.9, "chunk 1": 0.8}.get(doc, 0.1)

    reranker = FakeReranker(scorer)
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT", min_rerank_score=0.5)
    engine.reranker = reranker
    data = await engine.query_data("q text", p("local", ll_keywords=["a-key"], enable_rerank=True))
    assert [c["content"] for c in data["data"]["chunks"]] == ["chunk 3", "chunk 1"]
    assert reranker.calls and reranker.calls[0].query == "q text"


async def test_no_hits_is_a_failure_with_reasons() -> None:
    kg = KG()
    kg.queries = {"zz": axis(5)}
    engine, _ = await kg.engine()
    data = await engine.query_data("q text", p("local", ll_keywords=["zz"]))
    assert data["status"] == "failure"
    assert data["message"] == "Query returned no results"
    assert data["metadata"]["failure_reason"] == "no_results"


async def test_bad_queries_are_typed_errors() -> None:
    engine, _ = await graph_kg().engine()
    with pytest.raises(InvalidQuery):
        await engine.query_data("   ", p("local"))
    with pytest.raises(InvalidQuery):
        await engine.query_data("ab", p("local"))
    with pytest.raises(InvalidQuery):
        QueryParam(mode="sideways")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        await engine.query("q text", p("local", ll_keywords=["a-key"]))  # no LLM configured


async def test_prompt_and_answer_paths() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    llm = FakeLLM(["The answer."])
    engine.llm = llm
    param = p("local", ll_keywords=["a-key"], user_prompt="Be brief.")
    prompt = await engine.query("q text", param.model_copy(update={"only_need_prompt": True}))
    assert isinstance(prompt, str)
    assert (
        "6. Additional Instructions: \n\nBe brief.\n\n\n---Context---\n\n\nKnowledge Graph"
        in prompt
    )
    assert prompt.endswith("```\n\n\n\n\n---User Query---\n\nq text")
    answer = await engine.query("q text", param)
    assert answer == "The answer."
    assert llm.calls[-1].prompt == "q text"
    assert llm.calls[-1].system_prompt is not None and "Be brief." in llm.calls[-1].system_prompt
    # second call is served from the answer cache
    again = await engine.query("q text", param)
    assert again == "The answer." and len(llm.calls) == 1


async def test_streaming_answer() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    engine.llm = FakeLLM(["streamed answer text"])
    it = await engine.query("q text", p("local", ll_keywords=["a-key"], stream=True))
    assert not isinstance(it, str)
    pieces = [piece async for piece in it]
    assert "".join(pieces) == "streamed answer text" and len(pieces) > 1


async def test_bypass_and_naive() -> None:
    kg = graph_kg()
    kg.chunk_vectors = {"c1": axis(6), "c2": axis(6, 7, 0.3), "c3": axis(7)}
    engine, _ = await kg.engine()
    data = await engine.query_data("q text", p("bypass"))
    assert data["status"] == "success" and data["data"]["chunks"] == []
    naive = await engine.query_data("q text", p("naive", chunk_top_k=2))
    assert [c["chunk_id"] for c in naive["data"]["chunks"]] == ["c1", "c2"]
    info = naive["metadata"]["processing_info"]
    assert info["total_chunks_found"] == 2 and info["final_chunks_count"] == 2
    assert naive["metadata"]["keywords"] == {"high_level": [], "low_level": []}


async def test_mix_puts_vector_chunks_first() -> None:
    kg = graph_kg()
    kg.chunk_vectors = {"c8": axis(6)}
    engine, _ = await kg.engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("q text", p("mix", ll_keywords=["a-key"]))
    assert data["data"]["chunks"][0]["chunk_id"] == "c8"


async def test_auto_mode_reports_its_choice() -> None:
    engine, _ = await graph_kg().engine(kg_chunk_pick_method="WEIGHT")
    data = await engine.query_data("Give an overview of the main themes", p("auto"))
    sel = data["metadata"]["mode_selection"]
    assert sel["requested"] == "auto" and sel["method"] == "heuristic"
    assert sel["chosen"] == "global"
    engine.llm = FakeLLM(['{"mode": "local", "reason": "names A"}'])
    data = await engine.query_data("q text about A", p("auto", ll_keywords=["a-key"]))
    assert data["metadata"]["mode_selection"]["chosen"] == "local"
    assert data["metadata"]["mode_selection"]["method"] == "llm"
    assert data["metadata"]["query_mode"] == "local"
