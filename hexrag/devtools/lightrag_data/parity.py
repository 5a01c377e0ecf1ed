"""The parity suite's wiring: its datasets and query counts, the deterministic embedder both
sides use, hexrag settings equal to LightRAG's configuration, and :func:`require_lightrag`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hexrag.devtools.lightrag_data.dataset import DatasetSpec

__all__ = [
    "PARITY_DATASETS", "PARITY_EMBEDDERS", "PARITY_QUERIES", "ParityEmbedder", "parity_embed",
    "parity_embedder", "parity_settings", "require_lightrag",
]


# --------------------------------------------------------------------------------------
# Parity suite wiring
# --------------------------------------------------------------------------------------

PARITY_DATASETS: dict[str, DatasetSpec] = {
    # Zipf hubs, several products per entity, multi-chunk evidence: the main shape.
    "zipf1k": DatasetSpec(n_entities=1000, seed=7),
    # Many small products (entities in > 75 documents: file_path placeholder), short chunks,
    # flatter popularity, more legacy relation vectors.
    "flat300": DatasetSpec(
        n_entities=300,
        seed=17,
        n_products=60,
        chunks_per_entity=1.2,
        relations_per_chunk=8,
        zipf_s=0.7,
        chunk_words=(60, 200),
        legacy_relation_fraction=0.1,
    ),
}
"""Datasets of the parity suite, small enough for CI (2 cores, < 2 minutes)."""

PARITY_DATASETS["ties300"] = DatasetSpec(
    # Exact cosine ties everywhere: duplicated descriptions, templated texts, and the plain
    # hashing embedder (PARITY_EMBEDDERS), whose small-integer vectors tie often. LightRAG's
    # NanoVectorDB order among equal scores must be reproduced, not avoided.
    n_entities=300,
    seed=29,
    n_products=12,
    chunks_per_entity=0.8,
    relations_per_chunk=10,
    chunk_words=(40, 120),
    duplicate_description_fraction=0.3,
)

PARITY_QUERIES: dict[str, int] = {"zipf1k": 9, "flat300": 5, "ties300": 6}
"""Number of :func:`keyword_queries` per parity dataset."""

PARITY_EMBEDDERS: dict[str, str] = {"zipf1k": "jitter", "flat300": "jitter", "ties300": "hashing"}
"""The embedder of each parity dataset: ``jitter`` (:class:`ParityEmbedder`, no exact ties)
or ``hashing`` (hexrag's plain ``HashingEmbedder``: exact ties, the NanoVectorDB order)."""


def require_lightrag() -> None:
    """Skip the calling test module without lightrag-hku (``pip install -e '.[parity]'``).

    With ``HEXRAG_REQUIRE_PARITY=1`` (or ``HEXRAG_REQUIRE_BACKENDS=1``) its absence fails
    instead, so CI cannot silently skip the suite.
    """
    import os

    import pytest

    try:
        import lightrag  # noqa: F401
    except ImportError:
        reason = "the LightRAG parity suite needs lightrag-hku 1.5.7: pip install -e '.[parity]'"
        if "1" in (
            os.environ.get("HEXRAG_REQUIRE_PARITY"),
            os.environ.get("HEXRAG_REQUIRE_BACKENDS"),
        ):
            pytest.fail(reason + " (required by HEXRAG_REQUIRE_PARITY/BACKENDS)", pytrace=False)
        pytest.skip(reason, allow_module_level=True)


class ParityEmbedder:
    """hexrag's ``HashingEmbedder`` plus a small deterministic per-text jitter.

    ``HashingEmbedder`` sums ±1 word features, so templated texts often get exactly the same
    cosine with a query. hexrag reproduces NanoVectorDB's order among equal scores on LightRAG
    working directories (``docs/compat.md``; the ``ties300`` dataset tests exactly that with the
    plain ``HashingEmbedder``); the other datasets use this embedder so that they test the
    pipeline with ties out of the way, as real embedding models produce no exact ties: each
    text's vector gets a Gaussian jitter (about 2% of its length) seeded by the text's MD5,
    then is L2-normalised. Same text, same vector, in every process; both engines use this
    one object.
    """

    def __init__(self, dim: int = 384, *, jitter: float = 0.02) -> None:
        from hexrag.adapters.memory import HashingEmbedder

        self._inner = HashingEmbedder(dim)
        self._jitter = jitter / math.sqrt(dim)
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        """Vector length."""
        return self._inner.dim

    @property
    def model_name(self) -> str:
        """A stable model name."""
        return f"{self._inner.model_name}+jitter"

    def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text (not recorded in :attr:`calls`)."""
        v = self._inner.embed_one(text).astype(np.float64)
        seed = int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "little")
        v += self._jitter * np.random.default_rng(seed).standard_normal(v.shape[0])
        return (v / np.linalg.norm(v)).astype(np.float32)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, one row per text."""
        self.calls.append(list(texts))
        rows = [self.embed_one(t) for t in texts]
        return np.array(rows, dtype=np.float32).reshape(len(rows), self.dim)


_PARITY_EMBEDDER: ParityEmbedder | None = None


def parity_embed(texts: Sequence[str]) -> np.ndarray:
    """:class:`ParityEmbedder` (384-d) as a plain callable, for ``--embedder
    hexrag.devtools.lightrag_data:parity_embed`` (a server process embedding as the tests do)."""
    global _PARITY_EMBEDDER
    if _PARITY_EMBEDDER is None:
        _PARITY_EMBEDDER = ParityEmbedder(384)
    return np.stack([_PARITY_EMBEDDER.embed_one(t) for t in texts]) if texts else np.zeros(
        (0, 384), np.float32
    )


def parity_embedder(dim: int = 384, *, kind: str = "jitter") -> Any:
    """The deterministic embedder both sides use: :class:`ParityEmbedder` (``jitter``) or
    hexrag's plain ``HashingEmbedder`` (``hashing``; see :data:`PARITY_EMBEDDERS`)."""
    if kind == "jitter":
        return ParityEmbedder(dim)
    if kind == "hashing":
        from hexrag.adapters.memory import HashingEmbedder

        return HashingEmbedder(dim)
    raise ValueError(f"unknown parity embedder {kind!r}: jitter or hashing")


def parity_settings(kg_chunk_pick_method: str = "WEIGHT", **overrides: Any) -> Any:
    """hexrag ``EngineSettings`` equal to :func:`open_lightrag`'s LightRAG configuration,
    with hexrag's deliberate improvements switched off (``docs/compat.md``)."""
    from hexrag.core.model import EngineSettings

    fields: dict[str, Any] = {
        "kg_chunk_pick_method": kg_chunk_pick_method,
        "related_chunk_number": 5,
        "cosine_threshold": 0.2,
        "min_rerank_score": 0.0,
        "enable_content_headings": True,
        "summary_language": "English",
        "user_prompt_prefix": "",
        # LightRAG looks relations up by entity pair in every mode.
        "relation_lookup": {"local": "pair", "global": "pair", "hybrid": "pair", "mix": "pair"},
    }
    fields.update(overrides)
    return EngineSettings(**fields)

