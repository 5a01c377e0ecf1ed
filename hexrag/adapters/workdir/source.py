"""A LightRAG working directory opened as the source of a copy (migration, export).

:func:`open_workdir_source` gives the three vector sections as
:class:`~hexrag.adapters.workdir.stream.NanoVectorStream` objects (read page by page, so the
largest files never sit in memory) and loads the graph, the chunks, the LLM cache, the
documents and LightRAG's key-value namespaces as
:func:`~hexrag.adapters.workdir.load_workdir` loads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hexrag.domain.errors import ConfigurationError
from hexrag.ports.stack import Stack

from .kv import load_kv
from .stack import (
    GRAPH_FILE,
    VDB_FILES,
    _gc_paused,
    load_chunk_store,
    load_documents,
    load_graph,
    load_llm_cache,
)
from .stream import NanoVectorStream

__all__ = ["close_workdir_source", "open_workdir_source"]


def open_workdir_source(path: str | Path, *, embedding_model: str | None = None) -> Any:
    """The stores of the working directory ``path`` for a copy (migration, export): a
    :class:`~hexrag.ports.stack.Stack` whose vector sections are
    :class:`NanoVectorStream` objects (scan-only) and whose graph, chunk store, cache,
    documents and key-value namespaces are loaded as
    :func:`~hexrag.adapters.workdir.load_workdir` loads them.

    The directory must hold the three ``vdb_*.json`` files (an absent one is an empty
    section only when it is absent altogether: use :func:`load_workdir` for partial
    directories). Call :func:`close_workdir_source` (or let the process end) to release the
    files. Synchronous and CPU-bound for the graph: call it through ``asyncio.to_thread``.
    """
    directory = Path(path)
    missing = [name for name in VDB_FILES.values() if not (directory / name).is_file()]
    if missing:
        raise ConfigurationError(
            f"{directory}: {', '.join(missing)} missing; a streamed copy needs every vector file"
        )
    streams: dict[str, NanoVectorStream] = {}
    try:
        for ns, name in VDB_FILES.items():
            streams[ns] = NanoVectorStream(directory / name, ns)
        if len({s.dim for s in streams.values()}) != 1:
            listing = ", ".join(f"{VDB_FILES[ns]}={s.dim}" for ns, s in streams.items())
            raise ConfigurationError(
                f"the vector files of {directory} disagree on embedding_dim ({listing})"
            )
        with _gc_paused():
            graph = load_graph(directory / GRAPH_FILE)
            chunk_store = load_chunk_store(directory)
            cache = load_llm_cache(directory)
            documents = load_documents(directory)
            kv = load_kv(directory)
    except BaseException:
        for opened in streams.values():
            opened.close()
        raise
    return Stack(
        entities=streams["entities"],  # type: ignore[arg-type]  # scan-only sections
        relationships=streams["relationships"],  # type: ignore[arg-type]
        chunks=streams["chunks"],  # type: ignore[arg-type]
        graph=graph,
        chunk_store=chunk_store,
        cache=cache,
        embedding_model=embedding_model,
        documents=documents,
        kv=dict(kv),
    )


def close_workdir_source(stores: Any) -> None:
    """Release the files of a source from :func:`open_workdir_source`."""
    for name in ("entities", "relationships", "chunks"):
        section = getattr(stores, name, None)
        if isinstance(section, NanoVectorStream):
            section.close()
