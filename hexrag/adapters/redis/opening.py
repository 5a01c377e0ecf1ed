"""What the Redis adapters open (``redis://``, ``rediss://``, ``unix://``): chunks, the LLM
cache, documents, LightRAG's document-side namespaces and the manifest, under hexrag's key
prefix or a LightRAG 1.5.7 deployment's keys (``layout = lightrag``)."""

from __future__ import annotations

from typing import Any

from hexrag.openings import Opening, OpeningContext, Section

__all__ = ["OPENING"]


def _client_options(ctx: OpeningContext) -> dict[str, Any]:
    """Bounded waits; a dead connection is replaced on the next command (no restart)."""
    return {
        "socket_timeout": ctx.store_timeout,
        "socket_connect_timeout": min(10.0, ctx.store_timeout),
        "health_check_interval": 30,
    }


async def open_redis(ctx: OpeningContext, section: Section, url: str | None) -> Any:
    """Open ``section`` at ``url`` (each store on its own client, closed with the stack)."""
    assert url is not None
    options = _client_options(ctx)
    lightrag = ctx.layout == "lightrag"
    store: Any
    if section == "kv":
        from redis.asyncio import Redis

        from hexrag.ports.cache import KV_NAMESPACES

        client = Redis.from_url(url, **options)
        ctx.close_with("redis key-value namespaces", client.aclose)
        if lightrag:
            from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV

            return {ns: LightRAGRedisKV(client, namespace=ns, workspace=ctx.lightrag_workspace)
                    for ns in KV_NAMESPACES}
        from hexrag.adapters.redis import RedisCache

        return {ns: RedisCache(client, workspace=ctx.namespace, namespace=ns)
                for ns in KV_NAMESPACES}
    if section == "chunks":
        if lightrag:
            from hexrag.adapters.redis.lightrag_layout import LightRAGRedisChunkStore

            store = LightRAGRedisChunkStore.from_url(url, workspace=ctx.lightrag_workspace,
                                                     **options)
        else:
            from hexrag.adapters.redis import RedisChunkStore

            store = RedisChunkStore.from_url(url, workspace=ctx.namespace, **options)
    elif section == "llm_cache":
        if lightrag:
            from hexrag.adapters.redis.lightrag_layout import LightRAGRedisCache

            store = LightRAGRedisCache.from_url(url, workspace=ctx.lightrag_workspace,
                                                **options)
        else:
            from hexrag.adapters.redis import RedisCache

            store = RedisCache.from_url(url, workspace=ctx.namespace, **options)
    elif section == "documents" and lightrag:  # RedisDocStatusStorage's rows, hexrag's beside
        from hexrag.adapters.redis.lightrag_doc_status import LightRAGRedisDocumentStore
        from hexrag.adapters.workdir.lightrag_doc_status import (
            json_doc_status_dir,
            open_json_documents,
        )

        beside = json_doc_status_dir(ctx.workdir, ctx.lightrag_workspace)
        if beside is not None:  # the deployment's JsonDocStatusStorage file holds them
            return await open_json_documents(ctx, beside)

        # hexrag's keys: one prefix per LightRAG workspace (its workspaces share one Redis)
        prefix = (f"{ctx.namespace}_{ctx.lightrag_workspace}" if ctx.lightrag_workspace
                  else ctx.namespace)
        store = LightRAGRedisDocumentStore.from_url(
            url, prefix=prefix, lightrag_workspace=ctx.lightrag_workspace, **options)
    elif section == "documents":
        from hexrag.adapters.redis import RedisDocumentStore

        store = RedisDocumentStore.from_url(url, workspace=ctx.namespace, **options)
    else:
        from hexrag.adapters.redis.manifest import RedisManifestStore

        store = RedisManifestStore.from_url(url, workspace=ctx.namespace, key=ctx.manifest_key,
                                            **options)
    ctx.close_with(f"redis {section}", store.aclose)
    return store


_SECTIONS: tuple[Section, ...] = ("chunks", "documents", "kv", "manifest", "llm_cache")

OPENING = Opening(
    kind="redis",
    schemes=("redis", "rediss", "unix"),
    roles=("chunk_store", "cache"),
    sections={"hexrag": _SECTIONS, "lightrag": _SECTIONS},
    open=open_redis,
    extra="redis",
    requires=("redis",),
    examples={"chunk_store": "redis://host:6379/0", "cache": "redis://host:6379/0"},
    lightrag_storages={"chunk_store": "RedisKVStorage", "cache": "RedisKVStorage"},
)
