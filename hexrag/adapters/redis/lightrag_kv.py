"""LightRAG 1.5.7's document-side key-value namespaces on Redis (``RedisKVStorage``), in place.

``RedisKVStorage`` keeps each namespace of :data:`hexrag.ports.cache.KV_NAMESPACES` under the
key prefix ``[<workspace>_]<namespace>:`` with one JSON string per record::

    <ws>_full_docs:<doc id>                 {"content", "file_path", "parse_format", ...}
    <ws>_full_entities:<doc id>             {"entity_names": [...], "count", ...}
    <ws>_full_relations:<doc id>            {"relation_pairs": [[a, b], ...], "count", ...}
    <ws>_entity_chunks:<entity name>        {"chunk_ids": [...], "count", ...}
    <ws>_relation_chunks:<a><SEP><b>        {"chunk_ids": [...], "count", ...}

each record carrying the ``_id``, ``create_time`` and ``update_time`` LightRAG's ``upsert``
stamps. :class:`LightRAGRedisKV` is the :class:`~hexrag.ports.Cache` over one namespace: a
record is stored as given (hexrag's ingestion stamps it as LightRAG does, and a copy keeps what
the source held), one ``MGET`` / ``MSET`` / ``DEL`` per call, scans ``SCAN`` + ``MGET``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hexrag.adapters.redis.layouts import LightRAGRedisLayout
from hexrag.adapters.redis.lightrag_layout import LightRAGRedisCache
from hexrag.domain.errors import ConfigurationError
from hexrag.ports.cache import KV_NAMESPACES

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["LightRAGRedisKV"]


class LightRAGRedisKV(LightRAGRedisCache):
    """``[<ws>_]<namespace>:*`` (one of LightRAG's document-side namespaces) as a
    :class:`~hexrag.ports.Cache`; records are stored exactly as given (LightRAG's layout
    without stamps, so the port's own rule)."""

    _layout = LightRAGRedisLayout(stamps=False)

    def __init__(
        self, client: Redis, *, namespace: str, workspace: str = "", owns_client: bool = False
    ) -> None:
        if namespace not in KV_NAMESPACES:
            raise ConfigurationError(
                f"unknown key-value namespace {namespace!r}; expected one of "
                f"{list(KV_NAMESPACES)}"
            )
        self._lightrag_namespace = namespace  # type: ignore[misc]  # per instance here
        super().__init__(client, workspace=workspace, owns_client=owns_client)

    @classmethod
    def from_url(  # type: ignore[override]
        cls, url: str, *, namespace: str, workspace: str = "", **client_options: Any
    ) -> LightRAGRedisKV:
        """A store on a new client for ``url``; no connection is opened until first use."""
        return cls._with_new_client(url, client_options, namespace=namespace, workspace=workspace)
