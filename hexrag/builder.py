"""Opening a configured stack: the adapters a :class:`~hexrag.config.StackConfig` names.

:class:`StackBuilder` opens the stores, models and clients of a stack TOML
(:mod:`hexrag.config` only parses); :mod:`hexrag.bootstrap` is its front
(:func:`hexrag.bootstrap.open`). Each section is opened by the declaration of the adapter
package its URL names (:mod:`hexrag.openings`): the builder names no backend. Every failure
to open is a
:class:`~hexrag.core.errors.ConfigurationError` saying what to change (a missing extra names
the ``pip install 'hexrag[...]'`` to run), or a backend error.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hexrag.config import EmbedderSpec, StackConfig, parse_embedder
from hexrag.core.errors import ConfigurationError, NotFound
from hexrag.core.model import EngineSettings
from hexrag.core.versioning import CorpusVersion, track_writes
from hexrag.manifests import RecordedModel, StackModel, choose_embedder, normal_spec
from hexrag.model_openings import ModelContext, adapts, find_model, sized_spec
from hexrag.openings import Opening, Section, for_kind
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
from hexrag.ports.stack import ManifestStore, StackManifest

__all__ = ["StackBuilder", "close_all"]

log = logging.getLogger("hexrag.builder")

Progress = Callable[[str], None]
Closer = Callable[[], Awaitable[Any]]

@dataclass
class OpenedParts:
    """What :meth:`StackBuilder.open` opened: the stores (``entities``, ``relationships``,
    ``chunks``, ``graph``, ``chunk_store``; writes tracked by ``version``), the cache, the
    document store, LightRAG's document-side namespaces (``kv``), the models, the stack's
    recorded model, and the clients to close (and the working directory to write back).

    Internal to the builder (not exported, not a stack type): the hand-over from
    :meth:`StackBuilder.open` to :func:`hexrag.bootstrap.build_stack`, which makes the one
    :class:`~hexrag.ports.stack.Stack` and the :class:`~hexrag.bootstrap.App` of it."""

    stores: dict[str, Any]
    cache: Cache | None
    documents: DocumentStore | None
    kv: dict[str, Cache]
    embedder: Embedder
    llm: LLM | None
    reranker: Reranker | None
    settings: EngineSettings
    model: StackModel
    version: CorpusVersion | None = None
    closers: list[tuple[str, Closer]] = field(default_factory=list)
    committers: list[tuple[str, Closer]] = field(default_factory=list)


async def close_all(closers: list[tuple[str, Closer]]) -> None:
    """Close ``closers`` newest first; failures are logged (closing must go on)."""
    while closers:
        name, closer = closers.pop()
        try:
            await closer()
        except Exception as exc:  # closing must go on
            log.warning("closing %s failed: %s", name, exc)


class StackBuilder:
    """One build: the clients opened so far (to close them on failure) and shared pools."""

    def __init__(self, config: StackConfig, progress: Progress | None, *,
                 read_only: bool = False) -> None:
        #: A read-only opening (check, documents, export): no LLM, reranker or embedder
        #: client where the stack records its model, no table created, and a workspace
        #: that holds nothing is :class:`~hexrag.core.errors.NotFound`.
        self.read_only = read_only
        self.config = config
        self.plan = config.plan()
        self.settings = config.engine_settings()
        self.env = config.model_env()
        self.progress = progress
        self.closers: list[tuple[str, Closer]] = []
        self.committers: list[tuple[str, Closer]] = []
        self._pools: dict[str, Any] = {}
        self.documents: DocumentStore | None = None
        self._embedder: Embedder | None = None
        self.kv: dict[str, Cache] = {}

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)
        log.info("%s", message)

    async def close_all(self) -> None:
        """Close whatever was opened so far."""
        await close_all(self.closers)

    # -- the whole stack --------------------------------------------------------------------

    async def open(
        self,
        *,
        embedder: Embedder | None,
        llm: LLM | None,
        reranker: Reranker | None,
        verify: bool,
    ) -> OpenedParts:
        """Open everything the configuration names (see :class:`OpenedParts`)."""
        plan, config = self.plan, self.config
        model = await self.stack_model(embedder)
        assert self._embedder is not None
        embedder = self._embedder
        if config.embedding_dim is not None and embedder.dim != config.embedding_dim:
            raise ConfigurationError(
                f"embedding dimension mismatch: embedding_dim = {config.embedding_dim} but the "
                f"embedder {embedder.model_name!r} produces {embedder.dim}-dimensional vectors"
            )
        stores = await self.stores(embedder.dim)
        cache = await self.cache(embedder.dim)
        self.documents = await self.section("chunk_store", "documents", embedder.dim)
        self.kv = dict(await self.section("chunk_store", "kv", embedder.dim))
        if llm is None and plan.llm.kind != "none" and not self.read_only:
            llm = self.llm()
        if reranker is None and plan.reranker.kind != "none" and not self.read_only:
            reranker = self.reranker()
        if verify or self.read_only:
            await self.verify(stores)
        version: CorpusVersion | None = None
        if cache is not None and config.corpus_versioning:
            version = CorpusVersion(cache)
            stores = track_writes(version, **stores)
        return OpenedParts(
            stores=stores, cache=cache, documents=self.documents, kv=self.kv, embedder=embedder,
            llm=llm, reranker=reranker, settings=self.settings, model=model, version=version,
            closers=self.closers, committers=self.committers,
        )

    # -- the recorded model -----------------------------------------------------------------

    @property
    def layout(self) -> str:
        """The :data:`~hexrag.ports.stack.Layout` of the stack (recorded in its manifest)."""
        if self.whole_workdir:
            return "workdir"
        if self.config.layout == "lightrag":
            return "lightrag"
        return "memory" if self.plan.stores["chunk_store"].kind == "memory" else "hexrag"

    async def manifest_store(self) -> ManifestStore:
        """Where the stack keeps its manifest: the working directory's
        ``hexrag_manifest.json``, else the chunk store's backend (hexrag's ``<namespace>_
        manifest`` table or ``<namespace>:manifest:`` key; beside a LightRAG deployment
        ``hexrag_manifest`` / ``hexrag:manifest:``, one row or key per LightRAG workspace)."""
        store: ManifestStore = await self.section("chunk_store", "manifest")
        return store

    async def stack_model(self, embedder: Embedder | None) -> StackModel:
        """Read the manifest and choose the embedder (:mod:`hexrag.manifests`): an
        ``embedder`` given or the configuration's, checked against the recorded model; else
        the recorded model; else the default."""
        plan, config = self.plan, self.config
        store = await self.manifest_store()
        recorded = await store.read()
        where = ", ".join(f"{k} {v}" for k, v in plan.describe().items()
                          if k not in ("embedder", "llm", "reranker"))
        named: Embedder | None = embedder
        spec: str | None = None
        if named is None and config.embedder_named():
            self.say(f"embedder: {plan.describe()['embedder']}")
            configured = config.embedder_spec()
            sized = sized_spec(configured, recorded.embedding_dim if recorded else None)
            if sized is not None:  # a model without a fixed size takes the recorded one
                configured = sized
                named = await self._resolve_spec(configured)
            else:
                named = await self.embedder()
            spec = normal_spec(configured, named)

        async def default() -> Embedder:
            self.say(f"embedder: {plan.describe()['embedder']}")
            return await self.embedder()

        if self.read_only and named is None and recorded is not None:
            # nothing is embedded: the recorded name and size stand for the model
            model: Embedder = RecordedModel(recorded)
            chosen_spec, known = recorded.embedder, True
        else:
            model, chosen_spec, known = await choose_embedder(
                recorded, named, where=where, default=default, resolve=self._resolve_spec,
            )
        self._embedder = model
        if recorded is not None:
            self.say(f"embedder recorded by the stack: {recorded.embedding_model} "
                     f"({recorded.embedding_dim}-dimensional)")
        current = StackManifest(
            embedding_model=model.model_name, embedding_dim=model.dim,
            embedder=spec or chosen_spec, layout=self.layout,
            workspace=(config.workspace or "") if self.layout in ("workdir", "lightrag")
            else plan.namespace,
        )
        return StackModel(store, recorded, current, known=known, where=where)

    async def _resolve_spec(self, spec: str) -> Embedder:
        """A recorded (or named) spec, built like the configuration's embedder."""
        return await self.embedder(parse_embedder(spec, model=self.config.embedding_model))

    # -- models -----------------------------------------------------------------------------

    def _models(self, model: str | None = None) -> ModelContext:
        """The context of a model's declaration: this stack's environment, its clients."""
        return ModelContext(env=self.env, dim=self.config.embedding_dim, model=model,
                            say=self.say, closers=self.closers)

    async def embedder(self, spec: EmbedderSpec | None = None) -> Embedder:
        """The configured embedder (or the one ``spec`` names), built by the declaration
        its spec names (:mod:`hexrag.model_openings`) or from ``package.module:callable``."""
        from hexrag.embedders import aresolve_embedder

        config = self.config
        spec = spec or self.plan.embedder
        value = spec.value
        if config.embedding_dim is None and adapts(value):
            # a model without a fixed size takes the stored vectors' (a working directory's)
            value = sized_spec(value, self._workdir_dim()) or value
        return await aresolve_embedder(value, dim=config.embedding_dim,
                                       context=self._models(config.embedding_model))

    def llm(self) -> LLM:
        """The configured LLM, built by the declaration its spec names."""
        spec = self.plan.llm
        declared = find_model("llm", spec.value)
        assert declared is not None  # the plan parsed it
        model: LLM = declared.make(self._models(self.config.llm_model), spec.value,
                                   what=f"llm = {spec.value}")
        return model

    def reranker(self) -> Reranker:
        """The configured reranker, built by the declaration its spec names."""
        spec = self.plan.reranker
        assert spec.value is not None
        declared = find_model("reranker", spec.value)
        assert declared is not None  # the plan parsed it
        model: Reranker = declared.make(self._models(), spec.value, what="reranker")
        self.say(f"reranker: {self.plan.describe()['reranker']}")
        return model

    # -- stores: each section opened by its adapter package's declaration -----------------

    def _workdir_dim(self) -> int | None:
        """The dimension of the working directory's vectors, read from a file head."""
        if self.plan.workdir is None or not self.whole_workdir:  # beside a deployment: a graph
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

    @property
    def whole_workdir(self) -> bool:
        """The working directory provides every store (LightRAG's file storages)."""
        return self.plan.workdir is not None and not self.lightrag_in_place

    def source(self, role: str) -> tuple[Opening, str, str | None]:
        """Which declaration holds ``role``'s sections, in which layout, at which URL."""
        spec = self.plan.stores[role]
        if self.whole_workdir and not (role == "cache" and spec.kind != "memory"):
            return for_kind("workdir"), "workdir", None
        layout = self.config.layout
        if layout == "lightrag" and role == "graph_store" and spec.kind == "memory":
            return for_kind("workdir"), layout, None  # LightRAG's NetworkX graph
        return for_kind(spec.kind), layout, spec.url

    async def section(self, role: str, section: Section, dim: int = 0) -> Any:
        """Open ``section`` of the store ``role`` names (see :mod:`hexrag.openings`)."""
        opening, layout, url = self.source(role)
        what = f"{role} = {self.plan.stores[role].describe()}"
        return await opening.open_section(_Context.of(self, layout, dim), section, url, what=what)

    async def stores(self, dim: int) -> dict[str, Any]:
        """The five stores a query engine reads."""
        out: dict[str, Any] = dict(await self.section("vector_index", "vectors", dim))
        out["graph"] = await self.section("graph_store", "graph", dim)
        out["chunk_store"] = await self.section("chunk_store", "chunks", dim)
        return out

    async def cache(self, dim: int) -> Cache | None:
        """LightRAG's LLM response cache (``None`` for ``cache = none``)."""
        if self.plan.stores["cache"].kind == "none":
            return None
        cache: Cache = await self.section("cache", "llm_cache", dim)
        return cache

    async def shared(self, key: str, factory: Callable[[], Awaitable[Any]]) -> Any:
        """One object per ``key`` for the whole stack (a PostgreSQL pool per DSN, the
        loaded working directory)."""
        if key not in self._pools:
            self._pools[key] = await factory()
        return self._pools[key]

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
        workspace = self.config.workspace
        if self.read_only and workspace and all(c.startswith("0 ") for c in counts):
            raise NotFound(f"workspace {workspace!r} holds no record: no such workspace")



