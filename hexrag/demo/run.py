"""``hexrag demo``: what each mode retrieves for one question, unscoped and scoped."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from hexrag.core.model import QueryParam, QueryScope
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine

__all__ = ["DEFAULT_SCOPE", "DEMO_MODES", "run_demo"]

DEMO_MODES = ("local", "global", "hybrid", "mix", "naive")
DEFAULT_SCOPE = {"product_id": "p-erp"}


def _summary(data: dict[str, Any]) -> tuple[str, str, str, str]:
    if data.get("status") != "success":
        return (data.get("message", "failure"), "", "", "")
    d = data["data"]
    entities = ", ".join(e["entity_name"] for e in d["entities"][:4])
    if len(d["entities"]) > 4:
        entities += f" (+{len(d['entities']) - 4})"
    relations = str(len(d["relationships"]))
    chunks = "\n".join(f"{c['file_path']}#{c['chunk_id'][-3:]}" for c in d["chunks"][:4])
    if len(d["chunks"]) > 4:
        chunks += f"\n(+{len(d['chunks']) - 4} more)"
    info = data["metadata"].get("processing_info", {})
    scope = info.get("scope", {})
    notes = []
    if scope.get("applied"):
        notes.append(
            f"scope removed: graph {scope.get('graph_removed_entities', 0)} ent/"
            f"{scope.get('graph_removed_relations', 0)} rel, "
            f"chunks {scope.get('chunk_guard_removed', 0)}"
        )
        if scope.get("narrowed_descriptions"):
            notes.append(f"{scope['narrowed_descriptions']} description(s) narrowed to "
                         "in-scope sources")
    if info.get("relations_resolved_by_chunk"):
        notes.append(f"{info['relations_resolved_by_chunk']} relation hit(s) resolved by chunk")
    return entities, relations, chunks, "\n".join(notes)


async def _collect(
    question: str, modes: Sequence[str], scope: QueryScope | None, ingest: bool = False
) -> list[tuple[str, str, dict[str, Any]]]:
    if ingest:
        from hexrag.demo import build_ingested_demo_engine

        stack, _reports = await build_ingested_demo_engine()
    else:
        stack = await build_demo_engine()
    rows = []
    for label, sc in (("unscoped", None), ("scoped", scope)):
        if label == "scoped" and sc is None:
            continue
        for mode in modes:
            param = QueryParam(mode=mode, enable_rerank=False, scope=sc)  # type: ignore[arg-type]
            rows.append((mode, label, await stack.engine.query_data(question, param)))
    return rows


def run_demo(
    question: str = DEFAULT_QUESTION,
    *,
    modes: Sequence[str] = DEMO_MODES,
    scope: QueryScope | None = None,
    console: Console | None = None,
    ingest: bool = False,
) -> list[tuple[str, str, dict[str, Any]]]:
    """Run the demo and print one table; returns ``(mode, scoped|unscoped, query_data)`` rows.

    ``ingest``: build the knowledge base by ingesting the demo's documents with hexrag's
    LightRAG pipeline and an offline scripted extraction LLM, instead of loading it.
    """
    console = console or Console(width=None if sys.stdout.isatty() else 140)
    scope = scope if scope is not None else QueryScope(**DEFAULT_SCOPE)
    rows = asyncio.run(_collect(question, modes, scope, ingest))
    if ingest:
        console.print("[bold]Knowledge base[/bold]: the demo's documents ingested by hexrag "
                      "(LightRAG's pipeline, offline scripted extraction LLM)")
    keywords: dict[str, Any] = next(
        (d["metadata"]["keywords"] for _, _, d in rows if d.get("metadata", {}).get("keywords")),
        {},
    )
    console.print(f"[bold]Question:[/bold] {question}")
    if keywords:
        console.print(
            f"[bold]Keywords[/bold] (deterministic extractor, no LLM configured): "
            f"high-level {keywords.get('high_level')}, low-level {keywords.get('low_level')}"
        )
    console.print(f"[bold]Scope[/bold] for the scoped runs: {scope.model_dump(exclude_none=True)}")
    table = Table(show_lines=True)
    for col in ("mode", "scope", "entities", "relations", "chunks (file#n)", "notes"):
        table.add_column(col)
    for mode, label, data in rows:
        table.add_row(mode, label, *_summary(data))
    console.print(table)
    return rows
