"""``PgCache``: the Cache port on one PostgreSQL table shared by namespaces."""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

from hexrag.adapters.postgres._base import PgOptions, PgTableAdapter
from hexrag.adapters.postgres.kv_rows import HexragKVRows, PgKV
from hexrag.domain.errors import ConfigurationError

if TYPE_CHECKING:
    import asyncpg

__all__ = ["PgCache"]


class PgCache(PgKV, PgTableAdapter):
    """Key -> JSON object entries in ``<prefix>_cache``, keyed by ``(namespace, key)``.

    Several caches (namespaces) share the table; :meth:`clear` removes only this one's rows.
    The port's methods are :class:`~hexrag.adapters.postgres.kv_rows.PgKV` on the
    :class:`~hexrag.adapters.postgres.kv_rows.HexragKVRows` layout.

    Args:
        pool: a ready ``asyncpg`` pool.
        namespace: this cache's namespace (any non-empty string; stored as a value).
        options: :class:`~hexrag.adapters.postgres._base.PgAdapter`'s (``schema``,
            ``table_prefix``, ``timeout``, ``create_tables``).
    """

    _kind = "cache"
    _table_stem = "cache"
    _layout: HexragKVRows

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
        self._layout = HexragKVRows(self._table, namespace)

    @property
    def namespace(self) -> str:
        """This cache's namespace."""
        return self._namespace

    def _ddl(self) -> str:
        return self._layout.ddl()
