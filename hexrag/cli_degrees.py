"""``hexrag stored-degrees``: install (or remove) the node degrees a LightRAG PostgreSQL graph
can keep for hexrag, an explicit, opt-in speed-up of local mode (see
:mod:`hexrag.adapters.postgres.lightrag_degrees`)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer

from hexrag.cli_common import _fail, _guarded, _RequiredStackOption, _WorkspaceOption

__all__ = ["stored_degrees_command"]


def _unwrapped(store: Any) -> Any:
    """The adapter under the stack's wrappers (each keeps it as ``inner``)."""
    seen = 0
    while hasattr(store, "inner") and seen < 8:
        store, seen = store.inner, seen + 1
    return store


def stored_degrees_command(
    stack: _RequiredStackOption,
    remove: Annotated[bool, typer.Option(
        "--remove", help="Drop the degrees table and its triggers instead.")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Only say whether they are installed.")] = False,
    workspace: _WorkspaceOption = None,
) -> None:
    """Keep node degrees in the database of STACK's graph (LightRAG's PostgreSQL tables), so
    local, hybrid and mix queries read each edge end's degree instead of counting its edges.

    Creates hexrag_lightrag_graph_degrees and four triggers on lightrag_graph_edges that keep
    it in step with every write, LightRAG's own included (each edge write also updates the
    degrees of its two ends). LightRAG's rows are not changed; results are the same. Needs
    the right to create tables and triggers; --remove takes everything away again."""

    async def go() -> tuple[bool, bool]:
        from hexrag.bootstrap import open_stack
        from hexrag.ports.graph_store import StoredDegrees

        opened = await open_stack(stack, workspace=workspace)
        try:
            graph = _unwrapped(opened.graph)
            if not isinstance(graph, StoredDegrees):
                _fail(f"{stack}: its graph store ({type(graph).__name__}) keeps no stored "
                      "degrees (only LightRAG's PostgreSQL graph needs them)")
            before = await graph.stored_degrees()
            if not check:
                if remove:
                    await graph.remove_stored_degrees()
                else:
                    await graph.install_stored_degrees()
            return before, await graph.stored_degrees()
        finally:
            await opened.aclose()

    before, after = _guarded(lambda: asyncio.run(go()))
    state = "installed" if after else "not installed"
    if check or before == after:
        typer.echo(f"stored degrees: {state}")
    else:
        typer.echo(f"stored degrees: {'installed' if after else 'removed'}")
