"""What ``hexrag serve`` serves: a stack's app, or a router over its workspaces.

:func:`stack_app` turns an opened :class:`~hexrag.config.Stack` into the HTTP app (engine,
health probes, consistency check, document ingestion when the stack has an LLM).
:func:`workspace_router` builds a :class:`~hexrag.api.workspaces.WorkspaceRouter` when the
stack declares workspaces (``workspaces``, ``workspace_pattern``, ``default_workspace``):
each workspace's stack comes from the one namespace resolver
(:func:`hexrag.config.workspace_config`) and gets its own app.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["stack_app", "workspace_catalog", "workspace_router"]


def stack_app(stack: Any, api: Any, *, workspace: str = "") -> Any:
    """The FastAPI app serving ``stack`` with the API settings ``api``."""
    from hexrag.api import create_app

    async def consistency() -> dict[str, Any]:
        from hexrag.transfer import StackStores, check_stack

        s = stack.engine.stores
        stores = StackStores(
            entities=s.entities, relationships=s.relationships, chunks=s.chunks,
            graph=s.graph, chunk_store=s.chunk_store,
        )
        return (await check_stack(stores)).to_json()

    ingestor = None
    unavailable = None
    if stack.plan.workdir is not None:
        unavailable = ("document ingestion over HTTP needs a server-backed stack; a LightRAG "
                       "working directory takes documents through `hexrag ingest`")
    elif stack.engine.llm is not None:
        from hexrag.bootstrap import compose_ingestor
        from hexrag.env import ingest_settings

        ingestor = compose_ingestor(
            stack.engine.stores, llm=stack.engine.llm, embedder=stack.engine.embedder,
            tokenizer=stack.engine.tokenizer, documents=stack.documents,
            cache=stack.engine.cache, settings=ingest_settings(),
        )
    app = create_app(
        stack.engine, probes=stack.probes(), settings=api, consistency=consistency,
        ingestor=ingestor, ingest_unavailable=unavailable,
    )
    app.state.workspace = workspace
    return app


def workspace_catalog(config: Any) -> Any:
    """The stack's :class:`~hexrag.api.workspaces.WorkspaceCatalog`, or ``None`` when it
    declares no workspaces (then one stack is served as is)."""
    from hexrag.api.workspaces import WorkspaceCatalog

    if not (config.workspaces or config.workspace_pattern or config.default_workspace):
        return None
    return WorkspaceCatalog(tuple(config.workspaces), config.workspace_pattern,
                            config.default_workspace or "")


def workspace_router(
    config: Any,
    api: Any,
    *,
    progress: Callable[[str], None] | None = None,
    embedder: Any = None,
    llm: Any = None,
    on_build: Callable[[str, Any], Awaitable[None]] | None = None,
) -> Any:
    """A :class:`~hexrag.api.workspaces.WorkspaceRouter` over ``config``'s workspaces.

    ``embedder`` / ``llm``: models shared by every workspace (default: built per workspace
    from the config). ``on_build(name, stack)`` runs after a workspace's stack is built (the
    CLI uses it to refuse an empty default workspace). The router checks ``api``'s key itself
    before opening anything, and keeps at most ``MAX_WORKSPACES`` open.
    """
    from hexrag.api.webui import WEBUI_PATHS
    from hexrag.api.workspaces import WorkspaceRouter
    from hexrag.bootstrap import build_stack
    from hexrag.config import workspace_config

    catalog = workspace_catalog(config)
    if catalog is None:
        raise ValueError("the stack declares no workspaces")

    async def build(name: str) -> tuple[Any, Callable[[], Awaitable[None]]]:
        cfg = workspace_config(config, name)  # a missing workdir sub-folder: NotFound, 404
        say = (lambda m: progress(f"[{name or 'default'}] {m}")) if progress else None
        stack = await build_stack(cfg, progress=say, embedder=embedder, llm=llm)
        try:
            if on_build is not None:
                await on_build(name, stack)
            return stack_app(stack, api, workspace=name), stack.aclose
        except BaseException:
            await stack.aclose()
            raise

    return WorkspaceRouter(
        catalog, build, max_body_bytes=api.limits.max_request_body_bytes,
        api_key=api.api_key, open_paths=api.open_paths(*WEBUI_PATHS),
        cors=api.cors_options() if api.cors_origins else None,
        max_workspaces=api.limits.max_workspaces,
    )
