"""Every section travels: the declared list of sections, copies that keep every section bit
for bit (migrate, export/import, a working directory written and read back), refusals
before writing, digests, tie-aware hit comparison, verification that fails damaged copies."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hexrag.adapters.memory import HashingEmbedder, MemoryCache
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.adapters.workdir import empty_workdir_stack, load_workdir, save_workdir
from hexrag.bootstrap import compose_engine
from hexrag.core.ingest.ingestion import Ingestor, IngestSettings
from hexrag.core.model import VectorHit, VectorRecord
from hexrag.devtools.scripted_kg import ScriptedKGLLM
from hexrag.ports.cache import KV_NAMESPACES
from hexrag.ports.scan import scan_all
from hexrag.transfer import StackStores, export_stack, import_archive
from hexrag.transfer.compare import compare_hits
from hexrag.transfer.digests import compare_digests, stack_digests
from hexrag.transfer.migrate import migrate_stack, sample_queries, verify_migration
from hexrag.transfer.sections import (
    FIELD_SECTIONS,
    NOT_SECTIONS,
    SECTIONS,
    SectionError,
    held_sections,
)

DIM = 32
DOCS = [
    ("Acme Corp builds Acme CRM. Acme CRM syncs contacts with Mailchimp every night. "
     "Mailchimp sends the Newsletter. The Newsletter reaches Europe and Asia weekly", "p-crm"),
    ("Zapier connects Acme CRM to Slack. Slack notifies Sales when Mailchimp bounces. "
     "Sales reviews Invoices in Xero. Acme Corp hires Support in Europe.", "p-zap"),
]


def test_every_stack_field_has_its_declared_sections() -> None:
    """A store added to the stack value without a section in the transfer's declared list
    fails here (and so cannot be forgotten by migrate/export/import/digests)."""
    fields = {f.name for f in dataclasses.fields(StackStores)} - NOT_SECTIONS
    assert fields == set(FIELD_SECTIONS), (
        "StackStores fields without declared sections (hexrag.transfer.sections."
        f"FIELD_SECTIONS): {sorted(fields - set(FIELD_SECTIONS))}"
    )
    declared = [s for group in FIELD_SECTIONS.values() for s in group]
    assert sorted(declared) == sorted(SECTIONS) and len(set(SECTIONS)) == len(SECTIONS)
    assert set(KV_NAMESPACES) <= set(SECTIONS)


async def _full_stack() -> Any:
    """A working-directory stack filled by hexrag's ingestion: every section holds records
    (vectors, graph, chunks, the extraction cache, status rows, fragments, the KV
    namespaces)."""
    stack = empty_workdir_stack(DIM)
    ingestor = Ingestor(
        entities=stack.entities, relationships=stack.relationships, chunks=stack.chunks,
        graph=stack.graph, chunk_store=stack.chunk_store, llm=ScriptedKGLLM(),
        embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(), clock=lambda: 1_700_000_000,
        settings=IngestSettings(chunk_token_size=20, chunk_overlap_token_size=4),
        documents=stack.documents, cache=stack.cache, kv=stack.kv,
    )
    for text, product in DOCS:
        await ingestor.ingest_text(text, metadata={"product_id": product})
    # vectors that normalising would move: they must travel as stored, bit for bit
    page = await stack.entities.scan_records(None, limit=3)
    await stack.entities.upsert([replace(r, vector=np.asarray(r.vector) * 3.7)
                                 for r in page.items])
    return stack


def _stores(stack: Any) -> StackStores:
    return StackStores(**stack.stack_stores(), embedding_model="hexrag-hashing")


async def _empty_full() -> StackStores:
    return _stores(empty_workdir_stack(DIM))


async def test_the_full_stack_holds_every_section() -> None:
    stores = _stores(await _full_stack())
    digests = await stack_digests(stores)
    assert set(digests) == set(SECTIONS)
    empty = [name for name, d in digests.items() if not d["count"]]
    assert not empty, f"the test stack must hold records in every section: {empty}"


async def test_migrate_copies_every_section_bit_for_bit(tmp_path: Path) -> None:
    source = _stores(await _full_stack())
    target = await _empty_full()
    result = await migrate_stack(source, target, state_path=tmp_path / "s.json", page_size=3)
    assert set(result.copied) == set(SECTIONS)
    assert compare_digests(await stack_digests(source), await stack_digests(target)) == []


async def test_export_import_and_a_saved_directory_keep_every_section(tmp_path: Path) -> None:
    stack = await _full_stack()
    source = _stores(stack)
    want = await stack_digests(source)
    manifest = await export_stack(source, tmp_path / "archive", page_size=4)
    assert set(manifest["sections"]) == set(SECTIONS)
    copy = empty_workdir_stack(DIM)
    await import_archive(tmp_path / "archive", _stores(copy), batch=5)
    assert compare_digests(want, await stack_digests(_stores(copy))) == []
    save_workdir(copy, tmp_path / "wd")
    again = load_workdir(tmp_path / "wd")
    assert compare_digests(want, await stack_digests(_stores(again))) == []
    # the archive's vectors are the stored ones (not re-normalised)
    page = await stack.entities.scan_records(None, limit=1000)
    npy = np.load(tmp_path / "archive" / "entities.npy")
    for i, rec in enumerate(page.items):
        assert np.array_equal(npy[i].view(np.uint32),
                              np.asarray(rec.vector, dtype=np.float32).view(np.uint32))


async def test_a_section_the_target_cannot_hold_is_refused_before_writing(
    tmp_path: Path,
) -> None:
    source = _stores(await _full_stack())
    for strip in ("documents", "kv", "cache"):
        target = await _empty_full()
        if strip == "kv":
            target.kv = {ns: s for ns, s in target.kv.items() if ns != "entity_chunks"}
            missing = "entity_chunks"
        else:
            setattr(target, strip, None)
            missing = "doc_status" if strip == "documents" else "llm_cache"
        with pytest.raises(SectionError, match=missing):
            await migrate_stack(source, target, state_path=tmp_path / f"{strip}.json")
        assert not [k for k, v in (await target.counts()).items() if v]  # nothing written
    await export_stack(source, tmp_path / "archive")
    target = await _empty_full()
    target.documents = None
    with pytest.raises(SectionError, match=r"fragments|doc_status"):
        await import_archive(tmp_path / "archive", target)
    assert await target.entities.count() == 0
    # a section that exists but is empty on the source is not an error
    empty_source = await _empty_full()
    await migrate_stack(empty_source, target, state_path=tmp_path / "empty.json")


def _hit(rid: str, score: float) -> VectorHit:
    return VectorHit(record=VectorRecord(id=rid), score=score)


def test_compare_hits_is_tie_aware() -> None:
    a = [_hit("x", 0.9), _hit("y", 0.8), _hit("z", 0.8), _hit("w", 0.5)]
    assert compare_hits(a, list(a), 10)[0] == "same"
    swapped = [a[0], a[2], a[1], a[3]]
    assert compare_hits(a, swapped, 10)[0] == "ties"
    other = [a[0], a[1], _hit("q", 0.8), a[3]]
    assert compare_hits(a, other, 10)[0] == "differ"
    assert compare_hits(a, a[:3], 10)[0] == "differ"
    moved = [a[0], _hit("y", 0.81), a[2], a[3]]
    assert compare_hits(a, moved, 10)[0] == "differ"
    # a tie cut by top_k may keep other members
    cut_a = [_hit("x", 0.9), _hit("y", 0.8)]
    cut_b = [_hit("x", 0.9), _hit("z", 0.8)]
    assert compare_hits(cut_a, cut_b, 2)[0] == "ties"
    assert compare_hits(cut_a, cut_b, 3)[0] == "differ"


async def _verified(tmp_path: Path) -> tuple[Any, Any, StackStores, StackStores, Any, Any]:
    stack = await _full_stack()
    source = _stores(stack)
    copy = empty_workdir_stack(DIM)
    target = _stores(copy)
    await migrate_stack(source, target, state_path=tmp_path / "s.json")
    embedder = HashingEmbedder(DIM)
    src = compose_engine(source, embedder=embedder, store_cache=False)
    dst = compose_engine(target, embedder=embedder, store_cache=False)
    return stack, copy, source, target, src, dst


async def test_an_exact_copy_passes_and_every_damage_fails(tmp_path: Path) -> None:
    stack, copy, source, target, src, dst = await _verified(tmp_path)
    queries = await sample_queries(source, 4)
    report = await verify_migration(source, target, src, dst, queries=queries)
    assert report["ok"], report["mismatches"]
    assert set(report["digests"]) == set(SECTIONS)
    assert report["queries"] > 0

    async def fails(expect: str) -> None:
        bad = await verify_migration(source, target, src, dst, queries=queries)
        assert not bad["ok"]
        assert any(m.startswith(expect) for m in bad["mismatches"]), bad["mismatches"]

    # one vector row missing
    rec = (await copy.relationships.scan_records(None, limit=1)).items[0]
    await copy.relationships.delete([rec.id])
    await fails("relationships: ")
    await copy.relationships.upsert([rec])
    assert (await verify_migration(source, target, src, dst, queries=queries))["ok"]
    # one vector moved by one unit in the last place
    vec = np.asarray(rec.vector, dtype=np.float32).copy()
    vec[0] = np.nextafter(vec[0], np.float32(2))
    await copy.relationships.upsert([replace(rec, vector=vec)])
    await fails("relationships: same count")
    await copy.relationships.upsert([rec])
    # one chunk text changed
    chunk = (await copy.chunk_store.scan_chunks(None, limit=1)).items[0]
    await copy.chunk_store.upsert_chunks([replace(chunk, content=chunk.content + " changed")])
    await fails("text_chunks: same count")
    await copy.chunk_store.upsert_chunks([chunk])
    # one fragment missing
    frag = (await copy.documents.scan_fragments(None, limit=1)).items[0]
    await copy.documents.delete_fragments_of_chunks([frag.chunk_id])
    await fails("fragments: ")
    await copy.documents.add_fragments(
        await stack.documents.fragments_of_chunks([frag.chunk_id]))
    # one key-value record changed
    key, value = (await copy.kv["full_docs"].scan_entries(None, limit=1)).items[0]
    await copy.kv["full_docs"].set_many({key: {**value, "content": "other"}})
    await fails("full_docs: same count")
    await copy.kv["full_docs"].set_many({key: value})
    assert (await verify_migration(source, target, src, dst, queries=queries))["ok"]


async def test_held_sections_follow_the_stores() -> None:
    stores = await _empty_full()
    assert held_sections(stores) == list(SECTIONS)
    stores.cache = None
    stores.documents = None
    stores.kv = {"full_docs": MemoryCache("full_docs")}
    assert held_sections(stores) == [
        "entities", "relationships", "chunks", "nodes", "edges", "text_chunks", "full_docs"]


async def test_digests_do_not_depend_on_order() -> None:
    a = MemoryCache("full_docs", {"k1": {"v": 1}, "k2": {"v": 2}})
    b = MemoryCache("full_docs", {"k2": {"v": 2}, "k1": {"v": 1}})
    sa = await _empty_full()
    sb = await _empty_full()
    sa.kv, sb.kv = {"full_docs": a}, {"full_docs": b}
    da = await stack_digests(sa, ["full_docs"])
    db = await stack_digests(sb, ["full_docs"])
    assert da == db and da["full_docs"]["count"] == 2
    await b.set_many({"k3": {"v": 3}})
    assert compare_digests(da, await stack_digests(sb, ["full_docs"])) == [
        "full_docs: 2 records vs 3"]
    items: list[Any] = []
    async for page in scan_all(b.scan_entries, limit=1):
        items += page.items
    assert len(items) == 3


def test_compare_hits_leaves_zero_vector_hits_out() -> None:
    """NanoVectorDB scores a zero vector NaN and ranks it first; PostgreSQL leaves it out."""
    nan = float("nan")
    nano = [_hit("zero", nan), _hit("x", 0.9), _hit("y", 0.8)]
    pg = [_hit("x", 0.9), _hit("y", 0.8), _hit("z", 0.7)]
    assert compare_hits(nano, pg, 3)[0] == "ties"
    assert compare_hits(nano, [_hit("x", 0.9), _hit("q", 0.8), _hit("z", 0.7)], 3)[0] in (
        "ties", "differ")
    assert compare_hits(nano, [_hit("q", 0.9), _hit("y", 0.8), _hit("z", 0.7)], 3)[0] == "differ"
