"""LightRAG 1.5.7's "clear every document" (``DELETE /documents``) on hexrag's ports.

LightRAG's ``clear_documents`` drops, each on its own, ``text_chunks``, ``full_docs``,
``full_entities``, ``full_relations``, ``entity_chunks``, ``relation_chunks``, the three
vector indexes, the graph and ``doc_status``; the LLM response cache is kept. A failure of
one drop is recorded and the others still run. :func:`clear_all` does the same through the
stack's ports: the key-value sections are cleared (``Cache.clear``), every other section is
emptied by scanning its records (the :mod:`hexrag.ports.scan` capabilities) and deleting
them; hexrag's document rows and description fragments go with ``doc_status``. The answer
cache is made stale by the stores' versioning wrappers, as for every write.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hexrag.ports.scan import scan_all

__all__ = ["ClearReport", "clear_all"]

#: Ids deleted per call.
_BATCH = 1000


@dataclass
class ClearReport:
    """What :func:`clear_all` did: sections emptied, and one message per failed section."""

    dropped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def _collect(scan: Callable[..., Awaitable[Any]], key: Callable[[Any], Any]) -> list[Any]:
    keys: list[Any] = []
    async for page in scan_all(scan):
        keys.extend(key(item) for item in page.items)
    return list(dict.fromkeys(keys))


async def _delete(keys: list[Any], delete: Callable[[list[Any]], Awaitable[Any]]) -> None:
    for start in range(0, len(keys), _BATCH):
        await delete(keys[start:start + _BATCH])


def _scanner(store: Any, method: str, section: str) -> Callable[..., Awaitable[Any]]:
    scan = getattr(store, method, None)
    if scan is None:
        raise TypeError(f"{section} cannot list its records (no {method})")
    return scan  # type: ignore[no-any-return]


async def _drop_vectors(store: Any, section: str) -> None:
    ids = await _collect(_scanner(store, "scan_records", section), lambda r: r.id)
    await _delete(ids, store.delete)


async def _drop_graph(graph: Any) -> None:
    edges = await _collect(_scanner(graph, "scan_edges", "graph"), lambda r: r.id)
    await _delete(edges, graph.delete_edges)
    nodes = await _collect(_scanner(graph, "scan_nodes", "graph"), lambda e: e.name)
    await _delete(nodes, graph.delete_nodes)


async def _drop_chunks(store: Any) -> None:
    ids = await _collect(_scanner(store, "scan_chunks", "chunk_store"), lambda c: c.id)
    await _delete(ids, store.delete_chunks)


async def _drop_documents(documents: Any) -> None:
    chunk_ids = await _collect(_scanner(documents, "scan_fragments", "documents"),
                               lambda f: f.chunk_id)
    await _delete(chunk_ids, documents.delete_fragments_of_chunks)
    ids = [row.id for row in await documents.list_docs()]
    await _delete(ids, documents.delete_docs)


async def clear_all(*, entities: Any, relationships: Any, chunks: Any, graph: Any,
                    chunk_store: Any, documents: Any = None,
                    kv: Mapping[str, Any] | None = None) -> ClearReport:
    """Empty every section given, in LightRAG's order; never raises for one section's
    failure (it is in the report's ``errors``, as LightRAG's ``Error dropping ...``)."""
    kv = kv or {}
    steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("text_chunks", lambda: _drop_chunks(chunk_store)),
        *[(ns, kv[ns].clear) for ns in ("full_docs", "full_entities", "full_relations",
                                         "entity_chunks", "relation_chunks") if ns in kv],
        ("entities", lambda: _drop_vectors(entities, "entities")),
        ("relationships", lambda: _drop_vectors(relationships, "relationships")),
        ("chunks", lambda: _drop_vectors(chunks, "chunks")),
        ("graph", lambda: _drop_graph(graph)),
    ]
    if documents is not None:
        steps.append(("doc_status", lambda: _drop_documents(documents)))
    report = ClearReport()
    for name, step in steps:
        try:
            await step()
        except Exception as exc:  # recorded, as LightRAG records a failed drop
            report.errors.append(f"Error dropping {name}: {type(exc).__name__}")
        else:
            report.dropped.append(name)
    return report
