"""What the HTTP reranker offers: a Cohere/Jina-style rerank endpoint (``http(s)://...``) or
a provider binding (``cohere``, ``jina``) (httpx; the ``openai`` extra)."""

from __future__ import annotations

from typing import Any

from hexrag.model_openings import ModelContext, ModelOpening

__all__ = ["MODELS"]


def open_reranker(ctx: ModelContext, spec: str) -> Any:
    """:class:`~hexrag.adapters.rerank_http.HttpReranker` at the URL ``spec``, or of the
    binding ``spec`` names (LightRAG's ``RERANK_BINDING``)."""
    from hexrag.adapters.rerank_http import HttpReranker

    env = dict(ctx.env)
    text = spec.strip()
    if "://" in text:
        env["RERANK_BINDING_HOST"] = text
        env.pop("RERANK_BINDING", None)
    else:
        env["RERANK_BINDING"] = text.lower()
    model = HttpReranker.from_env(env)
    ctx.close_with("reranker", model.aclose)
    return model


MODELS = (
    ModelOpening(
        kind="reranker", name="http", aliases=("https", "cohere", "jina"), open=open_reranker,
        extra="openai", requires=("httpx",),
        syntax="an http(s):// rerank endpoint (Cohere/Jina API shape), cohere or jina",
    ),
)
