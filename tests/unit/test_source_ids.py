"""The one source-id parser (issue 2 item 6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hexrag.core.query.source_ids import parse_pg_array, parse_source_ids, split_lightrag


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ("", []),
        ("chunk-a", ["chunk-a"]),
        ("chunk-a<SEP>chunk-b<SEP>chunk-a", ["chunk-a", "chunk-b"]),
        (" chunk-a <SEP><SEP> chunk-b ", ["chunk-a", "chunk-b"]),
        ("{chunk-a,chunk-b}", ["chunk-a", "chunk-b"]),
        ("{}", []),
        ("{ chunk-a , chunk-b }", ["chunk-a", "chunk-b"]),
        ('{"chunk a","x\\"y",chunk-c}', ["chunk a", 'x"y', "chunk-c"]),
        ('{"a,b",NULL}', ["a,b"]),
        (["chunk-1", "chunk-10", "chunk-1"], ["chunk-1", "chunk-10"]),
        (("{chunk-x}", "chunk-y<SEP>chunk-x"), ["chunk-x", "chunk-y"]),
    ],
)
def test_forms(value: object, expected: list[str]) -> None:
    assert parse_source_ids(value) == expected


def test_whole_id_matching() -> None:
    ids = parse_source_ids("chunk-10<SEP>xchunk-1")
    assert "chunk-1" not in ids


def test_split_lightrag_keeps_repeats() -> None:
    assert split_lightrag("a<SEP>b<SEP>a") == ["a", "b", "a"]


def test_bad_array_text() -> None:
    with pytest.raises(ValueError):
        parse_pg_array("chunk-a")


ids = st.lists(st.from_regex(r"chunk-[a-z0-9]{1,6}", fullmatch=True), max_size=8)


@given(ids)
def test_forms_agree(values: list[str]) -> None:
    expected = list(dict.fromkeys(values))
    assert parse_source_ids("<SEP>".join(values)) == expected
    assert parse_source_ids("{" + ",".join(values) + "}") == expected
    assert parse_source_ids(values) == expected


_PIECE = st.text(
    alphabet=st.sampled_from(["a", "-", "1", " ", "\t", "\n", "\x0b", "\x1c", "\x1f", "é", "\xa0"]),
    max_size=6,
)


@given(st.lists(_PIECE, max_size=6))
def test_split_lightrag_equals_lightrag_split_on_sep(pieces: list[str]) -> None:
    """The whitespace fast path agrees with ``split_string_by_multi_markers(v, ["<SEP>"])``."""
    value = "<SEP>".join(pieces)
    expected = [p.strip() for p in value.split("<SEP>") if p.strip()]
    assert split_lightrag(value) == expected
