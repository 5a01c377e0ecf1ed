"""Open a LightRAG working directory into the memory adapters, and write one back.

A LightRAG working directory (default storages: JsonKV + NanoVectorDB + NetworkX) holds::

    vdb_entities.json  vdb_relationships.json  vdb_chunks.json     NanoVectorDB (vectors)
    graph_chunk_entity_relation.graphml                            NetworkX GraphML
    kv_store_text_chunks.json                                      chunk text + metadata
    kv_store_llm_response_cache.json                               keyword / answer cache
    kv_store_doc_status.json + kv_store_hexrag_fragments.json     documents (ingest, delete)
    kv_store_{full_docs,full_entities,full_relations,             LightRAG's document-side
              entity_chunks,relation_chunks}.json                 key-value namespaces
    other kv_store_*.json                                         kept byte for byte

or the same set in ``<working_dir>/<workspace>/``. :func:`load_workdir` turns it into a
:class:`WorkdirStack` of memory adapters; :func:`save_workdir` writes a stack back in the same
format, so LightRAG 1.5.7 opens what hexrag wrote (and vice versa).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np

from hexrag.adapters.memory import (
    MemoryCache,
    MemoryChunkStore,
    MemoryDocumentStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.workdir._sync_run import run_now
from hexrag.adapters.workdir.convert import (
    chunk_from_kv,
    chunk_to_kv,
    edge_to_relation,
    entity_to_node,
    migrate_legacy_cache,
    node_to_entity,
    record_to_vector_row,
    relation_ids_for_edges,
    relation_to_edge,
    vector_row_to_record,
)
from hexrag.adapters.workdir.files import (
    DOC_STATUS_FILE,
    FRAGMENTS_FILE,
    GRAPH_FILE,
    LLM_CACHE_FILE,
    TEXT_CHUNKS_FILE,
    VDB_FILES,
    AtomicWriter,
    is_lightrag_file,
    read_json_kv,
    write_json_kv,
)
from hexrag.adapters.workdir.graphml import read_graphml, write_graphml
from hexrag.adapters.workdir.kv import kv_file_name, load_kv, stage_kv
from hexrag.adapters.workdir.nanovdb import read_nano_vdb, write_nano_vdb
from hexrag.adapters.workdir.row_vectors import NanoRowVectorIndex
from hexrag.adapters.workdir.validate import (
    BlankFile,
    blank_files,
    require_records,
    require_whole_files,
    validate_kv_bytes,
)
from hexrag.core.query.source_ids import join_source_ids, parse_source_ids
from hexrag.domain.errors import ConfigurationError, NotFound
from hexrag.domain.records import Relation
from hexrag.ports.cache import KV_NAMESPACES
from hexrag.ports.stack import Stack

__all__ = [
    "WorkdirStack",
    "empty_workdir_stack",
    "load_graph",
    "load_workdir",
    "resolve_workdir",
    "save_graph",
    "save_workdir",
]

NAMESPACES = ("entities", "relationships", "chunks")
_T = TypeVar("_T")


def _empty_kv() -> dict[str, MemoryCache]:
    return {ns: MemoryCache(ns) for ns in KV_NAMESPACES}


@dataclass(kw_only=True)
class WorkdirStack(Stack):
    """The one :class:`~hexrag.ports.stack.Stack`, held by the memory adapters of one
    LightRAG working directory, with what writing the files back needs.

    ``entities``/``relationships``/``chunks`` are the three vector indexes, ``graph`` the
    knowledge graph, ``chunk_store`` the text chunks, ``cache`` the LLM response cache.
    ``documents`` holds the document status rows and description fragments (rewritten on save
    only when changed). ``extra_files`` keeps the other ``kv_store_*.json`` files (full
    documents, entity/relation chunk lists...) byte for byte for :func:`save_workdir`;
    ``vdb_additional_data`` keeps NanoVectorDB's optional ``additional_data``.
    ``timings`` holds the seconds each file took to load.
    """

    entities: MemoryVectorIndex
    relationships: MemoryVectorIndex
    chunks: MemoryVectorIndex
    graph: MemoryGraphStore
    chunk_store: MemoryChunkStore
    cache: MemoryCache
    embedding_dim: int
    source: Path | None = None
    extra_files: dict[str, bytes] = field(default_factory=dict)
    vdb_additional_data: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    documents: MemoryDocumentStore = field(default_factory=MemoryDocumentStore)
    #: LightRAG's document-side key-value namespaces (``kv_store_<namespace>.json``, see
    #: :mod:`hexrag.adapters.workdir.kv`), every one of
    #: :data:`~hexrag.ports.cache.KV_NAMESPACES`.
    kv: dict[str, MemoryCache] = field(default_factory=_empty_kv)  # type: ignore[assignment]

    def stack_stores(self) -> dict[str, Any]:
        """Every section by its :class:`~hexrag.ports.stack.Stack` field name (the engine's
        stores, ``documents`` and ``kv``)."""
        return {**self.engine_stores(), "documents": self.documents, "kv": dict(self.kv)}

    def vector_index(self, namespace: str) -> MemoryVectorIndex:
        """The index of ``namespace`` (``entities``, ``relationships`` or ``chunks``)."""
        index: MemoryVectorIndex = getattr(self, namespace)
        return index


def _run_now(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine of a memory adapter to completion without an event loop.

    Memory adapters are async only to satisfy the ports; they never suspend, so one ``send``
    finishes them. This keeps :func:`load_workdir` callable from sync code and from inside a
    running loop alike.
    """
    return run_now(coro, "a memory adapter coroutine suspended; it must not do I/O")


