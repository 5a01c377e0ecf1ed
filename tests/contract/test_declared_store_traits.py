"""The contract kit holds graph stores, chunk stores and caches to the rules they declare
(``traits``), both ways: a store that declares LightRAG's rules and keeps them passes (the whole
graph contract runs on one); one that declares them and does something else fails, as does one
that keeps LightRAG's rules while declaring the port's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from hexrag.adapters.memory import MemoryCache, MemoryChunkStore, MemoryGraphStore
from hexrag.core.ingest.ids import relation_id
from hexrag.domain.records import Chunk, Relation
from hexrag.ports.cache import PORT_CACHE_TRAITS, CacheTraits
from hexrag.ports.chunk_store import PORT_CHUNK_TRAITS, ChunkStoreTraits
from hexrag.ports.graph_store import PORT_GRAPH_TRAITS, GraphStoreTraits, graph_traits_of
from hexrag.testing import CacheContract, ChunkStoreContract, GraphStoreContract

#: LightRAG's PostgreSQL table graph, as it declares itself (source_id parsed here: the memory
#: store underneath parses every form).
PAIR = GraphStoreTraits(one_edge_per_pair=True, orientation="sorted",
                        edge_order="neighbour_name", chunk_list_order="backend")


class _PairGraph(MemoryGraphStore):
    """The memory graph with declared traits and, optionally, LightRAG's table-graph rules:
    one edge per pair under the pair's id, stored sorted, neighbours by name."""

    def __init__(self, traits: GraphStoreTraits, *, pair: bool = True,
                 by_name: bool = True) -> None:
        super().__init__()
        self._declared, self._pair, self._by_name = traits, pair, by_name

    @property
    def traits(self) -> GraphStoreTraits:
        return self._declared

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        if self._pair:
            relations = [replace(r, id=relation_id(*r.pair), src_id=r.pair[0], tgt_id=r.pair[1])
                         for r in relations]
        await super().upsert_edges(relations)

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        got = await super().get_node_edges(names)
        if not self._by_name:
            return got

        def key(name: str, r: Relation) -> tuple[str, bool]:
            return (r.tgt_id if r.src_id == name else r.src_id, r.src_id != name)

        return {n: sorted(rels, key=lambda r, n=n: key(n, r))  # type: ignore[misc]
                for n, rels in got.items()}


class TestDeclaredPairGraphContract(GraphStoreContract):
    """The whole graph contract on a store keeping what it declares (LightRAG's table rules)."""

    group_survives_partial_delete = False

    @pytest.fixture
    def graph_store(self) -> _PairGraph:
        return _PairGraph(PAIR)


_MERGED = ("entity_type", "description", "keywords", "weight", "source_id", "file_path",
           "created_at")


def _merge(new: Any, old: Any) -> Any:
    """``SET n += props``: what ``new`` leaves unset keeps ``old``'s value."""
    if old is None:
        return new
    kept = {f: getattr(old, f) for f in _MERGED if hasattr(new, f) and getattr(new, f) is None}
    return replace(new, properties={**old.properties, **new.properties}, **kept)


class _Neo4jLike(MemoryGraphStore):
    """The memory graph keeping LightRAG's Neo4j rules (no server runs here): one undirected
    relationship per pair under the pair's id, oriented as first written, ``SET +=`` merging a
    replacement, lists in another order than insertion (reversed)."""

    @property
    def traits(self) -> GraphStoreTraits:
        from hexrag.adapters.neo4j.lightrag_layout import LIGHTRAG_NEO4J_TRAITS

        return LIGHTRAG_NEO4J_TRAITS

    async def upsert_nodes(self, entities: Sequence[Any]) -> None:
        for e in entities:
            old = (await super().get_nodes([e.name])).get(e.name)
            await super().upsert_nodes([_merge(e, old)])

    async def upsert_edges(self, relations: Sequence[Relation]) -> None:
        for r in relations:
            old = (await super().get_edges_by_pairs([r.pair])).get(r.pair, [None])[0]
            new = replace(r, id=relation_id(*r.pair))
            if old is not None:
                new = replace(_merge(new, old), src_id=old.src_id, tgt_id=old.tgt_id)
            await super().upsert_edges([new])

    async def get_node_edges(self, names: Sequence[str]) -> dict[str, list[Relation]]:
        return {n: rels[::-1] for n, rels in (await super().get_node_edges(names)).items()}

    async def get_edges_by_chunk_ids(self, chunk_ids: Sequence[str]) -> dict[str, list[Relation]]:
        got = await super().get_edges_by_chunk_ids(chunk_ids)
        return {c: rels[::-1] for c, rels in got.items()}


