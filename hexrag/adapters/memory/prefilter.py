"""An exact int8 prefilter for the brute-force cosine search of :class:`MemoryVectorIndex`.

A query over ``n`` float32 rows reads ``4 * n * dim`` bytes: at 200k relations of 384
dimensions that is 307 MB and about 11 ms on two cores, memory-bound. This module keeps a
quarter-size int8 copy of the rows and makes the search read that instead, **without changing
any result**:

* every row ``x`` (float32, L2-normalised) is stored as ``x = s * c + e``: ``s = max|x| / 127``,
  ``c = rint(x / s)`` (int8) and a residual ``e`` of which only the norm ``|e|`` is kept;
* the query ``q`` is quantised the same way, ``q = t * p + d``;
* then ``x . q = s t (c . p) + s (c . d) + e . q``, so ``|x . q - s t (c . p)|`` is at most
  ``|s c| |d| + |e| |q|`` (Cauchy-Schwarz), plus the float32 rounding of the exact product
  (at most ``dim * 2**-24`` for unit vectors, counted twice).
  :meth:`Int8Prefilter.estimates` takes the largest of those bounds over all rows, ``B``;
* one int8 product (``simsimd``: SIMD, two threads on large indexes) gives every row's
  estimate ``a``; a row can only reach the threshold ``tau`` if ``a >= tau - B``, and it
  can only be in the top ``k`` if ``a >= a_k - 2B`` where ``a_k`` is the k-th largest
  estimate among those rows.

The few hundred rows left are scored exactly, by the same float32 product the full search uses
(:func:`row_products`: gathered blocks of a multiple of four rows, because OpenBLAS's float32
mat-vec scores groups of four rows with one kernel and leftover rows with another, whose last
bits differ). The caller then ranks exactly as before. Because scores of a gathered block can
still differ from the full product's in the last bits when the full product put a row in a
leftover group, the caller falls back to the full product whenever two kept scores, or a score
and the threshold, are closer than :data:`NEAR` (the differences seen are below ``3e-8``): the
ranking and the threshold cut are then exactly those of the full product.

When scores crowd (many rows within ``2B`` of the k-th), the prefilter cannot narrow the
search and costs an extra product; after :data:`MISSES` such searches in a row the index skips
it for the next :data:`SKIP` searches. Without ``simsimd`` installed the prefilter is off and
every query is the full product.
"""

from __future__ import annotations

import os

import numpy as np

try:  # optional at import time: without it every query is one full float32 product
    import simsimd as _simsimd
except ImportError:  # pragma: no cover - simsimd is a dependency; exercised by a monkeypatch test
    _simsimd = None  # type: ignore[assignment]

__all__ = [
    "MIN_ROWS",
    "MISSES",
    "NEAR",
    "SKIP",
    "Int8Prefilter",
    "available",
    "row_products",
]

# below this many rows one float32 product is already cheap (a few hundred microseconds)
MIN_ROWS = 2048
# scores this close (to each other or to the threshold) are re-checked by the full product
NEAR = 1e-6
# quantisation works on blocks of this many rows (bounded temporaries)
_BLOCK = 4096
# the int8 product runs on two threads from this many rows on (below, starting the threads
# costs more than it saves)
_THREADED_ROWS = 65536
_THREADS = min(2, os.cpu_count() or 1)
# after this many searches in a row that the prefilter could not narrow (too many candidates:
# crowded scores), the next SKIP searches go straight to the full product
MISSES = 4
SKIP = 32


# OpenBLAS runs a mat-vec on one thread when rows * dim < 2304 * 4 (its multithreading
# threshold); larger calls wake its worker threads, which then spin for about 0.1 s on the
# other core and halve the speed of the next threaded int8 product
_SINGLE_THREAD_ELEMENTS = 9216


