"""QdrantVectorIndex against the shared VectorIndex contract, on embedded Qdrant (a local
directory, no server): hexrag's layout keeps every sentence of the port; LightRAG 1.5.7's layout
(``QdrantVectorDBStorage``'s collections, point ids and payloads, one workspace per index)
declares where it departs from the port (:class:`~hexrag.ports.vector_index.VectorIndexTraits`:
Qdrant's strict ``score_threshold`` and its order among ties, a payload of the namespace's
fields, ``created_at`` stamped, ``source_id`` joined) and the contract checks what it
declares."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

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
