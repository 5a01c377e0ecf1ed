"""One round trip for a few whole chunks and the presence of many (``MGET`` + ``EXISTS`` in
one pipeline): the Redis side of :class:`~hexrag.ports.chunk_presence.ChunksWithPresence`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hexrag.adapters.redis._base import RedisNamespace, translate_errors

__all__ = ["mget_and_presence"]


async def mget_and_presence(
    ns: RedisNamespace, ids: Sequence[str], probe: Sequence[str], action: str
) -> tuple[list[Any], set[str]]:
    """The raw values of ``ids`` (request order, ``None`` when absent) and the ids of
    ``probe`` whose key exists; one pipelined round trip (no transaction)."""
    ids = list(ids)
    probed = [i for i in dict.fromkeys(probe)]
    if not ids and not probed:
        return [], set()
    with translate_errors(action):
        pipe = ns.client.pipeline(transaction=False)
        if ids:
            pipe.mget(ns.keys(ids))
        for key in ns.keys(probed):
            pipe.exists(key)
        replies = await pipe.execute()
    raw: list[Any] = list(replies[0]) if ids else []
    flags = replies[1:] if ids else replies
    present = {i for i, n in zip(probed, flags, strict=True) if n}
    return raw, present
