"""The composition root: stores and models in, a :class:`QueryEngine` out.

:func:`compose_engine` is the one place an engine is assembled from opened stores (a mapping
with ``entities``, ``relationships``, ``chunks``, ``graph``, ``chunk_store`` and optionally
``cache``, or an object with those attributes: the one :class:`~hexrag.ports.stack.Stack`)
and models. Every front door uses it: :func:`build_stack` (the stack
a configuration names, opened by :class:`hexrag.builder.StackBuilder`), the CLI, the server,
the demo, :mod:`hexrag.testing` and the benches. :mod:`hexrag.config` only parses.

:func:`open` is the one place stores are opened. A *stack description* is a stack TOML file
(``*.toml``, see :mod:`hexrag.config`), a LightRAG working directory, a
:class:`~hexrag.config.StackConfig` or ``"memory"``; :func:`open` (also named
:func:`open_stack`) turns one into an :class:`App`: its sections as the one
:class:`~hexrag.ports.stack.Stack` (each opened by its adapter package's declaration,
:mod:`hexrag.openings`), an engine, its recorded model (:mod:`hexrag.manifests`), and
``record_model``/``commit``/``aclose``. A working directory is read into memory (a
:class:`~hexrag.adapters.workdir.WorkdirStack`, which is that Stack) and, when it is written
to (an import or migration target), written back atomically by ``commit`` (LightRAG's file
format, so LightRAG 1.5.7 opens it), its ``hexrag_manifest.json`` last.
:func:`open_copy_source` opens a stack to be copied out of: the same Stack, scan-only when
a working directory's vector files are read page by page.

One stack type: :class:`~hexrag.ports.stack.Stack`. :class:`App` is an opened stack (the
Stack, its engine, its model); ``Stack``/``OpenedStack`` here (and ``hexrag.config.Stack``)
are old names of :class:`App`, ``CopySource`` an old name of the Stack, kept so that code
written against them runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

from hexrag import model_openings
from hexrag.builder import StackBuilder, close_all
from hexrag.config import StackConfig
from hexrag.core.errors import ConfigurationError, NotFound
from hexrag.core.model import EngineSettings
from hexrag.core.query.engine import QueryEngine
from hexrag.manifests import StackModel, choose_embedder, normal_spec, resolve_spec
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
from hexrag.ports.stack import Stack as _Stack
from hexrag.ports.stack import StackManifest

__all__ = [
    "STORE_ROLES",
    "App",
    "CopySource",
    "OpenedStack",
    "RefusingLLM",
    "Stack",
    "build_engine",
    "build_llm",
    "build_stack",
    "compose_engine",
    "compose_ingestor",
    "open",
    "open_copy_source",
    "open_stack",
]

Progress = Callable[[str], None]
Closer = Callable[[], Awaitable[Any]]

STORE_ROLES = ("entities", "relationships", "chunks", "graph", "chunk_store")
"""The stores every engine needs (``cache`` is optional)."""


def _picker(stores: Any) -> Callable[[str], Any]:
    """``stores``' entry or attribute ``name`` (``None`` when absent)."""

    def pick(name: str) -> Any:
        if isinstance(stores, Mapping):
            return stores.get(name)
        return getattr(stores, name, None)

    return pick


def _required(pick: Callable[[str], Any], what: str) -> dict[str, Any]:
    """The :data:`STORE_ROLES` stores, or a ConfigurationError naming the missing ones."""
    found = {name: pick(name) for name in STORE_ROLES}
    missing = [name for name, store in found.items() if store is None]
    if missing:
        raise ConfigurationError(f"cannot compose {what}: no {', '.join(missing)} store")
    return found


