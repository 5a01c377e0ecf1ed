"""LightRAG 1.5.7's manual graph edits on hexrag's ports (``lightrag/utils_graph.py``).

:class:`GraphEditor` creates, edits, renames, merges and deletes entities and relations the
way LightRAG's ``acreate_entity`` / ``aedit_entity`` / ``amerge_entities`` /
``adelete_by_entity`` and their relation twins do, through the stack's ports only:

* the graph (:class:`~hexrag.ports.GraphStore`);
* the entity and relationship vector indexes, re-embedded with the stack's embedder, so an
  edited entity is found by the next query (LightRAG's vector contents and ids);
* LightRAG's chunk tracking (``entity_chunks`` / ``relation_chunks`` key-value stores, when
  the stack holds them), updated as LightRAG updates them;
* hexrag's description fragments (renames and merges move them to the new name, deletions
  remove them, so a later document deletion rebuilds the entity under its new name and never
  brings a deleted entity or relation back);
* the answer cache: every write goes through the stack's stores, whose versioning wrappers
  (:mod:`hexrag.core.versioning`) make earlier cached answers unreachable.

Errors a client caused are :class:`ValueError` (LightRAG answers 400 with the message);
a missing entity or relation on delete is :class:`~hexrag.core.errors.NotFound`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hexrag.core.errors import NotFound
from hexrag.core.ingest.document_deletion import edge_dict, entity_from, node_dict
from hexrag.core.ingest.extraction import normalize_extracted_info, sanitize_text_for_encoding
from hexrag.core.ingest.ids import entity_id, mdhash_id, relation_id
from hexrag.core.ingest.kv_rows import stored_rows
from hexrag.core.ingest.lightrag_kv import relation_chunk_key, stamp
from hexrag.core.ingest.vector_contents import (
    edited_relation_vector_content,
    entity_vector_content,
    relation_vector_content,
)
from hexrag.domain.documents import Fragment
from hexrag.domain.records import GRAPH_FIELD_SEP, Entity, Relation, VectorRecord
from hexrag.ports import Cache, GraphStore, VectorIndex
from hexrag.ports.documents import DocumentStore
from hexrag.ports.embedder import Embedder

__all__ = ["GraphEditor", "normalize_entity_name"]

_TEXT, _NUMBER = "text", "number"
_EDITABLE_ENTITY = {"entity_name": _TEXT, "entity_type": _TEXT, "description": _TEXT,
                    "source_id": _TEXT, "file_path": _TEXT}
_ENTITY_DATA = {k: v for k, v in _EDITABLE_ENTITY.items() if k != "entity_name"}
_RELATION_DATA = {"description": _TEXT, "keywords": _TEXT, "source_id": _TEXT,
                  "file_path": _TEXT, "weight": _NUMBER}
#: LightRAG's placeholders that are not evidence (``RELATION_NO_EVIDENCE_SOURCE_IDS``).
NO_EVIDENCE = frozenset({"manual_creation", "UNKNOWN"})
_INT64 = (-(2**63), 2**63 - 1)


def normalize_entity_name(name: Any) -> str:
    """LightRAG's ``normalize_entity_name`` (the extraction naming contract)."""
    if not isinstance(name, str):
        raise ValueError("Entity name must be a string")
    safe = sanitize_text_for_encoding(name)
    return normalize_extracted_info(safe, remove_inner_quotes=True) if safe else ""


