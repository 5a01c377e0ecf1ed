"""Browser fixtures: Debian's chromium driven by Playwright (``playwright install`` is never
run). ``HEXRAG_CHROMIUM`` names another executable; without a browser the tests skip, or fail
when ``HEXRAG_REQUIRE_BACKENDS=1``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.services import require_backends


def chromium_path() -> str:
    """The chromium executable, or skip (fail under ``HEXRAG_REQUIRE_BACKENDS=1``)."""
    path = os.environ.get("HEXRAG_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")
    missing = None
    if not path:
        missing = "no chromium executable (apt-get install chromium, or set HEXRAG_CHROMIUM)"
    else:
        try:
            import playwright  # noqa: F401
        except ImportError:
            missing = "playwright is not installed (pip install playwright)"
    if missing:
        if require_backends():
            pytest.fail(missing + " (HEXRAG_REQUIRE_BACKENDS=1)", pytrace=False)
        pytest.skip(missing)
    assert path is not None
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium for the module's tests."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()
