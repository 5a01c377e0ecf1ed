"""The chunk-exact relation lookup on LightRAG's PostgreSQL layout, narrowed to the hits' pairs.

``relation_lookup = "chunk"`` (hexrag's default for hybrid and mix) used to run
``get_edges_by_chunk_ids``: a scan of every edge of the workspace. The engine now asks
``get_edges_by_chunk_ids_of_pairs`` (the edges of the relation hits' own pairs, through the
primary key). These tests prove it returns exactly what the scan returned for what the engine
keeps, on the parity deployment written by LightRAG's own classes, and on a copy of it made
nasty: ``chunk-1`` vs ``chunk-10``-style ids, multi-edges (the same pair stored in both
orientations, as LightRAG's non-canonical rows), ``<SEP>``-joined source ids, edges whose
endpoints were found but whose chunks do not match, self-loops and edges outside the pairs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from hexrag.devtools.lightrag_data import (
    PARITY_DATASETS,
    diff_query_data,
    generate_dataset,
    hexrag_query_data,
    keyword_queries,
    lightrag_query_data,
    parity_embedder,
    parity_settings,
    require_lightrag,
)
from tests.services.postgres import pg_dsn  # noqa: F401

pytestmark = [pytest.mark.parity, pytest.mark.backend("postgres")]

require_lightrag()

KEY = "flat300"
WORKSPACE = "lr_chunk_lookup"
NASTY = "lr_chunk_nasty"
QUERIES = keyword_queries(generate_dataset(PARITY_DATASETS[KEY]), 8)
CHUNK_LOOKUP = {"local": "chunk", "global": "chunk", "hybrid": "chunk", "mix": "chunk"}
SEP = "<SEP>"


class ScanOnlyGraph:
    """The store without the narrowed lookup: the engine falls back to the scan, as before."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "get_edges_by_chunk_ids_of_pairs" or name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)


class World:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.runner = asyncio.Runner()
        self.embedder = parity_embedder()
        self.pool: Any = None
        self.rag: Any = None
        self.stores: dict[str, dict[str, Any]] = {}

    def run(self, coro: Any) -> Any:
        return self.runner.run(coro)


async def _copy_workspace(pool: Any, source: str, target: str) -> None:
    """Every LightRAG table's rows of ``source`` copied under ``target`` (same columns)."""
    tables = [r[0] for r in await pool.fetch(
        "SELECT table_name FROM information_schema.columns "
        "WHERE column_name = 'workspace' AND table_name LIKE 'lightrag_%' "
        "AND table_schema = current_schema()"
    )]
    for table in sorted(tables, key=lambda t: t == "lightrag_graph_edges"):  # FK: nodes first
        cols = [r[0] for r in await pool.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $1 "
            "AND table_schema = current_schema() ORDER BY ordinal_position", table
        )]
        select = ", ".join("$1" if c == "workspace" else f'"{c}"' for c in cols)
        quoted = ", ".join(f'"{c}"' for c in cols)
        await pool.execute(
            f'INSERT INTO "{table}" ({quoted}) SELECT {select} FROM "{table}" '
            "WHERE workspace = $2",
            target, source,
        )


async def _make_nasty(w: World, pairs: list[tuple[str, str, str]]) -> None:
    """Edit the nasty copy's graph around the pairs the queries' relation hits name
    (``(a, b, first chunk id)``)."""
    ns = "chunk_entity_relation"
    rows: list[tuple[str, str, str]] = []
    for i, (a, b, chunk) in enumerate(pairs):
        lo, hi = min(a, b), max(a, b)  # LightRAG stores lo -> hi: add the other orientation
        kind = i % 4
        if kind == 0:  # a second edge of the pair, stored the other way round, <SEP>-joined
            rows.append((hi, lo, f'{{"source_id": "{chunk}0{SEP}x-{i}{SEP}{chunk}", '
                                 f'"description": "reverse {i}", "weight": 2.0}}'))
        elif kind == 1:  # chunk-1 vs chunk-10: the reverse edge names only longer ids
            rows.append((hi, lo, f'{{"source_id": "{chunk}0{SEP}{chunk}1", "weight": 1.0}}'))
        elif kind == 2:  # endpoints found, chunks do not match: the pair fallback decides
            await w.pool.execute(
                "UPDATE lightrag_graph_edges SET properties = jsonb_set(properties, "
                "'{source_id}', to_jsonb($4::text)) WHERE workspace = $1 AND namespace = $2 "
                "AND src_id = $3 AND tgt_id = $5",
                NASTY, ns, lo, f"nomatch-{i}", hi,
            )
        else:  # a self-loop on an endpoint and an edge outside every pair, same chunk
            rows.append((a, a, f'{{"source_id": "{chunk}", "weight": 3.0}}'))
            rows.append((f"zz-outsider-{i}", a + "-x",
                         f'{{"source_id": "{chunk}{SEP}{chunk}", "weight": 1.0}}'))
    await w.pool.executemany(
        "INSERT INTO lightrag_graph_nodes (workspace, namespace, id, properties) "
        "VALUES ($1, $2, $3, '{}'::jsonb) ON CONFLICT DO NOTHING",
        [(NASTY, ns, n) for s, t, _ in rows for n in (s, t)],
    )
    await w.pool.executemany(
        "INSERT INTO lightrag_graph_edges (workspace, namespace, src_id, tgt_id, properties) "
        "VALUES ($1, $2, $3, $4, $5::jsonb) ON CONFLICT DO NOTHING",
        [(NASTY, ns, s, t, p) for s, t, p in rows],
    )


