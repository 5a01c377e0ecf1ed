"""One timed call, as ``timeit`` times: the garbage of earlier calls collected first, the
collector off while the clock runs.

Every bench that compares hexrag with LightRAG side by side in one process times both sides
with :func:`timed_call`: what one side allocated is then never collected inside the other
side's timing (LightRAG's queries allocate far more than hexrag's, so without this a
collection it triggers tends to land in hexrag's next query). Both sides are treated alike.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["timed_call"]

_T = TypeVar("_T")


async def timed_call(call: Callable[[], Awaitable[_T]]) -> tuple[_T, float]:
    """``call()``'s result and its wall time in seconds, measured with the collector off
    after a collection (the collector's state is restored after)."""
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    t0 = time.perf_counter()
    try:
        result = await call()
        return result, time.perf_counter() - t0
    finally:
        if was_on:
            gc.enable()
