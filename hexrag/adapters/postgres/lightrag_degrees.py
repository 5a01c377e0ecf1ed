"""Stored node degrees for LightRAG's PostgreSQL graph (``lightrag_graph_edges``), an explicit,
opt-in speed-up: ``hexrag stored-degrees --stack S`` installs them, ``--remove`` takes them
away.

Local mode ranks every edge of its entities by ``degree(src) + degree(tgt)``. LightRAG's tables
hold no degree, so hexrag counts each end's edges when it reads them: two index-only counts per
end, most of a local query's graph statement (10k entities: about 240 ends, 13,700 index
entries, 2.5 ms; more at 100k, where hubs have hundreds of edges). hexrag never changes a
user's LightRAG tables on its own (no silent index); this module is what the command runs:

* ``hexrag_lightrag_graph_degrees`` (``workspace``, ``namespace``, ``id``, ``degree``), filled
  from the edges under a lock that holds writers back, a node without edges having no row;
* statement-level triggers on ``lightrag_graph_edges`` (insert, delete, update, with transition
  tables; truncate) that keep it in step inside every writing transaction, LightRAG's own
  writes included: ``+1`` per end of each inserted row (a self-loop ``+2``, as LightRAG's
  degree counts it), ``-1`` per end of each deleted row, both for an update; rows are upserted
  in key order, so concurrent writers cannot deadlock on them; a count that falls to zero
  loses its row.

The graph store reads the table instead of counting once it finds the table and its four
triggers (:data:`STATUS_SQL`); the degrees are the counts (``tests/integration/
test_lightrag_pg_degrees.py`` checks them after LightRAG's own writes and random ones). The
cost: each write to the edges table also updates the degrees of its ends.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEGREE_TABLE", "INSTALL_SQL", "REMOVE_SQL", "STATUS_SQL", "TRIGGERS"]

#: the degrees table (beside LightRAG's tables, in the connection's search path)
DEGREE_TABLE: Final = "hexrag_lightrag_graph_degrees"
_FUNCTION: Final = "hexrag_lightrag_count_degrees"
_TRUNCATE_FUNCTION: Final = "hexrag_lightrag_clear_degrees"
#: the triggers on ``lightrag_graph_edges``
TRIGGERS: Final = (
    "hexrag_degrees_ins",
    "hexrag_degrees_del",
    "hexrag_degrees_upd",
    "hexrag_degrees_trunc",
)

_NEW = (
    "SELECT workspace, namespace, src_id AS id, 1 AS c FROM hx_new "
    "UNION ALL SELECT workspace, namespace, tgt_id, 1 FROM hx_new"
)
_OLD = (
    "SELECT workspace, namespace, src_id AS id, -1 AS c FROM hx_old "
    "UNION ALL SELECT workspace, namespace, tgt_id, -1 FROM hx_old"
)


def _apply(ends: str) -> str:
    return f"""INSERT INTO {DEGREE_TABLE} AS d (workspace, namespace, id, degree)
            SELECT x.workspace, x.namespace, x.id, sum(x.c) FROM ({ends}) AS x
            GROUP BY x.workspace, x.namespace, x.id HAVING sum(x.c) <> 0
            ORDER BY x.workspace, x.namespace, x.id
            ON CONFLICT (workspace, namespace, id)
            DO UPDATE SET degree = d.degree + EXCLUDED.degree"""


_DROP_ZEROS = f"""DELETE FROM {DEGREE_TABLE} AS d USING (
                SELECT DISTINCT workspace, namespace, src_id AS id FROM hx_old
                UNION SELECT workspace, namespace, tgt_id FROM hx_old) AS o
            WHERE d.workspace = o.workspace AND d.namespace = o.namespace AND d.id = o.id
              AND d.degree = 0"""

#: one simple-protocol script (one transaction): nothing when already installed
INSTALL_SQL: Final = f"""
DO $hx_degrees$
BEGIN
    IF to_regclass('{DEGREE_TABLE}') IS NULL THEN
        LOCK TABLE lightrag_graph_edges IN SHARE ROW EXCLUSIVE MODE;
        CREATE TABLE {DEGREE_TABLE} (
            workspace text NOT NULL,
            namespace text NOT NULL,
            id text NOT NULL,
            degree bigint NOT NULL,
            PRIMARY KEY (workspace, namespace, id)
        );
        INSERT INTO {DEGREE_TABLE} (workspace, namespace, id, degree)
        SELECT x.workspace, x.namespace, x.id, count(*) FROM (
            SELECT workspace, namespace, src_id AS id FROM lightrag_graph_edges
            UNION ALL SELECT workspace, namespace, tgt_id FROM lightrag_graph_edges
        ) AS x GROUP BY x.workspace, x.namespace, x.id;
        CREATE FUNCTION {_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $hx_fn$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                {_apply(_NEW)};
            ELSIF TG_OP = 'DELETE' THEN
                {_apply(_OLD)};
                {_DROP_ZEROS};
            ELSE
                {_apply(f"{_NEW} UNION ALL {_OLD}")};
                {_DROP_ZEROS};
            END IF;
            RETURN NULL;
        END
        $hx_fn$;
        CREATE FUNCTION {_TRUNCATE_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $hx_fn$
        BEGIN
            DELETE FROM {DEGREE_TABLE};
            RETURN NULL;
        END
        $hx_fn$;
        CREATE TRIGGER {TRIGGERS[0]} AFTER INSERT ON lightrag_graph_edges
            REFERENCING NEW TABLE AS hx_new
            FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTION}();
        CREATE TRIGGER {TRIGGERS[1]} AFTER DELETE ON lightrag_graph_edges
            REFERENCING OLD TABLE AS hx_old
            FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTION}();
        CREATE TRIGGER {TRIGGERS[2]} AFTER UPDATE ON lightrag_graph_edges
            REFERENCING OLD TABLE AS hx_old NEW TABLE AS hx_new
            FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTION}();
        CREATE TRIGGER {TRIGGERS[3]} AFTER TRUNCATE ON lightrag_graph_edges
            FOR EACH STATEMENT EXECUTE FUNCTION {_TRUNCATE_FUNCTION}();
    END IF;
END
$hx_degrees$;
"""

#: one simple-protocol script: the triggers, functions and table go (nothing else is touched)
REMOVE_SQL: Final = "\n".join(
    [f"DROP TRIGGER IF EXISTS {t} ON lightrag_graph_edges;" for t in TRIGGERS]
    + [
        f"DROP FUNCTION IF EXISTS {_FUNCTION}();",
        f"DROP FUNCTION IF EXISTS {_TRUNCATE_FUNCTION}();",
        f"DROP TABLE IF EXISTS {DEGREE_TABLE};",
    ]
)

#: whether the table and its four enabled triggers are there (what the graph store trusts)
STATUS_SQL: Final = f"""SELECT to_regclass('{DEGREE_TABLE}') IS NOT NULL
    AND to_regclass('lightrag_graph_edges') IS NOT NULL
    AND (SELECT count(*) FROM pg_trigger
         WHERE tgrelid = to_regclass('lightrag_graph_edges')
           AND tgname = ANY($1::text[]) AND tgenabled <> 'D') = {len(TRIGGERS)}"""
