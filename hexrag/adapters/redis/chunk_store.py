"""``RedisChunkStore``: the ChunkStore port on Redis string keys holding JSON (hexrag's layout)."""

from __future__ import annotations

from hexrag.adapters.redis._base import RedisStore
from hexrag.adapters.redis.chunk_presence import RedisChunks

__all__ = ["RedisChunkStore"]


class RedisChunkStore(RedisChunks, RedisStore):
    """Chunks under ``f"{workspace}:{namespace}:{chunk_id}"`` as flat JSON records.

    :func:`~hexrag.adapters.redis.convert.chunk_to_json` describes the value shape;
    :class:`~hexrag.adapters.redis.chunk_presence.RedisChunks` does the work.
    ``get_chunks`` is one ``MGET``, ``upsert_chunks`` one ``MSET``, ``delete_chunks`` one
    ``DEL``. ``count`` walks the namespace with ``SCAN`` (O(number of keys in the
    database), several round trips; never ``KEYS``).
    """

    _default_namespace = "text_chunks"
