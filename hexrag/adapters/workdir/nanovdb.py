"""NanoVectorDB files (``vdb_entities.json``, ``vdb_relationships.json``, ``vdb_chunks.json``).

Format (``nano_vectordb`` 0.0.4.3, as LightRAG 1.5.7 writes it; one JSON line)::

    {"embedding_dim": D, "data": [row, ...], "matrix": "<base64 float32 (n, D)>"}

optionally followed by ``"additional_data"``. Row ``i`` of the matrix belongs to ``data[i]``.
Each row also carries ``"vector"``: base64(zlib(float16 bytes of the raw embedding)), which
LightRAG decodes for VECTOR chunk picking.

Reading is built for large files and a single copy of the vectors:

* the file is memory-mapped; the ``matrix`` string is base64-decoded in slices straight into
  one preallocated, writable float32 array (no intermediate ``bytes``/``str`` of the whole
  matrix);
* only the ``data`` part is JSON-parsed, and each row's ``"vector"`` string is dropped as soon
  as the row is parsed (it is a second, lossy copy of the vector) - except with
  ``keep_row_vectors`` (the chunks file), where it is decoded into one float16 array because
  LightRAG's VECTOR chunk picking ranks with exactly those values
  (:mod:`hexrag.adapters.workdir.row_vectors`);
* with ``normalize`` (the default) the rows are then L2-normalised in place with exactly
  NanoVectorDB's arithmetic (``row / np.linalg.norm(row)``), so the array equals, bit for bit,
  the matrix LightRAG holds in memory after loading the same file. A zero row stays zero
  (NanoVectorDB would make it NaN). The working-directory loader reads the rows as stored
  (``normalize=False``) and lets the index normalise its query matrix, keeping the stored
  rows that normalising changes: a save then writes the file's rows back bit for bit.

A file that does not have NanoVectorDB's exact layout is still read, through a plain
``json.loads`` (slower, more memory).

Writing produces the bytes ``NanoVectorDB.save`` produces for the same rows and matrix. The
per-row ``"vector"`` is the string a copy carried from another NanoVectorDB file when there is
one (``VectorRecord.row_vector``, written verbatim), else the kept float16 row (the chunks
file), else it is re-emitted from the stored matrix row: a float16 copy of the (normalised)
stored vector rather than of the raw embedding. The two differ only by a positive scale,
so every cosine LightRAG computes from it (VECTOR chunk picking) is unchanged up to float16
rounding. It is written as a stored (level 0) zlib stream: float16 embeddings do not compress,
and LightRAG's ``zlib.decompress`` reads any level.
"""

from __future__ import annotations

import base64
import binascii
import json
import mmap
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from hexrag.domain.errors import ConfigurationError

__all__ = ["NanoFile", "decode_row_vector", "encode_row_vector", "read_nano_vdb", "write_nano_vdb"]

_MATRIX_KEY = b', "matrix": "'
_ROW_VECTOR = re.compile(rb', "vector": "[A-Za-z0-9+/=]*"')
_HEAD = b'{"embedding_dim": '
_B64_SLICE = 4 * (1 << 20)  # characters per decode step (a multiple of 4)
_NORM_BLOCK = 8192
# zlib level of re-emitted per-row vectors: float16 embeddings do not compress (level 6 saves
# about 0.3%) and level 0 (stored blocks) is ~13x faster; every zlib reader accepts it.
_ROW_VECTOR_LEVEL = 0  # rows per normalisation step (bounds the temporary of np.linalg.norm)


@dataclass(slots=True)
class NanoFile:
    """A decoded NanoVectorDB file.

    ``matrix`` is float32 ``(len(rows), embedding_dim)``, C-contiguous, writable and
    L2-normalised; ``rows`` are the ``data`` entries without their ``"vector"`` key;
    ``additional_data`` is kept for write-back (``None`` when absent).
    """

    embedding_dim: int
    rows: list[dict[str, Any]]
    matrix: np.ndarray
    additional_data: Any = None
    had_row_vectors: bool = False
    extra_keys: dict[str, Any] = field(default_factory=dict)
    # with ``keep_row_vectors``: the per-row float16 vectors and which rows have one
    row_vectors: np.ndarray | None = None
    row_vector_present: np.ndarray | None = None


