"""Milvus filter building, checked against Milvus Lite's own expression tokenizer/parser.

No server: the filter module is pure, and Milvus Lite's parser is a real component that can
run in-process. The same values go through real queries in
``tests/integration/test_milvus_injection.py``.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hexrag.adapters.milvus._filter import ids_filter, quote_string, scope_filter
from hexrag.core.model import QueryScope
from hexrag.testing.corpus import NASTY_IDS, NASTY_STRINGS

tokens = pytest.importorskip(
    "milvus_lite.search.filter.tokens", reason="milvus-lite is needed to parse expressions"
)
filters = pytest.importorskip("milvus_lite.search.filter")

ATTACKS = (
    *NASTY_STRINGS,
    *NASTY_IDS,
    '"or 1==1',
    "') or (1==1",
    '") or (1==1',
    '"] or id != ["',
    "\\",
    '\\"',
    '\\\\"',
    "%",
    "_",
    "%_%",
    "\n",
    "\r\n",
    "\t",
    "\x00\x01\x7f",
    "a' or 'x'=='x",
    "produit-é 中文 🚀",
    "",
)

# Text Milvus can store: any code point but lone surrogates (not valid UTF-8).
texts = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)


def _single_string_token(literal: str) -> str:
    toks = tokens.tokenize(literal)
    assert [t.kind for t in toks] == [tokens.TokenKind.STRING, tokens.TokenKind.EOF], literal
    value = toks[0].value
    assert isinstance(value, str)
    return value


@pytest.mark.parametrize("value", ATTACKS)
def test_quote_string_denotes_exactly_the_value(value: str) -> None:
    assert _single_string_token(quote_string(value)) == value


@given(texts)
def test_quote_string_roundtrips_any_text(value: str) -> None:
    assert _single_string_token(quote_string(value)) == value


def test_quote_string_escapes_only_what_it_must() -> None:
    assert quote_string('a"b') == '"a\\"b"'
    assert quote_string("a\\b") == '"a\\\\b"'
    assert quote_string("a\nb\rc\td") == '"a\\nb\\rc\\td"'
    # % and _ are literal outside `like`, quotes of the other kind need nothing
    assert quote_string("100%_x'y") == '"100%_x\'y"'
    assert quote_string("é中🚀") == '"é中🚀"'


def test_quote_string_refuses_non_strings() -> None:
    with pytest.raises(TypeError):
        quote_string(1)  # type: ignore[arg-type]


def test_no_scope_means_no_filter() -> None:
    assert scope_filter(None) == ""
    assert scope_filter(QueryScope()) == ""


def test_scope_filter_shape() -> None:
    expr = scope_filter(QueryScope(product_id=["p1", "p2"], category_id="crm", doc_ids="d"))
    assert expr == (
        '(array_length(product_ids) == 0 or array_contains_any(product_ids, ["p1", "p2"]))'
        ' and (array_length(category_ids) == 0 or array_contains_any(category_ids, ["crm"]))'
        ' and (array_length(doc_ids) == 0 or array_contains_any(doc_ids, ["d"]))'
    )


def _parse(expr: str) -> object:
    return filters.parse_expr(expr)


def _nodes(node: object) -> list[object]:
    """Every AST node of a parsed Milvus Lite expression, depth first."""
    out = [node]
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        child = getattr(node, f.name)
        children = child if isinstance(child, (list, tuple)) else [child]
        for c in children:
            if dataclasses.is_dataclass(c):
                out.extend(_nodes(c))
    return out


def _kinds(tree: object) -> list[str]:
    return [type(n).__name__ for n in _nodes(tree)]


def _strings(tree: object) -> list[str]:
    return [n.value for n in _nodes(tree) if type(n).__name__ == "StringLit"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", [a for a in ATTACKS if a.strip() and "\x00" not in a])
def test_attack_scope_values_stay_one_literal(value: str) -> None:
    """An attack value adds no operator: the AST is the same as for a harmless value."""
    tree = _parse(scope_filter(QueryScope(product_id=[value, "p1"])))
    harmless = _parse(scope_filter(QueryScope(product_id=["harmless", "p1"])))
    assert _kinds(tree) == _kinds(harmless)
    assert _strings(tree) == [value, "p1"]


@given(st.lists(texts, min_size=1, max_size=5))
def test_ids_filter_parses_to_the_distinct_ids(ids: list[str]) -> None:
    expr = ids_filter(ids)
    toks = tokens.tokenize(expr)
    strings = [t.value for t in toks if t.kind == tokens.TokenKind.STRING]
    assert strings == list(dict.fromkeys(ids))
    kinds = [t.kind for t in toks if t.kind != tokens.TokenKind.STRING]
    assert kinds[:3] == [tokens.TokenKind.IDENT, tokens.TokenKind.IN, tokens.TokenKind.LBRACKET]
    assert kinds[-2:] == [tokens.TokenKind.RBRACKET, tokens.TokenKind.EOF]
    assert set(kinds[3:-2]) <= {tokens.TokenKind.COMMA}
    _parse(expr)
