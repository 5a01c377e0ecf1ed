"""LightRAG's document-side stores and deletion, with LightRAG 1.5.7 as the oracle.

The same documents (sent with file names) and the same scripted LLM on both sides, with a
frozen clock:

* hexrag's ingestion writes every ``kv_store_<namespace>.json`` (``full_docs``,
  ``full_entities``, ``full_relations``, ``entity_chunks``, ``relation_chunks``) equal to
  LightRAG's, and the same graph and vectors, also with small source-id limits (``KEEP`` and
  ``FIFO``) and a file-path limit, where the tracking rows' full chunk lists matter;
* LightRAG's own ``adelete_by_doc_id`` deletes from a hexrag-built directory and leaves what it
  leaves when deleting from its own build;
* hexrag deletes from a LightRAG-built directory (no fragments) exactly as LightRAG's
  ``adelete_by_doc_id`` does: graph, descriptions, source ids, vectors and key-value stores
  agree; without the recovery rows it derives them from the extraction cache; without both
  it refuses and changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.memory import HashingEmbedder
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.adapters.workdir import empty_workdir_stack, load_workdir, save_workdir
from hexrag.adapters.workdir.kv import kv_file_name
from hexrag.core.errors import ConfigurationError
from hexrag.core.ingest.ingestion import Ingestor, IngestSettings
from hexrag.core.ingest.merging import MergeSettings
from hexrag.core.ingest.summary import SummaryLimits
from hexrag.devtools.lightrag_data import (
    _quiet_lightrag,
    lightrag_embedding_func,
    register_offline_tiktoken,
    require_lightrag,
)
from hexrag.devtools.scripted_kg import ScriptedKGLLM, kg_reply
from hexrag.ports.cache import KV_NAMESPACES
from tests.integration.test_ingest_lightrag import _view_of

require_lightrag()

NOW = 1_700_000_000
DIM = 32
DOCS = [
    ("Acme Corp builds Acme CRM. Acme CRM syncs contacts with Mailchimp every night. "
     "Mailchimp sends the Newsletter. The Newsletter reaches Europe and Asia", "acme.txt"),
    ("Zapier connects Acme CRM to Slack. Slack notifies Sales when Mailchimp bounces. "
     "Sales reviews Invoices in Xero. Acme Corp hires Support in Europe", "zapier.txt"),
    ("Acme CRM exports Invoices to Xero for Finance teams. Finance in Europe trusts Xero. "
     "Mailchimp and Slack both reach Sales in Asia", "finance.txt"),
    ("Support in Asia answers Acme CRM tickets. Slack relays Mailchimp alerts to Support. "
     "Acme Corp plans Europe growth with Zapier", "support.txt"),
]
#: LightRAG constructor arguments -> hexrag MergeSettings fields
LIMITS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "keep": {"max_source_ids_per_entity": 2, "max_source_ids_per_relation": 1,
             "source_ids_limit_method": "KEEP", "max_file_paths": 1},
    "fifo": {"max_source_ids_per_entity": 2, "max_source_ids_per_relation": 1,
             "source_ids_limit_method": "FIFO", "max_file_paths": 1},
}
VIEW_PARTS = ("chunks", "nodes", "edges", "vec_entities", "vec_relationships", "vec_chunks")


def _merge_settings(limits: dict[str, Any]) -> MergeSettings:
    names = {"max_source_ids_per_entity": "max_source_ids",
             "max_source_ids_per_relation": "max_source_ids_relation",
             "source_ids_limit_method": "limit_method", "max_file_paths": "max_file_paths"}
    return MergeSettings(summary=SummaryLimits(force_llm_summary_on_merge=3),
                         **{names[k]: v for k, v in limits.items()})


def _lightrag(root: Path, workspace: str, monkeypatch: pytest.MonkeyPatch, *,
              limits: dict[str, Any], insert: list[tuple[str, str]] | None = None,
              delete: list[str] | None = None, force_summary: int = 3) -> Path:
    """Run LightRAG on ``root/workspace``: insert ``insert`` (text, file name), then
    ``adelete_by_doc_id`` each of ``delete`` (which must succeed)."""
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()

    async def llm(prompt: str, system_prompt: str | None = None,
                  history_messages: list[dict[str, Any]] | None = None, **_: Any) -> str:
        return kg_reply(prompt, system_prompt, history_messages or [])

    monkeypatch.setattr(time, "time", lambda: float(NOW))

    async def run() -> None:
        rag = LightRAG(
            working_dir=str(root), workspace=workspace,
            embedding_func=lightrag_embedding_func(HashingEmbedder(DIM)),
            llm_model_func=llm, tokenizer=TiktokenTokenizer("gpt-4o-mini"),
            chunk_token_size=20, chunk_overlap_token_size=4,
            force_llm_summary_on_merge=force_summary,
            enable_llm_cache=False, enable_llm_cache_for_entity_extract=True, **limits,
        )
        await rag.initialize_storages()
        try:
            for text, name in insert or []:
                await rag.ainsert(text, file_paths=[name])
            for doc_id in delete or []:
                result = await rag.adelete_by_doc_id(doc_id)
                assert result.status == "success", result
        finally:
            await rag.finalize_storages()

    try:
        asyncio.run(run())
    finally:
        monkeypatch.undo()
    return root / workspace


def _ingestor(stack: Any, kv: dict[str, Any], limits: dict[str, Any]) -> Ingestor:
    return Ingestor(
        entities=stack.entities, relationships=stack.relationships, chunks=stack.chunks,
        graph=stack.graph, chunk_store=stack.chunk_store, llm=ScriptedKGLLM(),
        embedder=HashingEmbedder(DIM), tokenizer=default_tokenizer(), clock=lambda: NOW,
        settings=IngestSettings(
            chunk_token_size=20, chunk_overlap_token_size=4, merge=_merge_settings(limits),
            llm_identity={"role": "extract", "binding": None, "model": "gpt-4o-mini",
                          "host": None},
        ),
        documents=stack.documents, cache=stack.cache, kv=kv,
    )


def _hexrag_build(out: Path, limits: dict[str, Any],
                  docs: list[tuple[str, str]] = DOCS) -> tuple[Path, list[str]]:
    """hexrag ingests ``docs`` into a working-directory stack (its ``kv`` sections:
    LightRAG's document-side stores) written at ``out``."""
    stack = empty_workdir_stack(DIM)
    ingestor = _ingestor(stack, stack.kv, limits)

    async def run() -> list[str]:
        return [(await ingestor.ingest_text(t, file_path=name)).doc_id for t, name in docs]

    ids = asyncio.run(run())
    save_workdir(stack, out)
    return out, ids


def _copy(src: Path, root: Path) -> tuple[Path, str]:
    workspace = "cp" + uuid.uuid4().hex[:8]
    shutil.copytree(src, root / workspace)
    return root, workspace


def _kv_files(path: Path) -> dict[str, Any]:
    out = {}
    for ns in KV_NAMESPACES:
        f = path / kv_file_name(ns)
        out[ns] = json.loads(f.read_text(encoding="utf-8")) if f.exists() else {}
    return out


def _view(path: Path) -> dict[str, Any]:
    return asyncio.run(_view_of(load_workdir(path, embedder_dim=DIM)))


def _assert_same(want_dir: Path, got_dir: Path, *, kv: bool = True) -> None:
    want, got = _view(want_dir), _view(got_dir)
    for part in VIEW_PARTS:
        assert got[part] == want[part], part
    if kv:
        want_kv, got_kv = _kv_files(want_dir), _kv_files(got_dir)
        for ns in KV_NAMESPACES:
            assert got_kv[ns] == want_kv[ns], ns


def _lr_build(tmp: Path, monkeypatch: pytest.MonkeyPatch, limits: dict[str, Any]) -> Path:
    return _lightrag(tmp / "lr", "lr" + uuid.uuid4().hex[:8], monkeypatch, limits=limits,
                     insert=DOCS)


@pytest.mark.parametrize("limits", list(LIMITS), ids=list(LIMITS))
def test_ingestion_writes_lightrags_kv_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: str
) -> None:
    lr_dir = _lr_build(tmp_path, monkeypatch, LIMITS[limits])
    hx_dir, ids = _hexrag_build(tmp_path / "hx" / uuid.uuid4().hex[:8], LIMITS[limits])
    lr_kv = _kv_files(lr_dir)
    assert sorted(lr_kv["full_docs"]) == sorted(ids), "document ids differ from LightRAG's"
    assert len(lr_kv["entity_chunks"]) > 8 and len(lr_kv["relation_chunks"]) > 8
    if limits != "defaults":  # the limits bite: some record keeps fewer chunks than it has
        nodes = _view(lr_dir)["nodes"]
        assert any(len(row["chunk_ids"]) > len(nodes[name][2].split("<SEP>"))
                   for name, row in lr_kv["entity_chunks"].items() if name in nodes)
    _assert_same(lr_dir, hx_dir)


