"""The opt-in example in :mod:`hexrag.testing`'s docstring runs as written: it is cut out of
the docstring, saved as a test module in an empty directory (no conftest, no pytest
configuration: pytest-asyncio's default *strict* mode, so hexrag's plugin must carry the async
tests) and run by pytest in a subprocess; every contract test of the class passes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import hexrag.testing


def _example() -> str:
    doc = hexrag.testing.__doc__ or ""
    head = doc.index("A complete opt-in")
    start = doc.index("::\n", head) + 3
    end = doc.index("\nA test your backend cannot pass", start)
    return textwrap.dedent(doc[start:end])


def test_the_docstring_example_runs(tmp_path: Path) -> None:
    code = _example()
    assert "class TestMyVectorIndex(VectorIndexContract)" in code
    (tmp_path / "test_docstring_example.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), str(tmp_path / "test_docstring_example.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    tail = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, tail
    assert int(summary.split(" passed")[0].split()[-1]) >= 30, tail
