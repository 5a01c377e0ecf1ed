"""In-memory :class:`~hexrag.ports.VectorIndex` on a numpy matrix."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from hexrag.adapters._vector_index_props import VectorIndexProps
from hexrag.core.query.pick import cosine_scores
from hexrag.core.scope import scope_values
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import VectorHit, VectorRecord
from hexrag.domain.scope import QueryScope
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page
from hexrag.ports.vector_index import PORT_TRAITS, VectorIndexTraits

from . import prefilter as _prefilter
from ._scan import InsertionOrder
from .prefilter import Int8Prefilter, row_products

_SCOPE_FIELDS = ("product_id", "category_id", "doc_ids")

TieOrder = Literal["id", "nanovectordb"]
"""How a :class:`MemoryVectorIndex` orders equal scores (see its docstring)."""
#: The rules declared with ``tie_order="nanovectordb"``: the port's, ties in NanoVectorDB's order.
_NANO_TRAITS = replace(PORT_TRAITS, ties="backend")
# metadata keys that scope_values reads; used to memoise it while building the scope index
_SCOPE_KEYS = (
    "product_id",
    "product_ids",
    "category_id",
    "category_ids",
    "category",
    "doc_ids",
    "full_doc_id",
)


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    return value


def _normalise_rows(matrix: np.ndarray) -> None:
    """L2-normalise float32 rows in place (zero rows stay zero), without a full-size temporary."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    np.divide(matrix, norms[:, None], out=matrix, where=norms[:, None] > 0)


def _normalise_rows_like_nanovectordb(matrix: np.ndarray) -> None:
    """In place, NanoVectorDB's ``row / np.linalg.norm(row)`` (zero rows stay zero)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        for s in range(0, matrix.shape[0], 4096):
            block = matrix[s : s + 4096]
            norms = np.linalg.norm(block, axis=-1, keepdims=True)
            np.divide(block, norms, out=block, where=norms > 0)


def _differs(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two float32 vectors differ in any bit."""
    return bool(np.any(a.view(np.uint32) != b.view(np.uint32)))


def _remember_stored(
    stored: dict[str, np.ndarray], records: Sequence[VectorRecord], block: np.ndarray
) -> None:
    """Keep, by id, each upserted vector (as float32) whose normalised row differs from it;
    forget the ids whose row is the vector itself. The last write of an id wins."""
    for i, r in enumerate(records):
        raw = np.ascontiguousarray(r.vector, dtype=np.float32).reshape(-1)
        if _differs(raw, block[i]):
            stored[r.id] = raw.copy()
        else:
            stored.pop(r.id, None)


def _normalise_keeping_stored(
    matrix: np.ndarray, ids: Sequence[str], tie_order: str
) -> dict[str, np.ndarray]:
    """Normalise ``matrix`` in place (block by block, the index's arithmetic) and return,
    by id, the original rows that normalising changed."""
    stored: dict[str, np.ndarray] = {}
    for s in range(0, matrix.shape[0], 4096):
        block = matrix[s : s + 4096]
        before = block.copy()
        if tie_order == "nanovectordb":
            _normalise_rows_like_nanovectordb(block)
        else:
            _normalise_rows(block)
        changed = np.flatnonzero(np.any(before.view(np.uint32) != block.view(np.uint32), axis=1))
        for k in changed.tolist():
            stored[ids[s + k]] = before[k].copy()
    return stored


def _nano_normalised(vector: Any) -> np.ndarray:
    """NanoVectorDB's upsert: ``v / np.linalg.norm(v, axis=-1, keepdims=True)`` in the
    vector's own dtype, then float32 (a zero vector stays zero here; NaN there, which
    :meth:`MemoryVectorIndex._query_like_nanovectordb` reproduces)."""
    v = _query_array(vector)
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    if not norm.any():
        return np.zeros(v.shape, dtype=np.float32)
    return (v / norm).astype(np.float32)


