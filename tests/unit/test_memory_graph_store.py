"""MemoryGraphStore specifics: exporters, and hypothesis workloads against the oracle."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.memory import MemoryGraphStore
from hexrag.core.model import Entity, Relation
from hexrag.core.reference.oracle import GraphOracle
from hexrag.testing import corpus


async def test_iter_nodes_and_edges_in_insertion_order() -> None:
    store = MemoryGraphStore()
    await store.upsert_edges(
        [
            Relation(id="r1", src_id="A", tgt_id="B"),
            Relation(id="r2", src_id="C", tgt_id="A"),
            Relation(id="r3", src_id="B", tgt_id="A"),
        ]
    )
    await store.upsert_nodes([Entity(name="Z", description="z"), Entity(name="A", description="a")])
    await store.upsert_edges([Relation(id="r1", src_id="B", tgt_id="A", description="new")])
    assert [e.name for e in store.iter_nodes()] == ["A", "B", "C", "Z"]
    assert next(store.iter_nodes()) == Entity(name="A", description="a")
    edges = list(store.iter_edges())
    assert [r.id for r in edges] == ["r1", "r2", "r3"]
    assert (edges[0].src_id, edges[0].description) == ("B", "new")
    await store.delete_edges(["r1"])
    await store.upsert_edges([Relation(id="r1", src_id="A", tgt_id="C")])
    assert [r.id for r in store.iter_edges()] == ["r2", "r3", "r1"]


async def test_corpus_exports_every_relation() -> None:
    store = MemoryGraphStore()
    await store.upsert_nodes(corpus.entities())
    await store.upsert_edges(corpus.relations())
    assert [r.id for r in store.iter_edges()] == [r.id for r in corpus.relations()]
    assert {e.name for e in store.iter_nodes()} >= {e.name for e in corpus.entities()}


_names = st.sampled_from(["A", "B", "é", "中", "x'\"\\"])
_relation = st.builds(
    Relation,
    id=st.sampled_from([f"r{i}" for i in range(10)]),
    src_id=_names,
    tgt_id=_names,
    source_id=st.lists(st.sampled_from(["chunk-1", "chunk-10", "xchunk-1", "c"]), max_size=3).map(
        lambda ids: "{" + ",".join(ids) + "}"
    ),
    weight=st.one_of(st.none(), st.floats(0, 5, allow_nan=False)),
)
_op = st.one_of(
    st.tuples(st.just("upsert_edges"), st.lists(_relation, min_size=1, max_size=4)),
    st.tuples(st.just("upsert_nodes"), st.lists(st.builds(Entity, name=_names), max_size=2)),
    st.tuples(st.just("delete_edges"), st.lists(st.sampled_from([f"r{i}" for i in range(11)]))),
    st.tuples(st.just("delete_nodes"), st.lists(_names, max_size=2)),
)


@settings(max_examples=80, deadline=None)
@given(ops=st.lists(_op, max_size=20))
def test_random_workloads_match_oracle(ops: list[tuple[str, list[object]]]) -> None:
    """Invariant: every read equals the oracle after any write sequence (replaced ids that
    change pairs, self-loops, node deletes included)."""

    async def run() -> None:
        store, oracle = MemoryGraphStore(), GraphOracle()
        for kind, arg in ops:
            await getattr(store, kind)(arg)
            getattr(oracle, kind)(arg)
        names = ["A", "B", "é", "中", "x'\"\\", "missing"]
        assert await store.count_nodes() == len(oracle.nodes)
        assert await store.count_edges() == len(oracle.relations)
        assert await store.get_nodes(names) == oracle.get_nodes(names)
        assert await store.node_degrees(names) == oracle.node_degrees(names)
        assert await store.get_node_edges(names) == oracle.get_node_edges(names)
        pairs = [(a, b) for a in names for b in names]
        assert await store.get_edges_by_pairs(pairs) == oracle.get_edges_by_pairs(pairs)
        assert await store.edge_degrees(pairs) == oracle.edge_degrees(pairs)
        cids = ["chunk-1", "chunk-10", "xchunk-1", "c", "chunk"]
        assert await store.get_edges_by_chunk_ids(cids) == oracle.get_edges_by_chunk_ids(cids)
        assert list(store.iter_edges()) == list(oracle.relations.values())
        assert list(store.iter_nodes()) == list(oracle.nodes.values())

    asyncio.run(run())
