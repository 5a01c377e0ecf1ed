"""``decode_json``'s shortcut for JSON strings without escapes gives what the JSON parser
gives, for any text PostgreSQL can hand back (``jsonb::text`` escapes only ``"``, ``\\`` and
control characters, as ``json.dumps(..., ensure_ascii=False)`` does)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from hexrag.adapters.postgres._rows import decode_json

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=8,
)


@given(st.text())
def test_any_string_decodes_as_the_parser_does(text: str) -> None:
    encoded = json.dumps(text, ensure_ascii=False)
    assert decode_json(encoded) == json.loads(encoded) == text


@given(_json)
def test_any_json_value_decodes_as_the_parser_does(value: object) -> None:
    encoded = json.dumps(value, ensure_ascii=False)
    assert decode_json(encoded) == json.loads(encoded)


def test_edge_forms() -> None:
    assert decode_json("{}") == {}
    assert decode_json('""') == ""
    assert decode_json('"a<SEP>b"') == "a<SEP>b"
    assert decode_json('"a\\"b"') == 'a"b'
    assert decode_json(None) is None
    assert decode_json({"x": 1}) == {"x": 1}