def test_duplicates_get_lightrags_status_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file name sent again (other text) and a text sent again under another file name are
    skipped with LightRAG's failed ``dup-...`` rows (``filename`` / ``content_hash``)."""
    sends = [DOCS[0], ("other text, same file name", DOCS[0][1]), (DOCS[0][0], "copy.txt")]
    lr_dir = _lightrag(tmp_path / "lr", "lr" + uuid.uuid4().hex[:8], monkeypatch, limits={},
                       insert=sends)
    stack = empty_workdir_stack(DIM)
    ingestor = _ingestor(stack, stack.kv, {})

    async def run() -> list[Any]:
        return [await ingestor.ingest_text(t, file_path=name) for t, name in sends]

    reports = asyncio.run(run())
    assert [r.skipped for r in reports] == [False, True, True]
    assert {r.doc_id for r in reports} == {reports[0].doc_id}
    out = tmp_path / "hx"
    save_workdir(stack, out)

    def dups(path: Path) -> list[dict[str, Any]]:
        rows = json.loads((path / "kv_store_doc_status.json").read_text(encoding="utf-8"))
        found = []
        for key, row in rows.items():
            if key.startswith("dup-"):
                meta = {k: v for k, v in row["metadata"].items() if k != "original_track_id"}
                fields = {k: row[k] for k in ("status", "content_summary", "content_length",
                                              "chunks_count", "chunks_list", "file_path")}
                # LightRAG formats the original's status as it holds it in memory: the
                # enum (``DocStatus.PROCESSED``) in the process that processed it, the stored
                # value (``processed``) after a restart; hexrag writes the stored value
                error = row["error_msg"].replace("DocStatus.PROCESSED", "processed")
                found.append({**fields, "error_msg": error, "metadata": meta})
        return sorted(found, key=lambda r: r["content_summary"])

    want = dups(lr_dir)
    assert [r["metadata"]["duplicate_kind"] for r in want] == ["content_hash", "filename"]
    assert dups(out) == want
    assert _kv_files(out)["full_docs"].keys() == _kv_files(lr_dir)["full_docs"].keys()


