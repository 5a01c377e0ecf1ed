"""Documents in, knowledge graph out: LightRAG 1.5.7's insert pipeline over hexrag's ports.

:meth:`Ingestor.ingest_text` does what LightRAG's ``ainsert`` does for a plain-text document
(``pipeline.py`` / ``operate.py``), with the rules stated in their own modules:

1. the document id is LightRAG's: ``doc-`` + md5 of the file name when one is given, of
   the sanitised text (:func:`~hexrag.core.ingest.extraction.sanitize_text_for_encoding`) otherwise;
2. :func:`~hexrag.core.ingest.chunking.chunk_by_tokens` cuts it; chunk ``k`` is
   ``<doc id>-chunk-<kkk>`` with LightRAG's record (``tokens``, ``content``,
   ``chunk_order_index``, ``full_doc_id``, ``file_path``, ``llm_cache_list``) and a chunk
   vector of its content;
3. each chunk's entities and relations are extracted with LightRAG's prompts
   (:mod:`~hexrag.core.ingest.extraction_prompts`), parsed as LightRAG parses them
   (:func:`~hexrag.core.ingest.extraction.parse_extraction`), with one gleaning round
   (``entity_extract_max_gleaning``) unless system prompt, first exchange and gleaning prompt
   exceed ``MAX_EXTRACT_INPUT_TOKENS``; a gleaned entity or relation replaces the first pass's
   only when its first description is longer;
4. fragments are gathered per entity name and per sorted entity pair in chunk order; every
   entity is merged (:func:`~hexrag.core.ingest.merging.merge_entity`), then every relation in order
   (:func:`~hexrag.core.ingest.merging.merge_relation`, which may create or extend endpoint
   entities), descriptions joined or summarised by the LLM as LightRAG does;
5. nodes, edges (one per entity pair, id :func:`~hexrag.core.ingest.ids.relation_id`) and vector
   records are written in batches.

Every LLM call goes through LightRAG's extraction cache (:meth:`Ingestor._ask`: its keys,
entries and the chunks' ``llm_cache_list``), at most ``MAX_ASYNC`` at a time. Beyond LightRAG:
with a :class:`~hexrag.ports.DocumentStore` the document gets a status row (pending ->
processing -> processed / failed with the error; the text stays on the row until processed so
:meth:`Ingestor.resume` can pick it up) and every extracted record is kept as a
:class:`~hexrag.core.documents.Fragment` with the document's metadata, which
:meth:`Ingestor.delete_documents` replays for exact deletion and the engine reads for
scope-correct descriptions (:mod:`hexrag.core.query.narrowing`); entities and relations carry the
documents' metadata as first-class fields (:func:`~hexrag.core.documents.merge_metadata_fields`).

Given LightRAG's document-side stores (``kv``: :data:`hexrag.ports.cache.KV_NAMESPACES`),
the ingestion writes them as LightRAG does (:mod:`hexrag.core.ingest.lightrag_kv`): ``full_docs``,
the ``full_entities`` / ``full_relations`` recovery rows, and the ``entity_chunks`` /
``relation_chunks`` tracking rows, whose full chunk lists the source-id limits
(``MAX_SOURCE_IDS_PER_*``, ``KEEP`` / ``FIFO``) are applied to (without them the stored
``source_id`` stands in, which differs once a record exceeds the limit). Deletion:
:mod:`hexrag.core.ingest.document_deletion`. The equivalence with LightRAG's own ``ainsert`` is
tested in
``tests/integration/test_ingest_lightrag.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from hexrag.core.hashing import (
    LLM_IDENTITY_MARKER,
    compute_args_hash,
    llm_cache_identity,
    serialize_identity,
)
from hexrag.core.ingest.chunking import chunk_by_tokens
from hexrag.core.ingest.document_deletion import DocumentDeletion, edge_dict, entity_from, node_dict
from hexrag.core.ingest.extraction import (
    parse_extraction,
    remove_think_tags,
    sanitize_text_for_encoding,
)
from hexrag.core.ingest.extraction_prompts import extraction_prompts, gleaning_history
from hexrag.core.ingest.ids import mdhash_id, relation_id
from hexrag.core.ingest.ingest_settings import IngestSettings
from hexrag.core.ingest.kv_rows import stored_rows
from hexrag.core.ingest.lightrag_kv import (
    TrackingRows,
    anchor_records,
    canonical_file_path,
    chunk_options,
    content_hash,
    duplicate_row,
    full_doc_record,
    lightrag_doc_id,
    relation_chunk_key,
    stamp,
)
from hexrag.core.ingest.merging import (
    merge_entity,
    merge_relation,
)
from hexrag.core.ingest.vector_writes import ENTITY_FIELDS, RELATION_FIELDS, embed_and_upsert
from hexrag.core.tokenizer import Tokenizer, count_tokens
from hexrag.domain.documents import (
    DocRecord,
    Fragment,
    content_summary,
    encode_file_path,
    merge_metadata_fields,
    metadata_fields,
)
from hexrag.domain.records import Chunk, Relation, VectorRecord
from hexrag.ports import (
    LLM,
    Cache,
    ChunkStore,
    DocumentStore,
    Embedder,
    GraphStore,
    VectorIndex,
)

__all__ = ["IngestReport", "IngestSettings", "Ingestor"]


@dataclass
class IngestReport:
    """What one document produced."""

    doc_id: str
    chunk_ids: list[str]
    entities: list[str]
    relations: list[tuple[str, str]]
    llm_calls: int = 0
    skipped: bool = False
    #: LLM answers served from the extraction cache instead of the LLM.
    cache_hits: int = 0


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat()


class Ingestor(DocumentDeletion):
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
        documents: DocumentStore | None = None,
        cache: Cache | None = None,
        kv: Mapping[str, Cache] | None = None,
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
        self._documents = documents
        self._cache = cache
        #: LightRAG's document-side stores (:data:`hexrag.ports.cache.KV_NAMESPACES`) this
        #: stack holds; each present one is written as LightRAG writes it.
        self._kv: dict[str, Cache] = dict(kv or {})
        self._hashes: dict[str, str] | None = None  # content hash -> document id
        self._calls = 0
        self._hits = 0
        self._slots: asyncio.Semaphore | None = None
        identity = self._settings.llm_identity
        if identity is None:
            identity = llm_cache_identity("extract", binding=None,
                                          model=getattr(llm, "model_name", None), host=None)
        self._identity = serialize_identity(identity)

    @property
    def documents(self) -> DocumentStore | None:
        """The document store (status rows and fragments), if the stack has one."""
        return self._documents

    async def _ask(
        self,
        prompt: str,
        *,
        system: str | None = None,
        history: Sequence[dict[str, str]] = (),
        cache_type: str = "extract",
        chunk_id: str | None = None,
        keys: list[str] | None = None,
    ) -> tuple[str, int]:
        """LightRAG's ``use_llm_func_with_cache``: the sanitised prompt, its answer from
        the cache (key ``default:<cache_type>:<hash>``) or from the LLM (then cached);
        returns the answer and its time (the cache entry's ``create_time`` on a hit)."""
        user = sanitize_text_for_encoding(prompt)
        sys_ = sanitize_text_for_encoding(system) if system else None
        hist = [{**m, "content": sanitize_text_for_encoding(m["content"])} if "content" in m
                else dict(m) for m in history]
        cache = self._cache if self._settings.enable_llm_cache_for_extract else None
        key = joined = ""
        if cache is not None:
            parts = [p for p in (user, sys_) if p]
            if hist:
                parts.append(json.dumps(hist, ensure_ascii=False))
            joined = "\n".join(parts)
            digest = compute_args_hash(joined, "\n<response_format>\n", "",
                                       LLM_IDENTITY_MARKER, self._identity)
            key = f"default:{cache_type}:{digest}"
            (hit,) = await cache.get_many([key])
            if hit and isinstance(hit.get("return"), str):
                self._hits += 1
                if keys is not None:
                    keys.append(key)
                return hit["return"], int(hit.get("create_time") or 0)
        self._calls += 1
        if self._slots is None:  # made in the running loop
            self._slots = asyncio.Semaphore(max(1, self._settings.max_async))
        async with self._slots:
            raw = await self._llm.complete(user, system_prompt=sys_, history=hist)
        answer = remove_think_tags(raw)
        now = self._clock()
        if cache is not None:
            await cache.set_many({key: {
                "return": answer, "cache_type": cache_type, "chunk_id": chunk_id,
                "original_prompt": joined, "queryparam": None, "create_time": now,
                "update_time": now, "_id": key,
            }})
            if keys is not None:
                keys.append(key)
        return answer, now

    async def _summarize(self, prompt: str) -> str:
        answer, _ = await self._ask(prompt, cache_type="summary")
        return answer

    # ---------------------------------------------------------------- extraction

    async def _extract(self, key: str, content: str, file_path: str,
                       keys: list[str]) -> tuple[dict, dict]:
        s = self._settings
        prompts = extraction_prompts(content, language=s.language)
        first, stamp = await self._ask(prompts.user, system=prompts.system, chunk_id=key,
                                       keys=keys)
        nodes, edges = parse_extraction(first, key, stamp, file_path)
        if s.max_gleaning <= 0:
            return nodes, edges
        history = gleaning_history(prompts, first)
        if s.max_extract_input_tokens > 0:
            tokens = count_tokens(prompts.system, self._tokenizer) + sum(
                count_tokens(m["content"], self._tokenizer) for m in history
            ) + count_tokens(prompts.continue_user, self._tokenizer)
            if tokens > s.max_extract_input_tokens:
                return nodes, edges
        again, stamp = await self._ask(prompts.continue_user, system=prompts.system,
                                       history=history, chunk_id=key, keys=keys)
        g_nodes, g_edges = parse_extraction(again, key, stamp, file_path)
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

    async def ingest_text(
        self,
        text: str,
        *,
        file_path: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        doc_id: str | None = None,
    ) -> IngestReport:
        """Insert one document (see the module docstring); returns what it produced.

        ``metadata`` (``product_id``, ``category_id``, ``source``, any user key with a JSON
        value) goes into every chunk's metadata and every fragment; without ``file_path``
        the document's ``file_path`` is seed 000's encoding of it
        (:func:`~hexrag.core.documents.encode_file_path`), which LightRAG stores on every
        entity and relation. The document id is LightRAG's
        (:func:`~hexrag.core.ingest.lightrag_kv.lightrag_doc_id`: the file name's hash when
        ``file_path`` is given, the text's otherwise) unless ``doc_id`` is given (LightRAG's
        ``ids``). With a document store, an already processed document is skipped and gets
        LightRAG's duplicate status row (``dup-...``, failed), the status row goes
        processing -> processed (or failed, with the error, and nothing written), and the
        fragments are kept for deletion and scoped descriptions.
        """
        s = self._settings
        self._calls = self._hits = 0
        self._slots = None
        meta = dict(metadata or {})
        content = sanitize_text_for_encoding(text)
        if file_path is None:  # no file name: the text's hash is the id (as in LightRAG)
            file_path = encode_file_path(meta)
            doc_id = doc_id or lightrag_doc_id(content, None)
        else:
            file_path = canonical_file_path(file_path)
            doc_id = doc_id or lightrag_doc_id(content, file_path)
        pieces = chunk_by_tokens(
            content, self._tokenizer,
            chunk_token_size=s.chunk_token_size,
            chunk_overlap_token_size=s.chunk_overlap_token_size,
            split_by_character=s.split_by_character,
            split_by_character_only=s.split_by_character_only,
        )
        chunk_meta: dict[str, Any] = {"llm_cache_list": [], **meta}
        chunks = [
            Chunk(id=f"{doc_id}-chunk-{p.order:03d}", content=p.content, tokens=p.tokens,
                  full_doc_id=doc_id, chunk_order_index=p.order, file_path=file_path,
                  metadata=dict(chunk_meta))
            for p in pieces if p.content
        ]
        report = IngestReport(doc_id, [c.id for c in chunks], [], [])
        docs = self._documents
        record: DocRecord | None = None
        if docs is not None:
            (existing,) = await docs.get_docs([doc_id])
            holder = existing if existing is not None and existing.status == "processed" \
                else None
            if existing is None:  # LightRAG's content-hash check: the text stored elsewhere
                holder = await self._content_holder(content_hash(content), doc_id)
            if holder is not None:
                await self._duplicate(holder, doc_id, file_path, len(content))
                report.doc_id, report.chunk_ids, report.skipped = holder.id, [], True
                return report
            stamp_iso = _iso(self._clock())
            record = DocRecord(
                id=doc_id, status="processing", file_path=file_path,
                content_summary=content_summary(content), content_length=len(content),
                chunks_list=[c.id for c in chunks],
                created_at=existing.created_at if existing else stamp_iso,
                updated_at=stamp_iso, metadata=meta, seq=await docs.next_sequence(),
                # the text stays on the row until the document is processed, so that a
                # crashed or failed ingestion can be resumed (LightRAG's legacy ``content``)
                extra={"content": content, "content_hash": content_hash(content),
                       # the row's own (an upload's or a queued insert's), else a new one
                       "track_id": (existing.extra.get("track_id") if existing else None)
                       or self._track_id(doc_id)},
            )
            await docs.upsert_docs([record])
            if self._hashes is not None:
                self._hashes.setdefault(record.extra["content_hash"], doc_id)
        options = chunk_options(s.chunk_token_size, s.chunk_overlap_token_size,
                                s.split_by_character, s.split_by_character_only)
        await self._write_kv("full_docs", {doc_id: full_doc_record(content, file_path, options)})
        if not chunks:
            if docs is not None and record is not None:
                record.status, record.updated_at = "processed", _iso(self._clock())
                record.extra.pop("content", None)
                await docs.upsert_docs([record])
            return report
        try:
            await self._insert(doc_id, chunks, file_path, meta, record, report)
        except Exception as exc:
            if docs is not None and record is not None:
                record.status, record.updated_at = "failed", _iso(self._clock())
                record.error_msg = f"{type(exc).__name__}: {exc}"[:2000]
                await docs.upsert_docs([record])
            raise
        if docs is not None and record is not None:
            record.status, record.updated_at = "processed", _iso(self._clock())
            record.extra.pop("content", None)
            await docs.upsert_docs([record])
        return report

    def _track_id(self, doc_id: str) -> str:
        """LightRAG's ``insert_<YYYYmmdd_HHMMSS>_<8 hex>`` track id (from the clock)."""
        now = self._clock()
        when = datetime.fromtimestamp(now, tz=UTC).strftime("%Y%m%d_%H%M%S")
        return f"insert_{when}_{mdhash_id(f'{doc_id}:{now}')[:8]}"

    async def _content_holder(self, digest: str, doc_id: str) -> DocRecord | None:
        """The stored document (not a duplicate row, not ``doc_id``) whose text has the
        content hash ``digest`` (LightRAG's ``get_doc_by_content_hash``). The hashes are read
        once per ingestor (one scan of the status rows) and kept up to date as it writes."""
        assert self._documents is not None
        if self._hashes is None:
            self._hashes = {}
            for r in await self._documents.list_docs():
                h = r.extra.get("content_hash")
                if isinstance(h, str) and h and not r.id.startswith("dup-"):
                    self._hashes.setdefault(h, r.id)
        holder = self._hashes.get(digest)
        if holder is None or holder == doc_id:
            return None
        (row,) = await self._documents.get_docs([holder])
        if row is None:
            del self._hashes[digest]
        return row

    async def _duplicate(
        self, holder: DocRecord, doc_id: str, file_path: str, length: int
    ) -> None:
        """LightRAG's status row for a document sent again (``failed``, ``dup-`` id):
        ``holder`` is the stored document, ``doc_id`` the id the new one would have had."""
        assert self._documents is not None
        dup_id, row = duplicate_row(
            doc_id, file_path=file_path, content_length=length,
            existing_status=holder.status,
            existing_track_id=str(holder.extra.get("track_id") or ""),
            track_id=self._track_id(doc_id), now_iso=_iso(self._clock()),
            original_doc_id=None if holder.id == doc_id else holder.id,
        )
        await self._documents.upsert_docs([DocRecord.from_json(dup_id, row)])

    async def _write_kv(
        self, namespace: str, records: Mapping[str, Mapping[str, Any]],
        existing: Sequence[str] | None = None,
    ) -> None:
        """Write ``records`` into ``namespace`` (when the stack holds it), stamped as
        LightRAG stamps them; ``existing``: the keys known to be stored (else read)."""
        store = self._kv.get(namespace)
        if store is None or not records:
            return
        keys = list(records)
        if existing is None:
            found = await store.get_many(keys)
            existing = [k for k, v in zip(keys, found, strict=True) if v is not None]
        await store.set_many(stamp(records, existing, self._clock()))

    async def _tracking(self, namespace: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored chunk-tracking rows of ``keys`` (none without the store)."""
        return await stored_rows(self._kv.get(namespace), keys)

    async def unfinished(self) -> list[DocRecord]:
        """Documents received but not processed (``pending``, ``processing`` after a
        crash, ``failed``) whose text is on their status row, in insertion order."""
        if self._documents is None:
            return []
        return [r for r in await self._documents.list_docs()
                if r.status in ("pending", "processing", "failed")
                and isinstance(r.extra.get("content"), str)]

    async def resume(
        self, rows: Sequence[DocRecord] | None = None
    ) -> list[IngestReport | BaseException]:
        """Ingest every :meth:`unfinished` document again (LightRAG's pipeline picks up
        pending, processing and failed documents), or these ``rows`` of it; a failure is
        recorded on its row and returned in its place, the others go on."""
        out: list[IngestReport | BaseException] = []
        for row in (await self.unfinished()) if rows is None else rows:
            try:
                out.append(await self.ingest_text(row.extra["content"], file_path=row.file_path,
                                                  metadata=row.metadata, doc_id=row.id))
            except Exception as exc:  # recorded on the row by ingest_text
                out.append(exc)
        return out

    async def _insert(
        self,
        doc_id: str,
        chunks: list[Chunk],
        file_path: str,
        meta: dict[str, Any],
        record: DocRecord | None,
        report: IngestReport,
    ) -> None:
        # The LLM first: a failed extraction writes nothing (but what the LLM answered is
        # cached, so a retry does not pay for it again).
        cache_keys: list[list[str]] = [[] for _ in chunks]
        results = await asyncio.gather(*(self._extract(c.id, c.content, file_path, k)
                                         for c, k in zip(chunks, cache_keys, strict=True)))
        chunks[:] = [
            replace(c, metadata={**c.metadata, "llm_cache_list": k}) if k else c
            for c, k in zip(chunks, cache_keys, strict=True)
        ]
        now = self._clock()
        vectors = await self._embedder.embed([c.content for c in chunks])
        all_nodes: dict[str, list[dict[str, Any]]] = {}
        all_edges: dict[tuple[str, str], list[dict[str, Any]]] = {}
        fragments: list[Fragment] = []
        seq = record.seq if record is not None else 0
        for chunk, (nodes, edges) in zip(chunks, results, strict=True):
            for name, found in nodes.items():
                for e in found:
                    data = asdict(e)
                    all_nodes.setdefault(name, []).append(data)
                    fragments.append(Fragment("entity", name, "", chunk.id, doc_id, seq,
                                              len(fragments), data, meta))
            for pair, found_r in edges.items():
                a, b = sorted(pair)
                for r in found_r:
                    data = asdict(r)
                    all_edges.setdefault((a, b), []).append(data)
                    fragments.append(Fragment("relation", a, b, chunk.id, doc_id, seq,
                                              len(fragments), data, meta))
        await self._chunk_store.upsert_chunks(chunks)
        await self._chunks.upsert([
            VectorRecord(id=c.id, vector=v, content=c.content, full_doc_id=doc_id,
                         file_path=file_path, created_at=now, metadata=dict(meta))
            for c, v in zip(chunks, vectors, strict=True)
        ])
        if self._documents is not None and fragments:
            await self._documents.add_fragments(fragments)
        # LightRAG's recovery anchors, before the graph is touched
        full_entities, full_relations = anchor_records(all_nodes, all_edges)
        await self._write_kv("full_entities", {doc_id: full_entities})
        await self._write_kv("full_relations", {doc_id: full_relations})
        await self._merge(all_nodes, all_edges, metadata_fields(meta))
        report.entities = list(all_nodes)
        report.relations = list(all_edges)
        report.llm_calls = self._calls
        report.cache_hits = self._hits

    async def _merge(
        self,
        all_nodes: dict[str, list[dict[str, Any]]],
        all_edges: dict[tuple[str, str], list[dict[str, Any]]],
        added: Mapping[str, str],
    ) -> None:
        """Merge one document's records into the stores; every entity and relation it
        writes gains the document's metadata ``added`` (:func:`merge_metadata_fields`)."""
        s, tok = self._settings.merge, self._tokenizer
        names = list(dict.fromkeys([*all_nodes, *(n for pair in all_edges for n in pair)]))
        stored = await self._graph.get_nodes(names) if names else {}
        state: dict[str, dict[str, Any] | None] = {
            n: node_dict(stored[n]) if n in stored else None for n in names
        }
        prior = {n: dict(stored[n].properties) for n in stored}
        node_writes: dict[str, dict[str, Any]] = {}
        entity_vectors: dict[str, dict[str, Any]] = {}
        rel_keys = [relation_chunk_key(a, b) for a, b in all_edges]
        ent_rows = TrackingRows(await self._tracking("entity_chunks", names))
        rel_rows = TrackingRows(await self._tracking("relation_chunks", rel_keys))
        # Phase 1: entities
        for name, fragments in all_nodes.items():
            merged = await merge_entity(name, fragments, state[name], ent_rows.row(name),
                                        settings=s, tokenizer=tok, summarize=self._summarize)
            ent_rows.put(name, merged.tracked_chunk_ids)
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
                a, b, fragments, edge_dict(old[0]) if old else None,
                rel_rows.row(relation_chunk_key(a, b)),
                {n: (state.get(n), ent_rows.row(n)) for n in (a, b)},
                settings=s, tokenizer=tok, summarize=self._summarize,
            )
            if merged_r is not None:
                rel_rows.put(relation_chunk_key(a, b), merged_r.tracked_chunk_ids)
            if merged_r is None or merged_r.edge is None:
                continue
            now = self._clock()
            for update in merged_r.endpoints:
                ent_rows.put(update.name, update.tracked_chunk_ids)
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
        now = self._clock()
        for ns, rows in (("entity_chunks", ent_rows), ("relation_chunks", rel_rows)):
            if ns in self._kv and (records := rows.stamped(now)):
                await self._kv[ns].set_many(records)
        node_meta = {n: merge_metadata_fields(prior.get(n), added) for n in node_writes}
        if node_writes:
            await self._graph.upsert_nodes([
                entity_from({**node, **node_meta[n]}) for n, node in node_writes.items()
            ])
        if edge_writes:
            old_props = {p: dict(rels[0].properties) for p, rels in stored_edges.items() if rels}
            edge_writes = [
                replace(r, properties={**r.properties, **merge_metadata_fields(
                    old_props.get((r.src_id, r.tgt_id)), added)})
                for r in edge_writes
            ]
            await self._graph.upsert_edges(edge_writes)
        now = self._clock()
        await embed_and_upsert(
            self._embedder, self._entities, list(entity_vectors.values()),
            fields=ENTITY_FIELDS, created_at=now,
            metadata=lambda v: node_meta.get(v["entity_name"])
            or merge_metadata_fields(prior.get(v["entity_name"]), added))
        edge_meta = {(r.src_id, r.tgt_id): {k: v for k, v in r.properties.items()
                                            if k != "truncate"} for r in edge_writes}
        if stale:
            await self._relationships.delete(stale)
        await embed_and_upsert(
            self._embedder, self._relationships, relation_vectors,
            fields=RELATION_FIELDS, created_at=now,
            metadata=lambda v: edge_meta.get(tuple(sorted((v["src_id"], v["tgt_id"]))), {}))
