"""Cache port: LLM answer and keyword cache entries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["KV_NAMESPACES", "Cache"]

#: LightRAG 1.5.7's document-side key-value namespaces. Each is held by a store of the
#: :class:`Cache` shape (key -> JSON object; ``namespace`` names it): ``full_docs`` (doc id ->
#: ``content``, ``file_path``), ``full_entities`` / ``full_relations`` (doc id -> the entity
#: names / relation pairs it produced), ``entity_chunks`` / ``relation_chunks`` (entity name /
#: relation key -> the chunk ids that mention it).
KV_NAMESPACES = (
    "full_docs",
    "full_entities",
    "full_relations",
    "entity_chunks",
    "relation_chunks",
)


@runtime_checkable
class Cache(Protocol):
    """A key -> JSON object store (LightRAG's ``llm_response_cache``)."""

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Entries in request order, ``None`` for a missing key. One round trip."""
        ...

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries (replacing existing keys). Values are JSON-serialisable objects."""
        ...

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys; unknown keys are ignored."""
        ...

    async def clear(self) -> None:
        """Remove every entry of this cache's namespace (and nothing else)."""
        ...
