"""Reranker adapter for Cohere/Jina-style HTTP rerank APIs (httpx; the ``openai`` extra).

Importing this package does no I/O; :class:`HttpReranker` opens its HTTP client on first use.
"""

from __future__ import annotations

from hexrag.adapters.rerank_http.reranker import HttpReranker

__all__ = ["HttpReranker"]
