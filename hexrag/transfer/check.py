"""``hexrag check``: a consistency report of a stack (drift between its stores).

LightRAG deployments drift after deletes and partial failures (HKUDS/LightRAG#2917, #3243):
relation vectors whose edge is gone, entity vectors without a node, source ids naming chunks
that no longer exist. :func:`check_stack` scans every store once, page by page
(:mod:`hexrag.ports.scan`), and counts each kind of problem, with a few example ids each:

==============================  ==============================================================
finding                         meaning
==============================  ==============================================================
relation_vectors_without_edge   a relationship vector whose (unordered) pair has no graph edge
edges_without_vector            a graph edge whose pair has no relationship vector
entity_vectors_without_node     an entity vector whose ``entity_name`` is no graph node
nodes_without_vector            a graph node without an entity vector
dangling_source_ids             a node/edge ``source_id`` chunk id absent from the chunk store
unreferenced_chunks             a stored chunk no node or edge names (warning only)
chunk_vectors_without_chunk     a chunk vector whose chunk text is not stored
chunks_without_vector           a stored chunk without a chunk vector
wrong_dimension                 a stored vector whose length differs from its index's ``dim``
non_finite_vectors              a stored vector with NaN/inf or norm 0
chunks_without_scope            a chunk whose own metadata proves no ``product_id`` (warning)
==============================  ==============================================================

The stack is *clean* when every finding but the warnings is 0 and no file is damaged. Memory
holds the ids and pairs of the stack (not the records).

A LightRAG working directory is first read file by file
(:func:`hexrag.adapters.workdir.validate.validate_workdir`): each unreadable, truncated or
wrong-shaped file is reported in :attr:`CheckReport.files` (file name -> what is wrong, the
message naming the file) and makes the report not clean; ``hexrag check`` then reports the
files alone (the stack cannot be loaded truthfully).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hexrag.core.query.source_ids import parse_source_ids
from hexrag.core.scope import chunk_meta
from hexrag.ports.scan import (
    DEFAULT_SCAN_LIMIT,
    ScansChunks,
    ScansGraph,
    ScansVectorIndex,
    scan_all,
)
from hexrag.transfer.archive import VECTOR_SECTIONS, Progress, StackStores, require_scan

__all__ = ["ERRORS", "WARNINGS", "CheckReport", "check_stack"]

ERRORS = (
    "relation_vectors_without_edge",
    "edges_without_vector",
    "entity_vectors_without_node",
    "nodes_without_vector",
    "dangling_source_ids",
    "chunk_vectors_without_chunk",
    "chunks_without_vector",
    "wrong_dimension",
    "non_finite_vectors",
)
WARNINGS = ("unreferenced_chunks", "chunks_without_scope")
SAMPLES = 5


@dataclass
class CheckReport:
    """Counts per finding, example ids per finding, and what each store holds."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ERRORS + WARNINGS, 0))
    samples: dict[str, list[str]] = field(default_factory=dict)
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: damaged files of a working directory: file name -> what is wrong with it
    files: dict[str, str] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """True when no error finding (warnings allowed) and no damaged file."""
        return not self.files and all(self.counts[k] == 0 for k in ERRORS)

    def add(self, finding: str, items: Iterable[str]) -> None:
        """Count ``items`` under ``finding`` and keep the first few as examples."""
        for item in items:
            self.counts[finding] += 1
            bucket = self.samples.setdefault(finding, [])
            if len(bucket) < SAMPLES:
                bucket.append(item)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON data (``hexrag check --json``)."""
        return {
            "clean": self.clean,
            "errors": {k: self.counts[k] for k in ERRORS},
            "warnings": {k: self.counts[k] for k in WARNINGS},
            "samples": {k: v for k, v in self.samples.items() if v},
            "stores": self.stores,
            "files": dict(self.files),
        }


def _pair(a: str | None, b: str | None) -> tuple[str, str]:
    x, y = a or "", b or ""
    return (x, y) if x <= y else (y, x)


async def check_stack(
    stores: StackStores,
    *,
    page_size: int = DEFAULT_SCAN_LIMIT,
    progress: Progress | None = None,
) -> CheckReport:
    """Scan every store of ``stores`` once and report drift (see the module docstring)."""
    for name in VECTOR_SECTIONS:
        require_scan(stores.vector_index(name), ScansVectorIndex, f"the {name} index")
    require_scan(stores.graph, ScansGraph, "the graph store")
    require_scan(stores.chunk_store, ScansChunks, "the chunk store")
    say = progress or (lambda *_: None)
    report = CheckReport()
    ids: dict[str, list[str]] = {}
    rel_pairs: dict[tuple[str, str], str] = {}
    entity_names: dict[str, str] = {}

    for name in VECTOR_SECTIONS:
        index = stores.vector_index(name)
        seen = 0
        ids[name] = []
        async for page in scan_all(index.scan_records, limit=page_size):  # type: ignore[attr-defined]
            for rec in page.items:
                ids[name].append(rec.id)
                vec = np.asarray(rec.vector if rec.vector is not None else [], dtype=np.float64)
                if vec.ndim != 1 or vec.shape[0] != index.dim:
                    report.add("wrong_dimension", [f"{name}:{rec.id}"])
                elif not np.all(np.isfinite(vec)) or not vec.any():
                    report.add("non_finite_vectors", [f"{name}:{rec.id}"])
                if name == "relationships":
                    rel_pairs[_pair(rec.src_id, rec.tgt_id)] = rec.id
                elif name == "entities" and rec.entity_name is not None:
                    entity_names[rec.entity_name] = rec.id
            seen += len(page.items)
            say(name, seen, None)
        report.stores[name] = {
            "count": seen,
            "dim": index.dim,
            "model": stores.embedding_model,
            "cosine_threshold": index.cosine_threshold,
        }

    nodes: set[str] = set()
    referenced: set[str] = set()
    source_refs: list[tuple[str, list[str]]] = []
    async for page in scan_all(stores.graph.scan_nodes, limit=page_size):  # type: ignore[attr-defined]
        for ent in page.items:
            nodes.add(ent.name)
            source_refs.append((f"node:{ent.name}", parse_source_ids(ent.source_id)))
        say("nodes", len(nodes), None)
    edge_pairs: set[tuple[str, str]] = set()
    n_edges = 0
    async for page in scan_all(stores.graph.scan_edges, limit=page_size):  # type: ignore[attr-defined]
        for rel in page.items:
            n_edges += 1
            pair = _pair(rel.src_id, rel.tgt_id)
            if pair not in rel_pairs and pair not in edge_pairs:
                report.add("edges_without_vector", [f"{pair[0]} -- {pair[1]}"])
            edge_pairs.add(pair)
            source_refs.append((f"edge:{rel.id}", parse_source_ids(rel.source_id)))
        say("edges", n_edges, None)
    report.stores["graph"] = {"nodes": len(nodes), "edges": n_edges}

    report.add(
        "relation_vectors_without_edge",
        (f"{rid} ({a} -- {b})" for (a, b), rid in rel_pairs.items() if (a, b) not in edge_pairs),
    )
    report.add(
        "entity_vectors_without_node",
        (f"{vid} ({n})" for n, vid in entity_names.items() if n not in nodes),
    )
    report.add("nodes_without_vector", (n for n in nodes if n not in entity_names))

    chunk_ids: set[str] = set()
    async for page in scan_all(stores.chunk_store.scan_chunks, limit=page_size):  # type: ignore[attr-defined]
        for chunk in page.items:
            chunk_ids.add(chunk.id)
            if not any(m.product_id for m in chunk_meta(chunk)):
                report.add("chunks_without_scope", [chunk.id])
        say("text_chunks", len(chunk_ids), None)
    report.stores["chunk_store"] = {"count": len(chunk_ids)}

    for owner, cids in source_refs:
        for cid in cids:
            referenced.add(cid)
            if cid not in chunk_ids:
                report.add("dangling_source_ids", [f"{owner} -> {cid}"])
    report.add("unreferenced_chunks", sorted(chunk_ids - referenced))
    chunk_vectors = set(ids["chunks"])
    report.add("chunk_vectors_without_chunk", (c for c in ids["chunks"] if c not in chunk_ids))
    report.add("chunks_without_vector", sorted(chunk_ids - chunk_vectors))
    return report
