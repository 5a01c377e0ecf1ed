"""hexrag: LightRAG's graph-RAG query pipeline as a pure core behind storage ports.

Quick start (everything in memory)::

    from hexrag import QueryParam, QueryScope, compose_engine
    engine = compose_engine({"entities": ..., "relationships": ..., "chunks": ...,
                             "graph": ..., "chunk_store": ...}, embedder=...)
    data = await engine.query_data("Which CRM features does Acme ship?",
                                   QueryParam(mode="hybrid", scope=QueryScope(product_id="p1")))
"""

# the default tokenizer (tiktoken's o200k_base, offline) registers itself with the core
import hexrag.adapters.tiktoken_offline
import hexrag.bootstrap
import hexrag.config
from hexrag.bootstrap import build_engine, compose_engine, open_copy_source, open_stack
from hexrag.config import StackConfig, load_config
from hexrag.core.engine import QueryEngine, QueryResult
from hexrag.core.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
    InvalidQuery,
    InvalidScope,
    NotFound,
)
from hexrag.core.model import (
    Chunk,
    EngineSettings,
    Entity,
    QueryParam,
    QueryScope,
    Relation,
    VectorHit,
    VectorRecord,
)

__version__ = "0.1.0"

# Opening moved from hexrag.config (which only parses) to hexrag.bootstrap; code written before
# still imports these names from hexrag.config.
for _name in ("Stack", "build_stack", "build_engine", "build_llm"):
    setattr(hexrag.config, _name, getattr(hexrag.bootstrap, _name))
del _name

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
