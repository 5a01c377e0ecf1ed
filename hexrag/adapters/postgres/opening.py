"""What the PostgreSQL adapters open (``postgresql://``, ``postgres://``): every section, in
hexrag's own tables or in a LightRAG 1.5.7 deployment's tables (``layout = lightrag``), all
on one pool per DSN."""

from __future__ import annotations

from typing import Any

from hexrag.openings import Opening, OpeningContext, Section, redact_url, require_module

__all__ = ["OPENING"]

_NAMESPACES = ("entities", "relationships", "chunks")
_CORE: tuple[Section, ...] = ("vectors", "graph", "chunks")


async def _pool(ctx: OpeningContext, url: str) -> Any:
    async def create() -> Any:
        from hexrag.adapters.postgres import create_pool
        ctx.say(f"connecting to PostgreSQL {redact_url(url)}")
        pool = await create_pool(url)
        ctx.close_with("postgres pool", pool.close)
        return pool

    return await ctx.shared(f"postgres:{url}", create)


def _options(ctx: OpeningContext, section: Section) -> dict[str, Any]:
    """hexrag's table options; a read-only opening creates none of the core tables (a
    missing one is a wrong stack), an optional section never written yet reads as empty."""
    return {
        "schema": ctx.option("postgres_schema"),
        "table_prefix": ctx.namespace,
        "timeout": ctx.store_timeout,
        "create_tables": not (ctx.read_only and section in _CORE),
    }


#: hexrag's tables of each optional section: opened read-only, an absent one reads as empty
#: (documents, the LLM cache, the key-value namespaces), nothing is created.
_OPTIONAL_TABLES: dict[str, tuple[str, ...]] = {
    "documents": ("doc_status", "fragments"), "llm_cache": ("cache",), "kv": ("cache",),
}


def _empty(section: Section) -> Any:
    """An empty in-memory store of ``section`` (read-only: nothing written there)."""
    from hexrag.adapters.memory import MemoryCache, MemoryDocumentStore
    from hexrag.ports.cache import KV_NAMESPACES

    if section == "documents":
        return MemoryDocumentStore()
    if section == "kv":
        return {ns: MemoryCache(ns) for ns in KV_NAMESPACES}
    return MemoryCache()


async def open_postgres(ctx: OpeningContext, section: Section, url: str | None) -> Any:
    """Open ``section`` at the DSN ``url``."""
    assert url is not None
    pool = await _pool(ctx, url)
    if ctx.layout == "lightrag":
        return await _lightrag(ctx, section, pool)
    from hexrag.adapters import postgres

    options = _options(ctx, section)
    if ctx.read_only and section in _OPTIONAL_TABLES:  # create nothing; absent = empty
        from hexrag.adapters.postgres.read_only import missing_tables

        suffixes = _OPTIONAL_TABLES[section]
        if await missing_tables(pool, schema=options["schema"], suffixes=suffixes,
                                table_prefix=ctx.namespace, timeout=ctx.store_timeout):
            return _empty(section)
        options["create_tables"] = False
    if section == "vectors":
        require_module("pgvector", "postgres", "vector_index = postgresql://")
        return {name: postgres.PgVectorIndex(pool, namespace=name,  # type: ignore[arg-type]
                                             dim=ctx.dim,
                                             cosine_threshold=ctx.cosine_threshold, **options)
                for name in _NAMESPACES}
    if section == "graph":
        return postgres.PgGraphStore(pool, **options)
    if section == "chunks":
        return postgres.PgChunkStore(pool, **options)
    if section == "documents":
        return postgres.PgDocumentStore(pool, **options)
    if section == "llm_cache":
        return postgres.PgCache(pool, **options)
    if section == "kv":
        from hexrag.ports.cache import KV_NAMESPACES

        return {ns: postgres.PgCache(pool, namespace=ns, **options) for ns in KV_NAMESPACES}
    from hexrag.adapters.postgres.manifest import PgManifestStore

    return PgManifestStore(pool, key=ctx.manifest_key, **options)


async def _lightrag(ctx: OpeningContext, section: Section, pool: Any) -> Any:
    """A LightRAG 1.5.7 PostgreSQL deployment's tables, in LightRAG's workspace (``default``
    when none is set); hexrag's own rows beside it (documents, manifest) in ``hexrag_*``."""
    workspace = ctx.lightrag_workspace or "default"
    timeout = ctx.store_timeout
    if section == "vectors":
        from hexrag.adapters.postgres.lightrag_layout import LightRAGPgVectorIndex

        ctx.say(f"LightRAG PGVectorStorage, workspace {workspace!r} (read in place)")
        return {name: LightRAGPgVectorIndex(
                    pool, namespace=name, dim=ctx.dim,  # type: ignore[arg-type]
                    workspace=workspace, model_name=ctx.option("lightrag_model_name"),
                    cosine_threshold=ctx.cosine_threshold, timeout=timeout)
                for name in _NAMESPACES}
    if section == "graph":
        from hexrag.adapters.postgres.lightrag_layout import LightRAGPgGraphStore

        return LightRAGPgGraphStore(pool, workspace=workspace, timeout=timeout)
    if section == "chunks":
        from hexrag.adapters.postgres.lightrag_layout import LightRAGPgChunkStore

        return LightRAGPgChunkStore(pool, workspace=workspace, timeout=timeout)
    if section == "llm_cache":
        from hexrag.adapters.postgres.lightrag_layout import open_lightrag_pg_cache

        return open_lightrag_pg_cache(pool, workspace=workspace, timeout=timeout)
    if section == "kv":
        from hexrag.adapters.postgres.lightrag_kv import LightRAGPgKV
        from hexrag.ports.cache import KV_NAMESPACES

        return {ns: LightRAGPgKV(pool, namespace=ns, workspace=workspace, timeout=timeout)
                for ns in KV_NAMESPACES}
    options = {**_options(ctx, section), "table_prefix": "hexrag"}
    if section == "documents":  # LightRAG's LIGHTRAG_DOC_STATUS rows, fragments beside them
        from hexrag.adapters.postgres.lightrag_doc_status import (
            LightRAGPgDocumentStore,
            side_table_prefix,
        )

        options.pop("table_prefix")
        if ctx.read_only:  # create nothing: without hexrag's tables, LightRAG's rows alone
            from hexrag.adapters.postgres.read_only import missing_tables

            options["create_tables"] = False
            options["rows_only"] = bool(await missing_tables(
                pool, schema=options["schema"], table_prefix=side_table_prefix(workspace),
                suffixes=_OPTIONAL_TABLES["documents"], timeout=timeout))
        return LightRAGPgDocumentStore(pool, workspace=workspace, **options)
    from hexrag.adapters.postgres.manifest import PgManifestStore

    return PgManifestStore(pool, key=ctx.manifest_key, **options)


_ALL: tuple[Section, ...] = ("vectors", "graph", "chunks", "documents", "kv", "manifest",
                             "llm_cache")

OPENING = Opening(
    kind="postgres",
    schemes=("postgres", "postgresql"),
    roles=("vector_index", "graph_store", "chunk_store", "cache"),
    sections={"hexrag": _ALL, "lightrag": _ALL},
    open=open_postgres,
    extra="postgres",
    requires=("asyncpg",),
    examples={role: "postgresql://user@host/db" for role in
              ("vector_index", "graph_store", "chunk_store", "cache")},
    lightrag_storages={"vector_index": "PGVectorStorage", "chunk_store": "PGKVStorage",
                       "graph_store": "PGTableGraphStorage", "cache": "PGKVStorage"},
)
