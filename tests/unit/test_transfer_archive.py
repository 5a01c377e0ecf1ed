"""Export, import and check on the memory stores (the demo knowledge base)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hexrag.adapters.memory import (
    MemoryCache,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.bootstrap import compose_engine
from hexrag.core.model import QueryParam
from hexrag.demo import DEFAULT_QUESTION, DemoStack, build_demo_engine
from hexrag.ports.scan import scan_all
from hexrag.transfer import (
    ArchiveError,
    StackStores,
    check_stack,
    export_stack,
    import_archive,
    read_manifest,
    verify_archive,
)

MODES = ("local", "global", "hybrid", "mix", "naive")


def _stores(demo: DemoStack, cache: MemoryCache | None = None) -> StackStores:
    return StackStores(
        entities=demo.entities,
        relationships=demo.relationships,
        chunks=demo.chunks,
        graph=demo.graph,
        chunk_store=demo.chunk_store,
        cache=cache,
        embedding_model="hexrag-hashing",
    )


def _empty(dim: int = 384, model: str | None = "hexrag-hashing") -> StackStores:
    return StackStores(
        entities=MemoryVectorIndex("entities", dim),
        relationships=MemoryVectorIndex("relationships", dim),
        chunks=MemoryVectorIndex("chunks", dim),
        graph=MemoryGraphStore(),
        chunk_store=MemoryChunkStore(),
        cache=MemoryCache(),
        embedding_model=model,
    )


async def _same_counts(source: StackStores, target: StackStores) -> None:
    """The target holds as many records as the source in every section the source holds."""
    want = await source.counts()
    got = await target.counts()
    assert {k: got.get(k, "absent") for k in want} == want


async def _all(scan: object) -> list[object]:
    out: list[object] = []
    async for page in scan_all(scan, limit=3):  # type: ignore[arg-type]
        out.extend(page.items)
    return out


async def test_round_trip_keeps_every_record_and_every_answer(tmp_path: Path) -> None:
    demo = await build_demo_engine()
    cache = MemoryCache(entries={"k1": {"return": "x", "nested": [1, None, "é"]}})
    source = _stores(demo, cache)
    seen: list[tuple[str, int]] = []
    manifest = await export_stack(
        source, tmp_path / "a", page_size=2, progress=lambda s, d, t: seen.append((s, d))
    )
    assert manifest["embedding"] == {"model": "hexrag-hashing", "dim": 384}
    assert {s for s, _ in seen} >= {"entities", "nodes", "edges", "text_chunks", "llm_cache"}
    assert verify_archive(tmp_path / "a") == read_manifest(tmp_path / "a")

    target = _empty()
    await import_archive(tmp_path / "a", target, batch=2)
    await _same_counts(source, target)
    for name in ("entities", "relationships", "chunks"):
        a = await _all(source.vector_index(name).scan_records)  # type: ignore[attr-defined]
        b = await _all(target.vector_index(name).scan_records)  # type: ignore[attr-defined]
        assert [r.id for r in a] == [r.id for r in b]  # type: ignore[attr-defined]
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x.vector, y.vector, atol=1e-7)  # type: ignore[attr-defined]
    assert await _all(source.graph.scan_nodes) == await _all(target.graph.scan_nodes)  # type: ignore[attr-defined]
    assert await _all(source.graph.scan_edges) == await _all(target.graph.scan_edges)  # type: ignore[attr-defined]
    assert await _all(source.chunk_store.scan_chunks) == await _all(target.chunk_store.scan_chunks)  # type: ignore[attr-defined]
    assert await target.cache.get_many(["k1"]) == [{"return": "x", "nested": [1, None, "é"]}]  # type: ignore[union-attr]

    engine = compose_engine(target, embedder=demo.engine.embedder, store_cache=False)
    for mode in MODES:
        param = QueryParam(mode=mode)  # type: ignore[arg-type]
        want = await demo.engine.query_data(DEFAULT_QUESTION, param)
        got = await engine.query_data(DEFAULT_QUESTION, param)
        assert got["data"] == want["data"], mode
        assert got["data"]["chunks"] or mode == "global", mode


async def test_refusals(tmp_path: Path) -> None:
    demo = await build_demo_engine()
    source = _stores(demo)
    await export_stack(source, tmp_path / "a")
    with pytest.raises(ArchiveError, match="not empty"):
        await export_stack(source, tmp_path / "a")
    await export_stack(source, tmp_path / "a", overwrite=True)

    with pytest.raises(ArchiveError, match="not empty"):
        await import_archive(tmp_path / "a", source)
    with pytest.raises(ArchiveError, match="dimension mismatch"):
        await import_archive(tmp_path / "a", _empty(dim=8))
    with pytest.raises(ArchiveError, match="embedding model mismatch"):
        await import_archive(tmp_path / "a", _empty(model="openai:text-embedding-3-small"))
    await import_archive(
        tmp_path / "a", _empty(model="openai:text-embedding-3-small"), allow_model_change=True
    )

    # a flipped byte is caught by the checksum before anything is written
    path = tmp_path / "a" / "edges.jsonl"
    data = bytearray(path.read_bytes())
    data[5] ^= 1
    path.write_bytes(bytes(data))
    target = _empty()
    with pytest.raises(ArchiveError, match=r"edges\.jsonl is corrupt"):
        await import_archive(tmp_path / "a", target)
    assert await target.entities.count() == 0

    (tmp_path / "a" / "manifest.json").unlink()
    with pytest.raises(ArchiveError, match=r"manifest\.json is missing"):
        await import_archive(tmp_path / "a", _empty())
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "manifest.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ArchiveError, match="not a hexrag-archive"):
        read_manifest(tmp_path / "b")


async def test_check_finds_each_kind_of_drift() -> None:
    demo = await build_demo_engine()
    stores = _stores(demo)
    clean = await check_stack(stores)
    assert clean.clean, clean.to_json()

    edges = await _all(demo.graph.scan_edges)  # type: ignore[attr-defined]
    victim = edges[0]
    await demo.graph.delete_edges([victim.id])  # type: ignore[attr-defined]
    chunks = await _all(demo.chunk_store.scan_chunks)  # type: ignore[attr-defined]
    await demo.chunk_store.delete_chunks([chunks[0].id])  # type: ignore[attr-defined]
    nodes = await _all(demo.graph.scan_nodes)  # type: ignore[attr-defined]
    await demo.graph.delete_nodes([nodes[-1].name])  # type: ignore[attr-defined]

    report = await check_stack(stores, page_size=2)
    assert not report.clean
    body = report.to_json()
    assert body["errors"]["relation_vectors_without_edge"] >= 1
    assert body["errors"]["entity_vectors_without_node"] == 1
    assert body["errors"]["dangling_source_ids"] >= 1
    assert body["errors"]["chunk_vectors_without_chunk"] == 1
    assert body["samples"]["chunk_vectors_without_chunk"] == [chunks[0].id]
    assert json.loads(json.dumps(body)) == body


async def test_migrate_resumes_without_duplicates_and_verifies(tmp_path: Path) -> None:
    from hexrag.transfer.migrate import migrate_stack, sample_queries, verify_migration

    demo = await build_demo_engine()
    source = _stores(demo, MemoryCache(entries={"k": {"return": "v"}}))
    target = _empty()
    state = tmp_path / "state.json"
    first = await migrate_stack(source, target, state_path=state, page_size=2, stop_after_pages=5)
    assert not first.resumed and state.is_file()
    partial = sum(v or 0 for v in (await target.counts()).values())
    assert 0 < partial < sum(v or 0 for v in (await source.counts()).values())
    # the interrupted target is not empty: only the state file lets the copy continue
    with pytest.raises(ArchiveError, match="not empty"):
        await migrate_stack(source, target, state_path=tmp_path / "other.json")
    second = await migrate_stack(source, target, state_path=state, page_size=2)
    assert second.resumed
    await _same_counts(source, target)
    # a third run is a no-op
    await migrate_stack(source, target, state_path=state, page_size=2)
    await _same_counts(source, target)

    engine = compose_engine(target, embedder=demo.engine.embedder, store_cache=False)
    queries = await sample_queries(source)
    assert queries
    report = await verify_migration(source, target, demo.engine, engine, queries=queries)
    assert report["ok"], report["mismatches"]
    assert report["queries"] == len(queries) * 5
    # a broken target is caught
    await target.graph.delete_edges([(await _all(target.graph.scan_edges))[0].id])  # type: ignore[attr-defined]
    report = await verify_migration(source, target, demo.engine, engine, queries=queries)
    assert not report["ok"] and any("edges" in m for m in report["mismatches"])


async def test_migrate_re_embeds_with_the_target_model(tmp_path: Path) -> None:
    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.transfer.migrate import migrate_stack

    demo = await build_demo_engine()
    source = _stores(demo)
    target = _empty(dim=64, model="hashing-64")
    with pytest.raises(ArchiveError, match="dimension mismatch"):
        await migrate_stack(source, target, state_path=tmp_path / "s.json")
    other = HashingEmbedder(64, model_name="hashing-64")
    await migrate_stack(source, target, state_path=tmp_path / "s2.json", re_embed=other)
    got = await _all(target.entities.scan_records)  # type: ignore[attr-defined]
    want = await other.embed([r.content for r in got])  # type: ignore[attr-defined]
    for rec, vec in zip(got, want, strict=True):
        np.testing.assert_allclose(rec.vector, vec / np.linalg.norm(vec), atol=1e-6)  # type: ignore[attr-defined]


async def test_a_source_failing_mid_scan_stops_after_the_written_pages(tmp_path: Path) -> None:
    """Pages are read ahead of the writer; a read error reaches the caller, the state holds
    only pages written, and the next run continues from there to the full copy."""
    from hexrag.transfer.migrate import migrate_stack

    demo = await build_demo_engine()
    source = _stores(demo)
    real_scan = source.relationships.scan_records  # type: ignore[attr-defined]
    calls = {"n": 0}

    async def flaky(cursor: str | None = None, *, limit: int = 1000) -> object:
        calls["n"] += 1
        if calls["n"] == 3:
            raise ConnectionError("source went away")
        return await real_scan(cursor, limit=limit)

    source.relationships.scan_records = flaky  # type: ignore[attr-defined]
    target = _empty()
    state = tmp_path / "state.json"
    with pytest.raises(ConnectionError, match="went away"):
        await migrate_stack(source, target, state_path=state, page_size=2)
    saved = json.loads(state.read_text())["sections"]["relationships"]
    assert saved["copied"] == 4 and not saved["done"]  # two pages of 2 written
    assert await target.relationships.count() == 4
    await migrate_stack(source, target, state_path=state, page_size=2)
    await _same_counts(source, target)


class _MissesBest(MemoryVectorIndex):
    """An ANN-like index: unless told to search exactly, it misses the best neighbour."""

    exact = False

    def set_exact_search(self, exact: bool) -> bool:
        previous, self.exact = self.exact, exact
        return previous

    async def query(self, vector, top_k, *, scope=None):  # type: ignore[no-untyped-def]
        hits = await super().query(vector, top_k + 1, scope=scope)
        return hits[:top_k] if self.exact else hits[1 : top_k + 1]


async def test_verification_searches_exactly_where_an_index_can(tmp_path: Path) -> None:
    """A target whose index is approximate (misses neighbours) still verifies: both sides
    search exactly meanwhile, and the switch is restored afterwards. Without the switch the
    same queries differ."""
    from hexrag.transfer.migrate import migrate_stack, sample_queries, verify_migration

    demo = await build_demo_engine()
    source = _stores(demo)
    target = _empty()
    target.entities = _MissesBest("entities", 384)
    await migrate_stack(source, target, state_path=tmp_path / "s.json")
    engine = compose_engine(target, embedder=demo.engine.embedder, store_cache=False)
    queries = await sample_queries(source)
    report = await verify_migration(source, target, demo.engine, engine, queries=queries)
    assert report["ok"], report["mismatches"]
    assert report["exact_search"] == ["target entities"]
    assert target.entities.exact is False  # type: ignore[attr-defined]
    loose = await verify_migration(source, target, demo.engine, engine, queries=queries,
                                   exact_search=False)
    assert not loose["ok"] and loose["exact_search"] == []
    assert any("entities search differs" in m for m in loose["mismatches"])
