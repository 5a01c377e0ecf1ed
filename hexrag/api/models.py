"""Request and response models of the HTTP API: LightRAG 1.5.7's ``QueryRequest`` plus ``scope``."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hexrag.core.model import QueryParam, QueryScope
from hexrag.core.query.validation import MIN_RAG_QUERY_WEIGHT, TOO_SHORT_MESSAGE, rag_query_weight
from hexrag.env import query_param

__all__ = ["QueryDataResponse", "QueryRequest", "QueryResponse", "ScopeModel"]

MAX_QUERY_CHARS = 65536
MAX_AGGREGATE_CHARS = 131072
MAX_SCOPE_VALUES = 1000  # hard cap of the schema; ApiLimits.max_scope_values is the setting
SCOPE_FIELDS = ("product_id", "category_id", "doc_ids")

ScopeValue = str | Annotated[list[str], Field(max_length=MAX_SCOPE_VALUES)] | None


def text_problem(text: str, *, control: bool = False) -> str | None:
    """Why ``text`` cannot be accepted (``None`` when it can): a NUL character, a lone
    surrogate (not encodable as UTF-8), or with ``control`` any other C0 control character."""
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (lone surrogate)"
    if control and any(c < " " for c in text):
        return "must not contain control characters"
    return None


def _check_text(value: str | None, *, control: bool = False) -> str | None:
    if value is not None:
        problem = text_problem(value, control=control)
        if problem:
            raise ValueError(problem)
    return value


def _check_values(value: Any, *, control: bool = True) -> Any:
    for v in [value] if isinstance(value, str) else (value or []):
        if isinstance(v, str):
            _check_text(v, control=control)
    return value


class ScopeModel(BaseModel):
    """hexrag's scope: each field one value or a list; AND across fields, OR within one."""

    model_config = ConfigDict(extra="forbid")

    product_id: ScopeValue = None
    category_id: ScopeValue = None
    doc_ids: ScopeValue = None

    @field_validator("product_id", "category_id", "doc_ids")
    @classmethod
    def _safe(cls, value: Any) -> Any:
        return _check_values(value)

    def to_scope(self) -> QueryScope:
        """The domain scope (raises ``InvalidScope`` on malformed values)."""
        return QueryScope(**self.model_dump(exclude_none=True))


