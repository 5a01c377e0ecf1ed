"""The test PostgreSQL starter retries only a ``pg_ctl`` killed by a signal (tests/services)."""

import subprocess

from tests.services.postgres import _killed_by_signal


def _as_pgserver_reports(cause: BaseException) -> BaseException:
    """pgserver handles a failed pg_ctl by reading the log a crashed start never wrote."""
    try:
        try:
            raise cause
        except BaseException:
            raise FileNotFoundError("pgdata/log")  # noqa: B904  (implicit context, as pgserver)
    except FileNotFoundError as exc:
        return exc


def test_a_child_killed_by_a_signal_is_seen_through_the_chain() -> None:
    assert _killed_by_signal(_as_pgserver_reports(subprocess.CalledProcessError(-11, ["pg_ctl"])))
    assert _killed_by_signal(subprocess.CalledProcessError(-6, ["pg_ctl"]))


def test_other_failures_are_not_retried() -> None:
    assert not _killed_by_signal(_as_pgserver_reports(subprocess.CalledProcessError(1, ["pg_ctl"])))
    assert not _killed_by_signal(FileNotFoundError("log"))
    assert not _killed_by_signal(RuntimeError("pgvector is missing"))
