"""The HTTP request model: LightRAG's QueryRequest rules (spec 1.3) and its QueryParam mapping."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from hexrag.api.models import (
    MAX_AGGREGATE_CHARS,
    MAX_QUERY_CHARS,
    QueryDataResponse,
    QueryRequest,
    QueryResponse,
)
from hexrag.core.errors import InvalidScope
from hexrag.core.model import QueryParam, QueryScope

Q = "How do I set up single sign-on?"


def _request(**fields: Any) -> QueryRequest:
    return QueryRequest.model_validate({"query": Q, **fields})


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"query": ""}, "Query must not be empty"),
        ({"query": " \n\t "}, "Query must not be empty"),
        ({"query": "ab"}, "too short"),
        ({"query": "中"}, "too short"),  # one CJK character weighs 2
        ({"query": "x" * (MAX_QUERY_CHARS + 1)}, "at most 65536"),
        ({"mode": "fast"}, "mode"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 1001}, "top_k"),
        ({"chunk_top_k": 0}, "chunk_top_k"),
        ({"max_total_tokens": 1_000_001}, "max_total_tokens"),
        ({"response_type": ""}, "response_type"),
        ({"response_type": "x" * 257}, "response_type"),
        ({"hl_keywords": ["k"] * 65}, "hl_keywords"),
        ({"ll_keywords": ["x" * 513]}, "512"),
        ({"conversation_history": [{"content": "hi"}]}, "role"),
        ({"conversation_history": [{"role": "", "content": "hi"}]}, "role"),
        ({"conversation_history": [{"role": "r" * 65, "content": "hi"}]}, "role"),
        ({"conversation_history": [{"role": "user", "content": 5}]}, "content"),
        ({"conversation_history": [{"role": "user", "content": "x" * 32769}]}, "content"),
        ({"conversation_history": [{"role": "user", "content": "x"}] * 129}, "128"),
        ({"user_prompt": "u" * (MAX_QUERY_CHARS + 1)}, "user_prompt"),
        ({"scope": {"tenant": "t1"}}, "tenant"),
        ({"scope": {"product_id": [1]}}, "product_id"),
        ({"scope": "p1"}, "scope"),
    ],
)
def test_invalid_requests(fields: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        _request(**fields)
    assert fragment in str(info.value)


def test_aggregate_limit_counts_query_user_prompt_and_history_json() -> None:
    history = [{"role": "user", "content": "é"}]  # json.dumps(ensure_ascii=False) counts 1
    base = len('[{"role": "user", "content": "é"}]')
    query = "q" * MAX_QUERY_CHARS
    fits = MAX_AGGREGATE_CHARS - MAX_QUERY_CHARS - base
    _request(query=query, user_prompt="u" * fits, conversation_history=history)
    with pytest.raises(ValidationError, match="exceed"):
        _request(query=query, user_prompt="u" * (fits + 1), conversation_history=history)


def test_valid_edge_values() -> None:
    _request(query="abc")
    _request(query="中文")  # weight 4
    _request(query="a", mode="bypass")  # bypass has no minimum
    _request(top_k=1, chunk_top_k=1000, response_type="x" * 256)
    _request(hl_keywords=["k"] * 64, ll_keywords=["x" * 512])
    _request(conversation_history=[{"role": "user", "content": "hi", "name": "extra keys ok"}])


def test_query_is_stripped() -> None:
    assert _request(query="  hello world  ").query == "hello world"


def test_unset_fields_fall_back_to_query_param_defaults() -> None:
    param = _request().to_query_param(stream=False)
    default = QueryParam()
    assert param.top_k == default.top_k
    assert param.chunk_top_k == default.chunk_top_k
    assert param.response_type == default.response_type
    assert param.mode == "mix"
    assert param.include_references is True  # the API default, unlike QueryParam's
    assert param.stream is False
    assert param.scope is None


def test_set_fields_are_passed_through() -> None:
    req = _request(
        mode="local",
        top_k=7,
        chunk_top_k=3,
        response_type="Bullet Points",
        hl_keywords=["h"],
        ll_keywords=["l"],
        user_prompt="Be brief.",
        conversation_history=[{"role": "user", "content": "hi"}],
        history_turns=2,
        enable_rerank=False,
        include_references=False,
        only_need_context=True,
        stream=False,
        include_chunk_content=True,
        include_progress=True,
    )
    param = req.to_query_param(stream=True)
    assert (param.mode, param.top_k, param.chunk_top_k) == ("local", 7, 3)
    assert param.response_type == "Bullet Points"
    assert (param.hl_keywords, param.ll_keywords) == (["h"], ["l"])
    assert param.user_prompt == "Be brief."
    assert param.conversation_history == [{"role": "user", "content": "hi"}]
    assert param.history_turns == 2
    assert param.enable_rerank is False and param.include_references is False
    assert param.only_need_context is True
    assert param.stream is True  # the endpoint decides, not the body


def test_scope_becomes_a_query_scope() -> None:
    param = _request(scope={"product_id": ["p1", "p2"], "category_id": "crm"}).to_query_param(
        stream=False
    )
    assert param.scope == QueryScope(product_id=["p1", "p2"], category_id="crm")


@pytest.mark.parametrize("scope", [{"product_id": ""}, {"product_id": []}, {"doc_ids": [" "]}])
def test_malformed_scope_values_are_invalid_scope(scope: dict[str, Any]) -> None:
    req = _request(scope=scope)
    with pytest.raises(InvalidScope):
        req.to_query_param(stream=False)


def test_response_models_have_lightrag_fields() -> None:
    assert list(QueryResponse.model_fields) == [
        "response", "references", "response_time", "llm_generated"
    ]
    assert list(QueryDataResponse.model_fields) == ["status", "message", "data", "metadata"]
