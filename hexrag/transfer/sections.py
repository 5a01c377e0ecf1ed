"""The declared list of a stack's sections, and how each one is read, written and encoded.

Every transfer (:func:`~hexrag.transfer.migrate.migrate_stack`,
:func:`~hexrag.transfer.archive.export_stack`, :func:`~hexrag.transfer.archive.import_archive`)
and every digest (:mod:`hexrag.transfer.digests`) goes through :data:`SECTIONS`; a store of
the stack (a field of :class:`~hexrag.transfer.StackStores`) maps to its sections in
:data:`FIELD_SECTIONS`, and a test fails when a field has no sections here.

==================  =======================  =============================================
section             store (StackStores)      record (archive line)
==================  =======================  =============================================
``entities``        ``entities``             ``VectorRecord`` + its stored vector
``relationships``   ``relationships``        ``VectorRecord`` + its stored vector
``chunks``          ``chunks``               ``VectorRecord`` + its stored vector
``nodes``           ``graph``                ``Entity``
``edges``           ``graph``                ``Relation`` (with its id)
``text_chunks``     ``chunk_store``          ``Chunk``
``llm_cache``       ``cache``                ``{"key", "value"}``
``doc_status``      ``documents``            ``{"id", "record"}`` (LightRAG's status row)
``fragments``       ``documents``            ``Fragment.to_json()``
``full_docs`` ...   ``kv[namespace]``        ``{"key", "value"}``, one section for each of
                                             :data:`~hexrag.ports.cache.KV_NAMESPACES`
==================  =======================  =============================================

A section is *held* by a stack when its store is there (``cache``, ``documents`` and each
``kv`` namespace are optional). :func:`plan_sections` refuses, before anything is written, a
transfer whose source holds records in a section the target cannot store: nothing is dropped
silently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from hexrag.core.documents import DocRecord, Fragment
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import Chunk, Entity, Relation
from hexrag.ports.cache import KV_NAMESPACES
from hexrag.ports.scan import (
    DEFAULT_SCAN_LIMIT,
    Page,
    ScansCache,
    ScansChunks,
    ScansGraph,
    ScansVectorIndex,
    check_scan_limit,
)
from hexrag.transfer.codec import decode, encode

__all__ = [
    "CACHE_SECTIONS",
    "FIELD_SECTIONS",
    "NOT_SECTIONS",
    "SECTIONS",
    "VECTOR_SECTIONS",
    "SectionError",
    "decode_line",
    "encode_line",
    "held_sections",
    "holds_records",
    "plan_sections",
    "scanner",
    "section_store",
    "writer",
]

VECTOR_SECTIONS = ("entities", "relationships", "chunks")
#: Sections of ``(key, value)`` entries (the LLM cache and LightRAG's KV namespaces).
CACHE_SECTIONS = ("llm_cache", *KV_NAMESPACES)
SECTIONS: tuple[str, ...] = (
    *VECTOR_SECTIONS, "nodes", "edges", "text_chunks", "llm_cache", "doc_status", "fragments",
    *KV_NAMESPACES,
)
"""Every section of a stack, in transfer order (nodes before edges)."""

FIELD_SECTIONS: dict[str, tuple[str, ...]] = {
    "entities": ("entities",),
    "relationships": ("relationships",),
    "chunks": ("chunks",),
    "graph": ("nodes", "edges"),
    "chunk_store": ("text_chunks",),
    "cache": ("llm_cache",),
    "documents": ("doc_status", "fragments"),
    "kv": KV_NAMESPACES,
}
"""The sections each store of :class:`~hexrag.transfer.StackStores` holds."""

#: Fields of the stack value that hold no records: the embedding model travels in the
#: archive's manifest and is checked against the target's (``check_fits``); ``manifest`` is
#: where each stack records its own model (the target records it when it is written);
#: ``closers`` release clients; ``scan_only`` says how the source was opened.
NOT_SECTIONS = frozenset({"embedding_model", "manifest", "closers", "scan_only"})

Scan = Callable[..., Awaitable[Page[Any]]]
Write = Callable[[Sequence[Any]], Awaitable[None]]


class SectionError(ConfigurationError):
    """A section cannot be read from the source or stored by the target."""


def section_store(stores: Any, name: str) -> Any:
    """The store holding section ``name`` in ``stores`` (``None``: the stack has none)."""
    if name in VECTOR_SECTIONS:
        return getattr(stores, name)
    if name in ("nodes", "edges"):
        return stores.graph
    if name == "text_chunks":
        return stores.chunk_store
    if name == "llm_cache":
        return getattr(stores, "cache", None)
    if name in ("doc_status", "fragments"):
        return getattr(stores, "documents", None)
    if name in KV_NAMESPACES:
        return (getattr(stores, "kv", None) or {}).get(name)
    raise SectionError(f"unknown section {name!r}")


def held_sections(stores: Any) -> list[str]:
    """The sections ``stores`` holds, in :data:`SECTIONS` order."""
    return [name for name in SECTIONS if section_store(stores, name) is not None]


def _doc_pages(store: Any) -> Scan:
    """``list_docs`` (one call, read once) served in pages; cursors are row offsets."""
    rows: list[DocRecord] | None = None

    async def scan(cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
                   ) -> Page[DocRecord]:
        nonlocal rows
        check_scan_limit(limit)
        if rows is None:
            rows = await store.list_docs()
        try:
            start = int(cursor) if cursor is not None else 0
        except ValueError:
            raise SectionError(f"not a doc_status cursor: {cursor!r}") from None
        end = start + limit
        return Page(rows[start:end], str(end) if end < len(rows) else None)

    return scan


_CAPABILITY: dict[str, tuple[type, str]] = {
    "nodes": (ScansGraph, "scan_nodes"),
    "edges": (ScansGraph, "scan_edges"),
    "text_chunks": (ScansChunks, "scan_chunks"),
}


def scanner(stores: Any, name: str, *, side: str = "the source") -> Scan:
    """The scan method listing section ``name`` of ``stores`` (see :mod:`hexrag.ports.scan`).

    Raises :class:`SectionError` when the stack does not hold the section or its store
    cannot list its records."""
    store = section_store(stores, name)
    if store is None:
        raise SectionError(f"{side} stack holds no {name} section")
    capability: type
    if name in VECTOR_SECTIONS:
        capability, method = ScansVectorIndex, "scan_records"
    elif name in CACHE_SECTIONS:
        capability, method = ScansCache, "scan_entries"
    elif name == "doc_status":
        return _doc_pages(store)
    elif name == "fragments":
        if not callable(getattr(store, "scan_fragments", None)):
            raise SectionError(
                f"{type(store).__name__} cannot list its fragments ({side} {name})"
            )
        return store.scan_fragments  # type: ignore[no-any-return]
    else:
        capability, method = _CAPABILITY[name]
    if not isinstance(store, capability):
        raise SectionError(
            f"{type(store).__name__} cannot list its records ({side} {name} section has "
            "no scan capability)"
        )
    return getattr(store, method)  # type: ignore[no-any-return]


def writer(stores: Any, name: str) -> Write | None:
    """The write method storing a page of section ``name`` in ``stores`` (``None``: the
    stack cannot hold the section)."""
    store = section_store(stores, name)
    if store is None:
        return None
    if name in VECTOR_SECTIONS:
        return store.upsert  # type: ignore[no-any-return]
    if name == "nodes":
        return store.upsert_nodes  # type: ignore[no-any-return]
    if name == "edges":
        return store.upsert_edges  # type: ignore[no-any-return]
    if name == "text_chunks":
        return store.upsert_chunks  # type: ignore[no-any-return]
    if name == "doc_status":
        return store.upsert_docs  # type: ignore[no-any-return]
    if name == "fragments":
        return store.add_fragments  # type: ignore[no-any-return]

    async def set_entries(items: Sequence[tuple[str, dict[str, Any]]]) -> None:
        await store.set_many(dict(items))

    return set_entries


async def holds_records(stores: Any, name: str) -> bool:
    """Whether section ``name`` of ``stores`` holds at least one record."""
    store = section_store(stores, name)
    if store is None:
        return False
    if name == "doc_status":
        return bool(await store.list_docs())
    if name == "fragments":
        return int(await store.count_fragments()) > 0
    cursor: str | None = None
    scan = scanner(stores, name)
    while True:  # a page may be empty while records remain (Redis SCAN)
        page = await scan(cursor, limit=100)
        if page.items:
            return True
        if page.cursor is None:
            return False
        cursor = page.cursor


async def plan_sections(source: Any, target: Any, *, what: str = "copy") -> list[str]:
    """The sections to copy from ``source`` into ``target``: every section the source holds.

    Raises :class:`SectionError` before anything is written when the source holds records
    in a section the target has no store for, or a source section cannot be listed."""
    plan: list[str] = []
    for name in held_sections(source):
        scanner(source, name)  # fails early without a scan capability
        if writer(target, name) is None:
            if await holds_records(source, name):
                raise SectionError(
                    f"cannot {what}: the source holds {name} records and the target stack "
                    f"has no store for the {name} section (configure one; nothing was written)"
                )
            continue
        plan.append(name)
    return plan


def encode_line(name: str, item: Any) -> dict[str, Any]:
    """The archive line (JSON object) of one record of section ``name`` (vectors: without
    the vector)."""
    if name in CACHE_SECTIONS:
        key, value = item
        return {"key": key, "value": value}
    if name == "doc_status":
        return {"id": item.id, "record": item.to_json()}
    if name == "fragments":
        return item.to_json()  # type: ignore[no-any-return]
    return encode(item)


_KINDS: dict[str, type] = {"nodes": Entity, "edges": Relation, "text_chunks": Chunk}


def decode_line(name: str, data: dict[str, Any]) -> Any:
    """The record of section ``name`` from its archive line (not for vector sections)."""
    if name in CACHE_SECTIONS:
        return (str(data["key"]), data["value"])
    if name == "doc_status":
        return DocRecord.from_json(str(data["id"]), data["record"])
    if name == "fragments":
        return Fragment.from_json(data)
    return decode(_KINDS[name], data)
