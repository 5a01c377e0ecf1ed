"""``hexrag migrate`` of a LightRAG-written directory (every document-side file) into a new
directory keeps every file and verifies (exit 0); ``hexrag check A --against B`` passes the
exact copy and fails a copy with one chunk text changed or one vector row missing."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from hexrag.devtools.lightrag_data import require_lightrag
from tests.integration.test_cli_transfer import _cli
from tests.integration.test_ingest_lightrag import _lightrag

require_lightrag()

DOC_SIDE = ("kv_store_doc_status.json", "kv_store_full_docs.json",
            "kv_store_full_entities.json", "kv_store_full_relations.json",
            "kv_store_entity_chunks.json", "kv_store_relation_chunks.json")


def test_migrate_then_check_against(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original, _ = _lightrag(tmp_path / "lr", monkeypatch, cache=True)
    copy = tmp_path / "copy"
    r = _cli("migrate", "--from", str(original), "--to", str(copy))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["ok"] is True and report["queries"] > 0
    for name in DOC_SIDE:  # every document-side section travelled
        assert json.loads((copy / name).read_text()) == json.loads((original / name).read_text())
        section = name.removeprefix("kv_store_").removesuffix(".json")
        assert report["digests"][section]["target"]["count"] > 0, section

    r = _cli("check", str(original), "--against", str(copy))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert json.loads(r.stdout)["ok"] is True

    # one chunk text changed
    chunks_file = copy / "kv_store_text_chunks.json"
    kept = chunks_file.read_text()
    data = json.loads(kept)
    first = next(iter(data))
    data[first]["content"] += " (changed)"
    chunks_file.write_text(json.dumps(data))
    r = _cli("check", str(original), "--against", str(copy))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert any(m.startswith("text_chunks: same count")
               for m in json.loads(r.stdout)["mismatches"])
    chunks_file.write_text(kept)

    # one vector row missing
    vdb = copy / "vdb_entities.json"
    nano = json.loads(vdb.read_text())
    dim = nano["embedding_dim"]
    nano["data"] = nano["data"][1:]
    nano["matrix"] = base64.b64encode(base64.b64decode(nano["matrix"])[dim * 4:]).decode()
    vdb.write_text(json.dumps(nano))
    r = _cli("check", str(original), "--against", str(copy))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert any(m.startswith("entities: ") for m in json.loads(r.stdout)["mismatches"])
