"""Workspaces: one server, several isolated knowledge bases, chosen per request.

A request names its workspace with LightRAG's header ``LIGHTRAG-WORKSPACE`` (or a top-level
``"workspace"`` field of a JSON body); without one it goes to the default workspace. A
:class:`WorkspaceCatalog` admits the workspaces a stack declares (``workspaces = [...]``) and,
when a ``workspace_pattern`` is set, any name matching it (created on first use). Any other
name is refused with 404 - there is no fallback to another workspace.

Isolation is by construction: :class:`WorkspaceRouter` builds each workspace its own stack
through the one namespace resolver (:func:`hexrag.config.workspace_config`: PostgreSQL table
prefix or LightRAG's ``workspace`` column, Milvus collection prefix, Redis key prefix, Neo4j
label, working-directory sub-folder, fresh memory stores) and its own app (engine, answer
cache, document queue, health, metrics); nothing is shared but the process. ``/metrics`` of
the router merges every workspace's metrics with a ``workspace`` label.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from hexrag.api.middleware import (
    ClientGone,
    Receive,
    Scope,
    Send,
    read_body,
    replaying,
    send_json,
)
from hexrag.config import WORKSPACE_NAME, validate_workspace
from hexrag.core.errors import ConfigurationError, NotFound

__all__ = [
    "WORKSPACE_HEADER",
    "WORKSPACE_NAME",
    "WorkspaceCatalog",
    "WorkspaceRouter",
    "validate_workspace",
]

#: LightRAG's request header naming the workspace.
WORKSPACE_HEADER = "lightrag-workspace"



@dataclass(frozen=True)
class WorkspaceCatalog:
    """Which workspaces exist: declared ``names``, plus any name matching ``pattern`` when
    set; ``default`` serves requests that name none ("" = the stack as configured)."""

    names: tuple[str, ...] = ()
    pattern: str | None = None
    default: str = ""

    def __post_init__(self) -> None:
        for name in self.names:
            validate_workspace(name)
        if self.default:
            validate_workspace(self.default)
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ConfigurationError(f"workspace_pattern is not a regex: {exc}") from None

    def admits(self, name: str) -> bool:
        """Whether ``name`` is a workspace of this server."""
        if name == self.default or name in self.names:
            return True
        if self.pattern is None or not WORKSPACE_NAME.match(name):
            return False
        return re.fullmatch(self.pattern, name) is not None


@dataclass
class _Workspace:
    app: Any
    close: Callable[[], Awaitable[None]]


class _Labelled:
    """The metrics of several registries as one exposition, each sample labelled with
    its workspace (families of the same name merged)."""

    def __init__(self, registries: Mapping[str, CollectorRegistry]) -> None:
        self.registries = registries

    def collect(self) -> Iterable[Metric]:
        families: dict[str, Metric] = {}
        for workspace, registry in self.registries.items():
            for family in registry.collect():
                merged = families.get(family.name)
                if merged is None:
                    merged = Metric(family.name, family.documentation, family.type,
                                    family.unit)
                    families[family.name] = merged
                for s in family.samples:
                    merged.add_sample(s.name, {**s.labels, "workspace": workspace or "default"},
                                      s.value, s.timestamp, s.exemplar)
        return list(families.values())


@dataclass
class WorkspaceRouter:
    """An ASGI app sending each request to its workspace's app (see the module docstring).

    ``build(workspace)`` makes a workspace's app and its closer (``""``: the default stack);
    it raises :class:`~hexrag.core.errors.NotFound` for a workspace whose data cannot exist
    (e.g. a missing working-directory sub-folder). Declared workspaces are built at start-up
    (so a broken one fails the start), pattern-admitted ones on first use.
    """

    catalog: WorkspaceCatalog
    build: Callable[[str], Awaitable[tuple[Any, Callable[[], Awaitable[None]]]]]
    max_body_bytes: int = 1024 * 1024
    _spaces: dict[str, _Workspace] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def start(self) -> None:
        """Build the default and every declared workspace."""
        for name in dict.fromkeys([self.catalog.default, *self.catalog.names]):
            await self._get(name)

    async def aclose(self) -> None:
        """Close every workspace's stack."""
        spaces, self._spaces = self._spaces, {}
        for space in spaces.values():
            await space.close()

    @property
    def workspaces(self) -> list[str]:
        """The workspaces built so far."""
        return list(self._spaces)

    async def _get(self, name: str) -> Any:
        space = self._spaces.get(name)
        if space is not None:
            return space.app
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            space = self._spaces.get(name)
            if space is None:
                app, close = await self.build(name)
                for hook in list(getattr(app.state, "startup_hooks", [])):
                    await hook()
                space = _Workspace(app, close)
                self._spaces[name] = space
        return space.app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        if path == "/metrics":
            await self._metrics(send)
            return
        if path == "/workspaces":
            await send_json(send, 200, {
                "default": self.catalog.default, "declared": list(self.catalog.names),
                "pattern": self.catalog.pattern, "open": self.workspaces,
            })
            return
        try:
            name, receive = await self._workspace_of(scope, receive)
        except ClientGone:
            return
        if name is None:
            await send_json(send, 413, {"detail": "request body too large "
                                                  f"(limit {self.max_body_bytes} bytes)"})
            return
        if not self.catalog.admits(name):
            await send_json(send, 404, {"detail": f"unknown workspace {name[:40]!r}"})
            return
        try:
            app = await self._get(name)
        except NotFound:
            await send_json(send, 404, {"detail": f"unknown workspace {name[:40]!r}"})
            return
        await app(scope, receive, send)

    async def _workspace_of(self, scope: Scope, receive: Receive
                            ) -> tuple[str | None, Receive]:
        for key, value in scope.get("headers", []):
            if key == WORKSPACE_HEADER.encode():
                named = value.decode("latin-1").strip()
                return named or self.catalog.default, receive
        headers = dict(scope.get("headers", []))
        if scope.get("method") != "POST" or b"json" not in headers.get(b"content-type", b""):
            return self.catalog.default, receive
        # a JSON body may name it: read it (bounded) and hand it on unchanged
        body = await read_body(receive, self.max_body_bytes)
        if body is None:
            return None, receive
        name = self.catalog.default
        if b'"workspace"' in body:
            try:
                value = json.loads(body).get("workspace")
            except (ValueError, AttributeError, RecursionError):
                value = None
            if isinstance(value, str) and value:
                name = value
        return name, replaying(body, receive)

    async def _metrics(self, send: Send) -> None:
        registries = {
            name: space.app.state.metrics.registry for name, space in self._spaces.items()
            if getattr(space.app.state, "metrics", None) is not None
        }
        data = generate_latest(_Labelled(registries))  # type: ignore[arg-type]
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", CONTENT_TYPE_LATEST.encode()),
            (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.start()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)[:500]})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
