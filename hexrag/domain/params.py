"""Per-query parameters and engine-wide settings, with LightRAG 1.5.7's names and defaults.

``QueryParam`` keeps LightRAG 1.5.7's field names and defaults; ``EngineSettings`` holds what
LightRAG keeps on the ``LightRAG`` object (``KG_CHUNK_PICK_METHOD``, ``RELATED_CHUNK_NUMBER``,
``COSINE_THRESHOLD``, ...). Neither reads the environment: :mod:`hexrag.env` applies
LightRAG's variables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hexrag.domain.errors import InvalidQuery, InvalidScope
from hexrag.domain.scope import QueryScope

QueryMode = Literal["local", "global", "hybrid", "naive", "mix", "bypass", "auto"]
QUERY_MODES: tuple[str, ...] = ("local", "global", "hybrid", "naive", "mix", "bypass", "auto")
KG_MODES: tuple[str, ...] = ("local", "global", "hybrid", "mix")
ChunkPickMethod = Literal["VECTOR", "WEIGHT"]
RelationLookup = Literal["chunk", "pair"]


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
