"""LightRAG-compatible identifiers (``compute_mdhash_id``)."""

from __future__ import annotations

from hashlib import md5

__all__ = ["chunk_id_for_content", "entity_id", "mdhash_id", "relation_id"]


def mdhash_id(content: str, prefix: str = "") -> str:
    """``prefix + md5(content)``, LightRAG's ``compute_mdhash_id``."""
    return prefix + md5(content.encode("utf-8")).hexdigest()


def entity_id(name: str) -> str:
    """The entities-vector id of an entity: ``ent-`` + md5(name)."""
    return mdhash_id(name, "ent-")


def relation_id(src: str, tgt: str) -> str:
    """The relationships-vector id of a pair: ``rel-`` + md5(min + max)."""
    a, b = (src, tgt) if src <= tgt else (tgt, src)
    return mdhash_id(a + b, "rel-")


def chunk_id_for_content(content: str) -> str:
    """Legacy (custom-KG) chunk id: ``chunk-`` + md5(content)."""
    return mdhash_id(content, "chunk-")
