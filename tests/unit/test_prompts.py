"""The prompt templates are byte-identical to LightRAG 1.5.7's (token budgets depend on it)."""

from __future__ import annotations

from hashlib import md5

import pytest

from hexrag.core.query import prompts

PINNED = {
    "FAIL_RESPONSE": "910e62ab5e41911b2ccc25d8ee4d0d37",
    "RAG_RESPONSE": "f2d4abefe19872e4c227b1ceb357107c",
    "NAIVE_RAG_RESPONSE": "b38c67747db70814ca5bfa1faaebebfb",
    "KG_QUERY_CONTEXT": "72ff7627c9381c3e278718b0b7f45acb",
    "NAIVE_QUERY_CONTEXT": "07ec11c2b8a31a036b8253862afec107",
    "KEYWORDS_EXTRACTION": "46ebb16365441816005664468270217f",
}
EXAMPLES_JOINED_MD5 = "0f4b3321cca959231c167a023e388b21"

LIGHTRAG_NAMES = {
    "FAIL_RESPONSE": "fail_response",
    "RAG_RESPONSE": "rag_response",
    "NAIVE_RAG_RESPONSE": "naive_rag_response",
    "KG_QUERY_CONTEXT": "kg_query_context",
    "NAIVE_QUERY_CONTEXT": "naive_query_context",
    "KEYWORDS_EXTRACTION": "keywords_extraction",
}


def _md5(text: str) -> str:
    return md5(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("name", sorted(PINNED))
def test_template_md5(name: str) -> None:
    assert _md5(getattr(prompts, name)) == PINNED[name]


def test_keyword_examples_md5() -> None:
    assert _md5("\n".join(prompts.KEYWORDS_EXTRACTION_EXAMPLES)) == EXAMPLES_JOINED_MD5


def test_templates_format_with_lightrags_slots() -> None:
    assert prompts.FAIL_RESPONSE.endswith("[no-context]")
    prompts.RAG_RESPONSE.format(response_type="x", user_prompt="y", context_data="z")
    prompts.NAIVE_RAG_RESPONSE.format(response_type="x", user_prompt="y", content_data="z")
    prompts.KG_QUERY_CONTEXT.format(
        entities_str="", relations_str="", text_chunks_str="", reference_list_str=""
    )
    prompts.NAIVE_QUERY_CONTEXT.format(text_chunks_str="", reference_list_str="")
    prompts.KEYWORDS_EXTRACTION.format(query="q", examples="e", language="English")


@pytest.mark.parity
def test_parity_with_installed_lightrag() -> None:
    lr = pytest.importorskip("lightrag.prompt")
    for ours, theirs in LIGHTRAG_NAMES.items():
        assert getattr(prompts, ours) == lr.PROMPTS[theirs], ours
    assert list(prompts.KEYWORDS_EXTRACTION_EXAMPLES) == lr.PROMPTS["keywords_extraction_examples"]
