"""ChunkStore port: chunk text and metadata by id.

Declared departures
===================

hexrag's own layouts keep every field and every ``metadata`` key as written. A layout serving
another system's data in place (LightRAG's ``lightrag_doc_chunks`` table, its Redis text chunks)
keeps that system's record instead and says so with a :class:`ChunkStoreTraits` record as its
``traits`` attribute; a store without one keeps the port's rules (:func:`chunk_traits_of`). The
contract suite (:mod:`hexrag.testing.chunk_store`) compares what the declaration says survives,
so a layout still fails when it does anything other than what it declares:

* ``metadata_keys``: the caller's ``metadata`` keys that round-trip whatever their JSON value
  (``None``: every key; an empty set: none - a table of fixed columns).
* ``stamped_keys``: bookkeeping keys the layout writes into every record itself (LightRAG's
  ``_id``, ``create_time``, ``update_time``, ``llm_cache_list``): every chunk reads back with
  each of them in ``metadata``, whatever was written; they are compared by presence only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from hexrag.domain.records import Chunk


@runtime_checkable
class ChunkStore(Protocol):
    """A key-value store of :class:`Chunk` records; one round trip per call."""

    async def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace chunks by id (idempotent; read-your-writes)."""
        ...

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        """Chunks in request order (duplicates repeated), ``None`` for a missing id.

        Every stored field round-trips unchanged: ``content``, ``tokens``, ``full_doc_id``,
        ``chunk_order_index``, ``file_path`` and every ``metadata`` key with JSON values
        (``None`` values included).
        """
        ...

    async def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove chunks by id; unknown ids are ignored."""
        ...

    async def count(self) -> int:
        """Number of stored chunks."""
        ...


@dataclass(frozen=True, slots=True)
class ChunkStoreTraits:
    """What a chunk store declares about the records it keeps (see the module docstring);
    the defaults are the port's own rules."""

    metadata_keys: frozenset[str] | None = None
    stamped_keys: frozenset[str] = field(default_factory=frozenset)

    def view(self, chunk: Chunk) -> Chunk:
        """``chunk`` as far as the declaration promises it round-trips: metadata kept to
        ``metadata_keys``, stamped keys left out."""
        keys = self.metadata_keys
        meta = {
            k: v
            for k, v in chunk.metadata.items()
            if k not in self.stamped_keys and (keys is None or k in keys)
        }
        return Chunk(
            id=chunk.id, content=chunk.content, tokens=chunk.tokens, full_doc_id=chunk.full_doc_id,
            chunk_order_index=chunk.chunk_order_index, file_path=chunk.file_path, metadata=meta,
        )


#: The port's own rules (what a chunk store without a ``traits`` attribute keeps).
PORT_CHUNK_TRAITS = ChunkStoreTraits()


def chunk_traits_of(store: object) -> ChunkStoreTraits:
    """``store.traits`` when the store declares them, else :data:`PORT_CHUNK_TRAITS`."""
    traits = getattr(store, "traits", None)
    return traits if isinstance(traits, ChunkStoreTraits) else PORT_CHUNK_TRAITS
