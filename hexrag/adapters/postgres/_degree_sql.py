"""Stored node degrees for :class:`~hexrag.adapters.postgres.graph_store.PgGraphStore`.

A query ranks every edge it reads by ``degree(src) + degree(tgt)``; counting them at read time
costs two index scans per end (a local query at 10k entities: about 270 ends, 2 ms of its
3.4 ms edge statement). The degrees are kept instead in ``<prefix>_node_degrees`` (``name``
primary key, ``degree``), maintained inside every write by statement-level triggers on the
edges table with transition tables:

* each trigger adds, per endpoint name, the rows its statement inserted (``+1`` per end, a
  self-loop ``+2``) and takes away the rows it deleted; an update does both, so a relation
  moved to another pair moves its counts;
* it writes in name order (``INSERT ... ORDER BY name ON CONFLICT DO UPDATE``), so two
  concurrent writers lock the same rows in the same order and cannot deadlock each other;
* a name whose count falls to zero loses its row (a node without edges has no row: degree 0).

The trigger runs in the writing transaction, so readers see degrees and edges of the same
commits. A table set created before this layout gets the table, filled from the edges under
a lock that holds writers back, and the triggers, once, by the first adapter allowed to run
DDL; an adapter that may not (``create_tables=False``) on such a table set counts as before.
"""

from __future__ import annotations

__all__ = ["DEGREES_SUFFIX", "degree_ddl"]

#: the table's name after the prefix
DEGREES_SUFFIX = "node_degrees"

_ENDS = {
    "new": "SELECT src AS name, 1 AS c FROM hx_new UNION ALL SELECT tgt, 1 FROM hx_new",
    "old": "SELECT src AS name, -1 AS c FROM hx_old UNION ALL SELECT tgt, -1 FROM hx_old",
}


def _apply(degrees: str, ends: str) -> str:
    return f"""INSERT INTO {degrees} AS d (name, degree)
            SELECT x.name, sum(x.c) FROM ({ends}) AS x
            GROUP BY x.name HAVING sum(x.c) <> 0 ORDER BY x.name
            ON CONFLICT (name) DO UPDATE SET degree = d.degree + EXCLUDED.degree"""


def degree_ddl(
    *,
    edges: str,
    degrees: str,
    degrees_regclass: str,
    function: str,
    triggers: tuple[str, str, str],
) -> str:
    """The statements creating the degrees table, its trigger function and the edges
    table's three triggers (on insert, delete, update) when the table is missing (names are
    validated, quoted identifiers; ``degrees_regclass`` is the table's name as
    ``to_regclass`` reads it)."""
    on_insert, on_delete, on_update = triggers
    both = f"{_ENDS['new']} UNION ALL {_ENDS['old']}"
    return f"""
        DO $hx_degrees$
        BEGIN
            IF to_regclass('{degrees_regclass}') IS NULL THEN
                LOCK TABLE {edges} IN SHARE ROW EXCLUSIVE MODE;
                CREATE TABLE {degrees} (
                    name text COLLATE "C" PRIMARY KEY,
                    degree bigint NOT NULL
                );
                INSERT INTO {degrees} (name, degree)
                SELECT x.name, count(*) FROM (
                    SELECT src AS name FROM {edges} UNION ALL SELECT tgt FROM {edges}
                ) AS x GROUP BY x.name;
                CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $hx_fn$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        {_apply(degrees, _ENDS["new"])};
                    ELSIF TG_OP = 'DELETE' THEN
                        {_apply(degrees, _ENDS["old"])};
                        DELETE FROM {degrees} AS d USING (SELECT DISTINCT name FROM (
                            {_ENDS["old"]}) AS o) AS o
                        WHERE d.name = o.name AND d.degree = 0;
                    ELSE
                        {_apply(degrees, both)};
                        DELETE FROM {degrees} AS d USING (SELECT DISTINCT name FROM (
                            {_ENDS["old"]}) AS o) AS o
                        WHERE d.name = o.name AND d.degree = 0;
                    END IF;
                    RETURN NULL;
                END
                $hx_fn$;
                CREATE TRIGGER {on_insert} AFTER INSERT ON {edges}
                    REFERENCING NEW TABLE AS hx_new
                    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
                CREATE TRIGGER {on_delete} AFTER DELETE ON {edges}
                    REFERENCING OLD TABLE AS hx_old
                    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
                CREATE TRIGGER {on_update} AFTER UPDATE ON {edges}
                    REFERENCING OLD TABLE AS hx_old NEW TABLE AS hx_new
                    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
            END IF;
        END
        $hx_degrees$;
    """