@pytest.fixture(scope="module")
def world(pg_dsn: str) -> Iterator[World]:  # noqa: F811
    from hexrag.adapters.postgres import create_pool
    from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_stores
    from hexrag.devtools.lightrag_pg import (
        MODEL_NAME,
        init_lightrag_pg,
        make_lightrag_pg,
        write_lightrag_pg,
    )

    w = World(pg_dsn)
    try:
        dataset = generate_dataset(PARITY_DATASETS[KEY])
        w.run(write_lightrag_pg(dataset, pg_dsn, w.embedder, workspace=WORKSPACE))
        w.pool = w.run(create_pool(pg_dsn))
        for ws in (WORKSPACE, NASTY):
            w.stores[ws] = open_lightrag_pg_stores(
                w.pool, workspace=ws, embedding_dim=w.embedder.dim, model_name=MODEL_NAME
            )
        w.rag = make_lightrag_pg(pg_dsn, w.embedder, workspace=WORKSPACE)
        w.run(init_lightrag_pg(w.rag, pg_dsn))
        w.run(_copy_workspace(w.pool, WORKSPACE, NASTY))
        w.run(_make_nasty(w, w.run(_hit_pairs(w, WORKSPACE))))
        yield w
    finally:
        if w.rag is not None:
            w.run(w.rag.finalize_storages())
        if w.pool is not None:
            w.run(w.pool.close())
        w.runner.close()


async def _hits(w: World, ws: str) -> list[list[Any]]:
    """The relation vector hits of every query's high- and low-level keywords."""
    out = []
    for q in QUERIES:
        for words in (q.hl_keywords, q.ll_keywords):
            if words:
                vec = (await w.embedder.embed([", ".join(words)]))[0]
                out.append(await w.stores[ws]["relationships"].query(vec, 40))
    return out


async def _hit_pairs(w: World, ws: str) -> list[tuple[str, str, str]]:
    seen: dict[tuple[str, str], str] = {}
    for hits in await _hits(w, ws):
        for h in hits:
            chunk = (h.record.source_id or "").split(SEP)[0]
            if chunk:
                seen.setdefault((h.record.src_id, h.record.tgt_id), chunk)
    assert len(seen) >= 8, "the queries must hit relations"
    return [(a, b, c) for (a, b), c in seen.items()]


def _restricted(by_chunk: dict[str, list[Any]], pairs: list[tuple[str, str]]) -> dict[str, Any]:
    keep = {(min(a, b), max(a, b)) for a, b in pairs}
    out = {c: [r for r in rels if r.pair in keep] for c, rels in by_chunk.items()}
    return {c: rels for c, rels in out.items() if rels}


@pytest.mark.parametrize("ws", [WORKSPACE, NASTY])
def test_narrowed_lookup_is_the_scan_restricted_to_the_pairs(world: World, ws: str) -> None:
    graph = world.stores[ws]["graph"]
    checked = nonempty = 0
    for hits in world.run(_hits(world, ws)):
        pairs = [(h.record.src_id, h.record.tgt_id) for h in hits]
        chunk_ids = list(dict.fromkeys(
            c for h in hits for c in (h.record.source_id or "").split(SEP) if c
        ))
        # the hits' own chunks, longer/shorter look-alikes and an unknown id
        chunk_ids += [c + "0" for c in chunk_ids[:3]] + [c[:-1] for c in chunk_ids[:3]]
        chunk_ids.append("chunk-unknown")
        scan = world.run(graph.get_edges_by_chunk_ids(chunk_ids))
        narrow = world.run(graph.get_edges_by_chunk_ids_of_pairs(chunk_ids, pairs))
        assert narrow == _restricted(scan, pairs)
        # the pair subsets a single hit asks for, in the other orientation too
        for a, b in pairs[:5]:
            for pair in ((a, b), (b, a)):
                one = world.run(graph.get_edges_by_chunk_ids_of_pairs(chunk_ids, [pair]))
                assert one == _restricted(scan, [pair])
        checked += 1
        nonempty += bool(narrow)
    assert checked >= 8 and nonempty >= 4, (checked, nonempty)
    assert world.run(graph.get_edges_by_chunk_ids_of_pairs([], [("a", "b")])) == {}
    assert world.run(graph.get_edges_by_chunk_ids_of_pairs(["chunk-1"], [])) == {}