class _KeepVector:
    """``object_hook`` that moves the per-row ``"vector"`` string aside (see :data:`_KEPT`)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
        if "__id__" in obj:
            vec = obj.pop("vector", None)
            if vec is not None:
                obj[_KEPT] = vec
                self.seen = True
        return obj


_KEPT = "\x00hexrag-row-vector"


class _DropVector:
    """``object_hook`` that removes the per-row ``"vector"`` string while parsing."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
        if "__id__" in obj and obj.pop("vector", None) is not None:
            self.seen = True
        return obj


def read_nano_vdb(
    path: str | Path, *, normalize: bool = True, keep_row_vectors: bool = False
) -> NanoFile:
    """Decode a NanoVectorDB file (see the module docstring).

    Raises :class:`~hexrag.core.errors.ConfigurationError` naming the file when it is not
    valid JSON, lacks ``embedding_dim``/``data``/``matrix``, or its matrix does not hold
    ``len(data) * embedding_dim`` float32 values.
    """
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        raise ConfigurationError(f"empty NanoVectorDB file {path}")
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        parsed = None if keep_row_vectors else _read_fast(mm, path)
        if parsed is None:
            parsed = _read_slow(bytes(mm), path, keep_row_vectors=keep_row_vectors)
    if keep_row_vectors:
        _decode_row_vectors(parsed, path)
    if normalize:
        normalize_rows_like_nanovectordb(parsed.matrix)
    return parsed


def _read_fast(mm: mmap.mmap, path: Path) -> NanoFile | None:
    """The streaming path for NanoVectorDB's own layout; ``None`` if the layout differs."""
    if mm[: len(_HEAD)] != _HEAD:
        return None
    key_at = mm.rfind(_MATRIX_KEY)
    if key_at < 0:
        return None
    start = key_at + len(_MATRIX_KEY)
    end = mm.find(b'"', start)
    if end < 0:
        return None
    tail = mm[end + 1 :].strip()
    if not tail.endswith(b"}"):
        return None
    extra: dict[str, Any] = {}
    if tail != b"}":
        if not tail.startswith(b","):
            return None
        try:
            extra = json.loads(b"{" + tail[1:])
        except ValueError:
            return None
    hook = _DropVector()
    # Drop the per-row float16 vector strings before parsing (about two thirds of the text):
    # a bare `, "vector": "` can only be a key (quotes inside JSON strings are escaped).
    prefix, stripped = _ROW_VECTOR.subn(b"", mm[:key_at])
    try:
        head = json.loads(prefix.decode("utf-8") + "}", object_hook=hook)
    except (ValueError, UnicodeDecodeError):
        return None  # e.g. the matched key was not top-level; let the slow path decide
    del prefix
    if not isinstance(head, dict) or set(head) != {"embedding_dim", "data"}:
        return None
    dim, rows = _check_head(head, path)
    matrix = np.empty((len(rows), dim), dtype=np.float32)
    flat = matrix.reshape(-1).view(np.uint8)
    want = flat.shape[0]
    pos = 0
    try:
        for s in range(start, end, _B64_SLICE):
            piece = binascii.a2b_base64(mm[s : min(s + _B64_SLICE, end)])
            n = len(piece)
            if pos + n > want:
                raise _size_error(path, len(rows), dim, pos + n)
            flat[pos : pos + n] = np.frombuffer(piece, dtype=np.uint8)
            pos += n
    except binascii.Error as exc:
        raise ConfigurationError(f"NanoVectorDB file {path}: matrix is not base64 ({exc})") from exc
    if pos != want:
        raise _size_error(path, len(rows), dim, pos)
    if not np.little_endian:  # pragma: no cover - the file is little-endian
        matrix.byteswap(inplace=True)
    return NanoFile(
        embedding_dim=dim,
        rows=rows,
        matrix=matrix,
        additional_data=extra.pop("additional_data", None),
        had_row_vectors=hook.seen or stripped > 0,
        extra_keys=extra,
    )


