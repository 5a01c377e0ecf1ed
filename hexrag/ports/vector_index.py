"""VectorIndex port: one collection of embedded records (entities, relationships or chunks).

Declared departures
===================

The port's rules (inclusive threshold, ties by id, every field kept) are what hexrag's own
layouts keep. A layout that serves another system's data in place - LightRAG's tables and
collections - keeps *that* system's rules instead, and says so: it exposes a
:class:`VectorIndexTraits` record as its ``traits`` attribute (:class:`DeclaresTraits`). An
index without one keeps the port's rules (:func:`traits_of` gives the defaults). The contract
suite (:mod:`hexrag.testing.vector_index`) reads the record and asserts the declared behaviour,
so a layout still fails when it does anything other than what it declares:

* ``threshold``: ``"inclusive"`` keeps ``score >= cosine_threshold`` (the port's rule);
  ``"strict"`` keeps ``score > cosine_threshold`` (LightRAG's ``cosine_better_than_threshold``
  on every backend: pgvector's ``distance < 1 - threshold``, Milvus' ``radius``, Qdrant's
  ``score_threshold``).
* ``ties``: ``"id"`` breaks equal scores by id, ascending (the port's rule); ``"backend"``
  keeps the order the backend returns equal scores in (best first still holds; which of the
  tied records make a ``top_k`` cut is the backend's choice).
* ``fields``: the :class:`~hexrag.domain.records.VectorRecord` fields (besides ``id`` and
  ``vector``) the layout stores; any other field reads back ``None``. ``None``: every field.
* ``metadata_keys``: the ``metadata`` keys the layout stores (``None``: every key; an empty set:
  none, so scope is read from ``file_path`` / ``full_doc_id`` only).
* ``source_id_as_written``: ``False`` when ``source_id`` reads back as its chunk ids in the
  layout's own form (LightRAG's ``<SEP>``-joined string) rather than the form written.
* ``stamps_created_at``: a record written without ``created_at`` reads back with the write
  time (epoch seconds), as LightRAG's Milvus and Qdrant storages stamp it.
* ``keeps_first_created_at``: a replaced record keeps the ``created_at`` of its first write
  (LightRAG's PostgreSQL upsert leaves ``create_time`` alone and sets ``update_time``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from hexrag.domain.records import VectorHit, VectorRecord
from hexrag.domain.scope import QueryScope


@runtime_checkable
class VectorIndex(Protocol):
    """A cosine-similarity index over :class:`~hexrag.core.model.VectorRecord` rows.

    One instance serves one namespace (``"entities"``, ``"relationships"`` or ``"chunks"``).
    Every method is one round trip to the backend, whatever the number of ids.
    """

    @property
    def namespace(self) -> str:
        """``"entities"``, ``"relationships"`` or ``"chunks"``."""
        ...

    @property
    def dim(self) -> int:
        """The embedding dimension this index stores."""
        ...

    @property
    def cosine_threshold(self) -> float:
        """Minimum cosine similarity of a hit (LightRAG's ``cosine_better_than_threshold``)."""
        ...

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id (idempotent; the last write of an id wins).

        Every record must carry a vector of length :attr:`dim`; otherwise
        :class:`~hexrag.core.errors.ConfigurationError` is raised and nothing is written.
        An upserted record is visible to every later call (read-your-writes).
        """
        ...

    async def query(
        self,
        vector: np.ndarray | Sequence[float],
        top_k: int,
        *,
        scope: QueryScope | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` records most similar to ``vector``, best first.

        * ``score`` is the cosine similarity (higher is better, in [-1, 1]); the query vector
          need not be normalised.
        * Only records with ``score >= cosine_threshold`` are returned (so fewer than
          ``top_k`` may come back; an empty index gives ``[]``), unless the index declares
          LightRAG's strict rule (:class:`VectorIndexTraits`).
        * Ties on score are broken by id, ascending (unless declared ``ties="backend"``).
        * ``scope`` pre-filters **before** ranking, so ``top_k`` counts admitted records:
          a record is excluded only when a scope field it knows (first-class metadata, else
          its encoded ``file_path``) contradicts the scope; see
          :func:`hexrag.core.scope.prefilter_match`. ``None`` or an empty scope filters nothing.
        * Returned records carry every stored field except that ``vector`` may be ``None``.
        """
        ...

    async def get(self, ids: Sequence[str]) -> list[VectorRecord | None]:
        """Records by id, in request order, ``None`` for a missing id (no exception)."""
        ...

    async def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors (float32, 1-D) of the ids found: a vector with the direction of the
        one upserted (it may be normalised), up to storage precision.

        Missing ids are absent from the result. Duplicate ids appear once.
        """
        ...

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove records by id; unknown ids are ignored."""
        ...

    async def count(self) -> int:
        """Number of stored records."""
        ...


@runtime_checkable
class ScoresIds(Protocol):
    """Optional :class:`VectorIndex` capability: score stored vectors by id, inside the index.

    LightRAG's VECTOR chunk picking ranks a few thousand candidate chunks by cosine with the
    query. Through :meth:`VectorIndex.get_vectors` that means shipping every candidate vector
    to the core; an index that keeps its vectors at hand (in memory, or a database that can
    compute the cosine) answers with one array instead. The core uses this method when the
    chunks index has it and falls back to :meth:`VectorIndex.get_vectors` otherwise
    (:func:`hexrag.core.query.pick.score_ids`), so implementing it is never required.
    """

    async def score_ids(self, ids: Sequence[str], vector: np.ndarray) -> np.ndarray:
        """Cosine similarity of each id's stored vector with ``vector``, in one round trip.

        * A float64 array aligned with ``ids`` (duplicates scored each time).
        * The stored vector is the one :meth:`VectorIndex.get_vectors` returns, and the score
          is :func:`hexrag.core.query.pick.cosine_scores` of it (float64 arithmetic): the same
          numbers as fetching the vectors and scoring them in the core.
        * ``NaN`` for an id without a stored vector (missing id).
        """
        ...


@dataclass(frozen=True, slots=True)
class VectorIndexTraits:
    """What a vector index declares about its rules (see the module docstring); the defaults
    are the port's own rules."""

    threshold: Literal["inclusive", "strict"] = "inclusive"
    ties: Literal["id", "backend"] = "id"
    fields: frozenset[str] | None = None
    metadata_keys: frozenset[str] | None = None
    source_id_as_written: bool = True
    stamps_created_at: bool = False
    keeps_first_created_at: bool = False

    def admits(self, score: float, threshold: float) -> bool:
        """Whether a hit scoring ``score`` passes ``threshold`` under the declared rule."""
        return score > threshold if self.threshold == "strict" else score >= threshold


#: The port's own rules (what an index without a ``traits`` attribute keeps).
PORT_TRAITS = VectorIndexTraits()


@runtime_checkable
class DeclaresTraits(Protocol):
    """Optional :class:`VectorIndex` capability: the index declares where it departs from the
    port's rules (a LightRAG layout); see the module docstring."""

    @property
    def traits(self) -> VectorIndexTraits:
        """The declared rules of this index."""
        ...


def traits_of(index: object) -> VectorIndexTraits:
    """``index.traits`` when the index declares them, else :data:`PORT_TRAITS`."""
    traits = getattr(index, "traits", None)
    return traits if isinstance(traits, VectorIndexTraits) else PORT_TRAITS
