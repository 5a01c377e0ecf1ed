"""Documents in, knowledge graph out: LightRAG 1.5.7's insert pipeline over hexrag's ports.

:meth:`Ingestor.ingest_text` does what LightRAG's ``ainsert`` does for a plain-text document
(``pipeline.py`` / ``operate.py``), with the rules stated in their own modules:

1. the document id is ``doc-`` + md5 of the sanitised text
   (:func:`~hexrag.core.extraction.sanitize_text_for_encoding`);
2. :func:`~hexrag.core.chunking.chunk_by_tokens` cuts it; chunk ``k`` is
   ``<doc id>-chunk-<kkk>`` with LightRAG's record (``tokens``, ``content``,
   ``chunk_order_index``, ``full_doc_id``, ``file_path``, ``llm_cache_list``) and a chunk
   vector of its content;
3. each chunk's entities and relations are extracted with LightRAG's prompts
   (:mod:`~hexrag.core.extraction_prompts`), parsed as LightRAG parses them
   (:func:`~hexrag.core.extraction.parse_extraction`), with one gleaning round
   (``entity_extract_max_gleaning``) unless system prompt, first exchange and gleaning prompt
   exceed ``MAX_EXTRACT_INPUT_TOKENS``; a gleaned entity or relation replaces the first pass's
   only when its first description is longer;
4. fragments are gathered per entity name and per sorted entity pair in chunk order; every
   entity is merged (:func:`~hexrag.core.merging.merge_entity`), then every relation in order
   (:func:`~hexrag.core.merging.merge_relation`, which may create or extend endpoint
   entities), descriptions joined or summarised by the LLM as LightRAG does;
5. nodes, edges (one per entity pair, id :func:`~hexrag.core.ids.relation_id`) and vector
   records are written in batches.

Not yet LightRAG's: chunk-tracking rows (``entity_chunks`` / ``relation_chunks``; the stored
``source_id`` stands in, which differs only once an entity exceeds ``max_source_ids``),
document status and full-document stores, the LLM cache, file parsing, deletion. The
equivalence with LightRAG's own ``ainsert`` is tested in
``tests/integration/test_ingest_lightrag.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hexrag.core.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, chunk_by_tokens
from hexrag.core.extraction import (
    parse_extraction,
    remove_think_tags,
    sanitize_text_for_encoding,
)
from hexrag.core.extraction_prompts import extraction_prompts, gleaning_history
from hexrag.core.ids import mdhash_id, relation_id
from hexrag.core.merging import MergeSettings, merge_entity, merge_relation
from hexrag.core.model import Chunk, Entity, Relation, VectorRecord
from hexrag.core.tokenizer import Tokenizer, count_tokens
from hexrag.ports import LLM, ChunkStore, Embedder, GraphStore, VectorIndex

__all__ = ["IngestReport", "IngestSettings", "Ingestor"]


@dataclass(frozen=True, slots=True)
class IngestSettings:
    """LightRAG's ``CHUNK_SIZE``, ``CHUNK_OVERLAP_SIZE``, split options,
    ``entity_extract_max_gleaning`` (1), ``MAX_EXTRACT_INPUT_TOKENS`` (20480), the summary
    language and the merge limits."""

    chunk_token_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap_token_size: int = DEFAULT_CHUNK_OVERLAP
    split_by_character: str | None = None
    split_by_character_only: bool = False
    max_gleaning: int = 1
    max_extract_input_tokens: int = 20480
    language: str = "English"
    merge: MergeSettings = field(default_factory=MergeSettings)


@dataclass
class IngestReport:
    """What one document produced."""

    doc_id: str
    chunk_ids: list[str]
    entities: list[str]
    relations: list[tuple[str, str]]
    llm_calls: int = 0


def _node_dict(entity: Entity) -> dict[str, Any]:
    out: dict[str, Any] = dict(entity.properties)
    out["entity_id"] = entity.name
    for key in ("entity_type", "description", "source_id", "file_path", "created_at"):
        value = getattr(entity, key)
        if value is not None:
            out[key] = value
    return out


def _entity_from(node: dict[str, Any]) -> Entity:
    props = {
        k: v for k, v in node.items()
        if k not in ("entity_id", "entity_type", "description", "source_id", "file_path",
                     "created_at")
    }
    return Entity(
        name=node["entity_id"], entity_type=node.get("entity_type"),
        description=node.get("description"), source_id=node.get("source_id"),
        file_path=node.get("file_path"), created_at=node.get("created_at"), properties=props,
    )


def _edge_dict(rel: Relation) -> dict[str, Any]:
    out: dict[str, Any] = dict(rel.properties)
    for key in ("description", "keywords", "weight", "source_id", "file_path", "created_at"):
        value = getattr(rel, key)
        if value is not None:
            out[key] = value
    return out


class Ingestor:
    """LightRAG's insert pipeline on hexrag's ports (see the module docstring).

    ``clock`` gives the epoch seconds LightRAG reads from ``time.time()`` (extraction
    timestamps order description fragments; ``created_at`` fields).
    """

    def __init__(
        self,
        *,
        entities: VectorIndex,
        relationships: VectorIndex,
        chunks: VectorIndex,
        graph: GraphStore,
        chunk_store: ChunkStore,
        llm: LLM,
        embedder: Embedder,
        tokenizer: Tokenizer,
        clock: Callable[[], int],
        settings: IngestSettings | None = None,
    ) -> None:
        self._entities = entities
        self._relationships = relationships
        self._chunks = chunks
        self._graph = graph
        self._chunk_store = chunk_store
        self._llm = llm
        self._embedder = embedder
        self._tokenizer = tokenizer
        self._clock = clock
        self._settings = settings or IngestSettings()
        self._calls = 0

    async def _ask(self, prompt: str, *, system: str | None = None,
                   history: Sequence[dict[str, str]] = ()) -> str:
        self._calls += 1
        answer = await self._llm.complete(prompt, system_prompt=system, history=history)
        return remove_think_tags(answer)

    async def _summarize(self, prompt: str) -> str:
        return await self._ask(prompt)

    # ---------------------------------------------------------------- extraction

    async def _extract(self, key: str, content: str, file_path: str) -> tuple[dict, dict]:
        s = self._settings
        prompts = extraction_prompts(content, language=s.language)
        first = await self._ask(prompts.user, system=prompts.system)
        nodes, edges = parse_extraction(first, key, self._clock(), file_path)
        if s.max_gleaning <= 0:
            return nodes, edges
        history = gleaning_history(prompts, first)
        if s.max_extract_input_tokens > 0:
            tokens = count_tokens(prompts.system, self._tokenizer) + sum(
                count_tokens(m["content"], self._tokenizer) for m in history
            ) + count_tokens(prompts.continue_user, self._tokenizer)
            if tokens > s.max_extract_input_tokens:
                return nodes, edges
        again = await self._ask(prompts.continue_user, system=prompts.system, history=history)
        g_nodes, g_edges = parse_extraction(again, key, self._clock(), file_path)
        for name, found in g_nodes.items():
            if name not in nodes or len(found[0].description) > len(nodes[name][0].description):
                nodes[name] = list(found)
        for pair, found_r in g_edges.items():
            if pair not in edges or len(found_r[0].description) > len(
                edges[pair][0].description
            ):
                edges[pair] = list(found_r)
        return nodes, edges

    # ---------------------------------------------------------------- the document

    async def ingest_text(self, text: str, *, file_path: str = "unknown_source") -> IngestReport:
        """Insert one document (see the module docstring); returns what it produced."""
        s = self._settings
        self._calls = 0
        content = sanitize_text_for_encoding(text)
        doc_id = mdhash_id(content, "doc-")
        pieces = chunk_by_tokens(
            content, self._tokenizer,
            chunk_token_size=s.chunk_token_size,
            chunk_overlap_token_size=s.chunk_overlap_token_size,
            split_by_character=s.split_by_character,
            split_by_character_only=s.split_by_character_only,
        )
        chunks = [
            Chunk(id=f"{doc_id}-chunk-{p.order:03d}", content=p.content, tokens=p.tokens,
                  full_doc_id=doc_id, chunk_order_index=p.order, file_path=file_path,
                  metadata={"llm_cache_list": []})
            for p in pieces if p.content
        ]
        report = IngestReport(doc_id, [c.id for c in chunks], [], [])
        if not chunks:
            return report
        now = self._clock()
        vectors = await self._embedder.embed([c.content for c in chunks])
        await self._chunk_store.upsert_chunks(chunks)
        await self._chunks.upsert([
            VectorRecord(id=c.id, vector=v, content=c.content, full_doc_id=doc_id,
                         file_path=file_path, created_at=now)
            for c, v in zip(chunks, vectors, strict=True)
        ])
        results = await asyncio.gather(*(self._extract(c.id, c.content, file_path)
                                         for c in chunks))
        all_nodes: dict[str, list[dict[str, Any]]] = {}
        all_edges: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for nodes, edges in results:
            for name, found in nodes.items():
                all_nodes.setdefault(name, []).extend(asdict(e) for e in found)
            for pair, found_r in edges.items():
                a, b = sorted(pair)
                all_edges.setdefault((a, b), []).extend(asdict(r) for r in found_r)
        await self._merge(all_nodes, all_edges)
        report.entities = list(all_nodes)
        report.relations = list(all_edges)
        report.llm_calls = self._calls
        return report

    async def _merge(
        self,
        all_nodes: dict[str, list[dict[str, Any]]],
        all_edges: dict[tuple[str, str], list[dict[str, Any]]],
    ) -> None:
        s, tok = self._settings.merge, self._tokenizer
        names = list(dict.fromkeys([*all_nodes, *(n for pair in all_edges for n in pair)]))
        stored = await self._graph.get_nodes(names) if names else {}
        state: dict[str, dict[str, Any] | None] = {
            n: _node_dict(stored[n]) if n in stored else None for n in names
        }
        node_writes: dict[str, dict[str, Any]] = {}
        entity_vectors: dict[str, dict[str, Any]] = {}
        # Phase 1: entities
        for name, fragments in all_nodes.items():
            merged = await merge_entity(name, fragments, state[name], None, settings=s,
                                        tokenizer=tok, summarize=self._summarize)
            if merged.changed:
                node = {**merged.node, "created_at": self._clock()}
                state[name] = node
                node_writes[name] = node
                assert merged.vector is not None
                entity_vectors[name] = merged.vector
        # Phase 2: relations, in order (they may create or extend endpoint entities)
        pairs = list(all_edges)
        stored_edges = await self._graph.get_edges_by_pairs(pairs) if pairs else {}
        edge_writes: list[Relation] = []
        relation_vectors: list[dict[str, Any]] = []
        stale: list[str] = []
        for (a, b), fragments in all_edges.items():
            old = stored_edges.get((a, b))
            merged_r = await merge_relation(
                a, b, fragments, _edge_dict(old[0]) if old else None, None,
                {n: (state.get(n), None) for n in (a, b)},
                settings=s, tokenizer=tok, summarize=self._summarize,
            )
            if merged_r is None or merged_r.edge is None:
                continue
            now = self._clock()
            for update in merged_r.endpoints:
                if update.node is not None:
                    node = dict(update.node)
                    if update.created:
                        node["created_at"] = now
                    state[update.name] = node
                    node_writes[update.name] = node
                if update.vector is not None:
                    entity_vectors[update.name] = update.vector
            e = merged_r.edge
            edge_writes.append(Relation(
                id=relation_id(a, b), src_id=a, tgt_id=b, description=e["description"],
                keywords=e["keywords"], weight=e["weight"], source_id=e["source_id"],
                file_path=e["file_path"], created_at=now,
                properties={"truncate": e["truncate"]},
            ))
            assert merged_r.vector is not None
            relation_vectors.append(merged_r.vector)
            stale += merged_r.stale_vector_ids
        # writes, in batches
        if node_writes:
            await self._graph.upsert_nodes([_entity_from(n) for n in node_writes.values()])
        if edge_writes:
            await self._graph.upsert_edges(edge_writes)
        now = self._clock()
        if entity_vectors:
            ev = list(entity_vectors.values())
            embedded = await self._embedder.embed([v["content"] for v in ev])
            await self._entities.upsert([
                VectorRecord(id=v["id"], vector=x, entity_name=v["entity_name"],
                             content=v["content"], source_id=v["source_id"],
                             file_path=v["file_path"], created_at=now)
                for v, x in zip(ev, embedded, strict=True)
            ])
        if stale:
            await self._relationships.delete(stale)
        if relation_vectors:
            embedded = await self._embedder.embed([v["content"] for v in relation_vectors])
            await self._relationships.upsert([
                VectorRecord(id=v["id"], vector=x, src_id=v["src_id"], tgt_id=v["tgt_id"],
                             content=v["content"], source_id=v["source_id"],
                             file_path=v["file_path"], created_at=now)
                for v, x in zip(relation_vectors, embedded, strict=True)
            ])
