"""Stored JSON objects decoded with ``orjson`` when it gives exactly what ``json.loads`` gives.

Reading the chunks of one query decodes a few hundred JSON records; ``orjson`` (a dependency
of pymilvus, so present beside Milvus) does it about twice as fast as the standard library.
It is used only where its result is the standard library's:

* anything ``orjson`` refuses (``NaN``/``Infinity``, lone surrogate escapes, UTF-16/32 bytes,
  nesting deeper than 1024, numbers out of range...) is decoded by ``json.loads``, with its
  rules and its error message (:func:`~hexrag.adapters.redis.convert.decode_object`);
* ``orjson`` reads an integer outside ``[-2**63, 2**64)`` as a float where ``json.loads``
  keeps an ``int``: a decoded record holding a float of that size (however it was written)
  is decoded again by ``json.loads``.

Floats, strings, duplicate keys (the last wins) and everything else decode identically
(``tests/unit/test_redis_fastjson.py`` checks both paths against each other).
"""

from __future__ import annotations

from typing import Any

from hexrag.adapters.redis.convert import decode_object

__all__ = ["decode_objects", "fast_decode_object"]

_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson comes with pymilvus; Redis alone may lack it
    _orjson = None

_LOW = -float(2**63)
_HIGH = float(2**64)


def _has_huge_float(value: Any) -> bool:
    """A float outside ``(-2**63, 2**64)`` anywhere in ``value`` (maybe a big integer)."""
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


def fast_decode_object(raw: bytes | str, *, key: str) -> dict[str, Any]:
    """``decode_object(raw, key=key)``, through ``orjson`` when that is the same."""
    if _orjson is not None:
        try:
            value = _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
        else:
            if type(value) is dict and not _has_huge_float(value):
                return value
    return decode_object(raw, key=key)


def decode_objects(raw: list[Any], keys: list[str]) -> list[dict[str, Any] | None]:
    """:func:`fast_decode_object` of each value (``None`` stays ``None``); ``keys`` name them."""
    return [None if value is None else fast_decode_object(value, key=k)
            for k, value in zip(keys, raw, strict=True)]
