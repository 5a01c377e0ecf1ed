"""One round trip for a few whole chunks and the presence of many: the Redis side of
:class:`~hexrag.ports.chunk_presence.ChunksWithPresence`.

``MGET`` of the whole ones and, in the same pipeline, one ``EVAL`` of a read-only script that
answers ``EXISTS`` for every probed key (one command and one array reply: a pipeline of one
``EXISTS`` per key costs more client time than reading every value). A server that refuses
scripts gets the ``EXISTS`` pipeline instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hexrag.adapters.redis._base import RedisNamespace, translate_errors

__all__ = ["EXISTS_SCRIPT", "mget_and_presence"]

EXISTS_SCRIPT = (
    "local out = {} for i, k in ipairs(KEYS) do out[i] = redis.call('EXISTS', k) end "
    "return out"
)


async def mget_and_presence(
    ns: RedisNamespace, ids: Sequence[str], probe: Sequence[str], action: str
) -> tuple[list[Any], set[str]]:
    """The raw values of ``ids`` (request order, ``None`` when absent) and the ids of
    ``probe`` whose key exists; one pipelined round trip (no transaction)."""
    from redis.exceptions import ResponseError

    ids = list(ids)
    probed = list(dict.fromkeys(probe))
    if not ids and not probed:
        return [], set()
    keys = ns.keys(probed)
    with translate_errors(action):
        pipe = ns.client.pipeline(transaction=False)
        if ids:
            pipe.mget(ns.keys(ids))
        if keys:
            pipe.eval(EXISTS_SCRIPT, len(keys), *keys)
        try:
            replies = await pipe.execute()
            flags = list(replies[-1]) if keys else []
        except ResponseError:  # scripting refused: one EXISTS per key
            pipe = ns.client.pipeline(transaction=False)
            if ids:
                pipe.mget(ns.keys(ids))
            for key in keys:
                pipe.exists(key)
            replies = await pipe.execute()
            flags = replies[1:] if ids else replies
    raw: list[Any] = list(replies[0]) if ids else []
    present = {i for i, n in zip(probed, flags, strict=True) if n}
    return raw, present
