"""Contract tests for :class:`hexrag.ports.GraphStore`.

A store that declares :class:`~hexrag.ports.graph_store.GraphStoreTraits` (``traits``) is held
to what it declares: the oracle keeps the declared rules
(:class:`~hexrag.testing._graph_traits.DeclaredGraphOracle`), lists are compared in the
declared order, and the sentences only the port's multigraph can keep (21 relations on one
pair, a relation id of its own) are asserted only of a store that keeps them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from hexrag.core.ingest.ids import relation_id
from hexrag.core.model import Entity, Relation
from hexrag.core.reference.oracle import GraphOracle
from hexrag.ports import GraphStore, ScansGraph
from hexrag.ports.graph_store import GraphStoreTraits, graph_traits_of
from hexrag.testing import corpus
from hexrag.testing._graph_traits import DeclaredGraphOracle, declared_id, in_order, in_order_map
from hexrag.testing._guard import ContractGuard
from hexrag.testing.scan import check_resume_after_writes, check_scan_basics, collect


def _ids(relations: list[Relation]) -> list[str]:
    return [r.id for r in relations]


class GraphStoreContract(ContractGuard):
    """Subclass in a ``Test*`` class and override the ``graph_store`` fixture.

    The fixture yields a **fresh, empty** store in its own namespace (label / graph / table
    prefix) and cleans it up afterwards.
    """

    # ---- capability flags -----------------------------------------------------------
    supports_self_loops: bool = True
    """A relation may join a node to itself."""
    group_survives_partial_delete: bool = True
    """Deleting some (not all) relations of a pair keeps the neighbour group's position
    (the neighbour stays "first connected" at its original place)."""

    @pytest.fixture
    def graph_store(self) -> GraphStore:
        """Override: yield a fresh, empty GraphStore."""
        raise NotImplementedError("override the graph_store fixture")

    # ---- helpers --------------------------------------------------------------------

    def _relations(self) -> list[Relation]:
        rels = corpus.relations()
        if not self.supports_self_loops:
            rels = [r for r in rels if r.src_id != r.tgt_id]
        return rels

    def _written(self, rid: str) -> Relation:
        """The corpus relation written under the id ``rid``."""
        return next(r for r in self._relations() if r.id == rid)

    @staticmethod
    def _traits(store: GraphStore) -> GraphStoreTraits:
        return graph_traits_of(store)

    def _oracle(self, store: GraphStore) -> DeclaredGraphOracle:
        return DeclaredGraphOracle(self._traits(store))

    async def _loaded(self, store: GraphStore) -> DeclaredGraphOracle:
        assert isinstance(store, GraphStore)
        oracle = self._oracle(store)
        ents, rels = corpus.entities(), self._relations()
        # nodes first, then relations in two batches, like an ingest would
        await store.upsert_nodes(ents)
        await store.upsert_edges(rels[:10])
        await store.upsert_edges(rels[10:])
        oracle.upsert_nodes(ents)
        oracle.upsert_edges(rels[:10])
        oracle.upsert_edges(rels[10:])
        return oracle

    async def _assert_matches(
        self, store: GraphStore, oracle: DeclaredGraphOracle, ctx: str = ""
    ) -> None:
        traits = oracle.traits
        names = [*oracle.nodes, "missing-node"]
        assert await store.count_nodes() == len(oracle.nodes), ctx
        assert await store.count_edges() == len(oracle.relations), ctx
        assert await store.get_nodes(names) == oracle.get_nodes(names), ctx
        assert await store.node_degrees(names) == oracle.node_degrees(names), ctx
        got = in_order_map(traits, "node", await store.get_node_edges(names), read=True)
        want = in_order_map(traits, "node", oracle.get_node_edges(names))
        assert set(got) == set(want), ctx
        for name in names:
            assert _ids(got[name]) == _ids(want[name]), f"edge order of {name!r} {ctx}"
            assert got[name] == want[name], f"edges of {name!r} {ctx}"
        pairs = [(a, b) for a in names for b in names]
        got_pairs = await store.get_edges_by_pairs(pairs)
        assert got_pairs == oracle.get_edges_by_pairs(pairs), ctx
        assert await store.edge_degrees(pairs) == oracle.edge_degrees(pairs), ctx
        chunk_ids = [
            "chunk-1", "chunk-10", "xchunk-1", "chunk-a", "chunk-b", "chunk a", "chunk-2",
            corpus.SEED_001_CHUNK, "chunk-", "missing-chunk",
        ]
        assert in_order_map(traits, "chunk", await store.get_edges_by_chunk_ids(chunk_ids),
                            read=True) == (
            in_order_map(traits, "chunk", oracle.get_edges_by_chunk_ids(chunk_ids))
        ), ctx

    # ---- empty store ----------------------------------------------------------------

    async def test_empty_store(self, graph_store: GraphStore) -> None:
        """Every read of an empty store answers without an exception."""
        assert await graph_store.count_nodes() == 0
        assert await graph_store.count_edges() == 0
        assert await graph_store.get_nodes(["x"]) == {}
        assert await graph_store.node_degrees(["x"]) == {"x": 0}
        assert await graph_store.edge_degrees([("x", "y")]) == {("x", "y"): 0}
        assert await graph_store.get_node_edges(["x"]) == {"x": []}
        assert await graph_store.get_edges_by_pairs([("x", "y")]) == {}
        assert await graph_store.get_edges_by_chunk_ids(["chunk-1"]) == {}
        assert await graph_store.get_nodes([]) == {}
        assert await graph_store.get_node_edges([]) == {}

    # ---- nodes ------------------------------------------------------------------------

    async def test_nodes_round_trip(self, graph_store: GraphStore) -> None:
        """Nodes by name; every field (None and "" kept apart, properties, non-ASCII)."""
        ents = corpus.entities()
        await graph_store.upsert_nodes(ents)
        got = await graph_store.get_nodes([e.name for e in ents])
        assert got == {e.name: e for e in ents}
        assert await graph_store.count_nodes() == len(ents)

    async def test_get_nodes_missing_absent(self, graph_store: GraphStore) -> None:
        """Missing names are absent from the result (no exception); duplicates fine."""
        await graph_store.upsert_nodes(corpus.entities())
        got = await graph_store.get_nodes(["n8n", "N8N", "n8", "missing", "n8n", "%", "_"])
        assert set(got) == {"n8n"}

    async def test_upsert_nodes_idempotent_and_replace_keeps_edges(
        self, graph_store: GraphStore
    ) -> None:
        """Insert or replace nodes by name (idempotent; replacing keeps the node's edges)."""
        oracle = await self._loaded(graph_store)
        ents = corpus.entities()
        await graph_store.upsert_nodes(ents)
        assert await graph_store.count_nodes() == len(oracle.nodes)
        airtable = replace(ents[0], description="replaced", entity_type=None, properties={})
        await graph_store.upsert_nodes([airtable])
        oracle.upsert_nodes([airtable])
        got = (await graph_store.get_nodes(["Airtable"]))["Airtable"]
        assert got == oracle.nodes["Airtable"]
        if not oracle.traits.merges_on_replace:
            assert got == airtable
        await self._assert_matches(graph_store, oracle)

    # ---- edges ------------------------------------------------------------------------

    async def test_upsert_edges_creates_missing_endpoints(self, graph_store: GraphStore) -> None:
        """Missing endpoint nodes are created with no properties."""
        rel = Relation(id="r1", src_id="lonely é", tgt_id="ghost 中文", source_id="chunk-1")
        await graph_store.upsert_edges([rel])
        got = await graph_store.get_nodes(["lonely é", "ghost 中文"])
        assert got == {"lonely é": Entity(name="lonely é"), "ghost 中文": Entity(name="ghost 中文")}
        assert await graph_store.count_nodes() == 2
        assert await graph_store.count_edges() == 1

    async def test_relations_round_trip_keep_orientation(self, graph_store: GraphStore) -> None:
        """A relation keeps the orientation it was stored with; every field round-trips."""
        oracle = await self._loaded(graph_store)
        got = await graph_store.get_node_edges(list(oracle.nodes))
        seen = {r.id: r for rels in got.values() for r in rels}
        assert seen == oracle.relations

    async def test_upsert_edges_idempotent(self, graph_store: GraphStore) -> None:
        """Insert or replace relations by id (idempotent)."""
        oracle = await self._loaded(graph_store)
        await graph_store.upsert_edges(self._relations())
        await graph_store.upsert_edges(self._relations()[:3])
        # the oracle is unchanged by these writes under the port's rules; with one edge per
        # pair the last relation written to a pair is the pair's edge again
        oracle.upsert_edges(self._relations())
        oracle.upsert_edges(self._relations()[:3])
        await self._assert_matches(graph_store, oracle)

    async def test_several_relations_per_pair(self, graph_store: GraphStore) -> None:
        """Several relations may join the same pair (seed 001: 21 between one pair)."""
        oracle = self._oracle(graph_store)
        await graph_store.upsert_edges(corpus.seed001_relations())
        oracle.upsert_edges(corpus.seed001_relations())
        got = await graph_store.get_edges_by_pairs([corpus.SEED_001_PAIR])
        assert got == oracle.get_edges_by_pairs([corpus.SEED_001_PAIR])
        assert await graph_store.count_edges() == len(oracle.relations)
        degrees = await graph_store.node_degrees(list(corpus.SEED_001_PAIR))
        assert degrees == oracle.node_degrees(list(corpus.SEED_001_PAIR))
        if not oracle.traits.one_edge_per_pair:
            assert _ids(got[corpus.SEED_001_PAIR]) == [f"rel-an-{i:02d}" for i in range(21)]
            assert len(oracle.relations) == 21 and degrees == {"Airtable": 21, "n8n": 21}
        else:  # the pair's one relation is the last written, under the pair's id
            assert _ids(got[corpus.SEED_001_PAIR]) == [relation_id(*corpus.SEED_001_PAIR)]
            assert got[corpus.SEED_001_PAIR][0].description == (
                corpus.seed001_relations()[-1].description
            )

    @pytest.mark.parametrize("flip", [False, True], ids=["same-orientation", "reversed"])
    async def test_replaced_relation_keeps_its_place(
        self, graph_store: GraphStore, flip: bool
    ) -> None:
        """A replaced relation keeps its position in the edge order (either orientation)."""
        oracle = await self._loaded(graph_store)
        old = self._written("rel-an-03")
        src, tgt = (old.tgt_id, old.src_id) if flip else (old.src_id, old.tgt_id)
        new = replace(old, src_id=src, tgt_id=tgt, description="replaced", source_id="chunk-b")
        await graph_store.upsert_edges([new])
        oracle.upsert_edges([new])
        rid = oracle.declared("rel-an-03")
        pair = await graph_store.get_edges_by_pairs([corpus.SEED_001_PAIR])
        want = oracle.get_edges_by_pairs([corpus.SEED_001_PAIR])[corpus.SEED_001_PAIR]
        assert _ids(pair[corpus.SEED_001_PAIR]).index(rid) == _ids(want).index(rid)
        if not oracle.traits.one_edge_per_pair:
            assert _ids(want).index(rid) == 3
        edges = (await graph_store.get_node_edges(["n8n"]))["n8n"]
        stored = next(r for r in edges if r.id == rid)
        assert stored.description == "replaced"
        expected = oracle.relations[rid]
        assert (stored.src_id, stored.tgt_id) == (expected.src_id, expected.tgt_id)
        if oracle.traits.orientation == "kept":
            assert (stored.src_id, stored.tgt_id) == (src, tgt)
        await self._assert_matches(graph_store, oracle)

    async def test_relation_moved_to_another_pair(self, graph_store: GraphStore) -> None:
        """Re-upserting an id with other endpoints leaves no trace on the old pair."""
        oracle = await self._loaded(graph_store)
        moved = replace(self._written("rel-an-05"), src_id="B", tgt_id="n8n")
        await graph_store.upsert_edges([moved])
        oracle.upsert_edges([moved])
        rid = oracle.declared("rel-an-05")
        pairs = await graph_store.get_edges_by_pairs([corpus.SEED_001_PAIR, ("n8n", "B")])
        assert pairs == oracle.get_edges_by_pairs([corpus.SEED_001_PAIR, ("n8n", "B")])
        assert rid not in _ids(pairs[corpus.SEED_001_PAIR])
        assert rid in _ids(pairs[("n8n", "B")])
        if not oracle.traits.one_edge_per_pair:
            assert _ids(pairs[("n8n", "B")]) == ["rel-an-05"]
        assert await graph_store.count_edges() == len(oracle.relations)
        assert await graph_store.node_degrees(["Airtable", "B"]) == oracle.node_degrees(
            ["Airtable", "B"]
        )

    # ---- degrees --------------------------------------------------------------------

    async def test_node_degrees(self, graph_store: GraphStore) -> None:
        """Each multi-edge counts; a self-loop counts 2; missing nodes have degree 0; every
        requested name is a key."""
        oracle = await self._loaded(graph_store)
        names = ["Airtable", "n8n", "Rocket 🚀", "中文实体", "B", "missing", "ghost-node"]
        got = await graph_store.node_degrees(names)
        assert got == oracle.node_degrees(names)
        assert got["missing"] == 0
        if self.supports_self_loops and not oracle.traits.one_edge_per_pair:
            # two self-loops (4) plus the edge to n8n
            assert got["Rocket 🚀"] == 5

    async def test_edge_degrees(self, graph_store: GraphStore) -> None:
        """``degree(a) + degree(b)`` for each requested pair, keyed as requested."""
        oracle = await self._loaded(graph_store)
        pairs = [("n8n", "Airtable"), ("Airtable", "n8n"), ("B", "missing"), ("x", "y"),
                 ("Rocket 🚀", "Rocket 🚀")]
        got = await graph_store.edge_degrees(pairs)
        assert got == oracle.edge_degrees(pairs)
        assert got[("Airtable", "n8n")] == got[("n8n", "Airtable")] > 0

    # ---- edge reads -----------------------------------------------------------------

    async def test_node_edges_in_port_edge_order(self, graph_store: GraphStore) -> None:
        """Grouped by neighbour in first-connected order, insertion order within a group;
        missing node or node without edges maps to []."""
        oracle = await self._loaded(graph_store)
        await graph_store.upsert_nodes([Entity(name="isolated")])
        oracle.upsert_nodes([Entity(name="isolated")])
        names = [*oracle.nodes, "missing"]
        traits = oracle.traits
        got = await graph_store.get_node_edges(names)
        assert set(got) == set(names)
        for name in names:
            assert _ids(in_order(traits, "node", got[name], name, read=True)) == _ids(
                in_order(traits, "node", oracle.node_edges(name), name)
            ), name
        assert got["isolated"] == [] and got["missing"] == []
        if traits.edge_order == "insertion" and not traits.one_edge_per_pair:
            # Airtable: n8n group (21 relations) first, then "a", then ghost-node
            assert _ids(got["Airtable"])[:21] == [f"rel-an-{i:02d}" for i in range(21)]
            assert _ids(got["Airtable"])[21:] == ["rel-a-Airtable", "rel-ghost"]

    async def test_get_edges_by_pairs(self, graph_store: GraphStore) -> None:
        """Either orientation, insertion order; keys use the requested orientation; a pair with
        no relation is absent."""
        oracle = await self._loaded(graph_store)
        pairs = [("n8n", "Airtable"), ("Airtable", "n8n"), ("a", "B"), ("B", "Airtable"),
                 ("missing", "n8n"), ('"or 1==1', "O'Brien \"Q\""), ("Rocket 🚀", "Rocket 🚀")]
        got = await graph_store.get_edges_by_pairs(pairs)
        assert got == oracle.get_edges_by_pairs(pairs)
        assert ("B", "Airtable") not in got and ("missing", "n8n") not in got
        assert _ids(got[("n8n", "Airtable")]) == _ids(got[("Airtable", "n8n")])

    async def test_get_edges_by_chunk_ids_whole_id(self, graph_store: GraphStore) -> None:
        """source_id split with parse_source_ids, matched as a whole id (chunk-1 never matches
        chunk-10 or xchunk-1); array text and quoted elements understood; unnamed ids absent."""
        oracle = await self._loaded(graph_store)
        ids = ["chunk-1", "chunk-10", "xchunk-1", "chunk a", 'x"y', corpus.SEED_001_CHUNK,
               "chunk-ops-10", "chunk-", "hunk-1", "chunk-an-0", "nobody", "%", "_"]
        traits = oracle.traits
        got = in_order_map(traits, "chunk", await graph_store.get_edges_by_chunk_ids(ids),
                           read=True)
        want = in_order_map(traits, "chunk", oracle.get_edges_by_chunk_ids(ids))
        assert {k: _ids(v) for k, v in got.items()} == {k: _ids(v) for k, v in want.items()}
        assert got == want
        if not traits.one_edge_per_pair:
            assert _ids(got[corpus.SEED_001_CHUNK]) == [corpus.SEED_001_CARRIER]
        assert "nobody" not in got and "chunk-" not in got and "%" not in got

    async def test_chunk_index_follows_writes(self, graph_store: GraphStore) -> None:
        """A replaced source_id re-indexes the relation; deleted relations disappear."""
        oracle = await self._loaded(graph_store)
        traits = oracle.traits
        # a form the store splits (the port's array text; a <SEP> string where declared)
        new_source = "{chunk-b,chunk-new}" if traits.source_id_split == "parsed" else (
            "chunk-b<SEP>chunk-new")
        changed = replace(self._written("rel-an-01"), source_id=new_source)
        await graph_store.upsert_edges([changed])
        oracle.upsert_edges([changed])
        gone = oracle.declared("rel-an-02")
        await graph_store.delete_edges([gone])
        oracle.delete_edges([gone])
        await graph_store.delete_nodes(["Rocket 🚀"])
        oracle.delete_nodes(["Rocket 🚀"])
        ids = ["chunk-1", "chunk-10", "chunk-b", "chunk-new", "chunk-an-01"]
        got = in_order_map(traits, "chunk", await graph_store.get_edges_by_chunk_ids(ids),
                           read=True)
        assert got == in_order_map(traits, "chunk", oracle.get_edges_by_chunk_ids(ids))
        rid = oracle.declared("rel-an-01")
        if rid in oracle.relations:
            assert rid not in _ids(got.get("chunk-1", []))
            assert rid in _ids(got["chunk-new"])
        else:  # one edge per pair: deleting rel-an-02's pair took the changed relation too
            assert "chunk-new" not in got

    # ---- deletes --------------------------------------------------------------------

    async def test_delete_nodes(self, graph_store: GraphStore) -> None:
        """Remove nodes and every incident relation; unknown names are ignored."""
        oracle = await self._loaded(graph_store)
        await graph_store.delete_nodes(["n8n", "unknown", "Rocket 🚀"])
        oracle.delete_nodes(["n8n", "unknown", "Rocket 🚀"])
        await self._assert_matches(graph_store, oracle)
        assert await graph_store.get_edges_by_pairs([corpus.SEED_001_PAIR]) == {}
        await graph_store.delete_nodes([])

    async def test_delete_edges(self, graph_store: GraphStore) -> None:
        """Remove relations by id; unknown ids are ignored; nodes stay."""
        oracle = await self._loaded(graph_store)
        victims = [oracle.declared(v) for v in
                   ["rel-an-00", "rel-an-13", "rel-self", "no-such-relation", "rel-Ba"]]
        await graph_store.delete_edges(victims)
        oracle.delete_edges(victims)
        await self._assert_matches(graph_store, oracle)
        assert await graph_store.count_nodes() == len(oracle.nodes)
        await graph_store.delete_edges([])

    async def test_edge_order_after_partial_pair_delete(self, graph_store: GraphStore) -> None:
        """A neighbour group keeps its place while any of its relations remains; once empty,
        a new relation to that neighbour starts a group at the end."""
        if not self.group_survives_partial_delete:
            pytest.skip("group_survives_partial_delete is off")
        oracle = GraphOracle()
        steps: list[tuple[str, list[Relation] | list[str]]] = [
            ("up", [Relation(id="ab1", src_id="A", tgt_id="B")]),
            ("up", [Relation(id="ac1", src_id="C", tgt_id="A")]),
            ("up", [Relation(id="ab2", src_id="B", tgt_id="A")]),
            ("del", ["ab1"]),
            ("up", [Relation(id="ad1", src_id="A", tgt_id="D")]),
            ("del", ["ac1"]),
            ("up", [Relation(id="ac2", src_id="A", tgt_id="C")]),
        ]
        for kind, arg in steps:
            if kind == "up":
                await graph_store.upsert_edges(arg)  # type: ignore[arg-type]
                oracle.upsert_edges(arg)  # type: ignore[arg-type]
            else:
                await graph_store.delete_edges(arg)  # type: ignore[arg-type]
                oracle.delete_edges(arg)  # type: ignore[arg-type]
        got = await graph_store.get_node_edges(["A"])
        assert _ids(got["A"]) == _ids(oracle.node_edges("A")) == ["ab2", "ad1", "ac2"]

    # ---- counts and random workloads ------------------------------------------------

    async def test_counts(self, graph_store: GraphStore) -> None:
        """Number of nodes; number of relations (each multi-edge counts)."""
        oracle = await self._loaded(graph_store)
        assert await graph_store.count_nodes() == len(oracle.nodes)
        assert await graph_store.count_edges() == len(oracle.relations)

    async def test_corpus_matches_oracle(self, graph_store: GraphStore) -> None:
        """Every read over the fixed corpus equals the oracle."""
        oracle = await self._loaded(graph_store)
        await self._assert_matches(graph_store, oracle)

    @pytest.mark.parametrize("seed", [1, 2, 3])
    @pytest.mark.parametrize("with_deletes", [False, True], ids=["no-deletes", "deletes"])
    async def test_random_workload_matches_oracle(
        self, graph_store: GraphStore, seed: int, with_deletes: bool
    ) -> None:
        """Invariant: after any sequence of writes, every read equals the oracle."""
        if with_deletes and not self.group_survives_partial_delete:
            pytest.skip("group_survives_partial_delete is off")
        oracle = self._oracle(graph_store)
        for op in corpus.random_graph_ops(seed, with_deletes=with_deletes):
            if not self.supports_self_loops and op.kind == "upsert_edges":
                batch = tuple(r for r in op.args[0] if r.src_id != r.tgt_id)
                op = corpus.GraphOp(op.kind, (batch,))
            await getattr(graph_store, op.kind)(*op.args)
            getattr(oracle, op.kind)(*op.args)
        await self._assert_matches(graph_store, oracle, ctx=f"seed {seed}")

    # ---- scan (hexrag.ports.scan) --------------------------------------------------------

    async def test_scan_lists_every_node_and_edge(self, graph_store: GraphStore) -> None:
        """``scan_nodes`` / ``scan_edges`` pages list every node and every relation (with its
        id) once, equal to what ``get_nodes`` / ``get_node_edges`` return; an empty store gives
        one empty last page; a bad limit is InvalidQuery."""
        assert isinstance(graph_store, ScansGraph), "GraphStore must offer scan_nodes/edges"
        for scan in (graph_store.scan_nodes, graph_store.scan_edges):
            page = await scan(None, limit=5)
            assert page.items == [] and page.cursor is None
        oracle = await self._loaded(graph_store)
        await check_scan_basics(graph_store.scan_nodes, lambda e: e.name, set(oracle.nodes))
        await check_scan_basics(graph_store.scan_edges, lambda r: r.id, set(oracle.relations))
        nodes, _ = await collect(graph_store.scan_nodes, limit=3)
        want_nodes = oracle.get_nodes(list(oracle.nodes))
        for node in nodes:
            assert isinstance(node, Entity)
            assert node == want_nodes[node.name], node.name
        edges, _ = await collect(graph_store.scan_edges, limit=3)
        for rel in edges:
            assert isinstance(rel, Relation)
            assert rel == oracle.relations[rel.id], rel.id

    async def test_scan_resumes_after_writes(self, graph_store: GraphStore) -> None:
        """Scans resumed from a saved cursor after writes list every node / relation present
        for the whole scan, none twice."""
        oracle = await self._loaded(graph_store)
        assert isinstance(graph_store, ScansGraph)

        async def write_edges(seen: set[Any]) -> tuple[set[Any], set[Any]]:
            gone = {next(iter(seen)), *[r for r in oracle.relations if r not in seen][:2]}
            await graph_store.delete_edges(sorted(gone))
            new = Relation(id="rel-scan-new", src_id="Scan A", tgt_id="Scan B")
            await graph_store.upsert_edges([new])
            return {declared_id(oracle.traits, new)}, gone

        await check_resume_after_writes(
            graph_store.scan_edges, lambda r: r.id, set(oracle.relations), write_edges
        )
        names = {e.name for e in (await collect(graph_store.scan_nodes, limit=50))[0]}

        async def write_nodes(seen: set[Any]) -> tuple[set[Any], set[Any]]:
            unseen = sorted(n for n in names if n not in seen)
            gone = {next(iter(seen)), *unseen[:1]}
            await graph_store.delete_nodes(sorted(gone))
            await graph_store.upsert_nodes([Entity(name="Scan C")])
            return {"Scan C"}, gone

        await check_resume_after_writes(
            graph_store.scan_nodes, lambda e: e.name, names, write_nodes
        )
