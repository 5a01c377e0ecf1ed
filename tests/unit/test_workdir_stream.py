"""A working directory read page by page lists exactly what the loaded directory lists."""

from __future__ import annotations

import asyncio
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hexrag.adapters.workdir.stream as stream_mod
from hexrag.adapters.workdir import load_workdir
from hexrag.adapters.workdir.nanovdb import write_nano_vdb
from hexrag.adapters.workdir.source import close_workdir_source, open_workdir_source
from hexrag.adapters.workdir.stream import NanoVectorStream
from hexrag.core.errors import ConfigurationError
from hexrag.ports.cache import KV_NAMESPACES

DIM = 8
NAMES = {"entities": "vdb_entities.json", "relationships": "vdb_relationships.json",
         "chunks": "vdb_chunks.json"}


def _rows(ns: str, n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        # non-ASCII, escapes and a long row: windows cut characters and rows
        content = f"Zürich «{i}» \"quoted\" \\ tab\t" + ("x" * (i * 37 % 900))
        row: dict[str, Any] = {"__id__": f"{ns[:3]}-{i:04d}", "__created_at__": 1700000000 + i,
                               "content": content, "source_id": f"chunk-{i % 5}",
                               "file_path": "product_id:p1:category:Billing"}
        if ns == "entities":
            row["entity_name"] = f"Ä{i}"
        if ns == "relationships":
            row["src_id"], row["tgt_id"] = f"Ä{i}", f"Ä{i + 1}"
        if ns == "chunks":
            row["full_doc_id"] = f"doc-{i % 3}"
        rows.append(row)
    return rows


def _workdir(tmp: Path, n: int = 41, seed: int = 5) -> Path:
    rng = np.random.default_rng(seed)
    for ns, name in NAMES.items():
        matrix = rng.normal(size=(n, DIM)).astype(np.float32) * 3
        if ns == "entities":
            matrix[3] = 0.0  # a zero row stays zero
        write_nano_vdb(tmp / name, embedding_dim=DIM, rows=_rows(ns, n), matrix=matrix)
    (tmp / "graph_chunk_entity_relation.graphml").write_text(
        '<?xml version=\'1.0\' encoding=\'utf-8\'?>\n<graphml xmlns="http://graphml.graphdrawing'
        '.org/xmlns"><graph edgedefault="undirected"><node id="A"/></graph></graphml>\n',
        encoding="utf-8",
    )
    chunks = {f"chunk-{i}": {"content": f"text {i}", "tokens": 3, "chunk_order_index": 0,
                             "full_doc_id": "doc-0", "file_path": "f"} for i in range(5)}
    (tmp / "kv_store_text_chunks.json").write_text(json.dumps(chunks), encoding="utf-8")
    return tmp


def _plain(record: Any) -> list[Any]:
    # the stream also carries each row's float16 "vector" string (row_vector), for copies
    return [getattr(record, f.name) for f in fields(record)
            if f.name not in ("vector", "row_vector")]


async def _pages(scan: Any, limit: int, cursor: str | None = None) -> list[list[Any]]:
    pages = []
    while True:
        page = await scan(cursor, limit=limit)
        pages.append(page.items)
        cursor = page.cursor
        if cursor is None:
            return pages


@pytest.mark.parametrize("limit", [1, 7, 1000])
@pytest.mark.parametrize("window", [64, 1 << 20])
def test_pages_equal_the_loaded_index(tmp_path: Path, limit: int, window: int,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_mod, "_WINDOW", window)
    wd = _workdir(tmp_path)
    loaded = load_workdir(wd)
    for ns, name in NAMES.items():
        s = NanoVectorStream(wd / name, ns)
        try:
            assert s.dim == DIM and asyncio.run(s.count()) == 41
            got = asyncio.run(_pages(s.scan_records, limit))
            want = asyncio.run(_pages(loaded.vector_index(ns).scan_records, limit))
            assert [len(p) for p in got] == [len(p) for p in want]
            flat = [r for p in got for r in p], [r for p in want for r in p]
            for a, b in zip(*flat, strict=True):
                assert _plain(a) == _plain(b)
                assert isinstance(a.row_vector, str) and b.row_vector is None
                assert a.vector.dtype == np.float32
                np.testing.assert_array_equal(a.vector, b.vector)
        finally:
            s.close()


def test_a_cursor_resumes_in_a_new_reader(tmp_path: Path) -> None:
    wd = _workdir(tmp_path)
    first = NanoVectorStream(wd / NAMES["relationships"], "relationships")
    page = asyncio.run(first.scan_records(None, limit=10))
    page2 = asyncio.run(first.scan_records(page.cursor, limit=10))
    first.close()
    again = NanoVectorStream(wd / NAMES["relationships"], "relationships")
    resumed = asyncio.run(again.scan_records(page.cursor, limit=10))
    assert [r.id for r in resumed.items] == [r.id for r in page2.items]
    assert resumed.cursor == page2.cursor
    # and back to the start
    assert asyncio.run(again.scan_records(None, limit=3)).items[0].id == page.items[0].id
    with pytest.raises(ConfigurationError):
        asyncio.run(again.scan_records("999", limit=3))
    again.close()


def test_the_source_holds_graph_chunks_and_streams(tmp_path: Path) -> None:
    wd = _workdir(tmp_path)
    source = open_workdir_source(wd, embedding_model="m")
    counts = asyncio.run(source.counts())
    assert counts == {"entities": 41, "relationships": 41, "chunks": 41, "nodes": 1,
                      "edges": 0, "text_chunks": 5, "llm_cache": None, "doc_status": 0,
                      "fragments": 0, **dict.fromkeys(KV_NAMESPACES)}
    assert isinstance(source.relationships, NanoVectorStream)
    close_workdir_source(source)


def _corrupt(tmp: Path, edit: Any) -> Path:
    wd = _workdir(tmp, n=4)
    p = wd / NAMES["entities"]
    p.write_text(edit(p.read_text(encoding="utf-8")), encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('"__id__": "ent-0001"', '"__id__": "ent-0000"'), "duplicate"),
        (lambda t: t.replace('{"__id__": "ent-0003"', '{"x": "ent-0003"'), "__id__"),
        (lambda t: t.replace('"embedding_dim": 8', '"embedding_dim": 0'), "embedding_dim"),
        (lambda t: t.replace('"matrix": "', '"matrix": "AAAA'), "matrix"),
        (lambda t: t.replace('"data": [', '"data": [{"__id__": "extra"}, '), "more data rows"),
        (lambda t: t[:2] + t[2:].replace('"__id__": "ent-0000"', '"__id__": 7', 1), "__id__"),
        (lambda t: t.replace(', "matrix"', ' "junk", "matrix"', 1), "expected"),
    ],
)
def test_malformed_files_are_refused_naming_the_file(
    tmp_path: Path, edit: Any, message: str
) -> None:
    p = _corrupt(tmp_path, edit)

    async def read_all() -> None:
        s = NanoVectorStream(p, "entities")
        try:
            await _pages(s.scan_records, 2)
        finally:
            s.close()

    with pytest.raises(ConfigurationError, match=message) as err:
        asyncio.run(read_all())
    assert str(p) in str(err.value)


