"""``hexrag export / import / migrate / check`` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_cli_serve_answer import _clean_env, workdir  # noqa: F401

pytestmark = pytest.mark.backend("postgres")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hexrag.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "COLUMNS": "200"},
    )


def test_check_export_import_round_trip(workdir: Path, tmp_path: Path) -> None:  # noqa: F811
    r = _cli("check", str(workdir), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert report["clean"] is True and report["stores"]["graph"]["edges"] > 0

    r = _cli("export", str(workdir), str(tmp_path / "archive"))
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((tmp_path / "archive" / "manifest.json").read_text())
    assert manifest["format"] == "hexrag-archive" and manifest["embedding"]["dim"] == 32

    r = _cli("import", str(tmp_path / "archive"), str(tmp_path / "copy"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "copy" / "vdb_entities.json").is_file()
    # the copy answers like the original
    r = _cli("migrate", "--from", str(workdir), "--to", str(tmp_path / "copy"), "--verify-only")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert json.loads(r.stdout)["ok"] is True
    # a second import refuses the non-empty target
    r = _cli("import", str(tmp_path / "archive"), str(tmp_path / "copy"))
    assert r.returncode == 2 and "not empty" in r.stderr

    # drift is found and fails the check
    entities = tmp_path / "copy" / "kv_store_text_chunks.json"
    data = json.loads(entities.read_text())
    data.pop(next(iter(data)))
    entities.write_text(json.dumps(data))
    r = _cli("check", str(tmp_path / "copy"))
    assert r.returncode == 1 and "NOT clean" in r.stdout
    assert "chunk_vectors_without_chunk = 1" in r.stdout


def test_migrate_workdir_to_postgres_and_back(workdir: Path, tmp_path: Path) -> None:  # noqa: F811
    from tests.services.postgres import postgres_dsn

    dsn = postgres_dsn()
    stack = tmp_path / "pg.toml"
    stack.write_text(
        f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
        f'cache = "{dsn}"\nnamespace = "mig_cli"\nembedder = "hashing:32"\n',
        encoding="utf-8",
    )
    r = _cli("migrate", "--from", str(workdir), "--to", str(stack), "--allow-model-change")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    body = json.loads(r.stdout)
    assert body["ok"] is True and body["queries"] == 20
    assert all(a == b for a, b in body["counts"].values())
    r = _cli("migrate", "--from", str(workdir), "--to", str(stack), "--allow-model-change")
    assert r.returncode == 2 and "not empty" in r.stderr  # no duplicate migration
    r = _cli("migrate", "--from", str(stack), "--to", str(tmp_path / "back"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert json.loads(r.stdout)["ok"] is True
    r = _cli("check", str(stack))
    assert r.returncode == 0, r.stdout
