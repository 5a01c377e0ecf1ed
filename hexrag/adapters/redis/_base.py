"""What both Redis adapters share: key layout, client ownership, error translation."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Self

from hexrag.adapters._error_map import ErrorMap, Rule, from_module, matches
from hexrag.adapters._names import checked_name
from hexrag.domain.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigurationError,
    HexragError,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisNamespace", "RedisStore", "translate_errors", "validate_name"]

BACKEND = "redis"

# Workspace and namespace end up in a SCAN MATCH glob, so glob metacharacters
# (``*?[]\``) and the ``:`` separator are refused rather than escaped.
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")

#: SCAN batch size hint (keys per SCAN call; a server may return more or fewer).
SCAN_COUNT = 1000


def validate_name(value: str, *, what: str) -> str:
    """Return ``value`` if it is a safe key component, else raise ConfigurationError."""
    return checked_name(
        value, _NAME,
        f"redis {what} {value!r} is invalid: use 1-128 characters from "
        "[A-Za-z0-9_.-], not starting with '.' or '-' (no ':' or glob characters)",
    )


#: The mapping table for redis-py's exceptions, first match wins; any other exception of
#: redis-py (cluster, pipeline, ...) is a plain backend error.
ERRORS = ErrorMap(BACKEND, [
    Rule(("redis.AuthenticationError", "redis.AuthorizationError"), ConfigurationError,
         "redis: {action} failed: authentication refused ({exc}); check the password/ACL "
         "user in the Redis URL"),
    Rule(("redis.TimeoutError", TimeoutError), BackendTimeout,
         "redis: {action} timed out ({exc}); check the server load and socket_timeout"),
    Rule(("redis.ConnectionError", ConnectionError, OSError), BackendUnavailable,
         "redis: {action} failed: cannot reach the server ({exc}); check that Redis is "
         "running and the URL (host, port, TLS) is right"),
    Rule("redis.RedisError", BackendError, "redis: {action} failed: {exc}"),
], otherwise="redis: {action} failed: {exc!r}")


def _caught(exc: BaseException) -> bool:
    return not isinstance(exc, HexragError) and (
        from_module(exc, "redis") or any(matches(exc, rule.when) for rule in ERRORS.rules)
    )


def translate_errors(action: str) -> AbstractContextManager[None]:
    """Re-raise redis-py exceptions as hexrag errors naming the backend and what to check."""
    return ERRORS.translating(catch=_caught, action=action)


class RedisNamespace:
    """One key namespace ``f"{workspace}:{namespace}:"`` on a ``redis.asyncio`` client.

    The client is used as given (``decode_responses`` on or off); it is closed by
    :meth:`aclose` only when this object created it (``from_url``).
    """

    def __init__(
        self, client: Redis, *, workspace: str, namespace: str, owns_client: bool = False
    ) -> None:
        self._client = client
        self._workspace = validate_name(workspace, what="workspace")
        self._namespace = validate_name(namespace, what="namespace")
        self._prefix = f"{self._workspace}:{self._namespace}:"
        self._owns_client = owns_client

    @classmethod
    def _with_new_client(
        cls, url: str, client_options: dict[str, Any], **options: Any
    ) -> Self:
        """An instance (constructor keywords ``options``) on a new ``redis.asyncio`` client for
        ``url`` (``client_options`` go to ``Redis.from_url``) that it owns and closes in
        :meth:`aclose`; no connection is opened until the first call. Every ``from_url``."""
        from redis.asyncio import Redis

        return cls(Redis.from_url(url, **client_options), owns_client=True, **options)

    @property
    def workspace(self) -> str:
        """The workspace part of every key."""
        return self._workspace

    @property
    def namespace(self) -> str:
        """The namespace part of every key."""
        return self._namespace

    @property
    def client(self) -> Redis:
        """The ``redis.asyncio`` client."""
        return self._client

    def key(self, item_id: str) -> str:
        """The Redis key of ``item_id``."""
        return self._prefix + item_id

    def keys(self, ids: Sequence[str]) -> list[str]:
        """The Redis keys of ``ids``, in order."""
        return [self._prefix + i for i in ids]

    async def _mget(self, ids: Sequence[str], action: str) -> list[Any]:
        if not ids:
            return []
        with translate_errors(action):
            return list(await self._client.mget(self.keys(ids)))

    async def _mset(self, mapping: dict[str, str], action: str) -> None:
        if not mapping:
            return
        with translate_errors(action):
            await self._client.mset(mapping)

    async def _delete(self, ids: Sequence[str], action: str) -> None:
        if not ids:
            return
        with translate_errors(action):
            await self._client.delete(*self.keys(list(dict.fromkeys(ids))))

    async def _scan_batches(self, pattern: str | None = None) -> AsyncIterator[list[Any]]:
        """Every key matching ``pattern`` (default: every key of this namespace), in SCAN
        batches (one SCAN call per batch)."""
        if pattern is None:
            pattern = self._prefix + "*"
        cursor: Any = 0
        while True:
            cursor, batch = await self._client.scan(cursor=cursor, match=pattern, count=SCAN_COUNT)
            if batch:
                yield list(batch)
            if int(cursor) == 0:
                return

    async def _count(self, action: str) -> int:
        # SCAN may return a key twice while the keyspace is rehashing; count distinct keys.
        seen: set[Any] = set()
        with translate_errors(action):
            async for batch in self._scan_batches():
                seen.update(batch)
        return len(seen)

    async def _clear(self, action: str, *patterns: str) -> None:
        """``UNLINK`` every key of this namespace, or every key matching ``patterns``."""
        with translate_errors(action):
            for pattern in patterns or (None,):
                async for batch in self._scan_batches(pattern):
                    await self._client.unlink(*batch)

    async def aclose(self) -> None:
        """Close the client if this adapter created it (``from_url``); otherwise do nothing."""
        if self._owns_client:
            with translate_errors("close"):
                await self._client.aclose()


class RedisStore(RedisNamespace):
    """A :class:`RedisNamespace` with hexrag's defaults: workspace ``"hexrag"``, the class's
    ``_default_namespace``, and :meth:`from_url` building (and owning) its client.

    ``namespace=None`` means the default.
    """

    _default_namespace: ClassVar[str]

    def __init__(
        self,
        client: Redis,
        *,
        workspace: str = "hexrag",
        namespace: str | None = None,
        owns_client: bool = False,
    ) -> None:
        super().__init__(
            client,
            workspace=workspace,
            namespace=self._default_namespace if namespace is None else namespace,
            owns_client=owns_client,
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        workspace: str = "hexrag",
        namespace: str | None = None,
        **client_options: Any,
    ) -> Self:
        """A store on a new client for ``url`` (``redis://[:password@]host:port/db``;
        ``client_options`` go to ``Redis.from_url``). No connection is opened until the first
        call; :meth:`aclose` closes the client."""
        return cls._with_new_client(url, client_options, workspace=workspace, namespace=namespace)
