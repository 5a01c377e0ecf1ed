"""Retry timing shared by the HTTP model adapters (OpenAI-compatible, rerank): bounded
exponential backoff and the server's ``Retry-After``. Imports nothing of hexrag."""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RetryPolicy", "parse_retry_after"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded exponential backoff; a server's ``Retry-After`` wins but is capped.

    Attempt ``k`` (0-based) that failed waits ``min(backoff * 2**k, max_wait)``, or
    ``min(retry_after, max_wait)`` when the server said how long to wait.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_wait: float = 20.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based)."""
        if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
            return min(retry_after, self.max_wait)
        return min(self.backoff * (2.0**attempt), self.max_wait)


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None, milliseconds: bool = True
) -> float | None:
    """Seconds from ``retry-after-ms`` (unless ``milliseconds=False``) or ``retry-after``
    (seconds or an HTTP date), else None."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms") if milliseconds else None
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        when = email.utils.mktime_tz(parsed)
        return max(when - (time.time() if now is None else now), 0.0)
    return max(value, 0.0) if math.isfinite(value) else None