def _decode_row_vectors(parsed: NanoFile, path: Path) -> None:
    """Turn the kept ``"vector"`` strings into one float16 array (rows without one stay 0)."""
    n, dim = len(parsed.rows), parsed.embedding_dim
    f16 = np.zeros((n, dim), dtype=np.float16)
    present = np.zeros(n, dtype=bool)
    for i, row in enumerate(parsed.rows):
        encoded = row.pop(_KEPT, None)
        if encoded is None:
            continue
        try:
            vec = np.frombuffer(zlib.decompress(base64.b64decode(encoded)), dtype="<f2")
        except (binascii.Error, zlib.error, ValueError) as exc:
            raise ConfigurationError(
                f"NanoVectorDB file {path}: row {i} has an undecodable 'vector' ({exc})"
            ) from exc
        if vec.shape[0] != dim:
            raise ConfigurationError(
                f"NanoVectorDB file {path}: row {i} 'vector' has {vec.shape[0]} values, "
                f"expected {dim}"
            )
        f16[i] = vec
        present[i] = True
    parsed.row_vectors = f16
    parsed.row_vector_present = present


def _read_slow(raw: bytes, path: Path, *, keep_row_vectors: bool = False) -> NanoFile:
    hook: _DropVector | _KeepVector = _KeepVector() if keep_row_vectors else _DropVector()
    try:
        obj = json.loads(raw.decode("utf-8-sig"), object_hook=hook)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"malformed JSON in NanoVectorDB file {path}: {exc}") from exc
    if not isinstance(obj, dict) or "matrix" not in obj:
        raise ConfigurationError(
            f"NanoVectorDB file {path} has no 'matrix' (expected keys embedding_dim, data, matrix)"
        )
    matrix_b64 = obj.pop("matrix")
    additional = obj.pop("additional_data", None)
    head = {"embedding_dim": obj.pop("embedding_dim", None), "data": obj.pop("data", None)}
    dim, rows = _check_head(head, path)
    if not isinstance(matrix_b64, str):
        raise ConfigurationError(f"NanoVectorDB file {path}: 'matrix' is not a base64 string")
    try:
        buf = bytearray(base64.b64decode(matrix_b64))
    except binascii.Error as exc:
        raise ConfigurationError(f"NanoVectorDB file {path}: matrix is not base64 ({exc})") from exc
    if len(buf) != len(rows) * dim * 4:
        raise _size_error(path, len(rows), dim, len(buf))
    matrix = np.frombuffer(buf, dtype="<f4").reshape(len(rows), dim)
    if not np.little_endian:  # pragma: no cover - big-endian hosts only
        matrix = matrix.astype(np.float32)
    return NanoFile(
        embedding_dim=dim,
        rows=rows,
        matrix=matrix,
        additional_data=additional,
        had_row_vectors=hook.seen,
        extra_keys=obj,
    )


