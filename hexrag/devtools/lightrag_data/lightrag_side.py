"""The LightRAG side: a dataset written through LightRAG 1.5.7's own storage classes into a
working directory (:func:`write_lightrag_workdir`), and LightRAG's ``aquery_data`` /
``aquery(only_need_context=True)`` run on it without any LLM (:func:`open_lightrag`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from hexrag.core.ingest.vector_contents import entity_vector_content, relation_vector_content
from hexrag.devtools.lightrag_data.dataset import GRAPH_FIELD_SEP, Dataset, KeywordQuery, _md5

if TYPE_CHECKING:  # pragma: no cover
    from hexrag.ports.embedder import Embedder

__all__ = [
    "LightRAGDir", "lightrag_context", "lightrag_embedding_func", "lightrag_query_data",
    "lightrag_query_param", "open_lightrag", "query_param_fields", "register_offline_tiktoken",
    "write_lightrag_records", "write_lightrag_workdir",
]


# --------------------------------------------------------------------------------------
# LightRAG side
# --------------------------------------------------------------------------------------


class _AsyncEmbedder(Protocol):
    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class LightRAGDir:
    """A LightRAG working directory: ``root`` + ``workspace``; the files are in ``path``."""

    root: Path
    workspace: str

    @property
    def path(self) -> Path:
        """The directory that holds the ``vdb_*.json``, ``kv_store_*.json`` and GraphML files."""
        return self.root / self.workspace


def register_offline_tiktoken() -> None:
    """Put hexrag's offline ``o200k_base`` into tiktoken's registry.

    LightRAG's ``TiktokenTokenizer("gpt-4o-mini")`` then finds the encoding without a download,
    and both sides tokenise with the very same BPE ranks.
    """
    import tiktoken.registry

    from hexrag.adapters.tiktoken_offline import load_encoding

    if "o200k_base" not in tiktoken.registry.ENCODINGS:
        tiktoken.registry.ENCODINGS["o200k_base"] = load_encoding("o200k_base")


def lightrag_embedding_func(
    embedder: Embedder | _AsyncEmbedder, *, model_name: str | None = None
) -> Any:
    """``embedder`` wrapped as LightRAG's ``EmbeddingFunc`` (same vectors on both sides).

    ``model_name`` becomes the ``EmbeddingFunc``'s model name, from which LightRAG's
    database backends derive their table suffix (``<model>_<dim>d``)."""
    from lightrag.utils import EmbeddingFunc

    async def _embed(texts: Sequence[str], **_kwargs: Any) -> np.ndarray:
        return np.asarray(await embedder.embed(list(texts)), dtype=np.float32)

    if model_name is None:
        return EmbeddingFunc(embedding_dim=embedder.dim, func=_embed)
    return EmbeddingFunc(embedding_dim=embedder.dim, func=_embed, model_name=model_name)


async def _no_llm(*args: Any, **kwargs: Any) -> str:
    raise AssertionError("LightRAG called an LLM during a parity/benchmark run")


def _quiet_lightrag() -> None:
    # After ``import lightrag`` (lightrag.utils sets its logger to INFO at import): no log
    # I/O on LightRAG's side during parity runs and benchmarks.
    for name in ("lightrag", "nano-vectordb"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _make_lightrag(
    wd: LightRAGDir, embedder: Embedder | _AsyncEmbedder, **settings: Any
) -> Any:
    """:func:`new_lightrag` on ``wd`` (``settings``: those of :func:`open_lightrag`)."""
    return new_lightrag(embedder, working_dir=wd.root, workspace=wd.workspace, **settings)


def new_lightrag(
    embedder: Embedder | _AsyncEmbedder,
    *,
    working_dir: str | Path,
    workspace: str,
    kg_chunk_pick_method: str,
    cosine_threshold: float,
    model_name: str | None = None,
    storages: Mapping[str, str] | None = None,
    related_chunk_number: int = 5,
    enable_content_headings: bool = True,
    env: AbstractContextManager[Any] | None = None,
) -> Any:
    """A ``LightRAG`` (not initialised) with the parity settings and ``storages`` (LightRAG's
    defaults when ``None``), constructed inside ``env`` when given (LightRAG's storage classes
    read their connection variables then)."""
    register_offline_tiktoken()
    from lightrag import LightRAG
    from lightrag.utils import TiktokenTokenizer

    _quiet_lightrag()
    with env if env is not None else nullcontext():
        return LightRAG(
            working_dir=str(working_dir),
            workspace=workspace,
            embedding_func=lightrag_embedding_func(embedder, model_name=model_name),
            llm_model_func=_no_llm,
            tokenizer=TiktokenTokenizer("gpt-4o-mini"),
            kg_chunk_pick_method=kg_chunk_pick_method,
            related_chunk_number=related_chunk_number,
            enable_content_headings=enable_content_headings,
            cosine_better_than_threshold=cosine_threshold,
            vector_db_storage_cls_kwargs={"cosine_better_than_threshold": cosine_threshold},
            min_rerank_score=0.0,
            user_prompt_prefix="",
            enable_llm_cache=True,
            rerank_model_func=None,
            **(storages or {}),
        )


def _clear_workdir(path: Path) -> None:
    """Remove an earlier dataset's files: LightRAG's storages *merge* into existing files."""
    if not path.exists():
        return
    ours = ("kv_store_", "vdb_", "graph_chunk_entity_relation", ".hexrag-bench")
    files = [p for p in path.iterdir()]
    strangers = [p.name for p in files if p.is_dir() or not p.name.startswith(ours)]
    if strangers:
        raise FileExistsError(
            f"{path} holds files that are not LightRAG's ({strangers[:5]}); "
            "refusing to overwrite it with a generated dataset"
        )
    for p in files:
        p.unlink()


async def write_lightrag_workdir(
    dataset: Dataset,
    root: Path | str,
    embedder: Embedder | _AsyncEmbedder,
    *,
    workspace: str | None = None,
) -> LightRAGDir:
    """Write ``dataset`` into ``root/<workspace>/`` through LightRAG's own storage classes.

    Writes text chunks, full docs, entity/relation chunk trackers, the three NanoVectorDB
    stores (embedded with ``embedder``) and the NetworkX graph, then finalises the storages
    (LightRAG flushes and saves every file) and resets LightRAG's process-wide shared state.
    LightRAG files already in ``root/<workspace>/`` are deleted first (LightRAG would merge the
    new dataset into them); any other file there makes it refuse (``FileExistsError``).
    """
    from lightrag.kg.shared_storage import finalize_share_data

    wd = LightRAGDir(Path(root), workspace or dataset.spec.label)
    _clear_workdir(wd.path)
    rag = _make_lightrag(wd, embedder, kg_chunk_pick_method="VECTOR", cosine_threshold=0.2)
    await rag.initialize_storages()
    try:
        await write_lightrag_records(rag, dataset)
    finally:
        await rag.finalize_storages()
        finalize_share_data()
    return wd


async def write_lightrag_records(rag: Any, dataset: Dataset) -> None:
    """Write ``dataset`` through the storage objects of an initialised ``LightRAG``: text
    chunks, full docs, entity/relation chunk trackers, the three vector stores and the graph,
    then LightRAG's insert commit (``_insert_done``: flush and persist every store). Works for
    any LightRAG storage backend (files, PostgreSQL, Milvus + Redis, ...)."""
    tokenizer = rag.tokenizer
    chunk_records: dict[str, dict[str, Any]] = {}
    for c in dataset.chunks:
        rec: dict[str, Any] = {
            "tokens": len(tokenizer.encode(c.content)),
            "content": c.content,
            "chunk_order_index": c.order,
            "full_doc_id": c.doc_id,
            "file_path": c.file_path,
            "llm_cache_list": [],
            "product_id": c.product_id,
            "category": c.category,
        }
        if c.heading is not None:
            rec["heading"] = c.heading
        chunk_records[c.id] = rec
    await rag.text_chunks.upsert(chunk_records)
    await rag.chunks_vdb.upsert(chunk_records)
    await rag.full_docs.upsert(
        {
            doc_id: {
                "content": "\n\n".join(chunk_records[cid]["content"] for cid in d["chunks"]),
                "file_path": d["file_path"],
            }
            for doc_id, d in dataset.docs.items()
        }
    )

    nodes: list[tuple[str, dict[str, Any]]] = []
    ent_vectors: dict[str, dict[str, Any]] = {}
    ent_chunks: dict[str, dict[str, Any]] = {}
    for e in dataset.entities:
        source_id = GRAPH_FIELD_SEP.join(e.chunk_ids)
        file_path = GRAPH_FIELD_SEP.join(e.file_paths)
        description = e.description if e.description is not None else ""
        if not e.orphan:
            node: dict[str, Any] = {
                "entity_id": e.name,
                "entity_type": e.entity_type,
                "description": description,
                "source_id": source_id,
                "file_path": file_path,
                "created_at": e.created_at,
            }
            if e.description is None:
                del node["description"]
            nodes.append((e.name, node))
            ent_chunks[e.name] = {"chunk_ids": list(e.chunk_ids), "count": len(e.chunk_ids)}
        ent_vectors["ent-" + _md5(e.name)] = {
            "entity_name": e.name,
            "entity_type": e.entity_type,
            "content": entity_vector_content(e.name, description),
            "source_id": source_id,
            "file_path": file_path,
        }
    await rag.chunk_entity_relation_graph.upsert_nodes_batch(nodes)

    edges: list[tuple[str, str, dict[str, Any]]] = []
    rel_vectors: dict[str, dict[str, Any]] = {}
    rel_chunks: dict[str, dict[str, Any]] = {}
    for r in dataset.relations:
        source_id = GRAPH_FIELD_SEP.join(r.chunk_ids)
        file_path = GRAPH_FIELD_SEP.join(r.file_paths)
        edge: dict[str, Any] = {
            "weight": r.weight,
            "description": r.description,
            "keywords": r.keywords,
            "source_id": source_id,
            "file_path": file_path,
            "created_at": r.created_at,
        }
        if r.weight is None:
            del edge["weight"]
        edges.append((r.src, r.tgt, edge))
        a, b = (r.src, r.tgt) if r.legacy_unsorted else r.pair
        rel_vectors["rel-" + _md5(a + b)] = {
            "src_id": a,
            "tgt_id": b,
            "source_id": source_id,
            "content": relation_vector_content(r.keywords, a, b, r.description),
            "keywords": r.keywords,
            "description": r.description,
            "weight": r.weight if r.weight is not None else 1.0,
            "file_path": file_path,
        }
        rel_chunks[f"{r.pair[0]}{GRAPH_FIELD_SEP}{r.pair[1]}"] = {
            "chunk_ids": list(r.chunk_ids),
            "count": len(r.chunk_ids),
        }
    await rag.chunk_entity_relation_graph.upsert_edges_batch(edges)
    await asyncio.gather(
        rag.entities_vdb.upsert(ent_vectors),
        rag.relationships_vdb.upsert(rel_vectors),
        rag.entity_chunks.upsert(ent_chunks),
        rag.relation_chunks.upsert(rel_chunks),
    )
    # The document pipeline's commit: flush vector buffers and persist every store.
    await rag._insert_done()


async def open_lightrag(
    wd: LightRAGDir,
    embedder: Embedder | _AsyncEmbedder,
    *,
    kg_chunk_pick_method: str = "VECTOR",
    cosine_threshold: float = 0.2,
    related_chunk_number: int = 5,
    enable_content_headings: bool = True,
) -> Any:
    """A ``LightRAG`` object on ``wd`` with initialised storages and no LLM.

    Settings that LightRAG reads from the environment at import are passed explicitly. Call
    ``await rag.finalize_storages()`` when done.
    """
    rag = _make_lightrag(
        wd, embedder, kg_chunk_pick_method=kg_chunk_pick_method,
        cosine_threshold=cosine_threshold, related_chunk_number=related_chunk_number,
        enable_content_headings=enable_content_headings,
    )
    await rag.initialize_storages()
    return rag


_PARAM_DEFAULTS: dict[str, Any] = {
    "top_k": 40,
    "chunk_top_k": 20,
    "max_entity_tokens": 6000,
    "max_relation_tokens": 8000,
    "max_total_tokens": 30000,
    "response_type": "Multiple Paragraphs",
    "user_prompt": None,
    "enable_rerank": False,
    "disable_user_prompt_prefix": False,
}


def query_param_fields(mode: str, q: KeywordQuery, **overrides: Any) -> dict[str, Any]:
    """Every QueryParam field a parity run sets, explicitly (no env-driven defaults), then
    ``overrides``."""
    fields: dict[str, Any] = {
        **_PARAM_DEFAULTS,
        "mode": mode,
        "hl_keywords": list(q.hl_keywords),
        "ll_keywords": list(q.ll_keywords),
        "conversation_history": [],
    }
    fields.update(q.param_dict())
    fields.update(overrides)
    return fields


def lightrag_query_param(mode: str, q: KeywordQuery, **overrides: Any) -> Any:
    """LightRAG's ``QueryParam`` for ``q`` in ``mode`` (all fields explicit)."""
    from lightrag.base import QueryParam

    return QueryParam(**query_param_fields(mode, q, **overrides))


async def lightrag_query_data(rag: Any, mode: str, q: KeywordQuery) -> dict[str, Any]:
    """LightRAG's ``aquery_data`` for ``q`` in ``mode``."""
    return await rag.aquery_data(q.query, lightrag_query_param(mode, q))  # type: ignore[no-any-return]


async def lightrag_context(rag: Any, mode: str, q: KeywordQuery) -> str:
    """LightRAG's context string (``aquery`` with ``only_need_context=True``)."""
    result = await rag.aquery(q.query, lightrag_query_param(mode, q, only_need_context=True))
    return str(result) if result is not None else ""

