"""A LightRAG working directory through an archive and back, judged by LightRAG 1.5.7 itself.

The parity datasets (written by LightRAG's own storage classes) are opened with
``load_workdir``, exported (``hexrag.transfer.export_stack``), imported into an empty stack of
the working-directory adapters and written with ``save_workdir`` into a new directory. LightRAG
then opens that new directory and must answer every keyword query in every mode exactly as it
answers on the original (WEIGHT: everything in order; VECTOR: chunks as sets). A migration
interrupted half-way and resumed gives the same directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.workdir import empty_workdir_stack, load_workdir, save_workdir
from hexrag.devtools.lightrag_data import (
    PARITY_QUERIES,
    LightRAGDir,
    diff_query_data,
    keyword_queries,
    lightrag_query_data,
    open_lightrag,
    require_lightrag,
)
from hexrag.transfer import StackStores, export_stack, import_archive
from hexrag.transfer.migrate import migrate_stack

pytestmark = pytest.mark.parity

require_lightrag()

MODES = ("local", "global", "hybrid", "mix", "naive")


def _stores(stack: Any, model: str) -> StackStores:
    """Every section of a working-directory stack (documents and KV namespaces included)."""
    return StackStores(**stack.stack_stores(), embedding_model=model)


async def _compare(
    world: Any, key: str, original: LightRAGDir, copy: LightRAGDir, pick: str
) -> list[str]:
    embedder = world.embedders[key]
    a = await open_lightrag(original, embedder, kg_chunk_pick_method=pick)
    b = await open_lightrag(copy, embedder, kg_chunk_pick_method=pick)
    diffs: list[str] = []
    try:
        for q in keyword_queries(world.datasets[key], PARITY_QUERIES[key]):
            for mode in MODES:
                want = await lightrag_query_data(a, mode, q)
                got = await lightrag_query_data(b, mode, q)
                for d in diff_query_data(want, got, exact=pick == "WEIGHT"):
                    diffs.append(f"{q.label} {mode} {pick}: {d}")
    finally:
        await a.finalize_storages()
        await b.finalize_storages()
    return diffs


@pytest.mark.parametrize("key", ["flat300", "ties300"])
def test_archive_round_trip_answers_as_the_original(
    parity_world: Any, tmp_path: Path, key: str
) -> None:
    from lightrag.kg.shared_storage import finalize_share_data

    embedder = parity_world.embedders[key]
    source = load_workdir(parity_world.dirs[key].path, embedder_dim=embedder.dim)
    stores = _stores(source, embedder.model_name)
    parity_world.run(export_stack(stores, tmp_path / "archive", page_size=97))
    target = empty_workdir_stack(embedder.dim)
    parity_world.run(import_archive(tmp_path / "archive", _stores(target, embedder.model_name)))
    target.extra_files = dict(source.extra_files)  # documents and trackers are not ours to copy
    copy = LightRAGDir(tmp_path / "copy", key)
    save_workdir(target, copy.root, workspace=key)
    finalize_share_data()
    for pick in ("WEIGHT", "VECTOR"):
        diffs = parity_world.run(_compare(parity_world, key, parity_world.dirs[key], copy, pick))
        assert not diffs, "\n".join(diffs[:20])


def test_interrupted_migration_resumes_to_the_same_directory(
    parity_world: Any, tmp_path: Path
) -> None:
    key = "flat300"
    embedder = parity_world.embedders[key]
    source = load_workdir(parity_world.dirs[key].path, embedder_dim=embedder.dim)
    stores = _stores(source, embedder.model_name)
    state = tmp_path / "state.json"

    whole = empty_workdir_stack(embedder.dim)
    parity_world.run(
        migrate_stack(stores, _stores(whole, embedder.model_name), state_path=tmp_path / "w.json")
    )
    resumed = empty_workdir_stack(embedder.dim)
    target = _stores(resumed, embedder.model_name)
    first = parity_world.run(
        migrate_stack(stores, target, state_path=state, page_size=50, stop_after_pages=4)
    )
    assert not first.resumed
    second = parity_world.run(migrate_stack(stores, target, state_path=state, page_size=50))
    assert second.resumed
    save_workdir(whole, tmp_path / "a")
    save_workdir(resumed, tmp_path / "b")
    for name in sorted(p.name for p in (tmp_path / "a").iterdir()):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.parametrize("key", ["flat300", "ties300"])
def test_streamed_directory_lists_what_the_loaded_directory_lists(
    parity_world: Any, key: str
) -> None:
    """``hexrag migrate`` / ``export`` read a directory page by page
    (``open_workdir_source``): every section equals the loaded directory's scan."""
    from dataclasses import fields

    import numpy as np

    from hexrag.adapters.workdir.source import close_workdir_source, open_workdir_source
    from hexrag.ports.scan import scan_all

    embedder = parity_world.embedders[key]
    loaded = _stores(load_workdir(parity_world.dirs[key].path), embedder.model_name)
    streamed = open_workdir_source(parity_world.dirs[key].path)

    async def listing(stores: StackStores) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        scans = {
            "entities": stores.entities.scan_records,  # type: ignore[attr-defined]
            "relationships": stores.relationships.scan_records,  # type: ignore[attr-defined]
            "chunks": stores.chunks.scan_records,  # type: ignore[attr-defined]
            "nodes": stores.graph.scan_nodes,  # type: ignore[attr-defined]
            "edges": stores.graph.scan_edges,  # type: ignore[attr-defined]
            "text_chunks": stores.chunk_store.scan_chunks,  # type: ignore[attr-defined]
            "llm_cache": stores.cache.scan_entries,  # type: ignore[union-attr]
        }
        for name, scan in scans.items():
            items = []
            async for page in scan_all(scan, limit=53):
                items.extend(page.items)
            out[name] = items
        return out

    try:
        a = parity_world.run(listing(loaded))
        b = parity_world.run(listing(streamed))
    finally:
        close_workdir_source(streamed)
    assert parity_world.run(loaded.counts()) == parity_world.run(streamed.counts())
    for name in ("entities", "relationships", "chunks"):
        assert len(a[name]) == len(b[name]) > 0
        for x, y in zip(a[name], b[name], strict=True):
            skip = ("vector", "row_vector")  # the stream carries the row's float16 string too
            assert [getattr(x, f.name) for f in fields(x) if f.name not in skip] == [
                getattr(y, f.name) for f in fields(y) if f.name not in skip
            ]
            np.testing.assert_array_equal(x.vector, y.vector)
    for name in ("nodes", "edges", "text_chunks", "llm_cache"):
        assert a[name] == b[name], name
