"""hexrag's adapter on LightRAG 1.5.7's own Neo4j layout (``Neo4JStorage``) against the
GraphStore contract. Needs a Neo4j 5 server (``NEO4J_URI``; none can run on hexrag's CI
machines, where these tests skip). The store declares the layout's rules
(:class:`~hexrag.ports.graph_store.GraphStoreTraits`: one undirected relationship per entity
pair under the pair's id, oriented as first written, neighbours in the server's order,
``SET +=`` merging a replacement) and the contract checks what it declares (not yet run
against a server here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from hexrag.testing import GraphStoreContract
from tests.services.neo4j import (  # noqa: F401
    Neo4jTarget,
    neo4j_driver,
    neo4j_target,
    new_workspace,
)

pytestmark = pytest.mark.backend("neo4j")


class TestLightRAGNeo4jGraphStoreContract(GraphStoreContract):
    group_survives_partial_delete = False

    @pytest.fixture
    async def graph_store(
        self, neo4j_driver: Any, neo4j_target: Neo4jTarget  # noqa: F811
    ) -> AsyncIterator[Any]:
        from hexrag.adapters.neo4j.lightrag_layout import LightRAGNeo4jGraphStore

        store = LightRAGNeo4jGraphStore(
            neo4j_driver, workspace=new_workspace(), database=neo4j_target.database
        )
        try:
            yield store
        finally:
            await store.drop()

