"""Domain types that cross the ports.

Records are frozen dataclasses: adapters build them in one conversion function and the core
never mutates them. ``None`` always means *absent* (LightRAG distinguishes a missing
``description`` - rendered ``"UNKNOWN"`` - from a stored empty string), so adapters must not
turn a missing value into ``""``.

``QueryParam`` keeps LightRAG 1.5.7's field names and defaults; its defaults read LightRAG's
environment variables (``TOP_K``, ``CHUNK_TOP_K``, ...) when a ``QueryParam`` is created.
``EngineSettings`` holds what LightRAG keeps on the ``LightRAG`` object
(``KG_CHUNK_PICK_METHOD``, ``RELATED_CHUNK_NUMBER``, ``COSINE_THRESHOLD``, ...).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hexrag.core.errors import InvalidQuery, InvalidScope

QueryMode = Literal["local", "global", "hybrid", "naive", "mix", "bypass", "auto"]
QUERY_MODES: tuple[str, ...] = ("local", "global", "hybrid", "naive", "mix", "bypass", "auto")
KG_MODES: tuple[str, ...] = ("local", "global", "hybrid", "mix")
ChunkPickMethod = Literal["VECTOR", "WEIGHT"]
RelationLookup = Literal["chunk", "pair"]
VectorNamespace = Literal["entities", "relationships", "chunks"]

GRAPH_FIELD_SEP = "<SEP>"

EMPTY_PROPS: Mapping[str, Any] = {}


# --------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entity:
    """A knowledge-graph node. ``name`` is the node id (LightRAG's ``entity_id``).

    ``source_id`` is kept exactly as stored (``<SEP>``-joined chunk ids, or whatever form the
    store uses); :func:`hexrag.core.source_ids.parse_source_ids` turns it into ids.
    ``properties`` holds any further stored attributes (never the fields above).
    """

    name: str
    entity_type: str | None = None
    description: str | None = None
    source_id: Any = None
    file_path: str | None = None
    created_at: int | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Relation:
    """A knowledge-graph edge. Several relations may join the same pair; ``id`` tells them apart.

    ``src_id``/``tgt_id`` keep the stored orientation (edges are undirected for every lookup).
    A store that has no relation ids (LightRAG's NetworkX graph) uses
    :func:`hexrag.core.ids.relation_id` of the sorted pair, which is also LightRAG's
    relationship-vector id, so graph and vector index agree.
    ``weight`` ``None`` means missing (the pipeline then uses 1.0, as LightRAG does).
    """

    id: str
    src_id: str
    tgt_id: str
    description: str | None = None
    keywords: str | None = None
    weight: float | None = None
    source_id: Any = None
    file_path: str | None = None
    created_at: int | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)

    @property
    def pair(self) -> tuple[str, str]:
        """The endpoints in sorted (code-point) order: the key LightRAG dedups by."""
        a, b = self.src_id, self.tgt_id
        return (a, b) if a <= b else (b, a)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A text chunk as the chunk store keeps it.

    ``metadata`` holds every other stored field: scope fields (``product_id``,
    ``category_id``), heading information (``heading``, ``parent_headings``), LightRAG
    bookkeeping (``llm_cache_list``, ``create_time``...).
    """

    id: str
    content: str
    tokens: int | None = None
    full_doc_id: str | None = None
    chunk_order_index: int | None = None
    file_path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """One row of a vector index (entities, relationships or chunks namespace).

    Field use by namespace (LightRAG's ``meta_fields``):
    entities: ``entity_name``; relationships: ``src_id``, ``tgt_id``; chunks:
    ``full_doc_id``. All may carry ``content``, ``file_path`` and ``source_id`` (the chunk ids
    the record came from, in any form: ``<SEP>`` string, ``{a,b}`` array text or a list).
    ``metadata`` carries first-class scope fields (``product_id``, ``category_id`` as a string
    or a list) and anything else a backend stores.
    ``vector`` is the raw (not necessarily normalised) embedding.
    """

    id: str
    vector: np.ndarray | Sequence[float] | None = None
    entity_name: str | None = None
    src_id: str | None = None
    tgt_id: str | None = None
    content: str | None = None
    source_id: Any = None
    file_path: str | None = None
    full_doc_id: str | None = None
    created_at: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: LightRAG's per-row float16 copy of the embedding exactly as a NanoVectorDB file stored
    #: it (its ``"vector"`` string), carried by copies between working directories so that
    #: it is written back byte for byte; ``None`` everywhere else (a lossy derivative of the
    #: vector: never compared, never stored by other backends).
    row_vector: str | None = None


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search result: the stored record (without its vector) and its cosine similarity."""

    record: VectorRecord
    score: float

    @property
    def id(self) -> str:
        """The record id."""
        return self.record.id


@dataclass(frozen=True, slots=True)
class RerankResult:
    """One reranker verdict: the index of a document in the request, and its score."""

    index: int
    relevance_score: float


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One conversation-history message (``role`` is ``user``/``assistant``/``system``)."""

    role: str
    content: str


# --------------------------------------------------------------------------------------
# Scope
# --------------------------------------------------------------------------------------

SCOPE_FIELDS: tuple[str, ...] = ("product_id", "category_id", "doc_ids")


class QueryScope(BaseModel):
    """Which part of the corpus a query may see.

    Each field takes one value or a list of values. Fields combine with AND, values within a
    field with OR: ``QueryScope(product_id=["p1", "p2"], category_id="crm")`` admits a source
    whose product is p1 or p2 *and* whose category is crm. ``doc_ids`` matches a chunk's
    ``full_doc_id``. An unknown field or a malformed value (empty string, non-string, empty
    list) raises :class:`~hexrag.core.errors.InvalidScope`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    product_id: tuple[str, ...] | None = None
    category_id: tuple[str, ...] | None = None
    doc_ids: tuple[str, ...] | None = None

    def __init__(self, **data: Any) -> None:
        unknown = sorted(set(data) - set(SCOPE_FIELDS))
        if unknown:
            raise InvalidScope(
                f"unknown scope field(s) {unknown}; valid fields are {list(SCOPE_FIELDS)}"
            )
        try:
            super().__init__(**data)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            raise InvalidScope(f"malformed scope: {exc}") from exc

    @field_validator("product_id", "category_id", "doc_ids", mode="before")
    @classmethod
    def _normalise(cls, value: Any, info: Any) -> tuple[str, ...] | None:
        if value is None:
            return None
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, (list, tuple, set, frozenset)):
            raise ValueError(f"{info.field_name} must be a string or a list of strings")
        out: dict[str, None] = {}  # insertion-ordered set: de-duplication in linear time
        for v in values:
            if not isinstance(v, str) or not v.strip():
                shown = repr(v)[:40]
                raise ValueError(f"{info.field_name} values must be non-empty strings, got {shown}")
            if "\x00" in v:
                raise ValueError(f"{info.field_name} values must not contain NUL characters")
            out[v] = None
        if not out:
            raise ValueError(f"{info.field_name} must not be an empty list")
        return tuple(out)

    @property
    def is_empty(self) -> bool:
        """True when no field is set (the scope admits everything)."""
        return self.product_id is None and self.category_id is None and self.doc_ids is None

    def fields(self) -> dict[str, tuple[str, ...]]:
        """The set fields and their admitted values."""
        return {f: v for f in SCOPE_FIELDS if (v := getattr(self, f)) is not None}


# --------------------------------------------------------------------------------------
# Parameters and settings
# --------------------------------------------------------------------------------------


#: LightRAG 1.5.7's defaults of the per-query values it reads from the environment
#: (``TOP_K``, ``CHUNK_TOP_K``, ``MAX_ENTITY_TOKENS``, ``MAX_RELATION_TOKENS``,
#: ``MAX_TOTAL_TOKENS``, ``RERANK_BY_DEFAULT``). The core never reads the environment:
#: :func:`hexrag.env.query_param` applies those variables, as LightRAG does.
QUERY_DEFAULTS: dict[str, Any] = {
    "top_k": 40,
    "chunk_top_k": 20,
    "max_entity_tokens": 6000,
    "max_relation_tokens": 8000,
    "max_total_tokens": 30000,
    "enable_rerank": True,
}


class QueryParam(BaseModel):
    """Per-query parameters, with LightRAG 1.5.7's names and defaults.

    Defaults are LightRAG's (:data:`QUERY_DEFAULTS`); the core reads no environment:
    :func:`hexrag.env.query_param` builds one with LightRAG's variables (``TOP_K``, ...)
    applied, as the API and the CLI do. ``scope`` and ``include_references`` are carried to
    the API; the core ignores ``include_references`` exactly like LightRAG.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    mode: QueryMode = "mix"
    only_need_context: bool = False
    only_need_prompt: bool = False
    response_type: str | None = "Multiple Paragraphs"
    stream: bool = False
    top_k: int = Field(default=QUERY_DEFAULTS["top_k"], ge=1)
    chunk_top_k: int = Field(default=QUERY_DEFAULTS["chunk_top_k"], ge=1)
    max_entity_tokens: int = Field(default=QUERY_DEFAULTS["max_entity_tokens"], ge=0)
    max_relation_tokens: int = Field(default=QUERY_DEFAULTS["max_relation_tokens"], ge=0)
    max_total_tokens: int = Field(default=QUERY_DEFAULTS["max_total_tokens"], ge=0)
    hl_keywords: list[str] = Field(default_factory=list)
    ll_keywords: list[str] = Field(default_factory=list)
    conversation_history: list[dict[str, Any]] = Field(default_factory=list)
    history_turns: int = Field(default=3, ge=0)
    user_prompt: str | None = None
    enable_rerank: bool = QUERY_DEFAULTS["enable_rerank"]
    include_references: bool = False
    disable_user_prompt_prefix: bool = False
    scope: QueryScope | None = None

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _typed_error(exc) from exc

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, value: Any) -> Any:
        if value is None or isinstance(value, QueryScope):
            return value
        if isinstance(value, Mapping):
            return QueryScope(**dict(value))
        raise InvalidScope(f"scope must be a QueryScope or a mapping, got {type(value).__name__}")


def _typed_error(exc: ValidationError) -> InvalidQuery:
    """A pydantic error on QueryParam as hexrag's typed error, with a readable message."""
    parts = []
    scope_error = False
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        scope_error = scope_error or loc.startswith("scope")
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    text = "; ".join(parts)
    return InvalidScope(text) if scope_error else InvalidQuery(text)


def _default_lookup() -> dict[str, RelationLookup]:
    return {"local": "pair", "global": "pair", "hybrid": "chunk", "mix": "chunk"}


def _parse_bool(raw: str) -> bool:
    return raw.strip().lower() in ("true", "1", "yes", "t", "on")


class EngineSettings(BaseModel):
    """Engine-wide settings, with LightRAG's names as aliases (``KG_CHUNK_PICK_METHOD``...).

    The core reads no environment: :func:`hexrag.env.engine_settings` builds one from
    LightRAG's variables (what a stack TOML, the CLI and the server use).

    ``relation_lookup`` chooses, per KG mode, how relation vector hits become graph edges:
    ``"chunk"`` (hexrag: the edge(s) carrying the hit's own chunk ids, seed 001) or
    ``"pair"`` (LightRAG: any edge between the two entities). Env
    ``HEXRAG_RELATION_LOOKUP`` takes JSON, e.g. ``{"hybrid": "pair"}``.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    kg_chunk_pick_method: ChunkPickMethod = Field(
        default="VECTOR", validation_alias="KG_CHUNK_PICK_METHOD"
    )
    related_chunk_number: int = Field(default=5, ge=0, validation_alias="RELATED_CHUNK_NUMBER")
    cosine_threshold: float = Field(
        default=0.2, ge=-1.0, le=1.0, allow_inf_nan=False, validation_alias="COSINE_THRESHOLD"
    )
    min_rerank_score: float = Field(
        default=0.0, allow_inf_nan=False, validation_alias="MIN_RERANK_SCORE"
    )
    enable_content_headings: bool = Field(default=True, validation_alias="ENABLE_CONTENT_HEADINGS")
    summary_language: str = Field(default="English", validation_alias="SUMMARY_LANGUAGE")
    user_prompt_prefix: str = Field(default="", validation_alias="USER_PROMPT_PREFIX")
    llm_model_name: str = Field(default="gpt-4o-mini", validation_alias="LLM_MODEL")
    llm_binding: str | None = Field(default=None, validation_alias="LLM_BINDING")
    llm_binding_host: str | None = Field(default=None, validation_alias="LLM_BINDING_HOST")
    enable_llm_cache: bool = Field(default=True, validation_alias="ENABLE_LLM_CACHE")
    relation_lookup: dict[str, RelationLookup] = Field(
        default_factory=_default_lookup,
        validation_alias="HEXRAG_RELATION_LOOKUP",
    )
    missing_chunk_sample_size: int = Field(default=5, ge=0)

    @field_validator("enable_content_headings", "enable_llm_cache", mode="before")
    @classmethod
    def _lightrag_bool(cls, value: Any) -> Any:
        return _parse_bool(value) if isinstance(value, str) else value

    @field_validator("kg_chunk_pick_method", mode="before")
    @classmethod
    def _pick(cls, value: Any) -> Any:
        # LightRAG silently returns no KG chunks for an unknown method; we refuse it.
        return value

    @field_validator("cosine_threshold", "min_rerank_score")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _lookup_modes(self) -> EngineSettings:
        merged = _default_lookup()
        for mode, strategy in self.relation_lookup.items():
            if mode not in KG_MODES:
                raise ValueError(f"relation_lookup: unknown mode {mode!r}")
            merged[mode] = strategy
        object.__setattr__(self, "relation_lookup", merged)
        return self

    def lookup_for(self, mode: str) -> RelationLookup:
        """The relation lookup strategy of ``mode``."""
        return self.relation_lookup.get(mode, "pair")  # type: ignore[return-value]
