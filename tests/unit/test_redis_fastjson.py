"""The orjson decoding path of the Redis adapters gives exactly what ``json.loads`` gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters.redis._fastjson import decode_objects, fast_decode_object
from hexrag.adapters.redis.convert import decode_object
from hexrag.core.errors import BackendError
from tests.unit.test_fastjson import _same, _values
from tests.unit.test_fastjson import pytestmark as pytestmark  # the same skip: no orjson

_objects = st.dictionaries(st.text(), _values, max_size=6)


@settings(max_examples=400, deadline=None)
@given(obj=_objects, ascii_=st.booleans(), as_bytes=st.booleans())
def test_fast_path_equals_json_loads(obj: dict[str, Any], ascii_: bool, as_bytes: bool) -> None:
    text = json.dumps(obj, ensure_ascii=ascii_)
    raw: bytes | str = text
    if as_bytes:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate cannot be UTF-8; Redis would not hold it
            raw = text
    assert _same(fast_decode_object(raw, key="k"), json.loads(text))


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": NaN, "b": Infinity, "c": -Infinity}',  # orjson refuses these
        b'{"s": "\\ud800 lone"}',  # lone surrogate escape
        b'{"big": 123456789012345678901234567890}',  # orjson would give a float
        b'{"neg": -98765432109876543210, "f": 1.5}',
        b'{"a": 1, "a": 2}',  # duplicate keys: the last wins
        '{"x": "\u00e9", "n": 1e400}'.encode(),
        json.dumps({"x": "y"}).encode("utf-16"),  # json.loads detects UTF-16
        b'{"deep": ' + b"[" * 200 + b"]" * 200 + b"}",
    ],
)
def test_edge_cases_decode_as_json_loads(raw: bytes) -> None:
    assert _same(fast_decode_object(raw, key="k"), json.loads(raw))


@pytest.mark.parametrize("raw", [b"[1, 2]", b"not json", b'"text"', b"{\"a\": 1"])
def test_refused_values_raise_as_before(raw: bytes) -> None:
    with pytest.raises(BackendError) as fast:
        fast_decode_object(raw, key="ns:k")
    with pytest.raises(BackendError) as slow:
        decode_object(raw, key="ns:k")
    assert str(fast.value) == str(slow.value)


def test_decode_objects_keeps_missing() -> None:
    assert decode_objects([b'{"a": 1}', None], ["x", "y"]) == [{"a": 1}, None]
