"""Stored node degrees on LightRAG's PostgreSQL graph (``hexrag stored-degrees``).

In a database of its own (the triggers live on ``lightrag_graph_edges``, shared by every
workspace of a database): the stored degrees equal the counted ones after LightRAG's own graph
writes (``PGTableGraphStorage``: node and edge upserts, updates, node deletion with its edges,
edge removal), hexrag's writes, raw SQL (an update moving an edge, a truncate) and across two
workspaces; queries read them and give what counting gives; a store whose degrees are removed
while it runs falls back to counting; the command installs, checks and removes them.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hexrag.devtools.lightrag_data import (
    PARITY_DATASETS,
    diff_query_data,
    generate_dataset,
    hexrag_query_data,
    keyword_queries,
    parity_embedder,
    parity_settings,
    require_lightrag,
)
from hexrag.domain.records import Relation
from tests.services.postgres import pg_dsn  # noqa: F401

pytestmark = [pytest.mark.backend("postgres")]

require_lightrag()

WS_A, WS_B = "deg_a", "deg_b"


@pytest.fixture
def fresh_dsn(pg_dsn: str) -> Iterator[str]:  # noqa: F811
    """A database of its own, dropped afterwards."""
    import asyncpg

    db = f"hx_deg_{uuid.uuid4().hex[:10]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(pg_dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{db}"'))
    try:
        yield pg_dsn.replace("/postgres?", f"/{db}?", 1)
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))


class _World:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.pool: Any = None
        self.rags: dict[str, Any] = {}
        self.runner = asyncio.Runner()

    def run(self, coro: Any) -> Any:
        return self.runner.run(coro)

    async def open(self) -> None:
        from hexrag.adapters.postgres import create_pool
        from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg

        self.pool = await create_pool(self.dsn, max_size=4)
        for ws in (WS_A, WS_B):
            rag = make_lightrag_pg(self.dsn, parity_embedder(), workspace=ws)
            await init_lightrag_pg(rag, self.dsn)
            self.rags[ws] = rag

    async def close(self) -> None:
        for rag in self.rags.values():
            await rag.finalize_storages()
        if self.pool is not None:
            await self.pool.close()

    def store(self, ws: str) -> Any:
        from hexrag.adapters.postgres.lightrag_graph_store import LightRAGPgGraphStore

        return LightRAGPgGraphStore(self.pool, workspace=ws)

    async def all_names(self, ws: str) -> list[str]:
        rows = await self.pool.fetch(
            "SELECT id FROM lightrag_graph_nodes WHERE workspace = $1 UNION "
            "SELECT src_id FROM lightrag_graph_edges WHERE workspace = $1 UNION "
            "SELECT tgt_id FROM lightrag_graph_edges WHERE workspace = $1", ws)
        return [*sorted(r["id"] for r in rows), "no such node"]

    async def assert_degrees_counted(self) -> None:
        """The stored degrees (read through a store that found them) equal the counts."""
        for ws in (WS_A, WS_B):
            stored, counted = self.store(ws), self.store(ws)
            names = await self.all_names(ws)
            await stored.ensure_tables()  # finds the table and its triggers
            assert stored._stored_degrees
            got = await stored.node_degrees(names)
            await counted.ensure_tables()
            counted.use_stored_degrees = False
            assert got == await counted.node_degrees(names)
        # no row for a node without edges (a count fallen to zero is removed)
        zero = await self.pool.fetchval(
            "SELECT count(*) FROM hexrag_lightrag_graph_degrees WHERE degree <= 0")
        assert zero == 0


@pytest.fixture
def world(fresh_dsn: str) -> Iterator[_World]:
    w = _World(fresh_dsn)
    try:
        w.run(w.open())
        yield w
    finally:
        w.run(w.close())
        w.runner.close()


async def _lightrag_writes(w: _World, rng: random.Random, names: list[str]) -> None:
    """A random batch of LightRAG's own graph writes in both workspaces."""
    for ws, rag in w.rags.items():
        graph = rag.chunk_entity_relation_graph
        for _ in range(12):
            a, b = rng.choice(names), rng.choice(names)  # a == b: a self-loop
            for n in (a, b):
                await graph.upsert_node(n, {"entity_id": n, "entity_type": "T",
                                            "description": f"{ws} {n}", "source_id": "c1"})
            await graph.upsert_edge(a, b, {"weight": "1.0", "description": f"{a}-{b}",
                                           "source_id": "c1", "keywords": "k"})
        await graph.remove_edges([(rng.choice(names), rng.choice(names)) for _ in range(3)])
        await graph.delete_node(rng.choice(names))


