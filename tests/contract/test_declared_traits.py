"""The contract kit holds a vector index to the rules it declares (``traits``), both ways: an
index that declares LightRAG's rules and keeps them passes; one that declares them and does
something else fails, as does one that keeps LightRAG's rules while declaring the port's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from hexrag.adapters.memory import MemoryVectorIndex
from hexrag.domain.records import VectorHit, VectorRecord
from hexrag.domain.scope import QueryScope
from hexrag.ports.vector_index import PORT_TRAITS, VectorIndexTraits
from hexrag.testing import VectorQueryContract, VectorWriteContract

STRICT = replace(PORT_TRAITS, threshold="strict")
BACKEND_TIES = replace(PORT_TRAITS, ties="backend")
NO_METADATA = replace(PORT_TRAITS, metadata_keys=frozenset())


class _Declaring(MemoryVectorIndex):
    """The memory index with declared traits and, optionally, other behaviour."""

    def __init__(self, *args: Any, traits: VectorIndexTraits, strict: bool = False,
                 reverse_ties: bool = False, drop_metadata: bool = False, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._declared = traits
        self._strict, self._reverse_ties, self._drop_metadata = strict, reverse_ties, drop_metadata

    @property
    def traits(self) -> VectorIndexTraits:
        return self._declared

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        if self._drop_metadata:
            records = [replace(r, metadata={}) for r in records]
        await super().upsert(records)

    async def query(self, vector: Any, top_k: int, *,
                    scope: QueryScope | None = None) -> list[VectorHit]:
        hits = await super().query(vector, top_k, scope=scope)
        if self._strict:
            hits = [h for h in hits if h.score > self.cosine_threshold]
        if self._reverse_ties:
            hits = sorted(hits, key=lambda h: (-h.score, [-ord(c) for c in h.id]))
        return hits


def _factory(**options: Any) -> Callable[[str, int, float], _Declaring]:
    def make(namespace: str, dim: int, cosine_threshold: float) -> _Declaring:
        return _Declaring(namespace, dim, cosine_threshold=cosine_threshold, **options)

    return make


async def _run(test: str, **options: Any) -> None:
    kit = type("Kit", (VectorQueryContract, VectorWriteContract), {})()
    await getattr(kit, test)(_factory(**options))


@pytest.mark.parametrize(
    ("test", "options"),
    [
        ("test_threshold_is_inclusive", {"traits": STRICT, "strict": True}),
        ("test_score_is_cosine_higher_is_better", {"traits": STRICT, "strict": True}),
        ("test_ties_broken_by_id_ascending", {"traits": BACKEND_TIES, "reverse_ties": True}),
        ("test_scope_filters_before_ranking", {"traits": NO_METADATA, "drop_metadata": True}),
        ("test_upsert_read_your_writes", {"traits": NO_METADATA, "drop_metadata": True}),
    ],
)
async def test_declared_and_kept_passes(test: str, options: dict[str, Any]) -> None:
    await _run(test, **options)


@pytest.mark.parametrize(
    ("test", "options"),
    [
        # declares LightRAG's strict threshold, keeps the port's inclusive one
        ("test_threshold_is_inclusive", {"traits": STRICT}),
        ("test_score_is_cosine_higher_is_better", {"traits": STRICT}),
        # keeps the strict threshold, declares the port's
        ("test_threshold_is_inclusive", {"traits": PORT_TRAITS, "strict": True}),
        # another tie order than the declared one
        ("test_ties_broken_by_id_ascending", {"traits": PORT_TRAITS, "reverse_ties": True}),
        # declares it keeps metadata, drops it
        ("test_upsert_read_your_writes", {"traits": PORT_TRAITS, "drop_metadata": True}),
        # declares it drops metadata, keeps it
        ("test_upsert_read_your_writes", {"traits": NO_METADATA}),
    ],
)
async def test_declared_but_not_kept_fails(test: str, options: dict[str, Any]) -> None:
    with pytest.raises(AssertionError):
        await _run(test, **options)


def test_an_index_without_traits_is_held_to_the_port() -> None:
    from hexrag.ports.vector_index import traits_of

    assert traits_of(MemoryVectorIndex("chunks", 4)) is PORT_TRAITS
    assert traits_of(_Declaring("chunks", 4, traits=STRICT)).admits(0.5, 0.5) is False
    assert PORT_TRAITS.admits(0.5, 0.5) is True
