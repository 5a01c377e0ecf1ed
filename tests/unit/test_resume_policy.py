"""Which unfinished documents a server process resumes (hexrag.api.resume_policy)."""

from __future__ import annotations

from hexrag.api.resume_policy import STALE_AFTER_SECONDS, ResumePolicy
from hexrag.domain.documents import DocRecord

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def _row(status: str, updated_at: str) -> DocRecord:
    return DocRecord(id="doc-1", status=status, file_path="a.txt", updated_at=updated_at)


def _stamp(seconds_ago: float) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - seconds_ago))


def test_a_single_server_resumes_everything() -> None:
    single = ResumePolicy(clock=lambda: NOW)
    for status in ("pending", "processing", "failed"):
        assert single.takes(_row(status, _stamp(0)))


def test_only_worker_one_resumes_and_only_what_stood_still() -> None:
    first = ResumePolicy(worker=1, workers=2, clock=lambda: NOW)
    second = ResumePolicy(worker=2, workers=2, clock=lambda: NOW)
    recent, stale = _stamp(5), _stamp(STALE_AFTER_SECONDS + 1)
    for status in ("pending", "processing", "failed"):
        assert not second.takes(_row(status, stale))
    assert not first.takes(_row("pending", recent))  # maybe another worker's, right now
    assert not first.takes(_row("processing", recent))
    assert first.takes(_row("pending", stale)) and first.takes(_row("processing", stale))
    assert first.takes(_row("failed", recent))
    # LightRAG's ISO stamps with fractions and an offset read the same; unreadable: left alone
    lightrag = _stamp(STALE_AFTER_SECONDS + 1).replace("Z", ".123456+00:00")
    assert first.takes(_row("processing", lightrag))
    assert not first.takes(_row("pending", "yesterday"))
