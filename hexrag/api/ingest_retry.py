"""When the server's document pipeline tries a failed document again.

A document whose ingestion failed because a store or model server could not be reached
(:class:`~hexrag.core.errors.BackendUnavailable`) or did not answer in time
(:class:`~hexrag.core.errors.BackendTimeout`) is queued again after a delay that doubles from
``first_delay`` up to ``max_delay`` seconds, at most ``attempts`` times in all; so it becomes
``processed`` once the store is back, without anyone re-sending it. Any other failure (the
LLM's answer, an invalid document, a configuration error) stays ``failed`` at once: trying it
again would fail the same way. Environment (read when the server starts):

=================================  =========  ===================================================
variable                           default    meaning
=================================  =========  ===================================================
``INGEST_RETRY_ATTEMPTS``          10         tries of one document in all (1: never retried)
``INGEST_RETRY_FIRST_DELAY``       1          seconds before the first retry
``INGEST_RETRY_MAX_DELAY``         60         the longest wait between two tries
=================================  =========  ===================================================

With the defaults a document is tried for about 5 minutes (1+2+4+...+60+60+60 s).
``hexrag ingest --retry-failed`` ingests the stack's failed documents again from the command
line (for instance after the last retry was spent).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hexrag.core.errors import BackendTimeout, BackendUnavailable, ConfigurationError

__all__ = ["IngestRetry", "RetryBook", "is_transient"]


def is_transient(exc: BaseException) -> bool:
    """True for a failure that may pass when the store comes back (unavailable, timed out)."""
    return isinstance(exc, (BackendUnavailable, BackendTimeout))


@dataclass(frozen=True)
class IngestRetry:
    """Backoff of the document pipeline's retries (see the module docstring)."""

    attempts: int = 10
    first_delay: float = 1.0
    max_delay: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.first_delay <= 0 or self.max_delay < self.first_delay:
            raise ConfigurationError(
                "ingestion retries: INGEST_RETRY_ATTEMPTS must be at least 1 and "
                "0 < INGEST_RETRY_FIRST_DELAY <= INGEST_RETRY_MAX_DELAY, got "
                f"{self.attempts}, {self.first_delay}, {self.max_delay}"
            )

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed try (1, 2, ...)."""
        return float(min(self.max_delay, self.first_delay * 2 ** min(failures - 1, 60)))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> IngestRetry:
        """The policy from ``INGEST_RETRY_*`` (see the module docstring); a value that is
        not a number is a :class:`~hexrag.core.errors.ConfigurationError` naming it."""
        env = os.environ if environ is None else environ
        values: dict[str, float] = {}
        for name, key, default in (("attempts", "INGEST_RETRY_ATTEMPTS", cls.attempts),
                                   ("first_delay", "INGEST_RETRY_FIRST_DELAY", cls.first_delay),
                                   ("max_delay", "INGEST_RETRY_MAX_DELAY", cls.max_delay)):
            raw = env.get(key)
            try:
                values[name] = float(default) if raw is None or not raw.strip() else float(raw)
            except ValueError:
                raise ConfigurationError(f"{key} must be a number, got {str(raw)[:40]!r}") from None
            if values[name] != values[name] or values[name] in (float("inf"), float("-inf")):
                raise ConfigurationError(f"{key} must be a finite number, got {raw!r}")
        return cls(int(values["attempts"]), values["first_delay"], values["max_delay"])


@dataclass
class RetryBook:
    """The documents waiting for a retry: failed tries so far, when the next one starts."""

    policy: IngestRetry = field(default_factory=IngestRetry.from_env)
    failures: dict[str, int] = field(default_factory=dict)
    due: dict[str, float] = field(default_factory=dict)  # doc id -> time.monotonic() of the retry
    _timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)

    def after_failure(self, doc_id: str, exc: BaseException,
                      requeue: Callable[[str], None]) -> str | None:
        """Record a failed try of ``doc_id``; when ``exc`` is transient and tries are left,
        call ``requeue(doc_id)`` after the backoff delay. Returns a short note for the
        document's error message and the pipeline's history (``None``: not retried)."""
        if not is_transient(exc):
            self.forget(doc_id)
            return None
        n = self.failures.get(doc_id, 0) + 1
        attempts = self.policy.attempts
        if n >= attempts:
            self.forget(doc_id)
            return f"gave up after {n} tries" if attempts > 1 else None
        self.failures[doc_id] = n
        delay = self.policy.delay(n)
        self._cancel(doc_id)
        self.due[doc_id] = time.monotonic() + delay
        self._timers[doc_id] = asyncio.get_running_loop().call_later(delay, self._fire, doc_id,
                                                                     requeue)
        return f"try {n} of {attempts} failed; next try in {delay:g} s"

    def _fire(self, doc_id: str, requeue: Callable[[str], None]) -> None:
        self._timers.pop(doc_id, None)
        self.due.pop(doc_id, None)
        requeue(doc_id)

    def _cancel(self, doc_id: str) -> None:
        timer = self._timers.pop(doc_id, None)
        if timer is not None:
            timer.cancel()
        self.due.pop(doc_id, None)

    def forget(self, doc_id: str) -> None:
        """``doc_id`` was processed, deleted or given up: no retry, no count."""
        self._cancel(doc_id)
        self.failures.pop(doc_id, None)

    def view(self) -> dict[str, Any]:
        """The retry fields of ``GET /documents/pipeline_status``."""
        now = time.monotonic()
        waiting = sorted(self.due.items(), key=lambda kv: kv[1])
        return {
            "retries_waiting": len(waiting),
            "retries": [{"id": doc_id, "failed_tries": self.failures.get(doc_id, 0),
                         "next_try_in_s": round(max(0.0, at - now), 1)}
                        for doc_id, at in waiting[:20]],
            "retry_policy": {"attempts": self.policy.attempts,
                             "first_delay_s": self.policy.first_delay,
                             "max_delay_s": self.policy.max_delay},
        }
