"""``RedisCache``: the Cache port on Redis string keys holding JSON objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hexrag.adapters.redis._base import RedisStore
from hexrag.adapters.redis._scan import scan_page
from hexrag.adapters.redis.convert import decode_object, encode_object
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

__all__ = ["RedisCache"]


class RedisCache(RedisStore):
    """Cache entries under ``f"{workspace}:{namespace}:{key}"`` as JSON objects.

    ``get_many`` is one ``MGET``, ``set_many`` one ``MSET``, ``delete_many`` one ``DEL``;
    ``clear`` walks the namespace with ``SCAN`` (O(keys in the database); never ``KEYS``).
    """

    _default_namespace = "llm_response_cache"

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Entries in request order, ``None`` for a missing key (one ``MGET``)."""
        keys = list(keys)
        raw = await self._mget(keys, "get_many")
        return [
            None if value is None else decode_object(value, key=self.key(k))
            for k, value in zip(keys, raw, strict=True)
        ]

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries, replacing existing keys (one ``MSET``)."""
        mapping = {self.key(k): encode_object(v) for k, v in entries.items()}
        await self._mset(mapping, "set_many")

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys (one ``DEL``); unknown keys are ignored."""
        await self._delete(list(keys), "delete_many")

    async def scan_entries(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[tuple[str, dict[str, Any]]]:
        """A page of entries: one ``SCAN`` and one ``MGET``
        (:mod:`hexrag.adapters.redis._scan`, :class:`~hexrag.ports.scan.ScansCache`)."""
        items, nxt = await scan_page(self, cursor, limit, "scan_entries")
        return Page(
            [(key, decode_object(value, key=self.key(key))) for key, value in items], nxt
        )

    async def count(self) -> int:
        """Number of entries (a ``SCAN`` of the namespace: O(keys)); not part of the port."""
        return await self._count("count")

    async def clear(self) -> None:
        """Remove every entry of this namespace and nothing else (``SCAN`` + ``UNLINK``)."""
        await self._clear("clear")
