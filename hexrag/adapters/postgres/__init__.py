"""PostgreSQL adapters (asyncpg + pgvector): vector index, chunk store, graph store, cache.

Each adapter takes a ready ``asyncpg.Pool`` (keyword-only options) and creates its tables on
first use; ``await Adapter.from_url(dsn, ...)`` builds a pool it owns. Table and schema names
are validated identifiers; every value is a query parameter. Driver exceptions are raised as
hexrag errors (``BackendUnavailable``, ``BackendTimeout``, ``ConfigurationError``, ``NotFound``).
"""

from __future__ import annotations

from hexrag.adapters.postgres._base import create_pool
from hexrag.adapters.postgres.cache import PgCache
from hexrag.adapters.postgres.chunk_store import PgChunkStore
from hexrag.adapters.postgres.document_store import PgDocumentStore
from hexrag.adapters.postgres.graph_store import PgGraphStore
from hexrag.adapters.postgres.vector_index import PgVectorIndex

__all__ = [
    "PgCache", "PgChunkStore", "PgDocumentStore", "PgGraphStore", "PgVectorIndex", "create_pool",
]
