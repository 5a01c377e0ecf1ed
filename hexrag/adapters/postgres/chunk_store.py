"""``PgChunkStore``: the ChunkStore port on one PostgreSQL table (hexrag's layout,
:class:`~hexrag.adapters.postgres.chunk_rows.HexragChunkRows`)."""

from __future__ import annotations

from hexrag.adapters.postgres._base import PgTableAdapter
from hexrag.adapters.postgres.chunk_rows import HexragChunkRows, PgChunks

__all__ = ["PgChunkStore"]


class PgChunkStore(PgChunks, PgTableAdapter):
    """Chunks in ``<prefix>_chunks``: typed columns ``id``, ``content``, ``tokens``,
    ``full_doc_id``, ``chunk_order_index``, ``file_path`` and every other field in a
    ``metadata`` JSON column (``None`` values kept). One statement per call.

    The port's methods are :class:`~hexrag.adapters.postgres.chunk_rows.PgChunks` on the
    :class:`~hexrag.adapters.postgres.chunk_rows.HexragChunkRows` layout.
    Arguments as :class:`~hexrag.adapters.postgres._base.PgAdapter`.
    """

    _kind = "chunk store"
    _table_stem = "chunks"
    _layout: HexragChunkRows

    def _name_tables(self) -> None:
        super()._name_tables()
        self._layout = HexragChunkRows(self._table)

    def _ddl(self) -> str:
        return self._layout.ddl()
