"""Which unfinished documents a server process resumes when a stack's app starts.

A single server resumes every unfinished document of its stack (``pending``, ``processing``
after a crash, ``failed``): nobody else can be working on them. With ``hexrag serve
--workers N`` the workers share the document store, and a row that is ``pending`` or
``processing`` may be a document another live worker is ingesting right now; resuming it
would ingest it twice (the second run records a LightRAG duplicate row, ``failed``). So:

* only worker 1 resumes anything (the others never do), at its start and whenever it opens
  a workspace;
* worker 1 resumes ``failed`` rows, and ``pending`` / ``processing`` rows only once they
  have not been updated for :data:`STALE_AFTER_SECONDS` (left behind by a worker that
  stopped or crashed, not being worked on).

The policy is per process: :func:`configure` sets it (the worker process does, before it
builds anything), :func:`current` reads it; the default is the single server's.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STALE_AFTER_SECONDS", "ResumePolicy", "configure", "current"]

#: How long a ``pending`` / ``processing`` row must have stood still before worker 1 of
#: several takes it as abandoned.
STALE_AFTER_SECONDS = 300.0


@dataclass(frozen=True)
class ResumePolicy:
    """Whether this process resumes a given unfinished document row.

    ``worker`` / ``workers``: this process's number (1..N) and N (1: a single server, which
    resumes everything). ``stale_after``: seconds without an update after which a pending or
    processing row counts as abandoned. ``clock``: seconds since the epoch.
    """

    worker: int = 1
    workers: int = 1
    stale_after: float = STALE_AFTER_SECONDS
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def takes(self, row: Any) -> bool:
        """Whether to resume ``row`` (a :class:`~hexrag.domain.documents.DocRecord`)."""
        if self.workers <= 1:
            return True
        if self.worker != 1:
            return False
        if row.status == "failed":
            return True
        updated = _epoch(str(row.updated_at or row.created_at or ""))
        return updated is not None and self.clock() - updated >= self.stale_after


def _epoch(stamp: str) -> float | None:
    """``2026-11-26T13:07:23Z`` (or with ``+00:00`` / fractions) -> seconds; ``None`` if
    unreadable (such a row is left alone)."""
    text = stamp.strip().replace("+00:00", "Z")
    if "." in text:
        text = text.split(".", 1)[0] + "Z"
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


_policy = ResumePolicy()


def configure(policy: ResumePolicy) -> None:
    """Set this process's policy (``hexrag serve --workers``'s worker processes do)."""
    global _policy
    _policy = policy


def current() -> ResumePolicy:
    """This process's policy."""
    return _policy
