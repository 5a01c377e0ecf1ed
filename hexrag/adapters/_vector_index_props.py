"""What every :class:`~hexrag.ports.VectorIndex` adapter repeats, written once: the three
read-only properties, the ``query`` template, and the properties of an index in a layout.

Shared by the vector-index adapters of every backend (it imports nothing of hexrag at run time,
so any adapter package may use it without importing another adapter's package).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from hexrag.domain.records import VectorHit
    from hexrag.domain.scope import QueryScope
    from hexrag.ports.vector_index import VectorIndexTraits


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


class QueryTemplate(VectorIndexProps):
    """Mixin: the port's ``query`` as one template - the query vector checked by
    :meth:`_query_vector`, ``[]`` for ``top_k < 1``, else :meth:`_top_hits` - so an adapter
    writes only its own checking and ranking."""

    def _query_vector(self, vector: np.ndarray | Sequence[float]) -> np.ndarray:
        """``vector`` as the 1-D float32 array of length ``dim`` the search sends, else
        ``ConfigurationError``."""
        raise NotImplementedError

    async def _top_hits(
        self, q: np.ndarray, top_k: int, scope: QueryScope | None
    ) -> list[VectorHit]:
        """The ``top_k`` hits for the checked query vector (``top_k >= 1``)."""
        raise NotImplementedError

    async def query(
        self,
        vector: np.ndarray | Sequence[float],
        top_k: int,
        *,
        scope: QueryScope | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` records most similar to ``vector`` (see
        :meth:`hexrag.ports.VectorIndex.query`, and the index's ``traits`` for where its
        layout departs from the port's rules)."""
        q = self._query_vector(vector)
        if top_k < 1:
            return []
        return await self._top_hits(q, top_k, scope)


class _Layout(Protocol):
    exact_ranking: bool

    def traits(self) -> VectorIndexTraits: ...


L = TypeVar("L", bound=_Layout)


class LayoutProps(QueryTemplate, Generic[L]):
    """Mixin for an index on one collection in a layout strategy: ``collection``, ``layout``
    and ``traits`` (the layout's declared rules) read from ``_collection`` and ``_layout``."""

    _collection: str
    _layout: L

    if TYPE_CHECKING:  # the adapter's

        async def _ensure(self) -> None: ...

        async def _exact(
            self, q: np.ndarray, top_k: int, scope: QueryScope | None
        ) -> list[VectorHit]: ...

        async def _as_backend(
            self, q: np.ndarray, top_k: int, scope: QueryScope | None
        ) -> list[VectorHit]: ...

    async def _top_hits(
        self, q: np.ndarray, top_k: int, scope: QueryScope | None
    ) -> list[VectorHit]:
        """The collection made ready, then the layout's ranking: the port's (``_exact``) or
        the backend's own call, as a LightRAG deployment ranks (``_as_backend``)."""
        await self._ensure()
        if self._layout.exact_ranking:
            return await self._exact(q, top_k, scope)
        return await self._as_backend(q, top_k, scope)

    @property
    def collection(self) -> str:
        """The collection name."""
        return self._collection

    @property
    def layout(self) -> L:
        """The layout strategy."""
        return self._layout

    @property
    def traits(self) -> VectorIndexTraits:
        """The rules this index declares (its layout's;
        :class:`~hexrag.ports.vector_index.VectorIndexTraits`)."""
        return self._layout.traits()