class TestDeclaredNeo4jLikeGraphContract(GraphStoreContract):
    """The whole graph contract on a store keeping what LightRAG's Neo4j layout declares."""

    group_survives_partial_delete = False

    @pytest.fixture
    def graph_store(self) -> _Neo4jLike:
        return _Neo4jLike()


async def _graph(test: str, store: Any, **kwargs: Any) -> None:
    kit = type("Kit", (GraphStoreContract,), {"group_survives_partial_delete": False})()
    await getattr(kit, test)(store, **kwargs)


@pytest.mark.parametrize(
    ("test", "traits", "options"),
    [
        # keeps one edge per pair, declares the port's multigraph
        ("test_several_relations_per_pair", PORT_GRAPH_TRAITS, {}),
        ("test_counts", PORT_GRAPH_TRAITS, {}),
        ("test_corpus_matches_oracle", PORT_GRAPH_TRAITS, {}),
        # declares one edge per pair, keeps a multigraph (ids, orientation and order as written)
        ("test_several_relations_per_pair", PAIR, {"pair": False, "by_name": False}),
        ("test_corpus_matches_oracle", PAIR, {"pair": False, "by_name": False}),
        # declares the port's edge order, sorts neighbours by name
        ("test_node_edges_in_port_edge_order", replace(PAIR, edge_order="insertion"), {}),
        # declares neighbours by name, keeps insertion order
        ("test_node_edges_in_port_edge_order", PAIR, {"by_name": False}),
        # declares orientations kept, stores them sorted
        ("test_relations_round_trip_keep_orientation", replace(PAIR, orientation="kept"), {}),
        # declares the first orientation kept, stores them sorted
        ("test_relations_round_trip_keep_orientation", replace(PAIR, orientation="first"), {}),
        # declares a <SEP>-only split, parses every form
        ("test_get_edges_by_chunk_ids_whole_id", replace(PAIR, source_id_split="sep"), {}),
        # declares SET += merging, replaces whole
        ("test_upsert_nodes_idempotent_and_replace_keeps_edges",
         replace(PAIR, merges_on_replace=True), {}),
    ],
)
async def test_graph_declared_but_not_kept_fails(
    test: str, traits: GraphStoreTraits, options: dict[str, Any]
) -> None:
    with pytest.raises(AssertionError):
        await _graph(test, _PairGraph(traits, **options))


# ---- chunk stores ----------------------------------------------------------------------

STAMPED = ChunkStoreTraits(stamped_keys=frozenset({"_id", "update_time"}))
NO_METADATA = ChunkStoreTraits(metadata_keys=frozenset())


class _Chunks(MemoryChunkStore):
    """The memory chunk store with declared traits and, optionally, LightRAG's bookkeeping
    stamped into every chunk or its metadata dropped (fixed columns)."""

    def __init__(self, traits: ChunkStoreTraits, *, stamp: bool = False,
                 drop_metadata: bool = False) -> None:
        super().__init__()
        self._declared, self._stamp, self._drop = traits, stamp, drop_metadata

    @property
    def traits(self) -> ChunkStoreTraits:
        return self._declared

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        out = []
        for c in chunks:
            meta = {} if self._drop else dict(c.metadata)
            if self._stamp:
                meta.update({"_id": c.id, "update_time": 1_800_000_000})
            out.append(replace(c, metadata=meta))
        await super().upsert_chunks(out)


async def _chunks(test: str, store: Any) -> None:
    await getattr(type("Kit", (ChunkStoreContract,), {})(), test)(store)


