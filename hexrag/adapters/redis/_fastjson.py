"""Stored JSON objects decoded with ``orjson`` when it gives exactly what ``json.loads`` gives.

Reading the chunks of one query decodes a few hundred JSON records; ``orjson`` (a dependency
of pymilvus, so present beside Milvus) does it about twice as fast as the standard library.
It is used only where its result is the standard library's:

* anything ``orjson`` refuses (``NaN``/``Infinity``, lone surrogate escapes, UTF-16/32 bytes,
  nesting deeper than 1024, numbers out of range...) is decoded by ``json.loads``, with its
  rules and its error message (:func:`~hexrag.adapters.redis.convert.decode_object`);
* ``orjson`` reads an integer of more than 64 bits as a float where ``json.loads`` keeps an
  ``int``: a record holding a run of 19 or more digits (anywhere, strings included) goes to
  ``json.loads`` too.

Floats, strings, duplicate keys (the last wins) and everything else decode identically
(``tests/unit/test_redis_fastjson.py`` checks both paths against each other).
"""

from __future__ import annotations

import re
from typing import Any

from hexrag.adapters.redis.convert import decode_object

__all__ = ["decode_objects", "fast_decode_object"]

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson comes with pymilvus; Redis alone may lack it
    _orjson = None

_LONG_DIGITS = re.compile(rb"\d{19}")
_LONG_DIGITS_STR = re.compile(r"\d{19}")


def fast_decode_object(raw: bytes | str, *, key: str) -> dict[str, Any]:
    """``decode_object(raw, key=key)``, through ``orjson`` when that is the same."""
    if _orjson is not None:
        long_digits = _LONG_DIGITS if isinstance(raw, bytes) else _LONG_DIGITS_STR
        if long_digits.search(raw) is None:  # type: ignore[arg-type]
            try:
                value = _orjson.loads(raw)
            except _orjson.JSONDecodeError:
                pass
            else:
                if isinstance(value, dict):
                    return value
    return decode_object(raw, key=key)


def decode_objects(raw: list[Any], keys: list[str]) -> list[dict[str, Any] | None]:
    """:func:`fast_decode_object` of each value (``None`` stays ``None``); ``keys`` name them."""
    return [None if value is None else fast_decode_object(value, key=k)
            for k, value in zip(keys, raw, strict=True)]
