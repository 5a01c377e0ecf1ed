"""Running a coroutine that never suspends (a memory adapter's or a memory-mapped file
read's) to completion without an event loop, so sync code and code inside a running loop
can both call it."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_now"]

_T = TypeVar("_T")


def run_now(coro: Coroutine[Any, Any, _T], suspended: str) -> _T:
    """``coro``'s result after one ``send``; if it suspends instead, it is closed and
    ``RuntimeError(suspended)`` raised (such a coroutine must not do I/O)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError(suspended)
