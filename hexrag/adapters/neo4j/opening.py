"""What the Neo4j adapters open (``neo4j://``, ``bolt://`` and their ``+s`` / ``+ssc``
variants; ``/name`` picks the database): the graph, under hexrag's label or a LightRAG 1.5.7
deployment's workspace label (``layout = lightrag``)."""

from __future__ import annotations

from typing import Any

from hexrag.openings import (
    Opening,
    OpeningContext,
    Section,
    redact_url,
    split_credentials,
    split_database,
)

__all__ = ["OPENING"]


async def open_neo4j(ctx: OpeningContext, section: Section, url: str | None) -> Any:
    """The graph at ``url`` (its driver closed with the stack)."""
    assert url is not None
    user, password, uri = split_credentials(url)
    uri, database = split_database(uri)
    store: Any
    if ctx.layout == "lightrag":
        from hexrag.adapters.neo4j.lightrag_layout import LightRAGNeo4jGraphStore

        ws = ctx.lightrag_workspace
        ctx.say(f"LightRAG Neo4JStorage at {redact_url(url)}, workspace {ws!r}")
        store = LightRAGNeo4jGraphStore.from_url(uri, workspace=ws, user=user,
                                                 password=password, database=database)
    else:
        from hexrag.adapters.neo4j import Neo4jGraphStore

        ctx.say(f"Neo4j at {redact_url(url)}")
        store = Neo4jGraphStore.from_url(uri, workspace=ctx.namespace, user=user,
                                         password=password, database=database)
    ctx.close_with("neo4j", store.aclose)
    return store


OPENING = Opening(
    kind="neo4j",
    schemes=("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"),
    roles=("graph_store",),
    sections={"hexrag": ("graph",), "lightrag": ("graph",)},
    open=open_neo4j,
    extra="neo4j",
    requires=("neo4j",),
    examples={"graph_store": "neo4j://host:7687, bolt://host:7687"},
    lightrag_storages={"graph_store": "Neo4JStorage"},
)
