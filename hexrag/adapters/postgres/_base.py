"""What every PostgreSQL adapter shares: the pool, table names, lazy DDL, error translation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypedDict

from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres._sql import TableNames
from hexrag.domain.errors import ConfigurationError, NotFound
from hexrag.ports.scan import check_scan_limit

if TYPE_CHECKING:
    import asyncpg

__all__ = ["DDL_LOCK_KEY", "PgAdapter", "PgOptions", "PgTableAdapter", "create_pool"]

#: ``pg_advisory_xact_lock`` key serialising hexrag's DDL (``CREATE EXTENSION``/``TABLE``
#: ``IF NOT EXISTS`` race with each other when several sessions create at once).
DDL_LOCK_KEY = 0x6865787261670001


async def create_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    connect_timeout: float = 10.0,
    **kwargs: Any,
) -> asyncpg.Pool:
    """An ``asyncpg`` pool for ``dsn``, with connection failures translated to hexrag errors.

    ``kwargs`` go to :func:`asyncpg.create_pool` (e.g. ``server_settings``). Unless ``reset``
    is given, a connection goes back to the pool without asyncpg's session reset query
    (``RESET ALL; UNLISTEN *; ...``, a second round trip after every statement): hexrag's
    adapters leave no session state (settings are ``set_config(..., is_local => true)``, locks
    transaction-scoped); an open transaction is still rolled back by asyncpg.
    """
    import asyncpg

    kwargs.setdefault("reset", _keep_session)
    with translate_errors(f"connecting to {_redact(dsn)}"):
        pool: asyncpg.Pool = await asyncpg.create_pool(
            dsn, min_size=min_size, max_size=max_size, timeout=connect_timeout, **kwargs
        )
        return pool


async def _keep_session(conn: asyncpg.Connection) -> None:
    """The pool's ``reset`` hook: nothing beyond asyncpg's own rollback of a transaction."""


def _redact(dsn: str) -> str:
    """``dsn`` without its password (it ends up in error messages)."""
    head, sep, tail = dsn.partition("://")
    if not sep or "@" not in tail:
        return dsn
    creds, _, rest = tail.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{head}://{user}@{rest}" if user else f"{head}://{rest}"


class PgOptions(TypedDict, total=False):
    """The keyword options every PostgreSQL adapter takes (:class:`PgAdapter`'s).

    An adapter with options of its own takes these as ``**options: Unpack[PgOptions]``.
    """

    schema: str | None
    table_prefix: str
    timeout: float | None
    create_tables: bool


class PgAdapter:
    """Base of the PostgreSQL adapters.

    Takes a ready ``asyncpg`` pool; constructing opens no connection. Tables are created on
    first use with idempotent ``CREATE ... IF NOT EXISTS`` statements (one round trip, under
    an advisory lock). Every later method is one statement. A subclass names its tables in
    :meth:`_name_tables` (the constructor calls it last) and needs no constructor of its
    own unless it takes options beyond :class:`PgOptions`.

    Args:
        pool: a ready ``asyncpg`` pool.
        schema: schema of the tables (created if missing); ``None`` uses the search path.
        table_prefix: prefix of the table names.
        timeout: per-statement client timeout in seconds (``BackendTimeout`` when exceeded).
        create_tables: create missing tables on first use (off: they must exist, e.g.
            for a role without DDL rights).
    """

    _kind: ClassVar[str] = "adapter"

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        schema: str | None = None,
        table_prefix: str = "hexrag",
        timeout: float | None = None,
        create_tables: bool = True,
    ) -> None:
        if pool is None:
            raise ConfigurationError("postgres: a ready asyncpg.Pool is required (or use from_url)")
        if timeout is not None and not timeout > 0:
            raise ConfigurationError(f"postgres: timeout must be positive, got {timeout!r}")
        self._pool = pool
        self._tables = TableNames(schema=schema, table_prefix=table_prefix)
        self._timeout = timeout
        self._create_tables = bool(create_tables)
        self._ready = False
        self._ready_lock: asyncio.Lock | None = None
        self._owns_pool = False
        self._name_tables()

    def _name_tables(self) -> None:
        """Set this adapter's qualified table names from ``self._tables``; default none."""

    # -- construction helpers ------------------------------------------------------------

    @classmethod
    async def from_url(
        cls,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        pool_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> Self:
        """Create a pool for ``dsn`` and an adapter that owns it (closed by :meth:`aclose`).

        ``options`` are the constructor's keyword options.
        """
        pool = await create_pool(dsn, min_size=min_size, max_size=max_size, **(pool_options or {}))
        try:
            adapter = cls(pool, **options)
        except BaseException:
            await pool.close()
            raise
        adapter._owns_pool = True
        return adapter

    async def aclose(self) -> None:
        """Close the pool if this adapter created it (``from_url``); otherwise do nothing."""
        if self._owns_pool:
            with translate_errors(f"closing the {self._kind} pool"):
                await self._pool.close()

    # -- properties ------------------------------------------------------------------------

    @property
    def pool(self) -> asyncpg.Pool:
        """The asyncpg pool."""
        return self._pool

    @property
    def schema(self) -> str | None:
        """The schema holding the tables (``None``: the connection's default)."""
        return self._tables.schema

    @property
    def table_prefix(self) -> str:
        """The prefix of every table name."""
        return self._tables.prefix

    # -- DDL -------------------------------------------------------------------------------

    def _ddl(self) -> str:
        """``CREATE ... IF NOT EXISTS`` statements for this adapter's tables."""
        raise NotImplementedError

    async def _after_ddl(self, conn: asyncpg.Connection) -> None:
        """Checks on the existing tables (e.g. the vector dimension); default none."""

    async def ensure_tables(self) -> None:
        """Create the tables, indexes and extension if missing (idempotent; once per adapter).

        With ``create_tables=False`` only the checks on existing tables run.
        """
        if self._ready:
            return
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if self._ready:
                return
            script = (
                f"SELECT pg_advisory_xact_lock({DDL_LOCK_KEY});\n"
                + self._tables.create_schema()
                + self._ddl()
                if self._create_tables
                else ""
            )
            where = f"{self.schema}." if self.schema else ""
            action = f"creating the {self._kind} tables {where}{self.table_prefix}_*"
            with translate_errors(action):
                async with self._pool.acquire(timeout=self._timeout) as conn:
                    # Without parameters this is one simple-protocol message: the statements
                    # run as one implicit transaction, so the advisory lock covers them all.
                    if script:
                        await conn.execute(script, timeout=self._timeout)
                    await self._after_ddl(conn)
            self._ready = True

    # -- statements --------------------------------------------------------------------------

    async def _fetch(self, action: str, sql: str, *args: Any) -> list[Any]:
        await self.ensure_tables()
        try:
            with translate_errors(action):
                return list(await self._pool.fetch(sql, *args, timeout=self._timeout))
        except NotFound:
            self._ready = False
            raise

    async def _fetchval(self, action: str, sql: str, *args: Any) -> Any:
        await self.ensure_tables()
        try:
            with translate_errors(action):
                return await self._pool.fetchval(sql, *args, timeout=self._timeout)
        except NotFound:
            self._ready = False
            raise

    async def _fetch_ids(self, action: str, sql: str, ids: Sequence[str], *args: Any) -> list[Any]:
        """:meth:`_fetch` of ``sql`` with ``ids`` (each once) as ``$1::text[]`` and ``args``
        from ``$2``; no statement (no rows) for no ids. ``{n}`` in ``action`` is their number."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        return await self._fetch(action.replace("{n}", str(len(wanted))), sql, wanted, *args)

    async def _execute_ids(self, action: str, sql: str, ids: Sequence[str], *args: Any) -> None:
        """:meth:`_execute` of ``sql`` with ``ids`` (each once) as ``$1::text[]`` and ``args``
        from ``$2``; no statement for no ids. ``{n}`` in ``action`` is their number."""
        wanted = list(dict.fromkeys(ids))
        if wanted:
            await self._execute(action.replace("{n}", str(len(wanted))), sql, wanted, *args)

    async def _keyset_page(
        self,
        what: str,
        table: str,
        columns: str,
        cursor: str | None,
        limit: int,
        where: tuple[str, list[Any]] = ("TRUE", []),
        key: str = "id",
    ) -> list[Any]:
        """One scan page (one statement): ``columns`` of at most ``limit`` rows of ``table``
        meeting ``where`` (a condition with its parameters, numbered from ``$3``) by ``key``,
        after the key ``cursor`` (``None``: from the start)."""
        check_scan_limit(limit)
        cond, args = where
        return await self._fetch(
            f"scanning {what}",
            f"""SELECT {columns} FROM {table}
                WHERE ($1::text IS NULL OR {key} > $1::text) AND {cond}
                ORDER BY {key} LIMIT $2""",
            cursor, limit, *args,
        )

    async def _rows_by_id(
        self, table: str, columns: str, ids: Sequence[str], what: str
    ) -> dict[str, Any]:
        """Rows of ``table`` whose ``id`` is in ``ids`` (one statement), keyed by id."""
        rows = await self._fetch_ids(
            f"reading {{n}} {what} from {table}",
            f"SELECT {columns} FROM {table} WHERE id = ANY($1::text[])",
            ids,
        )
        return {row["id"]: row for row in rows}

    async def _delete_ids(
        self,
        table: str,
        ids: Sequence[str],
        what: str,
        *,
        key: str = "id",
        where: tuple[str, list[Any]] = ("TRUE", []),
        name: str | None = None,
    ) -> None:
        """Delete the rows of ``table`` whose ``key`` is in ``ids`` and that meet ``where``
        (a condition with its parameters, numbered from ``$2``), one statement (none for no
        ids); ``name`` is the table in messages (default ``table``)."""
        cond, args = where
        await self._execute_ids(
            f"deleting {{n}} {what} from {name or table}",
            f"DELETE FROM {table} WHERE {key} = ANY($1::text[]) AND {cond}",
            ids, *args,
        )

    async def _execute(self, action: str, sql: str, *args: Any) -> None:
        await self.ensure_tables()
        try:
            with translate_errors(action):
                await self._pool.execute(sql, *args, timeout=self._timeout)
        except NotFound:
            self._ready = False
            raise

    async def _execute_many(self, action: str, sql: str, rows: list[Any]) -> None:
        """``sql`` once per parameter tuple of ``rows`` (``executemany``), in one transaction."""
        await self.ensure_tables()
        try:
            with translate_errors(action):
                async with self._pool.acquire(timeout=self._timeout) as conn, conn.transaction():
                    await conn.executemany(sql, rows, timeout=self._timeout)
        except NotFound:
            self._ready = False
            raise


class PgTableAdapter(PgAdapter):
    """A PostgreSQL adapter on one table, ``<prefix>_<_table_stem>``."""

    _table_stem: ClassVar[str]

    def _name_tables(self) -> None:
        self._table = self._tables.qualified(self._table_stem)

    @property
    def table(self) -> str:
        """The quoted, qualified table name."""
        return self._table
