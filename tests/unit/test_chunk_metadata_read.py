"""Naive mode reads the shown chunks' metadata alone (for their heading paths) when the
chunk store can (:class:`~hexrag.ports.chunk_metadata.ChunkMetadata`), and answers exactly
as when it reads the chunks whole."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hexrag.adapters.memory import (
    HashingEmbedder,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.core.query.engine import QueryEngine
from hexrag.core.query.run import ChunkFetcher, RunStats
from hexrag.domain.params import QueryParam
from hexrag.domain.records import Chunk, VectorRecord
from hexrag.ports.chunk_metadata import ChunkMetadata

DIM = 32


class WholeReads:
    """A chunk store that counts its reads and can only read chunks whole."""

    def __init__(self, inner: MemoryChunkStore) -> None:
        self._inner = inner
        self.calls: list[str] = []

    async def get_chunks(self, ids: Sequence[str]) -> list[Chunk | None]:
        self.calls.append("get_chunks")
        return await self._inner.get_chunks(ids)

    def __getattr__(self, name: str) -> Any:
        if name == "get_chunk_metadata":
            raise AttributeError(name)
        return getattr(self._inner, name)


class MetadataReads(WholeReads):
    """The same, with the metadata read."""

    async def get_chunk_metadata(self, ids: Sequence[str]) -> list[Any]:
        self.calls.append("get_chunk_metadata")
        return await self._inner.get_chunk_metadata(ids)


def _chunks() -> list[Chunk]:
    out = []
    for i in range(30):
        meta: dict[str, Any] = {}
        if i % 3:
            meta["heading"] = {"heading": f"H{i}", "parent_headings": [f"Part {i % 4}", "Intro"]}
        out.append(Chunk(id=f"c{i}", content=f"chunk text number {i} " * 5,
                         file_path=f"f{i % 4}.md", metadata=meta))
    return out


async def _engine(store: Any) -> QueryEngine:
    embedder = HashingEmbedder(DIM)
    chunks = _chunks()
    index = MemoryVectorIndex("chunks", DIM, cosine_threshold=-1.0)
    vectors = await embedder.embed([c.content for c in chunks])
    await index.upsert([
        VectorRecord(id=c.id, vector=v, content=c.content, file_path=c.file_path)
        for c, v in zip(chunks, vectors, strict=True)
    ])
    return QueryEngine(  # type: ignore[arg-type]
        entities=MemoryVectorIndex("entities", DIM), relationships=MemoryVectorIndex(
            "relationships", DIM), chunks=index, graph=MemoryGraphStore(), chunk_store=store,
        embedder=embedder, tokenizer=default_tokenizer(),
    )


async def test_naive_reads_metadata_alone_and_answers_the_same() -> None:
    stored = [c for c in _chunks() if c.id != "c5"]  # c5: indexed but not stored
    plain, light = WholeReads(MemoryChunkStore(stored)), MetadataReads(MemoryChunkStore(stored))
    assert not isinstance(plain, ChunkMetadata) and isinstance(light, ChunkMetadata)
    param = QueryParam(mode="naive", top_k=12, chunk_top_k=12, enable_rerank=False)
    for question in ("chunk text number 5", "chunk text number 17", "number 2"):
        want = await (await _engine(plain)).query_data(question, param)
        got = await (await _engine(light)).query_data(question, param)
        assert got == want
        context = await (await _engine(light)).query(
            question, QueryParam(mode="naive", top_k=12, chunk_top_k=12, enable_rerank=False,
                                 only_need_context=True))
        assert "content_headings" in str(context)  # the headings were found and shown
    assert set(plain.calls) == {"get_chunks"}
    assert set(light.calls) == {"get_chunk_metadata"}


async def test_fetcher_metadata_records_missing_ids_and_reuses_known_chunks() -> None:
    store = MetadataReads(MemoryChunkStore(_chunks()[:4]))
    stats = RunStats()
    fetcher = ChunkFetcher(store, stats)  # type: ignore[arg-type]
    await fetcher.prefetch(["c0", "c1"])
    meta = await fetcher.metadata(["c1", "c2", "nope", "c2"])
    assert meta == [_chunks()[1].metadata, _chunks()[2].metadata, None, _chunks()[2].metadata]
    assert list(stats.missing_chunk_ids) == ["nope"]
    assert store.calls == ["get_chunks", "get_chunk_metadata"]  # c1 known, c2 + nope read once
