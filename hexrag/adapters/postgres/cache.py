"""``PgCache``: the Cache port on one PostgreSQL table shared by namespaces."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from hexrag.adapters.postgres._base import PgOptions, PgTableAdapter
from hexrag.adapters.postgres._rows import decode_json, encode_json
from hexrag.domain.errors import ConfigurationError
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

if TYPE_CHECKING:
    import asyncpg

__all__ = ["PgCache"]


class PgCache(PgTableAdapter):
    """Key -> JSON object entries in ``<prefix>_cache``, keyed by ``(namespace, key)``.

    Several caches (namespaces) share the table; :meth:`clear` removes only this one's rows.

    Args:
        pool: a ready ``asyncpg`` pool.
        namespace: this cache's namespace (any non-empty string; stored as a value).
        options: :class:`~hexrag.adapters.postgres._base.PgAdapter`'s (``schema``,
            ``table_prefix``, ``timeout``, ``create_tables``).
    """

    _kind = "cache"
    _table_stem = "cache"

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        namespace: str = "llm_response_cache",
        **options: Unpack[PgOptions],
    ) -> None:
        super().__init__(pool, **options)
        if not isinstance(namespace, str) or not namespace:
            raise ConfigurationError(
                f"postgres: cache namespace must be a non-empty string, got {namespace!r}"
            )
        self._namespace = namespace

    @property
    def namespace(self) -> str:
        """This cache's namespace."""
        return self._namespace

    def _ddl(self) -> str:
        return f"""
            CREATE TABLE IF NOT EXISTS {self._table} (
                namespace text COLLATE "C" NOT NULL,
                key text COLLATE "C" NOT NULL,
                value jsonb NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (namespace, key)
            );
        """

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Entries in request order, ``None`` for a missing key."""
        rows = await self._fetch_ids(
            f"reading {{n}} cache entries from {self._table}",
            f"""SELECT key, value::text AS value FROM {self._table}
                WHERE key = ANY($1::text[]) AND namespace = $2""",
            keys,
            self._namespace,
        )
        found = {row["key"]: row["value"] for row in rows}
        # Decoded per request position, so duplicate keys never share one mutable dict.
        return [decode_json(found[k]) if k in found else None for k in keys]

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries, replacing existing keys."""
        if not entries:
            return
        document = {
            str(key): encode_json(dict(value), what=f"cache entry {key!r}")
            for key, value in entries.items()
        }
        await self._execute(
            f"writing {len(document)} cache entries to {self._table}",
            f"""INSERT INTO {self._table} AS c (namespace, key, value)
                SELECT $1, j.key, j.value FROM jsonb_each($2::text::jsonb) AS j
                ON CONFLICT (namespace, key) DO UPDATE
                SET value = EXCLUDED.value, updated_at = now()""",
            self._namespace,
            json.dumps(document, ensure_ascii=False, allow_nan=False),
        )

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys; unknown keys are ignored."""
        await self._execute_ids(
            f"deleting {{n}} cache entries from {self._table}",
            f"DELETE FROM {self._table} WHERE key = ANY($1::text[]) AND namespace = $2",
            keys,
            self._namespace,
        )

    async def clear(self) -> None:
        """Remove every entry of this namespace (and nothing else)."""
        await self._execute(
            f"clearing namespace {self._namespace!r} of {self._table}",
            f"DELETE FROM {self._table} WHERE namespace = $1",
            self._namespace,
        )

    async def scan_entries(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[tuple[str, dict[str, Any]]]:
        """A page of this namespace's entries by key (keyset on the primary key, one
        statement; :class:`~hexrag.ports.scan.ScansCache`)."""
        check_scan_limit(limit)
        rows = await self._fetch(
            f"scanning namespace {self._namespace!r} of {self._table}",
            f"""SELECT key, value::text AS value FROM {self._table}
                WHERE namespace = $1 AND ($2::text IS NULL OR key > $2::text)
                ORDER BY key LIMIT $3""",
            self._namespace,
            cursor,
            limit,
        )
        items = [(row["key"], decode_json(row["value"])) for row in rows]
        return Page(items, items[-1][0] if len(items) == limit else None)