def compose_engine(
    stores: Any,
    *,
    embedder: Embedder,
    llm: Any = None,
    reranker: Any = None,
    cache: Any = None,
    settings: Any = None,
    corpus_version: Any = None,
    store_cache: bool = True,
    fragments: Any = None,
    tokenizer: Any = None,
    clock: Callable[[], int] | None = None,
) -> QueryEngine:
    """A :class:`QueryEngine` over ``stores`` (see the module docstring) and the models.

    ``cache`` defaults to the stores' own ``cache`` entry or attribute, when they have one
    (``store_cache=False``: no cache unless ``cache`` is given). ``fragments`` (for
    scope-correct descriptions) defaults to the stores' ``documents`` entry or attribute.
    ``tokenizer`` defaults to the offline tiktoken ``gpt-4o-mini`` tokenizer, ``clock`` (the
    epoch seconds stamped on cache entries) to the system clock.
    Raises :class:`~hexrag.core.errors.ConfigurationError` naming any missing store.
    """
    pick = _picker(stores)
    found = _required(pick, "an engine")
    if cache is None and store_cache:
        cache = pick("cache")
    kwargs: dict[str, Any] = {}
    if settings is not None:
        kwargs["settings"] = settings
    if corpus_version is not None:
        kwargs["corpus_version"] = corpus_version
    if fragments is None:
        fragments = pick("documents")
    if fragments is not None:
        kwargs["fragments"] = fragments
    if clock is not None:
        kwargs["clock"] = clock
    kwargs["repair_json"] = _repair_json()
    return QueryEngine(
        **found, embedder=embedder, llm=llm, reranker=reranker, cache=cache,
        tokenizer=tokenizer if tokenizer is not None else _default_tokenizer(), **kwargs
    )


def _repair_json() -> Callable[[str], Any]:
    """LightRAG's lenient JSON parser (``json_repair.loads``) for LLM answers that are not
    strict JSON: the core is given it, it does not import it."""
    import json_repair

    return json_repair.loads  # type: ignore[no-any-return]


def _default_tokenizer() -> Any:
    """The tokenizer an engine or an ingestor gets when none is given: the declared default
    (:data:`hexrag.model_openings.DEFAULT_MODELS`: tiktoken's ``o200k_base``, LightRAG's
    ``gpt-4o-mini`` tokenizer, read offline)."""
    spec = model_openings.DEFAULT_MODELS["tokenizer"]
    declared = model_openings.find_model("tokenizer", spec)
    if declared is None:  # a packaging defect
        raise ConfigurationError(f"no adapter package declares the tokenizer {spec!r}")
    return declared.make(model_openings.ModelContext(), spec)


def compose_ingestor(
    stores: Any,
    *,
    llm: Any,
    embedder: Embedder,
    documents: Any = None,
    tokenizer: Any = None,
    clock: Callable[[], int] | None = None,
    settings: Any = None,
    cache: Any = None,
    kv: Any = None,
) -> Any:
    """An :class:`~hexrag.core.ingest.ingestion.Ingestor` over ``stores`` (as for
    :func:`compose_engine`), the extraction ``llm``, the ``embedder`` and the stack's
    ``documents`` store (default: the stores' ``documents``; ``None``: ingestion works,
    deletion and status rows do not). ``tokenizer`` defaults to the offline tiktoken
    ``gpt-4o-mini`` tokenizer, ``clock`` to ``time.time``; ``cache`` (LightRAG's extraction
    LLM cache) to the stores' ``cache``; ``kv`` (LightRAG's document-side stores, namespace
    -> store) to the stores' ``kv``."""
    import time

    from hexrag.core.ingest.ingestion import Ingestor

    pick = _picker(stores)
    found = _required(pick, "an ingestor")
    if tokenizer is None:
        tokenizer = _default_tokenizer()
    if cache is None:
        cache = pick("cache")
    if kv is None:
        kv = pick("kv")
    if documents is None:
        documents = pick("documents")
    return Ingestor(
        **found, llm=llm, embedder=embedder, tokenizer=tokenizer,
        clock=clock or (lambda: int(time.time())), settings=settings, documents=documents,
        cache=cache, kv=kv,
    )


_T = TypeVar("_T")


