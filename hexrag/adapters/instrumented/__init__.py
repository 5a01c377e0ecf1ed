"""Call counting around any port: how many round trips a query costs per store.

``Counting(store, name, ledger)`` forwards every attribute to ``store``; each awaited method call
(a coroutine-returning method of the port) is counted in ``ledger`` under ``(name, method)``.
Every port method is one round trip by contract, so the ledger is the round-trip count.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from typing import Any

__all__ = ["Counting", "RoundTrips"]


class RoundTrips(Counter[tuple[str, str]]):
    """Calls per ``(store, method)``."""

    def per_store(self) -> dict[str, int]:
        """Total calls per store name."""
        out: dict[str, int] = {}
        for (store, _), n in self.items():
            out[store] = out.get(store, 0) + n
        return dict(sorted(out.items()))


class Counting:
    """A transparent proxy that counts the coroutine methods called on ``inner``."""

    def __init__(self, inner: Any, name: str, ledger: RoundTrips) -> None:
        self._inner = inner
        self._name = name
        self._ledger = ledger

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._inner, attr)
        if inspect.iscoroutinefunction(value):

            @functools.wraps(value)
            async def counted(*args: Any, **kwargs: Any) -> Any:
                self._ledger[(self._name, attr)] += 1
                return await value(*args, **kwargs)

            return counted
        return value

    def __repr__(self) -> str:
        return f"Counting({self._inner!r}, {self._name!r})"
