"""NanoVectorDB file decoding/encoding, checked against nano_vectordb itself."""

from __future__ import annotations

import base64
import io
import json
import sys
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.workdir.nanovdb import (
    decode_row_vector,
    encode_row_vector,
    normalize_rows_like_nanovectordb,
    read_nano_vdb,
    write_nano_vdb,
)
from hexrag.core.errors import ConfigurationError


def _rows(n: int, *, vectors: np.ndarray | None = None) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        row: dict[str, Any] = {
            "__id__": f"ent-{i:04d}",
            "__created_at__": 1_700_000_000 + i,
            "__write_seq__": 10**18 + i,
            "content": f"name {i}\ndescription «{i}» \"q\" \\",
            "entity_name": f"name {i}",
            "source_id": "chunk-1<SEP>chunk-10",
            "file_path": "a.txt",
        }
        if vectors is not None:
            row["vector"] = encode_row_vector(vectors[i])
        rows.append(row)
    return rows


def _raw(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, dim)) * 3).astype(np.float32)


def _nano_file(path: Path, raw: np.ndarray, **extra: Any) -> list[dict[str, Any]]:
    """A file the way NanoVectorDB.save writes it: normalised matrix, raw f16 row vectors."""
    rows = _rows(raw.shape[0], vectors=raw)
    matrix = raw / np.linalg.norm(raw, axis=-1, keepdims=True)
    storage = {"embedding_dim": raw.shape[1], "data": rows, "matrix": matrix, **extra}
    storage["matrix"] = base64.b64encode(matrix.astype(np.float32).tobytes()).decode()
    path.write_text(json.dumps(storage, ensure_ascii=False), encoding="utf-8")
    return rows


def test_decodes_matrix_and_rows_exactly(tmp_path: Path) -> None:
    raw = _raw(50, 12)
    path = tmp_path / "vdb_entities.json"
    rows = _nano_file(path, raw)
    nano = read_nano_vdb(path)
    assert nano.embedding_dim == 12
    assert nano.had_row_vectors
    assert nano.rows == [{k: v for k, v in r.items() if k != "vector"} for r in rows]
    expected = raw / np.linalg.norm(raw, axis=-1, keepdims=True)
    expected = expected.astype(np.float32)
    expected = expected / np.linalg.norm(expected, axis=-1, keepdims=True)  # renormalised on load
    assert np.array_equal(nano.matrix, expected)
    assert nano.matrix.dtype == np.float32
    assert nano.matrix.flags.c_contiguous and nano.matrix.flags.writeable


def test_matrix_equals_nanovectordb_in_memory_matrix(tmp_path: Path) -> None:
    nvdb = pytest.importorskip("nano_vectordb")
    raw = _raw(300, 24, seed=3)
    path = tmp_path / "vdb_chunks.json"
    db = nvdb.NanoVectorDB(24, storage_file=str(path))
    db.upsert([{"__id__": f"c{i}", "__vector__": raw[i], "content": str(i)} for i in range(300)])
    db.save()
    reference = nvdb.NanoVectorDB(24, storage_file=str(path))._NanoVectorDB__storage
    ours = read_nano_vdb(path)
    assert np.array_equal(ours.matrix, reference["matrix"])  # bit for bit
    assert ours.rows == reference["data"]


def test_written_file_is_what_nanovectordb_writes(tmp_path: Path) -> None:
    nvdb = pytest.importorskip("nano_vectordb")
    raw = _raw(40, 8, seed=5)
    ref_path = tmp_path / "ref.json"
    db = nvdb.NanoVectorDB(8, storage_file=str(ref_path))
    db.upsert(
        [{"__id__": f"r{i}", "__vector__": raw[i], "content": f"é{i}"} for i in range(40)]
    )
    db.save()
    loaded = read_nano_vdb(ref_path)
    out = io.StringIO()
    write_nano_vdb(
        out,
        embedding_dim=8,
        rows=loaded.rows,
        matrix=loaded.matrix,
        with_row_vectors=False,
    )
    # NanoVectorDB re-saving what it loaded: same rows, its in-memory (renormalised) matrix
    again = nvdb.NanoVectorDB(8, storage_file=str(ref_path))
    again.storage_file = str(tmp_path / "again.json")
    again.save()
    assert out.getvalue() == (tmp_path / "again.json").read_text(encoding="utf-8")


def test_row_vectors_are_reemitted_from_the_normalised_rows(tmp_path: Path) -> None:
    raw = _raw(10, 16, seed=7)
    src = tmp_path / "src.json"
    _nano_file(src, raw)
    nano = read_nano_vdb(src)
    dst = tmp_path / "dst.json"
    write_nano_vdb(dst, embedding_dim=16, rows=nano.rows, matrix=nano.matrix)
    stored = json.loads(dst.read_text(encoding="utf-8"))
    for i, row in enumerate(stored["data"]):
        assert list(row)[-1] == "vector"  # LightRAG appends it last
        v = decode_row_vector(row["vector"])
        cos = float(v @ raw[i]) / float(np.linalg.norm(v) * np.linalg.norm(raw[i]))
        assert cos == pytest.approx(1.0, abs=1e-3)
    assert np.array_equal(read_nano_vdb(dst).matrix, nano.matrix)


