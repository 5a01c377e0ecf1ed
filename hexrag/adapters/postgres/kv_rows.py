"""Which rows a PostgreSQL cache (key -> record) holds and how a row becomes a record: hexrag's
layout and LightRAG 1.5.7's, as strategies, with the one implementation of the
:class:`~hexrag.ports.Cache` port on top of them.

A layout (:class:`KVRows`) names the table, its key column, the columns of a record (the key
read as ``id``), the condition selecting the cache's own rows (one ``namespace`` of hexrag's
table; one ``workspace`` of LightRAG's), the row -> record conversion and the upsert statement
with its parameters. :class:`PgKV` is the port on top of it - each key once, no statement for
nothing to do, records decoded per request position (duplicate keys never share one dict),
keyset scans - for :class:`~hexrag.adapters.postgres.cache.PgCache`,
:class:`~hexrag.adapters.postgres.lightrag_cache.LightRAGPgCache` and
:class:`~hexrag.adapters.postgres.lightrag_kv.LightRAGPgKV` alike; those only construct and
pick their layout (:class:`HexragKVRows`, :class:`LightRAGCacheRows`,
:class:`~hexrag.adapters.postgres.lightrag_kv.LightRAGKVRows`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hexrag.adapters.postgres._base import PgAdapter
from hexrag.adapters.postgres._rows import decode_json, encode_json
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

__all__ = ["HexragKVRows", "KVRows", "LightRAGCacheRows", "LightRAGRows", "PgKV"]


class KVRows:
    """The layout strategy interface (see the module docstring)."""

    #: the quoted table name used in SQL, and what messages call the cache's rows
    table: str
    name: str
    #: the key column, and the columns of a record (the key read as ``id``)
    key: str = "id"
    columns: str
    #: the upsert runs once per row (``executemany`` in one transaction), not as one statement
    per_row: bool = True

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """The condition selecting this cache's rows, its parameters numbered from
        ``first_param``."""
        raise NotImplementedError

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The record of a row of :attr:`columns` (a new dict each call)."""
        raise NotImplementedError

    def upsert(self, entries: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[Any]]:
        """The statement writing ``entries`` (not empty) and its parameters (with
        :attr:`per_row`: one parameter tuple per row)."""
        raise NotImplementedError


class HexragKVRows(KVRows):
    """One ``namespace`` of hexrag's ``<prefix>_cache``: ``(namespace, key)`` -> a JSON
    object, written in one statement (a JSON document of the entries)."""

    key = "key"
    columns = "key AS id, value::text AS value"
    per_row = False

    def __init__(self, table: str, namespace: str) -> None:
        self.table = table
        self.namespace = namespace
        self.name = f"namespace {namespace!r} of {table}"

    def ddl(self) -> str:
        """``CREATE TABLE IF NOT EXISTS`` of the table (shared by every namespace)."""
        return f"""
            CREATE TABLE IF NOT EXISTS {self.table} (
                namespace text COLLATE "C" NOT NULL,
                key text COLLATE "C" NOT NULL,
                value jsonb NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (namespace, key)
            );
        """

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """``namespace = $n``."""
        return f"namespace = ${first_param}", [self.namespace]

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The stored JSON object."""
        value: dict[str, Any] = decode_json(row["value"])
        return value

    def upsert(self, entries: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[Any]]:
        """One ``INSERT ... SELECT FROM jsonb_each`` of every entry."""
        document = {
            str(key): encode_json(dict(value), what=f"cache entry {key!r}")
            for key, value in entries.items()
        }
        return (
            f"""INSERT INTO {self.table} AS c (namespace, key, value)
                SELECT $1, j.key, j.value FROM jsonb_each($2::text::jsonb) AS j
                ON CONFLICT (namespace, key) DO UPDATE
                SET value = EXCLUDED.value, updated_at = now()""",
            [self.namespace, json.dumps(document, ensure_ascii=False, allow_nan=False)],
        )


class LightRAGRows(KVRows):
    """One ``workspace`` of one of LightRAG's tables (``PGKVStorage``), keyed by ``id``."""

    def __init__(self, table: str, workspace: str) -> None:
        self.table = self.name = table
        self.workspace = workspace

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """``workspace = $n``."""
        return f"workspace = ${first_param}", [self.workspace]


_CACHE_COLUMNS = """id, original_prompt, return_value, chunk_id, cache_type,
    queryparam::text AS queryparam, EXTRACT(EPOCH FROM create_time)::BIGINT AS create_time,
    EXTRACT(EPOCH FROM update_time)::BIGINT AS update_time"""


