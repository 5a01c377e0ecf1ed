"""``LightRAGRedisDocumentStore`` (status rows in LightRAG 1.5.7's ``RedisDocStatusStorage``
keys with its scheduling sidecar, hexrag's records beside them) against the whole
DocumentStore contract, and against LightRAG's own storage class on the same server: rows
hexrag writes read back through LightRAG as written, and the sidecar hexrag keeps equals the
one LightRAG keeps for the same writes and deletions."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hexrag.adapters.redis.lightrag_doc_status import LightRAGRedisDocumentStore
from hexrag.devtools.lightrag_data import require_lightrag
from hexrag.domain.documents import DocRecord
from hexrag.testing import DocumentStoreContract
from tests.services.redis import redis_client, redis_server  # noqa: F401

pytestmark = pytest.mark.backend("redis")


async def _drop(client: Any, *patterns: str) -> None:
    for pattern in patterns:
        keys = [k async for k in client.scan_iter(match=pattern, count=1000)]
        if keys:
            await client.delete(*keys)


@pytest.fixture
async def lr_workspace(redis_client: Any) -> AsyncIterator[str]:  # noqa: F811
    ws = "lrds" + uuid.uuid4().hex[:10]
    yield ws
    await _drop(redis_client, f"{ws}_*", f"hx{ws}:*")


class TestLightRAGRedisDocumentStoreContract(DocumentStoreContract):
    """Every document-store sentence; one LightRAG workspace per test."""

    @pytest.fixture
    def document_store(
        self, redis_client: Any, lr_workspace: str  # noqa: F811
    ) -> LightRAGRedisDocumentStore:
        return LightRAGRedisDocumentStore(redis_client, prefix=f"hx{lr_workspace}",
                                          lightrag_workspace=lr_workspace)


def _rows() -> dict[str, dict[str, Any]]:
    base = {"content_summary": "s", "content_length": 3, "chunks_count": 1,
            "chunks_list": ["chunk-1"], "metadata": {}, "error_msg": None,
            "track_id": "t1", "content_hash": "h"}
    return {
        "doc-a": {**base, "status": "processed", "file_path": "a.txt",
                  "created_at": "2025-01-01T00:00:00+00:00",
                  "updated_at": "2025-01-01T00:00:01+00:00"},
        "doc-b": {**base, "status": "pending", "file_path": "b.txt",
                  "created_at": "2025-01-02T00:00:00+00:00",
                  "updated_at": "2025-01-02T00:00:01+00:00"},
        "dup-c": {**base, "status": "failed", "file_path": "a.txt",
                  "metadata": {"is_duplicate": True, "original_doc_id": "doc-a"},
                  "created_at": "2025-01-03T00:00:00+00:00",
                  "updated_at": "2025-01-03T00:00:01+00:00"},
        "doc-d": {**base, "status": "processed", "file_path": "unknown_source",
                  "created_at": "2025-01-04T00:00:00+00:00",
                  "updated_at": "2025-01-04T00:00:01+00:00"},
    }


async def _sidecar(client: Any, ws: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async for key in client.scan_iter(match=f"{ws}_doc_status__sched*", count=1000):
        name = key.decode().split("__sched", 1)[1]
        if await client.type(key) == b"zset":
            out[name] = sorted(m.decode() for m in await client.zrange(key, 0, -1))
        else:
            out[name] = sorted(m.decode() for m in await client.smembers(key))
    return {k: v for k, v in out.items() if v}


async def test_lightrag_reads_hexrags_rows_and_keeps_the_same_sidecar(
    redis_server: str, redis_client: Any  # noqa: F811
) -> None:
    require_lightrag()
    from lightrag.kg.redis_impl import RedisDocStatusStorage
    from lightrag.kg.shared_storage import initialize_share_data

    from hexrag.devtools.lightrag_deploy import lightrag_env

    initialize_share_data()
    mine, theirs = ("hx" + uuid.uuid4().hex[:8], "lr" + uuid.uuid4().hex[:8])
    store = LightRAGRedisDocumentStore(redis_client, prefix=f"p{mine}",
                                       lightrag_workspace=mine)
    try:
        with lightrag_env({"REDIS_URI": redis_server}, unset=("REDIS_WORKSPACE",)):
            lr = RedisDocStatusStorage(namespace="doc_status", workspace=theirs,
                                       global_config={"embedding_batch_num": 10},
                                       embedding_func=None)
            reader = RedisDocStatusStorage(namespace="doc_status", workspace=mine,
                                           global_config={"embedding_batch_num": 10},
                                           embedding_func=None)
            await lr.initialize()
            await reader.initialize()
        rows = _rows()
        await lr.upsert({k: dict(v) for k, v in rows.items()})
        await store.upsert_docs([DocRecord.from_json(k, v) for k, v in rows.items()])
        assert await _sidecar(redis_client, mine) == await _sidecar(redis_client, theirs)
        assert await _sidecar(redis_client, mine)  # there is one to compare
        got = await reader.get_by_ids(list(rows))
        assert got == list(rows.values())
        # status change, file path move, deletion: both sidecars follow alike
        moved = {**rows["doc-b"], "status": "processed", "file_path": "b2.txt"}
        await lr.upsert({"doc-b": dict(moved)})
        await store.upsert_docs([DocRecord.from_json("doc-b", moved)])
        await lr.delete(["doc-a"])
        await store.delete_docs(["doc-a"])
        assert await _sidecar(redis_client, mine) == await _sidecar(redis_client, theirs)
        assert await reader.get_by_id("doc-a") is None
        counts = await reader.get_all_status_counts()
        assert counts.get("processed") == 2 and counts.get("failed") == 1, counts
        # and rows LightRAG wrote are hexrag's documents, read as LightRAG reads them
        other = LightRAGRedisDocumentStore(redis_client, prefix=f"p{theirs}",
                                           lightrag_workspace=theirs)
        listed = {d.id: d.to_json() for d in await other.list_docs()}
        raw = {k: json.loads(await redis_client.get(f"{theirs}_doc_status:{k}"))
               for k in ("doc-b", "dup-c", "doc-d")}
        assert listed == raw
        await other.clear()
        assert await _sidecar(redis_client, theirs) == {}
        await lr.close()
        await reader.close()
    finally:
        await _drop(redis_client, f"{mine}_*", f"{theirs}_*", f"p{mine}:*", f"p{theirs}:*")


async def test_a_hexrag_row_is_lightrags_row_and_reads_back_as_written(
    redis_client: Any, lr_workspace: str  # noqa: F811
) -> None:
    """In LightRAG's key: no ``seq``, ``chunks_list: []`` added (as its upsert does); read
    back by hexrag exactly as written; once LightRAG rewrites it (new ``updated_at``) it
    reads as LightRAG's row, still ordered by hexrag's ``seq``."""
    store = LightRAGRedisDocumentStore(redis_client, prefix=f"hx{lr_workspace}",
                                       lightrag_workspace=lr_workspace)
    row = {"status": "pending", "content_summary": "", "content_length": 0,
           "file_path": "x.txt", "created_at": "t", "updated_at": "u", "seq": 7,
           "content": "text to resume"}
    await store.upsert_docs([DocRecord.from_json("doc-x", row)])
    raw = json.loads(await redis_client.get(f"{lr_workspace}_doc_status:doc-x"))
    assert "seq" not in raw and raw["chunks_list"] == [] and raw["content"] == "text to resume"
    (got,) = await store.get_docs(["doc-x"])
    assert got is not None and got.to_json() == row
    await redis_client.set(f"{lr_workspace}_doc_status:doc-x",
                           json.dumps({**raw, "updated_at": "v", "status": "processed"}))
    (got,) = await store.get_docs(["doc-x"])
    assert got is not None and got.seq == 7 and got.status == "processed"
    assert got.chunks_list == [] and "chunks_list" in got.to_json()


async def test_rows_an_earlier_hexrag_kept_in_its_own_keys_are_not_lost(
    redis_client: Any, lr_workspace: str  # noqa: F811
) -> None:
    """Before hexrag wrote LightRAG's keys it kept the rows under ``<prefix>:doc_status:``:
    they are still listed and read, move to LightRAG's key when written, and go on delete."""
    from hexrag.adapters.redis import RedisDocumentStore

    prefix = f"hx{lr_workspace}"
    old = RedisDocumentStore(redis_client, workspace=prefix)
    rows = _rows()
    await old.upsert_docs([DocRecord.from_json(k, {**rows[k], "seq": n + 1})
                           for n, k in enumerate(("doc-a", "doc-b"))])
    store = LightRAGRedisDocumentStore(redis_client, prefix=prefix,
                                       lightrag_workspace=lr_workspace)
    await store.upsert_docs([DocRecord.from_json("doc-d", rows["doc-d"])])
    assert sorted(d.id for d in await store.list_docs()) == ["doc-a", "doc-b", "doc-d"]
    a, missing = await store.get_docs(["doc-a", "doc-x"])
    assert a is not None and a.seq == 1 and missing is None
    await store.upsert_docs([a])  # moved: LightRAG's key now, the old key gone
    assert await redis_client.get(f"{lr_workspace}_doc_status:doc-a") is not None
    assert await redis_client.get(f"{prefix}:doc_status:doc-a") is None
    await store.delete_docs(["doc-b"])
    assert await redis_client.get(f"{prefix}:doc_status:doc-b") is None
    assert sorted(d.id for d in await store.list_docs()) == ["doc-a", "doc-d"]
