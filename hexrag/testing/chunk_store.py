"""Contract tests for :class:`hexrag.ports.ChunkStore`.

A store that declares :class:`~hexrag.ports.chunk_store.ChunkStoreTraits` (``traits``) is held
to what it declares: chunks are compared as the declaration says they round-trip
(:meth:`~hexrag.ports.chunk_store.ChunkStoreTraits.view`), and every declared stamped key must
be present on every chunk read back.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from hexrag.core.model import Chunk
from hexrag.ports import ChunkStore, ScansChunks
from hexrag.ports.chunk_store import ChunkStoreTraits, chunk_traits_of
from hexrag.testing import corpus
from hexrag.testing._guard import ContractGuard
from hexrag.testing.scan import check_resume_after_writes, check_scan_basics, collect


class ChunkStoreContract(ContractGuard):
    """Subclass in a ``Test*`` class and override the ``chunk_store`` fixture.

    The fixture yields a **fresh, empty** store in its own namespace and cleans it up.
    """

    @pytest.fixture
    def chunk_store(self) -> ChunkStore:
        """Override: yield a fresh, empty ChunkStore."""
        raise NotImplementedError("override the chunk_store fixture")

    @staticmethod
    def _seen(store: ChunkStore, chunks: list[Chunk | None] | list[Chunk]) -> list[Any]:
        """Chunks as the store declares they round-trip (stamped keys checked present)."""
        traits: ChunkStoreTraits = chunk_traits_of(store)
        out: list[Any] = []
        for c in chunks:
            if c is None:
                out.append(None)
                continue
            missing = traits.stamped_keys - set(c.metadata)
            assert not missing, f"{c.id}: declared stamped keys {sorted(missing)} not read back"
            out.append(traits.view(c))
        return out

    @staticmethod
    def _want(store: ChunkStore, chunks: list[Chunk | None] | list[Chunk]) -> list[Any]:
        """Written chunks as the store declares it keeps them."""
        traits = chunk_traits_of(store)
        return [None if c is None else traits.view(c) for c in chunks]

    async def _loaded(self, store: ChunkStore) -> list[Chunk]:
        assert isinstance(store, ChunkStore)
        chunks = corpus.chunks()
        await store.upsert_chunks(chunks)
        return chunks

    async def test_empty_store(self, chunk_store: ChunkStore) -> None:
        """An empty store counts 0 and answers None."""
        assert await chunk_store.count() == 0
        assert await chunk_store.get_chunks(["chunk-1"]) == [None]
        assert await chunk_store.get_chunks([]) == []

    async def test_every_field_round_trips(self, chunk_store: ChunkStore) -> None:
        """content, tokens, full_doc_id, chunk_order_index, file_path and every metadata key
        with JSON values (None values included) round-trip unchanged."""
        chunks = await self._loaded(chunk_store)
        got = self._seen(chunk_store, await chunk_store.get_chunks([c.id for c in chunks]))
        for actual, expected in zip(got, self._want(chunk_store, chunks), strict=True):
            assert actual is not None, expected.id
            assert isinstance(actual, Chunk)
            assert actual == expected, expected.id
            assert dict(actual.metadata) == dict(expected.metadata), expected.id

    async def test_request_order_duplicates_and_missing(self, chunk_store: ChunkStore) -> None:
        """Chunks in request order (duplicates repeated), None for a missing id."""
        chunks = await self._loaded(chunk_store)
        by_id = {c.id: c for c in chunks}
        request = ["chunk-10", "missing", "chunk-1", "chunk-10", "xchunk-1", "chunk-",
                   "CHUNK-1", "%", "chunk-é-中文-🚀", "chunk-'q\"\\%_"]
        got = self._seen(chunk_store, await chunk_store.get_chunks(request))
        assert got == self._want(chunk_store, [by_id.get(i) for i in request])

    async def test_upsert_is_idempotent_and_replaces(self, chunk_store: ChunkStore) -> None:
        """Insert or replace chunks by id (idempotent; read-your-writes)."""
        chunks = await self._loaded(chunk_store)
        await chunk_store.upsert_chunks(chunks)
        assert await chunk_store.count() == len(chunks)
        new = replace(chunks[0], content="replaced 中文", tokens=None, metadata={"x": None})
        await chunk_store.upsert_chunks([new])
        got = self._seen(chunk_store, await chunk_store.get_chunks([new.id]))
        assert got == self._want(chunk_store, [new])
        assert await chunk_store.count() == len(chunks)

    async def test_last_write_wins_within_a_batch(self, chunk_store: ChunkStore) -> None:
        """Two writes of one id in one call: the last wins."""
        a = Chunk(id="dup", content="first")
        b = Chunk(id="dup", content="second", tokens=2)
        await chunk_store.upsert_chunks([a, b])
        got = self._seen(chunk_store, await chunk_store.get_chunks(["dup"]))
        assert got == self._want(chunk_store, [b])
        assert await chunk_store.count() == 1

    async def test_delete(self, chunk_store: ChunkStore) -> None:
        """Remove chunks by id; unknown ids are ignored."""
        chunks = await self._loaded(chunk_store)
        await chunk_store.delete_chunks(["chunk-1", "unknown", "chunk-1"])
        assert await chunk_store.count() == len(chunks) - 1
        got = self._seen(chunk_store, await chunk_store.get_chunks(["chunk-1", "chunk-10"]))
        assert got[0] is None and got[1] == self._want(chunk_store, [chunks[1]])[0]
        await chunk_store.delete_chunks([])
        assert await chunk_store.count() == len(chunks) - 1

    async def test_count(self, chunk_store: ChunkStore) -> None:
        """Number of stored chunks."""
        chunks = await self._loaded(chunk_store)
        assert await chunk_store.count() == len(chunks)

    async def test_large_batch(self, chunk_store: ChunkStore) -> None:
        """Hundreds of ids in one call."""
        many = [Chunk(id=f"bulk-{i:04d}", content=f"text {i}", tokens=i) for i in range(500)]
        await chunk_store.upsert_chunks(many)
        got = self._seen(chunk_store, await chunk_store.get_chunks([c.id for c in many]))
        assert got == self._want(chunk_store, many)
        await chunk_store.delete_chunks([c.id for c in many[:450]])
        assert await chunk_store.count() == 50

    # ---- scan (hexrag.ports.scan) --------------------------------------------------------

    async def test_scan_lists_every_chunk(self, chunk_store: ChunkStore) -> None:
        """``scan_chunks`` pages list every chunk once, equal to ``get_chunks``; an empty store's
        scan ends with no chunk; a bad limit is InvalidQuery."""
        assert isinstance(chunk_store, ScansChunks), "ChunkStore must offer scan_chunks"
        # empty pages with a cursor are allowed (a Redis SCAN over a shared server); the
        # scan of an empty store must end with no item
        assert (await collect(chunk_store.scan_chunks, limit=5))[0] == []
        chunks = await self._loaded(chunk_store)
        by_id = {c.id: c for c in self._want(chunk_store, chunks)}
        await check_scan_basics(chunk_store.scan_chunks, lambda c: c.id, set(by_id))
        items, _ = await collect(chunk_store.scan_chunks, limit=3)
        for c in self._seen(chunk_store, items):
            assert isinstance(c, Chunk)
            assert c == by_id[c.id], c.id

    async def test_scan_resumes_after_writes(self, chunk_store: ChunkStore) -> None:
        """A scan resumed after writes lists every chunk present for the whole scan once."""
        chunks = await self._loaded(chunk_store)
        assert isinstance(chunk_store, ScansChunks)

        async def write(seen: set[Any]) -> tuple[set[Any], set[Any]]:
            gone = {next(iter(seen)), *[c.id for c in chunks if c.id not in seen][:2]}
            await chunk_store.delete_chunks(sorted(gone))
            new = replace(chunks[0], id="chunk-scan-new")
            await chunk_store.upsert_chunks([new])
            return {new.id}, gone

        await check_resume_after_writes(
            chunk_store.scan_chunks, lambda c: c.id, {c.id for c in chunks}, write
        )