class _Section(Generic[_T]):
    """A read-only attribute of :class:`App` that reads the same name on its ``stores``
    (the sections of :class:`~hexrag.ports.stack.Stack`, as on the stack itself)."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, app: None, owner: type) -> _Section[_T]: ...

    @overload
    def __get__(self, app: App, owner: type) -> _T: ...

    def __get__(self, app: App | None, owner: type) -> _Section[_T] | _T:
        if app is None:
            return self
        return cast(_T, getattr(app.stores, self.name))

    def __set__(self, app: App, value: _T) -> None:
        raise AttributeError(f"{self.name} is read-only: it is app.stores.{self.name}")


@dataclass
class App:
    """An opened stack: its sections (``stores``, the one
    :class:`~hexrag.ports.stack.Stack`), the engine over them, its recorded model
    (``model``), and how to record, commit, probe and close it. :func:`open_stack` (a TOML
    or a LightRAG directory) and :func:`build_stack` (a configuration) return one."""

    stores: _Stack
    engine: QueryEngine
    #: The stack's manifest and the model in use (:class:`~hexrag.manifests.StackModel`).
    model: StackModel | None = None
    description: str = ""
    #: The parsed configuration (:class:`~hexrag.config.StackPlan`) of a configured stack.
    plan: Any = None
    version: Any = None
    #: A working directory held in memory (written back by :meth:`commit`).
    workdir: Path | None = None
    workdir_stack: Any = None
    closers: list[tuple[str, Closer]] = field(default_factory=list)
    committers: list[tuple[str, Closer]] = field(default_factory=list)

    @property
    def dim(self) -> int:
        """The stack's vector dimension."""
        return self.stores.entities.dim

    # The sections, as on the stack itself (``app.graph`` is ``app.stores.graph``).
    entities = _Section[VectorIndex]("The entities' vector index.")
    relationships = _Section[VectorIndex]("The relationships' vector index.")
    chunks = _Section[VectorIndex]("The chunks' vector index.")
    graph = _Section[GraphStore]("The knowledge graph.")
    chunk_store = _Section[ChunkStore]("The text chunks.")
    cache = _Section[Cache | None]("LightRAG's LLM response cache (``None``: none).")
    documents = _Section[DocumentStore | None](
        "The stack's document status rows and fragments (``None``: it keeps none)."
    )

    def ingestor(self, llm: Any, *, settings: Any = None) -> Any:
        """An :class:`~hexrag.core.ingest.ingestion.Ingestor` writing every section of the stack
        (vectors, graph, chunks, cache, documents, ``kv``) with its model; call
        :meth:`record_model` before the first write."""
        return compose_ingestor(
            self.stores, llm=llm, embedder=self.engine.embedder,
            tokenizer=self.engine.tokenizer, settings=settings,
        )

    async def record_model(self) -> None:
        """Record the model in use in the stack, unless it records one (call it before the
        stack's first write: ingest, delete, import, a migration target; see
        :meth:`hexrag.manifests.StackModel.record`)."""
        if self.model is not None:
            await self.model.record(holds_data=await self.stores.entities.count() > 0)
            self.stores.embedding_model = self.model.embedding_model

    async def commit(self) -> None:
        """Write what lives in files: a working directory (then its manifest), LightRAG's
        NetworkX graph of a deployment; servers persist every write themselves."""
        for _name, commit in self.committers:
            await commit()
        if self.workdir_stack is not None and self.workdir is not None:
            from hexrag.adapters.workdir import save_workdir

            await asyncio.to_thread(save_workdir, self.workdir_stack, self.workdir)
        flush = getattr(self.stores.manifest, "flush", None)
        if flush is not None:
            await asyncio.to_thread(flush)

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
        out: dict[str, str] = (self.plan.describe() if self.plan is not None
                               else {"stack": self.description})
        if self.model is not None and self.model.recorded is not None:
            out["embedder"] = (f"{self.model.recorded.embedding_model} "
                               f"({self.model.recorded.embedding_dim}d, recorded by the stack)")
        return out

    async def empty_stores(self) -> list[str]:
        """The required stores that hold no record (``/health`` is red for each)."""
        out = []
        for name, probe in self.probes().items():
            if name != "cache" and await probe() == 0:
                out.append(name)
        return out

    async def aclose(self) -> None:
        """Close every client the stack opened, newest first; failures are logged."""
        await self.stores.close()
        await close_all(self.closers)


class RefusingLLM:
    """The LLM of a deletion without one: only a re-summarised description would call it
    (LightRAG's merge rule), and then it refuses, naming what to configure."""

    model_name = "none"

    async def complete(self, prompt: str, **_: Any) -> str:
        """Refuse (:class:`~hexrag.core.errors.ConfigurationError`)."""
        raise ConfigurationError(
            "rebuilding a description needs an LLM summary (LightRAG's rule); pass --llm "
            "openai:MODEL or set llm in the stack"
        )

    async def stream(self, prompt: str, **_: Any) -> Any:  # pragma: no cover - unused
        """Refuse, as :meth:`complete`."""
        yield await self.complete(prompt)