def _check_workspace(workspace: str) -> None:
    if not workspace or "/" in workspace or "\\" in workspace or workspace in (".", ".."):
        raise ConfigurationError(
            f"invalid workspace {workspace!r}: it must be one directory name "
            "(no '/', '\\', '.' or '..')"
        )


def _lightrag_files(directory: Path) -> list[str]:
    try:
        return sorted(
            p.name for p in directory.iterdir() if p.is_file() and is_lightrag_file(p.name)
        )
    except OSError:
        return []


def _workspaces(directory: Path) -> list[str]:
    out = []
    try:
        for p in sorted(directory.iterdir()):
            if p.is_dir() and _lightrag_files(p):
                out.append(p.name)
    except OSError:
        pass
    return out


def resolve_workdir(path: str | Path, workspace: str | None = None) -> Path:
    """The directory holding the LightRAG files of ``path`` (and ``workspace``).

    Raises :class:`~hexrag.core.errors.NotFound` (naming the path) when the directory does not
    exist or holds no LightRAG file (listing the workspaces it does hold, if any), and
    :class:`~hexrag.core.errors.ConfigurationError` for an unsafe workspace name.
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise NotFound(f"LightRAG working directory not found: {root}")
    if not root.is_dir():
        raise NotFound(f"not a directory: {root} (expected a LightRAG working directory)")
    directory = root
    if workspace:
        _check_workspace(workspace)
        directory = root / workspace
        if not directory.is_dir():
            found = _workspaces(root)
            hint = f"; workspaces found: {', '.join(found)}" if found else ""
            raise NotFound(f"workspace {workspace!r} not found in {root}{hint}")
    if not _lightrag_files(directory):
        found = _workspaces(directory)
        if found:
            raise NotFound(
                f"{directory} holds no LightRAG files itself but has workspace sub-directories: "
                f"{', '.join(found)} (choose one with the workspace option)"
            )
        raise NotFound(
            f"{directory} is not a LightRAG working directory: none of vdb_*.json, "
            f"{GRAPH_FILE} or kv_store_*.json is there"
        )
    return directory


def empty_workdir_stack(dim: int, *, cosine_threshold: float = 0.2) -> WorkdirStack:
    """A new, empty stack of the working-directory adapters (NanoVectorDB order, float16 chunk
    row vectors), to fill (an import or a migration target) and write with :func:`save_workdir`."""
    return WorkdirStack(
        entities=MemoryVectorIndex(
            "entities", dim, cosine_threshold=cosine_threshold, tie_order="nanovectordb"
        ),
        relationships=MemoryVectorIndex(
            "relationships", dim, cosine_threshold=cosine_threshold, tie_order="nanovectordb"
        ),
        chunks=NanoRowVectorIndex(
            "chunks", dim, cosine_threshold=cosine_threshold, tie_order="nanovectordb"
        ),
        graph=MemoryGraphStore(),
        chunk_store=MemoryChunkStore(),
        cache=MemoryCache("llm_response_cache"),
        embedding_dim=dim,
    )


def _peek_dim(path: Path) -> int | None:
    """``embedding_dim`` from the head of a NanoVectorDB file, without reading the rest."""
    with open(path, "rb") as fh:
        head = fh.read(64)
    prefix = b'{"embedding_dim": '
    if not head.startswith(prefix):
        return None
    digits = head[len(prefix) :].split(b",", 1)[0].strip()
    return int(digits) if digits.isdigit() else None


def _dim_error(path: Path, file_dim: int, embedder_dim: int) -> ConfigurationError:
    return ConfigurationError(
        f"embedding dimension mismatch: {path} stores {file_dim}-dimensional vectors but the "
        f"configured embedder produces {embedder_dim}; query embeddings must come from the "
        "model that built this directory (choose the matching embedder)"
    )


def load_workdir(
    path: str | Path,
    *,
    workspace: str | None = None,
    embedder_dim: int | None = None,
    cosine_threshold: float = 0.2,
    require_complete: bool = False,
) -> WorkdirStack:
    """Open a LightRAG working directory into memory adapters.

    With ``require_complete`` (the CLI and the server), a directory that holds some but not
    all of the five files queries read (``vdb_entities.json``, ``vdb_relationships.json``,
    ``vdb_chunks.json``, ``graph_chunk_entity_relation.graphml``,
    ``kv_store_text_chunks.json``) is refused with a
    :class:`~hexrag.core.errors.ConfigurationError` naming the missing ones. A *fresh*
    directory, holding none of the five (LightRAG created it, nothing was inserted yet),
    loads as an empty stack.

    * Vectors: each NanoVectorDB matrix is decoded once into the index's own array (see
      :mod:`hexrag.adapters.workdir.nanovdb`). The per-row float16 copies are dropped, except
      for chunks: LightRAG's VECTOR chunk picking ranks with them, so the chunks index keeps
      them (2 bytes per value; :class:`~hexrag.adapters.workdir.row_vectors.NanoRowVectorIndex`).
    * ``embedding_dim`` of every ``vdb_*.json`` must equal ``embedder_dim`` (when given) and
      each other, else :class:`~hexrag.core.errors.ConfigurationError` names both numbers and
      the file.
    * Graph: nodes and relations are inserted in ``nx.read_graphml`` order, so neighbour order
      (which LightRAG's results depend on) is LightRAG's. A relation's id is
      :func:`hexrag.core.ingest.ids.relation_id` of its pair, LightRAG's relationship-vector id.
    * Missing optional files give empty stores. Raises
      :class:`~hexrag.core.errors.NotFound` for a missing directory or one without any LightRAG
      file, :class:`~hexrag.core.errors.ConfigurationError` for malformed files (naming them).

    This is CPU-bound, synchronous work; call it through ``asyncio.to_thread`` from a server.
    The cyclic garbage collector is paused while loading (millions of acyclic objects are
    created; collecting repeatedly over them roughly doubled the load time) and restored after.
    """
    directory = resolve_workdir(path, workspace)
    if require_complete:
        missing = missing_query_files(directory)
        if missing and len(missing) < len(QUERY_FILES):
            raise ConfigurationError(
                f"{directory} is an incomplete LightRAG working directory: "
                f"{', '.join(missing)} missing (queries would silently miss that data)"
            )
        blank = blank_files(directory, QUERY_FILES)
        if blank and len(blank) + len(missing) < len(QUERY_FILES):
            raise ConfigurationError(
                f"{', '.join(str(directory / n) for n in blank)}: empty file(s) in a LightRAG "
                "working directory whose other files hold data (a truncated copy? queries "
                "would silently miss that data)"
            )
    with _gc_paused():
        return _load(directory, embedder_dim=embedder_dim, cosine_threshold=cosine_threshold)


QUERY_FILES = (*VDB_FILES.values(), GRAPH_FILE, TEXT_CHUNKS_FILE)
"""The files of a working directory that queries read."""


def missing_query_files(directory: Path) -> list[str]:
    """The :data:`QUERY_FILES` absent from ``directory``."""
    return [name for name in QUERY_FILES if not (directory / name).is_file()]


@contextmanager
def _gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _load(directory: Path, *, embedder_dim: int | None, cosine_threshold: float) -> WorkdirStack:
    timings: dict[str, float] = {}
    require_whole_files(directory)  # a vector or graph file cut after its last record

    # 1. dimensions first: fail fast, before decoding anything large
    vdb_paths = {ns: directory / name for ns, name in VDB_FILES.items()}
    present = {ns: p for ns, p in vdb_paths.items() if p.is_file()}
    dims: dict[str, int] = {}
    for ns, p in present.items():
        d = _peek_dim(p)
        if d is not None:
            if embedder_dim is not None and d != embedder_dim:
                raise _dim_error(p, d, embedder_dim)
            dims[ns] = d

    indexes: dict[str, MemoryVectorIndex] = {}
    additional: dict[str, Any] = {}
    for ns, p in present.items():
        t0 = time.perf_counter()
        # read as stored: the index normalises its query matrix (NanoVectorDB's arithmetic)
        # and keeps the stored rows that normalising changes, so a save writes them back
        nano = read_nano_vdb(p, keep_row_vectors=ns == "chunks", normalize=False)
        if embedder_dim is not None and nano.embedding_dim != embedder_dim:
            raise _dim_error(p, nano.embedding_dim, embedder_dim)
        dims[ns] = nano.embedding_dim
        records = [vector_row_to_record(row) for row in nano.rows]
        nano.rows = []
        try:
            cls = NanoRowVectorIndex if ns == "chunks" else MemoryVectorIndex
            indexes[ns] = cls.from_arrays(
                ns,
                nano.matrix,
                records,
                cosine_threshold=cosine_threshold,
                normalized=False,
                tie_order="nanovectordb",
            )
            if isinstance(indexes[ns], NanoRowVectorIndex) and nano.row_vectors is not None:
                indexes[ns].attach_row_vectors(  # type: ignore[attr-defined]
                    [r.id for r in records], nano.row_vectors, nano.row_vector_present
                )
        except ConfigurationError as exc:
            raise ConfigurationError(f"{p}: {exc}") from exc
        if nano.additional_data is not None:
            additional[ns] = nano.additional_data
        timings[p.name] = time.perf_counter() - t0
    distinct = sorted(set(dims.values()))
    if len(distinct) > 1:
        listing = ", ".join(f"{vdb_paths[ns].name}={d}" for ns, d in dims.items())
        raise ConfigurationError(
            f"the vector files of {directory} disagree on embedding_dim ({listing})"
        )
    dim = distinct[0] if distinct else embedder_dim
    if dim is None:
        raise ConfigurationError(
            f"{directory} has no vdb_*.json file and no embedder dimension was given, so the "
            "embedding dimension is unknown"
        )
    for ns in NAMESPACES:
        if ns not in indexes:
            cls = NanoRowVectorIndex if ns == "chunks" else MemoryVectorIndex
            indexes[ns] = cls(
                ns, dim, cosine_threshold=cosine_threshold, tie_order="nanovectordb"
            )

    graph = MemoryGraphStore()
    graph_path = directory / GRAPH_FILE
    if graph_path.is_file():
        t0 = time.perf_counter()
        _fill_graph(graph, graph_path)
        timings[graph_path.name] = time.perf_counter() - t0

    t0 = time.perf_counter()
    chunk_store = load_chunk_store(directory)
    timings[TEXT_CHUNKS_FILE] = time.perf_counter() - t0
    cache = load_llm_cache(directory)

    documents = load_documents(directory)
    kv = load_kv(directory)
    extra: dict[str, bytes] = {}
    for name in _lightrag_files(directory):
        if name.startswith("kv_store_") and name not in _SECTION_FILES:
            extra[name] = (directory / name).read_bytes()
            try:  # kept byte for byte, but never a truncated or damaged file
                validate_kv_bytes(directory / name, extra[name])
            except BlankFile:
                pass  # LightRAG reads a blank file as an empty store

    return WorkdirStack(
        entities=indexes["entities"],
        relationships=indexes["relationships"],
        chunks=indexes["chunks"],
        graph=graph,
        chunk_store=chunk_store,
        cache=cache,
        embedding_dim=dim,
        source=directory,
        extra_files=extra,
        vdb_additional_data=additional,
        timings=timings,
        documents=documents,
        kv=kv,
    )


#: The kv_store files read into sections (the others are kept byte for byte).
_SECTION_FILES = frozenset({
    TEXT_CHUNKS_FILE, LLM_CACHE_FILE, *(kv_file_name(ns) for ns in KV_NAMESPACES),
})


def load_documents(directory: Path) -> MemoryDocumentStore:
    """The document status rows and description fragments of ``directory``
    (``kv_store_doc_status.json``, ``kv_store_hexrag_fragments.json``; absent: none)."""
    documents = MemoryDocumentStore()
    raw_docs = require_records(read_json_kv(directory / DOC_STATUS_FILE),
                               directory / DOC_STATUS_FILE)
    raw_fragments = require_records(read_json_kv(directory / FRAGMENTS_FILE),
                                    directory / FRAGMENTS_FILE)
    if raw_docs or raw_fragments:
        try:
            documents.load(raw_docs or {}, (raw_fragments or {}).values())
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigurationError(
                f"{directory / DOC_STATUS_FILE} or {directory / FRAGMENTS_FILE}: a record of "
                f"the wrong shape ({type(exc).__name__}: {exc})"[:500]
            ) from exc
    return documents


def stage_documents(writer: AtomicWriter, directory: Path,
                    documents: MemoryDocumentStore) -> tuple[str, ...]:
    """Stage the rows and fragments of ``documents`` as :func:`load_documents` reads them
    back; the names of the files staged."""
    rows, fragments = documents.dump()
    keyed = {f"{f['chunk_id']}#{f['pos']}": f for f in fragments}
    writer.stage(directory / DOC_STATUS_FILE, lambda fh: write_json_kv(fh, rows))
    writer.stage(directory / FRAGMENTS_FILE, lambda fh: write_json_kv(fh, keyed))
    return (DOC_STATUS_FILE, FRAGMENTS_FILE)


def load_chunk_store(directory: Path) -> MemoryChunkStore:
    """The text chunks of ``directory`` (``kv_store_text_chunks.json``; absent: none)."""
    raw_chunks = read_json_kv(directory / TEXT_CHUNKS_FILE) or {}
    return MemoryChunkStore(
        chunk_from_kv(str(cid), _record(value, directory / TEXT_CHUNKS_FILE, cid))
        for cid, value in raw_chunks.items()
    )


def load_llm_cache(directory: Path) -> MemoryCache:
    """The LLM cache of ``directory`` (``kv_store_llm_response_cache.json``; absent: empty),
    older LightRAG layouts migrated."""
    raw_cache = require_records(read_json_kv(directory / LLM_CACHE_FILE),
                                directory / LLM_CACHE_FILE) or {}
    return MemoryCache("llm_response_cache", migrate_legacy_cache(raw_cache))


def _fill_graph(graph: MemoryGraphStore, graph_path: Path) -> None:
    data = read_graphml(graph_path)
    entities = [node_to_entity(name, attrs) for name, attrs in data.nodes.items()]
    data.nodes = {}
    ids = relation_ids_for_edges(data.edges)
    relations = [
        edge_to_relation(u, v, attrs, rel_id=rid)
        for (u, v, attrs), rid in zip(data.edges, ids, strict=True)
    ]
    data.edges = []
    _run_now(graph.upsert_nodes(entities))
    _run_now(graph.upsert_edges(relations))


def load_graph(path: str | Path) -> MemoryGraphStore:
    """The NetworkX GraphML graph of a LightRAG deployment (``NetworkXStorage``) alone.

    ``path`` is the ``.graphml`` file or the (workspace) directory holding
    ``graph_chunk_entity_relation.graphml``; a missing file gives an empty graph (LightRAG
    creates it on its first write). Nodes and edges keep ``nx.read_graphml``'s order, as in
    :func:`load_workdir`. Synchronous, CPU-bound: call it through ``asyncio.to_thread``.
    """
    target = Path(path).expanduser()
    if target.is_dir() or target.suffix.lower() != ".graphml":
        target = target / GRAPH_FILE
    graph = MemoryGraphStore()
    if target.is_file():
        with _gc_paused():
            _fill_graph(graph, target)
    return graph


def save_graph(graph: MemoryGraphStore, path: str | Path) -> Path:
    """Write ``graph`` as LightRAG's GraphML file (atomically), as :func:`save_workdir`
    writes it; ``path`` as in :func:`load_graph`. Returns the file written."""
    target = Path(path).expanduser()
    if target.is_dir() or target.suffix.lower() != ".graphml":
        target = target / GRAPH_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    writer = AtomicWriter()
    try:
        writer.stage(target, lambda fh: _write_graph(fh, graph))
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return target


def _record(value: Any, path: Path, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{path}: record {key!r} is not a JSON object")
    return value


# ----------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------


def save_workdir(stack: WorkdirStack, path: str | Path, *, workspace: str | None = None) -> Path:
    """Write ``stack`` as a LightRAG working directory at ``path`` (or ``path/workspace``).

    Every file is written to a temporary sibling first (LightRAG's ``.tmp.<pid>.<tid>.<ns>``
    naming) and only then renamed over the old one with ``os.replace``, so a failure leaves the
    previous files untouched and a reader never sees a partial file. Files of the directory
    that the stack does not produce are left alone. Returns the directory written.

    LightRAG's graph is an ``nx.Graph``: several relations between one pair (possible in
    stacks filled from other backends) are merged into one edge - descriptions, keywords,
    source ids and file paths joined (``<SEP>``; keywords with ``,``), weights summed,
    the earliest ``created_at`` kept.
    """
    directory = Path(path).expanduser()
    if workspace:
        _check_workspace(workspace)
        directory = directory / workspace
    directory.mkdir(parents=True, exist_ok=True)
    with _gc_paused():
        _save(stack, directory)
    return directory


def _save(stack: WorkdirStack, directory: Path) -> None:
    writer = AtomicWriter()
    try:
        for ns in NAMESPACES:
            index = stack.vector_index(ns)
            _stage_vdb(writer, directory / VDB_FILES[ns], index, stack.vdb_additional_data.get(ns))
        writer.stage(directory / GRAPH_FILE, lambda fh: _write_graph(fh, stack.graph))
        chunks = {c.id: chunk_to_kv(c) for c in stack.chunk_store.iter_chunks()}
        writer.stage(directory / TEXT_CHUNKS_FILE, lambda fh: write_json_kv(fh, chunks))
        if len(stack.cache) or (directory / LLM_CACHE_FILE).exists():
            entries = dict(stack.cache.items())
            writer.stage(directory / LLM_CACHE_FILE, lambda fh: write_json_kv(fh, entries))
        # The document store is written when hexrag changed it; otherwise the files read
        # at load time are written back byte for byte with the other extra files.
        rewritten: tuple[str, ...] = ()
        if stack.documents.changed:
            rewritten = stage_documents(writer, directory, stack.documents)
        staged = stage_kv(writer, directory, stack.kv)
        for name, content in stack.extra_files.items():
            if name not in rewritten and name not in staged:
                writer.stage_bytes(directory / name, content)
        writer.commit()
    except BaseException:
        writer.abort()
        raise


def _stage_vdb(
    writer: AtomicWriter, target: Path, index: MemoryVectorIndex, additional: Any
) -> None:
    matrix, records = index.export_stored_arrays()  # the vectors as stored, bit for bit
    rows = [record_to_vector_row(r, index.namespace) for r in records]
    # the "vector" strings a copy carried from a NanoVectorDB file, written back verbatim
    texts = [r.row_vector for r in records]
    row_vector_texts = texts if any(t is not None for t in texts) else None
    row_vectors = None
    if isinstance(index, NanoRowVectorIndex):
        # write back LightRAG's own float16 rows; rows without one get the normalised row's
        row_vectors = matrix.astype(np.float16)
        for i, r in enumerate(records):
            vec = index.row_vector(r.id)
            if vec is not None:
                row_vectors[i] = vec
    writer.stage(
        target,
        lambda fh: write_nano_vdb(
            fh,
            embedding_dim=index.dim,
            rows=rows,
            matrix=matrix,
            with_row_vectors=True,
            additional_data=additional,
            row_vectors=row_vectors,
            row_vector_texts=row_vector_texts,
        ),
    )


def _write_graph(fh: IO[str], graph: MemoryGraphStore) -> None:
    nodes = [entity_to_node(e) for e in graph.iter_nodes()]
    edges = [relation_to_edge(r) for r in _one_per_pair(graph.iter_edges())]
    write_graphml(fh, nodes, edges)


def _one_per_pair(relations: Iterator[Relation]) -> list[Relation]:
    groups: dict[tuple[str, str], list[Relation]] = {}
    for r in relations:
        groups.setdefault(r.pair, []).append(r)
    return [group[0] if len(group) == 1 else _merge(group) for group in groups.values()]


def _joined(values: list[str | None], sep: str) -> str | None:
    out: list[str] = []
    for v in values:
        if v and v not in out:
            out.append(v)
    return sep.join(out) if out else None


def _merge(group: list[Relation]) -> Relation:
    first = group[0]
    weights = [r.weight for r in group if r.weight is not None]
    created = [r.created_at for r in group if r.created_at is not None]
    source_ids: list[str] = []
    for r in group:
        for cid in parse_source_ids(r.source_id):
            if cid not in source_ids:
                source_ids.append(cid)
    properties: dict[str, Any] = {}
    for r in group:
        for k, v in r.properties.items():
            properties.setdefault(k, v)
    return Relation(
        id=first.id,
        src_id=first.src_id,
        tgt_id=first.tgt_id,
        description=_joined([r.description for r in group], "<SEP>"),
        keywords=_joined([r.keywords for r in group], ","),
        weight=sum(weights) if weights else None,
        source_id=join_source_ids(source_ids) if source_ids else None,
        file_path=_joined([r.file_path for r in group], "<SEP>"),
        created_at=min(created) if created else None,
        properties=properties,
    )
