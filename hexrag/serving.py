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
    """The FastAPI app serving ``stack`` (a :class:`hexrag.bootstrap.App`) with the API
    settings ``api``.

    Documents: with an LLM, ingestion and deletion over HTTP; the stack records its model
    before its first write. A LightRAG working directory (held in memory) lists and deletes
    documents (each deletion written back at once, atomically); it takes new ones over HTTP
    when the stack has an LLM (each written back once ingested), else through
    ``hexrag ingest``.

    ``workspace`` (else the stack's own LightRAG ``workspace``, else ``""``) is the only name
    a ``LIGHTRAG-WORKSPACE`` header may give: any other is 404, after the API key check."""
    from hexrag.api import create_app

    # the one workspace served: the router's name, else the stack's own LightRAG workspace
    own = getattr(stack.plan, "workspace", None) or ""

    async def consistency() -> dict[str, Any]:
        from hexrag.transfer import check_stack

        return (await check_stack(stack.stores)).to_json()

    ingestor = None
    unavailable = None
    in_files = stack.plan is not None and stack.plan.workdir is not None
    if in_files and stack.engine.llm is None:
        unavailable = ("document ingestion over HTTP on a LightRAG working directory needs an "
                       "LLM (llm = \"openai:MODEL\" in the stack TOML, or HEXRAG_LLM); "
                       "without one it takes documents through `hexrag ingest`")
    if in_files or stack.engine.llm is not None:
        from hexrag.bootstrap import RefusingLLM
        from hexrag.env import ingest_settings

        inner = stack.ingestor(stack.engine.llm or RefusingLLM(), settings=ingest_settings())
        ingestor = _StackWrites(inner, stack, accepts_documents=stack.engine.llm is not None,
                                why_not=unavailable or "", in_files=in_files)
    app = create_app(
        stack.engine, probes=stack.probes(), settings=api, consistency=consistency,
        ingestor=ingestor,  # type: ignore[arg-type]  # the Ingestor, wrapped
        ingest_unavailable=unavailable,
        workspace=workspace or own,
    )
    app.state.workspace = workspace
    app.state.plan, app.state.describe = stack.plan, stack.describe  # /health's configuration
    app.state.sections = stack.stores  # graph edits: every section (hexrag.api.lr_graph_routes)
    app.state.commit = stack.commit  # written back after each graph edit (a working directory)
    return app


class _StackWrites:
    """The ingestor the document routes use: the stack records its model before its first
    write, and what lives in files is written back after each deletion (and each ingestion);
    a stack that does not ``accepts_documents`` (no LLM) refuses ingestion and resumes
    nothing. Everything else is the wrapped :class:`~hexrag.core.ingest.ingestion.Ingestor`'s."""

    def __init__(self, inner: Any, stack: Any, *, accepts_documents: bool, why_not: str,
                 in_files: bool = False) -> None:
        self._inner = inner
        self._in_files = in_files  # a working directory: written back after each document
        self._stack = stack
        self.accepts_documents = accepts_documents
        self._why_not = why_not
        self._recorded = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _record(self) -> None:
        if not self._recorded:
            await self._stack.record_model()
            self._recorded = True

    async def ingest_text(self, *args: Any, **kwargs: Any) -> Any:
        """Ingest one document (:meth:`Ingestor.ingest_text`)."""
        if not self.accepts_documents:
            from hexrag.core.errors import ConfigurationError

            raise ConfigurationError(self._why_not)
        await self._record()
        try:
            return await self._inner.ingest_text(*args, **kwargs)
        finally:
            if self._in_files:
                await self._stack.commit()

    async def unfinished(self) -> list[Any]:
        """The documents to resume (none where ingestion is refused)."""
        return list(await self._inner.unfinished()) if self.accepts_documents else []

    async def delete_documents(self, *args: Any, **kwargs: Any) -> Any:
        """Delete documents (:meth:`Ingestor.delete_documents`), then write back what lives
        in files (a working directory, LightRAG's NetworkX graph)."""
        await self._record()
        report = await self._inner.delete_documents(*args, **kwargs)
        await self._stack.commit()
        return report


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
    from hexrag.api.auth_tokens import Tokens
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
        tokens=Tokens(api.auth),
    )
