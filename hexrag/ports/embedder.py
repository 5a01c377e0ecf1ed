"""Embedder port."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors; the same model must have produced the stored vectors."""

    @property
    def dim(self) -> int:
        """Vector length."""
        ...

    @property
    def model_name(self) -> str:
        """A stable name for the model (used in collection names and diagnostics)."""
        ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A float32 array of shape ``(len(texts), dim)``, one row per text, in order.

        Deterministic for a given model. An empty input gives shape ``(0, dim)``.
        """
        ...