@dataclass(frozen=True)
class _Context:
    """The :class:`~hexrag.openings.OpeningContext` of one section: the builder's options
    (as they stand when the section is opened) and collectors, in ``layout``, for vectors
    of dimension ``dim``."""

    builder: StackBuilder
    layout: str
    dim: int
    namespace: str
    lightrag_workspace: str
    workdir: Path | None
    manifest_key: str
    cosine_threshold: float
    store_timeout: float
    read_only: bool

    @classmethod
    def of(cls, builder: StackBuilder, layout: str, dim: int) -> _Context:
        """The context of a section the builder opens now."""
        ws = builder.lightrag_workspace
        lightrag = builder.config.layout == "lightrag"
        return cls(
            builder, layout, dim, builder.plan.namespace, ws, builder.plan.workdir,
            f"stack.{ws or 'default'}" if lightrag else "stack",
            builder.settings.cosine_threshold, builder.config.store_timeout, builder.read_only,
        )

    def option(self, name: str) -> Any:
        return getattr(self.builder.config, name, None)

    def say(self, message: str) -> None:
        self.builder.say(message)

    def close_with(self, name: str, closer: Closer) -> None:
        self.builder.closers.append((name, closer))

    def commit_with(self, name: str, committer: Closer) -> None:
        self.builder.committers.append((name, committer))

    async def shared(self, key: str, factory: Callable[[], Awaitable[Any]]) -> Any:
        return await self.builder.shared(key, factory)
