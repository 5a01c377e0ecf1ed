"""``RedisManifestStore``: a stack's manifest as one Redis key under the stack's prefix,
``f"{workspace}:manifest:{key}"`` (hexrag's layout: ``<namespace>:manifest:stack``; beside a
LightRAG deployment: ``hexrag:manifest:<LightRAG workspace>``, a key LightRAG never reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hexrag.adapters.redis._base import RedisNamespace, translate_errors
from hexrag.adapters.redis.convert import decode_object, encode_object
from hexrag.ports.stack import StackManifest

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisManifestStore"]


class RedisManifestStore(RedisNamespace):
    """The :class:`~hexrag.ports.stack.ManifestStore` of a Redis-backed stack."""

    def __init__(
        self, client: Redis, *, workspace: str = "hexrag", key: str = "stack",
        owns_client: bool = False,
    ) -> None:
        super().__init__(client, workspace=workspace, namespace="manifest",
                         owns_client=owns_client)
        self._item = key

    @classmethod
    def from_url(
        cls, url: str, *, workspace: str = "hexrag", key: str = "stack", **client_options: Any
    ) -> RedisManifestStore:
        """A manifest store on a new client for ``url`` (no connection until first use)."""
        return cls._with_new_client(url, client_options, workspace=workspace, key=key)

    async def read(self) -> StackManifest | None:
        """The stored manifest (one ``GET``; ``None``: no key)."""
        with translate_errors("reading the manifest"):
            raw = await self._client.get(self.key(self._item))
        if raw is None:
            return None
        data = decode_object(raw, key=self.key(self._item))
        return StackManifest.from_json(data, where=f"redis key {self.key(self._item)}")

    async def write(self, manifest: StackManifest) -> None:
        """Store ``manifest`` (one ``SET``)."""
        with translate_errors("writing the manifest"):
            await self._client.set(self.key(self._item), encode_object(manifest.to_json()))
