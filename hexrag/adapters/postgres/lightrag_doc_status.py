"""Document status rows in LightRAG 1.5.7's ``LIGHTRAG_DOC_STATUS`` table, in place.

:class:`LightRAGPgDocumentStore` is the :class:`~hexrag.ports.DocumentStore` of a stack with
``layout = lightrag`` on PostgreSQL. A document's status row is LightRAG's own row (one per
``(workspace, id)``, written with ``PGDocStatusStorage.upsert``'s statement and values, read
as ``PGDocStatusStorage.get_by_ids`` reads it), so LightRAG and hexrag see the same
documents: ``hexrag documents`` lists what LightRAG ingested, ``hexrag delete`` deletes it,
and LightRAG sees what hexrag ingested or copied there.

LightRAG's table has fixed columns (``content_summary``, ``content_length``,
``chunks_count``, ``status``, ``file_path``, ``chunks_list``, ``track_id``, ``metadata``,
``error_msg``, ``content_hash``, ``created_at``, ``updated_at``). What it returns for a row
is therefore not always what was written:

* a missing ``chunks_count`` is stored as ``-1`` (LightRAG's own default), a missing
  ``chunks_list`` / ``metadata`` as ``[]`` / ``{}``, a missing ``track_id`` / ``error_msg`` /
  ``content_hash`` as null;
* the times are stored as UTC timestamps and read back as ``datetime.isoformat()`` with
  ``+00:00``;
* fields without a column (hexrag's ``seq``, the text a pending row keeps for resuming as
  ``content``, any other writer's field) are not kept.

So that a row hexrag writes reads back exactly as written, the difference is kept beside it,
in hexrag's own ``<prefix>_doc_status`` table (``id``, ``seq``, ``record``: the fields as
written where LightRAG's read differs, the fields LightRAG's read adds, and the
``updated_at`` LightRAG's read gives). It is applied only while LightRAG's row still has
that ``updated_at``: once LightRAG rewrites a row (every LightRAG write sets it), the row
reads exactly as LightRAG reads it. Rows LightRAG wrote have no such record and read as
LightRAG reads them (``chunks_count: -1`` included).

Fragments and the insertion sequence are hexrag's (:class:`PgDocumentStore`), in tables of
their own per LightRAG workspace: prefix ``hexrag`` for the ``default`` workspace,
``hexrag_<md5 of the workspace, 12 hex digits>`` for any other (LightRAG's workspaces share
its tables; hexrag's must not mix them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from hexrag.adapters.postgres._errors import translate_errors
from hexrag.adapters.postgres._rows import rows_document
from hexrag.adapters.postgres.document_store import PgDocumentStore
from hexrag.domain.documents import DocRecord, Fragment
from hexrag.domain.errors import ConfigurationError
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page

if TYPE_CHECKING:
    import asyncpg

__all__ = ["LightRAGPgDocumentStore", "lightrag_doc_status_view", "side_table_prefix"]

_TABLE = "LIGHTRAG_DOC_STATUS"
_COLUMNS = """s.id, s.content_summary, s.content_length, s.chunks_count, s.status,
    s.file_path, s.chunks_list::text AS chunks_list, s.track_id, s.metadata::text AS metadata,
    s.error_msg, s.content_hash, s.created_at, s.updated_at"""
#: ``PGDocStatusStorage.upsert``'s statement (LightRAG 1.5.7).
_UPSERT = """INSERT INTO LIGHTRAG_DOC_STATUS (workspace, id, content_summary, content_length,
        chunks_count, status, file_path, chunks_list, track_id, metadata, error_msg,
        content_hash, created_at, updated_at)
    SELECT $1, r.id, r.content_summary, r.content_length, r.chunks_count, r.status,
        r.file_path, r.chunks_list, r.track_id, r.metadata, r.error_msg, r.content_hash,
        r.created_at, r.updated_at
    FROM jsonb_to_recordset($2::text::jsonb) AS r(id text, content_summary text,
        content_length integer, chunks_count integer, status text, file_path text,
        chunks_list jsonb, track_id text, metadata jsonb, error_msg text, content_hash text,
        created_at timestamp, updated_at timestamp)
    ON CONFLICT (id, workspace) DO UPDATE SET
        content_summary = EXCLUDED.content_summary,
        content_length = EXCLUDED.content_length,
        chunks_count = EXCLUDED.chunks_count,
        status = EXCLUDED.status,
        file_path = EXCLUDED.file_path,
        chunks_list = EXCLUDED.chunks_list,
        track_id = EXCLUDED.track_id,
        metadata = EXCLUDED.metadata,
        error_msg = EXCLUDED.error_msg,
        content_hash = COALESCE(NULLIF(EXCLUDED.content_hash, ''),
                                LIGHTRAG_DOC_STATUS.content_hash),
        created_at = EXCLUDED.created_at,
        updated_at = EXCLUDED.updated_at"""
#: The fields ``PGDocStatusStorage.get_by_ids`` returns.
VIEW_FIELDS = ("content_length", "content_summary", "status", "chunks_count", "created_at",
               "updated_at", "file_path", "chunks_list", "metadata", "error_msg", "track_id",
               "content_hash")


def side_table_prefix(workspace: str) -> str:
    """The prefix of hexrag's tables beside LightRAG workspace ``workspace``."""
    if workspace == "default":
        return "hexrag"
    return "hexrag_" + hashlib.md5(workspace.encode("utf-8")).hexdigest()[:12]


