"""``hexrag migrate``: copy a whole stack into another, page by page, resumable.

:func:`migrate_stack` copies every section the source holds
(:data:`hexrag.transfer.sections.SECTIONS`): the three vector indexes (vectors as stored,
**never re-embedded** unless a ``re_embed`` model is given), the graph (nodes, then relations
with their ids), the chunk store, the LLM cache, the document status rows and description
fragments, and LightRAG's key-value namespaces (``full_docs`` ...), in the source's scan
order. A section the source holds records in and the target has no store for is refused
before anything is written. After every page
written it saves its position (each section's scan cursor) to a small JSON state file,
atomically; re-running with the same state file continues after the last page written.
A page written again after a crash is harmless: every write is an idempotent upsert by id,
so nothing is duplicated.

Pages are read one or two ahead of their writer, and the vector sections are copied
concurrently with the graph, chunks and cache (two lanes), so that this process reads and
encodes while the target's servers write; the order of writes within each store is the
source's scan order.

A fresh migration (no state file) refuses a non-empty target unless ``overwrite``, and a
target whose vector dimension or embedding model differs (``re_embed`` recomputes the vectors
from each record's stored ``content``, LightRAG's content formats, with the target's model:
no LLM call). :func:`verify_migration` compares per-section digests (counts and content
checksums) and golden queries, searched exactly and compared tie-aware, on both stacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from hexrag.core.model import QueryParam, VectorRecord
from hexrag.core.query.engine import QueryEngine
from hexrag.ports import BulkLoads, Embedder, ExactSearchSwitch
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT
from hexrag.transfer.archive import (
    ArchiveError,
    Progress,
    StackStores,
    _require_empty,
    check_fits,
)
from hexrag.transfer.compare import compare_answers, golden_searches
from hexrag.transfer.digests import compare_digests, stack_digests
from hexrag.transfer.sections import (
    VECTOR_SECTIONS,
    held_sections,
    plan_sections,
    scanner,
    writer,
)

__all__ = ["MigrationResult", "migrate_stack", "sample_queries", "verify_migration"]

STATE_VERSION = 1
MODES = ("local", "global", "hybrid", "mix", "naive")


@dataclass
class MigrationResult:
    """What a migration copied (per section) and whether it resumed an earlier run."""

    copied: dict[str, int] = field(default_factory=dict)
    resumed: bool = False


class _State:
    def __init__(self, path: Path, identity: dict[str, Any]) -> None:
        self.path = path
        self.identity = identity
        self.sections: dict[str, dict[str, Any]] = {}
        self.resumed = False

    def load(self) -> bool:
        if not self.path.is_file():
            return False
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ArchiveError(f"{self.path}: unreadable migration state ({exc})") from exc
        if data.get("version") != STATE_VERSION or data.get("identity") != self.identity:
            raise ArchiveError(
                f"{self.path} belongs to another migration ({data.get('identity')}); "
                "remove it to start over"
            )
        self.sections = data.get("sections", {})
        self.resumed = True
        return True

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(
            json.dumps(
                {"version": STATE_VERSION, "identity": self.identity, "sections": self.sections},
                indent=1,
            ),
            encoding="utf-8",
        )
        os.replace(tmp, self.path)

    def section(self, name: str) -> dict[str, Any]:
        return self.sections.setdefault(name, {"cursor": None, "copied": 0, "done": False})


async def migrate_stack(
    source: StackStores,
    target: StackStores,
    *,
    state_path: str | Path,
    identity: dict[str, Any] | None = None,
    page_size: int = DEFAULT_SCAN_LIMIT,
    overwrite: bool = False,
    allow_model_change: bool = False,
    re_embed: Embedder | None = None,
    progress: Progress | None = None,
    stop_after_pages: int | None = None,
) -> MigrationResult:
    """Copy ``source`` into ``target`` (see the module docstring).

    ``identity`` (e.g. the two stack descriptions) is stored in the state file; a state file
    of another migration is refused. ``stop_after_pages`` interrupts the copy after that many
    pages (tests and ``--max-pages``): the state then says where to resume.
    """
    planned = await plan_sections(source, target, what="migrate")
    dims = {source.vector_index(n).dim for n in VECTOR_SECTIONS}
    manifest = {"embedding": {"model": source.embedding_model, "dim": dims.pop()}}
    if re_embed is not None:
        manifest = {"embedding": {"model": re_embed.model_name, "dim": re_embed.dim}}
    check_fits(manifest, target, allow_model_change=allow_model_change)

    state = _State(Path(state_path), identity or {})
    if not state.load() and not overwrite:
        await _require_empty(target)
    say = progress or (lambda *_: None)
    totals = await source.counts()
    result = MigrationResult(resumed=state.resumed)

    plan: list[tuple[str, Any, Any]] = [
        (name, scanner(source, name), writer(target, name)) for name in planned
    ]

    bulk = [
        target.vector_index(n)
        for n in VECTOR_SECTIONS
        if isinstance(target.vector_index(n), BulkLoads)
        and not state.section(n)["done"]
    ]
    for store in bulk:
        await store.begin_bulk_load()  # type: ignore[attr-defined]
    pages = 0
    interrupted = False

    async def copy_lane(sections: list[tuple[str, Any, Any]]) -> None:
        nonlocal pages, interrupted
        for name, scan, write in sections:
            sec = state.section(name)
            if sec["done"]:
                result.copied[name] = sec["copied"]
                continue
            pages_ahead = _ReadAhead(scan, sec["cursor"], page_size)
            try:
                while True:
                    if interrupted or (stop_after_pages is not None
                                       and pages >= stop_after_pages):
                        interrupted = True
                        return
                    page = await pages_ahead.next()
                    items = list(page.items)
                    if items:
                        if re_embed is not None and name in VECTOR_SECTIONS:
                            items = await _re_embed(items, re_embed, name)
                        await write(items)
                    sec["copied"] += len(items)
                    sec["cursor"] = page.cursor
                    sec["done"] = page.cursor is None
                    pages += 1
                    state.save()
                    say(name, sec["copied"], totals.get(name))
                    if sec["done"]:
                        break
            finally:
                await pages_ahead.aclose()
            result.copied[name] = sec["copied"]

    # Two lanes, vectors and the rest, so that one lane's reading and encoding (this
    # process) runs while the other's writes keep the target busy. Within a store the
    # order of writes is the source's.
    try:
        async with asyncio.TaskGroup() as lanes:
            lanes.create_task(copy_lane([p for p in plan if p[0] in VECTOR_SECTIONS]))
            lanes.create_task(copy_lane([p for p in plan if p[0] not in VECTOR_SECTIONS]))
    except BaseExceptionGroup as group:  # the first failure, as a single exception
        raise group.exceptions[0] from None
    if interrupted:
        state.save()
        return result  # indexes suspended by a bulk load come back on the next run
    for name in VECTOR_SECTIONS:
        index = target.vector_index(name)
        if isinstance(index, BulkLoads):
            await index.end_bulk_load()
    return result


class _ReadAhead:
    """A section's pages, read ahead of the writer: while a page is being written (the
    target's server busy with it), the next ones are read and decoded. At most ``depth``
    pages wait in memory; a page is read only when there is room for it, so a source that
    never suspends (files, memory) cannot keep the writer from resuming."""

    def __init__(self, scan: Any, cursor: str | None, limit: int, depth: int = 2) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._room = asyncio.Semaphore(depth)
        self._task = asyncio.create_task(self._read(scan, cursor, limit))

    async def _read(self, scan: Any, cursor: str | None, limit: int) -> None:
        try:
            while True:
                await self._room.acquire()
                page = await scan(cursor, limit=limit)
                self._queue.put_nowait(page)
                if page.cursor is None:
                    return
                cursor = page.cursor
        except Exception as exc:  # handed to the writer, which raises it
            self._queue.put_nowait(exc)

    async def next(self) -> Any:
        """The next page (or the reader's error, raised)."""
        got = await self._queue.get()
        self._room.release()
        if isinstance(got, Exception):
            raise got
        return got

    async def aclose(self) -> None:
        """Stop reading (pages read but not written are dropped; the state did not move)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def _re_embed(
    records: list[VectorRecord], embedder: Embedder, section: str
) -> list[VectorRecord]:
    texts = []
    for r in records:
        if r.content is None:
            raise ArchiveError(
                f"cannot re-embed {section} record {r.id!r}: it stores no content"
            )
        texts.append(r.content)
    vectors = np.asarray(await embedder.embed(texts), dtype=np.float32)
    return [replace(r, vector=vectors[i]) for i, r in enumerate(records)]


async def sample_queries(stores: StackStores, n: int = 4) -> list[dict[str, Any]]:
    """``n`` keyword queries made from the stack's own records (first entities and relation
    keywords in scan order), usable without an LLM: ``{"query", "ll_keywords",
    "hl_keywords"}``."""
    nodes = await stores.graph.scan_nodes(None, limit=max(1, 3 * n))  # type: ignore[attr-defined]
    edges = await stores.graph.scan_edges(None, limit=max(1, 3 * n))  # type: ignore[attr-defined]
    names = [e.name for e in nodes.items]
    keywords = [k.strip() for r in edges.items for k in (r.keywords or "").split(",") if k.strip()]
    out = []
    for i in range(n):
        ll = names[i * 2 : i * 2 + 2] or names[:1]
        hl = keywords[i : i + 2] or ["overview"]
        if not ll:
            break
        query = f"What about {' and '.join(ll)}?"
        out.append({"query": query, "ll_keywords": ll, "hl_keywords": hl})
    return out


async def verify_migration(
    source: StackStores,
    target: StackStores,
    source_engine: QueryEngine,
    target_engine: QueryEngine,
    *,
    queries: list[dict[str, Any]] | None = None,
    modes: Sequence[str] = MODES,
    exact_search: bool = True,
    page_size: int = DEFAULT_SCAN_LIMIT,
) -> dict[str, Any]:
    """Whether ``target`` holds exactly what ``source`` holds, and answers the same.

    1. **Digests** (:mod:`hexrag.transfer.digests`): every section either stack holds is
       scanned on both sides; its record count and order-independent checksum (vectors by
       their float32 bytes) must be equal. A missing record, a changed text, a vector moved
       by one unit in the last place, a section the target lacks: each fails here.
    2. **Golden queries** (``queries``, default :func:`sample_queries` of the source), with
       exact search on **both** sides: every vector index that may search approximately and
       can be switched (:class:`~hexrag.ports.ExactSearchSwitch`: pgvector's HNSW,
       LightRAG's PostgreSQL tables) searches exactly meanwhile, and is switched back after.
       Each query's three vector searches are compared tie-aware
       (:func:`hexrag.transfer.compare.compare_hits`); where the hits are identical, its
       ``query_data`` in every mode must be identical too, up to the order of equally
       ranked relationships (:func:`hexrag.transfer.compare.compare_answers`: the same
       items, relationships reordered only among equal weights; counted in
       ``graph_ties``); where the hits differ only in the order of equally scored records,
       ``query_data`` may legitimately differ and is not compared (counted in
       ``tie_equivalent``).

    Returns ``{"ok", "counts": {section: [source, target]}, "digests": {section: {"source",
    "target"}}, "queries", "tie_equivalent", "graph_ties", "mismatches": [...],
    "exact_search": [...]}``
    (``exact_search``: the indexes that were switched, as ``"source entities"`` ...).
    """
    sections = held_sections(source) + [
        n for n in held_sections(target) if n not in held_sections(source)
    ]
    mine = set(held_sections(source))
    theirs = set(held_sections(target))
    digest_a = await stack_digests(source, [n for n in sections if n in mine],
                                   page_size=page_size)
    digest_b = await stack_digests(target, [n for n in sections if n in theirs],
                                   page_size=page_size)
    mismatches = compare_digests(digest_a, digest_b)
    counts = {
        n: [digest_a.get(n, {}).get("count"), digest_b.get(n, {}).get("count")]
        for n in sections
    }
    switched: list[tuple[str, Any, bool]] = []  # (name, index, its previous setting)
    if exact_search:
        for side, engine in (("source", source_engine), ("target", target_engine)):
            for section in VECTOR_SECTIONS:
                index: Any = getattr(engine.stores, section)
                if isinstance(index, ExactSearchSwitch):
                    switched.append((f"{side} {section}", index, index.set_exact_search(True)))
    try:
        report = await _compare_answers(source, source_engine, target_engine,
                                        queries=queries, modes=modes)
    finally:
        for _name, index, previous in reversed(switched):
            index.set_exact_search(previous)
    mismatches += report["mismatches"]
    return {
        "ok": not mismatches,
        "counts": counts,
        "digests": {n: {"source": digest_a.get(n), "target": digest_b.get(n)} for n in sections},
        "queries": report["queries"],
        "tie_equivalent": report["tie_equivalent"],
        "graph_ties": report["graph_ties"],
        "mismatches": mismatches,
        "exact_search": [name for name, _index, _previous in switched],
    }


async def _compare_answers(
    source: StackStores,
    source_engine: QueryEngine,
    target_engine: QueryEngine,
    *,
    queries: list[dict[str, Any]] | None,
    modes: Sequence[str],
) -> dict[str, Any]:
    queries = queries if queries is not None else await sample_queries(source)
    verdicts, mismatches = await golden_searches(
        source_engine.stores, target_engine.stores, source_engine.embedder, queries
    )
    compared = ties = graph_ties = 0
    for q, verdict in zip(queries, verdicts, strict=True):
        if verdict != "same":
            ties += verdict == "ties"
            continue
        for mode in modes:
            param = QueryParam(
                mode=mode,  # type: ignore[arg-type]
                ll_keywords=q["ll_keywords"],
                hl_keywords=q["hl_keywords"],
            )
            x = await source_engine.query_data(q["query"], param)
            y = await target_engine.query_data(q["query"], param)
            compared += 1
            same, why = compare_answers(x.get("data") or {}, y.get("data") or {})
            graph_ties += same == "ties"
            if same == "differ":
                mismatches.append(f"query {q['query']!r} mode={mode}: results differ ({why})")
    return {"queries": compared, "tie_equivalent": ties, "graph_ties": graph_ties,
            "mismatches": mismatches}
