"""LightRAG's Neo4j layout adapter without a server: label, properties, statements, errors,
configuration. (Against a server: ``tests/contract/test_lightrag_neo4j_contract.py`` with
``NEO4J_URI``; every statement is linted in ``test_neo4j_cypher_lint.py``.)"""

from __future__ import annotations

import socket

import pytest

from hexrag.adapters.neo4j import cypher
from hexrag.adapters.neo4j.lightrag_layout import (
    LightRAGNeo4jGraphStore,
    _edge_props,
    _node_props,
    lightrag_label,
)
from hexrag.config import StackConfig
from hexrag.core.errors import BackendUnavailable
from hexrag.core.model import Entity, Relation


def test_label_is_lightrags() -> None:
    assert lightrag_label("") == "base" and lightrag_label(None) == "base"
    assert lightrag_label(" prod ") == "prod"


def test_properties_are_lightrags() -> None:
    e = Entity(name="Acme", entity_type="org", description="d", source_id=["c1", "c2"],
               file_path="f", created_at=5, properties={"extra": 1})
    assert _node_props(e) == {"extra": 1, "entity_id": "Acme", "entity_type": "org",
                              "description": "d", "file_path": "f", "created_at": 5,
                              "source_id": "c1<SEP>c2"}
    r = Relation(id="x", src_id="a", tgt_id="b", description="d", keywords="k", weight=2.0,
                 source_id="c1<SEP>c2", file_path=None)
    assert _edge_props(r) == {"description": "d", "keywords": "k", "weight": 2.0,
                              "source_id": "c1<SEP>c2"}


def test_statements_render_with_the_label_and_no_connection() -> None:
    from neo4j import AsyncGraphDatabase

    driver = AsyncGraphDatabase.driver("bolt://127.0.0.1:1")
    store = LightRAGNeo4jGraphStore(driver, workspace="")
    text = store._text[cypher.LR_GET_EDGES_BY_CHUNK_IDS.name]
    assert "(s:`base`)" in text and "split(coalesce(r.source_id, ''), '<SEP>')" in text
    assert "<LABEL>" not in " ".join(store._text.values())
    assert store.workspace == "base"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_no_server_is_backend_unavailable() -> None:
    store = LightRAGNeo4jGraphStore.from_url(
        f"bolt://127.0.0.1:{_closed_port()}", workspace="w", user="neo4j", password="x",
        connection_timeout=1.0, max_transaction_retry_time=0.0,
    )
    try:
        with pytest.raises(BackendUnavailable):
            await store.get_node_edges(["a"])
    finally:
        await store.aclose()


def test_a_stack_toml_can_name_lightrags_neo4j_graph() -> None:
    plan = StackConfig(
        layout="lightrag", vector_index="postgresql://u@h/db", chunk_store="redis://h:6379/0",
        graph_store="neo4j://neo4j:pw@h:7687", workspace="prod",
    ).plan()
    assert plan.stores["graph_store"].kind == "neo4j"