@pytest.mark.parametrize("limits", ["defaults", "keep"])
def test_lightrag_deletes_from_a_hexrag_built_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: str
) -> None:
    lr_dir = _lr_build(tmp_path, monkeypatch, LIMITS[limits])
    hx_dir, ids = _hexrag_build(tmp_path / "hx" / uuid.uuid4().hex[:8], LIMITS[limits])
    root, ws = _copy(lr_dir, tmp_path / "lr_del")
    want = _lightrag(root, ws, monkeypatch, limits=LIMITS[limits], delete=[ids[1]])
    root, ws = _copy(hx_dir, tmp_path / "hx_del")
    got = _lightrag(root, ws, monkeypatch, limits=LIMITS[limits], delete=[ids[1]])
    assert ids[1] not in _kv_files(got)["full_docs"]
    _assert_same(want, got)


def _hexrag_delete(path: Path, doc_ids: list[str], limits: dict[str, Any], *,
                   kv: bool = True) -> Any:
    """hexrag deletes ``doc_ids`` from the working directory ``path`` (with its ``kv``
    sections, or as a stack that holds none) and writes it back."""
    stack = load_workdir(path, embedder_dim=DIM)
    ingestor = _ingestor(stack, stack.kv if kv else {}, limits)
    report = asyncio.run(ingestor.delete_documents(doc_ids))
    save_workdir(stack, path)
    return report


