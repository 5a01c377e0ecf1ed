"""MemoryGraphHeadsStore: the head reads are the whole reads with descriptions (and a
relation's keywords) blanked, plus the descriptions' UTF-8 sizes; get_relations reads by id."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.memory import MemoryGraphHeadsStore, MemoryGraphStore
from hexrag.domain.records import Entity, Relation
from hexrag.ports.graph_heads import GraphHeads
from hexrag.ports.graph_store import NodeEdgesWithDegrees

_NAMES = ["A", "B", "é", "中", "x'\"\\"]
_names = st.sampled_from(_NAMES)
_text = st.one_of(
    st.none(),
    st.just(""),
    st.text(max_size=40),
    st.sampled_from(["é", "中文", "😀"]).map(lambda s: s * 700),  # multi-byte, several KB
)
_entity = st.builds(
    Entity, name=_names, entity_type=st.sampled_from([None, "PERSON"]), description=_text,
    source_id=st.sampled_from([None, "c1<SEP>c2"]), file_path=st.sampled_from([None, "f.md"]),
    created_at=st.one_of(st.none(), st.integers(0, 10)),
)
_relation = st.builds(
    Relation,
    id=st.sampled_from([f"r{i}" for i in range(8)]),
    src_id=_names,
    tgt_id=_names,  # self-loops and several relations per pair included
    description=_text,
    keywords=st.one_of(st.none(), st.text(max_size=10)),
    weight=st.one_of(st.none(), st.floats(0, 5, allow_nan=False)),
    created_at=st.one_of(st.none(), st.integers(0, 10)),
)
# requests: duplicates and missing names / ids included
_asked_names = st.lists(st.sampled_from([*_NAMES, "missing", ""]), max_size=8)
_asked_ids = st.lists(st.sampled_from([f"r{i}" for i in range(10)]), max_size=8)


def _size(text: str | None) -> int:
    return 0 if text is None else len(text.encode("utf-8"))


async def _stores(
    entities: list[Entity], relations: list[Relation]
) -> tuple[MemoryGraphStore, MemoryGraphHeadsStore]:
    full, heads = MemoryGraphStore(), MemoryGraphHeadsStore()
    for store in (full, heads):
        await store.upsert_nodes(entities)
        await store.upsert_edges(relations)
    return full, heads


def test_declares_the_capabilities() -> None:
    store = MemoryGraphHeadsStore()
    assert isinstance(store, GraphHeads) and isinstance(store, NodeEdgesWithDegrees)
    assert not isinstance(MemoryGraphStore(), GraphHeads)


@settings(max_examples=120, deadline=None)
@given(
    entities=st.lists(_entity, max_size=6),
    relations=st.lists(_relation, max_size=10),
    names=_asked_names,
    ids=_asked_ids,
)
def test_heads_are_the_whole_reads_blanked(
    entities: list[Entity], relations: list[Relation], names: list[str], ids: list[str]
) -> None:
    async def run() -> None:
        full, heads = await _stores(entities, relations)

        nodes = await full.get_nodes(names)
        node_heads, node_sizes = await heads.get_node_heads(names)
        assert node_heads == {n: replace(e, description=None) for n, e in nodes.items()}
        assert list(node_heads) == list(nodes)  # same keys, same order
        assert node_sizes == {n: _size(e.description) for n, e in nodes.items()}

        edges = await full.get_node_edges(names)
        want_degrees = await full.node_degrees(
            list({n for rels in edges.values() for r in rels for n in (r.src_id, r.tgt_id)})
        )
        whole, degrees = await heads.get_node_edges_with_degrees(names)
        assert whole == edges and degrees == want_degrees
        edge_heads, head_degrees, edge_sizes = await heads.get_node_edge_heads_with_degrees(names)
        assert edge_heads == {
            n: [replace(r, description=None, keywords=None) for r in rels]
            for n, rels in edges.items()
        }
        assert list(edge_heads) == list(edges)
        assert head_degrees == want_degrees
        assert edge_sizes == {r.id: _size(r.description) for rels in edges.values() for r in rels}

        stored = {r.id: r for r in full.iter_edges()}
        got = await heads.get_relations(ids)
        assert got == {i: stored[i] for i in ids if i in stored}
        # completing the heads gives back the whole records
        listed = [r.id for rels in edge_heads.values() for r in rels]
        completed = await heads.get_relations(listed)
        assert [completed[r.id] for rels in edge_heads.values() for r in rels] == [
            r for rels in edges.values() for r in rels
        ]

    asyncio.run(run())


async def test_sizes_and_blanking_on_known_records() -> None:
    _, heads = await _stores(
        [Entity(name="A", description="é" * 3, entity_type="T"), Entity(name="B")],
        [
            Relation(id="r1", src_id="A", tgt_id="B", description="中", keywords="k"),
            Relation(id="r2", src_id="B", tgt_id="A", description="", keywords="k2"),
            Relation(id="r3", src_id="A", tgt_id="A", description=None),
        ],
    )
    nodes, sizes = await heads.get_node_heads(["B", "A", "nope", "A"])
    assert list(nodes) == ["B", "A"]
    assert nodes["A"] == Entity(name="A", entity_type="T") and nodes["B"] == Entity(name="B")
    assert sizes == {"A": 6, "B": 0}
    edges, degrees, sizes = await heads.get_node_edge_heads_with_degrees(["A", "nope"])
    assert [r.id for r in edges["A"]] == ["r1", "r2", "r3"] and edges["nope"] == []
    assert all(r.description is None and r.keywords is None for r in edges["A"])
    assert edges["A"][1].src_id == "B"  # stored orientation kept
    assert sizes == {"r1": 3, "r2": 0, "r3": 0}
    assert degrees == {"A": 4, "B": 2}  # the self-loop counts 2
    whole = await heads.get_relations(["r3", "r1", "zz", "r1"])
    assert list(whole) == ["r3", "r1"]
    assert whole["r1"].description == "中" and whole["r1"].keywords == "k"
