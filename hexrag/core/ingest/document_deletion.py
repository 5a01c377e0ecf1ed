"""Deleting documents: :class:`DocumentDeletion`, the deletion half of
:class:`~hexrag.core.ingest.ingestion.Ingestor`.

A document is deleted one of two ways, chosen per document:

* **by replay** (:mod:`hexrag.core.ingest.deletion`) when hexrag ingested it (it has description
  fragments, or a hexrag sequence number): the entities and relations it touched are rebuilt
  from the remaining fragments, so the graph is the graph the remaining documents build; a
  record it touched that also cites chunks no fragment accounts for (LightRAG built it) is
  rebuilt from the extraction cache as below;
* **as LightRAG 1.5.7's** ``adelete_by_doc_id`` (:mod:`hexrag.core.ingest.cache_rebuild`) when it
  has no fragments (LightRAG built it): candidates from LightRAG's ``full_entities`` /
  ``full_relations`` rows (or from the extraction cache of its chunks), chunk tracking from
  ``entity_chunks`` / ``relation_chunks`` (or the graph's ``source_id``), rebuilt from the
  cached extraction answers of the remaining chunks. A relation (or an entity without
  edges) that no remaining chunk's extraction holds keeps its description and loses the
  deleted chunks (LightRAG's structural fallback), so no record cites a deleted chunk.
  Without fragments, recovery rows and cache, nothing is changed and the deletion is
  refused (:class:`~hexrag.core.errors.ConfigurationError`).

Either way the LightRAG key-value stores the stack holds (``full_docs``, the recovery rows,
the tracking rows) are kept as LightRAG keeps them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hexrag.core.ingest.cache_rebuild import (
    chunk_extractions,
    limit_ids,
    rebuild_entity,
    rebuild_relation,
    subtract_ids,
)
from hexrag.core.ingest.deletion import (
    DeletePlan,
    DeleteReport,
    plan_deletion,
    replay_groups,
    strip_sources,
)
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.ingest.kv_rows import stored_rows
from hexrag.core.ingest.lightrag_kv import relation_chunk_key, stamp
from hexrag.core.ingest.merging import NO_EVIDENCE, merge_entity, merge_relation, relation_id_of
from hexrag.core.ingest.vector_writes import ENTITY_FIELDS, RELATION_FIELDS, embed_and_upsert
from hexrag.core.tokenizer import Tokenizer
from hexrag.domain.documents import DocRecord, merge_metadata_fields, metadata_fields
from hexrag.domain.errors import BackendError, ConfigurationError
from hexrag.domain.records import GRAPH_FIELD_SEP, Entity, Relation
from hexrag.ports import (
    Cache,
    ChunkStore,
    DocumentStore,
    Embedder,
    GraphStore,
    VectorIndex,
)

if TYPE_CHECKING:
    from hexrag.core.ingest.ingest_settings import IngestSettings

__all__ = ["DocumentDeletion"]


def node_dict(entity: Entity) -> dict[str, Any]:
    """A node's LightRAG property dict (``entity_id`` and the set fields)."""
    out: dict[str, Any] = dict(entity.properties)
    out["entity_id"] = entity.name
    for key in ("entity_type", "description", "source_id", "file_path", "created_at"):
        value = getattr(entity, key)
        if value is not None:
            out[key] = value
    return out


def entity_from(node: dict[str, Any]) -> Entity:
    """The :class:`Entity` of a LightRAG node property dict."""
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


def edge_dict(rel: Relation) -> dict[str, Any]:
    """An edge's LightRAG property dict (the set fields)."""
    out: dict[str, Any] = dict(rel.properties)
    for key in ("description", "keywords", "weight", "source_id", "file_path", "created_at"):
        value = getattr(rel, key)
        if value is not None:
            out[key] = value
    return out


_EDGE_FIELDS = ("description", "keywords", "weight", "source_id", "file_path", "created_at")


def _relation(a: str, b: str, d: Mapping[str, Any]) -> Relation:
    """The :class:`Relation` of pair ``(a, b)`` from its LightRAG property dict."""
    return Relation(
        id=relation_id(a, b), src_id=a, tgt_id=b, description=d.get("description"),
        keywords=d.get("keywords"), weight=d.get("weight"), source_id=d.get("source_id"),
        file_path=d.get("file_path"), created_at=d.get("created_at"),
        properties={k: v for k, v in d.items() if k not in _EDGE_FIELDS},
    )


