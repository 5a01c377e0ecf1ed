"""The Cache port on Redis string keys holding JSON objects: :class:`RedisKV`, written once for
every layout (:mod:`hexrag.adapters.redis.layouts`), and :class:`RedisCache`, hexrag's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hexrag.adapters.redis._base import RedisStore
from hexrag.adapters.redis._fastjson import decode_objects
from hexrag.adapters.redis._scan import scan_page
from hexrag.adapters.redis.layouts import RedisRecords
from hexrag.ports.cache import CacheTraits
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

__all__ = ["RedisCache", "RedisKV"]


class RedisKV(RedisRecords):
    """The :class:`~hexrag.ports.Cache` port on one key namespace, whatever its layout (the
    record encoding, the stamps, the traits: :class:`~hexrag.adapters.redis.layouts.RedisLayout`).

    ``get_many`` is one ``MGET``, ``set_many`` one ``MSET`` (after one ``MGET`` in a stamping
    layout), ``delete_many`` one ``DEL``; ``scan_entries`` one ``SCAN`` and one ``MGET`` per
    page; ``count`` and ``clear`` walk the namespace with ``SCAN`` (O(keys in the database);
    never ``KEYS``).
    """

    @property
    def traits(self) -> CacheTraits:
        """The rules this cache declares (its layout's;
        :class:`~hexrag.ports.cache.CacheTraits`)."""
        return self._layout.cache_traits()

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Entries in request order, ``None`` for a missing key (one ``MGET``)."""
        keys = list(keys)
        return decode_objects(await self._mget(keys, "get_many"), self.keys(keys))

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries, replacing existing keys (one ``MSET``)."""
        await self._write({str(k): v for k, v in entries.items()}, "set_many")

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys (one ``DEL``); unknown keys are ignored."""
        await self._delete(list(keys), "delete_many")

    async def scan_entries(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[tuple[str, dict[str, Any]]]:
        """A page of ``(key, entry)``: one ``SCAN`` and one ``MGET``
        (:mod:`hexrag.adapters.redis._scan`, :class:`~hexrag.ports.scan.ScansCache`)."""
        items, nxt = await scan_page(self, cursor, limit, "scan_entries")
        keys = [k for k, _ in items]
        values = decode_objects([v for _, v in items], self.keys(keys))
        return Page([(k, v) for k, v in zip(keys, values, strict=True) if v is not None], nxt)

    async def count(self) -> int:
        """Number of entries (a ``SCAN`` of the namespace: O(keys)); not part of the port."""
        return await self._count("count")

    async def clear(self) -> None:
        """Remove every entry of this namespace and nothing else (``SCAN`` + ``UNLINK``)."""
        await self._clear("clear")


class RedisCache(RedisKV, RedisStore):
    """Cache entries under ``f"{workspace}:{namespace}:{key}"`` as compact JSON objects
    (hexrag's layout; :class:`RedisKV` does the work)."""

    _default_namespace = "llm_response_cache"
