"""The adapters' shared JSON decoder gives exactly what ``json.loads`` gives: the same value,
or the same exception."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hexrag.adapters import _fastjson
from hexrag.adapters._fastjson import loads

pytestmark = pytest.mark.skipif(_fastjson._orjson is None, reason="orjson is not installed")

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN, signed zeros and int/float told apart, keys in order."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=500, deadline=None)
@given(value=_values, ascii_=st.booleans(), as_bytes=st.booleans(), indent=st.booleans())
def test_equals_json_loads(value: Any, ascii_: bool, as_bytes: bool, indent: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_, indent=2 if indent else None)
    raw: bytes | str = text
    if as_bytes:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate cannot be UTF-8
            raw = text
    assert _same(loads(raw), json.loads(raw))


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": NaN, "b": Infinity, "c": -Infinity}',  # orjson refuses these
        '{"s": "\\ud800 lone"}',  # lone surrogate escape
        '{"s": "\ud800 raw"}',  # a str holding a lone surrogate
        '{"big": 123456789012345678901234567890}',  # orjson would give a float
        '{"neg": -98765432109876543210, "f": 1.5}',
        "[18446744073709551616, 9223372036854775807, -9223372036854775808]",
        '{"a": 1, "b": 0, "a": 2}',  # duplicate keys: the last wins at the first's place
        '{"x": "\u00e9", "n": 1e400}',
        '{"z": -0, "f": -0.0, "e": 1E5}',
        '  {"padded": true}\n',
        '"just a string"',
        "12",
        "null",
        "[" * 200 + "]" * 200,
    ],
)
def test_edge_cases_decode_as_json_loads(raw: str) -> None:
    assert _same(loads(raw), json.loads(raw))


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps({"x": "y"}).encode("utf-16"),  # json.loads detects UTF-16
        b'\xef\xbb\xbf{"bom": 1}',  # json.loads skips a UTF-8 BOM in bytes
        b'{"utf8": "\xc3\xa9"}',
    ],
)
def test_bytes_decode_as_json_loads(raw: bytes) -> None:
    assert _same(loads(raw), json.loads(raw))


@pytest.mark.parametrize(
    "raw", ["not json", '{"a": 1', "\ufeff{}", "", "[1,]", '{"a" 1}', b"\xff\xfe\xfa"]
)
def test_refused_values_raise_as_json_loads(raw: str | bytes) -> None:
    with pytest.raises(Exception) as fast:
        loads(raw)
    with pytest.raises(Exception) as slow:
        json.loads(raw)
    assert type(fast.value) is type(slow.value)
    assert str(fast.value) == str(slow.value)


def test_deep_nesting_raises_as_json_loads() -> None:
    raw = "[" * 100_000 + "]" * 100_000
    with pytest.raises(RecursionError):
        json.loads(raw)
    with pytest.raises(RecursionError):
        loads(raw)