class DocumentDeletion:
    """The deletion methods of :class:`~hexrag.core.ingest.ingestion.Ingestor` (which holds the
    stores and settings named below)."""

    _entities: VectorIndex
    _relationships: VectorIndex
    _chunks: VectorIndex
    _graph: GraphStore
    _chunk_store: ChunkStore
    _embedder: Embedder
    _tokenizer: Tokenizer
    _clock: Callable[[], int]
    _settings: IngestSettings
    _documents: DocumentStore | None
    _cache: Cache | None
    _kv: dict[str, Cache]
    _hashes: dict[str, str] | None
    _calls: int
    _slots: asyncio.Semaphore | None

    async def _summarize(self, prompt: str) -> str:
        raise NotImplementedError

    async def delete_documents(
        self, doc_ids: Sequence[str], *, delete_llm_cache: bool = False
    ) -> DeleteReport:
        """Delete documents (see the module docstring): their chunks, chunk vectors,
        fragments, status rows and LightRAG key-value rows go; the entities and relations
        they touched are rebuilt or deleted. With ``delete_llm_cache`` (LightRAG's flag) the
        extraction cache entries of the deleted chunks go too. Refused before any change
        (:class:`~hexrag.core.errors.ConfigurationError`) when a document can be deleted
        neither way."""
        docs = self._documents
        if docs is None:
            raise ConfigurationError(
                "deleting documents needs the stack's document store (status rows and "
                "fragments); this stack has none"
            )
        self._calls = 0
        self._slots = None
        report = DeleteReport()
        ids = list(dict.fromkeys(doc_ids))
        records = await docs.get_docs(ids)
        found = [r for r in records if r is not None]
        report.not_found = [i for i, r in zip(ids, records, strict=True) if r is None]
        report.deleted = [r.id for r in found]
        if not found:
            return report
        all_chunks = list(dict.fromkeys(c for r in found for c in r.chunks_list))
        report.chunks = len(all_chunks)
        deleted = await docs.fragments_of_chunks(all_chunks) if all_chunks else []
        with_fragments = {f.doc_id for f in deleted}
        replayed = [r for r in found if r.id in with_fragments or r.seq > 0]
        lightrag = [r for r in found if r.id not in {x.id for x in replayed}]
        for r in lightrag:  # refuse before changing anything
            await self._candidates(r)
        if replayed:
            chunk_ids = list(dict.fromkeys(c for r in replayed for c in r.chunks_list))
            mine = set(chunk_ids)
            own = [f for f in deleted if f.chunk_id in mine]
            names = list(dict.fromkeys(n for f in own for n in f.names))
            about = await docs.fragments_about(names) if names else []
            plan = plan_deletion(chunk_ids, own, about)
            plan = await self._widen(plan, replayed)
            legacy_e, legacy_r = await self._rebuild(plan, report)
            await self._untrack(plan)
            if legacy_e or legacy_r:  # LightRAG-built records the document touched
                rows = await self._rows("entity_chunks", list(legacy_e))
                rel_rows = await self._rows("relation_chunks",
                                            [relation_chunk_key(*p) for p in legacy_r])
                await self._rebuild_from_cache(
                    {n: rows.get(n) or v for n, v in legacy_e.items()},
                    {p: rel_rows.get(relation_chunk_key(*p)) or v for p, v in legacy_r.items()},
                    DeleteReport())
        for r in lightrag:
            await self._delete_as_lightrag(r, report)
        if all_chunks and delete_llm_cache and self._cache is not None:
            stored_chunks = await self._chunk_store.get_chunks(all_chunks)
            stale_keys = list(dict.fromkeys(
                k for c in stored_chunks if c is not None
                for k in (c.metadata.get("llm_cache_list") or []) if isinstance(k, str)
            ))
            if stale_keys:
                await self._cache.delete_many(stale_keys)
            report.llm_cache_deleted = len(stale_keys)
        if all_chunks:
            await self._chunks.delete(all_chunks)
            await self._chunk_store.delete_chunks(all_chunks)
            await docs.delete_fragments_of_chunks(all_chunks)
        for ns in ("full_docs", "full_entities", "full_relations"):
            if ns in self._kv:
                await self._kv[ns].delete_many(report.deleted)
        await docs.delete_docs(report.deleted)
        if self._hashes:  # the content-hash index of the duplicate check
            gone_ids = set(report.deleted)
            self._hashes = {h: d for h, d in self._hashes.items() if d not in gone_ids}
        report.llm_calls = self._calls
        await self._verify_gone(all_chunks, report)
        return report

    async def _verify_gone(self, chunk_ids: Sequence[str], report: DeleteReport) -> None:
        """No relation, and no entity the deletion touched, may still cite a deleted chunk:
        the deletion is then reported as failed, not as a success."""
        if not chunk_ids:
            return
        gone = set(chunk_ids)
        edges = await self._graph.get_edges_by_chunk_ids(list(chunk_ids))
        names = list(dict.fromkeys([*report.entities_rebuilt, *report.entities_deleted]))
        nodes = await self._graph.get_nodes(names) if names else {}
        citing = [n for n, e in nodes.items()
                  if gone & set(str(e.source_id or "").split(GRAPH_FIELD_SEP))]
        if edges or citing:
            raise BackendError(
                f"deletion of {len(report.deleted)} document(s) left {len(citing)} entities "
                f"and {sum(len(v) for v in edges.values())} relations citing deleted chunks "
                "(changed concurrently, or records no document accounts for): the documents' "
                "rows are gone but these records still need repair"
            )

    # ------------------------------------------------------------ the replay's edges

    async def _widen(self, plan: DeletePlan, found: Sequence[DocRecord]) -> DeletePlan:
        """Add to the replay's plan the records that cite a deleted chunk without a
        fragment accounting for it (the recovery rows' candidates, the edges citing the
        chunks): they lose the deleted chunks as legacy records."""
        names, pairs = list(plan.entities), list(plan.relations)
        for r in found:
            anchors = await self._anchors(r.id)
            if anchors is not None:
                names += anchors[0]
                pairs += anchors[1]
        cited = await self._graph.get_edges_by_chunk_ids(list(plan.chunk_ids))
        pairs += [tuple(sorted(rel.pair)) for rels in cited.values()  # type: ignore[misc]
                  for rel in rels]
        pairs = list(dict.fromkeys(pairs))
        names = list(dict.fromkeys([*names, *(n for p in pairs for n in p)]))
        if names == plan.entities and pairs == plan.relations:
            return plan
        return DeletePlan(plan.chunk_ids, names, pairs, plan.replay, plan.covered)

    async def _untrack(self, plan: DeletePlan) -> None:
        """The replay's chunk-tracking rows: the deleted chunks leave them; a row left
        empty (or of a deleted record) goes."""
        for ns, keys in (("entity_chunks", list(plan.entities)),
                         ("relation_chunks", [relation_chunk_key(a, b)
                                              for a, b in plan.relations])):
            store = self._kv.get(ns)
            if store is None or not keys:
                continue
            rows = await store.get_many(keys)
            gone: list[str] = []
            kept: dict[str, dict[str, Any]] = {}
            for key, row in zip(keys, rows, strict=True):
                if row is None:
                    continue
                left = subtract_ids(list(row.get("chunk_ids") or []), plan.chunk_ids)
                if left:
                    kept[key] = {"chunk_ids": left, "count": len(left)}
                else:
                    gone.append(key)
            nodes = await self._graph.get_nodes(list(kept)) if ns == "entity_chunks" else None
            if nodes is not None:
                gone += [k for k in kept if k not in nodes]
                kept = {k: v for k, v in kept.items() if k in nodes}
            if gone:
                await store.delete_many(gone)
            if kept:
                await store.set_many(stamp(kept, kept, self._clock()))

    # ------------------------------------------------------------ LightRAG's deletion

    async def _anchors(self, doc_id: str) -> tuple[list[str], list[tuple[str, str]]] | None:
        """The document's ``full_entities`` / ``full_relations`` rows, if both are held."""
        ent, rel = self._kv.get("full_entities"), self._kv.get("full_relations")
        if ent is None or rel is None:
            return None
        (erow,), (rrow,) = await ent.get_many([doc_id]), await rel.get_many([doc_id])
        if (erow is None or rrow is None or not isinstance(erow.get("entity_names"), list)
                or not isinstance(rrow.get("relation_pairs"), list)):
            return None
        pairs = [(str(p[0]), str(p[1])) for p in rrow["relation_pairs"]
                 if isinstance(p, list | tuple) and len(p) == 2]
        return [str(n) for n in erow["entity_names"]], pairs

    async def _extractions(self, chunk_ids: Sequence[str]) -> dict[str, Any]:
        """The cached extractions of ``chunk_ids`` (:func:`chunk_extractions`)."""
        if not chunk_ids:
            return {}
        lists: dict[str, list[str]] = {}
        chunks: dict[str, dict[str, Any]] = {}
        for c in await self._chunk_store.get_chunks(list(chunk_ids)):
            if c is not None:
                lists[c.id] = [k for k in (c.metadata.get("llm_cache_list") or [])
                               if isinstance(k, str)]
                chunks[c.id] = {"file_path": c.file_path, "llm_cache_list": lists[c.id]}
        keys = list(dict.fromkeys(k for v in lists.values() for k in v))
        entries: dict[str, Mapping[str, Any] | None] = {}
        if keys and self._cache is not None:
            entries = dict(zip(keys, await self._cache.get_many(keys), strict=True))
        return chunk_extractions(chunks, entries)

    async def _candidates(self, r: DocRecord) -> tuple[list[str], list[tuple[str, str]]]:
        """The entities and relations document ``r`` may have touched: its recovery rows,
        else its chunks' cached extractions plus the edges citing its chunks; refused when
        neither is there."""
        anchors = await self._anchors(r.id)
        if anchors is not None:
            return anchors
        found = await self._extractions(r.chunks_list)
        missing = [c for c in r.chunks_list if c not in found]
        if missing:
            raise ConfigurationError(
                f"cannot delete document {r.id}: it has no hexrag description fragments, "
                "the stack holds no LightRAG recovery rows (full_entities / full_relations) "
                f"for it, and {len(missing)} of its {len(r.chunks_list)} chunks have no "
                "cached extraction (LLM cache), so the entities and relations it produced "
                "cannot be found; nothing was changed"
            )
        names = [n for x in found.values() for n in x.entities]
        pairs = [tuple(sorted(p)) for x in found.values() for p in x.relations]
        cited = await self._graph.get_edges_by_chunk_ids(list(r.chunks_list))
        pairs += [tuple(sorted(rel.pair)) for rels in cited.values() for rel in rels]
        pairs_t = [(p[0], p[1]) for p in dict.fromkeys(pairs)]
        names = list(dict.fromkeys([*names, *(n for p in pairs_t for n in p)]))
        return names, pairs_t

    async def _rows(self, ns: str, keys: Sequence[str]) -> dict[str, list[str]]:
        rows = await stored_rows(self._kv.get(ns), keys)
        return {k: [c for c in (row.get("chunk_ids") or []) if c] for k, row in rows.items()}

    async def _upsert_rows(self, ns: str, records: Mapping[str, Mapping[str, Any]]) -> None:
        store = self._kv.get(ns)
        if store is None or not records:
            return
        keys = list(records)
        have = [k for k, v in zip(keys, await store.get_many(keys), strict=True)
                if v is not None]
        await store.set_many(stamp(records, have, self._clock()))

    async def _delete_as_lightrag(self, r: DocRecord, report: DeleteReport) -> None:
        """LightRAG's ``adelete_by_doc_id`` for one document (module docstring)."""
        gone = frozenset(r.chunks_list)
        names, pairs = await self._candidates(r)
        nodes = await self._graph.get_nodes(names) if names else {}
        edges = await self._graph.get_edges_by_pairs(pairs) if pairs else {}
        ent_rows = await self._rows("entity_chunks", [n for n in names if n in nodes])
        rel_rows = await self._rows("relation_chunks", [relation_chunk_key(*p) for p in pairs])
        del_e: list[str] = []
        rebuild_e: dict[str, list[str]] = {}
        for n in names:
            if n not in nodes or n in del_e or n in rebuild_e:
                continue
            graph_src = [c for c in str(nodes[n].source_id or "").split(GRAPH_FIELD_SEP) if c]
            existing = ent_rows.get(n) or graph_src
            left = subtract_ids(existing, gone)
            if not left:
                del_e.append(n)
            elif left != existing or set(graph_src) & gone:
                rebuild_e[n] = left
        del_r: list[tuple[str, str]] = []
        rebuild_r: dict[tuple[str, str], list[str]] = {}
        for a, b in pairs:
            rels = edges.get((a, b)) or edges.get((b, a))
            key = (a, b) if a <= b else (b, a)
            if not rels or key in del_r or key in rebuild_r:
                continue
            graph_src = [c for c in str(rels[0].source_id or "").split(GRAPH_FIELD_SEP) if c]
            existing = rel_rows.get(relation_chunk_key(a, b)) or graph_src
            left = subtract_ids(existing, gone)
            if not left:
                del_r.append(key)
            elif left != existing or set(graph_src) & gone:
                rebuild_r[key] = left
        now = self._clock()
        await self._upsert_rows("entity_chunks", {
            n: {"chunk_ids": v, "count": len(v), "updated_at": now} for n, v in rebuild_e.items()})
        await self._upsert_rows("relation_chunks", {
            relation_chunk_key(*p): {"chunk_ids": t, "count": len(t), "updated_at": now}
            for p, v in rebuild_r.items()
            for t in [[c for c in v if c not in NO_EVIDENCE]]})
        if del_r:
            await self._drop_edges(del_r)
        if del_e:
            incident = await self._graph.get_node_edges(del_e)
            await self._drop_edges(list(dict.fromkeys(
                (min(rel.pair), max(rel.pair)) for rels in incident.values() for rel in rels)))
            await self._graph.delete_nodes(del_e)
            await self._entities.delete([entity_id(n) for n in del_e])
            if "entity_chunks" in self._kv:
                await self._kv["entity_chunks"].delete_many(del_e)
        report.entities_deleted += del_e
        report.relations_deleted += del_r
        if rebuild_e or rebuild_r:
            await self._rebuild_from_cache(rebuild_e, rebuild_r, report)

    async def _drop_edges(self, pairs: Sequence[tuple[str, str]]) -> None:
        if not pairs:
            return
        await self._relationships.delete(list(dict.fromkeys(
            i for a, b in pairs for i in (relation_id_of(a, b), relation_id_of(b, a)))))
        await self._graph.delete_edges([relation_id(a, b) for a, b in pairs])
        if "relation_chunks" in self._kv:
            await self._kv["relation_chunks"].delete_many(
                [relation_chunk_key(a, b) for a, b in pairs])

    async def _rebuild_from_cache(
        self, rebuild_e: dict[str, list[str]], rebuild_r: dict[tuple[str, str], list[str]],
        report: DeleteReport,
    ) -> None:
        """LightRAG's ``rebuild_knowledge_from_chunks`` (entities, then relations)."""
        s, tok = self._settings.merge, self._tokenizer
        referenced = list(dict.fromkeys(
            c for v in (*rebuild_e.values(), *rebuild_r.values()) for c in v))
        found = await self._extractions(referenced)
        now = self._clock()
        nodes = await self._graph.get_nodes(list(rebuild_e)) if rebuild_e else {}
        incident = await self._graph.get_node_edges(list(rebuild_e)) if rebuild_e else {}
        node_writes: dict[str, dict[str, Any]] = {}
        vectors: dict[str, dict[str, Any]] = {}
        tracked: dict[str, dict[str, Any]] = {}
        for n, left in rebuild_e.items():
            if n not in nodes:
                continue
            current = node_dict(nodes[n])
            tracked[n] = {"chunk_ids": left, "count": len(left)}
            limited = limit_ids(left, s.max_source_ids, s.limit_method)
            has_data = any(n in found[c].entities for c in limited if c in found)
            edge_records = [edge_dict(rel) for rel in incident.get(n, [])]
            if not has_data and not edge_records:  # structural fallback: provenance only
                report.legacy += 1
                node_writes[n] = {**current, "source_id": GRAPH_FIELD_SEP.join(limited)}
                continue
            node, vector = await rebuild_entity(
                n, current, left, found, edge_records, now=now, settings=s, tokenizer=tok,
                summarize=self._summarize)
            node_writes[n], vectors[n] = node, vector
        edges = await self._graph.get_edges_by_pairs(list(rebuild_r)) if rebuild_r else {}
        edge_writes: dict[tuple[str, str], dict[str, Any]] = {}
        edge_vectors: list[dict[str, Any]] = []
        stale: list[str] = []
        rel_tracked: dict[str, dict[str, Any]] = {}
        for (a, b), left in rebuild_r.items():
            rels = edges.get((a, b)) or edges.get((b, a))
            if not rels:
                continue
            current = edge_dict(rels[0])
            rebuilt = await rebuild_relation(a, b, current, left, found, settings=s,
                                             tokenizer=tok, summarize=self._summarize)
            norm = [c for c in left if c not in NO_EVIDENCE]
            rel_tracked[relation_chunk_key(a, b)] = {"chunk_ids": norm, "count": len(norm)}
            if rebuilt is None:  # structural fallback: provenance only
                report.legacy += 1
                limited = limit_ids(norm, s.max_source_ids_relation, s.limit_method)
                edge_writes[(a, b)] = {**current, "source_id": GRAPH_FIELD_SEP.join(limited)}
                continue
            edge_writes[(a, b)] = rebuilt.edge
            edge_vectors.append(rebuilt.vector)
            stale += rebuilt.stale_ids
        await self._upsert_rows("entity_chunks", tracked)
        await self._upsert_rows("relation_chunks", rel_tracked)
        if node_writes:
            await self._graph.upsert_nodes([entity_from(v) for v in node_writes.values()])
        if edge_writes:
            await self._graph.upsert_edges([_relation(a, b, d) for (a, b), d in
                                            edge_writes.items()])
        report.entities_rebuilt += list(node_writes)
        report.relations_rebuilt += list(edge_writes)
        await embed_and_upsert(self._embedder, self._entities, list(vectors.values()),
                               fields=ENTITY_FIELDS, created_at=now)
        if stale:
            await self._relationships.delete(list(dict.fromkeys(stale)))
        await embed_and_upsert(self._embedder, self._relationships, edge_vectors,
                               fields=RELATION_FIELDS, created_at=now)

    async def _rebuild(
        self, plan: DeletePlan, report: DeleteReport
    ) -> tuple[dict[str, list[str]], dict[tuple[str, str], list[str]]]:
        """Steps 3-4 of :mod:`hexrag.core.ingest.deletion`; returns the legacy records (sources no
        fragment accounts for: LightRAG-built) that keep chunks, with those chunks."""
        s, tok = self._settings.merge, self._tokenizer
        affected = set(plan.entities)
        stored_nodes = await self._graph.get_nodes(plan.entities) if plan.entities else {}
        stored_edges = (await self._graph.get_edges_by_pairs(plan.relations)
                        if plan.relations else {})
        # Records with sources no fragment accounts for cannot be replayed.
        legacy_nodes = {
            n for n, e in stored_nodes.items()
            if not {c for c in (e.source_id or "").split(GRAPH_FIELD_SEP) if c}
            <= plan.covered.get(n, set())
        }
        legacy_edges = {
            p for p, rels in stored_edges.items() if rels and not {
                c for c in (rels[0].source_id or "").split(GRAPH_FIELD_SEP) if c
            } <= plan.covered.get(f"{p[0]}{GRAPH_FIELD_SEP}{p[1]}", set()) | NO_EVIDENCE
        }
        state: dict[str, dict[str, Any] | None] = {n: None for n in plan.entities}
        vectors: dict[str, dict[str, Any]] = {}
        edges: dict[tuple[str, str], dict[str, Any]] = {}
        edge_vectors: dict[tuple[str, str], dict[str, Any]] = {}
        node_meta: dict[str, dict[str, str]] = {}
        edge_meta: dict[tuple[str, str], dict[str, str]] = {}
        for group in replay_groups(plan.replay):
            added = metadata_fields(group[0].metadata) if group else {}
            nodes_in: dict[str, list[dict[str, Any]]] = {}
            edges_in: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for f in group:
                if f.kind == "entity":
                    if f.src in affected:
                        nodes_in.setdefault(f.src, []).append(dict(f.data))
                else:
                    edges_in.setdefault((f.src, f.tgt), []).append(dict(f.data))
            for name, frags in nodes_in.items():
                merged = await merge_entity(name, frags, state[name], None, settings=s,
                                            tokenizer=tok, summarize=self._summarize)
                if merged.changed:
                    state[name] = {**merged.node, "created_at": self._clock()}
                    node_meta[name] = merge_metadata_fields(node_meta.get(name), added)
                    assert merged.vector is not None
                    vectors[name] = merged.vector
            for (a, b), frags in edges_in.items():
                merged_r = await merge_relation(
                    a, b, frags, edges.get((a, b)), None,
                    {n: (state.get(n), None) for n in (a, b)},
                    settings=s, tokenizer=tok, summarize=self._summarize,
                )
                if merged_r is None or merged_r.edge is None:
                    continue
                now = self._clock()
                for update in merged_r.endpoints:
                    if update.name not in affected:
                        continue
                    if update.node is not None:
                        node = dict(update.node)
                        if update.created:
                            node["created_at"] = now
                        state[update.name] = node
                        node_meta[update.name] = merge_metadata_fields(
                            node_meta.get(update.name), added)
                    if update.vector is not None:
                        vectors[update.name] = update.vector
                edges[(a, b)] = {**merged_r.edge, "created_at": now}
                edge_meta[(a, b)] = merge_metadata_fields(edge_meta.get((a, b)), added)
                assert merged_r.vector is not None
                edge_vectors[(a, b)] = merged_r.vector
        # Legacy records: strip the deleted chunks, keep the rest (then rebuilt from the
        # extraction cache by the caller, as LightRAG rebuilds them).
        legacy_e: dict[str, list[str]] = {}
        legacy_r: dict[tuple[str, str], list[str]] = {}
        for name in legacy_nodes:
            report.legacy += 1
            old = stored_nodes[name]
            left = strip_sources(old.source_id, plan.chunk_ids)
            state[name] = {**node_dict(old), "source_id": left} if left else None
            vectors.pop(name, None)
            if left:
                legacy_e[name] = left.split(GRAPH_FIELD_SEP)
        for pair in legacy_edges:
            report.legacy += 1
            old_r = stored_edges[pair][0]
            left = strip_sources(old_r.source_id, plan.chunk_ids)
            if left:
                edges[pair] = {**edge_dict(old_r), "source_id": left}
                edge_vectors.pop(pair, None)
                legacy_r[pair] = left.split(GRAPH_FIELD_SEP)
            else:
                edges.pop(pair, None)
        # Writes, in batches.
        gone_nodes = [n for n in plan.entities if state[n] is None]
        kept_nodes = [n for n in plan.entities if state[n] is not None]
        gone_edges = [p for p in plan.relations if p not in edges]
        kept_edges = [p for p in plan.relations if p in edges]
        report.entities_deleted, report.entities_rebuilt = gone_nodes, kept_nodes
        report.relations_deleted, report.relations_rebuilt = gone_edges, kept_edges
        if gone_edges:
            await self._graph.delete_edges([relation_id(a, b) for a, b in gone_edges])
            await self._relationships.delete(list(dict.fromkeys(
                i for a, b in gone_edges for i in (relation_id_of(a, b), relation_id_of(b, a))
            )))
        if gone_nodes:
            await self._graph.delete_nodes(gone_nodes)
            await self._entities.delete([entity_id(n) for n in gone_nodes])
        if kept_nodes:
            await self._graph.upsert_nodes([
                entity_from({**state[n], **node_meta.get(n, {})})  # type: ignore[dict-item]
                for n in kept_nodes
            ])
        if kept_edges:
            await self._graph.upsert_edges([
                Relation(
                    id=relation_id(a, b), src_id=a, tgt_id=b,
                    description=edges[(a, b)].get("description"),
                    keywords=edges[(a, b)].get("keywords"),
                    weight=edges[(a, b)].get("weight"),
                    source_id=edges[(a, b)].get("source_id"),
                    file_path=edges[(a, b)].get("file_path"),
                    created_at=edges[(a, b)].get("created_at"),
                    properties={"truncate": edges[(a, b)].get("truncate", ""),
                                **edge_meta.get((a, b), {})},
                )
                for a, b in kept_edges
            ])
        now = self._clock()
        await embed_and_upsert(
            self._embedder, self._entities, [vectors[n] for n in kept_nodes if n in vectors],
            fields=ENTITY_FIELDS, created_at=now,
            metadata=lambda v: node_meta.get(v["entity_name"], {}))
        await embed_and_upsert(
            self._embedder, self._relationships,
            [edge_vectors[p] for p in kept_edges if p in edge_vectors],
            fields=RELATION_FIELDS, created_at=now,
            metadata=lambda v: edge_meta.get(tuple(sorted((v["src_id"], v["tgt_id"]))), {}))
        return legacy_e, legacy_r
