"""The chunks index of a LightRAG working directory, with NanoVectorDB's per-row float16 vectors.

LightRAG's VECTOR chunk picking ranks candidate chunks by cosine against the vectors that
``NanoVectorDBStorage.get_vectors_by_ids`` returns: each row's ``"vector"`` field, the float16
copy of the **raw** embedding. The float32 normalised matrix (what searches use) differs from
it by float16 rounding, enough to swap chunks at the ``num_of_chunks`` cut in a few percent of
queries. So the chunks index keeps those float16 rows (2 bytes per value, chunks only: entity
and relationship vectors are never read back by the query path) and serves them from
:meth:`get_vectors`, which makes VECTOR picking identical to LightRAG's. Records upserted later
keep a float16 copy of their raw vector, as NanoVectorDB does when it flushes.

The rows are held widened to float64 (exact: every float16 is a float64), 8 bytes per value
for the chunks file only (about 77 MB for 25k chunks of 384 dimensions), because LightRAG
scores them in float64: VECTOR picking then gathers and scores the candidate rows with no
conversion per query, in small single-thread products
(:func:`~hexrag.adapters.memory.prefilter.row_products`).
"""

from __future__ import annotations

import binascii
import zlib
from collections.abc import Sequence

import numpy as np

from hexrag.adapters.memory import MemoryVectorIndex
from hexrag.adapters.memory.prefilter import row_products
from hexrag.core.query.pick import cosine_from_dots, cosine_scores, row_norms
from hexrag.domain.records import VectorRecord

__all__ = ["NanoRowVectorIndex"]


def _decoded(text: str, dim: int, fallback: object) -> np.ndarray:
    """A carried ``"vector"`` string as float16; an undecodable one falls back to the
    float16 copy of ``fallback`` (the record's vector)."""
    from hexrag.adapters.workdir.nanovdb import decode_row_vector

    try:
        vec = decode_row_vector(text).astype(np.float16)
    except (ValueError, TypeError, zlib.error, binascii.Error):
        vec = None
    if vec is None or vec.shape != (dim,):
        return np.asarray(fallback, dtype=np.float32).astype(np.float16)
    return vec


class NanoRowVectorIndex(MemoryVectorIndex):
    """A :class:`MemoryVectorIndex` whose :meth:`get_vectors` returns NanoVectorDB's row vectors."""

    def _init_extra_state(self) -> None:
        self._rows64 = np.zeros((0, self.dim), dtype=np.float64)
        self._f16_row: dict[str, int] = {}
        self._f16_new: dict[str, np.ndarray] = {}
        self._norms = np.zeros(0, dtype=np.float64)

    def attach_row_vectors(self, ids: Sequence[str], f16: np.ndarray, present: np.ndarray) -> None:
        """Adopt ``f16`` (``(len(ids), dim)`` float16); row ``i`` is ``ids[i]``'s vector when
        ``present[i]`` (rows written by old LightRAG versions may lack one)."""
        self._rows64 = np.asarray(f16, dtype=np.float64)  # exact widening, once
        self._f16_row = {rid: i for i, rid in enumerate(ids) if present[i]}
        self._f16_new = {}
        # the norm of every row, once: VECTOR picking then only takes dot products
        self._norms = row_norms(self._rows64)

    def row_vector(self, rid: str) -> np.ndarray | None:
        """The float16 row vector of ``rid`` as LightRAG stores it, ``None`` when there is none."""
        new = self._f16_new.get(rid)
        if new is not None:
            return new
        row = self._f16_row.get(rid)
        return None if row is None else self._rows64[row].astype(np.float16)

    async def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Upsert, then remember a float16 copy of each raw vector (NanoVectorDB's flush)."""
        await super().upsert(records)
        for r in records:
            self._f16_row.pop(r.id, None)
            if r.row_vector is not None:  # LightRAG's own row, carried by a copy
                self._f16_new[r.id] = _decoded(r.row_vector, self.dim, r.vector)
            elif r.vector is not None:
                self._f16_new[r.id] = np.asarray(r.vector, dtype=np.float32).astype(np.float16)

    async def delete(self, ids: Sequence[str]) -> None:
        """Delete, forgetting the row vectors too."""
        await super().delete(ids)
        for rid in ids:
            self._f16_row.pop(rid, None)
            self._f16_new.pop(rid, None)

    async def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The float16 row vectors (as float32, not normalised) of the ids found.

        Ids without a row vector fall back to the normalised matrix row (same direction).
        """
        out: dict[str, np.ndarray] = {}
        rows: dict[str, int] = {}
        rest: list[str] = []
        for rid in ids:
            if rid in out or rid in rows:
                continue
            new = self._f16_new.get(rid)
            if new is not None:
                out[rid] = new.astype(np.float32)
            elif (row := self._f16_row.get(rid)) is not None:
                rows[rid] = row
            else:
                rest.append(rid)
        if rows:
            block = self._rows64[np.fromiter(rows.values(), dtype=np.intp, count=len(rows))]
            out.update(zip(rows, block.astype(np.float32), strict=True))
        if rest:
            out.update(await super().get_vectors(rest))
        return out

    async def score_ids(self, ids: Sequence[str], vector: np.ndarray) -> np.ndarray:
        """Cosines of the float16 row vectors of ``ids`` with ``vector``, scored in place.

        The same numbers as :meth:`get_vectors` + :func:`~hexrag.core.query.pick.cosine_scores`
        (float64 arithmetic on the float16 values) without copying vectors out
        (:func:`~hexrag.adapters.memory.prefilter.row_products`). Ids without a row vector are
        scored by the normalised matrix.
        """
        n = len(ids)
        try:  # the usual case, every id has a row: one C-level pass
            rows = np.fromiter(map(self._f16_row.__getitem__, ids), dtype=np.intp, count=n)
        except KeyError:
            get = self._f16_row.get
            rows = np.fromiter((get(rid, -1) for rid in ids), dtype=np.intp, count=n)
        hit = rows >= 0
        out = np.full(n, np.nan, dtype=np.float64)
        if hit.any():
            found = rows[hit]
            q = np.asarray(vector, dtype=np.float64)
            dots = row_products(self._rows64, found, q)
            out[hit] = cosine_from_dots(dots, self._norms[found], q)
        if hit.all():
            return out
        rest = np.flatnonzero(~hit).tolist()
        fresh = [i for i in rest if ids[i] in self._f16_new]
        if fresh:
            block = np.stack([self._f16_new[ids[i]] for i in fresh])
            out[fresh] = cosine_scores(block, vector)
        other = [i for i in rest if ids[i] not in self._f16_new]
        if other:
            out[other] = await super().score_ids([ids[i] for i in other], vector)
        return out
