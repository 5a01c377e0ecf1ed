"""``json.loads``, through ``orjson`` wherever that gives exactly the same value.

A query reads hundreds of JSON texts from a store (the ``properties`` of LightRAG's graph rows
in PostgreSQL, the chunk records in Redis); ``orjson`` decodes them three to four times as
fast as the standard library. :func:`loads` uses it only where its result is the standard
library's:

* anything ``orjson`` refuses (``NaN``/``Infinity``, lone surrogates, a BOM, UTF-16/32 bytes,
  nesting deeper than 1024, numbers out of range...) is decoded by ``json.loads``, with its
  rules, its value and its exception;
* ``orjson`` reads an integer outside ``[-2**63, 2**64)`` as a float where ``json.loads``
  keeps an ``int``: a decoded value holding a float of that size (however it was written) is
  decoded again by ``json.loads``.

Floats, strings, duplicate keys (the last wins, at the first one's place) and everything else
decode identically (``tests/unit/test_fastjson.py`` checks both paths against each other).
Without ``orjson`` installed, :func:`loads` is ``json.loads``. It imports nothing of hexrag,
so any adapter package may use it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["loads"]

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson comes with the postgres, redis, milvus extras
    _orjson = None

_LOW = -float(2**63)
_HIGH = float(2**64)


#: Types that can hold no float: a container of nothing else needs no closer look.
_NO_FLOAT = frozenset({str, int, bool, type(None)})


def _has_huge_float(value: Any) -> bool:
    """A float outside ``(-2**63, 2**64)`` anywhere in ``value`` (maybe a big integer)."""
    kind = type(value)
    if kind is dict:
        if _NO_FLOAT.issuperset(map(type, value.values())):
            return False  # the common flat record, checked at C speed
    elif kind is list:
        if _NO_FLOAT.issuperset(map(type, value)):
            return False
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float and not _LOW < item < _HIGH:
            return True
    return False


def loads(raw: str | bytes | bytearray) -> Any:
    """``json.loads(raw)``: the same value, or the same exception."""
    if _orjson is not None:
        try:
            value = _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
        else:
            if not _has_huge_float(value):
                return value
    return json.loads(raw)