_CHUNK_TESTS = ["test_every_field_round_trips", "test_upsert_is_idempotent_and_replaces",
                "test_scan_lists_every_chunk"]


@pytest.mark.parametrize("test", _CHUNK_TESTS)
@pytest.mark.parametrize(("traits", "options"), [
    (STAMPED, {"stamp": True}), (NO_METADATA, {"drop_metadata": True}),
])
async def test_chunks_declared_and_kept_pass(
    test: str, traits: ChunkStoreTraits, options: dict[str, Any]
) -> None:
    await _chunks(test, _Chunks(traits, **options))


@pytest.mark.parametrize("test", _CHUNK_TESTS)
@pytest.mark.parametrize(("traits", "options"), [
    (PORT_CHUNK_TRAITS, {"stamp": True}),  # stamps, declares nothing
    (STAMPED, {}),  # declares stamps, writes none
    (PORT_CHUNK_TRAITS, {"drop_metadata": True}),  # drops metadata, declares it kept
])
async def test_chunks_declared_but_not_kept_fail(
    test: str, traits: ChunkStoreTraits, options: dict[str, Any]
) -> None:
    with pytest.raises(AssertionError):
        await _chunks(test, _Chunks(traits, **options))


# ---- caches ----------------------------------------------------------------------------

STAMPED_CACHE = CacheTraits(stamped_keys=frozenset({"_id", "create_time"}))


class _Cache(MemoryCache):
    """The memory cache with declared traits and, optionally, ``_id``/``create_time`` stamped
    into every entry (``RedisKVStorage``)."""

    def __init__(self, traits: CacheTraits, *, stamp: bool = False) -> None:
        super().__init__()
        self._declared, self._stamp = traits, stamp

    @property
    def traits(self) -> CacheTraits:
        return self._declared

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        if self._stamp:
            entries = {k: {**v, "_id": k, "create_time": 1} for k, v in entries.items()}
        await super().set_many(entries)


async def _cache(test: str, cache: Any) -> None:
    await getattr(type("Kit", (CacheContract,), {"isolates_namespaces": False})(), test)(cache)


_CACHE_TESTS = ["test_round_trip_in_request_order", "test_set_many_replaces",
                "test_scan_lists_every_entry"]


@pytest.mark.parametrize("test", _CACHE_TESTS)
async def test_cache_declared_and_kept_passes(test: str) -> None:
    await _cache(test, _Cache(STAMPED_CACHE, stamp=True))


@pytest.mark.parametrize("test", _CACHE_TESTS)
@pytest.mark.parametrize(("traits", "stamp"), [(PORT_CACHE_TRAITS, True), (STAMPED_CACHE, False)])
async def test_cache_declared_but_not_kept_fails(
    test: str, traits: CacheTraits, stamp: bool
) -> None:
    with pytest.raises(AssertionError):
        await _cache(test, _Cache(traits, stamp=stamp))


def test_a_store_without_traits_is_held_to_the_port() -> None:
    from hexrag.ports.cache import cache_traits_of
    from hexrag.ports.chunk_store import chunk_traits_of

    assert graph_traits_of(MemoryGraphStore()) is PORT_GRAPH_TRAITS
    assert chunk_traits_of(MemoryChunkStore()) is PORT_CHUNK_TRAITS
    assert cache_traits_of(MemoryCache()) is PORT_CACHE_TRAITS
    assert graph_traits_of(_PairGraph(PAIR)) is PAIR


async def test_the_guard_refuses_a_replaced_kit_helper() -> None:
    """Weakening a contract through one of the kit's helpers is refused like an override."""

    class Lenient(GraphStoreContract):
        async def _assert_matches(self, store: Any, oracle: Any, ctx: str = "") -> None:
            return None

    with pytest.raises(AssertionError, match="_assert_matches"):
        await Lenient().test_no_overrides_DO_NOT_OVERRIDE()
    await TestDeclaredPairGraphContract().test_no_overrides_DO_NOT_OVERRIDE()
