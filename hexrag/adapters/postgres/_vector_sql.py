"""The search statements and the storage layout of :class:`PgVectorIndex` tables.

Search is one statement that the server ranks: the top ids are chosen by pgvector's own
cosine (``1 - cosine_distance``; a zero vector scores 0), the threshold is compared there
(``score >= threshold``, inclusive), ties are broken by id (``COLLATE "C"``: code-point
order), and only then are the text columns of the ``top_k`` winners read (a join back on the
primary key). No vector travels back to the client; the query vector travels as a binary
``real[]`` parameter (asyncpg's float4 array codec), cast to ``vector`` on the server.

Storage: a ``vector`` column is ``STORAGE EXTERNAL`` by default, so a row over ~2 KB (a
384-dimension vector is 1.5 KB, plus source ids, content, scope arrays) has its vector moved
to the TOAST table, and an exact scan then reads every vector through the TOAST index (about
twice as slow as reading it inline, measured on 10k entities). hexrag's tables keep vectors of up to
:data:`INLINE_MAX_DIM` dimensions inline (``STORAGE PLAIN``; the wider columns are toasted
instead). Tables created before this layout are converted when an adapter that may run DDL
opens them (:func:`upgrade_storage_sql`): one ``ALTER TABLE`` that rewrites the table and its
indexes, under hexrag's DDL lock.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "INLINE_MAX_DIM",
    "exact_search_sql",
    "index_search_sql",
    "upgrade_storage_sql",
]

#: Vectors of up to this many dimensions are stored inline (``STORAGE PLAIN``): 4 bytes per
#: component plus the 8-byte header stays well within a heap page once the other columns are
#: toasted. Wider vectors keep pgvector's default (``EXTERNAL``).
INLINE_MAX_DIM: Final = 1800


def _top_rows(table: str, columns: str) -> str:
    # the winners' columns, best first; ``top.id`` carries the table's "C" collation
    return f"""
        SELECT top.score, {columns}
        FROM top JOIN {table} AS t ON t.id = top.id
        ORDER BY top.score DESC, top.id"""


def exact_search_sql(table: str, columns: str, where: str) -> str:
    """Exact search: ``$1`` query vector (``real[]``), ``$2`` threshold, ``$3`` top_k; the
    scope condition ``where`` numbers its parameters from ``$4``.

    ``cosine_distance(...)`` (the function, not the ``<=>`` operator) cannot be served by the
    HNSW index, so the planner cannot turn this into an approximate scan that would lose rows
    to the WHERE clause. pgvector gives NaN for a zero vector: it scores 0 here.
    """
    return f"""
        WITH top AS (
            SELECT id, score FROM (
                SELECT id, CASE WHEN d = 'NaN'::float8 THEN 0::float8 ELSE 1 - d END AS score
                FROM (
                    SELECT id, cosine_distance(vector, $1::real[]::vector) AS d
                    FROM {table} WHERE {where} OFFSET 0
                ) AS dist
            ) AS scored
            WHERE score >= $2
            ORDER BY score DESC, id
            LIMIT $3
        ){_top_rows(table, columns)}"""


def index_search_sql(table: str, columns: str) -> str:
    """HNSW search: ``$1`` query vector (``real[]``), ``$2`` threshold, ``$3`` candidates read
    from the index, ``$4`` ``hnsw.ef_search``, ``$5`` top_k.

    ``hnsw.ef_search`` bounds how many rows an HNSW scan can return. It is raised for this
    statement only: ``set_config(..., is_local => true)`` in the outer row, which the nested
    loop evaluates before it starts the lateral index scan that reads the setting. The
    candidates (a few more than ``top_k``) are re-ranked by ``(score, id)`` so that ties at the
    cut are broken by id as in an exact search.
    """
    return f"""
        WITH cand AS (
            SELECT h.id, h.d
            FROM (SELECT set_config('hnsw.ef_search', $4, true) AS ef OFFSET 0) AS cfg
            CROSS JOIN LATERAL (
                SELECT id, vector <=> $1::real[]::vector AS d FROM {table}
                WHERE cfg.ef IS NOT NULL
                ORDER BY vector <=> $1::real[]::vector
                LIMIT $3
            ) AS h
        ),
        top AS (
            SELECT id, 1 - d AS score FROM cand
            WHERE 1 - d >= $2
            ORDER BY score DESC, id
            LIMIT $5
        ){_top_rows(table, columns)}"""


def upgrade_storage_sql(table: str, dim: int) -> str:
    """Keep the vectors of an existing table inline: ``STORAGE PLAIN`` and a rewrite of the
    stored rows (vectors already in the TOAST table move back into the rows; indexes are
    rebuilt). Values are unchanged: ``vector -> real[] -> vector`` is exact."""
    return (
        f"ALTER TABLE {table} ALTER COLUMN vector SET STORAGE PLAIN, "
        f"ALTER COLUMN vector TYPE vector({int(dim)}) USING vector::real[]::vector"
    )
