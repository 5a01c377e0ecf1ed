"""Cache port: LLM answer and keyword cache entries.

Declared departures
===================

hexrag's own caches give back each entry as written (JSON semantics). A layout serving another
system's cache in place (LightRAG's Redis ``llm_response_cache``) stamps its bookkeeping into
every entry and says so with a :class:`CacheTraits` record as its ``traits`` attribute; a cache
without one keeps the port's rule (:func:`cache_traits_of`). The contract suite
(:mod:`hexrag.testing.cache`) reads the record:

* ``stamped_keys``: keys the layout writes into every entry itself (``RedisKVStorage``'s
  ``_id``, ``create_time``, ``update_time``): every entry reads back with each of them, the
  rest of the entry as written; they are compared by presence only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["KV_NAMESPACES", "PORT_CACHE_TRAITS", "Cache", "CacheTraits", "cache_traits_of"]

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


@dataclass(frozen=True, slots=True)
class CacheTraits:
    """What a cache declares about the entries it gives back (see the module docstring); the
    defaults are the port's own rule."""

    stamped_keys: frozenset[str] = field(default_factory=frozenset)

    def view(self, entry: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """``entry`` without the stamped keys (``None`` stays ``None``)."""
        if entry is None:
            return None
        return {k: v for k, v in entry.items() if k not in self.stamped_keys}


#: The port's own rule (what a cache without a ``traits`` attribute keeps).
PORT_CACHE_TRAITS = CacheTraits()


def cache_traits_of(cache: object) -> CacheTraits:
    """``cache.traits`` when the cache declares them, else :data:`PORT_CACHE_TRAITS`."""
    traits = getattr(cache, "traits", None)
    return traits if isinstance(traits, CacheTraits) else PORT_CACHE_TRAITS