def _cites(path: Path, chunks: set[str]) -> list[str]:
    view = _view(path)
    return [n for n, v in view["nodes"].items() if set(str(v[2]).split("<SEP>")) & chunks] + [
        str(p) for p, v in view["edges"].items() if set(str(v[3]).split("<SEP>")) & chunks]


@pytest.mark.parametrize("limits", list(LIMITS), ids=list(LIMITS))
def test_hexrag_deletes_lightrag_built_data_as_lightrag_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: str
) -> None:
    lr_dir = _lr_build(tmp_path, monkeypatch, LIMITS[limits])
    doc_id = sorted(_kv_files(lr_dir)["full_docs"])[0]
    status = json.loads((lr_dir / "kv_store_doc_status.json").read_text(encoding="utf-8"))
    gone = set(status[doc_id]["chunks_list"])
    root, ws = _copy(lr_dir, tmp_path / "lr_del")
    want = _lightrag(root, ws, monkeypatch, limits=LIMITS[limits], delete=[doc_id])
    root, ws = _copy(lr_dir, tmp_path / "hx_del")
    got = root / ws
    assert _cites(got, gone), "the document must be cited before the deletion"
    report = _hexrag_delete(got, [doc_id], LIMITS[limits])
    assert report.deleted == [doc_id] and report.entities_rebuilt
    assert _cites(got, gone) == []
    _assert_same(want, got)


def test_without_recovery_rows_the_cache_tells_what_to_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stack holding LightRAG's graph, chunks and cache but not its key-value rows (e.g.
    migrated from a backend without them): hexrag derives the candidates from the deleted
    chunks' cached extractions; the graph and vectors still equal LightRAG's result."""
    lr_dir = _lr_build(tmp_path, monkeypatch, {})
    doc_id = sorted(_kv_files(lr_dir)["full_docs"])[1]
    root, ws = _copy(lr_dir, tmp_path / "lr_del")
    want = _lightrag(root, ws, monkeypatch, limits={}, delete=[doc_id])
    root, ws = _copy(lr_dir, tmp_path / "hx_del")
    got = root / ws
    for ns in KV_NAMESPACES:
        (got / kv_file_name(ns)).unlink()
    report = _hexrag_delete(got, [doc_id], {}, kv=False)
    assert report.deleted == [doc_id]
    _assert_same(want, got, kv=False)


def test_without_rows_or_cache_deletion_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lr_dir = _lr_build(tmp_path, monkeypatch, {})
    doc_id = sorted(_kv_files(lr_dir)["full_docs"])[0]
    for ns in KV_NAMESPACES:
        (lr_dir / kv_file_name(ns)).unlink()
    (lr_dir / "kv_store_llm_response_cache.json").unlink()
    before = {p.name: p.read_bytes() for p in lr_dir.iterdir()}
    with pytest.raises(ConfigurationError, match="no cached extraction"):
        _hexrag_delete(lr_dir, [doc_id], {}, kv=False)
    assert {p.name: p.read_bytes() for p in lr_dir.iterdir()} == before


def _unstamped(kv: dict[str, Any]) -> dict[str, Any]:
    times = {"create_time", "update_time", "updated_at"}
    return {ns: {k: {f: v for f, v in row.items() if f not in times}
                 for k, row in rows.items()} for ns, rows in kv.items()}


@pytest.mark.parametrize("limits", ["defaults", "keep"])
def test_replay_deletion_keeps_lightrags_rows(tmp_path: Path, limits: str) -> None:
    """Deleting a document hexrag ingested (fragments: the replay) leaves the graph, vectors
    and LightRAG's key-value rows of a fresh build of the other documents."""
    hx_dir, ids = _hexrag_build(tmp_path / "hx", LIMITS[limits])
    report = _hexrag_delete(hx_dir, [ids[1]], LIMITS[limits])
    assert report.deleted == [ids[1]] and report.legacy == 0
    fresh, _ = _hexrag_build(tmp_path / "fresh", LIMITS[limits], [DOCS[0], *DOCS[2:]])
    want, got = _view(fresh), _view(hx_dir)
    for part in VIEW_PARTS:
        assert got[part] == want[part], part
    assert _unstamped(_kv_files(hx_dir)) == _unstamped(_kv_files(fresh))


