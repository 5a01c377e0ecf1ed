"""Deleting documents exactly (``Ingestor.delete_documents``,
:mod:`hexrag.core.ingest.deletion`) on the
in-memory / working-directory adapters.

Three documents share entities (Acme CRM, Mailchimp, Xero ...), chunks are small so every
entity is merged from many fragments and summarised by the scripted LLM from three on. After
deleting a document the stores equal those of a fresh stack that never saw it (same insertion
order for the rest), re-inserting the last document gives back the stores of the first insert,
and no query in any mode returns the deleted document's text, chunk ids or file path.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.adapters.workdir import empty_workdir_stack, load_workdir, save_workdir
from hexrag.bootstrap import compose_engine
from hexrag.core.errors import ConfigurationError
from hexrag.core.ingest.ingestion import Ingestor, IngestSettings
from hexrag.core.ingest.merging import MergeSettings
from hexrag.core.ingest.summary import SummaryLimits
from hexrag.core.model import QueryParam
from hexrag.devtools.scripted_kg import ScriptedKGLLM
from tests.integration.test_ingest_lightrag import _view_of

DIM = 32
NOW = 1_700_000_000
DOCS = [
    ("Acme Corp builds Acme CRM. Acme CRM syncs contacts with Mailchimp every night. "
     "Mailchimp sends the Newsletter. The Newsletter reaches Europe and Asia. "
     "Acme CRM also exports Invoices to Xero for Finance teams.", "p-crm"),
    ("Zapier connects Acme CRM to Slack. Slack notifies Sales when Mailchimp bounces. "
     "Sales reviews Invoices in Xero. Acme Corp hires Support in Europe.", "p-zap"),
    ("Ledger Pro imports Invoices from Xero. Ledger Pro reconciles Payments for Finance. "
     "Mailchimp bills Acme Corp monthly. Quarterly Reports go to Finance.", "p-ledger"),
]
MODES = ("local", "global", "hybrid", "mix", "naive")


def _ingestor(stack: Any, *, documents: Any = "stack") -> Ingestor:
    return Ingestor(
        entities=stack.entities, relationships=stack.relationships, chunks=stack.chunks,
        graph=stack.graph, chunk_store=stack.chunk_store, llm=ScriptedKGLLM(),
        embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(), clock=lambda: NOW,
        settings=IngestSettings(
            chunk_token_size=20, chunk_overlap_token_size=4,
            merge=MergeSettings(summary=SummaryLimits(force_llm_summary_on_merge=3)),
        ),
        documents=stack.documents if documents == "stack" else documents,
    )


def _stack_with(docs: list[tuple[str, str]]) -> tuple[Any, Ingestor, list[str]]:
    stack = empty_workdir_stack(DIM)
    ingestor = _ingestor(stack)

    async def run() -> list[str]:
        return [(await ingestor.ingest_text(t, metadata={"product_id": p, "source": f"{p}.txt"}))
                .doc_id for t, p in docs]

    return stack, ingestor, asyncio.run(run())


def _view(stack: Any) -> dict[str, Any]:
    view = asyncio.run(_view_of(stack))
    for vec in ("vec_entities", "vec_relationships", "vec_chunks"):
        view[vec] = dict(sorted(view[vec].items()))
    return view


def _docs_view(stack: Any) -> list[tuple[str, str, list[str]]]:
    docs = asyncio.run(stack.documents.list_docs())
    return [(d.id, d.status, d.chunks_list) for d in docs]


def test_deleting_a_document_leaves_what_the_others_would_have_built() -> None:
    stack, ingestor, ids = _stack_with(DOCS)
    before = _view(stack)
    fragments_before = asyncio.run(stack.documents.count_fragments())
    report = asyncio.run(ingestor.delete_documents([ids[1]]))
    assert report.deleted == [ids[1]] and report.not_found == []
    assert report.entities_deleted and report.entities_rebuilt and report.relations_deleted
    assert report.legacy == 0
    fresh, _, _ = _stack_with([DOCS[0], DOCS[2]])
    got, want = _view(stack), _view(fresh)
    for part in ("chunks", "nodes", "edges", "vec_entities", "vec_relationships", "vec_chunks"):
        assert got[part] == want[part], part
    assert got != before
    assert [d[0] for d in _docs_view(stack)] == [ids[0], ids[2]]
    assert asyncio.run(stack.documents.count_fragments()) == asyncio.run(
        fresh.documents.count_fragments()) < fragments_before
    # Some rebuilt entity really was re-summarised from the remaining fragments.
    assert any(d.startswith("Summary ") for (_, d, *_r) in got["nodes"].values())


def test_reinserting_the_last_document_gives_back_the_first_insert() -> None:
    stack, ingestor, ids = _stack_with(DOCS)
    before = _view(stack)
    asyncio.run(ingestor.delete_documents([ids[2]]))
    assert _view(stack) != before
    text, product = DOCS[2]
    again = asyncio.run(ingestor.ingest_text(
        text, metadata={"product_id": product, "source": f"{product}.txt"}))
    assert again.doc_id == ids[2] and not again.skipped
    assert _view(stack) == before


def test_batch_delete_and_unknown_ids() -> None:
    stack, ingestor, ids = _stack_with(DOCS)
    report = asyncio.run(ingestor.delete_documents([ids[0], "doc-missing", ids[2], ids[0]]))
    assert report.deleted == [ids[0], ids[2]] and report.not_found == ["doc-missing"]
    fresh, _, _ = _stack_with([DOCS[1]])
    assert _view(stack) == _view(fresh)
    everything = asyncio.run(ingestor.delete_documents([ids[1]]))
    assert everything.deleted == [ids[1]]
    empty = _view(stack)
    assert all(not empty[p] for p in empty), {p: len(v) for p, v in empty.items()}
    assert asyncio.run(stack.documents.count_fragments()) == 0
    assert asyncio.run(stack.documents.list_docs()) == []


def test_no_query_returns_a_deleted_document() -> None:
    stack, ingestor, ids = _stack_with(DOCS)
    chunk_ids = set(asyncio.run(stack.documents.get_docs([ids[1]]))[0].chunks_list)
    engine = compose_engine(stack.engine_stores(), embedder=HashingEmbedder(DIM))
    questions = ["Zapier Slack Sales", "Who notifies Sales?", "Acme CRM Mailchimp Xero",
                 "Support in Europe"]

    def leaked(data: dict[str, Any]) -> list[str]:
        d = {"chunks": [], "entities": [], "relationships": [], **data["data"]}
        bad = []
        for c in d["chunks"]:
            if (c["chunk_id"] in chunk_ids or "p-zap" in (c.get("file_path") or "")
                    or "Zapier connects" in c["content"]):
                bad.append(c["chunk_id"])
        for e in d["entities"] + d["relationships"]:
            if "p-zap" in (e.get("file_path") or ""):
                bad.append(str(e))
        for name in ("Zapier", "Slack"):
            if any(e.get("entity_name") == name for e in d["entities"]):
                bad.append(name)
        return bad

    async def ask_all() -> list[str]:
        found = []
        for q in questions:
            for mode in MODES:
                data = await engine.query_data(q, QueryParam(mode=mode, enable_rerank=False))
                found += leaked(data)
        return found

    assert asyncio.run(ask_all()), "the canary must see the document before it is deleted"
    asyncio.run(ingestor.delete_documents([ids[1]]))
    assert asyncio.run(ask_all()) == []


def test_deletion_survives_the_working_directory(tmp_path: Path) -> None:
    stack, ingestor, ids = _stack_with(DOCS)
    save_workdir(stack, tmp_path / "wd")
    loaded = load_workdir(tmp_path / "wd", embedder_dim=DIM)
    assert _docs_view(loaded) == _docs_view(stack)
    assert asyncio.run(loaded.documents.count_fragments()) == asyncio.run(
        stack.documents.count_fragments())
    asyncio.run(_ingestor(loaded).delete_documents([ids[0]]))
    asyncio.run(ingestor.delete_documents([ids[0]]))
    assert _view(loaded) == _view(stack)


def test_skips_a_processed_document_and_needs_a_document_store() -> None:
    stack, ingestor, _ = _stack_with(DOCS[:1])
    before = _view(stack)
    again = asyncio.run(ingestor.ingest_text(
        DOCS[0][0], metadata={"product_id": "p-crm", "source": "p-crm.txt"}))
    assert again.skipped and _view(stack) == before
    bare = _ingestor(stack, documents=None)
    with pytest.raises(ConfigurationError, match="document store"):
        asyncio.run(bare.delete_documents(["doc-x"]))


def test_a_failed_document_is_recorded_and_writes_nothing() -> None:
    stack, ingestor, _ = _stack_with(DOCS[:1])
    before = _view(stack)

    class Broken(ScriptedKGLLM):
        async def complete(self, prompt: str, **kw: Any) -> str:
            raise RuntimeError("model server down")

    broken = _ingestor(stack)
    broken._llm = Broken()
    with pytest.raises(RuntimeError):
        asyncio.run(broken.ingest_text(DOCS[1][0]))
    assert _view(stack) == before
    (failed,) = [d for d in asyncio.run(stack.documents.list_docs()) if d.status == "failed"]
    assert "model server down" in (failed.error_msg or "")
    # it can be retried: a failed document is not "already processed"
    assert not asyncio.run(ingestor.ingest_text(DOCS[1][0])).skipped


def test_delete_llm_cache_drops_only_the_deleted_chunks_entries() -> None:
    stack = empty_workdir_stack(DIM)
    ingestor = Ingestor(
        entities=stack.entities, relationships=stack.relationships, chunks=stack.chunks,
        graph=stack.graph, chunk_store=stack.chunk_store, llm=ScriptedKGLLM(),
        embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(), clock=lambda: NOW,
        settings=IngestSettings(chunk_token_size=20, chunk_overlap_token_size=4),
        documents=stack.documents, cache=stack.cache,
    )

    async def run() -> list[str]:
        return [(await ingestor.ingest_text(t, metadata={"product_id": p})).doc_id
                for t, p in DOCS]

    ids = asyncio.run(run())
    before = dict(stack.cache.items())
    doomed_chunks = asyncio.run(stack.documents.get_docs([ids[0]]))[0].chunks_list
    doomed = {k for k, v in before.items() if v.get("chunk_id") in doomed_chunks}
    assert doomed and len(doomed) < len(before)
    kept = asyncio.run(ingestor.delete_documents([ids[1]]))  # without the flag: all kept
    assert kept.llm_cache_deleted == 0 and dict(stack.cache.items()) == before
    report = asyncio.run(ingestor.delete_documents([ids[0]], delete_llm_cache=True))
    assert report.llm_cache_deleted == len(doomed)
    assert set(dict(stack.cache.items())) == set(before) - doomed


def test_llm_calls_in_flight_are_bounded_by_max_async() -> None:
    class Gauge(ScriptedKGLLM):
        def __init__(self) -> None:
            super().__init__()
            self.now = self.peak = 0

        async def complete(self, prompt: str, **kw: Any) -> str:
            self.now += 1
            self.peak = max(self.peak, self.now)
            await asyncio.sleep(0.002)
            self.now -= 1
            return await super().complete(prompt, **kw)

    for limit in (1, 3):
        stack = empty_workdir_stack(DIM)
        llm = Gauge()
        ingestor = Ingestor(
            entities=stack.entities, relationships=stack.relationships, chunks=stack.chunks,
            graph=stack.graph, chunk_store=stack.chunk_store, llm=llm,
            embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(), clock=lambda: NOW,
            settings=IngestSettings(chunk_token_size=12, chunk_overlap_token_size=2,
                                    max_async=limit),
        )
        report = asyncio.run(ingestor.ingest_text(DOCS[0][0]))
        assert len(report.chunk_ids) > limit and llm.peak == limit


def test_resume_ingests_the_unfinished_documents_as_a_clean_run_would() -> None:
    stack, ingestor, _ = _stack_with(DOCS[:1])

    class Broken(ScriptedKGLLM):
        async def complete(self, prompt: str, **kw: Any) -> str:
            raise RuntimeError("model server down")

    broken = _ingestor(stack)
    broken._llm = Broken()
    for text, product in DOCS[1:]:
        with pytest.raises(RuntimeError):
            asyncio.run(broken.ingest_text(text, metadata={"product_id": product,
                                                           "source": f"{product}.txt"}))
    unfinished = asyncio.run(ingestor.unfinished())
    assert [r.status for r in unfinished] == ["failed", "failed"]
    assert [r.extra["content"] for r in unfinished] == [t for t, _ in DOCS[1:]]
    results = asyncio.run(ingestor.resume())
    assert all(not isinstance(r, BaseException) and not r.skipped for r in results)
    assert asyncio.run(ingestor.unfinished()) == []
    clean, _, _ = _stack_with(DOCS)
    got, want = _view(stack), _view(clean)
    for part in ("chunks", "nodes", "edges", "vec_entities", "vec_relationships", "vec_chunks"):
        assert got[part] == want[part], part
    assert all("content" not in d.extra for d in asyncio.run(stack.documents.list_docs()))


def test_the_answer_cache_never_serves_an_answer_from_before_an_ingestion_or_deletion() -> None:
    from hexrag.adapters.memory import (
        MemoryCache,
        MemoryChunkStore,
        MemoryDocumentStore,
        MemoryGraphStore,
        MemoryVectorIndex,
    )
    from hexrag.core.versioning import CorpusVersion, track_writes

    class Answering(ScriptedKGLLM):
        async def complete(self, prompt: str, **kw: Any) -> str:
            if "---Context---" in prompt or "Document Chunks" in prompt:
                return f"answer from {prompt.count('chunk_id') + prompt.count('reference_id')}"
            return await super().complete(prompt, **kw)

    cache = MemoryCache()
    version = CorpusVersion(cache)
    stores = track_writes(version, **{ns: MemoryVectorIndex(ns, DIM) for ns in
                                      ("entities", "relationships", "chunks")},
                          graph=MemoryGraphStore(), chunk_store=MemoryChunkStore())
    llm = Answering()
    engine = compose_engine(stores, embedder=HashingEmbedder(DIM), llm=llm, cache=cache,
                            corpus_version=version)
    ingestor = Ingestor(**stores, llm=ScriptedKGLLM(), embedder=HashingEmbedder(DIM),
                        tokenizer=default_tokenizer(), clock=lambda: NOW,
                        settings=IngestSettings(chunk_token_size=20, chunk_overlap_token_size=4),
                        documents=MemoryDocumentStore())
    param = QueryParam(mode="naive", enable_rerank=False, hl_keywords=["Xero"],
                       ll_keywords=["Xero"])

    async def ask() -> Any:
        return await engine.query_result("Who uses Xero?", param)

    first_id = asyncio.run(ingestor.ingest_text(DOCS[0][0])).doc_id
    a1 = asyncio.run(ask())
    assert not a1.cache_hit and asyncio.run(ask()).cache_hit
    asyncio.run(ingestor.ingest_text(DOCS[2][0]))
    a2 = asyncio.run(ask())
    assert not a2.cache_hit
    asyncio.run(ingestor.delete_documents([first_id]))
    a3 = asyncio.run(ask())
    assert not a3.cache_hit and a3.content != a2.content