def _utc(value: Any) -> datetime | None:
    """LightRAG's ``_parse_doc_status_datetime``: a naive UTC timestamp, or ``None``."""
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day, tzinfo=UTC)
    else:
        try:
            dt = datetime.fromisoformat(str(value))
        except (TypeError, ValueError):
            return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).replace(tzinfo=None)


def _iso(value: datetime | None) -> str | None:
    """LightRAG's ``_format_datetime_with_timezone``."""
    return None if value is None else value.replace(tzinfo=UTC).isoformat()


def _column_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """The column values ``PGDocStatusStorage.upsert`` writes for ``row``."""
    return {
        "content_summary": row.get("content_summary"),
        "content_length": row.get("content_length"),
        "chunks_count": row.get("chunks_count", -1),
        "status": row.get("status"),
        "file_path": row.get("file_path"),
        "chunks_list": list(row.get("chunks_list") or []),
        "track_id": row.get("track_id"),
        "metadata": row.get("metadata") if isinstance(row.get("metadata"), dict) else {},
        "error_msg": row.get("error_msg"),
        "content_hash": row.get("content_hash"),
        "created_at": _utc(row.get("created_at")),
        "updated_at": _utc(row.get("updated_at")),
    }


def lightrag_doc_status_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """What ``PGDocStatusStorage.get_by_ids`` returns for a row written from ``row``
    (assuming no earlier ``content_hash`` is kept by its ``COALESCE``)."""
    cols = _column_values(row)
    return {name: (_iso(cols[name]) if name in ("created_at", "updated_at") else cols[name])
            for name in VIEW_FIELDS}


def _view_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """LightRAG's read of one fetched table row."""
    def parsed(text: Any, default: Any) -> Any:
        try:
            return json.loads(text) if isinstance(text, str) else default
        except ValueError:
            return default

    return {
        "content_length": record["content_length"],
        "content_summary": record["content_summary"],
        "status": record["status"],
        "chunks_count": record["chunks_count"],
        "created_at": _iso(record["created_at"]),
        "updated_at": _iso(record["updated_at"]),
        "file_path": record["file_path"],
        "chunks_list": parsed(record["chunks_list"], []),
        "metadata": parsed(record["metadata"], {}),
        "error_msg": record["error_msg"],
        "track_id": record["track_id"],
        "content_hash": record["content_hash"],
    }


