"""DocumentStore port: document status rows and per-source description fragments.

It lives beside the chunk store in every stack (LightRAG keeps its ``doc_status`` and
chunk-tracking rows in KV storage too). Every method is a small constant number of round
trips, whatever the number of ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hexrag.domain.documents import DocRecord, Fragment
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page


@runtime_checkable
class FragmentReader(Protocol):
    """The part of a :class:`DocumentStore` a scoped query reads (one call per query)."""

    async def fragments_about(self, names: Sequence[str]) -> list[Fragment]:
        """Every fragment about one of these entity names: entity fragments of the name and
        relation fragments with the name at either end; sorted by ``(seq, pos)``."""
        ...


@runtime_checkable
class DocumentStore(Protocol):
    """Document status rows by id, and :class:`~hexrag.core.documents.Fragment` records
    keyed by ``(chunk_id, pos)`` and findable by the entity names they are about."""

    async def upsert_docs(self, docs: Sequence[DocRecord]) -> None:
        """Insert or replace status rows by id."""
        ...

    async def get_docs(self, ids: Sequence[str]) -> list[DocRecord | None]:
        """Rows in request order, ``None`` for a missing id."""
        ...

    async def list_docs(self) -> list[DocRecord]:
        """Every row, ordered by ``seq`` then id."""
        ...

    async def delete_docs(self, ids: Sequence[str]) -> None:
        """Remove rows by id; unknown ids are ignored."""
        ...

    async def next_sequence(self) -> int:
        """A new insertion sequence number, larger than every one handed out before."""
        ...

    async def add_fragments(self, fragments: Sequence[Fragment]) -> None:
        """Store fragments (a fragment with the same ``(chunk_id, pos)`` is replaced)."""
        ...

    async def fragments_of_chunks(self, chunk_ids: Sequence[str]) -> list[Fragment]:
        """Every fragment extracted from these chunks, sorted by ``(seq, pos)``."""
        ...

    async def fragments_about(self, names: Sequence[str]) -> list[Fragment]:
        """Every fragment about one of these entity names: entity fragments of the name and
        relation fragments with the name at either end; sorted by ``(seq, pos)``."""
        ...

    async def delete_fragments_of_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Remove every fragment extracted from these chunks."""
        ...

    async def count_fragments(self) -> int:
        """Number of stored fragments."""
        ...

    async def scan_fragments(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Fragment]:
        """A page of stored fragments (migration, export, digests): the fragments of at most
        ``limit`` chunks (a chunk's fragments are never split across pages), otherwise as
        the scan contract of :mod:`hexrag.ports.scan` says (opaque cursor, ``None`` when
        done, every fragment exactly once without concurrent writes, one round trip)."""
        ...
