"""LightRAG 1.5.7's document-side key-value tables on PostgreSQL (``PGKVStorage``), in place.

One :class:`LightRAGPgKV` per namespace of :data:`hexrag.ports.cache.KV_NAMESPACES`, a
:class:`~hexrag.ports.Cache` over LightRAG's table, rows keyed by ``(workspace, id)``:

=====================  ============================  ==========================================
namespace              table                         record (as ``PGKVStorage.get_by_ids``)
=====================  ============================  ==========================================
``full_docs``          ``LIGHTRAG_DOC_FULL``         ``id``, ``content``, ``file_path``
                                                     (``doc_name``), ``sidecar_location``,
                                                     ``parse_format``, ``content_hash``,
                                                     ``process_options``, ``chunk_options``,
                                                     ``parse_engine``
``full_entities``      ``LIGHTRAG_FULL_ENTITIES``    ``id``, ``entity_names``, ``count``,
                                                     ``create_time``, ``update_time``
``full_relations``     ``LIGHTRAG_FULL_RELATIONS``   ``id``, ``relation_pairs``, ``count``, times
``entity_chunks``      ``LIGHTRAG_ENTITY_CHUNKS``    ``id``, ``chunk_ids``, ``count``, times
``relation_chunks``    ``LIGHTRAG_RELATION_CHUNKS``  ``id``, ``chunk_ids``, ``count``, times
=====================  ============================  ==========================================

Times are naive UTC timestamps as LightRAG writes them, read as epoch seconds
(``update_time`` falls back to ``create_time`` when 0, as LightRAG reads them). Writes run
LightRAG's own upsert statements (a row's ``create_time`` is kept, ``update_time`` replaced;
the ``full_docs`` pipeline columns keep their value when the new record leaves them empty); a
record's ``create_time`` / ``update_time`` (epoch seconds, as hexrag's ingestion stamps them)
are written, else the statement time. Other fields of a record (``_id``, ``updated_at``...)
have no column and are not kept: this layout is LightRAG's. The tables are LightRAG's;
:func:`create_lightrag_kv_tables` creates missing ones with
LightRAG's DDL (what LightRAG does when it initialises its storages).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hexrag.adapters._fastjson import loads
from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres.kv_rows import LightRAGRows, PgKV
from hexrag.adapters.postgres.lightrag_base import _LightRAGPg
from hexrag.domain.errors import ConfigurationError
from hexrag.ports.cache import KV_NAMESPACES

if TYPE_CHECKING:
    import asyncpg

__all__ = ["LIGHTRAG_KV_TABLES", "LightRAGPgKV", "create_lightrag_kv_tables"]

#: namespace -> LightRAG's table
LIGHTRAG_KV_TABLES = {
    "full_docs": "LIGHTRAG_DOC_FULL",
    "full_entities": "LIGHTRAG_FULL_ENTITIES",
    "full_relations": "LIGHTRAG_FULL_RELATIONS",
    "entity_chunks": "LIGHTRAG_ENTITY_CHUNKS",
    "relation_chunks": "LIGHTRAG_RELATION_CHUNKS",
}
#: the JSONB list column of the anchor / tracking tables
_LIST_COLUMN = {
    "full_entities": "entity_names",
    "full_relations": "relation_pairs",
    "entity_chunks": "chunk_ids",
    "relation_chunks": "chunk_ids",
}
_DOC_COLUMNS = """id, COALESCE(content, '') AS content, COALESCE(doc_name, '') AS file_path,
    sidecar_location, parse_format, content_hash, process_options,
    COALESCE(chunk_options, '{}'::jsonb)::text AS chunk_options, parse_engine"""
_TIMES = """EXTRACT(EPOCH FROM create_time)::BIGINT AS create_time,
    EXTRACT(EPOCH FROM update_time)::BIGINT AS update_time"""

_DDL = {
    "LIGHTRAG_DOC_FULL": """CREATE TABLE IF NOT EXISTS LIGHTRAG_DOC_FULL (
        id VARCHAR(255), workspace VARCHAR(255), doc_name VARCHAR(1024), content TEXT,
        meta JSONB, sidecar_location TEXT NULL, parse_format VARCHAR(32) NULL DEFAULT 'raw',
        content_hash TEXT NULL, process_options TEXT NULL,
        chunk_options JSONB NULL DEFAULT '{}'::jsonb, parse_engine TEXT NULL,
        create_time TIMESTAMP(0) DEFAULT CURRENT_TIMESTAMP,
        update_time TIMESTAMP(0) DEFAULT CURRENT_TIMESTAMP,
        CONSTRAINT LIGHTRAG_DOC_FULL_PK PRIMARY KEY (workspace, id))""",
    **{
        table: f"""CREATE TABLE IF NOT EXISTS {table} (
        id VARCHAR({255 if ns.startswith("full_") else 512}), workspace VARCHAR(255),
        {_LIST_COLUMN[ns]} JSONB, count INTEGER,
        create_time TIMESTAMP(0) DEFAULT CURRENT_TIMESTAMP,
        update_time TIMESTAMP(0) DEFAULT CURRENT_TIMESTAMP,
        CONSTRAINT {table}_PK PRIMARY KEY (workspace, id))"""
        for ns, table in LIGHTRAG_KV_TABLES.items() if ns != "full_docs"
    },
}


async def create_lightrag_kv_tables(pool: asyncpg.Pool, *, timeout: float | None = None) -> None:
    """Create LightRAG's five document-side tables where missing (LightRAG's DDL)."""
    with translate_errors("creating LightRAG's key-value tables"):
        async with pool.acquire(timeout=timeout) as conn:
            for ddl in _DDL.values():
                await conn.execute(ddl, timeout=timeout)


def _json(text: Any, default: Any) -> Any:
    if isinstance(text, str):
        try:
            return loads(text)
        except ValueError:
            return default
    return default if text is None else text


def _epoch(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


_DOC_UPSERT = """INSERT INTO LIGHTRAG_DOC_FULL (id, content, doc_name, workspace,
                     sidecar_location, parse_format, content_hash, process_options,
                     chunk_options, parse_engine)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10)
                 ON CONFLICT (workspace, id) DO UPDATE
                 SET content = EXCLUDED.content, doc_name = EXCLUDED.doc_name,
                     sidecar_location = COALESCE(NULLIF(EXCLUDED.sidecar_location, ''),
                                                 LIGHTRAG_DOC_FULL.sidecar_location),
                     parse_format = COALESCE(NULLIF(EXCLUDED.parse_format, ''),
                                             LIGHTRAG_DOC_FULL.parse_format),
                     content_hash = COALESCE(NULLIF(EXCLUDED.content_hash, ''),
                                             LIGHTRAG_DOC_FULL.content_hash),
                     process_options = COALESCE(NULLIF(EXCLUDED.process_options, ''),
                                                LIGHTRAG_DOC_FULL.process_options),
                     chunk_options = CASE WHEN EXCLUDED.chunk_options IS NULL
                                            OR EXCLUDED.chunk_options = '{}'::jsonb
                                          THEN LIGHTRAG_DOC_FULL.chunk_options
                                          ELSE EXCLUDED.chunk_options END,
                     parse_engine = COALESCE(NULLIF(EXCLUDED.parse_engine, ''),
                                             LIGHTRAG_DOC_FULL.parse_engine),
                     update_time = CURRENT_TIMESTAMP"""


class LightRAGKVRows(LightRAGRows):
    """One workspace of the LightRAG table of a document-side ``namespace`` (module
    docstring), read as ``PGKVStorage.get_by_ids`` reads it, written with its upserts."""

    def __init__(self, namespace: str, workspace: str) -> None:
        if namespace not in KV_NAMESPACES:
            raise ConfigurationError(
                f"unknown key-value namespace {namespace!r}; expected one of "
                f"{list(KV_NAMESPACES)}"
            )
        super().__init__(LIGHTRAG_KV_TABLES[namespace], workspace)
        self.namespace = namespace
        if namespace == "full_docs":
            self.columns = _DOC_COLUMNS
        else:
            column = _LIST_COLUMN[namespace]
            self.columns = f"id, {column}::text AS {column}, count, {_TIMES}"

    def entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The row's record: ``chunk_options`` / the list column parsed (the empty value when
        unreadable), ``update_time`` falling back to ``create_time``."""
        out = dict(row)
        if self.namespace == "full_docs":
            options = _json(out.get("chunk_options"), {})
            out["chunk_options"] = options if isinstance(options, dict) else {}
            return out
        column = _LIST_COLUMN[self.namespace]
        values = _json(out.get(column), [])
        out[column] = values if isinstance(values, list) else []
        created = out.get("create_time") or 0
        out["create_time"] = created
        out["update_time"] = out.get("update_time") or created
        return out

    def upsert(self, entries: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[Any]]:
        """LightRAG's statement of the table, once per record; a record without its content
        (``full_docs``) or its list is a :class:`ConfigurationError`."""
        if self.namespace == "full_docs":
            return _DOC_UPSERT, [self._doc_row(key, v) for key, v in entries.items()]
        column = _LIST_COLUMN[self.namespace]
        rows = []
        for key, value in entries.items():
            values = value.get(column)
            if not isinstance(values, list):
                raise ConfigurationError(
                    f"a {self.namespace} record needs a {column!r} list (key {key!r})")
            count = value.get("count")
            rows.append((self.workspace, str(key), json.dumps(values, ensure_ascii=False),
                         int(count) if isinstance(count, int) else len(values),
                         _epoch(value.get("create_time")), _epoch(value.get("update_time"))))
        sql = f"""INSERT INTO {self.table} (workspace, id, {column}, count, create_time,
                      update_time)
                  VALUES ($1, $2, $3::jsonb, $4,
                          COALESCE(to_timestamp($5::bigint), CURRENT_TIMESTAMP)
                              AT TIME ZONE 'UTC',
                          COALESCE(to_timestamp($6::bigint), CURRENT_TIMESTAMP)
                              AT TIME ZONE 'UTC')
                  ON CONFLICT (workspace, id) DO UPDATE
                  SET {column} = EXCLUDED.{column}, count = EXCLUDED.count,
                      update_time = EXCLUDED.update_time"""
        return sql, rows

    def _doc_row(self, key: str, v: Mapping[str, Any]) -> tuple[Any, ...]:
        if not isinstance(v.get("content"), str):
            raise ConfigurationError(f"a full_docs record needs its content (key {key!r})")
        return (
            str(key), v["content"], v.get("file_path", ""), self.workspace,
            v.get("sidecar_location"), v.get("parse_format"), v.get("content_hash"),
            v.get("process_options"),
            json.dumps(v.get("chunk_options") or {}, ensure_ascii=False),
            v.get("parse_engine"),
        )


class LightRAGPgKV(PgKV, _LightRAGPg):
    """One LightRAG document-side table as a :class:`~hexrag.ports.Cache` (module
    docstring); ``namespace`` names it. :class:`~hexrag.adapters.postgres.kv_rows.PgKV` on
    the :class:`LightRAGKVRows` layout."""

    _kind = "LightRAG key-value table"
    _layout: LightRAGKVRows

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        namespace: str,
        workspace: str,
        timeout: float | None = None,
    ) -> None:
        super().__init__(pool, workspace=workspace, timeout=timeout)
        self._layout = LightRAGKVRows(namespace, workspace)
        self.namespace = namespace