def row_products(matrix: np.ndarray, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``matrix[rows] @ q``, bit for bit, without waking OpenBLAS's worker threads.

    The rows are scored in mat-vecs small enough to run on one thread, each a multiple of four
    rows (OpenBLAS scores groups of four rows with one kernel and leftover rows with another
    whose last bits differ; short blocks are padded by repeating a row), so every score is the
    one the full product gives a row outside OpenBLAS's per-thread leftovers. One
    ``np.matmul`` over a stack of blocks runs them all from C. When the rows are a third of
    the matrix or more, the blocks are views of the matrix itself (no gather).
    """
    m = rows.size
    n, dim = matrix.shape
    dtype = np.result_type(matrix.dtype, q.dtype)
    if m == 0:
        return np.empty(0, dtype=dtype)
    step = min(64, max(4, (_SINGLE_THREAD_ELEMENTS - 1) // max(1, dim) // 4 * 4))
    if 3 * m >= n and n >= step:
        whole = n // step * step
        head = np.matmul(matrix[:whole].reshape(-1, step, dim), q).reshape(-1)
        if whole == n:
            return head[rows]
        tail = _blocks(matrix, np.arange(whole, n), q, step)
        return np.concatenate([head, tail])[rows]
    return _blocks(matrix, rows, q, step)


def _blocks(matrix: np.ndarray, rows: np.ndarray, q: np.ndarray, step: int) -> np.ndarray:
    m, dim = rows.size, matrix.shape[1]
    pad = -m % step
    idx = np.concatenate([rows, np.repeat(rows[:1], pad)]) if pad else rows
    # gather about 512 KB at a time, so the gathered rows are still in cache when scored
    chunk = step * max(1, (1 << 19) // (step * dim * matrix.itemsize))
    out = np.empty(idx.size, dtype=np.result_type(matrix.dtype, q.dtype))
    for lo in range(0, idx.size, chunk):
        part = matrix[idx[lo : lo + chunk]]
        out[lo : lo + part.shape[0]] = np.matmul(part.reshape(-1, step, dim), q).reshape(-1)
    return out[:m]


def available() -> bool:
    """Whether the int8 kernel (``simsimd``) is importable."""
    return _simsimd is not None


class Int8Prefilter:
    """int8 codes, scales and error norms of a row matrix, kept in step with it.

    Row ``i`` here always describes row ``i`` of the owner's float32 matrix: the owner calls
    :meth:`set_rows` for every write, :meth:`move` for every delete's row move and
    :meth:`grow` when its capacity doubles.
    """

    def __init__(self, capacity: int, dim: int) -> None:
        self._dim = dim
        self.codes = np.zeros((capacity, dim), dtype=np.int8)
        self.scale = np.zeros(capacity, dtype=np.float64)
        # |s c| and |e| per row, float64
        self.code_norm = np.zeros(capacity, dtype=np.float64)
        self.resid_norm = np.zeros(capacity, dtype=np.float64)
        self._max: tuple[int, float, float] | None = None  # (n, max code_norm, max resid_norm)

    def grow(self, capacity: int) -> None:
        """Enlarge to ``capacity`` rows, keeping the existing ones."""
        old = self.codes.shape[0]
        if capacity <= old:
            return
        codes = np.zeros((capacity, self._dim), dtype=np.int8)
        codes[:old] = self.codes
        self.codes = codes
        for name in ("scale", "code_norm", "resid_norm"):
            arr = np.zeros(capacity, dtype=np.float64)
            arr[:old] = getattr(self, name)
            setattr(self, name, arr)

    def set_rows(self, start: int, block: np.ndarray) -> None:
        """Quantise ``block`` (float32 rows) into rows ``start .. start + len(block)``."""
        self.set_rows_at(np.arange(start, start + block.shape[0]), block)

    def set_rows_at(self, rows: np.ndarray, block: np.ndarray) -> None:
        """Quantise ``block[i]`` (float32) into row ``rows[i]``."""
        for lo in range(0, block.shape[0], _BLOCK):
            self._quantise(rows[lo : lo + _BLOCK], block[lo : lo + _BLOCK])
        self._max = None

    def move(self, src: int, dst: int) -> None:
        """Row ``src`` now lives at ``dst`` (a delete moved the last row into a hole)."""
        self.codes[dst] = self.codes[src]
        self.scale[dst] = self.scale[src]
        self.code_norm[dst] = self.code_norm[src]
        self.resid_norm[dst] = self.resid_norm[src]
        self._max = None

    def keep_rows(self, kept: np.ndarray) -> None:
        """Rows ``kept`` (ascending) now live at ``0 .. len(kept)`` (a delete that keeps the
        row order closed its gaps)."""
        m = kept.size
        self.codes[:m] = self.codes[kept]
        for arr in (self.scale, self.code_norm, self.resid_norm):
            arr[:m] = arr[kept]
        self._max = None

    def _quantise(self, at: np.ndarray, part: np.ndarray) -> None:
        amax = np.abs(part).max(axis=1).astype(np.float64)
        scale = amax / 127.0
        inv = np.divide(1.0, scale, out=np.zeros_like(scale), where=scale > 0)
        scaled = part * inv.astype(np.float32)[:, None]
        np.rint(scaled, out=scaled)
        np.clip(scaled, -127, 127, out=scaled)
        codes = scaled.astype(np.int8)
        # float64 for the error terms: they must bound the truth, not a rounded copy of it
        recon = scaled.astype(np.float64)
        recon *= scale[:, None]
        code_norm = np.sqrt(np.einsum("ij,ij->i", recon, recon))
        recon -= part
        resid_norm = np.sqrt(np.einsum("ij,ij->i", recon, recon))
        self.codes[at] = codes
        self.scale[at] = scale
        self.code_norm[at] = code_norm
        self.resid_norm[at] = resid_norm

    def _maxima(self, n: int) -> tuple[float, float]:
        if self._max is None or self._max[0] != n:
            self._max = (n, float(self.code_norm[:n].max()), float(self.resid_norm[:n].max()))
        return self._max[1], self._max[2]

    def estimates(self, q: np.ndarray, n: int) -> tuple[np.ndarray, float]:
        """Every row's estimate of its product with ``q`` (float32, L2-normalised), from one
        int8 product, and ``B``: no row's float32 product with ``q`` is farther than ``B`` from
        its estimate. Needs ``simsimd`` (:func:`available`) and a non-zero ``q``."""
        if _simsimd is None:
            raise RuntimeError("the int8 prefilter needs simsimd")
        t = float(np.abs(q).max()) / 127.0
        p = np.rint(q / np.float32(t))
        np.clip(p, -127, 127, out=p)
        q64 = q.astype(np.float64)
        d = q64 - t * p.astype(np.float64)
        max_code, max_resid = self._maxima(n)
        q_norm = float(np.sqrt(np.dot(q64, q64)))
        bound = max_code * float(np.sqrt(np.dot(d, d))) + max_resid * q_norm
        # the exact product is float32: its rounding error is at most |x| |q| dim 2**-24
        # (|x| <= |s c| + |e|), doubled for safety
        fp_error = 2.0 * self._dim * 2.0**-24 * (max_code + max_resid) * q_norm
        bound = bound * (1.0 + 1e-6) + fp_error + 1e-9
        dots = _simsimd.cdist(
            self.codes[:n],
            p.astype(np.int8)[None, :],
            metric="dot",
            threads=_THREADS if n >= _THREADED_ROWS else 1,
        )
        est = np.asarray(dots, dtype=np.float64).reshape(-1)
        est *= self.scale[:n]
        est *= t
        return est, bound

    def candidates(
        self,
        q: np.ndarray,
        n: int,
        threshold: float,
        top_k: int,
        mask: np.ndarray | None = None,
    ) -> np.ndarray:
        """Rows among ``[0, n)`` that may score ``>= threshold`` and be in the top ``top_k``
        (rows tied with the k-th score included), in ascending order. ``q``: the float32,
        L2-normalised, non-zero query; ``mask``: rows allowed (a scope), or ``None``."""
        est, bound = self.estimates(q, n)
        ok = est >= threshold - bound
        if mask is not None:
            ok &= mask
        rows = np.flatnonzero(ok)
        if rows.size > top_k:
            part = est[rows]
            kth = np.partition(part, rows.size - top_k)[rows.size - top_k]
            rows = rows[part >= kth - 2.0 * bound]
        return rows
