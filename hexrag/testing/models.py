"""Contract tests for the model ports: :class:`~hexrag.ports.Embedder`,
:class:`~hexrag.ports.Reranker` and :class:`~hexrag.ports.LLM`."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import ClassVar

import numpy as np
import pytest

from hexrag.core.model import RerankResult
from hexrag.core.reference.oracle import cosine
from hexrag.ports import LLM, Embedder, Reranker
from hexrag.testing._guard import ContractGuard
from hexrag.testing.corpus import NASTY_STRINGS

_TEXTS = ["Airtable connects to n8n.", "quantum chromodynamics lecture", "中文内容 🚀", ""]


class EmbedderContract(ContractGuard):
    """Subclass in a ``Test*`` class and override the ``embedder`` fixture."""

    exact_determinism: bool = True
    """The same text always gives bit-identical vectors (else: within ``tolerance``)."""
    tolerance: float = 1e-4
    """Per-component tolerance when ``exact_determinism`` is off or batching changes rounding."""
    embeds_empty_text: bool = True
    """An empty string is a valid input (some providers reject it)."""

    @pytest.fixture
    def embedder(self) -> Embedder:
        """Override: yield an Embedder."""
        raise NotImplementedError("override the embedder fixture")

    def _texts(self) -> list[str]:
        return _TEXTS if self.embeds_empty_text else [t for t in _TEXTS if t]

    async def test_dim_and_model_name(self, embedder: Embedder) -> None:
        """dim is the vector length; model_name is a stable non-empty name."""
        assert isinstance(embedder, Embedder)
        assert isinstance(embedder.dim, int) and embedder.dim > 0
        assert isinstance(embedder.model_name, str) and embedder.model_name
        assert embedder.model_name == embedder.model_name

    async def test_shape_dtype_order(self, embedder: Embedder) -> None:
        """A float32 array of shape (len(texts), dim), one row per text, in order."""
        texts = self._texts()
        out = await embedder.embed(texts)
        assert isinstance(out, np.ndarray)
        assert out.dtype == np.float32
        assert out.shape == (len(texts), embedder.dim)
        for i, t in enumerate(texts):
            single = await embedder.embed([t])
            np.testing.assert_allclose(single[0], out[i], atol=self.tolerance)

    async def test_deterministic(self, embedder: Embedder) -> None:
        """Deterministic for a given model."""
        texts = self._texts()
        a, b = await embedder.embed(texts), await embedder.embed(texts)
        if self.exact_determinism:
            assert np.array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, atol=self.tolerance)

    async def test_empty_input(self, embedder: Embedder) -> None:
        """An empty input gives shape (0, dim)."""
        out = await embedder.embed([])
        assert out.shape == (0, embedder.dim)
        assert out.dtype == np.float32

    async def test_distinguishes_texts(self, embedder: Embedder) -> None:
        """Different texts give different vectors; nasty strings embed fine."""
        out = await embedder.embed(list(NASTY_STRINGS))
        assert np.all(np.isfinite(out))
        assert cosine(out[0], out[1]) < 0.999


class RerankerContract(ContractGuard):
    """Subclass in a ``Test*`` class and override the ``reranker`` fixture."""

    best_first: bool = True
    """Results come best first (non-increasing relevance_score)."""
    judges_relevance: bool = True
    """An obviously relevant document outranks unrelated ones."""

    @pytest.fixture
    def reranker(self) -> Reranker:
        """Override: yield a Reranker."""
        raise NotImplementedError("override the reranker fixture")

    _DOCS: ClassVar[list[str]] = [
        "Bananas are yellow fruit.",
        "n8n integrates with Airtable through the Airtable node.",
        "The weather in Paris is mild.",
        "中文内容 🚀",
        "",
    ]

    async def test_results_point_into_documents(self, reranker: Reranker) -> None:
        """Each result's index points into documents; scores are finite numbers."""
        assert isinstance(reranker, Reranker)
        out = await reranker.rerank("How does n8n use Airtable?", self._DOCS)
        assert out, "no results"
        assert len(out) <= len(self._DOCS)
        for r in out:
            assert isinstance(r, RerankResult)
            assert 0 <= r.index < len(self._DOCS)
            assert math.isfinite(r.relevance_score)

    @pytest.mark.parametrize("top_n", [1, 2, 10])
    async def test_at_most_top_n(self, reranker: Reranker, top_n: int) -> None:
        """At most top_n results."""
        out = await reranker.rerank("n8n Airtable", self._DOCS, top_n=top_n)
        assert 1 <= len(out) <= min(top_n, len(self._DOCS))

    async def test_best_first(self, reranker: Reranker) -> None:
        """Results in the provider's order (normally best first)."""
        if not self.best_first:
            pytest.skip("best_first is off")
        out = await reranker.rerank("n8n Airtable node", self._DOCS)
        scores = [r.relevance_score for r in out]
        assert scores == sorted(scores, reverse=True)

    async def test_relevant_document_wins(self, reranker: Reranker) -> None:
        """Scores documents against the query."""
        if not self.judges_relevance:
            pytest.skip("judges_relevance is off")
        out = await reranker.rerank("How does n8n integrate with Airtable?", self._DOCS)
        best = max(out, key=lambda r: r.relevance_score)
        assert best.index == 1

    async def test_no_documents(self, reranker: Reranker) -> None:
        """No documents, no results."""
        assert await reranker.rerank("anything", []) == []


class LLMContract(ContractGuard):
    """Subclass in a ``Test*`` class and override the ``llm`` fixture."""

    supports_json_mode: bool = True
    """``json_mode=True`` yields a JSON object."""
    deterministic: bool = False
    """The same request gives the same answer (streamed or not)."""

    @pytest.fixture
    def llm(self) -> LLM:
        """Override: yield an LLM."""
        raise NotImplementedError("override the llm fixture")

    async def test_model_name(self, llm: LLM) -> None:
        """The model's name (part of the cache identity)."""
        assert isinstance(llm, LLM)
        assert isinstance(llm.model_name, str) and llm.model_name

    async def test_complete(self, llm: LLM) -> None:
        """The whole answer to prompt, with system prompt and history."""
        out = await llm.complete(
            "Say hello.",
            system_prompt="You are terse.\n---Context---\nhello world",
            history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}],
        )
        assert isinstance(out, str) and out.strip()

    async def test_json_mode(self, llm: LLM) -> None:
        """json_mode asks for a JSON object response."""
        if not self.supports_json_mode:
            pytest.skip("supports_json_mode is off")
        out = await llm.complete(
            'Return {"high_level_keywords": [...], "low_level_keywords": [...]}.\n'
            "User Query: How does n8n use Airtable?",
            json_mode=True,
        )
        assert isinstance(json.loads(out), dict)

    async def test_stream(self, llm: LLM) -> None:
        """The answer as it is generated, piece by piece."""
        it = llm.stream("Say hello.", system_prompt="Be brief.", history=[])
        assert isinstance(it, AsyncIterator)
        pieces = [p async for p in it]
        assert pieces and all(isinstance(p, str) for p in pieces)
        assert "".join(pieces).strip()
        if self.deterministic:
            whole = await llm.complete("Say hello.", system_prompt="Be brief.")
            assert "".join(pieces) == whole
