"""QdrantVectorIndex against the shared VectorIndex contract, on embedded Qdrant (a local
directory, no server): hexrag's layout keeps every sentence of the port; LightRAG 1.5.7's layout
(``QdrantVectorDBStorage``'s collections, point ids and payloads, one workspace per index)
keeps what its layout can, the rest is a strict xfail saying why."""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("qdrant_client", reason="the qdrant extra: pip install 'hexrag[qdrant]'")

from hexrag.adapters.qdrant import (
    HexragLayout,
    LightRAGLayout,
    QdrantVectorIndex,
    connect,
    lightrag_collection_name,
)
from hexrag.testing import VectorIndexContract, VectorIndexFactory


@pytest.fixture(scope="module")
def qdrant_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("qdrant")


class TestQdrantVectorIndexContract(VectorIndexContract):
    """hexrag's layout: every capability on (exact re-scoring, scope as a payload filter)."""

    @pytest.fixture
    async def vector_index_factory(self, tmp_path: Path) -> AsyncIterator[VectorIndexFactory]:
        client = connect(str(tmp_path / "q"))
        made: list[QdrantVectorIndex] = []

        def make(namespace: str, dim: int, cosine_threshold: float) -> QdrantVectorIndex:
            index = QdrantVectorIndex(
                client, collection=f"c{len(made)}_{namespace}", namespace=namespace,  # type: ignore[arg-type]
                dim=dim, cosine_threshold=cosine_threshold, layout=HexragLayout(namespace),
            )
            made.append(index)
            return index

        yield make
        for index in made:
            await index.drop()
        await client.close()


class TestLightRAGQdrantVectorIndexContract(VectorIndexContract):
    """LightRAG's layout: ``lightrag_vdb_<ns>_contract_<dim>d`` shared by fresh workspaces."""

    stores_arbitrary_metadata = False  # LightRAG's fields only
    run_property_tests = False  # the backend's strict threshold and tie order, not the oracle's

    @pytest.fixture
    async def vector_index_factory(self, tmp_path: Path) -> AsyncIterator[VectorIndexFactory]:
        client = connect(str(tmp_path / "q"))
        made: list[QdrantVectorIndex] = []

        def make(namespace: str, dim: int, cosine_threshold: float) -> QdrantVectorIndex:
            ws = "ct" + uuid.uuid4().hex[:12]
            index = QdrantVectorIndex(
                client, collection=lightrag_collection_name(namespace, model_name="contract",
                                                            dim=dim),
                namespace=namespace, dim=dim, cosine_threshold=cosine_threshold,  # type: ignore[arg-type]
                layout=LightRAGLayout(namespace, ws),
            )
            made.append(index)
            return index

        yield make
        for index in made:
            await index.drop()
        await client.close()


def _weaken(cls: type, reason: str, *names: str) -> None:
    """Strict xfail for inherited contract tests the layout cannot keep (a wrapper per class)."""
    for name in names:
        base = getattr(cls, name)

        @functools.wraps(base)
        async def wrapper(self: Any, *args: Any, __base: Any = base, **kwargs: Any) -> None:
            await __base(self, *args, **kwargs)

        setattr(cls, name, pytest.mark.xfail(strict=True, reason="LightRAG's layout: " + reason)(
            wrapper))


_weaken(
    TestLightRAGQdrantVectorIndexContract,
    "a payload holds only its namespace's fields (no src_id/tgt_id on entity points, no "
    "entity_name on relation points), source_id is stored <SEP>-joined and created_at is "
    "stamped with the write time when missing (QdrantVectorDBStorage.upsert), so records do "
    "not round-trip whole",
    "test_upsert_read_your_writes",
    "test_upsert_is_idempotent",
    "test_last_write_wins_across_batches",
    "test_last_write_wins_within_a_batch",
    "test_bad_vector_raises_and_writes_nothing",
    "test_hits_carry_every_stored_field",
    "test_none_fields_stay_none",
    "test_get_in_request_order",
    "test_delete_then_reupsert",
    "test_scan_lists_every_record_with_its_vector",
)
_weaken(
    TestLightRAGQdrantVectorIndexContract,
    "LightRAG's query_points call: Qdrant keeps scores strictly above score_threshold (a score "
    "equal to it, even -1.0, is dropped), float32 scores, and Qdrant's order among equal "
    "scores, not the oracle's inclusive float64 rule",
    "test_query_matches_oracle_for_every_scope",
    "test_score_is_cosine_higher_is_better",
    "test_threshold_is_inclusive",
    "test_ties_broken_by_id_ascending",
)
_weaken(
    TestLightRAGQdrantVectorIndexContract,
    "no metadata in LightRAG's payload: scope is read from file_path / full_doc_id only, "
    "first-class scope metadata is lost",
    "test_scope_filters_before_ranking",
    "test_scope_excludes_only_on_a_known_contradicting_field",
)
