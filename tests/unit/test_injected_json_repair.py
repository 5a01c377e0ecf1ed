"""LightRAG's lenient JSON parser is injected into the core (which does not import it)."""

from __future__ import annotations

import json_repair

from hexrag.adapters.memory import FakeLLM
from hexrag.bootstrap import compose_engine
from hexrag.core.query.auto_mode import choose_mode
from hexrag.demo import build_demo_engine

CHATTY = 'Sure! {"mode": "local", "reason": "names a person"} hope it helps'


async def test_auto_mode_reads_a_chatty_answer_with_the_injected_parser() -> None:
    chosen = await choose_mode("Who is Alice?", FakeLLM([CHATTY]), json_repair.loads)
    assert (chosen.mode, chosen.method) == ("local", "llm")


async def test_without_the_parser_a_chatty_answer_falls_back_to_the_heuristic() -> None:
    chosen = await choose_mode("Who is Alice?", FakeLLM([CHATTY]))
    assert chosen.method == "heuristic"
    assert chosen.reason.startswith("model ")  # the model's answer was not used


async def test_the_composition_root_injects_json_repair() -> None:
    demo = await build_demo_engine()
    engine = compose_engine(
        {
            "entities": demo.entities,
            "relationships": demo.relationships,
            "chunks": demo.chunks,
            "graph": demo.graph,
            "chunk_store": demo.chunk_store,
        },
        embedder=demo.engine.embedder,
    )
    assert engine.repair_json is json_repair.loads
