"""Reranker adapter for Cohere/Jina-style HTTP rerank APIs (httpx; the ``openai`` extra).

Importing this package does no I/O and imports no driver (the class loads on first use, so
its declaration, ``opening.py``, reads without httpx); :class:`HttpReranker` opens its HTTP
client on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hexrag.adapters.rerank_http.reranker import HttpReranker

__all__ = ["HttpReranker"]


def __getattr__(name: str) -> Any:
    if name == "HttpReranker":
        from hexrag.adapters.rerank_http.reranker import HttpReranker

        return HttpReranker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
