"""Neo4jGraphStore against the GraphStore and Stack contracts.

Needs a Neo4j 5 server: ``NEO4J_URI`` (+ ``NEO4J_USER`` / ``NEO4J_PASSWORD``), or a
testcontainers Neo4j when Docker works; otherwise every test skips with the how-to
(Neo4j is exempt from ``HEXRAG_REQUIRE_BACKENDS``: CI cannot run it). Each test uses its own
workspace label and drops it afterwards.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from hexrag.adapters.memory import MemoryChunkStore, MemoryVectorIndex
from hexrag.adapters.neo4j import Neo4jGraphStore
from hexrag.testing import GraphStoreContract, StackContract
from tests.services.neo4j import (  # noqa: F401
    Neo4jTarget,
    neo4j_driver,
    neo4j_store,
    neo4j_target,
)

pytestmark = pytest.mark.backend("neo4j")


class TestNeo4jGraphStoreContract(GraphStoreContract):
    """Every capability on: self-loops, and groups that survive partial deletes."""

    @pytest.fixture
    async def graph_store(self, neo4j_store: Neo4jGraphStore) -> AsyncIterator[Neo4jGraphStore]:  # noqa: F811
        yield neo4j_store


class TestNeo4jStack(StackContract):
    """The engine end to end with the graph in Neo4j (vectors and chunks in memory)."""

    @pytest.fixture
    async def stack(self, neo4j_store: Neo4jGraphStore) -> AsyncIterator[dict[str, Any]]:  # noqa: F811
        yield {
            "entities": MemoryVectorIndex("entities", self.stack_dim, cosine_threshold=0.2),
            "relationships": MemoryVectorIndex(
                "relationships", self.stack_dim, cosine_threshold=0.2
            ),
            "chunks": MemoryVectorIndex("chunks", self.stack_dim, cosine_threshold=0.2),
            "graph": neo4j_store,
            "chunk_store": MemoryChunkStore(),
        }


async def test_workspaces_are_isolated(
    neo4j_driver: Any,  # noqa: F811
    neo4j_target: Neo4jTarget,  # noqa: F811
    neo4j_store: Neo4jGraphStore,  # noqa: F811
) -> None:
    """Two workspaces on one database never see each other's nodes or relations."""
    from hexrag.core.model import Relation
    from tests.services.neo4j import new_workspace

    other = Neo4jGraphStore(neo4j_driver, workspace=new_workspace(),
                            database=neo4j_target.database)
    try:
        rel = Relation(id="same-id", src_id="a", tgt_id="b", source_id="chunk-1")
        await neo4j_store.upsert_edges([rel])
        await other.upsert_edges([rel])
        await other.delete_edges(["same-id"])
        assert await neo4j_store.count_edges() == 1
        assert await other.count_edges() == 0
        assert (await neo4j_store.get_edges_by_chunk_ids(["chunk-1"]))["chunk-1"] == [rel]
        assert await other.get_edges_by_chunk_ids(["chunk-1"]) == {}
    finally:
        await other.drop()
