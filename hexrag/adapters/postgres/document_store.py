"""``PgDocumentStore``: the DocumentStore port on two PostgreSQL tables and a sequence."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hexrag.adapters.postgres._base import PgAdapter
from hexrag.adapters.postgres._rows import rows_document
from hexrag.domain.documents import DocRecord, Fragment
from hexrag.ports.scan import DEFAULT_SCAN_LIMIT, Page, check_scan_limit

__all__ = ["PgDocumentStore"]

_FRAGMENT_COLUMNS = "kind, src, tgt, chunk_id, doc_id, seq, pos, data::text, metadata::text"


def _fragment(row: Any) -> Fragment:
    return Fragment(
        kind=row["kind"], src=row["src"], tgt=row["tgt"], chunk_id=row["chunk_id"],
        doc_id=row["doc_id"], seq=int(row["seq"]), pos=int(row["pos"]),
        data=json.loads(row["data"]), metadata=json.loads(row["metadata"]),
    )


class PgDocumentStore(PgAdapter):
    """Status rows in ``<prefix>_doc_status`` (``id``, ``seq``, the LightRAG-shaped record as
    JSON), fragments in ``<prefix>_fragments`` (key ``(chunk_id, pos)``, indexed by ``src``
    and ``tgt``) and the insertion sequence ``<prefix>_doc_seq``. One statement per call.

    Arguments as :class:`~hexrag.adapters.postgres._base.PgAdapter`.
    """

    _kind = "document store"

    def _name_tables(self) -> None:
        self._docs = self._tables.qualified("doc_status")
        self._frags = self._tables.qualified("fragments")
        self._seq = self._tables.qualified("doc_seq")

    def _ddl(self) -> str:
        return f"""
            CREATE TABLE IF NOT EXISTS {self._docs} (
                id text COLLATE "C" PRIMARY KEY,
                seq bigint NOT NULL DEFAULT 0,
                record jsonb NOT NULL
            );
            CREATE TABLE IF NOT EXISTS {self._frags} (
                chunk_id text COLLATE "C" NOT NULL,
                pos integer NOT NULL,
                kind text NOT NULL,
                src text COLLATE "C" NOT NULL,
                tgt text COLLATE "C" NOT NULL,
                doc_id text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                data jsonb NOT NULL,
                metadata jsonb NOT NULL DEFAULT '{{}}',
                PRIMARY KEY (chunk_id, pos)
            );
            CREATE INDEX IF NOT EXISTS {self._tables.index("fragments_src")}
                ON {self._frags} (src);
            CREATE INDEX IF NOT EXISTS {self._tables.index("fragments_tgt")}
                ON {self._frags} (tgt);
            CREATE SEQUENCE IF NOT EXISTS {self._seq};
        """

    async def upsert_docs(self, docs: Sequence[DocRecord]) -> None:
        """Insert or replace status rows by id (one statement)."""
        rows = {d.id: {"id": d.id, "seq": d.seq, "record": d.to_json()} for d in docs}
        if not rows:
            return
        await self._execute(
            f"upserting {len(rows)} documents into {self._docs}",
            f"""WITH ins AS (
                    INSERT INTO {self._docs} (id, seq, record)
                    SELECT r.id, r.seq, r.record
                    FROM jsonb_to_recordset($1::text::jsonb)
                        AS r(id text, seq bigint, record jsonb)
                    ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, record = EXCLUDED.record
                    RETURNING seq)
                {self._raise_sequence("ins")}""",
            rows_document(list(rows.values())), self._seq,
        )

    def _raise_sequence(self, written: str) -> str:
        # Rows copied in (a migration, an import) carry sequence numbers the sequence never
        # handed out: move it past the largest, so next_sequence stays larger than every
        # stored seq ($2 is the sequence's name; never moved back).
        return f"""SELECT setval($2::regclass, m, true)
                   FROM (SELECT max(seq) AS m FROM {written}) AS w,
                        (SELECT last_value, is_called FROM {self._seq}) AS s
                   WHERE w.m > 0 AND (w.m > s.last_value OR NOT s.is_called)
                     AND w.m >= s.last_value"""

    async def get_docs(self, ids: Sequence[str]) -> list[DocRecord | None]:
        """Rows in request order, ``None`` for a missing id."""
        rows = await self._rows_by_id(self._docs, "id, record::text AS record", ids, "documents")
        found = {i: DocRecord.from_json(i, json.loads(r["record"])) for i, r in rows.items()}
        return [found.get(i) for i in ids]

    async def list_docs(self) -> list[DocRecord]:
        """Every row, ordered by ``seq`` then id."""
        rows = await self._fetch(
            f"listing {self._docs}",
            f"SELECT id, record::text AS record FROM {self._docs} ORDER BY seq, id",
        )
        return [DocRecord.from_json(r["id"], json.loads(r["record"])) for r in rows]

    async def delete_docs(self, ids: Sequence[str]) -> None:
        """Remove rows by id."""
        await self._delete_ids(self._docs, ids, "documents")

    async def next_sequence(self) -> int:
        """``nextval`` of the sequence."""
        return int(await self._fetchval(f"advancing {self._seq}",
                                        "SELECT nextval($1::regclass)", self._seq))

    async def add_fragments(self, fragments: Sequence[Fragment]) -> None:
        """Store fragments (one statement; same ``(chunk_id, pos)`` replaced)."""
        rows = {(f.chunk_id, f.pos): f.to_json() for f in fragments}
        if not rows:
            return
        await self._execute(
            f"storing {len(rows)} fragments in {self._frags}",
            f"""WITH ins AS (
                    INSERT INTO {self._frags}
                        (chunk_id, pos, kind, src, tgt, doc_id, seq, data, metadata)
                    SELECT r.chunk_id, r.pos, r.kind, r.src, r.tgt, r.doc_id, r.seq, r.data,
                        coalesce(r.metadata, '{{}}'::jsonb)
                    FROM jsonb_to_recordset($1::text::jsonb) AS r(chunk_id text, pos integer,
                        kind text, src text, tgt text, doc_id text, seq bigint, data jsonb,
                        metadata jsonb)
                    ON CONFLICT (chunk_id, pos) DO UPDATE SET kind = EXCLUDED.kind,
                        src = EXCLUDED.src, tgt = EXCLUDED.tgt, doc_id = EXCLUDED.doc_id,
                        seq = EXCLUDED.seq, data = EXCLUDED.data, metadata = EXCLUDED.metadata
                    RETURNING seq)
                {self._raise_sequence("ins")}""",
            rows_document(list(rows.values())), self._seq,
        )

    async def fragments_of_chunks(self, chunk_ids: Sequence[str]) -> list[Fragment]:
        """Every fragment of these chunks, sorted by ``(seq, pos)``."""
        return await self._fragments(chunk_ids, "of", "chunks", "chunk_id = ANY($1::text[])")

    async def fragments_about(self, names: Sequence[str]) -> list[Fragment]:
        """Every fragment about these entity names, sorted by ``(seq, pos)``."""
        return await self._fragments(
            names,
            "about",
            "entities",
            "src = ANY($1::text[]) OR (kind = 'relation' AND tgt = ANY($1::text[]))",
        )

    async def _fragments(
        self, keys: Sequence[str], relation: str, noun: str, condition: str
    ) -> list[Fragment]:
        """The fragments meeting ``condition`` (a constant of this class; ``$1`` is the
        distinct ``keys``), sorted by ``(seq, pos, chunk_id)``; no statement for no keys."""
        rows = await self._fetch_ids(
            f"reading the fragments {relation} {{n}} {noun} from {self._frags}",
            f"""SELECT {_FRAGMENT_COLUMNS} FROM {self._frags}
                WHERE {condition}
                ORDER BY seq, pos, chunk_id""",
            keys,
        )
        return [_fragment(r) for r in rows]

    async def delete_fragments_of_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Remove every fragment of these chunks (one statement)."""
        await self._execute_ids(
            f"deleting the fragments of {{n}} chunks from {self._frags}",
            f"DELETE FROM {self._frags} WHERE chunk_id = ANY($1::text[])",
            chunk_ids,
        )

    async def count_fragments(self) -> int:
        """Number of stored fragments."""
        return int(await self._fetchval(f"counting {self._frags}",
                                        f"SELECT count(*) FROM {self._frags}"))

    async def scan_fragments(
        self, cursor: str | None = None, *, limit: int = DEFAULT_SCAN_LIMIT
    ) -> Page[Fragment]:
        """A page of fragments: those of at most ``limit`` chunks after ``cursor`` (the last
        chunk id of the previous page), in chunk id order. One statement."""
        check_scan_limit(limit)
        rows = await self._fetch(
            f"scanning the fragments of {self._frags}",
            f"""WITH page AS (
                    SELECT DISTINCT chunk_id FROM {self._frags}
                    WHERE $1::text IS NULL OR chunk_id > $1::text
                    ORDER BY chunk_id LIMIT $2)
                SELECT {_FRAGMENT_COLUMNS} FROM {self._frags}
                WHERE chunk_id IN (SELECT chunk_id FROM page) ORDER BY chunk_id, pos""",
            cursor, limit,
        )
        items = [_fragment(r) for r in rows]
        chunks = len({f.chunk_id for f in items})
        return Page(items, items[-1].chunk_id if chunks >= limit else None)

    async def clear(self) -> None:
        """Remove every row and fragment (the sequence keeps counting)."""
        await self._execute(f"clearing {self._docs}, {self._frags}",
                            f"TRUNCATE {self._docs}, {self._frags}")
