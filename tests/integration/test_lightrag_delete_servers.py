"""``hexrag delete`` on LightRAG-built data in LightRAG's PostgreSQL tables, with LightRAG
1.5.7 as the oracle (issue 21 point 4 beyond working directories).

LightRAG builds a directory (its default merge settings, so the rebuild needs no LLM); the
directory is copied with ``hexrag migrate`` into two workspaces of LightRAG's PostgreSQL
tables. In one, ``hexrag delete`` removes a document (no fragments: LightRAG's own status
row in ``LIGHTRAG_DOC_STATUS``, recovery rows, chunk tracking and extraction cache drive
it); in the other, LightRAG's own ``adelete_by_doc_id`` on its PostgreSQL storages removes
it. ``hexrag check <LightRAG's workspace> --against <hexrag's>`` must then pass: every
section (vectors by their bytes, graph, chunks, cache, status rows, the five key-value
namespaces) equal, and the golden queries answer the same. (The oracle runs on the same
backend: LightRAG's file storage re-normalises the vectors it re-embeds, its PostgreSQL
storage keeps them as embedded, as hexrag does; they differ by one unit in the last place.)
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

import pytest

from hexrag.devtools.lightrag_data import require_lightrag
from hexrag.devtools.lightrag_pg import MODEL_NAME
from tests.integration.test_cli_transfer import _cli
from tests.integration.test_lightrag_kv_delete import DIM, DOCS, NOW, _kv_files, _lightrag
from tests.integration.test_transfer_lightrag_kv_layouts import _lightrag_pg_workspace

require_lightrag()

pytestmark = [pytest.mark.backend("postgres")]


def _pg_toml(tmp_path: Path, ws: str) -> Path:
    from tests.services.postgres import postgres_dsn

    dsn = postgres_dsn()
    _lightrag_pg_workspace(dsn, ws)
    path = tmp_path / f"{ws}.toml"
    path.write_text(
        f'vector_index = "{dsn}"\ngraph_store = "{dsn}"\nchunk_store = "{dsn}"\n'
        f'cache = "{dsn}"\nlayout = "lightrag"\nworkspace = "{ws}"\n'
        f'lightrag_model_name = "{MODEL_NAME}"\nembedder = "hashing:{DIM}"\n',
        encoding="utf-8")
    return path


def _lightrag_deletes_on_postgres(ws: str, doc_id: str) -> None:
    """LightRAG's own ``adelete_by_doc_id`` in workspace ``ws`` of its PostgreSQL storages
    (its default merge settings: the rebuild needs no LLM)."""
    from hexrag.adapters.memory import HashingEmbedder
    from hexrag.devtools.lightrag_pg import init_lightrag_pg, make_lightrag_pg
    from tests.services.postgres import postgres_dsn

    dsn = postgres_dsn()

    async def run() -> None:
        rag = make_lightrag_pg(dsn, HashingEmbedder(DIM), workspace=ws)
        await init_lightrag_pg(rag, dsn)
        try:
            result = await rag.adelete_by_doc_id(doc_id)
            assert result.status == "success", result
        finally:
            await rag.finalize_storages()

    asyncio.run(run())


def test_delete_on_lightrag_postgres_equals_lightrags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from hexrag.cli import app

    for var in ("FORCE_LLM_SUMMARY_ON_MERGE", "MAX_SOURCE_IDS_PER_ENTITY",
                "MAX_SOURCE_IDS_PER_RELATION", "SOURCE_IDS_LIMIT_METHOD", "MAX_FILE_PATHS"):
        monkeypatch.delenv(var, raising=False)
    lr_dir = _lightrag(tmp_path / "lr", "lr" + uuid.uuid4().hex[:8], monkeypatch, limits={},
                       insert=DOCS, force_summary=8)
    doc_id = sorted(_kv_files(lr_dir)["full_docs"])[2]
    mine, theirs = (_pg_toml(tmp_path, name + uuid.uuid4().hex[:6]) for name in ("hx", "lr"))
    for stack in (mine, theirs):
        r = _cli("migrate", "--from", str(lr_dir), "--to", str(stack))
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    monkeypatch.setattr(time, "time", lambda: float(NOW))
    try:
        _lightrag_deletes_on_postgres(theirs.stem, doc_id)
        result = CliRunner().invoke(app, ["delete", doc_id, "--stack", str(mine)])
    finally:
        monkeypatch.undo()
    assert result.exit_code == 0, result.output
    r = _cli("documents", "--stack", str(mine), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    left = sorted(json.loads(line)["id"] for line in r.stdout.splitlines() if line.strip())
    assert left == sorted(set(_kv_files(lr_dir)["full_docs"]) - {doc_id})
    r = _cli("check", str(theirs), "--against", str(mine))
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["ok"], report["mismatches"]
    assert report["queries"] > 0
