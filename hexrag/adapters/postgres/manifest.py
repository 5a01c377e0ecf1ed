"""``PgManifestStore``: a stack's manifest as one row of a hexrag table.

The table is ``<prefix>_manifest`` (``hexrag_manifest`` beside a LightRAG deployment, whose
tables are never touched), one row per stack keyed by ``key`` (hexrag's layout: ``stack``;
LightRAG's: the LightRAG workspace). Reading never creates the table.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Unpack

from hexrag.adapters.postgres._base import PgOptions, PgTableAdapter
from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres._rows import decode_json
from hexrag.ports.stack import StackManifest

if TYPE_CHECKING:
    import asyncpg

__all__ = ["PgManifestStore"]


class PgManifestStore(PgTableAdapter):
    """The :class:`~hexrag.ports.stack.ManifestStore` of a PostgreSQL stack."""

    _kind = "manifest"
    _table_stem = "manifest"

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        key: str = "stack",
        **options: Unpack[PgOptions],
    ) -> None:
        super().__init__(pool, **options)
        self._key = key

    def _ddl(self) -> str:
        return f"""
            CREATE TABLE IF NOT EXISTS {self._table} (
                key text COLLATE "C" PRIMARY KEY,
                value jsonb NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now()
            );
        """

    async def read(self) -> StackManifest | None:
        """The stored manifest (``None``: no row, or no table: nothing is created)."""
        with translate_errors(f"reading the manifest from {self._table}"):
            async with self._pool.acquire(timeout=self._timeout) as conn:
                exists = await conn.fetchval(
                    "SELECT to_regclass($1) IS NOT NULL", self._tables.regclass_text("manifest"),
                    timeout=self._timeout,
                )
                if not exists:
                    return None
                raw = await conn.fetchval(
                    f"SELECT value::text FROM {self._table} WHERE key = $1", self._key,
                    timeout=self._timeout,
                )
        if raw is None:
            return None
        return StackManifest.from_json(decode_json(raw), where=f"{self._table} ({self._key})")

    async def write(self, manifest: StackManifest) -> None:
        """Store ``manifest`` (one upsert; the table is created on first write)."""
        await self._execute(
            f"writing the manifest to {self._table}",
            f"""INSERT INTO {self._table} (key, value) VALUES ($1, $2::text::jsonb)
                ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()""",
            self._key,
            json.dumps(manifest.to_json()),
        )