def test_row_vector_codec_matches_lightrag_encoding() -> None:
    v = np.array([0.5, -1.25, 3.0], dtype=np.float32)
    encoded = encode_row_vector(v)
    assert encoded == base64.b64encode(zlib.compress(v.astype(np.float16).tobytes())).decode()
    assert np.array_equal(decode_row_vector(encoded), v)


def test_zero_rows_stay_zero() -> None:
    m = np.array([[0, 0, 0], [3, 4, 0]], dtype=np.float32)
    normalize_rows_like_nanovectordb(m)
    assert np.array_equal(m, np.array([[0, 0, 0], [0.6, 0.8, 0]], dtype=np.float32))


@pytest.mark.parametrize("layout", ["additional_data", "pretty", "reordered", "bom"])
def test_other_layouts_take_the_general_path(tmp_path: Path, layout: str) -> None:
    raw = _raw(5, 4, seed=1)
    matrix = (raw / np.linalg.norm(raw, axis=-1, keepdims=True)).astype(np.float32)
    rows = _rows(5)
    obj: dict[str, Any] = {
        "embedding_dim": 4,
        "data": rows,
        "matrix": base64.b64encode(matrix.tobytes()).decode(),
    }
    if layout == "additional_data":
        obj["additional_data"] = {"matrix": "not this one", "x": [1]}
    if layout == "reordered":
        obj = {"matrix": obj["matrix"], "data": rows, "embedding_dim": 4}
    text = json.dumps(obj, indent=2 if layout == "pretty" else None, ensure_ascii=False)
    path = tmp_path / "v.json"
    path.write_bytes((b"\xef\xbb\xbf" if layout == "bom" else b"") + text.encode("utf-8"))
    nano = read_nano_vdb(path)
    assert nano.rows == rows
    assert np.allclose(nano.matrix, matrix, atol=1e-7)
    if layout == "additional_data":
        assert nano.additional_data == {"matrix": "not this one", "x": [1]}
        out = io.StringIO()
        write_nano_vdb(out, embedding_dim=4, rows=nano.rows, matrix=nano.matrix,
                       additional_data=nano.additional_data)
        assert json.loads(out.getvalue())["additional_data"] == nano.additional_data


def _write_obj(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj), encoding="utf-8")


@pytest.mark.parametrize(
    ("obj", "needle"),
    [
        ({"embedding_dim": 4, "data": [{"__id__": "a"}], "matrix": ""}, "expected 1 rows x 4"),
        (
            {"embedding_dim": 4, "data": [], "matrix": base64.b64encode(b"\0" * 16).decode()},
            "expected 0 rows",
        ),
        ({"embedding_dim": 4, "data": [{"__id__": "a"}], "matrix": "@@@@"}, "matrix"),
        ({"embedding_dim": "4", "data": [], "matrix": ""}, "embedding_dim"),
        ({"embedding_dim": 4, "data": {}, "matrix": ""}, "'data' must be a list"),
        ({"embedding_dim": 4, "data": [{"id": "a"}], "matrix": ""}, "__id__"),
        ({"embedding_dim": 4, "data": []}, "no 'matrix'"),
        ([1, 2], "no 'matrix'"),
    ],
)
def test_bad_files_raise_configuration_error(tmp_path: Path, obj: Any, needle: str) -> None:
    path = tmp_path / "vdb_entities.json"
    _write_obj(path, obj)
    with pytest.raises(ConfigurationError) as err:
        read_nano_vdb(path)
    assert needle in str(err.value)
    assert str(path) in str(err.value)


def test_truncated_and_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "vdb_entities.json"
    path.write_text('{"embedding_dim": 4, "data": [', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="malformed JSON"):
        read_nano_vdb(path)
    path.write_text("", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="empty"):
        read_nano_vdb(path)


def test_one_copy_of_the_vectors_in_memory(tmp_path: Path) -> None:
    n, dim = 6000, 256
    raw = _raw(n, dim, seed=11)
    path = tmp_path / "big.json"
    _nano_file(path, raw)
    matrix_bytes = n * dim * 4
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        nano = read_nano_vdb(path)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rows_bytes = sum(
        sys.getsizeof(r) + sum(sys.getsizeof(v) for v in r.values()) for r in nano.rows
    )
    # retained: the matrix once plus the row dicts (no base64 text, no float16 row copies,
    # no second matrix, which would add another matrix_bytes)
    assert current - base < 1.5 * matrix_bytes + 1.2 * rows_bytes
    # transient: the whole-file json.loads + b64decode approach peaks near 3x the file size
    assert peak - base < 1.75 * path.stat().st_size
    assert nano.matrix.nbytes == matrix_bytes
