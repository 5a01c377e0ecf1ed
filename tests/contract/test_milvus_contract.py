"""MilvusVectorIndex against the VectorIndex contract, on Milvus Lite (or HEXRAG_MILVUS_URI)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hexrag.adapters.milvus import MilvusVectorIndex
from hexrag.testing import VectorIndexContract, VectorIndexFactory
from tests.services.milvus import new_collection_name, shared_milvus

pytestmark = pytest.mark.backend("milvus")


class TestMilvusVectorIndexContract(VectorIndexContract):
    """Every capability on: exact FLAT index, explicit schema with every field."""

    @pytest.fixture
    def vector_index_factory(self) -> Iterator[VectorIndexFactory]:
        _, client = shared_milvus()
        created: list[str] = []

        def make(namespace: str, dim: int, cosine_threshold: float) -> Any:
            name = new_collection_name("contract")
            created.append(name)
            return MilvusVectorIndex(
                client,
                collection=name,
                namespace=namespace,  # type: ignore[arg-type]
                dim=dim,
                cosine_threshold=cosine_threshold,
                index_type="FLAT",
            )

        yield make
        for name in created:
            client.drop_collection(name)
