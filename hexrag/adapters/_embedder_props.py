"""The two read-only properties every :class:`~hexrag.ports.Embedder` exposes.

Imports nothing of hexrag, so any embedder (an adapter package's or the top-level
``hexrag.embedders``) may use it without importing another adapter's package.
"""

from __future__ import annotations


class EmbedderProps:
    """Mixin: ``dim`` and ``model_name`` read from ``_dim`` and ``_model_name``, which the
    embedder's constructor sets."""

    _dim: int
    _model_name: str

    @property
    def dim(self) -> int:
        """Vector length."""
        return self._dim

    @property
    def model_name(self) -> str:
        """The model's name (the stack records it; the answer cache keys on it)."""
        return self._model_name
