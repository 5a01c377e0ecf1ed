"""In-memory :class:`~hexrag.ports.DocumentStore`."""

from __future__ import annotations

import copy
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Any

from hexrag.domain.documents import DocRecord, Fragment
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

__all__ = ["MemoryDocumentStore"]


def _sorted(fragments: Iterable[Fragment]) -> list[Fragment]:
    return sorted(fragments, key=lambda f: (f.seq, f.pos, f.chunk_id))


class MemoryDocumentStore:
    """Status rows in a dict; fragments by chunk id with an index by entity name."""

    def __init__(self) -> None:
        self._docs: dict[str, DocRecord] = {}
        self._by_chunk: dict[str, dict[int, Fragment]] = {}
        self._by_name: dict[str, set[str]] = {}
        self._seq = 0
        #: Whether anything was written since construction or :meth:`load`.
        self.changed = False

    async def upsert_docs(self, docs: Sequence[DocRecord]) -> None:
        """Insert or replace status rows by id."""
        self.changed = True
        for d in docs:
            self._docs[d.id] = copy.deepcopy(d)
            self._seq = max(self._seq, d.seq)

    async def get_docs(self, ids: Sequence[str]) -> list[DocRecord | None]:
        """Rows in request order, ``None`` for a missing id."""
        return [copy.deepcopy(self._docs.get(i)) for i in ids]

    async def list_docs(self) -> list[DocRecord]:
        """Every row, ordered by ``seq`` then id."""
        return [copy.deepcopy(d) for d in sorted(self._docs.values(), key=lambda d: (d.seq, d.id))]

    async def delete_docs(self, ids: Sequence[str]) -> None:
        """Remove rows by id."""
        self.changed = True
        for i in ids:
            self._docs.pop(i, None)

    async def next_sequence(self) -> int:
        """A new insertion sequence number."""
        self.changed = True
        self._seq += 1
        return self._seq

    async def add_fragments(self, fragments: Sequence[Fragment]) -> None:
        """Store fragments (same ``(chunk_id, pos)`` replaced)."""
        self.changed = True
        for f in fragments:
            old = self._by_chunk.get(f.chunk_id, {}).get(f.pos)
            if old is not None:
                self._unindex(old)
            self._by_chunk.setdefault(f.chunk_id, {})[f.pos] = f
            for name in f.names:
                self._by_name.setdefault(name, set()).add(f.chunk_id)
            self._seq = max(self._seq, f.seq)

    def _unindex(self, f: Fragment) -> None:
        for name in f.names:
            chunks = self._by_name.get(name)
            if chunks is None:
                continue
            still = any(name in g.names for g in self._by_chunk.get(f.chunk_id, {}).values()
                        if g is not f)
            if not still:
                chunks.discard(f.chunk_id)
                if not chunks:
                    del self._by_name[name]

    async def fragments_of_chunks(self, chunk_ids: Sequence[str]) -> list[Fragment]:
        """Every fragment extracted from these chunks, sorted by ``(seq, pos)``."""
        out: list[Fragment] = []
        for c in dict.fromkeys(chunk_ids):
            out.extend(self._by_chunk.get(c, {}).values())
        return _sorted(out)

    async def fragments_about(self, names: Sequence[str]) -> list[Fragment]:
        """Every fragment about one of these entity names, sorted by ``(seq, pos)``."""
        wanted = set(names)
        chunks: set[str] = set()
        for n in wanted:
            chunks |= self._by_name.get(n, set())
        return _sorted(
            f for c in chunks for f in self._by_chunk.get(c, {}).values()
            if wanted.intersection(f.names)
        )

    async def delete_fragments_of_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Remove every fragment extracted from these chunks."""
        self.changed = True
        for c in chunk_ids:
            frags = self._by_chunk.pop(c, {})
            for f in frags.values():
                for name in f.names:
                    s = self._by_name.get(name)
                    if s is not None:
                        s.discard(c)
                        if not s:
                            del self._by_name[name]

    async def count_fragments(self) -> int:
        """Number of stored fragments."""
        return sum(len(v) for v in self._by_chunk.values())

    async def scan_fragments(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Fragment]:
        """A page of fragments: those of at most ``limit`` chunks, chunks in id order
        (``cursor``: the last chunk id of the previous page)."""
        check_scan_limit(limit)
        chunks = sorted(c for c, frags in self._by_chunk.items() if frags)
        start = 0 if cursor is None else bisect_right(chunks, cursor)
        page = chunks[start : start + limit]
        items = [self._by_chunk[c][p] for c in page for p in sorted(self._by_chunk[c])]
        more = start + limit < len(chunks)
        return Page(items, page[-1] if more and page else None)

    # -- persistence helpers (the working-directory stack saves these as JSON files)

    def dump(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """``(doc_status, fragments)`` as JSON-ready values."""
        docs = {d.id: d.to_json() for d in sorted(self._docs.values(), key=lambda d: (d.seq, d.id))}
        frags = [f.to_json() for v in self._by_chunk.values() for f in v.values()]
        return docs, _sort_json(frags)

    def load(self, docs: dict[str, Any], fragments: Iterable[dict[str, Any]]) -> None:
        """Replace the contents with what :meth:`dump` returned."""
        self.__init__()  # type: ignore[misc]
        for doc_id, raw in docs.items():
            rec = DocRecord.from_json(doc_id, raw)
            self._docs[doc_id] = rec
            self._seq = max(self._seq, rec.seq)
        for raw in fragments:
            f = Fragment.from_json(raw)
            self._by_chunk.setdefault(f.chunk_id, {})[f.pos] = f
            for name in f.names:
                self._by_name.setdefault(name, set()).add(f.chunk_id)
            self._seq = max(self._seq, f.seq)
        self.changed = False

    def __repr__(self) -> str:
        n = sum(len(v) for v in self._by_chunk.values())
        return f"MemoryDocumentStore(docs={len(self._docs)}, fragments={n})"


def _sort_json(frags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(frags, key=lambda f: (f["seq"], f["pos"], f["chunk_id"]))
