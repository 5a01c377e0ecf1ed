"""Domain types that cross the ports: re-exported from :mod:`hexrag.domain`.

They live in :mod:`hexrag.domain.records`, :mod:`hexrag.domain.scope` and
:mod:`hexrag.domain.params` (which import nothing else of hexrag); this module hands the same
objects on so that code written before keeps importing them from here.
"""

from __future__ import annotations

from hexrag.domain.params import (
    KG_MODES,
    QUERY_DEFAULTS,
    QUERY_MODES,
    ChunkPickMethod,
    EngineSettings,
    QueryMode,
    QueryParam,
    RelationLookup,
)
from hexrag.domain.records import (
    EMPTY_PROPS,
    GRAPH_FIELD_SEP,
    ChatMessage,
    Chunk,
    Entity,
    Relation,
    RerankResult,
    VectorHit,
    VectorNamespace,
    VectorRecord,
)
from hexrag.domain.scope import SCOPE_FIELDS, QueryScope

__all__ = [
    "EMPTY_PROPS",
    "GRAPH_FIELD_SEP",
    "KG_MODES",
    "QUERY_DEFAULTS",
    "QUERY_MODES",
    "SCOPE_FIELDS",
    "ChatMessage",
    "Chunk",
    "ChunkPickMethod",
    "EngineSettings",
    "Entity",
    "QueryMode",
    "QueryParam",
    "QueryScope",
    "Relation",
    "RelationLookup",
    "RerankResult",
    "VectorHit",
    "VectorNamespace",
    "VectorRecord",
]
