"""Which rows a PostgreSQL vector index holds and how a row becomes a record: hexrag's layout
and LightRAG 1.5.7's (``PGVectorStorage``), as strategies, with the reads both share.

A layout (:class:`VectorRows`) names the table, the vector column, the columns of a record,
the condition that selects the index's own rows (all of hexrag's table; one ``workspace`` of
LightRAG's), the row -> record conversion and the rules the index declares
(:class:`~hexrag.ports.vector_index.VectorIndexTraits`). :class:`PgVectorReads` is the one
implementation of the port's reads on top of it - ``get``, ``get_vectors``, ``count``,
``delete``, ``scan_records`` - for :class:`~hexrag.adapters.postgres.vector_index.PgVectorIndex`
and :class:`~hexrag.adapters.postgres.lightrag_vector_index.LightRAGPgVectorIndex` alike. Writes
and searches stay with each index: hexrag's are its own ranked statements and ``COPY`` path,
LightRAG's are LightRAG's own statements (its upsert templates, its search SQL).

Stored vectors are read in pgvector's binary form (``vector_send``: no float-to-text on the
server, one numpy decode here), so no per-connection codec registration is needed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from hexrag.adapters._vector_lightrag import lightrag_model_suffix, lightrag_traits
from hexrag.adapters._vector_record import record_from_row
from hexrag.adapters.postgres._rows import row_to_vector_record
from hexrag.adapters.postgres._sql import quote_ident
from hexrag.domain.errors import ConfigurationError
from hexrag.domain.records import GRAPH_FIELD_SEP, VectorRecord
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit
from hexrag.ports.vector_index import PORT_TRAITS, VectorIndexTraits

__all__ = [
    "HexragVectorRows",
    "LightRAGVectorRows",
    "PgVectorReads",
    "VectorRows",
    "lightrag_vector_table",
    "vector_from_pg",
    "vectors_from_pg",
]

_LIGHTRAG_TABLES = {
    "entities": "lightrag_vdb_entity",
    "relationships": "lightrag_vdb_relation",
    "chunks": "lightrag_vdb_chunks",
}


def lightrag_vector_table(namespace: str, model_name: str | None, dim: int) -> str:
    """LightRAG's table name of a vector namespace (its model suffix rule)."""
    return _LIGHTRAG_TABLES[namespace] + lightrag_model_suffix(model_name, dim)


def vector_from_pg(value: Any) -> np.ndarray:
    """A ``vector`` column value as float32: pgvector's binary form (``vector_send``: int16
    dimension, int16 unused, big-endian float4 values), its codec object, a list or text."""
    if isinstance(value, bytes | bytearray | memoryview):
        return np.frombuffer(value, dtype=">f4", offset=4).astype(np.float32)
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    elif isinstance(value, str):
        value = json.loads(value)
    return np.asarray(value, dtype=np.float32)


def vectors_from_pg(values: list[Any]) -> list[np.ndarray]:
    """:func:`vector_from_pg` of many ``vector_send`` values at once (one decode when all have
    one dimension: each 4-byte header takes one float4 slot of the joined buffer)."""
    if not values:
        return []
    if all(isinstance(v, bytes) for v in values) and len({len(v) for v in values}) == 1:
        width = len(values[0]) // 4
        matrix = np.frombuffer(b"".join(values), dtype=">f4").reshape(len(values), width)
        return list(matrix[:, 1:].astype(np.float32))
    return [vector_from_pg(v) for v in values]


class VectorRows:
    """The layout strategy interface (see the module docstring)."""

    #: the quoted table name used in SQL, and its name in messages
    table: str
    name: str
    #: the ``vector`` column and the columns of a record (no vector)
    vector_column: str
    columns: str

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """The condition selecting this index's rows, its parameters numbered from
        ``first_param``."""
        raise NotImplementedError

    def record(self, row: Mapping[str, Any], vector: np.ndarray | None) -> VectorRecord:
        """The record of a row of :attr:`columns` (and its decoded vector)."""
        raise NotImplementedError

    def traits(self) -> VectorIndexTraits:
        """The rules the index declares."""
        return PORT_TRAITS


class HexragVectorRows(VectorRows):
    """hexrag's table ``<prefix>_vdb_<namespace>``: every row is the index's."""

    vector_column = "vector"
    columns = (
        "id, entity_name, src_id, tgt_id, content, file_path, full_doc_id, created_at, "
        "source_id::text AS source_id, metadata::text AS metadata"
    )

    def __init__(self, table: str) -> None:
        self.table = self.name = table

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """Every row."""
        return "TRUE", []

    def record(self, row: Mapping[str, Any], vector: np.ndarray | None) -> VectorRecord:
        """:func:`~hexrag.adapters.postgres._rows.row_to_vector_record` with ``vector``."""
        record = row_to_vector_record(row, with_vector=False)
        return record if vector is None else replace(record, vector=vector)


