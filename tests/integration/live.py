"""A live uvicorn server on a free loopback port, for tests over real HTTP."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import httpx


class LiveServer:
    """uvicorn serving ``app`` on 127.0.0.1 (free port) in a daemon thread."""

    def __init__(self, app: Any, *, lifespan: str = "off") -> None:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False,
                                lifespan=lifespan, timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.005)
        self.client = httpx.Client(base_url=self.url, timeout=20)

    def stop(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)


class StackInServerLoop:
    """ASGI app opening ``config``'s stack at start-up, in the server's own event loop, and
    serving it with ``settings`` (a hashing embedder of ``dim``); closed at shut-down."""

    def __init__(self, config: Any, settings: Any, dim: int) -> None:
        self.config, self.settings, self.dim = config, settings, dim
        self.stack: Any = None
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        from hexrag.adapters.memory import HashingEmbedder
        from hexrag.bootstrap import build_stack
        from hexrag.serving import stack_app

        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.stack = await build_stack(self.config, embedder=HashingEmbedder(self.dim))
                self.app = stack_app(self.stack, self.settings)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stack.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