def _rejection(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if _INT64[0] <= value <= _INT64[1] else "must fit in a 64-bit integer"
    if isinstance(value, float):
        return None if math.isfinite(value) else "must be a finite number"
    if isinstance(value, str):
        bad = any((ord(c) < 0x20 and c not in "\t\n\r") or 0xD800 <= ord(c) <= 0xDFFF
                  or ord(c) in (0xFFFE, 0xFFFF) for c in value)
        return "contains characters that cannot be stored" if bad else None
    return f"must be a scalar value, got {type(value).__name__}"


def sanitize_fields(data: Mapping[str, Any], allowed: Mapping[str, str], kind: str,
                    *, reject_unknown: bool) -> dict[str, Any]:
    """LightRAG's ``_sanitize_graph_fields``: known fields, typed; unknown ones refused
    (``reject_unknown``) or dropped."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        shape = allowed.get(key)
        if shape is None:
            if reject_unknown:
                raise ValueError(f"Unknown {kind} field '{key}'. Allowed fields: "
                                 f"{', '.join(sorted(allowed))}")
            continue
        problem = _rejection(value)
        if problem is not None:
            raise ValueError(f"{kind.capitalize()} field '{key}' {problem}")
        if shape == _NUMBER:
            if isinstance(value, bool):
                raise ValueError(f"{kind.capitalize()} field '{key}' must be a number, got bool")
            try:
                number = float(value)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"{kind.capitalize()} field '{key}' must be a number, "
                                 f"got {value!r}") from None
            problem = _rejection(number)
            if problem is not None:
                raise ValueError(f"{kind.capitalize()} field '{key}' {problem}")
            out[key] = number
        elif not isinstance(value, str):
            raise ValueError(f"{kind.capitalize()} field '{key}' must be a string, got "
                             f"{type(value).__name__}")
        else:
            out[key] = value
    return out


def evidence_ids(source_id: Any) -> list[str]:
    """Distinct real chunk ids of a ``source_id`` (placeholders and empties dropped)."""
    if not isinstance(source_id, str):
        raise ValueError("Relation field 'source_id' must be a string, got "
                         f"{type(source_id).__name__}")
    return list(dict.fromkeys(s for s in source_id.split(GRAPH_FIELD_SEP)
                              if s and s not in NO_EVIDENCE))


def checked_weight(weight: Any, source_id: str, context: str = "Relation") -> float:
    """LightRAG's ``validate_relation_weight``: a weight no smaller than the evidence count."""
    fields = sanitize_fields({"weight": weight, "source_id": source_id}, _RELATION_DATA,
                             "relation", reject_unknown=True)
    count = len(evidence_ids(fields["source_id"]))
    if fields["weight"] < count:
        raise ValueError(f"{context} weight {fields['weight']} cannot be less than its "
                         f"distinct-source evidence count {count}")
    return float(fields["weight"])


def floored_weight(weight: Any, source_id: str) -> float:
    """LightRAG's ``apply_relation_weight_floor``."""
    fields = sanitize_fields({"weight": weight, "source_id": source_id}, _RELATION_DATA,
                             "relation", reject_unknown=True)
    return max(float(fields["weight"]), float(len(evidence_ids(fields["source_id"]))))


def _require_description(value: Any, operation: str, kind: str) -> None:
    if value is None or not str(value).strip():
        raise ValueError(f"{kind.capitalize()} description cannot be empty for {operation} "
                         "operation")


def incremental_ids(existing: Sequence[str], old: Sequence[str], new: Sequence[str]) -> list[str]:
    """LightRAG's ``compute_incremental_chunk_ids``."""
    removed = set(old) - set(new)
    added = set(new) - set(old)
    out = [c for c in existing if c and c not in removed]
    seen = set(out)
    for c in new:
        if c and c in added and c not in seen:
            seen.add(c)
            out.append(c)
    return out


def _split(source_id: Any) -> list[str]:
    return [c for c in str(source_id or "").split(GRAPH_FIELD_SEP) if c]


def _has_row(row: Mapping[str, Any] | None) -> bool:
    return isinstance(row, Mapping) and isinstance(row.get("chunk_ids"), list)


def _row_ids(row: Mapping[str, Any] | None) -> list[str] | None:
    """The chunk ids of a tracking row (``None``: no row)."""
    if isinstance(row, Mapping) and isinstance(row.get("chunk_ids"), list):
        return [c for c in row["chunk_ids"] if c]
    return None


def merge_attributes(rows: Sequence[Mapping[str, Any]], strategy: Mapping[str, str], *,
                     none_only: bool) -> dict[str, Any]:
    """LightRAG's ``_merge_attributes`` (``join_unique`` in first-seen order)."""
    out: dict[str, Any] = {}
    keys: dict[str, None] = {}
    for row in rows:
        keys.update(dict.fromkeys(row))
    for key in keys:
        values = [r.get(key) for r in rows
                  if (r.get(key) is not None if none_only else r.get(key))]
        if not values:
            continue
        how = strategy.get(key, "keep_first")
        if how == "concatenate":
            out[key] = GRAPH_FIELD_SEP.join(str(v) for v in values)
        elif how == "keep_last":
            out[key] = values[-1]
        elif how == "join_unique":
            items: dict[str, None] = {}
            for v in values:
                items.update(dict.fromkeys(str(v).split(GRAPH_FIELD_SEP)))
            out[key] = GRAPH_FIELD_SEP.join(items)
        elif how == "join_unique_comma":
            parts = {p.strip() for v in values for p in str(v).split(",") if p.strip()}
            out[key] = ",".join(sorted(parts))
        elif how == "max":
            try:
                out[key] = max(float(v) for v in values if v is not None)
            except (TypeError, ValueError):
                out[key] = values[0]
        else:
            out[key] = values[0]
    return out


def _relation_of(a: str, b: str, data: Mapping[str, Any], rid: str | None = None) -> Relation:
    known = ("description", "keywords", "weight", "source_id", "file_path", "created_at")
    return Relation(
        id=rid or relation_id(a, b), src_id=a, tgt_id=b, description=data.get("description"),
        keywords=data.get("keywords"), weight=data.get("weight"),
        source_id=data.get("source_id"), file_path=data.get("file_path"),
        created_at=data.get("created_at"),
        properties={k: v for k, v in data.items() if k not in known},
    )


@dataclass
class GraphEditor:
    """LightRAG's manual graph edits over one stack's ports (see the module docstring).

    ``tracking`` maps ``entity_chunks`` / ``relation_chunks`` to the stack's key-value
    stores (absent: not tracked); ``fragments`` is the stack's document store (``None``:
    none); ``clock`` gives epoch seconds (``created_at``, tracking stamps).
    """

    graph: GraphStore
    entities: VectorIndex
    relationships: VectorIndex
    embedder: Embedder
    clock: Callable[[], int]
    tracking: Mapping[str, Cache] = field(default_factory=dict)
    fragments: DocumentStore | None = None

    # ------------------------------------------------------------------ reads

    async def node(self, name: str) -> Entity | None:
        """The node called ``name``."""
        return (await self.graph.get_nodes([name])).get(name)

    async def exists(self, name: str) -> bool:
        """Whether a node called ``name`` exists (LightRAG's ``has_node``)."""
        return await self.node(name) is not None

    async def edge(self, a: str, b: str) -> Relation | None:
        """The relation joining ``a`` and ``b`` (either orientation; the first if several)."""
        found = (await self.graph.get_edges_by_pairs([(a, b)])).get((a, b)) or []
        return found[0] if found else None

    async def entity_info(self, name: str) -> dict[str, Any]:
        """LightRAG's ``get_entity_info``: ``entity_name``, ``source_id``, ``graph_data``."""
        node = await self.node(name)
        data = node_dict(node) if node is not None else None
        return {"entity_name": name, "source_id": data.get("source_id") if data else None,
                "graph_data": data}

    async def relation_info(self, a: str, b: str) -> dict[str, Any]:
        """LightRAG's ``get_relation_info``."""
        rel = await self.edge(a, b)
        data = edge_dict(rel) if rel is not None else None
        return {"src_entity": a, "tgt_entity": b,
                "source_id": data.get("source_id") if data else None, "graph_data": data}

    async def _resolve(self, requested: str, what: str = "Entity") -> str:
        """The name LightRAG resolves a caller's spelling to."""
        normalized = normalize_entity_name(requested)
        if requested != normalized and await self.exists(requested):
            return requested
        if not normalized:
            raise ValueError(f"{what} name cannot be empty after normalization")
        return normalized

    # ------------------------------------------------------------------ vectors

    async def _metadata(self, index: VectorIndex, rid: str) -> dict[str, Any]:
        (meta,) = await self._metadatas(index, [rid])
        return meta

    async def _metadatas(self, index: VectorIndex, rids: Sequence[str]
                         ) -> list[dict[str, Any]]:
        """The stored records' metadata, in order (``{}`` for a missing one), in one read."""
        if not rids:
            return []
        return [dict(old.metadata) if old is not None else {} for old in await index.get(rids)]

    async def _embed_entity(self, name: str, data: Mapping[str, Any], *,
                            with_path: bool = True, metadata: Mapping[str, Any] | None = None
                            ) -> None:
        content = entity_vector_content(name, data.get("description", ""))
        (vector,) = await self.embedder.embed([content])
        rid = entity_id(name)
        meta = dict(metadata) if metadata is not None else await self._metadata(self.entities,
                                                                                  rid)
        await self.entities.upsert([VectorRecord(
            id=rid, vector=vector, entity_name=name, content=content,
            source_id=data.get("source_id", ""),
            file_path=data.get("file_path", "") if with_path else None,
            created_at=self.clock(), metadata=meta,
        )])

    async def _embed_relation(self, a: str, b: str, data: Mapping[str, Any], content: str,
                              metadata: Mapping[str, Any] | None = None) -> None:
        (vector,) = await self.embedder.embed([content])
        rid = mdhash_id(a + b, "rel-")
        meta = dict(metadata) if metadata is not None else await self._metadata(
            self.relationships, rid)
        await self.relationships.upsert([VectorRecord(
            id=rid, vector=vector, src_id=a, tgt_id=b, content=content,
            source_id=data.get("source_id", ""), file_path=data.get("file_path"),
            created_at=self.clock(), metadata=meta,
        )])

    # ------------------------------------------------------------------ tracking

    async def _rows(self, ns: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return await stored_rows(self.tracking.get(ns), keys)

    async def _put_rows(self, ns: str, rows: Mapping[str, Sequence[str]]) -> None:
        store = self.tracking.get(ns)
        if store is None or not rows:
            return
        existing = await self._rows(ns, list(rows))
        records = {k: {"chunk_ids": list(v), "count": len(v)} for k, v in rows.items()}
        await store.set_many(stamp(records, existing, self.clock()))

    async def _drop_rows(self, ns: str, keys: Sequence[str]) -> None:
        store = self.tracking.get(ns)
        if store is not None and keys:
            await store.delete_many(list(dict.fromkeys(keys)))

    async def _drop_fragments(self, names: Sequence[str],
                              gone: Callable[[Fragment], bool]) -> None:
        """Remove the fragments about ``names`` that ``gone`` selects (a deleted entity's or
        relation's), so that a later document deletion does not rebuild it from them: the
        chunks holding one lose their fragments, and the others are stored again."""
        if self.fragments is None:
            return
        chunks = sorted({f.chunk_id for f in await self.fragments.fragments_about(list(names))
                         if gone(f)})
        if not chunks:
            return
        held = await self.fragments.fragments_of_chunks(chunks)
        await self.fragments.delete_fragments_of_chunks(chunks)
        kept = [f for f in held if not gone(f)]
        if kept:
            await self.fragments.add_fragments(kept)

    async def _move_fragments(self, old_names: Sequence[str], new_name: str) -> None:
        """Fragments about ``old_names`` now speak of ``new_name`` (relation fragments keep
        LightRAG's sorted pair; one that would join the entity to itself is left as is)."""
        if self.fragments is None or not old_names:
            return
        old = set(old_names)
        moved: list[Fragment] = []
        for frag in await self.fragments.fragments_about(list(old)):
            if frag.kind == "entity":
                moved.append(replace(frag, src=new_name))
                continue
            a = new_name if frag.src in old else frag.src
            b = new_name if frag.tgt in old else frag.tgt
            if a != b:
                a, b = sorted((a, b))
                moved.append(replace(frag, src=a, tgt=b))
        if moved:
            await self.fragments.add_fragments(moved)

    # ------------------------------------------------------------------ entities

    async def create_entity(self, name: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """LightRAG's ``acreate_entity``; returns the entity info."""
        _require_description(data.get("description"), "create", "entity")
        clean = sanitize_fields(data, _ENTITY_DATA, "entity", reject_unknown=False)
        requested = name
        name = normalize_entity_name(requested)
        if not name:
            raise ValueError("Entity name cannot be empty after normalization")
        if requested != name and await self.exists(requested):
            raise ValueError(f"Entity '{requested}' already exists")
        if await self.exists(name):
            raise ValueError(f"Entity '{name}' already exists")
        node = {
            "entity_id": name,
            "entity_type": clean.get("entity_type", "UNKNOWN"),
            "description": clean.get("description", ""),
            "source_id": clean.get("source_id", "manual_creation"),
            "file_path": clean.get("file_path", "manual_creation"),
            "created_at": self.clock(),
        }
        await self.graph.upsert_nodes([entity_from(node)])
        await self._embed_entity(name, node, metadata={})
        chunk_ids = _split(node["source_id"])
        if chunk_ids:
            await self._put_rows("entity_chunks", {name: chunk_ids})
        return await self.entity_info(name)

    async def edit_entity(self, name: str, updated: Mapping[str, Any], *,
                          allow_rename: bool = True, allow_merge: bool = False
                          ) -> dict[str, Any]:
        """LightRAG's ``aedit_entity``: the entity info and ``operation_summary``."""
        if "description" in updated:
            _require_description(updated.get("description"), "edit", "entity")
        data = sanitize_fields(updated, _EDITABLE_ENTITY, "entity", reject_unknown=True)
        name = await self._resolve(name)
        if "entity_name" in data:
            data["entity_name"] = new_name = await self._resolve(data["entity_name"])
        else:
            new_name = name
        renaming = new_name != name
        summary: dict[str, Any] = {
            "merged": False, "merge_status": "not_attempted", "merge_error": None,
            "operation_status": "success", "target_entity": None,
            "final_entity": new_name, "renamed": renaming,
        }
        if renaming and not allow_rename:
            raise ValueError("Entity renaming is not allowed. Set allow_rename=True to enable "
                             "this feature")
        if renaming and await self.exists(new_name):
            if not allow_merge:
                raise ValueError(f"Entity name '{new_name}' already exists, cannot rename")
            rest = {k: v for k, v in data.items() if k != "entity_name"}
            if rest:
                await self._edit(name, rest)
            try:
                merged = await self._merge([name], new_name)
            except ValueError as exc:
                summary.update(merge_status="failed", merge_error=str(exc),
                               operation_status="partial_success" if rest else "failure",
                               target_entity=new_name, final_entity=name)
                return {**await self.entity_info(name), "operation_summary": summary}
            summary.update(merged=True, merge_status="success", target_entity=new_name,
                           final_entity=new_name)
            return {**merged, "operation_summary": summary}
        return {**await self._edit(name, data), "operation_summary": summary}

    async def _edit(self, name: str, updated: Mapping[str, Any]) -> dict[str, Any]:
        """LightRAG's ``_edit_entity_impl``."""
        stored = await self.node(name)
        if stored is None:
            raise ValueError(f"Entity '{name}' does not exist")
        new_name = updated.get("entity_name", name)
        renaming = new_name != name
        if renaming and await self.exists(new_name):
            raise ValueError(f"Entity name '{new_name}' already exists, cannot rename")
        old_data = node_dict(stored)
        new_data = {**old_data, **updated, "entity_id": new_name}
        new_data.pop("entity_name", None)
        moved: list[tuple[str, str, dict[str, Any], Relation]] = []
        if renaming:
            await self.graph.upsert_nodes([entity_from(new_data)])
            edges = (await self.graph.get_node_edges([name])).get(name, [])
            for rel in edges:
                edata = edge_dict(rel)
                edata["source_id"] = edata.get("source_id") or ""
                edata["weight"] = floored_weight(edata.get("weight", 1.0), edata["source_id"])
                src = new_name if rel.src_id == name else rel.src_id
                tgt = new_name if rel.tgt_id == name else rel.tgt_id
                moved.append((src, tgt, edata, rel))
            await self.graph.delete_nodes([name])
            await self.graph.upsert_edges([_relation_of(s, t, d) for s, t, d, _ in moved])
            meta = await self._metadata(self.entities, entity_id(name))
            await self.entities.delete([entity_id(name)])
            gone = [i for _, _, _, r in moved
                    for i in (mdhash_id(r.src_id + r.tgt_id, "rel-"),
                              mdhash_id(r.tgt_id + r.src_id, "rel-"))]
            pairs = [r.pair for _, _, _, r in moved]
            old_meta = dict(zip(pairs, await self._metadatas(
                self.relationships, [relation_id(*p) for p in pairs]), strict=True))
            await self.relationships.delete(gone)
            for s, t, d, r in moved:
                a, b = sorted((s, t))
                content = edited_relation_vector_content(a, b, d.get("keywords", ""),
                                                         d.get("description", ""))
                await self._embed_relation(a, b, d, content, metadata=old_meta[r.pair])
            await self._embed_entity(new_name, new_data, with_path=False, metadata=meta)
            await self._move_fragments([name], new_name)
        else:
            await self.graph.upsert_nodes([entity_from(new_data)])
            await self._embed_entity(name, new_data, with_path=False)
        await self._track_entity_edit(name, new_name, old_data, new_data, moved)
        return await self.entity_info(new_name)

    async def _track_entity_edit(self, old_name: str, new_name: str, old: Mapping[str, Any],
                                 new: Mapping[str, Any],
                                 moved: Sequence[tuple[str, str, dict[str, Any], Relation]]
                                 ) -> None:
        renaming = old_name != new_name
        if "entity_chunks" in self.tracking:
            row = (await self._rows("entity_chunks", [old_name])).get(old_name)
            old_ids, new_ids = _split(old.get("source_id")), _split(new.get("source_id"))
            if set(old_ids) != set(new_ids) or not _has_row(row) or renaming:
                base = [c for c in row["chunk_ids"] if c] if row and _has_row(row) else old_ids
                await self._put_rows("entity_chunks",
                                     {new_name: incremental_ids(base, old_ids, new_ids)})
                if renaming:
                    await self._drop_rows("entity_chunks", [old_name])
        if renaming and "relation_chunks" in self.tracking:
            for src, tgt, edata, rel in moved:
                old_key, new_key = relation_chunk_key(*rel.pair), relation_chunk_key(src, tgt)
                if old_key == new_key:
                    continue
                row = (await self._rows("relation_chunks", [old_key])).get(old_key)
                if row is not None and _has_row(row):
                    ids = [c for c in row["chunk_ids"] if c and c not in NO_EVIDENCE]
                else:
                    ids = evidence_ids(edata.get("source_id", ""))
                if (row is not None and _has_row(row)) or ids:
                    await self._put_rows("relation_chunks", {new_key: ids})
                await self._drop_rows("relation_chunks", [old_key])

    async def delete_entity(self, name: str) -> str:
        """LightRAG's ``adelete_by_entity``; returns its message (:class:`NotFound` when
        there is no such entity)."""
        if not await self.exists(name):
            raise NotFound(f"Entity '{name}' not found.")
        edges = (await self.graph.get_node_edges([name])).get(name, [])
        await self._drop_rows("entity_chunks", [name])
        await self._drop_rows("relation_chunks", [relation_chunk_key(*r.pair) for r in edges])
        await self.entities.delete([entity_id(name)])
        await self.relationships.delete(list(dict.fromkeys(
            i for r in edges for i in (mdhash_id(r.src_id + r.tgt_id, "rel-"),
                                       mdhash_id(r.tgt_id + r.src_id, "rel-")))))
        await self.graph.delete_nodes([name])
        await self._drop_fragments([name], lambda f: name in f.names)
        pairs = {r.pair for r in edges}
        return f"Entity Delete: remove '{name}' and its {len(pairs)} relations"

    # ------------------------------------------------------------------ relations

    async def create_relation(self, source: str, target: str, data: Mapping[str, Any]
                              ) -> dict[str, Any]:
        """LightRAG's ``acreate_relation``; returns the relation info."""
        _require_description(data.get("description"), "create", "relation")
        if source == target:
            raise ValueError(f"Cannot create a self-loop relation on '{source}': source and "
                             "target must be different entities")
        clean = sanitize_fields(data, _RELATION_DATA, "relation", reject_unknown=False)
        if not await self.exists(source):
            raise ValueError(f"Source entity '{source}' does not exist")
        if not await self.exists(target):
            raise ValueError(f"Target entity '{target}' does not exist")
        if await self.edge(source, target) is not None:
            raise ValueError(f"Relation from '{source}' to '{target}' already exists")
        source_id = clean.get("source_id", "")
        weight = checked_weight(clean.get("weight", 1.0), source_id,
                                f"Relation `{source}`~`{target}`")
        edge = {"description": clean.get("description", ""),
                "keywords": clean.get("keywords", ""), "source_id": source_id,
                "weight": weight, "file_path": clean.get("file_path", "manual_creation"),
                "created_at": self.clock()}
        a, b = sorted((source, target))
        await self.graph.upsert_edges([_relation_of(source, target, edge)])
        content = relation_vector_content(edge["keywords"], a, b, edge["description"])
        await self._embed_relation(a, b, edge, content, metadata={})
        ids = evidence_ids(source_id)
        if ids:
            await self._put_rows("relation_chunks", {relation_chunk_key(a, b): ids})
        return await self.relation_info(a, b)

    async def edit_relation(self, source: str, target: str, updated: Mapping[str, Any]
                            ) -> dict[str, Any]:
        """LightRAG's ``aedit_relation``; returns the relation info."""
        if "description" in updated:
            _require_description(updated.get("description"), "edit", "relation")
        data = sanitize_fields(updated, _RELATION_DATA, "relation", reject_unknown=True)
        a, b = sorted((source, target))
        rel = await self.edge(a, b)
        if rel is None:
            raise ValueError(f"Relation from '{a}' to '{b}' does not exist")
        old = edge_dict(rel)
        new = {**old, **data}
        source_id = new.get("source_id") or ""
        if "weight" in data or "source_id" in data:
            weight = checked_weight(new.get("weight", 1.0), source_id, f"Relation `{a}`~`{b}`")
        else:
            weight = floored_weight(new.get("weight", 1.0), source_id)
        new["source_id"], new["weight"] = source_id, weight
        meta = await self._metadata(self.relationships, relation_id(a, b))
        await self.graph.upsert_edges([_relation_of(rel.src_id, rel.tgt_id, new, rel.id)])
        await self.relationships.delete(list(dict.fromkeys(
            [mdhash_id(a + b, "rel-"), mdhash_id(b + a, "rel-")])))
        content = edited_relation_vector_content(a, b, new.get("keywords", ""),
                                                 new.get("description", ""))
        await self._embed_relation(a, b, {**new, "file_path": None}, content, metadata=meta)
        if "relation_chunks" in self.tracking:
            key = relation_chunk_key(a, b)
            row = (await self._rows("relation_chunks", [key])).get(key)
            stored = [c for c in row["chunk_ids"] if c] if row and _has_row(row) else []
            legacy = any(c in NO_EVIDENCE for c in stored)
            old_ids = evidence_ids(old.get("source_id") or "")
            new_ids = evidence_ids(source_id)
            if (set(old_ids) != set(new_ids) or source_id != old.get("source_id", "")
                    or legacy or not _has_row(row)):
                base = ([c for c in stored if c not in NO_EVIDENCE] if _has_row(row)
                        else old_ids)
                await self._put_rows("relation_chunks",
                                     {key: incremental_ids(base, old_ids, new_ids)})
        return await self.relation_info(a, b)

    async def delete_relation(self, source: str, target: str) -> str:
        """LightRAG's ``adelete_by_relation``; returns its message (:class:`NotFound`)."""
        a, b = sorted((source, target))
        found = (await self.graph.get_edges_by_pairs([(a, b)])).get((a, b)) or []
        if not found:
            raise NotFound(f"Relation from '{a}' to '{b}' does not exist")
        await self._drop_rows("relation_chunks", [relation_chunk_key(a, b)])
        await self.relationships.delete(list(dict.fromkeys(
            [mdhash_id(a + b, "rel-"), mdhash_id(b + a, "rel-")])))
        await self.graph.delete_edges([r.id for r in found])
        await self._drop_fragments([a], lambda f: f.kind == "relation"
                                   and {f.src, f.tgt} == {a, b})
        return f"Relation Delete: `{a}`~`{b}` deleted successfully"

    # ------------------------------------------------------------------ merge

    async def merge_entities(self, sources: Sequence[str], target: str) -> dict[str, Any]:
        """LightRAG's ``amerge_entities``; returns the target's entity info."""
        if not sources:
            raise ValueError("At least one source entity is required for merge")
        resolved: list[str] = []
        for requested in sources:
            name = await self._resolve(requested, "Source entity")
            if name not in resolved:
                resolved.append(name)
        return await self._merge(resolved, await self._resolve(target, "Target entity"))

    async def _merge(self, sources: list[str], target: str) -> dict[str, Any]:
        """LightRAG's ``_merge_entities_impl``."""
        nodes = await self.graph.get_nodes([*sources, target])
        for name in sources:
            if name not in nodes:
                raise ValueError(f"Source entity '{name}' does not exist")
        data = {n: node_dict(nodes[n]) for n in sources}
        target_exists = target in nodes
        prior = node_dict(nodes[target]) if target_exists else {}
        merged = merge_attributes(
            [*data.values(), *([prior] if target_exists else [])],
            {"description": "concatenate", "entity_type": "keep_first",
             "source_id": "join_unique", "file_path": "join_unique"}, none_only=False)
        collect = list(sources) + ([target] if target_exists and target not in sources else [])
        incident = await self.graph.get_node_edges(collect)
        relations: list[Relation] = []
        seen_ids: set[str] = set()
        for name in collect:
            for rel in incident.get(name, []):
                if rel.id not in seen_ids:
                    seen_ids.add(rel.id)
                    relations.append(rel)
        merged["entity_id"] = target
        await self.graph.upsert_nodes([entity_from(merged)])
        updates: dict[tuple[str, str], dict[str, Any]] = {}
        tracked: dict[str, list[str]] = {}
        old_keys: list[str] = []
        stale: list[str] = []
        rows = await self._rows("relation_chunks", [relation_chunk_key(*r.pair)
                                                    for r in relations])
        for rel in relations:
            stale += [mdhash_id(rel.src_id + rel.tgt_id, "rel-"),
                      mdhash_id(rel.tgt_id + rel.src_id, "rel-")]
            old_key = relation_chunk_key(*rel.pair)
            old_keys.append(old_key)
            src = target if rel.src_id in sources else rel.src_id
            tgt = target if rel.tgt_id in sources else rel.tgt_id
            if src == tgt:
                continue
            pair = (min(src, tgt), max(src, tgt))
            edata = edge_dict(rel)
            if "relation_chunks" in self.tracking:
                held = _row_ids(rows.get(old_key))
                ids = ([c for c in held if c not in NO_EVIDENCE] if held is not None
                       else evidence_ids(edata.get("source_id") or ""))
                bucket = tracked.setdefault(relation_chunk_key(*pair), [])
                bucket.extend(c for c in ids if c not in bucket)
            if pair in updates:
                edata = merge_attributes(
                    [updates[pair]["data"], edata],
                    {"description": "concatenate", "keywords": "join_unique_comma",
                     "source_id": "join_unique", "file_path": "join_unique", "weight": "max"},
                    none_only=True)
            else:
                updates[pair] = {"src": src, "tgt": tgt, "data": edata}
            edata["weight"] = floored_weight(edata.get("weight", 1.0),
                                             edata.get("source_id") or "")
            updates[pair]["data"] = edata
        metas = dict(zip(updates, await self._metadatas(
            self.relationships, [relation_id(*pair) for pair in updates]), strict=True))
        await self.graph.delete_edges([r.id for r in relations])
        await self.graph.upsert_edges([_relation_of(u["src"], u["tgt"], u["data"])
                                       for u in updates.values()])
        if tracked:
            await self._put_rows("relation_chunks", tracked)
        await self._drop_rows("relation_chunks", [k for k in old_keys if k not in tracked])
        await self.relationships.delete(list(dict.fromkeys(stale)))
        for (a, b), u in updates.items():
            d = u["data"]
            content = relation_vector_content(d.get("keywords", ""), a, b,
                                              d.get("description", ""))
            await self._embed_relation(a, b, {**d, "file_path": d.get("file_path", "")},
                                       content, metadata=metas[(a, b)])
        await self._embed_entity(target, merged,
                                 metadata=await self._metadata(self.entities, entity_id(target)))
        if "entity_chunks" in self.tracking:
            names = [n for n in sources if n != target] + ([target] if target_exists else [])
            rows_e = await self._rows("entity_chunks", names)
            before = {**data, **({target: prior} if target_exists else {})}
            chunk_ids: list[str] = []
            for n in names:
                held = _row_ids(rows_e.get(n))
                part = held if held is not None else _split(before.get(n, {}).get("source_id"))
                chunk_ids.extend(c for c in part if c not in chunk_ids)
            if any(_has_row(rows_e.get(n)) for n in names):
                await self._put_rows("entity_chunks", {target: chunk_ids})
            await self._drop_rows("entity_chunks", [n for n in sources if n != target])
        gone = [n for n in sources if n != target]
        await self.graph.delete_nodes(gone)
        await self.entities.delete([entity_id(n) for n in gone])
        await self._move_fragments(gone, target)
        return await self.entity_info(target)
