"""hexrag: LightRAG's graph-RAG query pipeline as a pure core behind storage ports.

Quick start (everything in memory)::

    from hexrag import QueryParam, QueryScope, compose_engine
    engine = compose_engine({"entities": ..., "relationships": ..., "chunks": ...,
                             "graph": ..., "chunk_store": ...}, embedder=...)
    data = await engine.query_data("Which CRM features does Acme ship?",
                                   QueryParam(mode="hybrid", scope=QueryScope(product_id="p1")))

Importing ``hexrag`` loads nothing: each name below is imported from its home module the
first time it is used, so ``import hexrag.domain`` (or any other light module) does not pull
in the configuration, the adapters or the tokenizer.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hexrag.bootstrap import build_engine, compose_engine, open_copy_source, open_stack
    from hexrag.config import StackConfig, load_config
    from hexrag.core.query.engine import QueryEngine, QueryResult
    from hexrag.domain.errors import (
        BackendError,
        BackendTimeout,
        BackendUnavailable,
        ConfigurationError,
        HexragError,
        InvalidQuery,
        InvalidScope,
        NotFound,
    )
    from hexrag.domain.params import EngineSettings, QueryParam
    from hexrag.domain.records import Chunk, Entity, Relation, VectorHit, VectorRecord
    from hexrag.domain.scope import QueryScope

__version__ = "0.1.0"

#: Where each public name lives (imported on first use).
_HOMES: dict[str, str] = {
    **dict.fromkeys(
        ("build_engine", "compose_engine", "open_copy_source", "open_stack"), "hexrag.bootstrap"
    ),
    **dict.fromkeys(("StackConfig", "load_config"), "hexrag.config"),
    **dict.fromkeys(("QueryEngine", "QueryResult"), "hexrag.core.query.engine"),
    **dict.fromkeys(
        (
            "BackendError",
            "BackendTimeout",
            "BackendUnavailable",
            "ConfigurationError",
            "HexragError",
            "InvalidQuery",
            "InvalidScope",
            "NotFound",
        ),
        "hexrag.domain.errors",
    ),
    **dict.fromkeys(("EngineSettings", "QueryParam"), "hexrag.domain.params"),
    **dict.fromkeys(
        ("Chunk", "Entity", "Relation", "VectorHit", "VectorRecord"), "hexrag.domain.records"
    ),
    "QueryScope": "hexrag.domain.scope",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its home module the first time it is asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hexrag' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    "BackendError",
    "BackendTimeout",
    "BackendUnavailable",
    "Chunk",
    "ConfigurationError",
    "EngineSettings",
    "Entity",
    "HexragError",
    "InvalidQuery",
    "InvalidScope",
    "NotFound",
    "QueryEngine",
    "QueryParam",
    "QueryResult",
    "QueryScope",
    "Relation",
    "StackConfig",
    "VectorHit",
    "VectorRecord",
    "__version__",
    "build_engine",
    "compose_engine",
    "load_config",
    "open_copy_source",
    "open_stack",
]