#: The names :class:`App` had before there was one stack type (a configured stack, an
#: opened one); the stack itself is :class:`hexrag.ports.stack.Stack` (``App.stores``).
Stack = OpenedStack = App


async def build_stack(
    config: StackConfig,
    *,
    embedder: Embedder | None = None,
    llm: LLM | None = None,
    reranker: Reranker | None = None,
    verify: bool = True,
    progress: Progress | None = None,
    read_only: bool = False,
    engine_settings: EngineSettings | None = None,
) -> App:
    """Build the stack ``config`` describes (:class:`~hexrag.builder.StackBuilder` opens
    it, :func:`compose_engine` assembles the engine).

    The embedder is the one the stack records (:mod:`hexrag.manifests`); ``embedder`` or a
    configured one must be that model. ``embedder``/``llm``/``reranker`` instances replace
    the configured ones (library use, tests). ``verify`` makes one cheap read per store, so
    an unreachable backend or a vector table of another dimension fails here, at startup,
    with a :class:`~hexrag.core.errors.HexragError`. ``progress`` receives one line per
    step. On any failure, whatever was opened is closed again. ``read_only`` (commands
    that only read: check, documents, export): no LLM or reranker, the recorded model's
    name instead of its client, nothing created, an empty named workspace is
    :class:`~hexrag.core.errors.NotFound`. ``engine_settings`` replace the configuration's
    (``[settings]`` and LightRAG's variables).
    """
    builder = StackBuilder(config, progress, read_only=read_only)
    if engine_settings is not None:
        builder.settings = engine_settings
    try:
        parts = await builder.open(embedder=embedder, llm=llm, reranker=reranker, verify=verify)
    except BaseException:
        await builder.close_all()
        raise
    stores = _Stack(
        **parts.stores, cache=parts.cache, embedding_model=parts.model.embedding_model,
        documents=parts.documents, kv=parts.kv, manifest=parts.model.store,
    )
    engine = compose_engine(
        stores, embedder=parts.embedder, llm=parts.llm, reranker=parts.reranker,
        cache=parts.cache, settings=parts.settings, corpus_version=parts.version,
        store_cache=False, fragments=parts.documents,
    )
    return App(
        stores=stores, engine=engine, model=parts.model, plan=builder.plan,
        version=parts.version, closers=parts.closers, committers=parts.committers,
    )


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
    builder = StackBuilder(config, None)
    return builder.llm() if builder.plan.llm.kind != "none" else None


#: What :func:`open_copy_source` returned before it returned the one stack type.
CopySource = _Stack


async def open_copy_source(
    spec: str | Path, *, progress: Progress | None = None, workspace: str | None = None,
    streaming: bool = True,
) -> _Stack:
    """Open ``spec`` to copy everything out of it, with bounded memory: the one
    :class:`~hexrag.ports.stack.Stack` (``await stack.close()`` releases it).

    A LightRAG working directory holding its three ``vdb_*.json`` files is **streamed**
    (unless ``streaming`` is false): its vectors are read page by page from the files
    (:func:`hexrag.adapters.workdir.source.open_workdir_source`, about 0.15 GB at 100k
    entities where :func:`open_stack` holds 2 GB); those sections can only be scanned, not
    queried (:attr:`~hexrag.ports.stack.Stack.scan_only`). Anything else is the stack
    :func:`open_stack` opens read-only, its clients closed with it.
    """
    path = Path(spec).expanduser()
    say = progress or (lambda _m: None)
    if streaming and not _is_config(path):
        from hexrag.adapters.workdir.source import close_workdir_source, open_workdir_source
        from hexrag.adapters.workdir.stack import missing_query_files, resolve_workdir

        if workspace:
            from hexrag.config import validate_workspace

            validate_workspace(workspace)
        directory = path / workspace if workspace else path
        if directory.is_dir() and not missing_query_files(directory):
            directory = resolve_workdir(directory)
            try:
                stores = await asyncio.to_thread(open_workdir_source, directory)
            except ConfigurationError as exc:  # e.g. a re-indented file: the loader reads it
                say(f"{exc}; loading {directory} whole instead")
            else:
                say(f"reading LightRAG working directory {directory} page by page")

                async def close() -> None:
                    close_workdir_source(stores)

                from hexrag.adapters.workdir.manifest import WorkdirManifestStore

                recorded = await WorkdirManifestStore(directory).read()
                if recorded is not None:
                    stores.embedding_model = recorded.embedding_model
                stores.scan_only = True
                stores.closers.append(close)
                return stores
    opened = await open_stack(path, progress=say, workspace=workspace, read_only=True)

    async def close_clients() -> None:
        await close_all(opened.closers)

    opened.stores.closers.insert(0, close_clients)  # after the stores, as App.aclose does
    return opened.stores


