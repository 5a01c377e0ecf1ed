"""Stored JSON objects decoded with :func:`hexrag.adapters._fastjson.loads` (``orjson`` where
it gives exactly what ``json.loads`` gives).

Reading the chunks of one query decodes a few hundred JSON records. A value that is not a
JSON object, or not JSON, is decoded again by
:func:`~hexrag.adapters.redis.convert.decode_object`, which raises its error
(``tests/unit/test_redis_fastjson.py`` checks both paths against each other).
"""

from __future__ import annotations

from typing import Any

from hexrag.adapters._fastjson import loads
from hexrag.adapters.redis.convert import decode_object

__all__ = ["decode_objects", "fast_decode_object"]


def fast_decode_object(raw: bytes | str, *, key: str) -> dict[str, Any]:
    """``decode_object(raw, key=key)``, through the fast decoder."""
    try:
        value = loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        value = None
    if isinstance(value, dict):
        return value
    return decode_object(raw, key=key)


def decode_objects(raw: list[Any], keys: list[str]) -> list[dict[str, Any] | None]:
    """:func:`fast_decode_object` of each value (``None`` stays ``None``); ``keys`` name them."""
    return [
        None if value is None else fast_decode_object(value, key=k)
        for k, value in zip(keys, raw, strict=True)
    ]
