"""The chunks index serves NanoVectorDB's float16 rows, which LightRAG's VECTOR pick reads."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import numpy as np

from hexrag.adapters.workdir import load_workdir, save_workdir
from hexrag.adapters.workdir.nanovdb import read_nano_vdb, write_nano_vdb
from hexrag.adapters.workdir.row_vectors import NanoRowVectorIndex
from hexrag.core.model import VectorRecord
from hexrag.core.query.pick import cosine_scores

DIM = 8


def _raw(n: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32) * 7.0


def _write_chunks_file(path: Path, raw: np.ndarray) -> None:
    rows = [
        {
            "__id__": f"c{i}",
            "__created_at__": 1,
            "full_doc_id": "d",
            "content": f"t{i}",
            "file_path": "f",
        }
        for i in range(len(raw))
    ]
    write_nano_vdb(
        path, embedding_dim=DIM, rows=rows, matrix=raw.copy(), row_vectors=raw.astype(np.float16)
    )


def test_get_vectors_returns_the_float16_rows_not_the_normalised_matrix(tmp_path: Path) -> None:
    raw = _raw(5)
    _write_chunks_file(tmp_path / "vdb_chunks.json", raw)
    stack = load_workdir(tmp_path)
    assert isinstance(stack.chunks, NanoRowVectorIndex)
    import asyncio

    got = asyncio.run(stack.chunks.get_vectors(["c0", "c3", "missing", "c0"]))
    assert set(got) == {"c0", "c3"}
    np.testing.assert_array_equal(got["c3"], raw[3].astype(np.float16).astype(np.float32))
    # not normalised: these are LightRAG's raw float16 values
    assert abs(float(np.linalg.norm(got["c3"])) - 1.0) > 0.5


async def test_score_ids_scores_the_float16_rows_fresh_rows_and_the_matrix(
    tmp_path: Path,
) -> None:
    """Attached rows, rows upserted later and ids without a row vector, in one call."""
    raw = _raw(5)
    _write_chunks_file(tmp_path / "vdb_chunks.json", raw)
    index = load_workdir(tmp_path).chunks
    assert isinstance(index, NanoRowVectorIndex)
    fresh = _raw(1, seed=5)[0]
    await index.upsert([VectorRecord(id="new", vector=fresh, content="n")])
    index._f16_row.pop("c4")  # as a row written by an old LightRAG (no row vector)
    q = _raw(1, seed=7)[0]
    got = await index.score_ids(["c3", "missing", "new", "c4", "c0"], q)
    rows = {
        "c3": raw[3].astype(np.float16),
        "new": fresh.astype(np.float16),
        "c4": (await index.get_vectors(["c4"]))["c4"],  # the normalised matrix row
        "c0": raw[0].astype(np.float16),
    }
    expected = [
        cosine_scores(rows[i][None, :], q)[0] if i in rows else np.nan
        for i in ["c3", "missing", "new", "c4", "c0"]
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # few ids (a product over the gathered rows) and most ids (over all rows): same numbers
    one = await index.score_ids(["c0"], q)
    np.testing.assert_allclose(one, [expected[4]], rtol=1e-12)
    # the float16 rows, not the normalised matrix: the difference is visible at this precision
    assert abs(got[0] - cosine_scores((raw[3] / np.linalg.norm(raw[3]))[None, :], q)[0]) > 1e-9


async def test_upsert_and_delete_keep_row_vectors_in_step() -> None:
    index = NanoRowVectorIndex("chunks", DIM)
    raw = _raw(3, seed=9)
    index.attach_row_vectors(["a", "b", "c"], raw.astype(np.float16), np.array([True, False, True]))
    await index.upsert(
        [VectorRecord(id=i, vector=raw[k], content=i) for k, i in enumerate(["a", "b", "c"])]
    )
    new = _raw(1, seed=11)[0]
    await index.upsert([VectorRecord(id="a", vector=new, content="a2")])
    got = await index.get_vectors(["a", "b"])
    np.testing.assert_array_equal(got["a"], new.astype(np.float16).astype(np.float32))
    await index.delete(["a"])
    assert index.row_vector("a") is None and "a" not in await index.get_vectors(["a"])


def test_save_writes_the_original_float16_rows_back(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    raw = _raw(4, seed=5)
    _write_chunks_file(src / "vdb_chunks.json", raw)
    save_workdir(load_workdir(src), dst)
    data = json.loads((dst / "vdb_chunks.json").read_text())["data"]
    for i, row in enumerate(data):
        vec = np.frombuffer(zlib.decompress(base64.b64decode(row["vector"])), dtype=np.float16)
        np.testing.assert_array_equal(vec, raw[i].astype(np.float16))
    again = read_nano_vdb(dst / "vdb_chunks.json", keep_row_vectors=True)
    assert again.row_vector_present is not None and again.row_vector_present.all()
