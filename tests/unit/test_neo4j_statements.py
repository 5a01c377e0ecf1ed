"""The Neo4j adapter's Cypher is parameterised: no value is ever formatted into a statement.

No server here: a recording driver (it implements ``execute_query`` like
``neo4j.AsyncDriver`` and answers with empty results) captures what the adapter sends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from hexrag.adapters.neo4j import Neo4jGraphStore, cypher
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import Entity, Relation

HOSTILE = [
    "x`) DETACH DELETE n //",
    "' OR 1=1 --",
    '"or 1==1',
    "back\\slash\\",
    "100%_",
    "$items) RETURN 1 //",
    "{entity_id: 'x'}",
    "中文 🚀",
    "}) MATCH (m) DETACH DELETE m WITH 1 AS x MATCH (n {a: 'b",
]


@dataclass
class RecordingDriver:
    """Stands in for ``neo4j.AsyncDriver.execute_query``; records every call."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    async def execute_query(self, query: str, parameters_: Mapping[str, Any] | None = None,
                            **kwargs: Any) -> Any:
        self.calls.append({"query": query, "params": dict(parameters_ or {}), **kwargs})
        return SimpleNamespace(records=[])


def _param_names(text: str) -> set[str]:
    return set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", text))


@pytest.mark.parametrize("statement", cypher.ALL_STATEMENTS, ids=lambda s: s.name)
def test_declared_params_are_exactly_the_ones_used(statement: cypher.Statement) -> None:
    assert _param_names(statement.text) == set(statement.params)


@pytest.mark.parametrize("statement", cypher.ALL_STATEMENTS, ids=lambda s: s.name)
def test_no_literal_values_in_statements(statement: cypher.Statement) -> None:
    # No string literal at all: every value arrives as a parameter.
    assert "'" not in statement.text and '"' not in statement.text
    # The only spliced identifiers are the two placeholders.
    rest = statement.text.replace(cypher.LABEL_PLACEHOLDER, "").replace(
        cypher.NODE_INDEX_PLACEHOLDER, ""
    )
    assert not re.search(r"<[A-Z_]+>", rest) and "`" not in rest


def test_all_statements_are_enumerated() -> None:
    module_statements = {
        v.name for v in vars(cypher).values() if isinstance(v, cypher.Statement)
    }
    listed = cypher.ALL_STATEMENTS + cypher.LIGHTRAG_STATEMENTS
    assert module_statements == {s.name for s in listed}
    assert len({s.name for s in cypher.ALL_STATEMENTS}) == len(cypher.ALL_STATEMENTS)
    assert len({s.name for s in cypher.LIGHTRAG_STATEMENTS}) == len(cypher.LIGHTRAG_STATEMENTS)


@pytest.mark.parametrize(
    "workspace",
    ["", "a`b", "a b", "a:b", "-a", ".a", "é", "a)", "x" * 65, "a\nb", "HexragSequence",
     "ws`) DETACH DELETE n //"],
)
def test_hostile_or_invalid_workspace_rejected(workspace: str) -> None:
    driver: Any = RecordingDriver()
    with pytest.raises(ConfigurationError):
        Neo4jGraphStore(driver, workspace=workspace)
    with pytest.raises(ConfigurationError):
        cypher.render(cypher.GET_NODES, workspace)


def test_label_is_backtick_quoted_and_escaped() -> None:
    assert cypher.backtick("a`b") == "`a``b`"
    text = cypher.render(cypher.GET_NODES, "my-ws.1")
    assert "(n:`my-ws.1` {entity_id: name})" in text
    assert cypher.LABEL_PLACEHOLDER not in text
    index = cypher.render(cypher.CREATE_NODE_INDEX, "my-ws.1")
    assert "`hexrag_entity_id_my_ws_1_" in index
    assert cypher.node_index_name("a.b") != cypher.node_index_name("a-b")


