"""End-to-end contract: a full set of stores behind the real :class:`QueryEngine`.

Seed 001 (zero-chunk PRD): the relationships vector index holds one ``Airtable -> n8n``
record whose ``source_id`` is PostgreSQL array text ``{chunk-feb9…}``; the graph holds 21
relations between the pair and only :data:`~hexrag.testing.corpus.SEED_001_CARRIER` names
chunks that exist in the chunk store. Hybrid retrieval with the ``"chunk"`` relation lookup must
return every valid chunk; the LightRAG ``"pair"`` lookup must show the old zero-chunk failure
(asserted, so the test proves the fix).
"""

from __future__ import annotations

from typing import Any

import pytest

from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, EngineSettings, Entity, QueryParam, VectorRecord
from hexrag.ports import ChunkStore, Embedder, GraphStore, VectorIndex
from hexrag.testing import corpus
from hexrag.testing._guard import ContractGuard

STACK_KEYS = ("entities", "relationships", "chunks", "graph", "chunk_store")

HL_KEYWORD = "workflow automation integration"
QUERY = "How does n8n work with Airtable?"


class StackContract(ContractGuard):
    """Subclass in a ``Test*`` class and override the ``stack`` fixture.

    ``stack`` yields a fresh, empty stack, either **described** (a stack TOML path, a
    :class:`~hexrag.config.StackConfig`, or ``"memory"``: the contract opens it with
    :func:`hexrag.bootstrap.open`, the one place stores are opened, with the
    ``stack_embedder``, and closes it after the test) or as opened stores: a
    :class:`~hexrag.ports.stack.Stack`, an opened :class:`~hexrag.bootstrap.App`, or a dict
    with ``"entities"``, ``"relationships"``, ``"chunks"`` (VectorIndex instances of
    dimension :attr:`stack_dim` and ``cosine_threshold`` 0.2, with those namespaces),
    ``"graph"`` (GraphStore) and ``"chunk_store"`` (ChunkStore). ``stack_embedder`` defaults
    to the deterministic :class:`~hexrag.adapters.memory.HashingEmbedder`.
    """

    stack_dim: int = 64

    @pytest.fixture
    def stack(self) -> Any:
        """Override: yield a stack description or the opened stores (see the class)."""
        raise NotImplementedError("override the stack fixture")

    async def _opened(self, stack: Any, embedder: Embedder) -> tuple[dict[str, Any], Any]:
        """``(stores by name, close)`` of what the ``stack`` fixture gave."""
        from pathlib import Path

        from hexrag.config import StackConfig

        async def nothing() -> None:
            return None

        if isinstance(stack, str | Path | StackConfig):
            from hexrag import bootstrap

            app = await bootstrap.open(stack, embedder=embedder)
            return self._stores_of(app.stores), app.aclose
        return self._stores_of(stack), nothing

    @staticmethod
    def _stores_of(stack: Any) -> dict[str, Any]:
        if isinstance(stack, dict):
            return stack
        return {key: getattr(stack, key) for key in STACK_KEYS}

    @pytest.fixture
    def stack_embedder(self) -> Embedder:
        """The embedder whose vectors the test stores (override to use a real model)."""
        from hexrag.adapters.memory import HashingEmbedder

        return HashingEmbedder(dim=self.stack_dim)

    # ---- data ---------------------------------------------------------------------------

    async def _load_seed001(self, stack: dict[str, Any], embedder: Embedder) -> list[Chunk]:
        assert set(STACK_KEYS) <= set(stack), f"stack must provide {STACK_KEYS}"
        entities: VectorIndex = stack["entities"]
        relationships: VectorIndex = stack["relationships"]
        chunk_index: VectorIndex = stack["chunks"]
        graph: GraphStore = stack["graph"]
        chunk_store: ChunkStore = stack["chunk_store"]

        valid = [
            Chunk(
                id=corpus.SEED_001_CHUNK,
                content="n8n's Airtable node reads and writes Airtable records in workflows.",
                tokens=12,
                full_doc_id="doc-n8n",
                chunk_order_index=0,
                file_path="n8n-docs.md",
            ),
            Chunk(
                id="chunk-ops-10",
                content="Workflow automation: trigger n8n from Airtable webhooks.",
                tokens=9,
                full_doc_id="doc-n8n",
                chunk_order_index=1,
                file_path="n8n-docs.md",
            ),
        ]
        await chunk_store.upsert_chunks(valid)
        chunk_vecs = await embedder.embed([c.content for c in valid])
        await chunk_index.upsert(
            [
                VectorRecord(
                    id=c.id,
                    vector=chunk_vecs[i],
                    content=c.content,
                    full_doc_id=c.full_doc_id,
                    file_path=c.file_path,
                    source_id=c.id,
                )
                for i, c in enumerate(valid)
            ]
        )

        names = list(corpus.SEED_001_PAIR)
        # Entities name no chunks: every chunk of the answer must come from the relation.
        await graph.upsert_nodes(
            [Entity(name=n, entity_type="software", description=f"{n} tool") for n in names]
        )
        await graph.upsert_edges(corpus.seed001_relations())
        ent_vecs = await embedder.embed(names)
        await entities.upsert(
            [
                VectorRecord(id=entity_id(n), vector=ent_vecs[i], entity_name=n, content=n)
                for i, n in enumerate(names)
            ]
        )
        rel_vec = (await embedder.embed([HL_KEYWORD]))[0]
        await relationships.upsert(
            [
                VectorRecord(
                    id=relation_id(*names),
                    vector=rel_vec,
                    src_id=names[0],
                    tgt_id=names[1],
                    content=f"{HL_KEYWORD}\t{names[0]}\n{names[1]}\nintegration",
                    source_id="{" + corpus.SEED_001_CHUNK + "}",
                    file_path="n8n-docs.md",
                )
            ]
        )
        return valid

    async def _run(
        self, stack: dict[str, Any], embedder: Embedder, settings: EngineSettings
    ) -> dict[str, Any]:
        from hexrag.bootstrap import compose_engine

        engine = compose_engine(stack, embedder=embedder, settings=settings, store_cache=False)
        param = QueryParam(
            mode="hybrid", hl_keywords=[HL_KEYWORD], ll_keywords=[], enable_rerank=False
        )
        result = await engine.query_data(QUERY, param)
        assert isinstance(result, dict)
        return result

    # ---- tests --------------------------------------------------------------------------

    async def test_seed001_hybrid_chunk_lookup_returns_every_valid_chunk(
        self, stack: Any, stack_embedder: Embedder
    ) -> None:
        """Relation hit with ``{chunk-…}`` source_id -> the one carrying edge -> its chunks."""
        stores, close = await self._opened(stack, stack_embedder)
        try:
            valid = await self._load_seed001(stores, stack_embedder)
            result = await self._run(stores, stack_embedder, EngineSettings())
        finally:
            await close()
        assert result["status"] == "success", result
        got = [c["chunk_id"] for c in result["data"]["chunks"]]
        assert sorted(got) == sorted(c.id for c in valid), got
        assert all(c["content"] for c in result["data"]["chunks"])
        info = result["metadata"]["processing_info"]
        assert info["relations_resolved_by_chunk"] == 1, info
        assert info["missing_chunk_count"] == 0, info
        assert info["relations_unresolved"] == 0, info

    async def test_seed001_pair_lookup_shows_the_zero_chunk_failure(
        self, stack: Any, stack_embedder: Embedder
    ) -> None:
        """LightRAG's pair lookup picks the pair's first edge (``rel-an-00``), whose chunk does not
        exist: zero chunks, the failure seed 001 reports."""
        stores, close = await self._opened(stack, stack_embedder)
        try:
            await self._load_seed001(stores, stack_embedder)
            settings = EngineSettings(relation_lookup={"hybrid": "pair"})
            result = await self._run(stores, stack_embedder, settings)
        finally:
            await close()
        assert result["status"] == "success", result
        assert result["data"]["chunks"] == [], result["data"]["chunks"]
        info = result["metadata"]["processing_info"]
        assert info["relations_resolved_by_pair"] >= 1, info
        assert info["missing_chunk_count"] >= 1, info
        assert "chunk-an-00" in info["missing_chunk_sample"], info