def test_nasty_copy_has_the_nasty_cases(world: World) -> None:
    graph = world.stores[NASTY]["graph"]
    pairs = world.run(_hit_pairs(world, WORKSPACE))
    a, b, chunk = pairs[0]
    got = world.run(graph.get_edges_by_chunk_ids_of_pairs([chunk, chunk + "0"], [(a, b)]))
    # both orientations of the pair name the chunk: a multi-edge, found by whole ids only
    assert {(r.src_id, r.tgt_id) for r in got[chunk]} == {(a, b), (b, a)}
    assert [(r.src_id, r.tgt_id) for r in got[chunk + "0"]] == [(max(a, b), min(a, b))]
    a, b, chunk = pairs[1]  # chunk-1 vs chunk-10: only the longer ids are named
    got = world.run(graph.get_edges_by_chunk_ids_of_pairs([chunk, chunk[:-1]], [(a, b)]))
    assert [(r.src_id, r.tgt_id) for r in got.get(chunk, [])] == [(min(a, b), max(a, b))]
    assert chunk[:-1] not in got
    a, b, chunk = pairs[2]  # the endpoints' edge is there, its chunk no longer matches
    assert world.run(graph.get_edges_by_chunk_ids_of_pairs([chunk], [(a, b)])) == {}
    assert world.run(graph.get_edges_by_pairs([(a, b)]))[(a, b)]
    a, b, chunk = pairs[3]  # the self-loop and the outsider name the chunk, outside the pairs
    scan = world.run(graph.get_edges_by_chunk_ids([chunk]))[chunk]
    assert {(a, a), ("zz-outsider-3", a + "-x")} <= {(r.src_id, r.tgt_id) for r in scan}
    narrow = world.run(graph.get_edges_by_chunk_ids_of_pairs([chunk], [(a, b)]))
    assert {(r.src_id, r.tgt_id) for r in narrow.get(chunk, [])} <= {(a, b), (b, a)}


@pytest.mark.parametrize("pick", ["WEIGHT", "VECTOR"])
@pytest.mark.parametrize("ws", [WORKSPACE, NASTY])
def test_engine_results_equal_the_scan_lookup(world: World, ws: str, pick: str) -> None:
    from hexrag.bootstrap import compose_engine

    stores = world.stores[ws]
    settings = parity_settings(pick, relation_lookup=CHUNK_LOOKUP)
    new = compose_engine(stores, embedder=world.embedder, settings=settings)
    old = compose_engine({**stores, "graph": ScanOnlyGraph(stores["graph"])},
                         embedder=world.embedder, settings=settings)
    issued: list[str] = []
    graph = stores["graph"]
    fetch = graph._fetch

    async def recording(action: str, sql: str, *args: Any) -> Any:
        issued.append(action)
        return await fetch(action, sql, *args)

    graph._fetch = recording
    try:
        by_chunk = 0
        for mode in ("global", "hybrid", "mix", "local"):
            for q in QUERIES:
                issued.clear()
                hx = world.run(hexrag_query_data(new, mode, q))
                assert "reading lightrag_graph_edges by chunk id" not in issued
                info = hx["metadata"]["processing_info"]
                by_chunk += info["relations_resolved_by_chunk"]
                was = world.run(hexrag_query_data(old, mode, q))
                assert not diff_query_data(was, hx, exact=True), (mode, q.label)
                assert was["metadata"]["processing_info"] == info
        assert by_chunk > 0
    finally:
        del graph._fetch


@pytest.mark.parametrize("mode", ["hybrid", "mix"])
def test_readme_default_lookup_returns_lightrags_data(world: World, mode: str) -> None:
    """hybrid and mix with the default settings (chunk lookup) on the untouched deployment:
    LightRAG's data, WEIGHT picking exactly."""
    from hexrag.bootstrap import compose_engine
    from hexrag.core.model import EngineSettings

    assert EngineSettings().lookup_for(mode) == "chunk"
    settings = parity_settings("WEIGHT", relation_lookup=EngineSettings().relation_lookup)
    engine = compose_engine(world.stores[WORKSPACE], embedder=world.embedder, settings=settings)
    for q in QUERIES:
        lr = world.run(lightrag_query_data(world.rag, mode, q))
        hx = world.run(hexrag_query_data(engine, mode, q))
        assert not diff_query_data(lr, hx, exact=True), (q.label, diff_query_data(lr, hx)[:3])


