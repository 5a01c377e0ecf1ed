"""Redis adapters (``redis.asyncio``): :class:`RedisChunkStore` and :class:`RedisCache`.

Keys are ``f"{workspace}:{namespace}:{id}"`` and values are JSON documents. Every port
method is one round trip (``MGET``, ``MSET``, one ``DEL`` with many keys), except
``count``/``clear`` which walk the namespace with ``SCAN`` (O(keys), never ``KEYS``).
Needs the ``redis`` extra (``pip install hexrag[redis]``). Single-node Redis (or a
sentinel-managed primary): multi-key commands are not cluster-slot aware.
"""

from __future__ import annotations

from hexrag.adapters.redis.cache import RedisCache
from hexrag.adapters.redis.chunk_store import RedisChunkStore
from hexrag.adapters.redis.convert import chunk_from_json, chunk_to_json
from hexrag.adapters.redis.document_store import RedisDocumentStore

__all__ = [
    "RedisCache", "RedisChunkStore", "RedisDocumentStore", "chunk_from_json", "chunk_to_json",
]