class LightRAGVectorRows(VectorRows):
    """One ``workspace`` of LightRAG's ``lightrag_vdb_*`` table of a namespace: the table's own
    columns (``entity_name``; ``source_id``/``target_id``; ``full_doc_id``, ``tokens``,
    ``chunk_order_index``), ``chunk_ids`` read back as a ``<SEP>``-joined ``source_id``,
    ``create_time`` as ``created_at``."""

    vector_column = "content_vector"

    def __init__(self, namespace: str, *, workspace: str, model_name: str | None,
                 dim: int) -> None:
        if namespace not in _LIGHTRAG_TABLES:
            raise ConfigurationError(f"unknown vector namespace {namespace!r}")
        self.namespace = namespace
        self.workspace = workspace
        self.name = lightrag_vector_table(namespace, model_name, dim)
        self.table = quote_ident(self.name)
        extra = {
            "entities": "entity_name, NULL::text AS src_id, NULL::text AS tgt_id, "
            "NULL::text AS full_doc_id",
            "relationships": "NULL::text AS entity_name, source_id AS src_id, "
            "target_id AS tgt_id, NULL::text AS full_doc_id",
            "chunks": "NULL::text AS entity_name, NULL::text AS src_id, NULL::text AS tgt_id, "
            "full_doc_id",
        }[namespace]
        chunk_ids = "NULL::text[]" if namespace == "chunks" else "chunk_ids"
        order = (
            "tokens, chunk_order_index"
            if namespace == "chunks"
            else "NULL::int AS tokens, NULL::int AS chunk_order_index"
        )
        self.columns = (
            f"id, {extra}, content, file_path, {chunk_ids} AS chunk_ids, {order}, "
            "EXTRACT(EPOCH FROM create_time)::BIGINT AS created_at"
        )

    def where(self, first_param: int) -> tuple[str, list[Any]]:
        """``workspace = $n``."""
        return f"workspace = ${first_param}", [self.workspace]

    def record(self, row: Mapping[str, Any], vector: np.ndarray | None) -> VectorRecord:
        """A LightRAG row as a record (``tokens`` / ``chunk_order_index`` as metadata)."""
        ids = row.get("chunk_ids")
        metadata = {
            k: row.get(k) for k in ("tokens", "chunk_order_index") if row.get(k) is not None
        }
        return record_from_row(
            row, vector, source_id=GRAPH_FIELD_SEP.join(ids) if ids else None, metadata=metadata
        )

    def traits(self) -> VectorIndexTraits:
        """LightRAG's rules: the strict threshold and pgvector's order among ties, the table's
        own columns (a chunk row keeps ``tokens`` / ``chunk_order_index`` as metadata and no
        ``source_id``), ``source_id`` as ``chunk_ids`` (read back joined), ``create_time``
        kept when a row is replaced."""
        keys = ("tokens", "chunk_order_index") if self.namespace == "chunks" else ()
        return lightrag_traits(self.namespace, metadata_keys=keys, stamps_created_at=False,
                               keeps_first_created_at=True)


class PgVectorReads:
    """The port's reads on a :class:`VectorRows` layout (one statement each); mixed into a
    :class:`~hexrag.adapters.postgres._base.PgAdapter` that sets ``_rows``."""

    _rows: VectorRows

    if TYPE_CHECKING:  # PgAdapter's statements

        async def _fetch(self, action: str, sql: str, *args: Any) -> list[Any]: ...

        async def _fetchval(self, action: str, sql: str, *args: Any) -> Any: ...

        async def _execute(self, action: str, sql: str, *args: Any) -> None: ...

    @property
    def traits(self) -> VectorIndexTraits:
        """The rules this index declares (its layout's;
        :class:`~hexrag.ports.vector_index.VectorIndexTraits`)."""
        return self._rows.traits()

    async def get(self, ids: Sequence[str]) -> list[VectorRecord | None]:
        """Records (with their float32 vectors) in request order; ``None`` for a missing id."""
        rows = self._rows
        found = await self._by_ids(
            f"{rows.columns}, vector_send({rows.vector_column}) AS stored_vector", ids, "records"
        )
        by_id = {r["id"]: rows.record(r, vector_from_pg(r["stored_vector"])) for r in found}
        return [by_id.get(i) for i in ids]

    async def _by_ids(self, columns: str, ids: Sequence[str], what: str) -> list[Any]:
        """The index's rows of ``ids`` (each once), ``columns`` of them; one statement."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows, (cond, args) = self._rows, self._rows.where(2)
        return await self._fetch(
            f"reading {len(wanted)} {what} from {rows.name}",
            f"SELECT {columns} FROM {rows.table} WHERE id = ANY($1::text[]) AND {cond}",
            wanted, *args,
        )

    async def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored float32 vectors of the ids found (missing ids absent, duplicates once)."""
        found = await self._by_ids(
            f"id, vector_send({self._rows.vector_column}) AS v", ids, "vectors"
        )
        vectors = dict(zip((r["id"] for r in found), vectors_from_pg([r["v"] for r in found]),
                           strict=True))
        return {i: vectors[i] for i in dict.fromkeys(ids) if i in vectors}

    async def count(self) -> int:
        """Number of stored records."""
        rows, (cond, args) = self._rows, self._rows.where(1)
        return int(await self._fetchval(
            f"counting {rows.name}", f"SELECT count(*) FROM {rows.table} WHERE {cond}", *args
        ))

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove records by id; unknown ids are ignored."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return
        rows, (cond, args) = self._rows, self._rows.where(2)
        await self._execute(
            f"deleting {len(wanted)} records from {rows.name}",
            f"DELETE FROM {rows.table} WHERE id = ANY($1::text[]) AND {cond}",
            wanted, *args,
        )

    async def scan_records(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[VectorRecord]:
        """A page of records with their float32 vectors, by id (keyset on the primary key,
        one statement; :class:`~hexrag.ports.scan.ScansVectorIndex`)."""
        check_scan_limit(limit)
        rows, (cond, args) = self._rows, self._rows.where(3)
        found = await self._fetch(
            f"scanning {rows.name}",
            f"""SELECT {rows.columns}, vector_send({rows.vector_column}) AS stored_vector
                FROM {rows.table} WHERE ($1::text IS NULL OR id > $1::text) AND {cond}
                ORDER BY id LIMIT $2""",
            cursor, limit, *args,
        )
        items = [rows.record(r, vector_from_pg(r["stored_vector"])) for r in found]
        return Page(items, items[-1].id if len(items) == limit else None)