def test_cli_delete_on_a_lightrag_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hexrag delete`` on a directory LightRAG built (LightRAG's default settings, so the
    rebuild needs no LLM): it succeeds, nothing cites the deleted chunks any more, and the
    directory equals LightRAG's own deletion (graph, vectors, key-value files)."""
    from typer.testing import CliRunner

    from hexrag.cli import app

    for var in ("FORCE_LLM_SUMMARY_ON_MERGE", "MAX_SOURCE_IDS_PER_ENTITY",
                "MAX_SOURCE_IDS_PER_RELATION", "SOURCE_IDS_LIMIT_METHOD", "MAX_FILE_PATHS"):
        monkeypatch.delenv(var, raising=False)
    lr_dir = _lightrag(tmp_path / "lr", "lr" + uuid.uuid4().hex[:8], monkeypatch, limits={},
                       insert=DOCS, force_summary=8)
    doc_id = sorted(_kv_files(lr_dir)["full_docs"])[2]
    status = json.loads((lr_dir / "kv_store_doc_status.json").read_text(encoding="utf-8"))
    gone = set(status[doc_id]["chunks_list"])
    root, ws = _copy(lr_dir, tmp_path / "lr_del")
    want = _lightrag(root, ws, monkeypatch, limits={}, delete=[doc_id], force_summary=8)
    root, ws = _copy(lr_dir, tmp_path / "hx_del")
    got = root / ws
    monkeypatch.setattr(time, "time", lambda: float(NOW))
    result = CliRunner().invoke(app, ["delete", doc_id, "--stack", str(got),
                                      "--embedder", f"hashing:{DIM}"])
    monkeypatch.undo()
    assert result.exit_code == 0, result.output
    assert _cites(got, gone) == []
    _assert_same(want, got)


def test_mixed_directory_deletion_equals_lightrags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LightRAG built two documents; a third is ingested by hexrag (fragments) and deleted by
    hexrag. The records it shared with LightRAG's documents cite chunks no fragment accounts
    for: they are rebuilt from the extraction cache, so the result equals LightRAG ingesting
    and deleting that third document itself."""
    base = _lightrag(tmp_path / "lr", "lr" + uuid.uuid4().hex[:8], monkeypatch, limits={},
                     insert=DOCS[:2])
    root, ws = _copy(base, tmp_path / "lr_both")
    want = _lightrag(root, ws, monkeypatch, limits={}, insert=[DOCS[2]])
    third = sorted(set(_kv_files(want)["full_docs"]) - set(_kv_files(base)["full_docs"]))
    assert len(third) == 1
    _lightrag(root, ws, monkeypatch, limits={}, delete=third)
    root, ws = _copy(base, tmp_path / "hx_both")
    got = root / ws
    stack = load_workdir(got, embedder_dim=DIM)
    ingestor = _ingestor(stack, stack.kv, {})
    report = asyncio.run(ingestor.ingest_text(DOCS[2][0], file_path=DOCS[2][1]))
    assert report.doc_id == third[0]
    save_workdir(stack, got)
    status = json.loads((got / "kv_store_doc_status.json").read_text(encoding="utf-8"))
    gone = set(status[third[0]]["chunks_list"])
    deleted = _hexrag_delete(got, third, {})
    assert deleted.legacy > 0, "records shared with LightRAG's documents must be met"
    assert _cites(got, gone) == []
    _assert_same(want, got)
