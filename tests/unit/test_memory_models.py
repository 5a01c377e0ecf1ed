"""HashingEmbedder, FakeLLM and FakeReranker: determinism, defaults, scripts, recorded calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from hexrag.adapters.memory import (
    FakeLLM,
    FakeReranker,
    HashingEmbedder,
    LLMCall,
    RerankCall,
    default_keywords,
)
from hexrag.core.query.prompts import (
    KEYWORDS_EXTRACTION,
    KEYWORDS_EXTRACTION_EXAMPLES,
    RAG_RESPONSE,
)
from hexrag.core.reference.oracle import cosine

# ---- HashingEmbedder -----------------------------------------------------------------


async def test_embedder_is_deterministic_across_processes() -> None:
    """blake2b, not hash(): another interpreter with another hash seed gives the same bytes."""
    text = "Airtable connects to n8n 中文 café"
    mine = (await HashingEmbedder(dim=32).embed([text]))[0]
    code = (
        "import asyncio, sys; from hexrag.adapters.memory import HashingEmbedder;"
        f"v = asyncio.run(HashingEmbedder(dim=32).embed([{text!r}]))[0];"
        "sys.stdout.write(v.tobytes().hex())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert bytes.fromhex(out.stdout) == mine.tobytes()


async def test_embedder_features_similarity_and_zero() -> None:
    emb = HashingEmbedder(dim=256)
    vecs = await emb.embed(
        ["n8n workflow automation with Airtable", "Airtable workflow automation", "quantum physics",
         "", "!!! ..."]
    )
    assert vecs.dtype == np.float32 and vecs.shape == (5, 256)
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, rtol=1e-6)
    assert cosine(vecs[0], vecs[1]) > 0.5
    assert cosine(vecs[0], vecs[1]) > cosine(vecs[0], vecs[2]) + 0.3
    assert not vecs[3].any() and not vecs[4].any()
    # case-insensitive words; word order matters only through bigrams
    a, b = await emb.embed(["Hello World", "world hello"])
    assert 0.5 < cosine(a, b) < 1.0
    assert emb.calls[0][0] == "n8n workflow automation with Airtable"
    assert len(emb.calls) == 2


async def test_embedder_model_name_salts_the_hash() -> None:
    a = (await HashingEmbedder(dim=64).embed(["same text"]))[0]
    b = (await HashingEmbedder(dim=64, model_name="other").embed(["same text"]))[0]
    assert not np.array_equal(a, b)
    assert HashingEmbedder(dim=64, model_name="other").model_name == "other"
    with pytest.raises(ValueError):
        HashingEmbedder(dim=0)


# ---- FakeLLM -------------------------------------------------------------------------


def _keyword_prompt(query: str) -> str:
    return KEYWORDS_EXTRACTION.format(
        examples="\n".join(KEYWORDS_EXTRACTION_EXAMPLES), language="English", query=query
    )


async def test_fake_llm_default_keywords_from_user_query_line() -> None:
    llm = FakeLLM()
    out = await llm.complete(_keyword_prompt("How does n8n use Airtable?"), json_mode=True)
    assert json.loads(out) == {
        "high_level_keywords": ["How does n8n use Airtable?"],
        "low_level_keywords": ["How", "does", "n8n", "use", "Airtable"],
    }
    assert default_keywords("no marker here") == {
        "high_level_keywords": ["no marker here"],
        "low_level_keywords": ["marker", "here"],
    }
    empty: dict[str, list[str]] = {"high_level_keywords": [], "low_level_keywords": []}
    assert default_keywords("User Query:   ") == empty


async def test_fake_llm_default_answer_echoes_first_context_line() -> None:
    llm = FakeLLM()
    system = RAG_RESPONSE.format(
        response_type="Multiple Paragraphs", user_prompt="n/a", context_data="\nFirst line\nSecond"
    )
    out = await llm.complete("What?", system_prompt=system)
    assert out == "Answer: First line"
    assert await llm.complete("plain prompt\nmore") == "Answer: plain prompt"


async def test_fake_llm_script_list_callable_and_recording() -> None:
    llm = FakeLLM(["one", "two"])
    history = [{"role": "user", "content": "hi"}]
    assert await llm.complete("p1", system_prompt="s", history=history) == "one"
    assert "".join([p async for p in llm.stream("p2")]) == "two"
    with pytest.raises(IndexError):
        await llm.complete("p3")
    assert llm.calls[0] == LLMCall("p1", "s", history, False, False)
    assert llm.calls[1] == LLMCall("p2", None, [], False, True)

    seen: list[tuple[object, ...]] = []

    def script(prompt: str, system: str | None, hist: object, json_mode: bool) -> str:
        seen.append((prompt, system, json_mode))
        return "{}" if json_mode else prompt.upper()

    llm2 = FakeLLM(script, model_name="m", chunk_size=2)
    assert await llm2.complete("abc", json_mode=True) == "{}"
    pieces = [p async for p in llm2.stream("abcde")]
    assert pieces == ["AB", "CD", "E"]
    assert seen == [("abc", None, True), ("abcde", None, False)]
    assert llm2.model_name == "m"


# ---- FakeReranker --------------------------------------------------------------------


async def test_fake_reranker_overlap_order_ties_top_n_and_calls() -> None:
    rr = FakeReranker()
    docs = ["nothing", "n8n and Airtable", "Airtable only", "airtable AND N8N!", ""]
    out = await rr.rerank("n8n Airtable", docs)
    assert [(r.index, r.relevance_score) for r in out] == [
        (1, 1.0), (3, 1.0), (2, 0.5), (0, 0.0), (4, 0.0)
    ]
    assert [r.index for r in await rr.rerank("n8n Airtable", docs, top_n=2)] == [1, 3]
    assert await rr.rerank("n8n", docs, top_n=0) == []
    assert rr.calls[1] == RerankCall("n8n Airtable", docs, 2)
    custom = FakeReranker(lambda q, d: float(len(d)))
    assert [r.index for r in await custom.rerank("q", ["a", "abc", "ab"])] == [1, 2, 0]
    assert FakeReranker.overlap("", "anything") == 0.0