def _is_config(spec: Path) -> bool:
    return spec.suffix.lower() == ".toml"


def _memory_config(embedder: Embedder | str | None) -> StackConfig:
    """A stack of memory stores, every role named so that no ``HEXRAG_*`` or LightRAG
    variable redirects it (nor gives it an LLM or a reranker)."""
    dim = embedder.dim if embedder is not None and not isinstance(embedder, str) else None
    return StackConfig(
        workdir=None, layout="hexrag", vector_index="memory", graph_store="memory",
        chunk_store="memory", cache="memory", namespace="hexrag", llm="none",
        reranker="none",
        embedder=embedder if isinstance(embedder, str) else model_openings.DEFAULT_MODELS[
            "embedder"],
        embedding_dim=dim, corpus_versioning=False, settings={}, workspace=None,
    )


async def open(
    spec: str | Path | StackConfig,
    *,
    create_dim: int | None = None,
    embedder: Embedder | str | None = None,
    progress: Progress | None = None,
    workspace: str | None = None,
    read_only: bool = False,
    llm: LLM | None = None,
    reranker: Reranker | None = None,
    settings: Mapping[str, Any] | EngineSettings | None = None,
    verify: bool = True,
) -> App:
    """Open the stack ``spec`` describes: **the one place stores are opened** (every
    section through its adapter package's declaration, :mod:`hexrag.openings`).

    ``spec`` is a stack TOML file (``*.toml``), a LightRAG working directory, a
    :class:`~hexrag.config.StackConfig`, or ``"memory"``: an in-process stack of memory
    stores that no environment variable redirects (the demo, tests, library use; give the
    ``embedder``, ``settings`` as an :class:`~hexrag.core.model.EngineSettings`). The stack
    is opened in ``workspace`` (through :func:`hexrag.config.workspace_config`; a working
    directory's ``<dir>/<workspace>/``).

    ``create_dim``: a working directory that does not exist yet (or holds no LightRAG file) is
    opened as a new, empty stack of that dimension (an import or migration target); without
    it such a path is :class:`~hexrag.core.errors.NotFound`. The embedder is the one the
    stack records (:mod:`hexrag.manifests`); ``embedder`` (an object or a spec) names one,
    which must be the recorded model. Nothing is written until :meth:`App.record_model`
    and :meth:`App.commit`; ``read_only``: see :func:`build_stack`. ``llm`` replaces the
    configured LLM; ``settings`` (:class:`~hexrag.core.model.EngineSettings` fields) go over
    the TOML's ``[settings]`` (an :class:`~hexrag.core.model.EngineSettings` replaces them);
    ``reranker`` replaces the configured one; ``verify``: see :func:`build_stack`.
    """
    say = progress or (lambda _m: None)
    if workspace:
        from hexrag.config import validate_workspace

        validate_workspace(workspace)
    if isinstance(spec, str) and spec.strip().lower() == "memory":
        spec = _memory_config(embedder)
    if isinstance(spec, StackConfig):
        from hexrag.config import workspace_config

        config = workspace_config(spec, workspace)
        if isinstance(embedder, str):
            config = config.model_copy(update={"embedder": embedder})
        fixed = settings if isinstance(settings, EngineSettings) else None
        if settings and not isinstance(settings, EngineSettings):
            config = config.model_copy(update={"settings": {**config.settings, **settings}})
        return await build_stack(
            config, embedder=None if isinstance(embedder, str) else embedder, llm=llm,
            reranker=reranker, verify=verify, progress=say, read_only=read_only,
            engine_settings=fixed,
        )
    path = Path(spec).expanduser()
    if isinstance(settings, EngineSettings):
        settings = settings.model_dump()
    if _is_config(path):
        return await _open_config(path, embedder, say, workspace, read_only, llm, settings)
    return await _open_workdir(path / workspace if workspace else path, create_dim, embedder,
                               say, workspace or "", llm, settings)