class LightRAGPgDocumentStore(PgDocumentStore):
    """Status rows in ``LIGHTRAG_DOC_STATUS`` (workspace ``workspace``), fragments and the
    sequence in hexrag's tables beside it (module docstring). Arguments as
    :class:`PgDocumentStore`, without ``table_prefix`` (:func:`side_table_prefix`)."""

    _kind = "LightRAG document status table"

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        workspace: str = "default",
        schema: str | None = None,
        timeout: float | None = None,
        create_tables: bool = True,
        rows_only: bool = False,
    ) -> None:
        if not isinstance(workspace, str) or not workspace:
            raise ConfigurationError("a LightRAG workspace must be a non-empty string")
        super().__init__(pool, schema=schema, table_prefix=side_table_prefix(workspace),
                         timeout=timeout, create_tables=create_tables and not rows_only)
        self._workspace = workspace
        #: hexrag's tables beside LightRAG's are absent and must not be created (a read-only
        #: opening): LightRAG's rows read as LightRAG reads them, no fragments, no writes
        self._rows_only = rows_only

    @property
    def workspace(self) -> str:
        """LightRAG's workspace (the ``workspace`` column)."""
        return self._workspace

    async def upsert_docs(self, docs: Sequence[DocRecord]) -> None:
        """Write LightRAG's rows (its statement) and, beside them, what its read would not
        give back; one transaction."""
        latest = {d.id: d for d in docs}
        if not latest:
            return
        rows, sides = [], []
        for doc_id, d in latest.items():
            row = d.to_json()
            for name in ("content_summary", "content_length", "status", "file_path"):
                if name not in row:  # LightRAG's upsert requires them (v["..."])
                    row = {**row, name: _DEFAULTS[name]}
            view = lightrag_doc_status_view(row)
            cols = _column_values(row)
            rows.append({"id": doc_id, **{k: (v.isoformat() if isinstance(v, datetime) else v)
                                          for k, v in cols.items()}})
            written = d.to_json()
            own = {k: v for k, v in written.items() if k not in view or view[k] != v
                   or type(view[k]) is not type(v)}
            added = [k for k in view if k not in written]
            sides.append({"id": doc_id, "seq": d.seq, "record": {
                "updated_at": view["updated_at"], "own": own, "added": added}})
        await self.ensure_tables()
        with translate_errors(f"writing {len(rows)} rows into {_TABLE}"):
            async with self._pool.acquire(timeout=self._timeout) as conn, conn.transaction():
                await conn.execute(_UPSERT, self._workspace, rows_document(rows),
                                   timeout=self._timeout)
                await conn.execute(
                    f"""WITH ins AS (
                            INSERT INTO {self._docs} (id, seq, record)
                            SELECT r.id, r.seq, r.record
                            FROM jsonb_to_recordset($1::text::jsonb)
                                AS r(id text, seq bigint, record jsonb)
                            ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq,
                                record = EXCLUDED.record
                            RETURNING seq)
                        {self._raise_sequence("ins")}""",
                    rows_document(sides), self._seq, timeout=self._timeout)

    async def _read(self, ids: Sequence[str] | None) -> list[DocRecord]:
        where = "" if ids is None else "AND s.id = ANY($2::text[])"
        args: list[Any] = [self._workspace] + ([] if ids is None else [list(ids)])
        beside = ("NULL::bigint AS hexrag_seq, NULL::text AS hexrag_record FROM "
                  f"{_TABLE} AS s" if self._rows_only else
                  "h.seq AS hexrag_seq, h.record::text AS hexrag_record FROM "
                  f"{_TABLE} AS s LEFT JOIN {self._docs} AS h ON h.id = s.id")
        order = "s.id" if self._rows_only else "coalesce(h.seq, 0), s.id"
        rows = await self._fetch(
            f"reading {_TABLE}",
            f"SELECT {_COLUMNS}, {beside} WHERE s.workspace = $1 {where} ORDER BY {order}",
            *args,
        )
        return [self._record(r) for r in rows]

    async def fragments_of_chunks(self, chunk_ids: Sequence[str]) -> list[Fragment]:
        """The chunks' fragments (none while hexrag's tables are absent)."""
        return [] if self._rows_only else await super().fragments_of_chunks(chunk_ids)

    async def fragments_about(self, names: Sequence[str]) -> list[Fragment]:
        """Fragments about ``names`` (none while hexrag's tables are absent)."""
        return [] if self._rows_only else await super().fragments_about(names)

    async def count_fragments(self) -> int:
        """Number of stored fragments (0 while hexrag's tables are absent)."""
        return 0 if self._rows_only else await super().count_fragments()

    async def scan_fragments(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Fragment]:
        """A page of fragments (empty while hexrag's tables are absent)."""
        if self._rows_only:
            return Page([], None)
        return await super().scan_fragments(cursor, limit=limit)

    def _record(self, r: Mapping[str, Any]) -> DocRecord:
        view = _view_of(r)
        side = json.loads(r["hexrag_record"]) if r["hexrag_record"] else None
        if isinstance(side, dict) and side.get("updated_at") == view["updated_at"]:
            for name in side.get("added") or []:
                view.pop(name, None)
            view.update(side.get("own") or {})
        elif r["hexrag_seq"]:
            view["seq"] = int(r["hexrag_seq"])
        return DocRecord.from_json(str(r["id"]), view)

    async def get_docs(self, ids: Sequence[str]) -> list[DocRecord | None]:
        """Rows in request order, ``None`` for a missing id."""
        wanted = list(dict.fromkeys(ids))
        found = {d.id: d for d in await self._read(wanted)} if wanted else {}
        return [found.get(i) for i in ids]

    async def list_docs(self) -> list[DocRecord]:
        """Every row of the workspace, ordered by hexrag's ``seq`` (0 for LightRAG's rows),
        then id."""
        return await self._read(None)

    async def delete_docs(self, ids: Sequence[str]) -> None:
        """Remove rows by id (LightRAG's and the record beside it)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return
        await self.ensure_tables()
        with translate_errors(f"deleting {len(wanted)} rows from {_TABLE}"):
            async with self._pool.acquire(timeout=self._timeout) as conn, conn.transaction():
                await conn.execute(
                    f"DELETE FROM {_TABLE} WHERE workspace = $1 AND id = ANY($2::text[])",
                    self._workspace, wanted, timeout=self._timeout)
                await conn.execute(f"DELETE FROM {self._docs} WHERE id = ANY($1::text[])",
                                   wanted, timeout=self._timeout)

    async def clear(self) -> None:
        """Remove every row of the workspace and hexrag's fragments beside it."""
        await self._execute(f"clearing {_TABLE}",
                            f"DELETE FROM {_TABLE} WHERE workspace = $1", self._workspace)
        await super().clear()


_DEFAULTS: dict[str, Any] = {"content_summary": "", "content_length": 0, "status": "pending",
                             "file_path": "unknown_source"}
