"""Neo4jGraphStore's layout strategy without a server: each layout's port calls send its own
statements (a recording driver stands in for ``neo4j.AsyncDriver``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from hexrag.adapters.neo4j import Neo4jGraphStore, cypher
from hexrag.adapters.neo4j.layouts import Neo4jLayout
from hexrag.adapters.neo4j.lightrag_layout import LightRAGNeo4jGraphStore, LightRAGNeo4jLayout
from hexrag.domain.errors import InvalidQuery
from hexrag.domain.records import Entity, Relation


@dataclass
class Driver:
    """Records the statement names sent; answers an edge scan with ``scan`` records."""

    names: dict[str, str] = field(default_factory=dict)
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    scan: list[dict[str, Any]] = field(default_factory=list)

    async def execute_query(self, query: str, parameters_: Mapping[str, Any] | None = None,
                            **kwargs: Any) -> Any:
        name = self.names[query]
        self.sent.append((name, dict(parameters_ or {})))
        return SimpleNamespace(records=self.scan if name.endswith("scan_edges") else [])


def _store(cls: type[Neo4jGraphStore]) -> tuple[Neo4jGraphStore, Driver]:
    driver = Driver()
    store = cls(driver, workspace="ws", create_indexes=False)  # type: ignore[arg-type]
    driver.names = {text: name for name, text in store._text.items()}
    return store, driver


async def _every_write(store: Neo4jGraphStore) -> None:
    await store.upsert_nodes([Entity(name="A"), Entity(name="A", description="d")])
    await store.upsert_edges([Relation(id="r", src_id="A", tgt_id="B")])
    await store.delete_nodes(["A"])
    await store.delete_edges(["rel-x"])
    await store.drop()


async def test_hexrag_layout_sends_hexrag_statements() -> None:
    store, driver = _store(Neo4jGraphStore)
    await _every_write(store)
    assert [n for n, _ in driver.sent] == [
        "upsert_nodes", "upsert_edges", "delete_nodes", "delete_edges", "drop_workspace"]
    assert driver.sent[0][1]["items"][0]["props"]["description"] == "d"  # last duplicate wins
    assert driver.sent[3][1] == {"ids": ["rel-x"]}


async def test_lightrag_layout_sends_lightrags_statements_and_maps_ids_to_pairs() -> None:
    store, driver = _store(LightRAGNeo4jGraphStore)
    assert set(driver.names.values()) == {s.name for s in LightRAGNeo4jLayout.statements.all()}
    driver.scan = [{"src": "A", "tgt": "B", "props": {}}, {"src": "B", "tgt": "C", "props": {}}]
    from hexrag.adapters.neo4j.convert import relation_from_row

    wanted = relation_from_row("A", "B", {}).id
    await _every_write(store)
    await store.delete_edges([wanted])
    names = [n for n, _ in driver.sent]
    assert names == ["lr_upsert_nodes", "lr_upsert_edges", "lr_delete_nodes", "lr_scan_edges",
                     "lr_drop_workspace", "lr_scan_edges", "lr_delete_pairs"]
    assert driver.sent[-1][1] == {"pairs": [{"a": "A", "b": "B"}]}


@pytest.mark.parametrize(("cls", "width"), [(Neo4jGraphStore, 3), (LightRAGNeo4jGraphStore, 2)])
async def test_scan_cursor_is_the_layouts(cls: type[Neo4jGraphStore], width: int) -> None:
    store, driver = _store(cls)
    with pytest.raises(InvalidQuery):
        await store.scan_edges(json.dumps([None] * (5 - width)), limit=2)
    page = await store.scan_edges(json.dumps(["x"] * width), limit=2)
    assert page.items == [] and page.cursor is None
    assert len([k for k in driver.sent[-1][1] if k.startswith("after_")]) == width


def test_the_default_layout_is_hexrags() -> None:
    store, _ = _store(Neo4jGraphStore)
    assert isinstance(store._layout, Neo4jLayout)
    assert {s.name for s in cypher.ALL_STATEMENTS} == set(store._text)