def test_stored_degrees_follow_every_write(world: _World) -> None:
    async def run() -> None:
        rng = random.Random(5)
        names = [f"N{i}" for i in range(14)]
        await _lightrag_writes(world, rng, names)  # some edges exist before the install
        store = world.store(WS_A)
        assert not await store.stored_degrees()
        await store.install_stored_degrees()
        assert await store.stored_degrees()
        await store.install_stored_degrees()  # idempotent
        await world.assert_degrees_counted()
        for _ in range(4):
            await _lightrag_writes(world, rng, names)
            await world.assert_degrees_counted()
        # hexrag's own writes through the LightRAG layout
        await store.upsert_edges([Relation(id="x", src_id="N1", tgt_id="Z9", weight=1.0),
                                  Relation(id="y", src_id="Z9", tgt_id="Z9", weight=1.0)])
        await world.assert_degrees_counted()
        # raw SQL: an update moving edges to other ends, a batch delete, a truncate
        await world.pool.execute(
            """UPDATE lightrag_graph_edges SET tgt_id = 'Z9' WHERE ctid = (
                SELECT e.ctid FROM lightrag_graph_edges AS e
                WHERE e.workspace = $1 AND e.src_id <> 'Z9' AND e.tgt_id <> 'Z9'
                  AND NOT EXISTS (SELECT 1 FROM lightrag_graph_edges AS f
                                  WHERE f.workspace = e.workspace AND f.namespace = e.namespace
                                    AND f.src_id = e.src_id AND f.tgt_id = 'Z9')
                LIMIT 1)""", WS_A)
        await world.pool.execute(  # several rows at once, each to its other orientation
            """UPDATE lightrag_graph_edges AS e SET src_id = e.tgt_id, tgt_id = e.src_id
               WHERE e.workspace = $1 AND e.src_id < 'N5' AND NOT EXISTS (
                   SELECT 1 FROM lightrag_graph_edges AS f
                   WHERE f.workspace = e.workspace AND f.namespace = e.namespace
                     AND f.src_id = e.tgt_id AND f.tgt_id = e.src_id)""", WS_B)
        await world.assert_degrees_counted()
        await world.pool.execute("DELETE FROM lightrag_graph_edges WHERE src_id > 'N7'")
        await world.assert_degrees_counted()
        await world.pool.execute("TRUNCATE lightrag_graph_edges")
        await world.assert_degrees_counted()
        assert await world.pool.fetchval("SELECT count(*) FROM hexrag_lightrag_graph_degrees") == 0
        await _lightrag_writes(world, rng, names)
        await world.assert_degrees_counted()
        await store.remove_stored_degrees()
        assert not await store.stored_degrees()
        assert await world.pool.fetchval(
            "SELECT to_regclass('hexrag_lightrag_graph_degrees') IS NULL")
        assert await world.pool.fetchval(
            "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'hexrag_degrees_%'") == 0

    world.run(run())


def test_queries_read_them_and_answer_as_counting(world: _World, tmp_path: Path) -> None:
    from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_stores
    from hexrag.adapters.tiktoken_offline import default_tokenizer
    from hexrag.core.query.engine import QueryEngine
    from hexrag.devtools.lightrag_pg import MODEL_NAME, write_lightrag_pg

    dataset = generate_dataset(PARITY_DATASETS["flat300"])
    queries = keyword_queries(dataset, 4)
    embedder = parity_embedder()

    def engine() -> tuple[Any, Any]:
        stores = open_lightrag_pg_stores(world.pool, workspace="deg_q",
                                         embedding_dim=embedder.dim, model_name=MODEL_NAME)
        eng = QueryEngine(tokenizer=default_tokenizer(), **stores, embedder=embedder,
                          settings=parity_settings("WEIGHT"))
        return eng, stores["graph"]

    async def run() -> None:
        await write_lightrag_pg(dataset, world.dsn, embedder, workspace="deg_q")
        counting, counting_graph = engine()
        before = {(m, i): await hexrag_query_data(counting, m, q)
                  for m in ("local", "hybrid") for i, q in enumerate(queries)}
        assert not counting_graph._stored_degrees
        await world.store("deg_q").install_stored_degrees()
        stored, stored_graph = engine()
        for (m, i), want in before.items():
            got = await hexrag_query_data(stored, m, queries[i])
            assert not diff_query_data(want, got, exact=True), (m, i)
        assert stored_graph._stored_degrees  # read, not counted
        # removed while the store runs: the next reads count again, same answers
        await world.store("deg_q").remove_stored_degrees()
        for (m, i), want in before.items():
            got = await hexrag_query_data(stored, m, queries[i])
            assert not diff_query_data(want, got, exact=True), (m, i)
        assert not stored_graph._stored_degrees

    world.run(run())


def test_the_command(world: _World, tmp_path: Path) -> None:
    from hexrag.cli import app
    from hexrag.devtools.lightrag_pg import MODEL_NAME

    toml = tmp_path / "lightrag.toml"
    toml.write_text(
        f'vector_index = "{world.dsn}"\ngraph_store = "{world.dsn}"\n'
        f'chunk_store = "{world.dsn}"\nlayout = "lightrag"\nworkspace = "{WS_A}"\n'
        f'lightrag_model_name = "{MODEL_NAME}"\nembedder = "hashing"\n'
    )
    cli = CliRunner()

    def call(*args: str) -> str:
        result = cli.invoke(app, ["stored-degrees", "--stack", str(toml), *args])
        assert result.exit_code == 0, result.output
        return result.output.strip()

    assert call("--check") == "stored degrees: not installed"
    assert call() == "stored degrees: installed"
    assert call("--check") == "stored degrees: installed"
    assert call("--remove") == "stored degrees: removed"
    assert call("--remove") == "stored degrees: not installed"
    # a stack whose graph keeps no such thing (in memory): a clear error
    memory = tmp_path / "memory.toml"
    memory.write_text('vector_index = "memory"\ngraph_store = "memory"\n'
                      'chunk_store = "memory"\nembedder = "hashing"\n')
    result = cli.invoke(app, ["stored-degrees", "--stack", str(memory)])
    assert result.exit_code == 2, result.output
    assert "keeps no stored degrees" in result.output
