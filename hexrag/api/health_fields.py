"""LightRAG 1.5.7's ``/health`` fields, as hexrag can state them.

:func:`liveness` is what LightRAG tells anyone (``status`` aside): versions, ``auth_mode``,
``webui_available``, ``workspace_available``, ``api_docs_available``, ``webui_title``,
``webui_description``, ``ai_content_notice_enabled``, ``pipeline_busy``, ``pipeline_active``.
:func:`configuration` is what LightRAG tells authenticated callers only: ``working_directory``,
``input_directory``, ``configuration`` (models, storages, retrieval settings),
``server_mode``, ``workers``, the pipeline flags and queue summaries. Values hexrag does not
have (LightRAG's LLM queue counters, its parser routing) are reported as LightRAG reports an
idle or unconfigured server; every value a stack does have is its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hexrag.api.auth_routes import ui_identity

__all__ = ["configuration", "liveness"]


def _pipeline(state: Any) -> dict[str, Any]:
    documents = getattr(state, "documents", None)
    if documents is None:
        return {}
    try:
        return dict(documents.pipeline())
    except Exception:  # a liveness probe never fails on the pipeline's account
        return {}


def liveness(state: Any) -> dict[str, Any]:
    """The fields LightRAG's ``/health`` gives every caller (``state``: ``app.state``)."""
    tokens = getattr(state, "tokens", None)
    accounts = bool(tokens is not None and tokens.settings.configured)
    pipe = _pipeline(state)
    busy = bool(pipe.get("busy", False))
    ident = ui_identity()
    return {
        "auth_mode": "enabled" if accounts else "disabled",
        "core_version": ident["core_version"],
        "api_version": ident["api_version"],
        "webui_available": getattr(state, "lightrag_webui", None) is not None,
        "workspace_available": bool(getattr(state, "lightrag_workspace", False)),
        "api_docs_available": True,
        "webui_title": ident["webui_title"],
        "webui_description": ident["webui_description"],
        "ai_content_notice_enabled": ident["ai_content_notice_enabled"],
        "pipeline_busy": busy,
        "pipeline_active": busy or bool(pipe.get("scanning", False))
        or int(pipe.get("pending_enqueues", 0) or 0) > 0,
    }


def _kind(obj: Any) -> str | None:
    if obj is None:
        return None
    module = type(obj).__module__ or ""
    if module.startswith("hexrag.adapters."):
        return module.split(".")[2]
    return type(obj).__name__


def _host(obj: Any) -> str | None:
    endpoint = getattr(obj, "_endpoint", None)
    url = getattr(endpoint, "base_url", None)
    if url is None:
        return None
    from hexrag.config import redact_url

    return redact_url(str(url)).rstrip("/")


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    try:
        return int(env.get(name) or default)
    except ValueError:
        return default


def _timeout(model: Any) -> float | None:
    timeout = getattr(getattr(model, "_endpoint", None), "timeout", None)
    return timeout if isinstance(timeout, int | float) else None


def _store_name(store: Any) -> str:
    for _ in range(8):  # unwrap deadlines and tracking proxies
        inner = next((getattr(store, a) for a in ("inner", "_inner", "_store")
                      if getattr(store, a, None) is not None), None)
        if inner is None:
            break
        store = inner
    return type(store).__name__


def configuration(state: Any, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The fields LightRAG's ``/health`` adds for authenticated callers."""
    env = os.environ if env is None else env
    engine = state.engine
    settings = engine.settings
    plan = getattr(state, "plan", None)
    workdir = getattr(plan, "workdir", None)
    llm, embedder, reranker = engine.llm, engine.embedder, engine.reranker
    pipe = _pipeline(state)
    stores = engine.stores
    from hexrag.env import ingest_settings

    ingest = ingest_settings(env)
    summary = ingest.merge.summary
    workspace = getattr(state, "workspace", "") or getattr(plan, "workspace", "") or ""
    llm_cfg = None
    if llm is not None:
        llm_cfg = {"binding": _kind(llm), "model": llm.model_name, "host": _host(llm),
                   "is_cross_provider": False}
    config: dict[str, Any] = {
        "llm_binding": _kind(llm),
        "llm_binding_host": _host(llm),
        "llm_model": llm.model_name if llm is not None else None,
        "embedding_binding": _kind(embedder),
        "embedding_binding_host": _host(embedder),
        "embedding_model": embedder.model_name,
        "embedding_dim": embedder.dim,
        "summary_max_tokens": summary.max_tokens,
        "summary_context_size": summary.context_size,
        "kv_storage": _store_name(stores.chunk_store),
        "doc_status_storage": None,
        "graph_storage": _store_name(stores.graph),
        "vector_storage": _store_name(stores.entities),
        "enable_llm_cache_for_extract": ingest.enable_llm_cache_for_extract,
        "enable_llm_cache": settings.enable_llm_cache,
        "vlm_process_enable": False,
        "workspace": workspace,
        "storage_workspaces": {role: workspace or None for role in (
            "kv_storage", "doc_status_storage", "graph_storage", "vector_storage")},
        "max_graph_nodes": int(env.get("MAX_GRAPH_NODES") or 1000),
        "enable_rerank": reranker is not None,
        "rerank_binding": _kind(reranker) or "null",
        "rerank_model": getattr(reranker, "model_name", None) if reranker is not None else None,
        "rerank_binding_host": _host(reranker) if reranker is not None else None,
        "rerank_max_async": _env_int(env, "RERANK_MAX_ASYNC", 4),
        "rerank_timeout": _env_int(env, "RERANK_TIMEOUT", 30),
        "summary_language": settings.summary_language,
        "force_llm_summary_on_merge": summary.force_llm_summary_on_merge,
        "max_parallel_insert": _env_int(env, "MAX_PARALLEL_INSERT", 3),
        "cosine_threshold": settings.cosine_threshold,
        "min_rerank_score": settings.min_rerank_score,
        "related_chunk_number": settings.related_chunk_number,
        "kg_chunk_pick_method": settings.kg_chunk_pick_method,
        "max_async": ingest.max_async,
        "llm_timeout": _timeout(llm),
        "embedding_func_max_async": _env_int(env, "EMBEDDING_FUNC_MAX_ASYNC", 4),
        "embedding_batch_num": getattr(embedder, "_batch_size", None),
        "embedding_timeout": _timeout(embedder),
        "role_llm_config": {role: llm_cfg for role in ("extract", "keyword", "query")}
        if llm_cfg is not None else {},
        "parser_routing": "",
        "mineru": {"endpoint": "", "api_mode": None, "options": {}},
        "docling": {"endpoint": "", "options": {}},
    }
    describe = getattr(state, "describe", None)
    return {
        "working_directory": str(workdir) if workdir is not None else None,
        "input_directory": str(Path(env.get("INPUT_DIR") or "./inputs").resolve()),
        "configuration": config,
        "server_mode": "uvicorn",
        "workers": int(env.get("HEXRAG_WORKERS") or 1),
        "pipeline_scanning": bool(pipe.get("scanning", False)),
        "pipeline_destructive_busy": bool(pipe.get("destructive_busy", False)),
        "pipeline_pending_enqueues": int(pipe.get("pending_enqueues", 0) or 0),
        "stack": describe() if callable(describe) else None,
    }
