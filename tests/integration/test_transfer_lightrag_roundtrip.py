"""A directory LightRAG 1.5.7 wrote with its own ``ainsert`` (so every document-side file is
there: doc status, full docs, full entities/relations, entity/relation chunk lists, the
extraction cache) goes directory -> directory -> archive -> directory through hexrag's
streamed copy source, ``migrate_stack``, ``export_stack`` and ``import_archive``: every file
comes back JSON-equal and every vector matrix bit-identical, and verification passes each hop.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.adapters.workdir import empty_workdir_stack, load_workdir, save_workdir
from hexrag.adapters.workdir.source import close_workdir_source, open_workdir_source
from hexrag.bootstrap import compose_engine
from hexrag.devtools.lightrag_data import require_lightrag
from hexrag.transfer import StackStores, export_stack, import_archive
from hexrag.transfer.digests import compare_digests, stack_digests
from hexrag.transfer.migrate import migrate_stack, sample_queries, verify_migration
from tests.integration.test_ingest_lightrag import DIM, _lightrag

require_lightrag()


def _stores(stack: Any) -> StackStores:
    return StackStores(**stack.stack_stores(), embedding_model=None)


def _vdb(path: Path) -> tuple[dict[str, Any], bytes]:
    data = json.loads(path.read_text(encoding="utf-8"))
    matrix = base64.b64decode(data.pop("matrix"))
    return data, matrix


def _same_file(a: Path, b: Path) -> list[str]:
    name = a.name
    if not b.is_file():
        return [f"{name}: missing"]
    if name.endswith(".graphml"):
        ga, gb = nx.read_graphml(a), nx.read_graphml(b)
        out = []
        if dict(ga.nodes(data=True)) != dict(gb.nodes(data=True)):
            out.append(f"{name}: nodes differ")
        ea = {tuple(sorted((u, v))): d for u, v, d in ga.edges(data=True)}
        eb = {tuple(sorted((u, v))): d for u, v, d in gb.edges(data=True)}
        if ea != eb:
            out.append(f"{name}: edges differ")
        return out
    if name.startswith("vdb_"):
        (da, ma), (db, mb) = _vdb(a), _vdb(b)
        out = []
        if ma != mb:
            fa = np.frombuffer(ma, dtype="<f4")
            fb = np.frombuffer(mb, dtype="<f4")
            out.append(f"{name}: matrix not bit-identical "
                       f"(max diff {np.abs(fa - fb).max() if fa.shape == fb.shape else 'shape'})")
        if da != db:
            out.append(f"{name}: rows differ")
        return out
    ja = json.loads(a.read_text(encoding="utf-8"))
    jb = json.loads(b.read_text(encoding="utf-8"))
    return [] if ja == jb else [f"{name}: JSON differs"]


async def _copy_dir(src: Path, dst: Path, state: Path) -> dict[str, Any]:
    """Streamed source -> new working-directory stack -> saved; verified against the source
    loaded whole."""
    source = open_workdir_source(src)
    try:
        target = empty_workdir_stack(DIM)
        await migrate_stack(source, _stores(target), state_path=state, page_size=5)
        save_workdir(target, dst)
        assert compare_digests(await stack_digests(source),
                               await stack_digests(_stores(load_workdir(dst)))) == []
    finally:
        close_workdir_source(source)
    return await _verify(src, dst)


async def _verify(a: Path, b: Path) -> dict[str, Any]:
    one, two = load_workdir(a), load_workdir(b)
    embedder = HashingEmbedder(DIM)
    x = compose_engine(one.engine_stores(), embedder=embedder, cache=None,
                       fragments=one.documents)
    y = compose_engine(two.engine_stores(), embedder=embedder, cache=None,
                       fragments=two.documents)
    queries = await sample_queries(_stores(one), 5)
    report = await verify_migration(_stores(one), _stores(two), x, y, queries=queries)
    assert report["ok"], report["mismatches"]
    return report


def test_directory_directory_archive_directory(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    original, _calls = _lightrag(tmp_path / "lr", monkeypatch, cache=True)
    names = sorted(p.name for p in original.iterdir() if p.is_file())
    for expected in ("kv_store_doc_status.json", "kv_store_full_docs.json",
                     "kv_store_full_entities.json", "kv_store_full_relations.json",
                     "kv_store_entity_chunks.json", "kv_store_relation_chunks.json",
                     "kv_store_llm_response_cache.json", "vdb_entities.json"):
        assert expected in names
    second = tmp_path / "second"
    third = tmp_path / "third"

    async def run() -> None:
        report = await _copy_dir(original, second, tmp_path / "1.json")
        assert report["queries"] > 0
        source = open_workdir_source(second)
        try:
            await export_stack(source, tmp_path / "archive", page_size=6)
        finally:
            close_workdir_source(source)
        stack = empty_workdir_stack(DIM)
        await import_archive(tmp_path / "archive", _stores(stack), batch=4)
        save_workdir(stack, third)
        await _verify(original, third)

    asyncio.run(run())
    for copy in (second, third):
        diffs = [d for name in names for d in _same_file(original / name, copy / name)]
        assert not diffs, f"{copy.name}: {diffs}"


def test_exact_ties_survive_a_directory_copy(parity_world: Any, tmp_path: Path) -> None:
    """``ties300`` holds exactly equal scores (duplicate descriptions, the hashing
    embedder). Copied directory -> directory, its matrices are bit-identical and the
    verification passes: before, re-normalised vectors moved by up to 3e-8, reordered the
    ties, and ``migrate`` exited 1 on an exact copy."""
    key = "ties300"
    source_dir = parity_world.dirs[key].path
    embedder = parity_world.embedders[key]

    async def run() -> dict[str, Any]:
        source = open_workdir_source(source_dir)
        try:
            target = empty_workdir_stack(embedder.dim)
            await migrate_stack(source, _stores(target), state_path=tmp_path / "s.json",
                                page_size=64)
            save_workdir(target, tmp_path / "copy")
        finally:
            close_workdir_source(source)
        one, two = load_workdir(source_dir), load_workdir(tmp_path / "copy")
        x = compose_engine(one.engine_stores(), embedder=embedder, cache=None)
        y = compose_engine(two.engine_stores(), embedder=embedder, cache=None)
        queries = await sample_queries(_stores(one), 8)
        return await verify_migration(_stores(one), _stores(two), x, y, queries=queries)

    report = parity_world.run(run())
    assert report["ok"], report["mismatches"]
    assert report["queries"] > 0
    for name in ("vdb_entities.json", "vdb_relationships.json", "vdb_chunks.json"):
        assert _vdb(source_dir / name)[1] == _vdb(tmp_path / "copy" / name)[1], name