#: The name :func:`open` had before it opened every kind of spec.
open_stack = open


async def _open_config(path: Path, embedder: Embedder | str | None, say: Progress,
                       workspace: str | None = None, read_only: bool = False,
                       llm: LLM | None = None,
                       settings: Mapping[str, Any] | None = None) -> App:
    from hexrag.config import load_config, workspace_config

    named = {"embedder": embedder} if isinstance(embedder, str) else {}
    config = workspace_config(load_config(path, **named), workspace)
    if settings:
        config = config.model_copy(update={"settings": {**config.settings, **settings}})
    app = await build_stack(config, embedder=None if isinstance(embedder, str) else embedder,
                            progress=say, read_only=read_only, llm=llm)
    app.description = str(path)
    return app


async def _open_workdir(
    path: Path, create_dim: int | None, embedder: Embedder | str | None, say: Progress,
    workspace: str = "", llm: LLM | None = None, settings: Mapping[str, Any] | None = None,
) -> App:
    from hexrag.adapters.workdir import empty_workdir_stack, load_workdir
    from hexrag.adapters.workdir.manifest import WorkdirManifestStore
    from hexrag.adapters.workdir.stack import QUERY_FILES
    from hexrag.env import engine_settings

    engine_config = engine_settings(**dict(settings or {}))
    closers: list[Callable[[], Awaitable[None]]] = []
    spec: str | None = None
    adaptive = embedder if isinstance(embedder, str) and model_openings.adapts(embedder) else None
    if adaptive is not None:
        embedder = None  # a model of any size takes the stored vectors': named after loading
    if isinstance(embedder, str):
        spec = embedder
        embedder = await resolve_spec(spec)
        spec = normal_spec(spec, embedder)
        close = getattr(embedder, "aclose", None)
        if close is not None:
            closers.append(close)
    store = WorkdirManifestStore(path)
    recorded = await store.read() if path.is_dir() else None
    existing = path.is_dir() and any(
        (path / name).is_file() for name in QUERY_FILES
    )
    # the model's dimension is checked against the files before anything large is decoded
    expected = (embedder.dim if embedder is not None
                else recorded.embedding_dim if recorded is not None else None)
    if not existing and create_dim is not None:
        if path.exists() and not path.is_dir():
            raise ConfigurationError(f"{path} exists and is not a directory")
        dim = (embedder.dim if embedder is not None
               else recorded.embedding_dim if recorded is not None else create_dim)
        say(f"new LightRAG working directory {path} ({dim}-dimensional vectors)")
        wd = empty_workdir_stack(dim)
    else:
        if not path.exists():
            raise NotFound(f"no such stack: {path} (a stack TOML file or a LightRAG directory)")
        if existing:
            say(f"loading LightRAG working directory {path}")
        wd = await asyncio.to_thread(
            load_workdir, path, require_complete=True, embedder_dim=expected,
            cosine_threshold=engine_config.cosine_threshold,
        )

    default_spec = model_openings.DEFAULT_MODELS["embedder"]

    async def default() -> Embedder:
        return await resolve_spec(model_openings.sized_spec(default_spec, wd.embedding_dim)
                                  or default_spec)

    named: Embedder | str | None = (
        model_openings.sized_spec(adaptive, wd.embedding_dim) if adaptive is not None
        else embedder)
    model, chosen, known = await choose_embedder(recorded, named, where=str(path),
                                                 default=default)
    if model.dim != wd.embedding_dim:
        raise ConfigurationError(
            f"embedding dimension mismatch: {path} stores {wd.embedding_dim}-dimensional "
            f"vectors, the embedder makes {model.dim}"
        )
    current = StackManifest(embedding_model=model.model_name, embedding_dim=model.dim,
                            embedder=spec or chosen, layout="workdir",
                            workspace=workspace)
    stack_model = StackModel(store, recorded, current, known=known, where=str(path))
    wd.embedding_model, wd.manifest = stack_model.embedding_model, store  # it is the Stack
    engine = compose_engine(wd, embedder=model, llm=llm, settings=engine_config,
                            fragments=wd.documents)
    return App(
        stores=wd, engine=engine, model=stack_model, description=str(path),
        workdir=path, workdir_stack=wd, closers=[("embedder", c) for c in closers],
    )
