"""The embedded demo: a small real knowledge base about two Acme products, in memory.

``hexrag demo`` loads ``data/kb.json`` into a memory stack opened by
:func:`hexrag.bootstrap.open` (vectors from the deterministic hashing embedder) and shows what
each mode retrieves for one question, with and without a scope.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from hexrag import bootstrap
from hexrag.adapters.memory import HashingEmbedder
from hexrag.bootstrap import App
from hexrag.core.ingest.ids import entity_id, mdhash_id, relation_id
from hexrag.core.model import Chunk, EngineSettings, Entity, Relation, VectorRecord
from hexrag.embed import entity_content, relation_content
from hexrag.ports import VectorIndex

__all__ = [
    "DEFAULT_QUESTION",
    "DemoStack",
    "build_demo_engine",
    "build_ingested_demo_engine",
    "load_kb",
]

DEFAULT_QUESTION = "How do I set up single sign-on with Okta?"

_CHUNK_FIELDS = {"id", "content", "tokens", "full_doc_id", "chunk_order_index", "file_path"}


def load_kb() -> dict[str, Any]:
    """The demo knowledge base as stored in the package."""
    text = resources.files("hexrag.demo").joinpath("data/kb.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


#: The demo's opened stack (its sections ``entities``... ``chunk_store`` and ``engine``):
#: the one stack type, :class:`hexrag.bootstrap.App`, under the demo's old name.
DemoStack = App


async def _open(dim: int, settings: EngineSettings | None) -> tuple[App, HashingEmbedder]:
    """A new memory stack of dimension ``dim``, opened by :func:`hexrag.bootstrap.open`."""
    embedder = HashingEmbedder(dim)
    app = await bootstrap.open("memory", embedder=embedder,
                               settings=settings or EngineSettings())
    return app, embedder


async def _embed_into(
    index: VectorIndex, embedder: HashingEmbedder, texts: list[str],
    fields: list[dict[str, Any]],
) -> None:
    """Embed ``texts`` and upsert one :class:`VectorRecord` per text (its ``content``) with
    the matching ``fields``."""
    vecs = await embedder.embed(texts)
    await index.upsert([
        VectorRecord(vector=v, content=text, **f)
        for text, v, f in zip(texts, vecs, fields, strict=True)
    ])


async def build_demo_engine(*, dim: int = 384, settings: EngineSettings | None = None) -> App:
    """Load the demo knowledge base into a memory stack (:func:`hexrag.bootstrap.open`)
    with an engine over it."""
    kb = load_kb()
    app, embedder = await _open(dim, settings)
    entities, relationships = app.entities, app.relationships
    chunk_index, graph, chunk_store = app.chunks, app.graph, app.chunk_store

    chunks = [
        Chunk(
            id=c["id"],
            content=c["content"],
            tokens=c.get("tokens"),
            full_doc_id=c.get("full_doc_id"),
            chunk_order_index=c.get("chunk_order_index"),
            file_path=c.get("file_path"),
            metadata={k: v for k, v in c.items() if k not in _CHUNK_FIELDS},
        )
        for c in kb["chunks"]
    ]
    await chunk_store.upsert_chunks(chunks)
    await _embed_into(chunk_index, embedder, [c.content for c in chunks], [
        {"id": c.id, "file_path": c.file_path, "full_doc_id": c.full_doc_id,
         "metadata": {"product_id": c.metadata["product_id"],
                      "category_id": c.metadata["category_id"]}}
        for c in chunks
    ])

    # The knowledge base's entity and relation rows carry exactly the records' fields.
    ents = [Entity(**e) for e in kb["entities"]]
    await graph.upsert_nodes(ents)
    await _embed_into(entities, embedder, [entity_content(e) for e in ents], [
        {"id": entity_id(e.name), "entity_name": e.name, "source_id": e.source_id,
         "file_path": e.file_path, "created_at": e.created_at}
        for e in ents
    ])

    rels: list[Relation] = []
    seen_pairs: dict[tuple[str, str], int] = {}
    for r in kb["relations"]:
        a, b = sorted((r["src_id"], r["tgt_id"]))
        n = seen_pairs.get((a, b), 0)
        seen_pairs[(a, b)] = n + 1
        rid = relation_id(a, b) if n == 0 else mdhash_id(f"{a}{b}#{n}", "rel-")
        rels.append(Relation(**{**r, "id": rid, "src_id": a, "tgt_id": b}))
    await graph.upsert_edges(rels)
    # One vector per relation, as a PostgreSQL vector table keeps it (seed 001).
    await _embed_into(relationships, embedder, [relation_content(r) for r in rels], [
        {"id": r.id, "src_id": r.src_id, "tgt_id": r.tgt_id, "source_id": r.source_id,
         "file_path": r.file_path, "created_at": r.created_at}
        for r in rels
    ])
    return app


async def build_ingested_demo_engine(*, dim: int = 384) -> tuple[App, list[Any]]:
    """The demo's product documents ingested by hexrag's LightRAG pipeline
    (:class:`~hexrag.core.ingest.ingestion.Ingestor`) with an offline scripted extraction LLM
    and the
    product metadata in LightRAG's encoded ``file_path``; returns the stack and the reports."""
    from hexrag.core.documents import encode_file_path
    from hexrag.core.ingest.ingestion import IngestSettings
    from hexrag.devtools.scripted_kg import ScriptedKGLLM

    kb = load_kb()
    docs: dict[str, list[dict[str, Any]]] = {}
    for c in kb["chunks"]:
        docs.setdefault(c["full_doc_id"], []).append(c)
    app, _embedder = await _open(dim, None)
    ingestor = app.ingestor(
        ScriptedKGLLM("scripted-kg"),
        settings=IngestSettings(chunk_token_size=48, chunk_overlap_token_size=8),
    )
    reports = []
    for parts in docs.values():
        parts.sort(key=lambda c: int(c.get("chunk_order_index") or 0))
        first = parts[0]
        meta = {"product_id": first["product_id"], "category_id": first["category_id"],
                "source": first["file_path"]}
        text = "\n\n".join(c["content"] for c in parts)
        reports.append(await ingestor.ingest_text(text, file_path=encode_file_path(meta),
                                                  metadata=meta))
    return app, reports
