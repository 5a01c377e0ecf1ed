"""Neo4j record <-> domain conversion and edge ordering (plain dicts shaped like records)."""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.adapters.neo4j.convert import (
    edge_items,
    edge_row,
    entity_from_props,
    node_item,
    order_by_insertion,
    order_node_edges,
    order_pair,
    relation_from_row,
)
from hexrag.core.errors import ConfigurationError
from hexrag.core.ingest.ids import relation_id
from hexrag.core.model import Entity, Relation
from hexrag.testing import corpus


def _record(element_id: str, src: str, tgt: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"element_id": element_id, "src": src, "tgt": tgt, "props": props}


def test_entities_round_trip_through_node_properties() -> None:
    for entity in corpus.entities():
        item = node_item(entity)
        assert item["name"] == entity.name
        assert item["props"]["entity_id"] == entity.name
        assert None not in item["props"].values()  # Neo4j stores no nulls
        assert entity_from_props(entity.name, item["props"]) == entity


def test_node_item_refuses_entity_id_property() -> None:
    with pytest.raises(ConfigurationError):
        node_item(Entity(name="a", properties={"entity_id": "b"}))


def test_entity_from_lightrag_node() -> None:
    props = {
        "entity_id": "Airtable",
        "entity_type": "organization",
        "description": "d",
        "source_id": "chunk-1<SEP>chunk-2",
        "file_path": "f.md",
        "created_at": 1700000000,
        "truncate": "",
    }
    assert entity_from_props("Airtable", props) == Entity(
        name="Airtable",
        entity_type="organization",
        description="d",
        source_id="chunk-1<SEP>chunk-2",
        file_path="f.md",
        created_at=1700000000,
        properties={"truncate": ""},
    )


def test_relations_round_trip_through_relationship_properties() -> None:
    rels = corpus.relations()
    items = edge_items(rels)
    assert [i["id"] for i in items] == [r.id for r in rels]
    for item, rel in zip(items, rels, strict=True):
        props = {**item["props"], "relation_id": item["id"], "hexrag_seq": 7}
        assert relation_from_row(rel.src_id, rel.tgt_id, props) == rel


def test_chunk_ids_are_whole_parsed_ids() -> None:
    items = edge_items(corpus.seed001_relations())
    by_id = {i["id"]: i["props"].get("chunk_ids") for i in items}
    assert by_id["rel-an-01"] == ["chunk-an-01", "chunk-1"]
    assert by_id["rel-an-02"] == ["chunk-an-02", "chunk-10"]
    assert by_id["rel-an-03"] == ["chunk-an-03", "chunk a"]
    assert by_id["rel-an-04"] is None  # no source_id: no property
    assert by_id["rel-an-05"] == ["xchunk-1"]
    assert by_id["rel-an-13"] == [corpus.SEED_001_CHUNK, "chunk-ops-10"]
    assert corpus.SEED_001_CHUNK not in by_id["rel-an-19"]


def test_edge_items_keep_call_order_and_duplicates() -> None:
    # The statement applies items one by one, so duplicates must reach it in order.
    items = edge_items([
        Relation(id="x", src_id="A", tgt_id="B", description="first"),
        Relation(id="y", src_id="C", tgt_id="D"),
        Relation(id="x", src_id="B", tgt_id="A", description="last"),
    ])
    assert [(i["id"], i["pos"], i["src"]) for i in items] == [
        ("x", 0, "A"), ("y", 1, "C"), ("x", 2, "B")
    ]
    assert items[2]["props"] == {"description": "last"}


@pytest.mark.parametrize("key", ["relation_id", "chunk_ids", "hexrag_seq", "hexrag_pair_seq"])
def test_reserved_relation_properties_refused(key: str) -> None:
    with pytest.raises(ConfigurationError, match="reserved"):
        edge_items([Relation(id="r", src_id="a", tgt_id="b", properties={key: 1})])


def test_tuples_stored_as_lists() -> None:
    (item,) = edge_items([Relation(id="r", src_id="a", tgt_id="b", properties={"t": (1, 2)})])
    assert item["props"]["t"] == [1, 2]


def test_relation_without_id_gets_the_pair_id() -> None:
    rel = relation_from_row("n8n", "Airtable", {"weight": 2, "description": "lightrag edge"})
    assert rel.id == relation_id("Airtable", "n8n")
    assert rel.weight == 2.0 and isinstance(rel.weight, float)
    assert rel.keywords is None and rel.source_id is None


def test_bookkeeping_properties_are_not_user_properties() -> None:
    row = edge_row(_record("e1", "a", "b", {
        "relation_id": "r", "chunk_ids": ["c"], "hexrag_seq": 3, "hexrag_link_seq": 4,
        "hexrag_pair_seq": 2, "source_id": "c", "rel_type": "USES",
    }))
    assert row.relation == Relation(id="r", src_id="a", tgt_id="b", source_id="c",
                                    properties={"rel_type": "USES"})
    assert (row.seq, row.link_seq, row.pair_seq) == (3, 4, 2)


def _row(eid: str, rid: str, src: str, tgt: str, seq: int | None, link: int | None = None,
         pair: int | None = None) -> Any:
    props: dict[str, Any] = {"relation_id": rid}
    for key, value in (("hexrag_seq", seq), ("hexrag_link_seq", link), ("hexrag_pair_seq", pair)):
        if value is not None:
            props[key] = value
    return edge_row(_record(eid, src, tgt, props))


def test_node_edge_order_groups_by_pair_seq_then_link_seq() -> None:
    rows = [
        _row("e4", "ac2", "A", "C", seq=6, link=6, pair=6),
        _row("e2", "ab2", "B", "A", seq=2, link=2, pair=0),
        _row("e3", "ad1", "A", "D", seq=4, link=4, pair=4),
        _row("e5", "ab3", "A", "B", seq=1, link=7, pair=0),  # moved in later: end of group
        _row("e2", "ab2", "B", "A", seq=2, link=2, pair=0),  # duplicate row (self-loop style)
    ]
    assert [r.id for r in order_node_edges("A", rows)] == ["ab2", "ab3", "ad1", "ac2"]
    assert [r.id for r in order_pair([rows[3], rows[1]])] == ["ab2", "ab3"]
    assert [r.id for r in order_by_insertion(rows)] == ["ab3", "ab2", "ad1", "ac2"]


def test_self_loop_listed_once_and_unsequenced_rows_last() -> None:
    rows = [
        _row("e9", "legacy", "A", "Z", seq=None),
        _row("e1", "loop", "A", "A", seq=1, link=1, pair=1),
        _row("e1", "loop", "A", "A", seq=1, link=1, pair=1),
    ]
    assert [r.id for r in order_node_edges("A", rows)] == ["loop", "legacy"]
