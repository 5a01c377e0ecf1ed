"""The three read-only properties every :class:`~hexrag.ports.VectorIndex` adapter exposes.

Shared by the vector-index adapters of every backend (it imports nothing of hexrag, so any
adapter package may use it without importing another adapter's package).
"""

from __future__ import annotations


class VectorIndexProps:
    """Mixin: ``namespace``, ``dim`` and ``cosine_threshold`` read from ``_namespace``, ``_dim``
    and ``_threshold``, which the adapter's constructor sets."""

    _namespace: str
    _dim: int
    _threshold: float

    @property
    def namespace(self) -> str:
        """``"entities"``, ``"relationships"`` or ``"chunks"``."""
        return self._namespace

    @property
    def dim(self) -> int:
        """The embedding dimension this index stores."""
        return self._dim

    @property
    def cosine_threshold(self) -> float:
        """Minimum cosine similarity of a hit (LightRAG's ``cosine_better_than_threshold``).

        hexrag's layouts keep a hit scoring exactly the threshold (the port's rule); a
        LightRAG layout follows LightRAG's rule for its backend (see the class docstring)."""
        return self._threshold
