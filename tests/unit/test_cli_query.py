"""``hexrag query``: outputs equal the engine's own answers; bad input is one line, exit 2."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from hexrag.adapters.memory import (
    HashingEmbedder,
    MemoryCache,
    MemoryChunkStore,
    MemoryGraphStore,
    MemoryVectorIndex,
)
from hexrag.adapters.tiktoken_offline import default_tokenizer
from hexrag.adapters.workdir import WorkdirStack, load_workdir, save_workdir
from hexrag.cli import app, parse_scope
from hexrag.core.errors import InvalidScope
from hexrag.core.ingest.ids import entity_id, relation_id
from hexrag.core.model import Chunk, Entity, QueryParam, QueryScope, Relation, VectorRecord
from hexrag.core.query.engine import QueryEngine

DIM = 64
runner = CliRunner()

ENTITIES = [
    ("Acme CRM", "product", "Acme CRM is a customer relationship management suite.", "p1"),
    ("Pipeline View", "feature", "Pipeline View shows deals in the Acme CRM sales pipeline.", "p1"),
    ("Globex Ledger", "product", "Globex Ledger is an accounting product.", "p2"),
    ("Invoice Sync", "feature", "Invoice Sync exports invoices from Globex Ledger.", "p2"),
]
RELATIONS = [
    ("Acme CRM", "Pipeline View", "Acme CRM includes Pipeline View.", "feature,crm", "c-1"),
    ("Globex Ledger", "Invoice Sync", "Globex Ledger ships Invoice Sync.", "feature,ledger", "c-2"),
    ("Acme CRM", "Globex Ledger", "Acme CRM integrates with Globex Ledger.", "integration",
     "c-1<SEP>c-2"),
]
CHUNKS = [
    ("c-1", "Acme CRM includes Pipeline View for sales deals.", "p1", "crm"),
    ("c-2", "Globex Ledger ships Invoice Sync for accounting teams.", "p2", "finance"),
]


def _build(path: Path) -> Path:
    emb = HashingEmbedder(dim=DIM)

    def vec(text: str) -> np.ndarray:
        return emb.embed_one(text)

    ent_records = [
        VectorRecord(id=entity_id(n), vector=vec(f"{n}\n{d}"), entity_name=n, content=f"{n}\n{d}",
                     source_id="c-1" if p == "p1" else "c-2", file_path=f"{p}/doc.md",
                     metadata={"product_id": p})
        for n, _, d, p in ENTITIES
    ]
    rel_records = [
        VectorRecord(id=relation_id(a, b), vector=vec(f"{k}\t{a}\n{b}\n{d}"), src_id=min(a, b),
                     tgt_id=max(a, b), content=f"{k}\t{a}\n{b}\n{d}", source_id=s)
        for a, b, d, k, s in RELATIONS
    ]
    chunk_records = [
        VectorRecord(id=cid, vector=vec(text), content=text, full_doc_id=f"doc-{p}",
                     file_path=f"{p}/doc.md", metadata={"product_id": p, "category_id": cat})
        for cid, text, p, cat in CHUNKS
    ]
    indexes = {}
    for ns, records in (("entities", ent_records), ("relationships", rel_records),
                        ("chunks", chunk_records)):
        matrix = np.ascontiguousarray(np.stack([np.asarray(r.vector) for r in records]),
                                      dtype=np.float32)
        indexes[ns] = MemoryVectorIndex.from_arrays(ns, matrix, records)
    graph = MemoryGraphStore()

    async def fill() -> None:
        await graph.upsert_nodes([
            Entity(name=n, entity_type=t, description=d, source_id="c-1" if p == "p1" else "c-2",
                   file_path=f"{p}/doc.md", created_at=1)
            for n, t, d, p in ENTITIES
        ])
        await graph.upsert_edges([
            Relation(id=relation_id(a, b), src_id=a, tgt_id=b, description=d, keywords=k,
                     weight=1.0, source_id=s, file_path="x.md", created_at=1)
            for a, b, d, k, s in RELATIONS
        ])

    asyncio.run(fill())
    chunks = MemoryChunkStore(
        Chunk(id=cid, content=text, tokens=10, full_doc_id=f"doc-{p}", chunk_order_index=0,
              file_path=f"{p}/doc.md", metadata={"product_id": p, "category_id": cat})
        for cid, text, p, cat in CHUNKS
    )
    stack = WorkdirStack(
        entities=indexes["entities"], relationships=indexes["relationships"],
        chunks=indexes["chunks"], graph=graph, chunk_store=chunks, cache=MemoryCache(),
        embedding_dim=DIM,
    )
    return save_workdir(stack, path)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("cli") / "wd")


def _engine(path: Path) -> QueryEngine:
    stack = load_workdir(path, embedder_dim=DIM)
    return QueryEngine(**stack.engine_stores(), embedder=HashingEmbedder(dim=DIM),
                       tokenizer=default_tokenizer())


def _invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, ["query", *args], env=env or {})


QUESTION = "Which features does Acme CRM include?"
KEYWORDS = ["--hl", "product features", "--hl", "integration", "--ll", "Acme CRM",
            "--ll", "Pipeline View"]


def test_context_is_the_default_output(workdir: Path) -> None:
    result = _invoke("--workdir", str(workdir), "--mode", "hybrid", *KEYWORDS, QUESTION)
    assert result.exit_code == 0, result.output
    param = QueryParam(mode="hybrid", hl_keywords=["product features", "integration"],
                       ll_keywords=["Acme CRM", "Pipeline View"], only_need_context=True)
    expected = asyncio.run(_engine(workdir).query(QUESTION, param))
    assert isinstance(expected, str) and "Pipeline View" in expected
    assert result.stdout == expected + "\n"


@pytest.mark.parametrize("mode", ["local", "global", "hybrid", "mix", "naive"])
def test_json_output_is_query_data(workdir: Path, mode: str) -> None:
    result = _invoke("--workdir", str(workdir), "--json", "--mode", mode, "--top-k", "3",
                     "--chunk-top-k", "2", *KEYWORDS, QUESTION)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    param = QueryParam(mode=mode, top_k=3, chunk_top_k=2,
                       hl_keywords=["product features", "integration"],
                       ll_keywords=["Acme CRM", "Pipeline View"])
    expected = asyncio.run(_engine(workdir).query_data(QUESTION, param))
    assert data == json.loads(json.dumps(expected))
    assert data["status"] == "success"
    if mode != "naive":
        assert data["metadata"]["keywords"]["high_level"] == ["product features", "integration"]
        assert data["metadata"]["keywords"]["low_level"] == ["Acme CRM", "Pipeline View"]


def test_prompt_output(workdir: Path) -> None:
    result = _invoke("-w", str(workdir), "--prompt", "--mode", "local", "--user-prompt",
                     "Be brief.", "--response-type", "Bullet Points", *KEYWORDS, QUESTION)
    assert result.exit_code == 0, result.output
    param = QueryParam(mode="local", only_need_prompt=True, user_prompt="Be brief.",
                       response_type="Bullet Points",
                       hl_keywords=["product features", "integration"],
                       ll_keywords=["Acme CRM", "Pipeline View"])
    expected = asyncio.run(_engine(workdir).query(QUESTION, param))
    assert result.stdout == f"{expected}\n"
    assert "Be brief." in result.stdout and "Bullet Points" in result.stdout


def test_scope_restricts_the_chunks(workdir: Path) -> None:
    args = ["--workdir", str(workdir), "--json", "--mode", "mix", *KEYWORDS, QUESTION]
    unscoped = json.loads(_invoke(*args).stdout)
    assert {c["chunk_id"] for c in unscoped["data"]["chunks"]} == {"c-1", "c-2"}
    result = _invoke("--scope", "product_id=p2", "--scope", "category_id=finance", *args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    expected = asyncio.run(_engine(workdir).query_data(QUESTION, QueryParam(
        mode="mix", hl_keywords=["product features", "integration"],
        ll_keywords=["Acme CRM", "Pipeline View"],
        scope=QueryScope(product_id="p2", category_id="finance"))))
    assert data == json.loads(json.dumps(expected))
    assert {c["chunk_id"] for c in data["data"]["chunks"]} == {"c-2"}


def test_parse_scope_collects_repeated_fields() -> None:
    scope = parse_scope(["product_id=p1", "product_id=p2", "category_id= crm ", "product_id=p1"])
    assert scope == QueryScope(product_id=["p1", "p2"], category_id="crm")
    assert parse_scope([]) is None
    with pytest.raises(InvalidScope):
        parse_scope(["tenant=x"])


def test_module_callable_embedder(workdir: Path, tmp_path: Path) -> None:
    module = tmp_path / "cli_user_embedder.py"
    module.write_text(textwrap.dedent(f"""
        from hexrag.adapters.memory import HashingEmbedder
        _E = HashingEmbedder(dim={DIM})

        def embed(texts):
            return [_E.embed_one(t) for t in texts]
    """), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        result = _invoke("--workdir", str(workdir), "--embedder", "cli_user_embedder:embed",
                         "--mode", "hybrid", *KEYWORDS, QUESTION)
        default = _invoke("--workdir", str(workdir), "--mode", "hybrid", *KEYWORDS, QUESTION)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("cli_user_embedder", None)
    assert result.exit_code == 0, result.output
    assert result.stdout == default.stdout


def test_embedder_from_environment(workdir: Path) -> None:
    result = _invoke("--workdir", str(workdir), *KEYWORDS, QUESTION,
                     env={"HEXRAG_EMBEDDER": "hashing:32"})
    assert result.exit_code == 2
    assert "32" in result.stderr and str(DIM) in result.stderr


def _bad(args: list[str], needle: str) -> None:
    result = _invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("hexrag: error: ")
    assert needle in lines[0], lines[0]
    assert "Traceback" not in result.output


def test_missing_directory(tmp_path: Path) -> None:
    _bad(["--workdir", str(tmp_path / "nope"), QUESTION], "not found")


def test_directory_without_lightrag_files(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _bad(["--workdir", str(tmp_path / "empty"), QUESTION], "not a LightRAG working directory")


def test_malformed_directory(tmp_path: Path, workdir: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    for p in workdir.iterdir():
        (broken / p.name).write_bytes(p.read_bytes())
    (broken / "vdb_chunks.json").write_text('{"embedding_dim": 64, "data": [', encoding="utf-8")
    _bad(["--workdir", str(broken), QUESTION], "malformed JSON")


def test_workspaces(tmp_path: Path, workdir: Path) -> None:
    root = tmp_path / "root"
    (root / "alpha").mkdir(parents=True)
    for p in workdir.iterdir():
        (root / "alpha" / p.name).write_bytes(p.read_bytes())
    _bad(["--workdir", str(root), QUESTION], "workspace sub-directories: alpha")
    _bad(["--workdir", str(root), "--workspace", "beta", QUESTION], "workspace 'beta' not found")
    _bad(["--workdir", str(root), "--workspace", "../alpha", QUESTION], "invalid workspace")
    ok = _invoke("--workdir", str(root), "--workspace", "alpha", *KEYWORDS, QUESTION)
    direct = _invoke("--workdir", str(workdir), *KEYWORDS, QUESTION)
    assert ok.exit_code == 0 and ok.stdout == direct.stdout


def test_unknown_mode(workdir: Path) -> None:
    _bad(["--workdir", str(workdir), "--mode", "deep", QUESTION], "unknown mode 'deep'")


@pytest.mark.parametrize(
    ("scope", "needle"),
    [
        ("product_id", "expected FIELD=VALUE"),
        ("product_id=", "expected FIELD=VALUE"),
        ("=p1", "expected FIELD=VALUE"),
        ("tenant=x", "unknown field 'tenant'"),
    ],
)
def test_bad_scope(workdir: Path, scope: str, needle: str) -> None:
    _bad(["--workdir", str(workdir), "--scope", scope, QUESTION], needle)


def test_dimension_mismatch(workdir: Path) -> None:
    _bad(["--workdir", str(workdir), "--embedder", "hashing:16", QUESTION],
         f"stores {DIM}-dimensional vectors but the configured embedder produces 16")


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--json", "--prompt"], "choose one output"),
        (["--chunk-pick-method", "RANDOM"], "unknown chunk pick method"),
        (["--top-k", "0"], "top_k"),
        (["--history", "[{"], "--history is not valid JSON"),
        (["--history", '[{"role": 1}]'], "--history must be a JSON list"),
        (["--embedder", "not_a_module_abc:f"], "cannot import module"),
        (["--embedder", "nocolon"], "bad embedder spec"),
    ],
)
def test_other_bad_input(workdir: Path, extra: list[str], needle: str) -> None:
    _bad(["--workdir", str(workdir), *extra, QUESTION], needle)


def test_too_short_query(workdir: Path) -> None:
    _bad(["--workdir", str(workdir), "hi"], "too short")


def test_history_is_passed_to_the_prompt(workdir: Path, tmp_path: Path) -> None:
    history = [{"role": "user", "content": "Earlier question about ledgers"}]
    path = tmp_path / "h.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    inline = _invoke("-w", str(workdir), "--prompt", "--history", json.dumps(history),
                     *KEYWORDS, QUESTION)
    from_file = _invoke("-w", str(workdir), "--prompt", "--history", f"@{path}",
                        *KEYWORDS, QUESTION)
    assert inline.exit_code == 0 and from_file.stdout == inline.stdout


def test_help_lists_the_query_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "query" in result.stdout
