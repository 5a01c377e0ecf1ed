"""What a LightRAG working directory opens: with ``workdir`` set (and no server stores) every
section of the stack, read into memory once and written back atomically on commit; beside a
LightRAG deployment (``layout = lightrag``, ``graph_store = memory``) LightRAG's NetworkX
graph alone. It is named by the ``workdir`` key, not by a URL scheme."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hexrag.openings import Opening, OpeningContext, Section

__all__ = ["OPENING"]


async def _loaded(ctx: OpeningContext) -> Any:
    """The working directory as a :class:`~hexrag.adapters.workdir.WorkdirStack`, loaded
    once per stack (its write-back registered as a committer)."""

    async def load() -> Any:
        from hexrag.adapters.workdir import load_workdir, resolve_workdir, save_workdir

        assert ctx.workdir is not None
        workspace = ctx.lightrag_workspace or None
        where = resolve_workdir(ctx.workdir, workspace)
        ctx.say(f"loading LightRAG working directory {where}")
        wd = await asyncio.to_thread(
            load_workdir, ctx.workdir, workspace=workspace, embedder_dim=ctx.dim,
            cosine_threshold=ctx.cosine_threshold, require_complete=True,
        )
        ctx.say(f"loaded {wd.source} in {sum(wd.timings.values()):.1f}s "
                f"({ctx.dim}-dimensional vectors)")

        async def save() -> None:  # what the stack wrote (a deletion over HTTP), atomically
            await asyncio.to_thread(save_workdir, wd, where)

        ctx.commit_with("working directory", save)
        return wd

    return await ctx.shared("workdir", load)


async def open_workdir(ctx: OpeningContext, section: Section, url: str | None) -> Any:
    """Open ``section`` of the working directory ``ctx.workdir``."""
    assert ctx.workdir is not None
    if ctx.layout == "lightrag":  # LightRAG's NetworkXStorage beside a deployment
        from hexrag.adapters.workdir import load_graph, save_graph

        ws = ctx.lightrag_workspace
        where = Path(ctx.workdir) / ws if ws else Path(ctx.workdir)
        ctx.say(f"LightRAG NetworkXStorage graph in {where}")
        graph = await asyncio.to_thread(load_graph, where)

        async def save() -> None:
            await asyncio.to_thread(save_graph, graph, where)

        ctx.commit_with("networkx graph", save)
        return graph
    if section == "manifest":
        from hexrag.adapters.workdir import resolve_workdir
        from hexrag.adapters.workdir.manifest import WorkdirManifestStore

        return WorkdirManifestStore(resolve_workdir(ctx.workdir,
                                                    ctx.lightrag_workspace or None))
    wd = await _loaded(ctx)
    if section == "vectors":
        return {name: wd.vector_index(name) for name in ("entities", "relationships", "chunks")}
    if section == "kv":
        return dict(wd.kv)
    return {"graph": wd.graph, "chunks": wd.chunk_store, "documents": wd.documents,
            "llm_cache": wd.cache}[section]


OPENING = Opening(
    kind="workdir",
    schemes=(),
    roles=(),
    sections={
        "workdir": ("vectors", "graph", "chunks", "documents", "kv", "manifest", "llm_cache"),
        "lightrag": ("graph",),
    },
    open=open_workdir,
    lightrag_storages={"graph_store": "NetworkXStorage"},
)