def test_fewer_data_rows_than_matrix_rows(tmp_path: Path) -> None:
    wd = _workdir(tmp_path, n=4)
    p = wd / NAMES["entities"]
    obj = json.loads(p.read_text(encoding="utf-8"))
    obj["data"] = obj["data"][:3]
    p.write_text(json.dumps(obj), encoding="utf-8")
    s = NanoVectorStream(p, "entities")
    with pytest.raises(ConfigurationError, match="3 data rows but 4 matrix rows"):
        asyncio.run(_pages(s.scan_records, 2))
    s.close()


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "vdb_entities.json"
    p.write_text("", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="empty"):
        NanoVectorStream(p, "entities")


def test_empty_vector_files_list_nothing(tmp_path: Path) -> None:
    for ns, name in NAMES.items():
        write_nano_vdb(tmp_path / name, embedding_dim=DIM, rows=[],
                       matrix=np.zeros((0, DIM), dtype=np.float32))
        s = NanoVectorStream(tmp_path / name, ns)
        assert asyncio.run(s.count()) == 0
        page = asyncio.run(s.scan_records(None, limit=5))
        assert page.items == [] and page.cursor is None
        s.close()


def test_copy_source_falls_back_to_loading_a_reindented_directory(tmp_path: Path) -> None:
    """A directory whose vector files are valid JSON but not in NanoVectorDB's own one-line
    layout is loaded whole (the loader reads any layout) with the same records."""
    from hexrag.bootstrap import open_copy_source

    wd = _workdir(tmp_path, n=6)
    (wd / "kv_store_llm_response_cache.json").write_text("{}", encoding="utf-8")
    p = wd / NAMES["relationships"]
    p.write_text(json.dumps(json.loads(p.read_text(encoding="utf-8")), indent=2),
                 encoding="utf-8")
    messages: list[str] = []

    async def run() -> tuple[bool, int]:
        src = await open_copy_source(wd, progress=messages.append)
        try:
            return src.scan_only, await src.relationships.count()
        finally:
            await src.close()

    streamed, count = asyncio.run(run())
    assert not streamed and count == 6
    assert any("loading" in m and "whole" in m for m in messages)


def test_copy_source_streams_a_directory_in_nanovectordb_layout(tmp_path: Path) -> None:
    from hexrag.bootstrap import open_copy_source

    wd = _workdir(tmp_path, n=6)

    async def run() -> bool:
        src = await open_copy_source(wd)
        try:
            assert src.dim == DIM
            return src.scan_only
        finally:
            await src.close()

    assert asyncio.run(run())


def test_vector_files_of_different_dimensions_are_refused(tmp_path: Path) -> None:
    wd = _workdir(tmp_path, n=5)
    write_nano_vdb(wd / NAMES["chunks"], embedding_dim=4, rows=_rows("chunks", 5),
                   matrix=np.ones((5, 4), dtype=np.float32))
    with pytest.raises(ConfigurationError, match="disagree on embedding_dim"):
        open_workdir_source(wd)
