"""SQL building of the PostgreSQL adapters, without a server: identifiers, scope, edge batches."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hexrag.adapters.postgres import PgCache, PgChunkStore, PgGraphStore, PgVectorIndex
from hexrag.adapters.postgres._sql import TableNames, quote_ident, validate_identifier
from hexrag.adapters.postgres.graph_store import plan_edge_batch
from hexrag.adapters.postgres.vector_index import scope_condition
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import QueryScope, Relation


class _NoPool:
    """Stands in for a pool in constructor-only tests: any use would fail loudly."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"constructing an adapter must not touch the pool ({name})")


@pytest.mark.parametrize("name", ["hexrag", "_x", "t0", "a" * 30, "hx_0123456789ab"])
def test_valid_identifiers(name: str) -> None:
    assert validate_identifier(name, what="table_prefix") == name
    assert quote_ident(name) == f'"{name}"'


@pytest.mark.parametrize(
    "name",
    ["", "Hexrag", "1abc", "a-b", "a b", 'a"b', "a;drop table x", "a" * 31, "é", "a.b", None, 3],
)
def test_invalid_identifiers_are_refused(name: object) -> None:
    with pytest.raises(ConfigurationError, match="postgres"):
        validate_identifier(name, what="schema")


def test_table_names_are_quoted_and_qualified() -> None:
    names = TableNames(schema="s1", table_prefix="p")
    assert names.qualified("chunks") == '"s1"."p_chunks"'
    assert TableNames(schema=None, table_prefix="p").qualified("nodes") == '"p_nodes"'
    assert names.index("edges_src") == '"p_edges_src"'


@pytest.mark.parametrize(
    "make",
    [
        lambda: PgChunkStore(_NoPool(), table_prefix='x"; DROP TABLE y; --'),
        lambda: PgGraphStore(_NoPool(), schema="Public"),
        lambda: PgCache(_NoPool(), namespace=""),
        lambda: PgVectorIndex(_NoPool(), namespace="docs", dim=4),  # type: ignore[arg-type]
        lambda: PgVectorIndex(_NoPool(), namespace="chunks", dim=0),
        lambda: PgVectorIndex(_NoPool(), namespace="chunks", dim=4, cosine_threshold=float("nan")),
        lambda: PgVectorIndex(_NoPool(), namespace="chunks", dim=4, ef_search=5000),
        lambda: PgChunkStore(_NoPool(), timeout=0),
    ],
)
def test_bad_options_raise_configuration_error(make: object) -> None:
    with pytest.raises(ConfigurationError):
        make()  # type: ignore[operator]


def test_constructing_opens_no_connection() -> None:
    index = PgVectorIndex(_NoPool(), namespace="entities", dim=8, schema="s", table_prefix="p")
    assert index.table == '"s"."p_vdb_entities"'
    assert (index.namespace, index.dim, index.cosine_threshold) == ("entities", 8, 0.2)
    PgGraphStore(_NoPool())
    PgChunkStore(_NoPool())
    PgCache(_NoPool())


def test_scope_condition_empty() -> None:
    assert scope_condition(None, 4) == ("TRUE", [])
    assert scope_condition(QueryScope(), 4) == ("TRUE", [])


def test_scope_condition_shape() -> None:
    sql, params = scope_condition(QueryScope(product_id=["p1", "p2"], doc_ids="d"), 4)
    assert sql == (
        "(cardinality(product_ids) = 0 OR product_ids && $4::text[]) AND "
        "(cardinality(doc_ids) = 0 OR doc_ids && $5::text[])"
    )
    assert params == [["p1", "p2"], ["d"]]


_scope_values = st.lists(  # NUL is no valid scope value (QueryScope refuses it)
    st.text(min_size=1).filter(lambda s: s.strip() != "" and "\x00" not in s),
    min_size=1,
    max_size=3,
)


@given(product=_scope_values, category=_scope_values, docs=_scope_values)
def test_scope_values_never_reach_the_sql_text(
    product: list[str], category: list[str], docs: list[str]
) -> None:
    """Whatever the values (quotes, backslashes, %, 'or 1==1'), the SQL is fixed text."""
    scope = QueryScope(product_id=product, category_id=category, doc_ids=docs)
    sql, params = scope_condition(scope, 4)
    skeleton = re.sub(r"\$\d+", "$n", sql)
    assert skeleton == " AND ".join(
        f"(cardinality({c}) = 0 OR {c} && $n::text[])"
        for c in ("product_ids", "category_ids", "doc_ids")
    )
    assert params == [list(dict.fromkeys(v)) for v in (product, category, docs)]


def _rel(rid: str, a: str, b: str, desc: str = "") -> Relation:
    return Relation(id=rid, src_id=a, tgt_id=b, description=desc)


def test_plan_edge_batch_same_pair_replaces_in_place() -> None:
    rows = plan_edge_batch(
        [_rel("r1", "A", "B", "v1"), _rel("r2", "A", "C"), _rel("r1", "B", "A", "v2")]
    )
    assert [(r["id"], r["ord"], r["fresh"]) for r in rows] == [("r1", 0, False), ("r2", 1, False)]
    assert rows[0]["description"] == "v2" and (rows[0]["src"], rows[0]["tgt"]) == ("B", "A")


def test_plan_edge_batch_pair_change_moves_and_marks_fresh() -> None:
    rows = plan_edge_batch([_rel("r1", "A", "B"), _rel("r2", "A", "C"), _rel("r1", "A", "D")])
    assert [(r["id"], r["ord"], r["fresh"], r["pb"]) for r in rows] == [
        ("r2", 0, False, "C"),
        ("r1", 1, True, "D"),
    ]
    # moved away and back: still a new place in the order
    rows = plan_edge_batch([_rel("r1", "A", "D"), _rel("r1", "A", "B"), _rel("r1", "B", "A")])
    assert [(r["id"], r["fresh"]) for r in rows] == [("r1", True)]
