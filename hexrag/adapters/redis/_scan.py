"""One page of a Redis namespace for the scan capability (:mod:`hexrag.ports.scan`).

A page is one ``SCAN`` call (``MATCH <workspace>:<namespace>:*``, ``COUNT`` at least the
page size) and one ``MGET`` of the keys it returned: two round trips. ``SCAN`` may return
more keys than ``limit``; the page then takes the first ``limit`` of the batch in key order
and its cursor ``"<scan cursor>:<last key>"`` repeats the same ``SCAN`` call and takes the
batch's keys after the last one listed, so keys deleted or added in between do not shift the
rest. ``SCAN``'s own guarantee carries over: without writes every key is listed once; with
concurrent writes every key present for the whole scan is listed (a key may come twice when
the keyspace is rehashed; the one exception is a batch split across pages while the table
*shrinks*, when keys from other buckets can join it behind the last key listed). Pages may
be empty while keys remain.
"""

from __future__ import annotations

from typing import Any

from hexrag.adapters.redis._base import SCAN_COUNT, RedisNamespace, translate_errors
from hexrag.domain.errors import InvalidQuery
from hexrag.ports.scan import check_scan_limit


def _parse(cursor: str | None) -> tuple[int, str | None]:
    if cursor is None:
        return 0, None
    head, sep, after = cursor.partition(":")
    try:
        if not sep:
            raise ValueError(cursor)
        return int(head), (after or None)
    except ValueError:
        raise InvalidQuery(f"not a scan cursor of this store: {cursor[:40]!r}") from None


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


async def scan_page(
    ns: RedisNamespace, cursor: str | None, limit: int, action: str
) -> tuple[list[tuple[str, Any]], str | None]:
    """``(id, raw value)`` pairs of one page of ``ns`` and the next cursor (``None``: done)."""
    check_scan_limit(limit)
    scan_cursor, after = _parse(cursor)
    prefix = ns.key("")
    with translate_errors(action):
        next_scan, batch = await ns.client.scan(
            cursor=scan_cursor, match=prefix + "*", count=max(limit, SCAN_COUNT)
        )
        ids = sorted({_text(k)[len(prefix) :] for k in batch})
        if after is not None:
            ids = [i for i in ids if i > after]
        page = ids[:limit]
        values = list(await ns.client.mget(ns.keys(page))) if page else []
    if len(ids) > limit:
        nxt: str | None = f"{scan_cursor}:{page[-1]}"
    elif int(next_scan) == 0:
        nxt = None
    else:
        nxt = f"{int(next_scan)}:"
    items = [(i, v) for i, v in zip(page, values, strict=True) if v is not None]
    return items, nxt