def _nano_top(scores: np.ndarray, top_k: int) -> np.ndarray:
    """``np.argsort(scores)[-top_k:][::-1]``, NanoVectorDB's ranking, in linear time when it
    can be: if the ``top_k + 1`` largest scores are distinct numbers, that result is simply
    those ``top_k`` in descending order, whatever order ``argsort`` gives to equal scores
    elsewhere. Otherwise (a tie among them, or NaN) the full ``argsort`` decides."""
    n = scores.shape[0]
    if top_k + 1 < n:
        head = np.argpartition(scores, n - top_k - 1)[n - top_k - 1 :]
        picked = scores[head]
        if not np.isnan(picked).any():
            ranked = head[np.argsort(picked)[::-1]]
            values = scores[ranked]
            if np.all(values[:-1] > values[1:]):  # strictly decreasing: no tie decides
                return ranked[:top_k]
    return np.argsort(scores)[-top_k:][::-1]


def _query_array(vector: Any) -> np.ndarray:
    """A vector as NanoVectorDB's arithmetic sees it: a float array keeps its dtype (LightRAG
    passes the embedder's rows), anything else becomes float64 (``np.linalg.norm`` of a list)."""
    if isinstance(vector, np.ndarray) and vector.dtype in (np.float32, np.float64):
        return vector.reshape(-1)
    return np.asarray(vector, dtype=np.float64).reshape(-1)


class _ScopeIndex:
    """Per field: value -> row set, plus a "knows this field" mask. Row numbers follow the
    index's rows (rows move when a delete swaps the last row into the hole)."""

    def __init__(self, capacity: int) -> None:
        self.rows: dict[str, dict[str, set[int]]] = {f: {} for f in _SCOPE_FIELDS}
        self.known: dict[str, np.ndarray] = {f: np.zeros(capacity, bool) for f in _SCOPE_FIELDS}
        self.values: list[dict[str, frozenset[str]]] = []
        self._arrays: dict[tuple[str, str], np.ndarray] = {}

    @classmethod
    def build(
        cls,
        capacity: int,
        records: Sequence[VectorRecord],
        values_of: Callable[[VectorRecord], dict[str, frozenset[str]]],
    ) -> _ScopeIndex:
        """Index ``records`` (row i = record i), grouping records that share their scope
        inputs so :func:`scope_values` runs once per distinct file_path/metadata."""
        index = cls(capacity)
        groups: dict[Any, list[int]] = {}
        first: dict[Any, VectorRecord] = {}
        for row, r in enumerate(records):
            meta = r.metadata
            key = (
                (r.file_path, r.full_doc_id, tuple(_freeze(meta.get(k)) for k in _SCOPE_KEYS))
                if meta
                else (r.file_path, r.full_doc_id)
            )
            rows = groups.get(key)
            if rows is None:
                groups[key] = rows = []
                first[key] = r
            rows.append(row)
        per_row: list[dict[str, frozenset[str]]] = [{}] * len(records)
        for key, rows in groups.items():
            values = values_of(first[key])
            idx = np.asarray(rows, dtype=np.intp)
            for row in rows:
                per_row[row] = values
            for f in _SCOPE_FIELDS:
                vals = values.get(f, frozenset())
                if vals:
                    index.known[f][idx] = True
                    for v in vals:
                        index.rows[f].setdefault(v, set()).update(rows)
        index.values = per_row
        return index

    def grow(self, capacity: int) -> None:
        for f in _SCOPE_FIELDS:
            bigger = np.zeros(capacity, bool)
            bigger[: self.known[f].shape[0]] = self.known[f]
            self.known[f] = bigger

    def _add(self, row: int, values: dict[str, frozenset[str]]) -> None:
        for f in _SCOPE_FIELDS:
            vals = values.get(f, frozenset())
            self.known[f][row] = bool(vals)
            for v in vals:
                self.rows[f].setdefault(v, set()).add(row)

    def _remove(self, row: int) -> None:
        for f in _SCOPE_FIELDS:
            self.known[f][row] = False
            for v in self.values[row].get(f, frozenset()):
                bucket = self.rows[f][v]
                bucket.discard(row)
                if not bucket:
                    del self.rows[f][v]

    def set_row(self, row: int, values: dict[str, frozenset[str]]) -> None:
        self._arrays.clear()
        if row < len(self.values):
            self._remove(row)
            self.values[row] = values
        else:
            self.values.append(values)
        self._add(row, values)

    def move_last_into(self, row: int) -> None:
        """Delete ``row``; the last row takes its place."""
        self._arrays.clear()
        last = len(self.values) - 1
        self._remove(row)
        if row != last:
            moved = self.values[last]
            self._remove(last)
            self.values[row] = moved
            self._add(row, moved)
        self.values.pop()

    def mask(self, scope: QueryScope, n: int) -> np.ndarray:
        """Rows that pass :func:`hexrag.core.scope.prefilter_match`."""
        keep = np.ones(n, bool)
        for f, admitted in scope.fields().items():
            ok = ~self.known[f][:n]
            for v in admitted:
                idx = self._arrays.get((f, v))
                if idx is None:
                    rows = self.rows[f].get(v, ())
                    idx = np.fromiter(rows, dtype=np.intp, count=len(rows))
                    self._arrays[(f, v)] = idx
                ok[idx] = True
            keep &= ok
        return keep


