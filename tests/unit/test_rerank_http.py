"""HttpReranker's request/response conversion and configuration (no server)."""

from __future__ import annotations

import pytest

pytest.importorskip("httpx")

from hexrag.adapters.rerank_http import HttpReranker
from hexrag.adapters.rerank_http.reranker import _Malformed, build_payload, parse_results
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import RerankResult


def test_payload_has_the_cohere_jina_shape() -> None:
    assert build_payload("m", "q", ("a", "b"), 1) == {
        "model": "m", "query": "q", "documents": ["a", "b"], "top_n": 1,
    }
    assert build_payload(None, "q", ["a"], None) == {"query": "q", "documents": ["a"]}
    assert build_payload("m", "q", ["a"], None, {"return_documents": False})[
        "return_documents"] is False


def test_results_keep_provider_order_and_top_n() -> None:
    body = {"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.5},
                        {"index": 1, "relevance_score": 0.1}]}
    assert parse_results(body) == [RerankResult(2, 0.9), RerankResult(0, 0.5),
                                   RerankResult(1, 0.1)]
    assert parse_results(body, top_n=2) == [RerankResult(2, 0.9), RerankResult(0, 0.5)]


def test_untypable_results_are_dropped_but_range_is_left_to_the_engine() -> None:
    body = {"results": [
        {"index": 1, "relevance_score": 1},
        {"index": "1", "relevance_score": 0.5},
        {"index": True, "relevance_score": 0.5},
        {"index": 0, "relevance_score": "high"},
        {"index": 0, "relevance_score": False},
        "junk",
        {"index": 99, "relevance_score": 0.2},
    ]}
    assert parse_results(body) == [RerankResult(1, 1.0), RerankResult(99, 0.2)]
    assert isinstance(parse_results(body)[0].relevance_score, float)


@pytest.mark.parametrize("body", [None, [], {"data": []}, {"results": "x"}, "text"])
def test_bodies_without_results_are_malformed(body: object) -> None:
    with pytest.raises(_Malformed):
        parse_results(body)


def test_from_env_uses_lightrag_names() -> None:
    rr = HttpReranker.from_env({
        "RERANK_BINDING_HOST": "http://127.0.0.1:5/v1/rerank", "RERANK_MODEL": "bge",
        "RERANK_BINDING_API_KEY": "k", "RERANK_TIMEOUT": "3",
    })
    assert rr.base_url == "http://127.0.0.1:5/v1/rerank"
    assert rr.model == "bge"


def test_from_env_binding_defaults() -> None:
    rr = HttpReranker.from_env({"RERANK_BINDING": "jina"})
    assert rr.base_url == "https://api.jina.ai/v1/rerank"
    assert rr.model == "jina-reranker-v2-base-multilingual"
    assert HttpReranker.from_env({"RERANK_BINDING": "cohere"}).model == "rerank-v3.5"


def test_from_env_errors_name_the_variables() -> None:
    with pytest.raises(ConfigurationError, match="RERANK_BINDING_HOST"):
        HttpReranker.from_env({})
    with pytest.raises(ConfigurationError, match="RERANK_BINDING"):
        HttpReranker.from_env({"RERANK_BINDING": "aliyun"})
    with pytest.raises(ConfigurationError, match="RERANK_TIMEOUT"):
        HttpReranker.from_env({"RERANK_BINDING_HOST": "http://x/rerank", "RERANK_TIMEOUT": "?"})
    with pytest.raises(ConfigurationError, match="RERANK_BINDING_HOST"):
        HttpReranker("localhost:8000/rerank", model="m")
