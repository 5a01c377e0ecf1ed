"""LightRAG's document-side key-value stores on PostgreSQL and Redis, against LightRAG itself.

Records written by LightRAG 1.5.7's own classes (``PGKVStorage`` on the tests' PostgreSQL,
``RedisKVStorage`` on the tests' redis-server) read back through hexrag's adapters
(:class:`~hexrag.adapters.postgres.lightrag_kv.LightRAGPgKV`,
:class:`~hexrag.adapters.redis.lightrag_kv.LightRAGRedisKV`) equal to what LightRAG's
``get_by_ids`` returns, and records written by hexrag read back through LightRAG equal to what
hexrag reads. The Redis adapter also keeps the whole Cache contract (it stores records as given).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hexrag.devtools.lightrag_data import require_lightrag
from hexrag.ports.cache import KV_NAMESPACES
from hexrag.testing import CacheContract
from tests.services.postgres import pg_dsn  # noqa: F401
from tests.services.redis import redis_client, redis_server, redis_server_url  # noqa: F401

require_lightrag()

NOW = 1_700_000_000


def _records(tag: str) -> dict[str, dict[str, dict[str, Any]]]:
    """A couple of records per namespace, as LightRAG's pipeline writes them."""
    return {
        "full_docs": {f"doc-{tag}1": {
            "content": f"Acme é 中文 {tag}", "file_path": "acme.txt", "parse_format": "raw",
            "content_hash": "0" * 32,
            "chunk_options": {"chunk_token_size": 20, "fixed_token": {
                "split_by_character": None, "split_by_character_only": False,
                "chunk_overlap_token_size": 4}}}},
        "full_entities": {f"doc-{tag}1": {"entity_names": ["Acme", "Xero"], "count": 2},
                          f"doc-{tag}2": {"entity_names": [], "count": 0}},
        "full_relations": {f"doc-{tag}1": {"relation_pairs": [["Acme", "Xero"]], "count": 1}},
        "entity_chunks": {f"Acme {tag}": {"chunk_ids": ["c-1", "c-2"], "count": 2},
                          f"Xéro {tag}": {"chunk_ids": ["c-2"], "count": 1}},
        "relation_chunks": {f"Acme {tag}<SEP>Xero": {"chunk_ids": ["c-2"], "count": 1}},
    }


# ------------------------------------------------------------------------------- PostgreSQL