class LightRAGCacheRows(LightRAGRows):
    """``lightrag_llm_cache``: an entry is the dict ``PGKVStorage.get_by_ids`` returns for the
    LLM cache (``return``, ``cache_type``, ``original_prompt``, ``chunk_id``, ``queryparam``,
    times), written with LightRAG's upsert (``return`` -> ``return_value``)."""

    columns = _CACHE_COLUMNS

    def __init__(self, workspace: str) -> None:
        super().__init__("lightrag_llm_cache", workspace)

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The record ``PGKVStorage.get_by_ids`` gives (``update_time`` falls back to
        ``create_time``; an unreadable ``queryparam`` is ``None``)."""
        query = row.get("queryparam")
        if isinstance(query, str):
            try:
                query = json.loads(query)
            except ValueError:
                query = None
        created = row.get("create_time") or 0
        return {
            "return": row.get("return_value") or "",
            "cache_type": row.get("cache_type"),
            "original_prompt": row.get("original_prompt") or "",
            "chunk_id": row.get("chunk_id"),
            "queryparam": query,
            "create_time": created,
            "update_time": row.get("update_time") or created,
        }

    def upsert(self, entries: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[Any]]:
        """LightRAG's statement, once per entry."""
        rows = []
        for key, value in entries.items():
            query = value.get("queryparam")
            rows.append((
                self.workspace, str(key), value.get("original_prompt"),
                value.get("return"), value.get("chunk_id"), value.get("cache_type"),
                None if query is None else json.dumps(query, ensure_ascii=False),
            ))
        return (
            """INSERT INTO lightrag_llm_cache (workspace, id, original_prompt,
                   return_value, chunk_id, cache_type, queryparam)
               VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)
               ON CONFLICT (workspace, id) DO UPDATE
               SET original_prompt = EXCLUDED.original_prompt,
                   return_value = EXCLUDED.return_value, chunk_id = EXCLUDED.chunk_id,
                   cache_type = EXCLUDED.cache_type, queryparam = EXCLUDED.queryparam,
                   update_time = CURRENT_TIMESTAMP""",
            rows,
        )


class PgKV(PgAdapter):
    """The :class:`~hexrag.ports.Cache` port on a :class:`KVRows` layout (one statement per
    call, none when there is nothing to do); a cache class derives from it and its
    construction base and sets ``_layout``."""

    _layout: KVRows

    async def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Entries in request order, ``None`` for a missing key (one statement)."""
        layout, (cond, args) = self._layout, self._layout.where(2)
        rows = await self._fetch_ids(
            f"reading {{n}} entries from {layout.name}",
            f"""SELECT {layout.columns} FROM {layout.table}
                WHERE {layout.key} = ANY($1::text[]) AND {cond}""",
            keys, *args,
        )
        found = {row["id"]: row for row in rows}
        # Decoded per request position, so duplicate keys never share one mutable dict.
        return [layout.entry(found[k]) if k in found else None for k in keys]

    async def set_many(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """Store entries, replacing existing keys (one statement or one transaction)."""
        if not entries:
            return
        layout = self._layout
        sql, args = layout.upsert(entries)
        action = f"writing {len(entries)} entries into {layout.name}"
        if layout.per_row:
            await self._execute_many(action, sql, args)
        else:
            await self._execute(action, sql, *args)

    async def delete_many(self, keys: Sequence[str]) -> None:
        """Remove keys; unknown keys are ignored."""
        layout = self._layout
        await self._delete_ids(layout.table, keys, "entries", key=layout.key,
                               where=layout.where(2), name=layout.name)

    async def clear(self) -> None:
        """Remove every entry of this cache (and nothing else)."""
        layout, (cond, args) = self._layout, self._layout.where(1)
        await self._execute(
            f"clearing {layout.name}", f"DELETE FROM {layout.table} WHERE {cond}", *args
        )

    async def scan_entries(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[tuple[str, dict[str, Any]]]:
        """A page of ``(key, entry)`` by key (keyset on the primary key, one statement;
        :class:`~hexrag.ports.scan.ScansCache`)."""
        layout = self._layout
        rows = await self._keyset_page(
            layout.name, layout.table, layout.columns, cursor, limit, layout.where(3), layout.key
        )
        items = [(row["id"], layout.entry(row)) for row in rows]
        return Page(items, items[-1][0] if len(items) == limit else None)
