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

Access is checked by the router before anything else (the key before the body is read or a
workspace opened; no request without the key ever opens one), and at most ``MAX_WORKSPACES``
stay open, least recently used closed first: see :class:`WorkspaceRouter`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from starlette.middleware.cors import CORSMiddleware

from hexrag.api.middleware import (
    ApiKeyCheck,
    ClientGone,
    Receive,
    Scope,
    Send,
    body_workspace,
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
    "body_named_workspace",
    "validate_workspace",
]

log = logging.getLogger("hexrag.api")

#: LightRAG's request header naming the workspace.
WORKSPACE_HEADER = "lightrag-workspace"
#: How often a retired workspace checks whether its last requests are answered.
CLOSE_POLL_SECONDS = 0.05

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
    name: str
    app: Any
    close: Callable[[], Awaitable[None]]
    pinned: bool  # the default or a declared workspace: never closed before shutdown
    inflight: int = 0  # requests being answered


def _pipeline_idle(app: Any) -> bool:
    """Whether the workspace's document pipeline has nothing queued or running."""
    documents = getattr(app.state, "documents", None)
    if documents is None:
        return True
    status = documents.pipeline()
    return not status.get("busy") and not status.get("docs")


class _Full(Exception):
    """``MAX_WORKSPACES`` workspaces are open and none can be closed now."""


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

    Access comes first. With an ``api_key``, every request but a CORS preflight and the
    ``open_paths`` (:class:`~hexrag.api.middleware.ApiKeyCheck`) is refused with 403 before
    its body is read or a workspace is opened; ``/metrics`` and ``/workspaces`` included.
    ``OPTIONS`` is answered here, never by a workspace (Starlette's ``CORSMiddleware`` with
    ``cors`` options answers a preflight; anything else is 405). A request that does not carry
    the key (when one is set) never opens a workspace: on an open path it is served by an open
    workspace only, else 404 ``workspace ... is not open``.

    At most ``max_workspaces`` are open (``MAX_WORKSPACES``, the default and declared ones
    included): opening another closes the least recently used pattern-admitted workspace
    whose document pipeline is idle. It is taken out of the routing at once; it closes once
    its requests in flight are answered (and any documents they queued are processed), and a
    new request for it waits for that before reopening it. When none can be closed: 503.
    """

    catalog: WorkspaceCatalog
    build: Callable[[str], Awaitable[tuple[Any, Callable[[], Awaitable[None]]]]]
    max_body_bytes: int = 1024 * 1024
    api_key: str | None = None
    open_paths: tuple[str, ...] = ("/health",)
    cors: Mapping[str, Any] | None = None
    max_workspaces: int = 64
    #: LightRAG's bearer tokens (:class:`~hexrag.api.auth_tokens.Tokens`), checked with the key.
    tokens: Any = None
    _spaces: OrderedDict[str, _Workspace] = field(default_factory=OrderedDict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _building: set[str] = field(default_factory=set)
    _closing: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    _stopping: bool = False

    def __post_init__(self) -> None:
        pinned = {self.catalog.default, *self.catalog.names}
        room = len(pinned) + (1 if self.catalog.pattern is not None else 0)
        if self.max_workspaces < room:
            raise ConfigurationError(
                f"MAX_WORKSPACES={self.max_workspaces} is below the {len(pinned)} default and "
                "declared workspaces" + (" plus one for workspace_pattern"
                                          if self.catalog.pattern is not None else ""))
        guarded = self.api_key or (self.tokens is not None and self.tokens.settings.configured)
        self._key = ApiKeyCheck(self.api_key, self.open_paths, self.tokens) if guarded else None
        self._local: Any = self._answer
        if self.cors is not None:
            self._local = CORSMiddleware(self._answer, **self.cors)

    async def start(self) -> None:
        """Build the default and every declared workspace."""
        for name in dict.fromkeys([self.catalog.default, *self.catalog.names]):
            await self._open(name)

    async def aclose(self) -> None:
        """Close every workspace's stack (waiting for those being closed already)."""
        self._stopping = True
        spaces, self._spaces = list(self._spaces.values()), OrderedDict()
        for space in spaces:
            await space.close()
        if self._closing:
            await asyncio.gather(*list(self._closing.values()), return_exceptions=True)

    @property
    def workspaces(self) -> list[str]:
        """The workspaces open now, least recently used first."""
        return list(self._spaces)

    async def _open(self, name: str) -> _Workspace:
        """The open workspace ``name``, built (making room for it) if it is not open."""
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            space = self._spaces.get(name)
            if space is not None:
                return space
            closing = self._closing.get(name)
            if closing is not None:  # its previous instance must be closed first
                await asyncio.shield(closing)
            self._make_room()
            self._building.add(name)
            try:
                app, close = await self.build(name)
                try:
                    for hook in list(getattr(app.state, "startup_hooks", [])):
                        await hook()
                except BaseException:
                    await close()
                    raise
            finally:
                self._building.discard(name)
            pinned = name == self.catalog.default or name in self.catalog.names
            space = _Workspace(name, app, close, pinned)
            self._spaces[name] = space
            return space

    def _make_room(self) -> None:
        """Retire least recently used workspaces until one more fits (raises :class:`_Full`)."""
        while len(self._spaces) + len(self._building) >= self.max_workspaces:
            victim = next((s for s in self._spaces.values()
                           if not s.pinned and _pipeline_idle(s.app)), None)
            if victim is None:
                raise _Full
            del self._spaces[victim.name]
            self._closing[victim.name] = asyncio.create_task(self._close_when_idle(victim))

    async def _close_when_idle(self, space: _Workspace) -> None:
        """Close a retired workspace once its requests are answered and its pipeline idle."""
        try:
            while not self._stopping and (space.inflight or not _pipeline_idle(space.app)):
                await asyncio.sleep(CLOSE_POLL_SECONDS)
            await space.close()
        except Exception:
            log.exception("closing workspace %r failed", space.name)
        finally:
            self._closing.pop(space.name, None)
            lock = self._locks.get(space.name)
            if lock is not None and not lock.locked() and space.name not in self._spaces:
                del self._locks[space.name]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope.get("method") == "OPTIONS":  # CORS preflight: never a workspace's business
            await self._reply(scope, receive, send, _json(405, "Method Not Allowed"))
            return
        status, refusal, _ = self._key.denial(scope) if self._key is not None else (0, "", None)
        if status and not (self._key is not None and self._key.is_open(scope)):
            await self._reply(scope, receive, send, _json(status, refusal))
            return
        trusted = not status  # it carries the key, or none is needed
        path = scope.get("path", "")
        if path == "/metrics":
            await self._reply(scope, receive, send, self._metrics)
            return
        if path == "/workspaces":
            await self._reply(scope, receive, send, self._listing)
            return
        await self._route(scope, receive, send, trusted=trusted)

    async def _route(self, scope: Scope, receive: Receive, send: Send, *, trusted: bool
                     ) -> None:
        named = self._named_by_header(scope)
        if named is not None and not self.catalog.admits(named):
            await self._reply(scope, receive, send, _unknown(named))
            return
        if named is None:
            try:
                named, receive = await self._named_by_body(scope, receive)
            except ClientGone:
                return
            if named is None:
                await self._reply(scope, receive, send, _json(
                    413, f"request body too large (limit {self.max_body_bytes} bytes)"))
                return
            if not self.catalog.admits(named):
                await self._reply(scope, receive, send, _unknown(named))
                return
        space = self._spaces.get(named)
        if space is None:
            if not trusted:
                await self._reply(scope, receive, send, _json(
                    404, f"workspace {named[:40]!r} is not open (a request with the API key "
                         "opens it)"))
                return
            try:
                space = await self._open(named)
            except NotFound:
                await self._reply(scope, receive, send, _unknown(named))
                return
            except _Full:
                await self._reply(scope, receive, send, _json(
                    503, f"MAX_WORKSPACES={self.max_workspaces} workspaces are open and none "
                         "can be closed now; retry later", retry_after="1"))
                return
        if self._spaces.get(named) is space:
            self._spaces.move_to_end(named)
        space.inflight += 1
        try:
            await space.app(scope, receive, send)
        finally:
            space.inflight -= 1

    def _named_by_header(self, scope: Scope) -> str | None:
        for key, value in scope.get("headers", []):
            if key == WORKSPACE_HEADER.encode():
                named: str = value.decode("latin-1").strip()
                return named or self.catalog.default
        return None

    async def _named_by_body(self, scope: Scope, receive: Receive
                             ) -> tuple[str | None, Receive]:
        named, receive = await body_named_workspace(scope, receive, self.max_body_bytes)
        return (self.catalog.default if named == "" else named), receive

    async def _reply(self, scope: Scope, receive: Receive, send: Send, answer: _Answer) -> None:
        """Send the router's own ``answer`` (through CORS when configured)."""
        await self._local({**scope, _ANSWER: answer}, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        await scope[_ANSWER](send)

    async def _listing(self, send: Send) -> None:
        await send_json(send, 200, {
            "default": self.catalog.default, "declared": list(self.catalog.names),
            "pattern": self.catalog.pattern, "open": self.workspaces,
            "max_open": self.max_workspaces,
        })

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


_Answer = Callable[[Send], Awaitable[None]]
#: The scope key carrying the router's own answer to its (CORS-wrapped) answering app.
_ANSWER = "hexrag.router_answer"


async def body_named_workspace(scope: Scope, receive: Receive, limit: int
                               ) -> tuple[str | None, Receive]:
    """The workspace a request's JSON body names (its top-level ``"workspace"``; ``""``:
    none), for a request that names none by header: a ``POST`` with a JSON content type has
    its body read (at most ``limit`` bytes; ``limit <= 0``: no limit) and gets a ``receive``
    that hands the app that body unchanged; ``(None, receive)`` when the body is over
    ``limit``; any other request ``("", receive)``, nothing read. Raises :class:`ClientGone`
    if the client leaves first."""
    headers = dict(scope.get("headers", []))
    if scope.get("method") != "POST" or b"json" not in headers.get(b"content-type", b""):
        return "", receive
    body = await read_body(receive, limit)
    if body is None:
        return None, receive
    return body_workspace(body), replaying(body, receive)


def _json(status: int, detail: str, **headers: str) -> _Answer:
    async def answer(send: Send) -> None:
        await send_json(send, status, {"detail": detail}, **headers)

    return answer


def _unknown(name: str) -> _Answer:
    return _json(404, f"unknown workspace {name[:40]!r}")
