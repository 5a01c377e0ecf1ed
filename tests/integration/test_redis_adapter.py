"""Redis adapter specifics on a real redis-server: key layout, JSON values, one command per
call (counted by the server's own command statistics), SCAN-only namespace walks, validation
and the driver-error mapping."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from hexrag.adapters.redis import RedisCache, RedisChunkStore
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
)
from hexrag.core.model import Chunk
from tests.services.redis import redis_client, redis_server, redis_workspace  # noqa: F401

pytestmark = pytest.mark.backend("redis")


async def _command_calls(client: Any) -> dict[str, int]:
    stats = await client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


async def _calls_during(client: Any, action: Any) -> dict[str, int]:
    """Server-side command counts caused by ``await action()`` (the probes excluded)."""
    await client.config_resetstat()
    await action()
    calls = await _command_calls(client)
    # the probes themselves: INFO, and CONFIG RESETSTAT counting itself ("config" on Redis 6,
    # "config|resetstat" on Redis 7)
    return {k: v for k, v in calls.items() if k != "info" and not k.startswith("config")}


def _chunks(n: int) -> list[Chunk]:
    return [
        Chunk(id=f"c-{i}", content=f"text {i} é", tokens=i, metadata={"product_id": "p1"})
        for i in range(n)
    ]


async def test_key_layout_and_json_value(redis_client: Any, redis_workspace: str) -> None:  # noqa: F811
    store = RedisChunkStore(redis_client, workspace=redis_workspace, namespace="text_chunks")
    chunk = Chunk(
        id="chunk:1 *?[x]",
        content='中文 "q" \\',
        tokens=None,
        full_doc_id="doc-1",
        chunk_order_index=0,
        file_path=None,
        metadata={"heading": None, "llm_cache_list": ["a"]},
    )
    await store.upsert_chunks([chunk])
    raw = await redis_client.get(f"{redis_workspace}:text_chunks:chunk:1 *?[x]")
    assert json.loads(raw) == {
        "content": '中文 "q" \\',
        "tokens": None,
        "full_doc_id": "doc-1",
        "chunk_order_index": 0,
        "file_path": None,
        "heading": None,
        "llm_cache_list": ["a"],
    }
    assert await store.get_chunks([chunk.id]) == [chunk]
    # A glob-looking id is just an id: count/clear of the namespace are not fooled.
    assert await store.count() == 1


async def test_each_call_is_one_command(redis_client: Any, redis_workspace: str) -> None:  # noqa: F811
    store = RedisChunkStore(redis_client, workspace=redis_workspace)
    chunks = _chunks(120)
    ids = [c.id for c in chunks]

    calls = await _calls_during(redis_client, lambda: store.upsert_chunks(chunks))
    assert calls == {"mset": 1}
    calls = await _calls_during(redis_client, lambda: store.get_chunks([*ids, "missing"]))
    assert calls == {"mget": 1}
    calls = await _calls_during(redis_client, lambda: store.delete_chunks(ids[:100]))
    assert calls == {"del": 1}

    cache = RedisCache(redis_client, workspace=redis_workspace)
    entries = {f"k{i}": {"return": str(i)} for i in range(50)}
    assert await _calls_during(redis_client, lambda: cache.set_many(entries)) == {"mset": 1}
    assert await _calls_during(redis_client, lambda: cache.get_many(list(entries))) == {"mget": 1}
    assert await _calls_during(redis_client, lambda: cache.delete_many(["k1", "k2"])) == {"del": 1}


async def test_empty_batches_send_nothing(redis_client: Any, redis_workspace: str) -> None:  # noqa: F811
    store = RedisChunkStore(redis_client, workspace=redis_workspace)
    cache = RedisCache(redis_client, workspace=redis_workspace)

    async def everything_empty() -> None:
        assert await store.get_chunks([]) == []
        await store.upsert_chunks([])
        await store.delete_chunks([])
        assert await cache.get_many([]) == []
        await cache.set_many({})
        await cache.delete_many([])

    assert await _calls_during(redis_client, everything_empty) == {}


async def test_count_and_clear_use_scan_never_keys(
    redis_client: Any,  # noqa: F811
    redis_workspace: str,  # noqa: F811
) -> None:
    store = RedisChunkStore(redis_client, workspace=redis_workspace)
    neighbour = RedisChunkStore(redis_client, workspace=redis_workspace, namespace="text_chunks2")
    other_ws = RedisChunkStore(redis_client, workspace=redis_workspace + "x")
    await store.upsert_chunks(_chunks(2500))
    await neighbour.upsert_chunks(_chunks(3))
    await other_ws.upsert_chunks(_chunks(4))
    try:
        calls: dict[str, int] = {}

        async def count() -> None:
            assert await store.count() == 2500

        calls = await _calls_during(redis_client, count)
        assert set(calls) == {"scan"} and calls["scan"] >= 2
        calls = await _calls_during(redis_client, store.clear)
        assert "keys" not in calls and calls["scan"] >= 2
        assert await store.count() == 0
        assert await neighbour.count() == 3
        assert await other_ws.count() == 4
    finally:
        await other_ws.clear()


@pytest.mark.parametrize(
    "workspace",
    ["", "a:b", "a*", "a?", "a[b]", "a\\b", "-x", ".x", "a b", "é", "x" * 129, "a\nb"],
)
def test_invalid_workspace_or_namespace_rejected(workspace: str) -> None:
    client: Any = object()  # never used: validation happens before any I/O
    with pytest.raises(ConfigurationError):
        RedisChunkStore(client, workspace=workspace)
    with pytest.raises(ConfigurationError):
        RedisCache(client, workspace="ok", namespace=workspace)


def test_metadata_shadowing_a_core_field_is_refused() -> None:
    client: Any = object()
    store = RedisChunkStore(client, workspace="ws")
    bad = Chunk(id="c", content="x", metadata={"content": "shadow"})
    with pytest.raises(ConfigurationError, match="clash"):
        asyncio.run(store.upsert_chunks([bad]))


async def test_corrupt_value_is_a_backend_error(redis_client: Any, redis_workspace: str) -> None:  # noqa: F811
    cache = RedisCache(redis_client, workspace=redis_workspace)
    await redis_client.set(f"{redis_workspace}:llm_response_cache:bad", b"not json")
    await redis_client.set(f"{redis_workspace}:llm_response_cache:list", b"[1, 2]")
    with pytest.raises(BackendError, match="not JSON"):
        await cache.get_many(["bad"])
    with pytest.raises(BackendError, match="expected an object"):
        await cache.get_many(["list"])


async def test_from_url_is_lazy_and_closes_its_client(redis_server: str) -> None:  # noqa: F811
    store = RedisChunkStore.from_url("redis://127.0.0.1:1/0", workspace="lazy")
    await store.aclose()  # constructing and closing never connected
    store = RedisChunkStore.from_url(redis_server, workspace="lazy")
    assert await store.count() == 0
    await store.aclose()


# ---- error mapping -----------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_refused_connection_is_backend_unavailable() -> None:
    cache = RedisCache.from_url(f"redis://127.0.0.1:{_closed_port()}/0", workspace="w")
    try:
        with pytest.raises(BackendUnavailable) as info:
            await cache.get_many(["k"])
        assert info.value.backend == "redis"
        assert "running" in str(info.value)
        assert info.value.__cause__ is not None
    finally:
        await cache.aclose()


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


async def test_unanswered_command_is_backend_timeout(silent_server: int) -> None:
    store = RedisChunkStore.from_url(
        f"redis://127.0.0.1:{silent_server}/0",
        workspace="w",
        socket_timeout=0.2,
        socket_connect_timeout=0.2,
    )
    try:
        with pytest.raises(BackendTimeout) as info:
            await store.get_chunks(["c"])
        assert info.value.backend == "redis"
    finally:
        await store.aclose()


@pytest.fixture
async def acl_user(redis_client: Any) -> AsyncIterator[str]:  # noqa: F811
    name = "hexrag-test-user"
    await redis_client.acl_setuser(
        name, enabled=True, passwords=["+right"], keys=["*"], commands=["+@all"]
    )
    yield name
    await redis_client.acl_deluser(name)


async def test_wrong_password_is_configuration_error(redis_server: str, acl_user: str) -> None:  # noqa: F811
    url = redis_server.replace("redis://", f"redis://{acl_user}:wrong@")
    cache = RedisCache.from_url(url, workspace="w")
    try:
        with pytest.raises(ConfigurationError, match="authentication"):
            await cache.get_many(["k"])
    finally:
        await cache.aclose()
    good = RedisCache.from_url(
        redis_server.replace("redis://", f"redis://{acl_user}:right@"), workspace="w"
    )
    try:
        assert await good.get_many(["k"]) == [None]
    finally:
        await good.aclose()


async def test_server_side_error_is_backend_error(redis_client: Any, redis_workspace: str) -> None:  # noqa: F811
    # The server refuses writes while it lacks the replicas it was told to require: an
    # error reply (NOREPLICAS), neither a connection problem nor a timeout.
    store = RedisChunkStore(redis_client, workspace=redis_workspace)
    await redis_client.config_set("min-replicas-to-write", 1)
    try:
        with pytest.raises(BackendError) as info:
            await store.upsert_chunks([Chunk(id="c", content="x")])
        assert info.value.backend == "redis"
        assert not isinstance(info.value, (BackendUnavailable, BackendTimeout))
    finally:
        await redis_client.config_set("min-replicas-to-write", 0)