class QueryRequest(BaseModel):
    """LightRAG's ``QueryRequest`` (spec 1.3), field for field, plus ``scope``."""

    query: str = Field(..., max_length=MAX_QUERY_CHARS, description="The question.")
    mode: Literal["local", "global", "hybrid", "naive", "mix", "bypass", "auto"] = "mix"
    only_need_context: bool | None = None
    only_need_prompt: bool | None = None
    response_type: str | None = Field(default=None, min_length=1, max_length=256)
    top_k: int | None = Field(default=None, ge=1, le=1000)
    chunk_top_k: int | None = Field(default=None, ge=1, le=1000)
    max_entity_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    max_relation_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    max_total_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    hl_keywords: list[str] = Field(default_factory=list, max_length=64)
    ll_keywords: list[str] = Field(default_factory=list, max_length=64)
    conversation_history: list[dict[str, Any]] | None = Field(default=None, max_length=128)
    history_turns: int | None = Field(default=None, ge=0, le=128)
    user_prompt: str | None = Field(default=None, max_length=MAX_QUERY_CHARS)
    disable_user_prompt_prefix: bool | None = None
    enable_rerank: bool | None = None
    include_references: bool | None = True
    include_chunk_content: bool | None = False
    include_progress: bool | None = False
    stream: bool | None = None
    scope: ScopeModel | None = Field(default=None, description="hexrag: restrict retrieval.")
    product_id: ScopeValue = Field(
        default=None, description="hexrag: the same as scope.product_id (merged into scope)."
    )
    category_id: ScopeValue = Field(
        default=None, description="hexrag: the same as scope.category_id (merged into scope)."
    )
    doc_ids: ScopeValue = Field(
        default=None, description="hexrag: the same as scope.doc_ids (merged into scope)."
    )

    @field_validator("query", mode="after")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        _check_text(value)
        value = value.strip()
        if not value:
            raise ValueError("Query must not be empty.")
        return value

    @field_validator("user_prompt", "response_type")
    @classmethod
    def _safe_text(cls, value: str | None) -> str | None:
        return _check_text(value)

    @field_validator("product_id", "category_id", "doc_ids")
    @classmethod
    def _safe_scope(cls, value: Any) -> Any:
        return _check_values(value)

    @field_validator("hl_keywords", "ll_keywords")
    @classmethod
    def _keyword_len(cls, value: list[str]) -> list[str]:
        for kw in value:
            if len(kw) > 512:
                raise ValueError("each keyword must be at most 512 characters")
            _check_text(kw, control=True)
        return value

    @field_validator("conversation_history")
    @classmethod
    def _history(cls, value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for i, msg in enumerate(value or []):
            role, content = msg.get("role"), msg.get("content")
            if not isinstance(role, str) or not role or len(role) > 64:
                raise ValueError(f"message {i}: 'role' must be a non-empty string (max 64 chars)")
            if not isinstance(content, str) or len(content) > 32768:
                raise ValueError(f"message {i}: 'content' must be a string (max 32768 chars)")
            for text in (*msg, *msg.values()):  # extra keys (e.g. "name") are kept
                problem = text_problem(text) if isinstance(text, str) else None
                if problem:
                    raise ValueError(f"message {i}: {problem}")
        return value

    @model_validator(mode="after")
    def _merge_top_level_scope(self) -> QueryRequest:
        given = {f: getattr(self, f) for f in SCOPE_FIELDS if getattr(self, f) is not None}
        if not given:
            return self
        inner = self.scope.model_dump(exclude_none=True) if self.scope is not None else {}
        for name, value in given.items():
            if name in inner and inner[name] != value:
                raise ValueError(
                    f"{name} is given both at the top level and in scope, with different values"
                )
            inner[name] = value
        self.scope = ScopeModel(**inner)
        for name in given:
            setattr(self, name, None)
        return self

    @model_validator(mode="after")
    def _aggregate(self) -> QueryRequest:
        if self.mode != "bypass" and rag_query_weight(self.query) < MIN_RAG_QUERY_WEIGHT:
            raise ValueError(TOO_SHORT_MESSAGE)
        total = len(self.query) + len(self.user_prompt or "")
        if self.conversation_history:
            total += len(json.dumps(self.conversation_history, ensure_ascii=False))
        if total > MAX_AGGREGATE_CHARS:
            raise ValueError(
                f"query + user_prompt + conversation_history exceed {MAX_AGGREGATE_CHARS} chars"
            )
        return self

    def to_query_param(self, *, stream: bool) -> QueryParam:
        """LightRAG's ``to_query_params``: unset fields fall back to QueryParam defaults."""
        data = self.model_dump(
            exclude_none=True,
            exclude={
                "query", "include_chunk_content", "include_progress", "scope", "stream",
                *SCOPE_FIELDS,
            },
        )
        param = query_param(**data, stream=stream)
        if self.scope is not None:
            param.scope = self.scope.to_scope()
        return param


class QueryResponse(BaseModel):
    """``POST /query`` response (LightRAG's ``QueryResponse``)."""

    response: str
    references: list[dict[str, Any]] | None = None
    response_time: float
    llm_generated: bool


class QueryDataResponse(BaseModel):
    """``POST /query/data`` response (LightRAG's ``QueryDataResponse``)."""

    status: str
    message: str
    data: dict[str, Any]
    metadata: dict[str, Any]


class ErrorResponse(BaseModel):
    """A refused or failed request: a short message, and an id to find it in the server log."""

    detail: Any
    error_id: str | None = None


class ValidationErrorItem(BaseModel):
    """One problem of a refused request (never an excerpt of more than a few hundred chars)."""

    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorResponse(BaseModel):
    """``422`` on ``/query`` and ``/query/stream``."""

    detail: list[ValidationErrorItem]
