"""A LightRAG working directory read page by page: the source of a migration or an export.

:func:`load_workdir` builds query-ready indexes of a whole working directory (about 2 GB for
100k entities and 200k relations). Copying a directory somewhere else needs none of that: it
only lists the records once. :func:`~hexrag.adapters.workdir.source.open_workdir_source`
gives the three vector sections as :class:`NanoVectorStream` objects that read their
NanoVectorDB file sequentially, a page at a time, so the largest files (the relation
vectors: 760 MB at 100k entities) never sit in memory; the graph, the text chunks, the LLM
cache, the documents (status rows, fragments) and LightRAG's key-value namespaces are loaded
as :func:`load_workdir` loads them (they are the small part).

A page holds what the loaded index's ``scan_records`` returns for the same rows, bit for bit
(the same record fields, the matrix rows as stored in the file, never re-normalised, in file
order; tested against :func:`load_workdir`). How a page is read:

* the file is memory-mapped; the ``data`` rows are decoded one JSON object at a time from a
  window of the text (Python's C scanner, ``raw_decode``), each row's ``"vector"`` (LightRAG's
  float16 copy) dropped;
* the matching rows of the ``matrix`` are base64-decoded from their slice of the string
  (row ``i`` starts at byte ``i * dim * 4`` of the decoded matrix).

Cursors are row numbers. Following them in order costs one sequential pass over the file; a
cursor from another process (a resumed migration) re-reads the rows before it once.
"""

from __future__ import annotations

import binascii
import json
import mmap
from pathlib import Path
from typing import Any

import numpy as np

from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import VectorRecord
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

from .convert import vector_row_to_record
from .nanovdb import _HEAD, _MATRIX_KEY

__all__ = ["NanoVectorStream"]

_WINDOW = 4 << 20  # bytes of row text decoded per step (grows for a larger row)
_DATA_KEY = b'"data": ['
_SEARCH_SLICE = 64 << 20
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)  # absent on Windows


