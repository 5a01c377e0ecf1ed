"""Reranker port."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hexrag.domain.records import RerankResult


@runtime_checkable
class Reranker(Protocol):
    """Scores documents against a query (Cohere/Jina-style)."""

    async def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]:
        """Results in the provider's order (normally best first), at most ``top_n`` of them.

        Each result's ``index`` points into ``documents``. The engine validates results
        (index in range, finite score) and keeps the provider's order, as LightRAG does.
        """
        ...
