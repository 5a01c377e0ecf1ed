"""A third party's contract test, written as the README says, in a fresh project whose
pytest-asyncio runs in *strict* mode: it runs without any extra configuration (the ``pytest11``
plugin in :mod:`hexrag.testing.plugin`), and the guard refuses a subclass that overrides a
contract test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

GOOD = textwrap.dedent(
    """
    import pytest

    from hexrag.adapters.memory import MemoryCache, MemoryChunkStore
    from hexrag.testing import CacheContract, ChunkStoreContract


    class TestMyChunkStore(ChunkStoreContract):
        @pytest.fixture
        async def chunk_store(self):
            store = MemoryChunkStore()
            yield store


    class TestMyCache(CacheContract):
        @pytest.fixture
        def cache(self):
            return MemoryCache("a")

        @pytest.fixture
        def other_namespace_cache(self):
            return MemoryCache("b")
    """
)

BAD = textwrap.dedent(
    """
    import pytest

    from hexrag.adapters.memory import MemoryChunkStore
    from hexrag.testing import ChunkStoreContract


    class TestWeakened(ChunkStoreContract):
        @pytest.fixture
        async def chunk_store(self):
            return MemoryChunkStore()

        async def test_delete(self, chunk_store):
            pass  # weakened: must be refused
    """
)


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project, capture_output=True, text=True, timeout=300, env=env,
    )


def test_a_third_party_contract_test_runs_in_strict_mode(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = strict\n", encoding="utf-8")
    (tmp_path / "test_my_backend.py").write_text(GOOD, encoding="utf-8")
    result = _run(tmp_path, "-W", "error::pytest.PytestUnraisableExceptionWarning")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    assert "asyncio: mode=strict" in out or "strict" in (tmp_path / "pytest.ini").read_text()
    assert " passed" in out and "failed" not in out and "skipped" not in out, out[-1500:]
    assert "not natively supported" not in out


def test_the_guard_refuses_an_overridden_contract_test(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = strict\n", encoding="utf-8")
    (tmp_path / "test_weakened.py").write_text(BAD, encoding="utf-8")
    result = _run(tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    assert "1 failed" in out and "test_no_overrides_DO_NOT_OVERRIDE" in out, out[-3000:]
    assert "overrides contract test(s) ['test_delete']" in out, out[-3000:]
