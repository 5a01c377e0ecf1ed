"""Document status rows travel bit for bit (issue 21 (c)).

A status row read from a LightRAG store and written elsewhere equals the original (JSON-equal):
rows LightRAG 1.5.7 wrote (processed rows), a LightRAG pending row without ``chunks_count`` /
``chunks_list`` (it used to gain ``"chunks_count": 0``), LightRAG's duplicate row, a row of
another writer with ``null`` / ``""`` where hexrag reads defaults, and hexrag's own pending row
(``seq``, the text kept for resuming). Through every document store: a working directory
(saved and loaded), hexrag's PostgreSQL tables, LightRAG's ``LIGHTRAG_DOC_STATUS`` table and
Redis; through ``hexrag migrate`` / ``export`` / ``import`` and an ``ingest`` into a
directory holding such rows.

On LightRAG's own PostgreSQL table, LightRAG is the oracle: its ``PGDocStatusStorage`` reads
hexrag's rows as it reads its own (:func:`lightrag_doc_status_view`), hexrag reads the rows
LightRAG writes exactly as LightRAG returns them (``chunks_count: -1`` for a row without one),
and once LightRAG rewrites a row hexrag's copy of the written JSON no longer applies.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from hexrag.devtools.lightrag_data import require_lightrag
from hexrag.devtools.scripted_openai import ScriptedOpenAIServer
from hexrag.domain.documents import DocRecord
from tests.integration.test_cli_ingest import CRM, server  # noqa: F401
from tests.integration.test_cli_ingest import _cli as _cli_llm
from tests.integration.test_cli_transfer import _cli
from tests.integration.test_ingest_lightrag import _lightrag
from tests.integration.test_transfer_lightrag_kv_layouts import _lightrag_pg_workspace
from tests.services.redis import redis_server  # noqa: F401

require_lightrag()

pytestmark = [pytest.mark.backend("postgres"), pytest.mark.backend("redis")]

#: Rows as LightRAG 1.5.7 writes them (besides its processed rows, read from its directory).
CRAFTED: dict[str, dict[str, Any]] = {
    # ``apipeline_enqueue_documents``: no chunks_count, no chunks_list, no error_msg
    "doc-pending": {
        "status": "pending", "content_summary": "Pending text", "content_length": 12,
        "created_at": "2026-01-02T03:04:05.123456+00:00",
        "updated_at": "2026-01-02T03:04:05.123456+00:00", "file_path": "pending.txt",
        "track_id": "insert_20260102_030405_abcdef12",
        "content_hash": "0123456789abcdef0123456789abcdef", "metadata": {},
    },
    # LightRAG's duplicate row
    "dup-0123": {
        "status": "failed", "content_summary": "[DUPLICATE:filename] Original document: x",
        "content_length": 5, "chunks_count": 0, "chunks_list": [],
        "created_at": "2026-01-02T03:04:05+00:00", "updated_at": "2026-01-02T03:04:05+00:00",
        "file_path": "pending.txt", "track_id": "insert_20260102_030405_abcdef13",
        "error_msg": "File name already exists. Original doc_id: x, Status: processed",
        "metadata": {"is_duplicate": True, "duplicate_kind": "filename",
                     "original_doc_id": "x", "original_track_id": "t"},
    },
    # another writer: nulls and empty strings where hexrag reads defaults, a stored count
    # that disagrees with its list, an unknown field
    "doc-odd": {
        "status": "failed", "content_summary": None, "content_length": 3, "chunks_count": 7,
        "chunks_list": ["c-1"], "created_at": "2026-01-02T03:04:05+00:00",
        "updated_at": "2026-01-02T03:04:05+00:00", "file_path": "odd é.md",
        "error_msg": None, "metadata": {"k": ["v", 1]}, "track_id": None, "extra": {"x": 1},
    },
}
#: hexrag's own pending row: ``seq`` and the text kept for resuming
HEXRAG_ROW = {
    "status": "pending", "content_summary": "Hexrag text", "content_length": 11,
    "chunks_count": 0, "chunks_list": [], "file_path": "h.txt",
    "created_at": "2026-01-02T03:04:05+00:00", "updated_at": "2026-01-02T03:04:05+00:00",
    "error_msg": None, "metadata": {"product_id": "p-1"}, "seq": 4, "content": "Hexrag text",
    "content_hash": "fedcba9876543210fedcba9876543210", "track_id": "insert_x",
}


def _rows(original: Path) -> dict[str, dict[str, Any]]:
    lightrag = json.loads((original / "kv_store_doc_status.json").read_text(encoding="utf-8"))
    assert lightrag and all(r["status"] == "processed" for r in lightrag.values())
    return {**lightrag, **CRAFTED, "doc-hexrag": HEXRAG_ROW}


async def _round_trip(store: Any, rows: dict[str, dict[str, Any]]) -> None:
    await store.upsert_docs([DocRecord.from_json(k, v) for k, v in rows.items()])
    got = await store.get_docs(list(rows))
    assert [g.to_json() if g else None for g in got] == list(rows.values())
    listed = {d.id: d.to_json() for d in await store.list_docs()}
    assert listed == rows


def test_rows_travel_bit_for_bit_through_every_document_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_server: str  # noqa: F811
) -> None:
    from hexrag.adapters.memory import MemoryDocumentStore
    from hexrag.adapters.postgres import PgDocumentStore, create_pool
    from hexrag.adapters.postgres.lightrag_doc_status import LightRAGPgDocumentStore
    from hexrag.adapters.redis import RedisDocumentStore
    from hexrag.adapters.workdir.stack import load_documents
    from tests.services.postgres import postgres_dsn

    rows = _rows(_lightrag(tmp_path / "lr", monkeypatch, cache=True)[0])
    dsn = postgres_dsn()
    ws = "docs" + uuid.uuid4().hex[:6]
    _lightrag_pg_workspace(dsn, ws)

    async def run() -> None:
        memory = MemoryDocumentStore()
        await _round_trip(memory, rows)
        docs, _frags = memory.dump()
        (tmp_path / "wd").mkdir()
        (tmp_path / "wd" / "kv_store_doc_status.json").write_text(json.dumps(docs))
        await _round_trip(load_documents(tmp_path / "wd"), rows)
        pool = await create_pool(dsn)
        redis = RedisDocumentStore.from_url(redis_server, workspace=ws)
        try:
            await _round_trip(PgDocumentStore(pool, table_prefix=ws), rows)
            await _round_trip(LightRAGPgDocumentStore(pool, workspace=ws), rows)
            await _round_trip(redis, rows)
        finally:
            await redis.clear()
            await redis.aclose()
            await pool.close()

    asyncio.run(run())


def test_lightrag_doc_status_table_with_lightrag_as_oracle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.adapters.postgres import create_pool
    from hexrag.adapters.postgres.lightrag_doc_status import (
        LightRAGPgDocumentStore,
        lightrag_doc_status_view,
    )
    from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg
    from tests.integration.test_ingest_lightrag import DIM
    from tests.services.postgres import postgres_dsn

    rows = _rows(_lightrag(tmp_path / "lr", monkeypatch, cache=True)[0])
    dsn = postgres_dsn()
    ws = "oracle" + uuid.uuid4().hex[:6]

    async def run() -> None:
        rag = make_lightrag_pg(dsn, HashingEmbedder(DIM), workspace=ws)
        await init_lightrag_pg(rag, dsn)
        pool = await create_pool(dsn)
        store = LightRAGPgDocumentStore(pool, workspace=ws)
        try:
            await store.upsert_docs([DocRecord.from_json(k, v) for k, v in rows.items()])
            # LightRAG reads hexrag's rows as it reads its own
            theirs = await rag.doc_status.get_by_ids(list(rows))
            assert theirs == [lightrag_doc_status_view(r) for r in rows.values()]
            # hexrag reads what LightRAG writes exactly as LightRAG returns it
            mine = {f"lr-{k}": {kk: vv for kk, vv in v.items()
                                if kk not in ("seq", "content", "extra")}
                    for k, v in CRAFTED.items() if k != "doc-odd"}
            await rag.doc_status.upsert(json.loads(json.dumps(mine)))
            want = await rag.doc_status.get_by_ids(list(mine))
            got = await store.get_docs(list(mine))
            assert [g.to_json() if g else None for g in got] == want
            assert want[0]["chunks_count"] == -1  # LightRAG's own value for a missing count
            # LightRAG rewrites one of hexrag's rows: hexrag now reads LightRAG's row
            changed = {**rows["doc-pending"], "status": "processing",
                       "updated_at": "2026-02-03T04:05:06+00:00"}
            await rag.doc_status.upsert({"doc-pending": changed})
            (again,) = await store.get_docs(["doc-pending"])
            assert again is not None
            assert again.to_json() == (await rag.doc_status.get_by_ids(["doc-pending"]))[0]
            # deleting through hexrag removes LightRAG's row
            await store.delete_docs(["doc-hexrag"])
            assert not [r for r in await rag.doc_status.get_by_ids(["doc-hexrag"]) if r]
            assert await store.get_docs(["doc-hexrag"]) == [None]
        finally:
            await rag.doc_status.drop()
            await rag.finalize_storages()
            await pool.close()

    asyncio.run(run())


def test_migrate_export_import_and_ingest_keep_rows(
    server: ScriptedOpenAIServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original, _ = _lightrag(tmp_path / "lr", monkeypatch, cache=True)
    status = original / "kv_store_doc_status.json"
    rows = {**json.loads(status.read_text(encoding="utf-8")), **CRAFTED}
    status.write_text(json.dumps(rows, indent=2, ensure_ascii=False), encoding="utf-8")

    def rows_of(directory: Path) -> dict[str, Any]:
        data = json.loads((directory / "kv_store_doc_status.json").read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        return data

    copy = tmp_path / "copy"
    r = _cli("migrate", "--from", str(original), "--to", str(copy))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert rows_of(copy) == rows
    r = _cli("export", str(copy), str(tmp_path / "archive"))
    assert r.returncode == 0, r.stderr[-3000:]
    r = _cli("import", str(tmp_path / "archive"), str(tmp_path / "imported"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert rows_of(tmp_path / "imported") == rows
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "crm.md").write_text(CRM, encoding="utf-8")
    r = _cli_llm(server, "ingest", str(docs), "--stack", str(copy), "--llm", "openai:scripted",
                 "--embedder", "hashing:32")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    after = rows_of(copy)
    assert {k: after[k] for k in rows} == rows  # every earlier row untouched
    assert len(after) == len(rows) + 1
