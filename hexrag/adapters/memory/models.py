"""Deterministic fake models: :class:`HashingEmbedder`, :class:`FakeLLM`, :class:`FakeReranker`.

They are real adapters of their ports (they pass the contract suite) and record their calls, so
tests can assert on what the engine asked for instead of patching.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hexrag.adapters._embedder_props import EmbedderProps
from hexrag.domain.records import RerankResult

_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class HashingEmbedder(EmbedderProps):
    """Feature hashing of lower-cased word unigrams (weight 1) and word bigrams (weight 0.5).

    Words are ``\\w+`` runs (Unicode-aware, so ``中文`` and ``café`` are words). Each feature is
    hashed with blake2b (salted with ``model_name``, never Python's randomised ``hash()``) to a
    bucket and a sign; the sum is L2-normalised to float32. Identical texts give identical
    vectors in every process; texts sharing words get a positive cosine; a text without words
    (``""``, punctuation only) gives the zero vector.
    """

    def __init__(self, dim: int = 384, *, model_name: str = "hexrag-hashing") -> None:
        if dim <= 0:
            raise ValueError("dim must be positive")
        self._dim = int(dim)
        self._model_name = model_name
        self._salt = model_name.encode("utf-8")[:16]
        self.calls: list[list[str]] = []

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, salt=self._salt).digest()
        h = int.from_bytes(digest, "little")
        return (h >> 1) % self._dim, (1.0 if h & 1 else -1.0)

    def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text (not recorded in :attr:`calls`)."""
        v = np.zeros(self._dim, dtype=np.float64)
        words = _words(text)
        for w in words:
            i, s = self._bucket("u:" + w)
            v[i] += s
        for a, b in itertools.pairwise(words):
            i, s = self._bucket(f"b:{a} {b}")
            v[i] += 0.5 * s
        norm = float(np.linalg.norm(v))
        if norm > 0:
            v /= norm
        return v.astype(np.float32)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, one row per text."""
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.embed_one(t)
        return out

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim}, model_name={self._model_name!r})"


@dataclass(frozen=True, slots=True)
class LLMCall:
    """One recorded :class:`FakeLLM` call."""

    prompt: str
    system_prompt: str | None
    history: list[dict[str, Any]] = field(default_factory=list)
    json_mode: bool = False
    stream: bool = False


LLMScript = Callable[[str, str | None, Sequence[Mapping[str, Any]], bool], str]

_USER_QUERY = re.compile(r"^User Query:(.*)$", re.MULTILINE)
_CONTEXT_MARK = "---Context---"


def default_keywords(prompt: str) -> dict[str, list[str]]:
    """The keyword JSON :class:`FakeLLM` answers by default.

    Query = the text after the last ``User Query:`` line (the whole prompt when there is none).
    ``high_level_keywords`` = ``[query]`` (stripped, if non-empty); ``low_level_keywords`` = its
    distinct words of three or more characters, in order, original case.
    """
    found = _USER_QUERY.findall(prompt)
    query = (found[-1] if found else prompt).strip()
    low: list[str] = []
    for w in _WORD.findall(query):
        if len(w) >= 3 and w not in low:
            low.append(w)
    return {"high_level_keywords": [query] if query else [], "low_level_keywords": low}


def default_answer(prompt: str, system_prompt: str | None) -> str:
    """The answer :class:`FakeLLM` gives by default: ``"Answer: "`` + the first non-empty line
    after ``---Context---`` in the system prompt (else the first non-empty prompt line)."""
    text = system_prompt or ""
    if _CONTEXT_MARK in text:
        text = text.split(_CONTEXT_MARK, 1)[1]
    elif _CONTEXT_MARK in prompt:
        text = prompt.split(_CONTEXT_MARK, 1)[1]
    else:
        text = prompt
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"Answer: {line}" if line else "Answer: (no context)"


class FakeLLM:
    """A scripted :class:`~hexrag.ports.LLM` that records every call in :attr:`calls`.

    ``script`` may be a callable ``(prompt, system_prompt, history, json_mode) -> str``, a list
    of strings returned in turn (an exhausted list raises ``IndexError``), or ``None`` for the
    defaults: :func:`default_keywords` as JSON in ``json_mode``, else :func:`default_answer`.
    :meth:`stream` yields the same answer in pieces of a few characters.
    """

    def __init__(
        self,
        script: LLMScript | Sequence[str] | None = None,
        *,
        model_name: str = "fake-llm",
        chunk_size: int = 8,
    ) -> None:
        self._script = script
        self._turn = 0
        self._model_name = model_name
        self._chunk_size = max(1, chunk_size)
        self.calls: list[LLMCall] = []

    @property
    def model_name(self) -> str:
        """The model name."""
        return self._model_name

    def _answer(
        self,
        prompt: str,
        system_prompt: str | None,
        history: Sequence[Mapping[str, Any]],
        json_mode: bool,
        stream: bool,
    ) -> str:
        self.calls.append(
            LLMCall(prompt, system_prompt, [dict(m) for m in history], json_mode, stream)
        )
        script = self._script
        if script is None:
            if json_mode:
                return json.dumps(default_keywords(prompt), ensure_ascii=False)
            return default_answer(prompt, system_prompt)
        if callable(script):
            return script(prompt, system_prompt, history, json_mode)
        answer = script[self._turn]
        self._turn += 1
        return answer

    async def complete(
        self,
        prompt: str,
        *,
        system_prompt: str | None = None,
        history: Sequence[Mapping[str, Any]] = (),
        json_mode: bool = False,
    ) -> str:
        """The whole scripted answer."""
        return self._answer(prompt, system_prompt, history, json_mode, stream=False)

    def stream(
        self,
        prompt: str,
        *,
        system_prompt: str | None = None,
        history: Sequence[Mapping[str, Any]] = (),
    ) -> AsyncIterator[str]:
        """The scripted answer in pieces (the call is recorded when iteration starts)."""

        async def pieces() -> AsyncIterator[str]:
            text = self._answer(prompt, system_prompt, history, False, stream=True)
            for i in range(0, len(text), self._chunk_size):
                yield text[i : i + self._chunk_size]

        return pieces()

    def __repr__(self) -> str:
        return f"FakeLLM(model_name={self._model_name!r}, calls={len(self.calls)})"


@dataclass(frozen=True, slots=True)
class RerankCall:
    """One recorded :class:`FakeReranker` call."""

    query: str
    documents: list[str]
    top_n: int | None


class FakeReranker:
    """A deterministic :class:`~hexrag.ports.Reranker` that records calls in :attr:`calls`.

    Default score: the fraction of the query's distinct lower-cased words found in the document
    (0 for a query without words). ``scorer(query, document) -> float`` replaces it. Results
    are best first, ties by index, at most ``top_n``.
    """

    def __init__(self, scorer: Callable[[str, str], float] | None = None) -> None:
        self._scorer = scorer or self.overlap
        self.calls: list[RerankCall] = []

    @staticmethod
    def overlap(query: str, document: str) -> float:
        """Word-overlap fraction of ``query`` covered by ``document``."""
        q = set(_words(query))
        if not q:
            return 0.0
        return len(q & set(_words(document))) / len(q)

    async def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]:
        """Scored documents best first (ties by index), at most ``top_n``."""
        self.calls.append(RerankCall(query, list(documents), top_n))
        scored = [(float(self._scorer(query, d)), i) for i, d in enumerate(documents)]
        scored.sort(key=lambda t: (-t[0], t[1]))
        if top_n is not None:
            scored = scored[: max(top_n, 0)]
        return [RerankResult(index=i, relevance_score=s) for s, i in scored]

    def __repr__(self) -> str:
        return f"FakeReranker(calls={len(self.calls)})"
