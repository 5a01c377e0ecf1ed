"""``hexrag serve`` / ``hexrag query`` start-up checks: everything is validated before anything
is loaded, and a stack without data is refused (the hardening issue, defects 9-14)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.test_cli_serve_answer import (  # noqa: F401 - fixtures
    _clean_env,
    _free_port,
    _Served,
    workdir,
)

Q = "How do I set up single sign-on with Okta?"


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hexrag.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": "/tmp"},
    )


def _one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    last = result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr[-500:])
    return last


def test_version() -> None:
    from hexrag import __version__

    result = _cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"hexrag {__version__}"


def test_serve_without_data_is_refused(tmp_path: Path) -> None:
    _one_line_error(_cli("serve"), "nothing to serve", "--allow-empty")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "kv_store_doc_status.json").write_text("{}")
    _one_line_error(_cli("serve", "-w", str(fresh), "--port", str(_free_port())),
                    "holds no data", "--allow-empty")


def test_serve_allow_empty_serves_with_red_health() -> None:
    served = _Served(["--allow-empty"], env={}, health=503)
    try:
        body = httpx.get(f"{served.url}/health").json()
        assert body["status"] == "degraded" and "entities: holds no records" in body["problems"]
    finally:
        code, _out, _err = served.stop()
    assert code == 0


def test_incomplete_workdir_is_named(workdir: Path, tmp_path: Path) -> None:  # noqa: F811
    partial = tmp_path / "partial"
    shutil.copytree(workdir, partial)
    (partial / "vdb_chunks.json").unlink()
    (partial / "graph_chunk_entity_relation.graphml").unlink()
    for cmd in (("serve", "-w", str(partial)), ("query", Q, "-w", str(partial))):
        _one_line_error(_cli(*cmd), "incomplete", "vdb_chunks.json",
                        "graph_chunk_entity_relation.graphml")


def test_bad_options_fail_before_loading(workdir: Path) -> None:  # noqa: F811
    t0 = time.perf_counter()
    last = _one_line_error(_cli("serve", "-w", str(workdir), "--log-level", "loud"), "loud")
    assert "unknown log level" in last
    _one_line_error(_cli("serve", "-w", str(workdir), "--port", "99999"), "--port")
    _one_line_error(_cli("query", Q, "-w", str(workdir), "--cosine-threshold", "5"),
                    "cosine_threshold")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = _cli("serve", "-w", str(workdir), "--port", str(port))
        _one_line_error(result, "port is in use")
        assert "serving on" not in result.stderr and "loading" not in result.stderr
    result = _cli("serve", "-w", str(workdir), "--log-level", "loud")
    assert "loading" not in result.stderr
    assert time.perf_counter() - t0 < 60


def test_serve_with_a_key(workdir: Path) -> None:  # noqa: F811
    served = _Served(["--workdir", str(workdir), "--key", "k3y"], env={})
    try:
        url = f"{served.url}/query/data"
        assert httpx.post(url, json={"query": Q}).status_code == 403
        r = httpx.post(url, json={"query": Q}, headers={"X-API-Key": "k3y"})
        assert r.status_code == 200 and r.json()["data"]["chunks"]
    finally:
        code, _out, err = served.stop()
    assert code == 0 and "API key required" in err


@pytest.mark.parametrize("bad", ["MAX_SCOPE_VALUES=0", "QUERY_TIMEOUT=-1"])
def test_bad_limits_in_the_environment_fail_at_start(workdir: Path, bad: str) -> None:  # noqa: F811
    name, value = bad.split("=")
    result = subprocess.run(
        [sys.executable, "-m", "hexrag.cli", "serve", "-w", str(workdir), "--port",
         str(_free_port())],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", name: value},
    )
    _one_line_error(result, name)


def test_serve_workspaces_from_a_stack_file(workdir: Path, tmp_path: Path) -> None:  # noqa: F811
    root = tmp_path / "rag"
    for ws in ("alpha", "beta"):
        shutil.copytree(workdir, root / ws)
    config = tmp_path / "stack.toml"
    config.write_text(f'workdir = "{root}"\nworkspaces = ["alpha", "beta"]\n'
                      'default_workspace = "alpha"\nembedder = "hashing"\n', encoding="utf-8")
    served = _Served(["--config", str(config), "--key", "k3y"], env={})
    key = {"X-API-Key": "k3y"}
    try:
        for ws, status in (("alpha", 200), ("beta", 200), ("gamma", 404), ("", 200)):
            r = httpx.get(f"{served.url}/health", headers={**key, "LIGHTRAG-WORKSPACE": ws})
            assert r.status_code == status, (ws, r.text[:200])
        # the key is checked before the workspace: an unknown one is not revealed
        r = httpx.post(f"{served.url}/query/data", json={"query": Q},
                       headers={"LIGHTRAG-WORKSPACE": "gamma"})
        assert r.status_code == 403
        listed = httpx.get(f"{served.url}/workspaces", headers=key).json()
        assert listed["declared"] == ["alpha", "beta"] and listed["default"] == "alpha"
        r = httpx.post(f"{served.url}/query/data", json={"query": Q},
                       headers={**key, "LIGHTRAG-WORKSPACE": "beta"})
        assert r.status_code == 200 and r.json()["data"]["chunks"]
        assert 'workspace="beta"' in httpx.get(f"{served.url}/metrics", headers=key).text
    finally:
        code, _out, err = served.stop()
    assert code == 0 and "serving workspaces" in err
