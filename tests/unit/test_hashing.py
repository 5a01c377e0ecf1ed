"""Cache hashes and keys: LightRAG 1.5.7's exact values (spec Appendix A.1)."""

from __future__ import annotations

from hashlib import md5

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.core.hashing import (
    ANSWER_CACHE_VERSION,
    LLM_IDENTITY_MARKER,
    answer_cache_key,
    compute_args_hash,
    keyword_cache_key,
    llm_cache_identity,
    serialize_identity,
)

QUERY = "Who is Alice and what does Acme Corp do?"


def _identity(role: str) -> str:
    return serialize_identity(
        llm_cache_identity(role, binding=None, model="gpt-4o-mini", host=None)
    )


def test_identity_serialisation() -> None:
    assert _identity("keyword") == (
        '{"binding":null,"host":null,"model":"gpt-4o-mini","role":"keyword"}'
    )
    assert serialize_identity(None) == ""
    ident = llm_cache_identity("query", binding="openai", model="模型", host="http://h:1")
    assert serialize_identity(ident) == (
        '{"binding":"openai","host":"http://h:1","model":"模型","role":"query"}'
    )


def test_keyword_cache_key_vector() -> None:
    assert keyword_cache_key("mix", QUERY, "English", _identity("keyword")) == (
        "mix:keywords:7b97002ce1daf718da118c97a14b4405"
    )
    # The mode is part of the key and of the hash.
    other = keyword_cache_key("hybrid", QUERY, "English", _identity("keyword"))
    assert other.startswith("hybrid:keywords:")
    assert other[-32:] != "7b97002ce1daf718da118c97a14b4405"


def _vector_key(**over: object) -> str:
    kwargs: dict[str, object] = dict(
        mode="mix",
        query=QUERY,
        response_type="Multiple Paragraphs",
        top_k=40,
        chunk_top_k=20,
        max_entity_tokens=6000,
        max_relation_tokens=8000,
        max_total_tokens=30000,
        hl_keywords_str="company alliances, technology",
        ll_keywords_str="Alice, Acme Corp",
        user_prompt_text="",
        enable_rerank=False,
        enable_content_headings=True,
        identity_json=_identity("query"),
    )
    kwargs.update(over)
    return answer_cache_key(**kwargs)  # type: ignore[arg-type]


def test_answer_cache_key_vector() -> None:
    assert _vector_key() == "mix:query:65bd79062dcee9afb4351791cff7cc8b"
    assert _vector_key(extra=()) == "mix:query:65bd79062dcee9afb4351791cff7cc8b"


def test_answer_cache_key_extra_is_appended() -> None:
    args = [
        ANSWER_CACHE_VERSION, "mix", QUERY, "Multiple Paragraphs", 40, 20, 6000, 8000, 30000,
        "company alliances, technology", "Alice, Acme Corp", "", False, True,
        LLM_IDENTITY_MARKER, _identity("query"), "corpus-v7",
    ]
    assert _vector_key(extra=("corpus-v7",)) == f"mix:query:{compute_args_hash(*args)}"
    assert _vector_key(extra=("corpus-v7",)) != _vector_key(extra=("corpus-v8",))


def test_naive_key_omits_keywords() -> None:
    ident = _identity("query")
    expected = compute_args_hash(
        ANSWER_CACHE_VERSION, "naive", QUERY, None, 40, 20, 6000, 8000, 30000,
        "Be brief.", True, False, LLM_IDENTITY_MARKER, ident,
    )
    got = answer_cache_key(
        mode="naive", query=QUERY, response_type=None, top_k=40, chunk_top_k=20,
        max_entity_tokens=6000, max_relation_tokens=8000, max_total_tokens=30000,
        hl_keywords_str=None, ll_keywords_str=None, user_prompt_text="Be brief.",
        enable_rerank=True, enable_content_headings=False, identity_json=ident,
    )
    assert got == f"naive:query:{expected}"
    # Empty keyword strings are not the same as omitted ones.
    assert got != answer_cache_key(
        mode="naive", query=QUERY, response_type=None, top_k=40, chunk_top_k=20,
        max_entity_tokens=6000, max_relation_tokens=8000, max_total_tokens=30000,
        hl_keywords_str="", ll_keywords_str="", user_prompt_text="Be brief.",
        enable_rerank=True, enable_content_headings=False, identity_json=ident,
    )


def test_compute_args_hash_forms() -> None:
    assert compute_args_hash("abc") == md5(b"abc").hexdigest()
    assert compute_args_hash() == md5(b"").hexdigest()
    assert compute_args_hash(5) == md5(b"5").hexdigest()
    assert compute_args_hash("ab", "c") == md5(b"2:ab1:c").hexdigest()
    assert compute_args_hash("abc", "x") != compute_args_hash("ab", "cx")
    assert compute_args_hash(True, None, 1.5) == md5(b"4:True4:None3:1.5").hexdigest()
    # Lengths count code points, not bytes.
    assert compute_args_hash("中文", "😀") == md5("2:中文1:😀".encode()).hexdigest()
    # Lone surrogates are replaced, not an error.
    assert compute_args_hash("a\ud800", "b") == md5(b"2:a?1:b").hexdigest()


@pytest.mark.parity
@settings(max_examples=60, deadline=None)
@given(args=st.lists(st.one_of(st.text(), st.integers(), st.booleans(), st.none()), max_size=5))
def test_parity_with_installed_lightrag(args: list[object]) -> None:
    lr_utils = pytest.importorskip("lightrag.utils")
    assert compute_args_hash(*args) == lr_utils.compute_args_hash(*args)
    ident = {"role": "q", "binding": None, "model": str(args), "host": None}
    assert serialize_identity(ident) == lr_utils.serialize_llm_cache_identity(ident)