async def _exercise(store: Neo4jGraphStore, names: list[str]) -> None:
    entities = [Entity(name=n, description=n, properties={"note": n}) for n in names]
    relations = [
        Relation(id=f"{a}|{b}", src_id=a, tgt_id=b, description=a + b, source_id=f"{a}<SEP>{b}")
        for a, b in zip(names, reversed(names), strict=True)
    ]
    pairs = [(r.src_id, r.tgt_id) for r in relations]
    await store.upsert_nodes(entities)
    await store.upsert_edges(relations)
    await store.get_nodes(names)
    await store.node_degrees(names)
    await store.edge_degrees(pairs)
    await store.get_node_edges(names)
    await store.get_edges_by_pairs(pairs)
    await store.get_edges_by_chunk_ids(names)
    await store.count_nodes()
    await store.count_edges()
    await store.scan_nodes(names[0], limit=5)
    await store.scan_edges(json.dumps([3, names[0], names[-1]]), limit=5)
    await store.delete_edges([r.id for r in relations])
    await store.delete_nodes(names)
    await store.drop()


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


async def test_hostile_values_only_travel_as_parameters() -> None:
    driver = RecordingDriver()
    store = Neo4jGraphStore(driver, workspace="ws_1")  # type: ignore[arg-type]
    await _exercise(store, HOSTILE)
    allowed = {cypher.render(s, "ws_1") for s in cypher.ALL_STATEMENTS}
    sent = [c["query"] for c in driver.calls]
    assert set(sent) <= allowed, "a statement was built at run time"
    for call in driver.calls:
        for value in HOSTILE:
            assert value not in call["query"]
    carried = {s for call in driver.calls for s in _strings(call["params"])}
    for value in HOSTILE:
        assert value in carried


async def test_one_statement_per_call_and_schema_once() -> None:
    driver = RecordingDriver()
    store = Neo4jGraphStore(driver, workspace="ws_1")  # type: ignore[arg-type]
    await _exercise(store, [f"n{i}" for i in range(50)])
    names = [c["query"] for c in driver.calls]
    schema = [cypher.render(s, "ws_1") for s in cypher.SCHEMA_STATEMENTS]
    assert names[: len(schema)] == schema
    work = names[len(schema):]
    # _exercise makes 15 calls; edge_degrees is answered by one degree query.
    assert len(work) == 15
    assert not set(schema) & set(work)


async def test_routing_and_database() -> None:
    driver = RecordingDriver()
    store = Neo4jGraphStore(driver, workspace="w", database="graphdb",  # type: ignore[arg-type]
                            create_indexes=False)
    await store.get_nodes(["a"])
    await store.upsert_nodes([Entity(name="a")])
    read, write = driver.calls
    assert read["database_"] == write["database_"] == "graphdb"
    assert str(read["routing_"]) in ("r", "RoutingControl.READ")
    assert str(write["routing_"]) in ("w", "RoutingControl.WRITE")


async def test_empty_batches_send_nothing() -> None:
    driver = RecordingDriver()
    store = Neo4jGraphStore(driver, workspace="w")  # type: ignore[arg-type]
    await store.upsert_nodes([])
    await store.upsert_edges([])
    await store.delete_nodes([])
    await store.delete_edges([])
    assert await store.get_nodes([]) == {}
    assert await store.node_degrees([]) == {}
    assert await store.edge_degrees([]) == {}
    assert await store.get_node_edges([]) == {}
    assert await store.get_edges_by_pairs([]) == {}
    assert await store.get_edges_by_chunk_ids([]) == {}
    assert driver.calls == []


async def test_upsert_edges_parameters() -> None:
    driver = RecordingDriver()
    store = Neo4jGraphStore(driver, workspace="w", create_indexes=False)  # type: ignore[arg-type]
    await store.upsert_edges([
        Relation(id="r1", src_id="A", tgt_id="B", source_id="{chunk-1,chunk-10}", weight=None),
        Relation(id="r2", src_id="B", tgt_id="A", source_id="chunk-1<SEP>x"),
        Relation(id="r1", src_id="B", tgt_id="A", description="last wins"),
        Relation(id="r3", src_id="A", tgt_id="C"),
    ])
    (call,) = driver.calls
    assert call["params"]["workspace"] == "w"
    items = call["params"]["items"]
    assert [(i["id"], i["pos"]) for i in items] == [("r1", 0), ("r2", 1), ("r1", 2), ("r3", 3)]
    assert items[0]["props"] == {"source_id": "{chunk-1,chunk-10}",
                                 "chunk_ids": ["chunk-1", "chunk-10"]}
    assert items[1]["props"]["chunk_ids"] == ["chunk-1", "x"]
    assert items[2]["props"] == {"description": "last wins"}
