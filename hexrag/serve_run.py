"""Running ``hexrag serve``: bind the socket, build the stack or the workspace router, run
uvicorn on it (used by :mod:`hexrag.cli` for one process and by :mod:`hexrag.serve_workers`
for each worker process)."""

from __future__ import annotations

from typing import Any

from hexrag.core.errors import ConfigurationError

__all__ = ["LOG_LEVELS", "bind", "serve", "server_class"]


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def bind(host: str, port: int) -> Any:
    """A listening socket on ``host:port``, bound before anything is loaded."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = "the port is in use" if exc.errno == 98 else exc.strerror or str(exc)
        raise ConfigurationError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.set_inheritable(True)
    return sock


def server_class() -> Any:
    """uvicorn's ``Server``, except that Ctrl-C / SIGTERM end :meth:`serve` normally.

    uvicorn re-raises a captured signal once it has shut down, which would interrupt the
    closing of the stack's connections that follows; here the graceful shutdown is the end.
    """
    import contextlib
    import signal
    import threading
    from collections.abc import Iterator

    import uvicorn
    from uvicorn.server import HANDLED_SIGNALS

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            original = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return _Server


async def serve(
    config: Any,
    *,
    sock: Any,
    host: str,
    port: int,
    log_level: str,
    api: Any,
    allow_empty: bool,
    server_headers: list[tuple[str, str]] | None = None,
) -> None:
    """Build the stack (showing progress), then run uvicorn on this event loop and ``sock``
    (``server_headers``: added to every response, e.g. the worker's number)."""
    import uvicorn
    from rich.console import Console

    from hexrag.bootstrap import build_stack

    console = Console(stderr=True)
    from hexrag.serving import stack_app, workspace_catalog, workspace_router

    secured = " (API key required)" if api.api_key else ""
    if workspace_catalog(config) is not None:

        async def check_default(name: str, stack: Any) -> None:
            for role, what in stack.describe().items():
                console.print(f"  [bold]{name or 'default'} {role}[/bold]: {what}")
            if name == (config.default_workspace or "") and not allow_empty:
                empty = await stack.empty_stores()
                if empty:
                    raise ConfigurationError(
                        f"the default workspace holds no data ({', '.join(empty)} empty); "
                        "load data first, or pass --allow-empty"
                    )

        router = workspace_router(config, api, progress=console.log, on_build=check_default)
        with console.status("building the workspaces..."):
            await router.start()
        server = server_class()(
            uvicorn.Config(router, host=host, port=port, log_level=log_level, lifespan="on",
                           headers=server_headers)
        )
        console.print(
            f"hexrag serving workspaces {router.workspaces} on http://{host}:{port}{secured} "
            "(header LIGHTRAG-WORKSPACE picks one)"
        )
        try:
            await server.serve(sockets=[sock])
        finally:
            await router.aclose()
        return
    with console.status("building the stack...") as status:

        def progress(message: str) -> None:
            console.log(message)
            status.update(message)

        stack = await build_stack(config, progress=progress)
    try:
        for role, what in stack.describe().items():
            console.print(f"  [bold]{role}[/bold]: {what}")
        if not allow_empty:
            empty = await stack.empty_stores()
            if empty:
                raise ConfigurationError(
                    f"the stack holds no data ({', '.join(empty)} empty); load data first, or "
                    "pass --allow-empty"
                )
        app_ = stack_app(stack, api)
        server = server_class()(
            uvicorn.Config(app_, host=host, port=port, log_level=log_level, lifespan="on",
                           headers=server_headers)
        )
        console.print(
            f"hexrag serving on http://{host}:{port}{secured} "
            f"(API docs: http://{host}:{port}/docs)"
        )
        await server.serve(sockets=[sock])
    finally:
        await stack.aclose()