def _check_head(head: dict[str, Any], path: Path) -> tuple[int, list[dict[str, Any]]]:
    dim = head.get("embedding_dim")
    rows = head.get("data")
    if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        raise ConfigurationError(
            f"NanoVectorDB file {path}: embedding_dim must be a positive integer, got {dim!r}"
        )
    if not isinstance(rows, list):
        raise ConfigurationError(f"NanoVectorDB file {path}: 'data' must be a list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("__id__"), str):
            raise ConfigurationError(
                f"NanoVectorDB file {path}: data[{i}] is not an object with a string '__id__'"
            )
    return dim, rows


def _size_error(path: Path, n: int, dim: int, got_bytes: int) -> ConfigurationError:
    return ConfigurationError(
        f"NanoVectorDB file {path}: matrix holds {got_bytes} bytes, expected "
        f"{n} rows x {dim} dims x 4 bytes = {n * dim * 4}"
    )


def normalize_rows_like_nanovectordb(matrix: np.ndarray) -> None:
    """In place: ``row / np.linalg.norm(row)`` as ``NanoVectorDB.pre_process`` computes it.

    Works in blocks of rows (the per-row reduction does not depend on the block), so the
    temporary stays small. Rows of norm 0 are left as zeros.
    """
    n = matrix.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        for s in range(0, n, _NORM_BLOCK):
            block = matrix[s : s + _NORM_BLOCK]
            norms = np.linalg.norm(block, axis=-1, keepdims=True)
            np.divide(block, norms, out=block, where=norms > 0)


# ----------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------


def encode_row_vector(vector: np.ndarray) -> str:
    """LightRAG's per-row ``"vector"`` field: base64(zlib(float16 bytes))."""
    return base64.b64encode(zlib.compress(np.asarray(vector).astype(np.float16).tobytes())).decode(
        "utf-8"
    )


def decode_row_vector(encoded: str) -> np.ndarray:
    """Inverse of :func:`encode_row_vector` (float32)."""
    raw = zlib.decompress(base64.b64decode(encoded))
    return np.frombuffer(raw, dtype=np.float16).astype(np.float32)


def write_nano_vdb(
    target: str | Path | IO[str],
    *,
    embedding_dim: int,
    rows: Sequence[dict[str, Any]],
    matrix: np.ndarray,
    with_row_vectors: bool = True,
    additional_data: Any = None,
    row_vectors: np.ndarray | None = None,
    row_vector_texts: Sequence[str | None] | None = None,
) -> None:
    """Write a NanoVectorDB file the way ``NanoVectorDB.save`` does (one JSON line).

    ``rows[i]`` belongs to ``matrix[i]``; with ``with_row_vectors`` each row gets LightRAG's
    ``"vector"`` field (appended last, as LightRAG does): ``row_vector_texts[i]`` verbatim
    when given and not ``None`` (the string a file stored, carried by a copy), else
    ``row_vectors[i]`` (float16) when given, else computed from its matrix row.
    """
    if row_vectors is not None and row_vectors.shape != (len(rows), embedding_dim):
        raise ConfigurationError(
            f"write_nano_vdb: row_vectors shape {row_vectors.shape} does not match "
            f"{len(rows)} rows x {embedding_dim} dims"
        )
    if matrix.ndim != 2 or matrix.shape != (len(rows), embedding_dim):
        raise ConfigurationError(
            f"write_nano_vdb: matrix shape {matrix.shape} does not match "
            f"{len(rows)} rows x {embedding_dim} dims"
        )
    if isinstance(target, (str, Path)):
        with open(target, "w", encoding="utf-8", newline="\n") as fh:
            _write(fh, embedding_dim, rows, matrix, with_row_vectors, additional_data, row_vectors,
                   row_vector_texts)
    else:
        _write(target, embedding_dim, rows, matrix, with_row_vectors, additional_data, row_vectors,
               row_vector_texts)


def _write(
    fh: IO[str],
    dim: int,
    rows: Sequence[dict[str, Any]],
    matrix: np.ndarray,
    with_row_vectors: bool,
    additional_data: Any,
    row_vectors: np.ndarray | None = None,
    row_vector_texts: Sequence[str | None] | None = None,
) -> None:
    fh.write(f'{{"embedding_dim": {json.dumps(dim)}, "data": [')
    f32 = np.ascontiguousarray(matrix, dtype="<f4")
    step = 4096
    first = True
    for s in range(0, len(rows), step):
        if not with_row_vectors:
            half = None
        elif row_vectors is not None:
            half = np.asarray(row_vectors[s : s + step], dtype="<f2")
        else:
            half = f32[s : s + step].astype(np.float16)
        parts = []
        for j, row in enumerate(rows[s : s + step]):
            text = json.dumps(row, ensure_ascii=False)
            if half is not None:
                # "vector" goes last, as LightRAG appends it (the caller's row is not touched)
                kept = row_vector_texts[s + j] if row_vector_texts is not None else None
                vec = kept if kept is not None else base64.b64encode(
                    zlib.compress(half[j].tobytes(), _ROW_VECTOR_LEVEL)).decode("ascii")
                sep = ", " if row else ""
                text = f'{text[:-1]}{sep}"vector": {json.dumps(vec)}}}'
            parts.append(text)
        if parts:
            fh.write(("" if first else ", ") + ", ".join(parts))
            first = False
    fh.write('], "matrix": "')
    for chunk in _b64_chunks(f32):
        fh.write(chunk)
    fh.write('"')
    if additional_data is not None:
        fh.write(', "additional_data": ' + json.dumps(additional_data, ensure_ascii=False))
    fh.write("}")


def _b64_chunks(matrix: np.ndarray) -> Iterator[str]:
    raw = memoryview(matrix.reshape(-1).view(np.uint8).data)
    step = 3 * (1 << 20)  # a multiple of 3 bytes: chunk encodings concatenate exactly
    for s in range(0, len(raw), step):
        yield base64.b64encode(raw[s : s + step]).decode("ascii")