class MemoryVectorIndex(VectorIndexProps):
    """A brute-force cosine index: one float32 matrix of L2-normalised rows.

    * rows grow by amortised doubling; an id -> row dict finds records; a delete moves the last
      row into the hole, so rows ``[0, n)`` are always live;
    * a query is one matrix-vector product, the scope mask applied **before** ranking, then
      ``np.argpartition`` and an exact ``(-score, id)`` ordering of the candidates (ties at
      the ``top_k`` cut included);
    * from :data:`~.prefilter.MIN_ROWS` rows on, an int8 copy of the rows
      (:class:`~.prefilter.Int8Prefilter`, a quarter of the matrix's memory, kept in step with
      every write) bounds every row's score first, and only the rows that can still reach the
      threshold and the top ``top_k`` are scored in float32: same hits, same order, a quarter
      of the memory traffic;
    * the scope index (per field: value -> rows) is built on the first scoped query and kept up
      to date afterwards, so bulk loads do not pay for it.

    :meth:`get_vectors` returns the stored, normalised row (same direction as upserted).
    :meth:`scan_records` and :meth:`export_stored_arrays` return each vector **as stored**
    (upserted, or read from a file), bit for bit: where normalising changed any bit of a
    vector, the index keeps that vector beside its normalised row (by id), so a copy or a
    save never moves a stored vector.

    ``tie_order`` says how equal scores are ordered:

    * ``"id"`` (the default, the port's contract): by record id, ascending; a deleted row is
      filled by the last row.
    * ``"nanovectordb"``: unscoped queries rank exactly as NanoVectorDB 0.0.4.3 (LightRAG's
      file vector storage) does: the query normalised as ``q / np.linalg.norm(q, axis=-1,
      keepdims=True)`` in its own dtype, the full score vector ``np.dot(matrix, q)`` over all
      rows in row order (a zero row scores NaN, as NanoVectorDB's 0/0 row does), its
      ``np.argsort`` (last ``top_k``, reversed), and the cut at the first score below the
      threshold. Rows keep NanoVectorDB's order: appended in first-occurrence order, updated in
      place, and a delete closes the gap (``np.delete``), so ties fall as they fall in LightRAG.
      The int8 prefilter still answers when it can prove the top ``top_k`` has no tie (its
      near-tie guard), which gives the same ranking. Scoped queries (NanoVectorDB has no scope)
      keep the id order. Used for indexes loaded from a LightRAG working directory.
    """

    def __init__(
        self,
        namespace: str,
        dim: int,
        *,
        cosine_threshold: float = 0.2,
        tie_order: TieOrder = "id",
    ) -> None:
        if dim <= 0:
            raise ConfigurationError(f"MemoryVectorIndex: dim must be positive, got {dim}")
        if tie_order not in ("id", "nanovectordb"):
            raise ConfigurationError(
                f"MemoryVectorIndex: tie_order must be 'id' or 'nanovectordb', got {tie_order!r}"
            )
        self._namespace = namespace
        self._dim = int(dim)
        self._threshold = float(cosine_threshold)
        self._tie_order: TieOrder = tie_order
        self._zero_rows: np.ndarray | None = None  # cache: rows of norm 0 (nanovectordb order)
        self._order = InsertionOrder()  # scan order: insertion (row order of a LightRAG file)
        self._matrix = np.zeros((0, self._dim), dtype=np.float32)
        self._n = 0
        self._ids: list[str] = []
        self._records: list[VectorRecord] = []
        self._row: dict[str, int] = {}
        self._scope: _ScopeIndex | None = None
        self._pf = Int8Prefilter(0, self._dim)
        # the vector as stored, for rows whose normalised row differs from it in any bit
        self._stored: dict[str, np.ndarray] = {}
        self._pf_misses = 0  # searches in a row the prefilter could not narrow
        self._pf_skip = 0  # searches left that go straight to the full product
        self._init_extra_state()

    def _init_extra_state(self) -> None:
        """Set up what a subclass keeps beside the index (the constructor calls it last);
        default nothing."""

    # -- construction from arrays ------------------------------------------------------

    @classmethod
    def from_arrays(
        cls,
        namespace: str,
        matrix: np.ndarray,
        records: list[VectorRecord],
        *,
        cosine_threshold: float = 0.2,
        normalized: bool = False,
        tie_order: TieOrder = "id",
    ) -> MemoryVectorIndex:
        """Adopt ``matrix`` (float32, C-contiguous, shape ``(len(records), dim)``) without a copy.

        Row ``i`` is the vector of ``records[i]`` (the records' own ``vector`` is ignored).
        With ``normalized=False`` the rows are L2-normalised **in place**. Raises
        :class:`~hexrag.core.errors.ConfigurationError` on a wrong dtype, layout or shape, or on
        duplicate ids.
        """
        if not isinstance(matrix, np.ndarray) or matrix.dtype != np.float32 or matrix.ndim != 2:
            raise ConfigurationError("from_arrays needs a 2-D float32 numpy matrix")
        if not matrix.flags.c_contiguous or not matrix.flags.writeable:
            raise ConfigurationError("from_arrays needs a writeable C-contiguous matrix")
        if matrix.shape[0] != len(records):
            raise ConfigurationError(
                f"from_arrays: {matrix.shape[0]} rows but {len(records)} records"
            )
        index = cls(
            namespace, matrix.shape[1], cosine_threshold=cosine_threshold, tie_order=tie_order
        )
        ids = [r.id for r in records]
        row = {rid: i for i, rid in enumerate(ids)}
        if len(row) != len(ids):
            raise ConfigurationError("from_arrays: duplicate record ids")
        if not normalized:
            index._stored = _normalise_keeping_stored(matrix, ids, tie_order)
        index._matrix = matrix
        index._pf = Int8Prefilter(matrix.shape[0], index._dim)
        index._pf.set_rows(0, matrix)
        index._n = len(records)
        index._ids = ids
        index._records = [r if r.vector is None else replace(r, vector=None) for r in records]
        index._row = row
        index._order = InsertionOrder(ids)
        return index

    def export_arrays(self) -> tuple[np.ndarray, list[VectorRecord]]:
        """The live rows (a view, ``(count, dim)`` float32, normalised) and their records
        (without vectors), row ``i`` belonging to record ``i``."""
        return self._matrix[: self._n], list(self._records)

    def export_stored_arrays(self) -> tuple[np.ndarray, list[VectorRecord]]:
        """As :meth:`export_arrays`, but each row is the vector **as stored** (upserted, or
        read from a file), bit for bit: what a writer persists. A copy when any stored
        vector differs from its normalised row, else the view."""
        matrix, records = self.export_arrays()
        if not self._stored:
            return matrix, records
        out = matrix.copy()
        for rid, vec in self._stored.items():
            out[self._row[rid]] = vec
        return out, records

    # -- port properties -----------------------------------------------------------------

    @property
    def tie_order(self) -> TieOrder:
        """``"id"`` or ``"nanovectordb"`` (see the class docstring)."""
        return self._tie_order

    @property
    def traits(self) -> VectorIndexTraits:
        """The rules this index declares (:class:`~hexrag.ports.vector_index.VectorIndexTraits`):
        the port's; with ``tie_order="nanovectordb"`` equal scores fall in NanoVectorDB's order
        (``ties="backend"``; the threshold stays inclusive, as NanoVectorDB's cut)."""
        return _NANO_TRAITS if self._tie_order == "nanovectordb" else PORT_TRAITS

    # -- writes --------------------------------------------------------------------------

    def _ensure_capacity(self, needed: int) -> None:
        cap = self._matrix.shape[0]
        if needed <= cap:
            return
        new_cap = max(needed, 2 * cap, 16)
        bigger = np.empty((new_cap, self._dim), dtype=np.float32)
        bigger[: self._n] = self._matrix[: self._n]
        self._matrix = bigger
        self._pf.grow(new_cap)
        if self._scope is not None:
            self._scope.grow(new_cap)

    def _scope_values(self, record: VectorRecord) -> dict[str, frozenset[str]]:
        return scope_values(record.metadata, record.file_path, record.full_doc_id)

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by id; all vectors are validated before anything is written."""
        if not records:
            return
        block = np.empty((len(records), self._dim), dtype=np.float32)
        for i, r in enumerate(records):
            if r.vector is None:
                raise ConfigurationError(
                    f"{self._namespace}: record {r.id!r} has no vector; nothing was written"
                )
            vec = np.asarray(r.vector, dtype=np.float32)
            if vec.ndim != 1 or vec.shape[0] != self._dim:
                raise ConfigurationError(
                    f"{self._namespace}: record {r.id!r} has a vector of shape {vec.shape}, "
                    f"expected ({self._dim},) (embedding model/dimension mismatch); "
                    "nothing was written"
                )
            block[i] = _nano_normalised(r.vector) if self._tie_order == "nanovectordb" else vec
        if self._tie_order != "nanovectordb":
            _normalise_rows(block)
        self._zero_rows = None
        _remember_stored(self._stored, records, block)
        # last write of an id wins, also inside the batch
        last: dict[str, int] = {}
        for i, r in enumerate(records):
            last[r.id] = i
        new = sum(1 for rid in last if rid not in self._row)
        self._ensure_capacity(self._n + new)
        written: list[int] = []
        for rid, i in last.items():
            record = replace(records[i], vector=None)
            row = self._row.get(rid)
            if row is None:
                row = self._n
                self._n += 1
                self._row[rid] = row
                self._order.add(rid)
                self._ids.append(rid)
                self._records.append(record)
            else:
                self._records[row] = record
            self._matrix[row] = block[i]
            written.append(row)
            if self._scope is not None:
                self._scope.set_row(row, self._scope_values(record))
        at = np.asarray(written, dtype=np.intp)
        self._pf.set_rows_at(at, self._matrix[at])

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove by id; unknown ids are ignored. With ``tie_order="id"`` the last row fills
        the hole; with ``"nanovectordb"`` the rows after it move up (``np.delete``)."""
        for rid in ids:
            self._order.remove(rid)
            self._stored.pop(rid, None)
        if self._tie_order == "nanovectordb":
            self._delete_keeping_order(ids)
            return
        for rid in ids:
            row = self._row.pop(rid, None)
            if row is None:
                continue
            last = self._n - 1
            if row != last:
                self._matrix[row] = self._matrix[last]
                self._pf.move(last, row)
                moved = self._ids[last]
                self._ids[row] = moved
                self._records[row] = self._records[last]
                self._row[moved] = row
            self._ids.pop()
            self._records.pop()
            if self._scope is not None:
                self._scope.move_last_into(row)
            self._n = last

    def _delete_keeping_order(self, ids: Sequence[str]) -> None:
        gone = {row for rid in ids if (row := self._row.pop(rid, None)) is not None}
        if not gone:
            return
        n = self._n
        keep = np.ones(n, dtype=bool)
        keep[np.fromiter(gone, dtype=np.intp, count=len(gone))] = False
        kept = np.flatnonzero(keep)
        m = kept.size
        self._matrix[:m] = self._matrix[kept]
        kept_rows = kept.tolist()
        self._ids = [self._ids[i] for i in kept_rows]
        self._records = [self._records[i] for i in kept_rows]
        self._row = {rid: i for i, rid in enumerate(self._ids)}
        self._n = m
        self._pf.keep_rows(kept)
        self._scope = None  # rebuilt on the next scoped query
        self._zero_rows = None

    # -- reads ---------------------------------------------------------------------------

    def _build_scope(self) -> _ScopeIndex:
        if self._scope is None:
            self._scope = _ScopeIndex.build(
                self._matrix.shape[0], self._records, self._scope_values
            )
        return self._scope

    async def query(
        self,
        vector: np.ndarray | Sequence[float],
        top_k: int,
        *,
        scope: QueryScope | None = None,
    ) -> list[VectorHit]:
        """Top ``top_k`` by cosine, ``score >= cosine_threshold``, scope applied first."""
        n = self._n
        if n == 0 or top_k <= 0:
            return []
        unscoped = scope is None or scope.is_empty
        if self._tie_order == "nanovectordb" and unscoped:
            return self._query_like_nanovectordb(vector, n, top_k)
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self._dim:
            raise ConfigurationError(
                f"{self._namespace}: query vector has length {q.shape[0]}, expected {self._dim}"
            )
        norm = float(np.linalg.norm(q))
        if norm > 0:
            q = q / np.float32(norm)
        threshold = np.float32(self._threshold)
        mask = None
        if scope is not None and not scope.is_empty:
            mask = self._build_scope().mask(scope, n)
        if n >= _prefilter.MIN_ROWS and norm > 0 and _prefilter.available():
            if self._pf_skip > 0:
                self._pf_skip -= 1
            else:
                hits = self._query_prefiltered(q, n, top_k, mask)
                if hits is not None:
                    return hits
        scores = self._matrix[:n] @ q
        np.clip(scores, -1.0, 1.0, out=scores)
        ok = scores >= threshold
        if mask is not None:
            ok &= mask
        candidates = np.flatnonzero(ok)
        return self._ranked(candidates, scores[candidates], top_k)

    def _zero_row_index(self, n: int) -> np.ndarray:
        """Rows of norm 0 (cached until the next write)."""
        if self._zero_rows is None:
            self._zero_rows = np.flatnonzero(~self._matrix[:n].any(axis=1))
        return self._zero_rows

    def _query_like_nanovectordb(
        self, vector: np.ndarray | Sequence[float], n: int, top_k: int
    ) -> list[VectorHit]:
        """NanoVectorDB 0.0.4.3's ``_cosine_query`` (no filter), bit for bit; the int8
        prefilter answers instead when it can prove that no tie decides the result."""
        q = _query_array(vector)
        if q.ndim != 1 or q.shape[0] != self._dim:
            raise ConfigurationError(
                f"{self._namespace}: query vector has shape {q.shape}, expected ({self._dim},)"
            )
        zero = self._zero_row_index(n)
        if (
            n >= _prefilter.MIN_ROWS
            and zero.size == 0
            and _prefilter.available()
            and np.all(np.isfinite(q))
        ):
            norm = float(np.linalg.norm(q))
            if norm > 0:
                if self._pf_skip > 0:
                    self._pf_skip -= 1
                else:
                    q32 = (q / norm).astype(np.float32)
                    pre = self._query_prefiltered(q32, n, top_k, None)
                    if pre is not None:
                        return pre
        with np.errstate(invalid="ignore", divide="ignore"):
            qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
            scores = np.dot(self._matrix[:n], qn)
        if zero.size:
            scores[zero] = np.nan  # NanoVectorDB's normalised zero row is NaN
        order = _nano_top(scores, top_k)
        threshold = self._threshold
        hits: list[VectorHit] = []
        records = self._records
        for row in order.tolist():
            score = scores[row]
            if score < threshold:
                break
            hits.append(VectorHit(record=records[row], score=float(score)))
        return hits

    def _ranked(self, rows: np.ndarray, scores: np.ndarray, top_k: int) -> list[VectorHit]:
        """The top ``top_k`` of ``rows`` (scores ``scores``, all above the threshold) in
        ``(-score, id)`` order."""
        if rows.size > top_k:
            kth = np.argpartition(-scores, top_k - 1)[top_k - 1]
            # keep every candidate tied with the k-th score so the id tie-break is exact
            keep = scores >= scores[kth]
            rows, scores = rows[keep], scores[keep]
        ids = self._ids
        ranked = sorted(
            zip(scores.tolist(), [ids[r] for r in rows.tolist()], rows.tolist(), strict=True),
            key=lambda t: (-t[0], t[1]),
        )[:top_k]
        return [VectorHit(record=self._records[row], score=s) for s, _, row in ranked]

    def _query_prefiltered(
        self, q: np.ndarray, n: int, top_k: int, mask: np.ndarray | None
    ) -> list[VectorHit] | None:
        """The search through the int8 prefilter (:mod:`.prefilter`), or ``None`` when the
        full product must decide: too many candidates (over a quarter of the rows), or two
        deciding scores (or a score and the threshold) closer than :data:`~.prefilter.NEAR`.
        The candidates are scored by :func:`~.prefilter.row_products`."""
        rows = self._pf.candidates(q, n, self._threshold, top_k, mask)
        if rows.size > n // 4:
            self._pf_misses += 1
            if self._pf_misses >= _prefilter.MISSES:
                self._pf_misses = 0
                self._pf_skip = _prefilter.SKIP
            return None
        self._pf_misses = 0
        if rows.size == 0:
            return []
        scores = row_products(self._matrix, rows, q)
        np.clip(scores, -1.0, 1.0, out=scores)
        threshold = np.float32(self._threshold)
        if np.any(np.abs(scores.astype(np.float64) - float(threshold)) < _prefilter.NEAR):
            return None
        ok = scores >= threshold
        rows, scores = rows[ok], scores[ok]
        if rows.size:
            deciding = np.sort(scores)[::-1][: top_k + 1].astype(np.float64)
            if deciding.size > 1 and float(np.min(deciding[:-1] - deciding[1:])) < _prefilter.NEAR:
                return None
        return self._ranked(rows, scores, top_k)

    async def get(self, ids: Sequence[str]) -> list[VectorRecord | None]:
        """Records (without vectors) in request order; ``None`` for a missing id."""
        out: list[VectorRecord | None] = []
        for rid in ids:
            row = self._row.get(rid)
            out.append(None if row is None else self._records[row])
        return out

    async def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Normalised float32 copies of the stored rows of the ids found."""
        found = {rid: row for rid in ids if (row := self._row.get(rid)) is not None}
        if not found:
            return {}
        block = self._matrix[np.fromiter(found.values(), dtype=np.intp, count=len(found))]
        return dict(zip(found, block, strict=True))  # rows of one fresh copy

    async def score_ids(self, ids: Sequence[str], vector: np.ndarray) -> np.ndarray:
        """Cosines of the stored rows of ``ids`` with ``vector`` (float64; NaN when missing):
        one gather and one product, no per-id vector copies (:class:`~hexrag.ports.ScoresIds`)."""
        n = len(ids)
        out = np.full(n, np.nan, dtype=np.float64)
        if n == 0:
            return out
        try:  # the usual case, every id is stored: one C-level pass
            rows = np.fromiter(map(self._row.__getitem__, ids), dtype=np.intp, count=n)
        except KeyError:
            get = self._row.get
            rows = np.fromiter((get(rid, -1) for rid in ids), dtype=np.intp, count=n)
        hit = rows >= 0
        if hit.any():
            out[hit] = cosine_scores(self._matrix[rows[hit]], vector)
        return out

    async def count(self) -> int:
        """Number of stored records."""
        return self._n

    async def scan_records(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[VectorRecord]:
        """A page of records with their vectors as stored (upserted or read, bit for bit; not
        re-normalised), in insertion order (:class:`~hexrag.ports.scan.ScansVectorIndex`)."""
        ids, nxt = self._order.page(cursor, limit)
        rows = [self._row[i] for i in ids]
        block = self._matrix[np.asarray(rows, dtype=np.intp)] if rows else None
        if block is not None and self._stored:
            for k, rid in enumerate(ids):
                vec = self._stored.get(rid)
                if vec is not None:
                    block[k] = vec
        items = [
            replace(self._records[row], vector=block[k])  # type: ignore[index]
            for k, row in enumerate(rows)
        ]
        return Page(items, nxt)

    def __repr__(self) -> str:
        return (
            f"MemoryVectorIndex(namespace={self._namespace!r}, dim={self._dim}, "
            f"count={self._n}, cosine_threshold={self._threshold})"
        )
