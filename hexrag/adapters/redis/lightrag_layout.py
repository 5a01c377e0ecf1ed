"""LightRAG 1.5.7's own Redis layout (``RedisKVStorage``), read and written in place.

LightRAG keeps each KV namespace under the key prefix ``[<workspace>_]<namespace>:`` with one
JSON string per record (``json.dumps`` of the record, which carries ``_id``, ``create_time`` and
``update_time``; a text chunk also ``llm_cache_list``)::

    <ws>_text_chunks:<chunk id>             {"tokens", "content", "chunk_order_index",
                                             "full_doc_id", "file_path", "llm_cache_list", ...}
    <ws>_llm_response_cache:<mode>:<type>:<hash>   {"return", "cache_type", "original_prompt",
                                                    "chunk_id", "queryparam", ...}

:class:`LightRAGRedisChunkStore` is the :class:`~hexrag.ports.ChunkStore` over the text chunks
(LightRAG's record keys other than the chunk fields become :attr:`Chunk.metadata`, as in a
working directory); :class:`LightRAGRedisCache` the :class:`~hexrag.ports.Cache` over the LLM
cache (keys are LightRAG's flattened cache ids, so LightRAG and hexrag share cached keywords).
Writes add LightRAG's bookkeeping fields (``_id``, ``create_time``/``update_time``,
``llm_cache_list``) as ``RedisKVStorage.upsert`` does, so LightRAG reads what hexrag writes.
Reads are one ``MGET``; writes one ``MSET``; scans ``SCAN`` + ``MGET`` per page.

The stores are hexrag's Redis chunk store and cache
(:class:`~hexrag.adapters.redis.chunk_presence.RedisChunks`,
:class:`~hexrag.adapters.redis.cache.RedisKV`) on LightRAG's layout strategy
(:class:`~hexrag.adapters.redis.layouts.LightRAGRedisLayout`); the classes here only construct
them (LightRAG's key prefix, its workspace rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from hexrag.adapters.redis.cache import RedisKV
from hexrag.adapters.redis.chunk_presence import RedisChunks
from hexrag.adapters.redis.layouts import (
    LightRAGRedisLayout,
    RedisLayout,
    RedisRecords,
    lightrag_key_prefix,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["LightRAGRedisCache", "LightRAGRedisChunkStore", "lightrag_key_prefix"]


class _LightRAGRedis(RedisRecords):
    """A namespace under LightRAG's key prefix ``[<workspace>_]<namespace>:``, in LightRAG's
    stamping layout."""

    _lightrag_namespace: ClassVar[str]
    _layout: RedisLayout = LightRAGRedisLayout(stamps=True)

    def __init__(self, client: Redis, *, workspace: str = "", owns_client: bool = False) -> None:
        namespace = self._lightrag_namespace
        super().__init__(client, workspace="lightrag", namespace=namespace, owns_client=owns_client)
        self._workspace = workspace
        self._prefix = lightrag_key_prefix(namespace, workspace)

    @classmethod
    def from_url(cls, url: str, *, workspace: str = "", **client_options: Any) -> Any:
        """A store on a new client for ``url``; no connection is opened until first use."""
        return cls._with_new_client(url, client_options, workspace=workspace)


class LightRAGRedisChunkStore(RedisChunks, _LightRAGRedis):
    """``<ws>_text_chunks:*`` (LightRAG's text chunks) as a :class:`~hexrag.ports.ChunkStore`."""

    _lightrag_namespace = "text_chunks"


class LightRAGRedisCache(RedisKV, _LightRAGRedis):
    """``<ws>_llm_response_cache:*`` (LightRAG's LLM cache) as a :class:`~hexrag.ports.Cache`."""

    _lightrag_namespace = "llm_response_cache"