@pytest.mark.backend("postgres")
def test_postgres_layout_reads_and_writes_what_lightrag_does(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.adapters.postgres import create_pool
    from hexrag.adapters.postgres.lightrag_kv import LightRAGPgKV
    from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg

    workspace = "kv" + uuid.uuid4().hex[:8]
    monkeypatch.setattr(time, "time", lambda: float(NOW))

    async def run() -> None:
        rag = make_lightrag_pg(pg_dsn, HashingEmbedder(16), workspace=workspace)
        await init_lightrag_pg(rag, pg_dsn)
        pool = await create_pool(pg_dsn)
        try:
            ours = {ns: LightRAGPgKV(pool, namespace=ns, workspace=workspace)
                    for ns in KV_NAMESPACES}
            theirs = {ns: getattr(rag, ns) for ns in KV_NAMESPACES}
            for ns in KV_NAMESPACES:
                written = _records("lr")[ns]
                await theirs[ns].upsert({k: dict(v) for k, v in written.items()})
                keys = [*written, "missing"]
                want = await theirs[ns].get_by_ids(keys)
                got = await ours[ns].get_many(keys)
                assert got == want, ns
                assert got[-1] is None and all(g is not None for g in got[:-1])
                for g, (key, value) in zip(got, written.items(), strict=False):
                    assert g is not None and g["id"] == key
                    assert {f: g[f] for f in value} == value, ns
                # hexrag writes, LightRAG reads
                mine = _records("hx")[ns]
                await ours[ns].set_many({k: {**v, "create_time": NOW, "update_time": NOW}
                                         for k, v in mine.items()})
                keys = list(mine)
                want = await theirs[ns].get_by_ids(keys)
                assert await ours[ns].get_many(keys) == want, ns
                if ns != "full_docs":
                    assert all(w["create_time"] == NOW for w in want), ns
                # scan and delete
                page = await ours[ns].scan_entries(limit=100)
                assert {k for k, _ in page.items} == {*written, *mine}
                await ours[ns].delete_many(list(written))
                assert await theirs[ns].get_by_ids(list(written)) == [None] * len(written)
                await ours[ns].clear()
                assert (await ours[ns].scan_entries(limit=100)).items == []
        finally:
            await pool.close()
            await rag.finalize_storages()

    asyncio.run(run())


# ------------------------------------------------------------------------------------ Redis


@pytest.fixture
async def lightrag_workspace(redis_client: Any) -> AsyncIterator[str]:  # noqa: F811
    ws = "kv" + uuid.uuid4().hex[:12]
    yield ws
    keys = [k async for k in redis_client.scan_iter(match=f"{ws}_*", count=1000)]
    if keys:
        await redis_client.delete(*keys)


@pytest.mark.backend("redis")
async def test_redis_layout_reads_and_writes_what_lightrag_does(
    redis_client: Any, lightrag_workspace: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    from lightrag.kg.redis_impl import RedisKVStorage

    from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV

    monkeypatch.setenv("REDIS_URI", redis_server_url())
    monkeypatch.delenv("REDIS_WORKSPACE", raising=False)
    monkeypatch.setattr(time, "time", lambda: float(NOW))
    for ns in KV_NAMESPACES:
        theirs = RedisKVStorage(namespace=ns, workspace=lightrag_workspace,
                                global_config={}, embedding_func=None)
        await theirs.initialize()
        try:
            ours = LightRAGRedisKV(redis_client, namespace=ns, workspace=lightrag_workspace)
            assert ours.namespace == ns
            written = _records("lr")[ns]
            await theirs.upsert({k: dict(v) for k, v in written.items()})
            keys = [*written, "missing"]
            want = await theirs.get_by_ids(keys)
            assert await ours.get_many(keys) == want, ns
            assert want[0]["_id"] == next(iter(written)) and want[0]["create_time"] == NOW
            mine = {k: {**v, "create_time": NOW, "update_time": NOW, "_id": k}
                    for k, v in _records("hx")[ns].items()}
            await ours.set_many(mine)
            assert await theirs.get_by_ids(list(mine)) == list(mine.values()), ns
            raw = await redis_client.get(f"{lightrag_workspace}_{ns}:{next(iter(mine))}")
            assert raw is not None
            await ours.delete_many(list(written))
            assert await theirs.get_by_ids(list(written)) == [None] * len(written)
        finally:
            await theirs.finalize()


@pytest.mark.backend("redis")
class TestLightRAGRedisKVContract(CacheContract):
    """``<ws>_entity_chunks:<key>`` keys; the other namespace is another workspace."""

    @pytest.fixture
    def cache(self, redis_client: Any, lightrag_workspace: str) -> Any:  # noqa: F811
        from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV

        return LightRAGRedisKV(redis_client, namespace="entity_chunks",
                               workspace=lightrag_workspace)

    @pytest.fixture
    def other_namespace_cache(self, redis_client: Any, lightrag_workspace: str) -> Any:  # noqa: F811
        from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV

        return LightRAGRedisKV(redis_client, namespace="relation_chunks",
                               workspace=lightrag_workspace)


def test_unknown_namespaces_are_refused() -> None:
    from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV
    from hexrag.adapters.workdir.kv import kv_file_name
    from hexrag.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="unknown key-value namespace"):
        LightRAGRedisKV(None, namespace="text_chunks")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown key-value namespace"):
        kv_file_name("doc_status")
    assert os.path.basename(kv_file_name("full_docs")) == "kv_store_full_docs.json"
