"""The embed front door (:mod:`hexrag.embed`): the README example runs as printed, ids and
contents are LightRAG's, scope metadata reaches the vectors, writes bump the corpus version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hexrag import Chunk, Entity, QueryParam, QueryScope
from hexrag.core.errors import ConfigurationError
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.embed import build_engine, relation

REPO = Path(__file__).resolve().parents[2]


def _readme_example(tag: str = "embed-example") -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(rf"<!-- {tag}[^>]*-->\n```python\n(.*?)```", text, re.S)
    assert m, f"the {tag} is missing from the README"
    return m.group(1)


def test_the_readme_example_is_short_and_runs() -> None:
    code = _readme_example()
    assert len([line for line in code.splitlines() if line.strip()]) <= 15
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "'status': 'success'" in out and "Acme CRM syncs contacts" in out, out[-2000:]


def test_the_readme_unit_test_example_runs() -> None:
    result = subprocess.run([sys.executable, "-c", _readme_example("unit-test-example")],
                            capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def _corpus() -> dict[str, list]:
    return {
        "chunks": [
            Chunk(id="c1", content="Acme CRM syncs contacts with Mailchimp nightly.",
                  metadata={"product_id": "p-crm", "category_id": "crm"}),
            Chunk(id="c2", content="Acme ERP syncs invoices with Mailchimp weekly.",
                  metadata={"product_id": "p-erp", "category_id": "erp"}),
        ],
        "entities": [
            Entity(name="Acme CRM", description="A CRM.", source_id="c1"),
            Entity(name="Acme ERP", description="An ERP.", source_id="c2"),
            Entity(name="Mailchimp", description="Email marketing.", source_id="c1<SEP>c2"),
        ],
        "relations": [
            relation("Acme CRM", "Mailchimp", description="syncs contacts",
                     keywords="sync mailchimp", source_id="c1"),
            relation("Acme ERP", "Mailchimp", description="syncs invoices",
                     keywords="sync mailchimp", source_id="c2"),
        ],
    }


async def test_ids_contents_and_scope_metadata_are_lightrags() -> None:
    engine = await build_engine(**_corpus(), embedder="hashing:64")
    s = engine.stores
    (ent,) = await s.entities.get([entity_id("Acme CRM")])
    assert ent is not None and ent.content == "Acme CRM\nA CRM."
    assert ent.metadata == {"product_id": "p-crm", "category_id": "crm"}
    (shared,) = await s.entities.get([entity_id("Mailchimp")])
    assert shared is not None and shared.metadata == {}  # sources disagree: the guard decides
    (rel,) = await s.relationships.get([relation_id("Acme CRM", "Mailchimp")])
    assert rel is not None and rel.content == "sync mailchimp\tAcme CRM\nMailchimp\nsyncs contacts"
    (chunk,) = await s.chunks.get(["c2"])
    assert chunk is not None and chunk.metadata == {"product_id": "p-erp", "category_id": "erp"}


async def test_a_scoped_query_sees_only_its_product() -> None:
    engine = await build_engine(**_corpus(), embedder="hashing:64")
    param = QueryParam(mode="mix", hl_keywords=["sync mailchimp"], ll_keywords=["Mailchimp"],
                       scope=QueryScope(product_id="p-crm"))
    data = await engine.query_data("How is Mailchimp synced?", param)
    chunks = [c["chunk_id"] for c in data["data"]["chunks"]]
    assert chunks == ["c1"], data["data"]
    everything = await engine.query_data("How is Mailchimp synced?",
                                         QueryParam(mode="mix", hl_keywords=["sync mailchimp"],
                                                    ll_keywords=["Mailchimp"]))
    assert {c["chunk_id"] for c in everything["data"]["chunks"]} == {"c1", "c2"}


async def test_writes_are_tracked_and_duplicate_relation_ids_refused() -> None:
    engine = await build_engine(**_corpus(), embedder="hashing:64")
    assert engine.corpus_version is not None
    before = await engine.corpus_version()
    await engine.stores.chunk_store.upsert_chunks([Chunk(id="c3", content="new")])
    assert await engine.corpus_version() != before
    twice = _corpus()
    twice["relations"].append(relation("Mailchimp", "Acme CRM", description="again"))
    with pytest.raises(ConfigurationError, match="give the second its own id"):
        await build_engine(**twice, embedder="hashing:64")


async def test_the_readme_migrate_example_copies_a_working_directory(tmp_path: Path) -> None:
    """``./rag_storage`` written by hexrag in LightRAG's format, then the README's Python
    migration copies it whole into ``./rag_copy``."""
    from hexrag import open_stack
    from hexrag.adapters.workdir import load_workdir

    opened = await open_stack(tmp_path / "rag_storage", create_dim=64)
    roles = ("entities", "relationships", "chunks", "graph", "chunk_store")
    await build_engine(**_corpus(), embedder="hashing:64",
                       stores={r: getattr(opened.stores, r) for r in roles})
    await opened.commit()
    await opened.aclose()
    result = subprocess.run([sys.executable, "-c", _readme_example("migrate-example")],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    a, b = load_workdir(tmp_path / "rag_storage"), load_workdir(tmp_path / "rag_copy")
    for r in ("entities", "relationships", "chunks"):
        assert await getattr(a, r).count() == await getattr(b, r).count() > 0
    assert list(b.graph.iter_edges()) == list(a.graph.iter_edges())
