"""hexrag's adapter on LightRAG 1.5.7's own Neo4j layout (``Neo4JStorage``) against the
GraphStore contract. Needs a Neo4j 5 server (``NEO4J_URI``; none can run on hexrag's CI
machines, where these tests skip). The strict xfails name the layout's limits - one undirected
relationship per entity pair, its id derived from the pair, neighbours in the server's order -
as the PostgreSQL table graph's do (they mirror that list; not yet run against a server here).
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


def _weaken(cls: type, reason: str, *names: str) -> None:
    import functools

    for name in names:
        base = getattr(cls, name)

        @functools.wraps(base)
        async def wrapper(self: Any, *args: Any, __base: Any = base, **kwargs: Any) -> None:
            await __base(self, *args, **kwargs)

        setattr(cls, name, pytest.mark.xfail(strict=True, reason="LightRAG's layout: " + reason)(
            wrapper))


_weaken(
    TestLightRAGNeo4jGraphStoreContract,
    "one undirected relationship per entity pair, its id derived from the pair, neighbours in "
    "the server's order: several relations per pair, relation ids of their own and insertion "
    "order are not kept",
    "test_chunk_index_follows_writes",
    "test_corpus_matches_oracle",
    "test_counts",
    "test_delete_edges",
    "test_delete_nodes",
    "test_edge_degrees",
    "test_get_edges_by_chunk_ids_whole_id",
    "test_get_edges_by_pairs",
    "test_node_degrees",
    "test_node_edges_in_port_edge_order",
    "test_random_workload_matches_oracle",
    "test_relation_moved_to_another_pair",
    "test_relations_round_trip_keep_orientation",
    "test_replaced_relation_keeps_its_place",
    "test_scan_lists_every_node_and_edge",
    "test_scan_resumes_after_writes",
    "test_several_relations_per_pair",
    "test_upsert_edges_idempotent",
    "test_upsert_nodes_idempotent_and_replace_keeps_edges",
)