def _old_chunk(row: Any) -> Any:
    """The chunk as the two-step conversion built it (PGKVStorage record, then
    ``chunk_from_kv``): the oracle of the one-pass decoder."""
    import json

    from hexrag.adapters.postgres.lightrag_layout import chunk_from_kv

    out = dict(row)
    for key, empty in (("llm_cache_list", []), ("heading", {}), ("sidecar", {})):
        value = out.get(key)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                value = empty
        if not isinstance(value, type(empty)):
            value = empty
        out[key] = value
    if not out.get("update_time"):
        out["update_time"] = out.get("create_time", 0)
    out.pop("id", None)
    for key in ("heading", "sidecar"):
        if not out.get(key):
            out.pop(key, None)
    return chunk_from_kv(row["id"], out)


def test_chunk_rows_decode_as_the_two_step_conversion(world: World) -> None:
    from hexrag.adapters.postgres.lightrag_rows import CHUNK_COLUMNS, chunk_from_row

    odd = "lr_chunk_odd_rows"

    async def rows() -> list[Any]:
        await world.pool.executemany(
            "INSERT INTO lightrag_doc_chunks (workspace, id, tokens, chunk_order_index, "
            "full_doc_id, content, file_path, llm_cache_list, heading, sidecar, create_time, "
            "update_time) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, "
            "$10::jsonb, $11, $12)",
            [
                (odd, "chunk-a", None, None, None, None, None, "[]", "{}", "{}", None, None),
                (odd, "chunk-b", 3, 0, "doc-1", "text", "f.md", '["x", 1]',
                 '{"title": "T", "level": 2}', '{"k": [1]}', None, None),
                (odd, "chunk-c", 4, 1, "doc-1", "", "f.md", '{"not": "a list"}', '[1, 2]',
                 '"text"', None, None),
            ],
        )
        await world.pool.execute(
            "UPDATE lightrag_doc_chunks SET create_time = to_timestamp(1700000000), "
            "update_time = to_timestamp(0) WHERE workspace = $1 AND id = 'chunk-c'", odd
        )
        return list(await world.pool.fetch(
            f"SELECT {CHUNK_COLUMNS} FROM lightrag_doc_chunks "
            "WHERE workspace = ANY($1::text[]) ORDER BY workspace, id",
            [WORKSPACE, odd],
        ))

    got = world.run(rows())
    assert len(got) > 50
    for row in got:
        new, old = chunk_from_row(row), _old_chunk(row)
        assert new == old, row["id"]
        assert list(new.metadata) == list(old.metadata), row["id"]


@pytest.mark.parametrize("ws", [WORKSPACE, NASTY])
def test_node_edges_with_degrees_equal_the_two_reads(world: World, ws: str) -> None:
    graph = world.stores[ws]["graph"]
    pairs = world.run(_hit_pairs(world, WORKSPACE))
    names = list(dict.fromkeys(n for a, b, _ in pairs for n in (a, b)))[:40]
    names += ["no such entity", names[0]]
    edges, degrees = world.run(graph.get_node_edges_with_degrees(names))
    assert edges == world.run(graph.get_node_edges(names))
    ends = list(dict.fromkeys(n for rels in edges.values() for r in rels
                              for n in (r.src_id, r.tgt_id)))
    assert len(ends) > len(names)
    assert degrees == world.run(graph.node_degrees(ends))
    if ws == NASTY:  # the self-loops count twice
        loops = [a for a, _, _ in pairs[3::4] if a in names]
        assert loops and all(degrees[a] >= 2 for a in loops)
    assert world.run(graph.get_node_edges_with_degrees([])) == ({}, {})


@pytest.mark.parametrize("ws", [WORKSPACE, NASTY])
def test_nodes_with_degrees_equal_the_two_reads(world: World, ws: str) -> None:
    graph = world.stores[ws]["graph"]
    pairs = world.run(_hit_pairs(world, WORKSPACE))
    names = [n for a, b, _ in pairs for n in (a, b)][:30]
    names += ["no such entity", names[0], f"zz-outsider-{3}"]
    nodes, degrees = world.run(graph.get_nodes_with_degrees(names))
    assert nodes == world.run(graph.get_nodes(names))
    assert degrees == world.run(graph.node_degrees(names))
    assert degrees["no such entity"] == 0 and "no such entity" not in nodes
    assert world.run(graph.get_nodes_with_degrees([])) == ({}, {})
