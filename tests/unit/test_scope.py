"""Scope semantics (issue 2 item 8): AND across fields, OR within one; the guard fails closed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hexrag.core.errors import InvalidScope
from hexrag.core.model import Chunk, QueryParam, QueryScope
from hexrag.core.scope import (
    chunk_in_scope,
    parse_file_path,
    prefilter_match,
    record_sources,
    scope_values,
    sources_verdict,
)

FP = "product_id:p1:category:crm:source:a.md<SEP>product_id:p2:category:erp:source:b.md"


def test_file_path_segments() -> None:
    metas = parse_file_path(FP)
    assert [(m.product_id, m.category_id) for m in metas] == [("p1", "crm"), ("p2", "erp")]
    assert parse_file_path("plain/file.md") == []
    assert parse_file_path(None) == []


def test_scope_normalises_values() -> None:
    s = QueryScope(product_id="p1", category_id=["crm", "crm", "erp"])
    assert s.product_id == ("p1",)
    assert s.category_id == ("crm", "erp")
    assert QueryScope().is_empty


@pytest.mark.parametrize(
    "bad",
    [
        {"product": "p1"},
        {"product_id": ""},
        {"product_id": []},
        {"product_id": [1]},
        {"doc_ids": {"a": 1}},
        {"category_id": "  "},
    ],
)
def test_bad_scope_is_a_clear_error(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidScope):
        QueryScope(**bad)


def test_scope_via_param_mapping() -> None:
    p = QueryParam(scope={"product_id": ["p1", "p2"]})
    assert p.scope is not None and p.scope.product_id == ("p1", "p2")
    with pytest.raises(InvalidScope):
        QueryParam(scope={"nope": "x"})


def test_sources_and_across_fields_per_source() -> None:
    sources = record_sources({}, FP)
    assert sources_verdict(QueryScope(product_id="p1", category_id="crm"), sources) is True
    # p1 is only crm, p2 only erp: no single source satisfies both fields
    assert sources_verdict(QueryScope(product_id="p1", category_id="erp"), sources) is False
    assert sources_verdict(QueryScope(product_id=["p3", "p2"]), sources) is True
    # doc ids are unknown on an entity: the chunks must decide
    assert sources_verdict(QueryScope(doc_ids="d1"), sources) is None
    assert sources_verdict(QueryScope(product_id="p1"), []) is None


def test_prefilter_only_excludes_contradictions() -> None:
    values = scope_values({}, FP)
    assert prefilter_match(QueryScope(product_id="p2"), values)
    assert not prefilter_match(QueryScope(product_id="p9"), values)
    assert prefilter_match(QueryScope(doc_ids="d1"), values)  # unknown field: undecided here
    assert prefilter_match(None, values)


def test_first_class_metadata_wins_over_file_path() -> None:
    values = scope_values({"product_id": ["p7"], "category_id": "hr"}, FP)
    assert values["product_id"] == frozenset({"p7"})
    assert values["category_id"] == frozenset({"hr"})


def test_chunk_guard_fails_closed() -> None:
    c = Chunk(id="c", content="x", full_doc_id="d1", metadata={"product_id": "p1"})
    assert chunk_in_scope(QueryScope(product_id="p1"), c)
    assert chunk_in_scope(QueryScope(product_id="p1", doc_ids=["d1", "d2"]), c)
    assert not chunk_in_scope(QueryScope(category_id="crm"), c)  # unknown -> out
    assert not chunk_in_scope(QueryScope(product_id="p2"), c)
    assert chunk_in_scope(None, c)


products = st.sampled_from(["p1", "p2", "p3"])
cats = st.sampled_from(["crm", "erp"])


@given(
    st.lists(
        st.tuples(products | st.none(), cats | st.none(), st.sampled_from(["d1", "d2"])),
        max_size=12,
    ),
    st.lists(products, min_size=1, max_size=2),
    st.lists(cats, min_size=1, max_size=2) | st.none(),
)
def test_guard_admits_exactly_proven_chunks(rows, pids, cat_ids) -> None:  # type: ignore[no-untyped-def]
    scope = QueryScope(product_id=pids, category_id=cat_ids)
    for i, (p, c, d) in enumerate(rows):
        meta = {k: v for k, v in (("product_id", p), ("category_id", c)) if v is not None}
        chunk = Chunk(id=f"c{i}", content="t", full_doc_id=d, metadata=meta)
        expected = p in pids and (cat_ids is None or c in cat_ids)
        assert chunk_in_scope(scope, chunk) is expected