class NanoVectorStream:
    """The records of one NanoVectorDB file, listed page by page (a read-only,
    scan-only vector section: ``dim``, ``count()``, ``scan_records()``).

    Raises :class:`~hexrag.core.errors.ConfigurationError` naming the file when it does not
    have NanoVectorDB's own layout (``{"embedding_dim": D, "data": [...], "matrix": "..."}``,
    as LightRAG writes it), when a row is not an object with a string ``__id__``, when an id
    repeats, or when the matrix does not hold one row per data entry.
    """

    def __init__(self, path: str | Path, namespace: str, *, cosine_threshold: float = 0.2) -> None:
        self.path = Path(path)
        self.namespace = namespace
        #: The threshold :func:`load_workdir` would give the loaded index (archive manifests
        #: record it).
        self.cosine_threshold = cosine_threshold
        self._fh = open(self.path, "rb")
        try:
            self._mm = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError as exc:  # an empty file cannot be mapped
            self._fh.close()
            raise ConfigurationError(f"empty NanoVectorDB file {self.path}") from exc
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _fail(self, what: str) -> ConfigurationError:
        return ConfigurationError(f"NanoVectorDB file {self.path}: {what}")

    def _open(self) -> None:
        mm = self._mm
        if mm[: len(_HEAD)] != _HEAD:
            raise self._fail("does not start with NanoVectorDB's '{\"embedding_dim\": '")
        head_end = mm.find(b",", len(_HEAD))
        try:
            dim = int(mm[len(_HEAD) : head_end])
        except ValueError:
            dim = 0
        if dim <= 0:
            raise self._fail("embedding_dim must be a positive integer")
        self.dim = dim
        data_at = mm.find(_DATA_KEY, head_end)
        key_at = self._rfind_matrix_key()
        if data_at < 0 or key_at < 0 or key_at < data_at:
            raise self._fail("expected the keys embedding_dim, data, matrix in this order")
        self._start = key_at + len(_MATRIX_KEY)
        self._end = self._find_quote(self._start)
        if self._end < 0:
            raise self._fail("unterminated matrix string")
        chars = self._end - self._start
        pad = 0 if chars == 0 else (mm[self._end - 2 : self._end].count(b"="))
        nbytes = chars // 4 * 3 - pad
        row_bytes = dim * 4
        if chars % 4 or nbytes % row_bytes:
            raise self._fail(f"matrix holds {nbytes} bytes, not whole rows of {dim} float32")
        self._rows = nbytes // row_bytes
        self._data_start = data_at + len(_DATA_KEY)
        self._data_end = key_at
        self._decoder = json.JSONDecoder()
        self._rewind()

    def _rfind_matrix_key(self) -> int:
        """The last ``, "matrix": "`` of the file, searched backwards in slices (the matrix
        string is most of the file: its pages are released as the search passes them)."""
        mm, hi = self._mm, len(self._mm)
        while hi > 0:
            lo = max(0, hi - _SEARCH_SLICE)
            at = mm.rfind(_MATRIX_KEY, lo, min(len(mm), hi + len(_MATRIX_KEY)))
            self._release()
            if at >= 0:
                return at
            hi = lo
        return -1

    def _find_quote(self, lo: int) -> int:
        mm = self._mm
        while lo < len(mm):
            at = mm.find(b'"', lo, lo + _SEARCH_SLICE)
            self._release()
            if at >= 0:
                return at
            lo += _SEARCH_SLICE
        return -1

    def _release(self) -> None:
        # Pages of a read-only file mapping stay in the resident set once read; they are the
        # page cache's, not this process's, so drop them from it (the cache keeps them).
        if _DONTNEED is not None:
            self._mm.madvise(_DONTNEED)

    def _rewind(self) -> None:
        self._next_row = 0
        self._pos = self._data_start  # byte offset of the next row's text
        self._seen: set[str] = set()
        self._expect_sep = False
        self._done = False

    def close(self) -> None:
        """Release the file."""
        mm = getattr(self, "_mm", None)
        if mm is not None:
            mm.close()
            self._mm = None  # type: ignore[assignment]
        self._fh.close()

    async def count(self) -> int:
        """Number of records (rows of the matrix)."""
        return self._rows

    async def scan_records(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[VectorRecord]:
        """A page of records with their vectors as stored, in file order (see the module
        docstring); ``cursor`` is the row number to start at."""
        check_scan_limit(limit)
        start = 0 if cursor is None else _row_cursor(cursor)
        if start != self._next_row:
            self._rewind()
            while self._next_row < start and not self._done:
                self._read_rows(min(10_000, start - self._next_row))
        if start != self._next_row:
            raise self._fail(f"scan cursor {cursor!r} is past the last row")
        first = self._next_row
        rows = self._read_rows(limit) if not self._done else []
        block = self._matrix_rows(first, first + len(rows))
        items = [vector_row_to_record(r, block[k], _row_vector(r)) for k, r in enumerate(rows)]
        self._release()
        nxt = None if self._done else str(self._next_row)
        return Page(items, nxt)

    def _read_rows(self, n: int) -> list[dict[str, Any]]:
        """Decode the next ``n`` data rows (fewer at the end), advancing the position."""
        mm, decode = self._mm, self._decoder.raw_decode
        out: list[dict[str, Any]] = []
        window = _WINDOW
        while (len(out) < n or self._next_row == self._rows) and not self._done:
            stop = min(self._pos + window, self._data_end)
            at_end = stop >= self._data_end
            text = self._text(mm[self._pos : stop], at_end)
            at = consumed = 0
            while (len(out) < n or self._next_row == self._rows) and not self._done:
                at = _skip_ws(text, at)
                if at >= len(text):
                    break
                if self._expect_sep:
                    if text[at] == ",":
                        self._expect_sep = False
                        at += 1
                    elif text[at] == "]":
                        self._finish()
                        at += 1
                    else:
                        raise self._fail(f"expected ',' or ']' after row {self._next_row - 1}")
                    consumed = at
                    continue
                if text[at] == "]" and self._next_row == 0:
                    self._finish()
                    consumed = at + 1
                    break
                try:
                    row, at = decode(text, at)
                except json.JSONDecodeError as exc:
                    if at_end:
                        raise self._fail(f"malformed row {self._next_row} ({exc})") from exc
                    break  # the row runs past the window
                self._take(row)
                out.append(row)
                self._expect_sep = True
                consumed = at
            if consumed == 0 and not self._done:
                if at_end:
                    raise self._fail(f"the data list ends before row {self._next_row}")
                window *= 2  # one row larger than the window
                continue
            self._pos += len(text[:consumed].encode("utf-8"))
            window = _WINDOW
            if self._done and mm[self._pos : self._data_end].strip():
                raise self._fail("expected the matrix right after the data list")
        return out

    def _text(self, raw: bytes, at_end: bool) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if at_end or exc.start < len(raw) - 3:
                raise self._fail(f"not UTF-8 ({exc})") from exc
            return raw[: exc.start].decode("utf-8")  # a character cut by the window

    def _take(self, row: Any) -> None:
        if not isinstance(row, dict) or not isinstance(row.get("__id__"), str):
            raise self._fail(f"data[{self._next_row}] is not an object with a string '__id__'")
        rid = row["__id__"]
        if rid in self._seen:
            raise self._fail(f"duplicate record id {rid!r}")
        self._seen.add(rid)
        self._next_row += 1
        if self._next_row > self._rows:
            raise self._fail(f"more data rows than the matrix's {self._rows}")

    def _finish(self) -> None:
        if self._next_row != self._rows:
            raise self._fail(f"{self._next_row} data rows but {self._rows} matrix rows")
        self._done = True
        self._seen = set()

    def _matrix_rows(self, first: int, stop: int) -> np.ndarray:
        """Rows ``first..stop-1`` of the matrix, float32, as stored in the file."""
        row_bytes = self.dim * 4
        b0, b1 = first * row_bytes, stop * row_bytes
        c0, c1 = b0 // 3 * 4, min(-(-b1 // 3) * 4, self._end - self._start)
        try:
            raw = binascii.a2b_base64(self._mm[self._start + c0 : self._start + c1])
        except binascii.Error as exc:
            raise self._fail(f"matrix is not base64 ({exc})") from exc
        skip = b0 - c0 // 4 * 3
        block = np.frombuffer(raw, dtype="<f4", count=(stop - first) * self.dim,
                              offset=skip).reshape(stop - first, self.dim).astype(np.float32)
        return block


def _row_vector(row: dict[str, Any]) -> str | None:
    """The row's ``"vector"`` string, removed from the row (carried as the record's
    ``row_vector``, written back byte for byte by a working-directory target)."""
    text = row.pop("vector", None)
    return text if isinstance(text, str) else None


def _skip_ws(text: str, at: int) -> int:
    n = len(text)
    while at < n and text[at] in " \t\r\n":
        at += 1
    return at


def _row_cursor(cursor: str) -> int:
    try:
        value = int(cursor)
    except (TypeError, ValueError):
        value = -1
    if value < 0:
        raise ConfigurationError(f"not a scan cursor of a NanoVectorDB file: {cursor!r}")
    return value
