"""The embedded demo: a real knowledge base, every mode, and scope visibly enforced."""

from __future__ import annotations

from rich.console import Console
from typer.testing import CliRunner

from hexrag.cli import app
from hexrag.core.model import QueryScope
from hexrag.demo import load_kb
from hexrag.demo.run import DEMO_MODES, run_demo


def test_every_mode_retrieves_and_scope_holds() -> None:
    kb = load_kb()
    product_of = {c["id"]: c["product_id"] for c in kb["chunks"]}
    rows = run_demo(scope=QueryScope(product_id="p-erp"), console=Console(file=None, quiet=True))
    assert [(m, s) for m, s, _ in rows] == [(m, "unscoped") for m in DEMO_MODES] + [
        (m, "scoped") for m in DEMO_MODES
    ]
    for mode, label, data in rows:
        assert data["status"] == "success", (mode, label)
        chunks = data["data"]["chunks"]
        assert chunks, (mode, label)
        if label == "scoped":
            assert {product_of[c["chunk_id"]] for c in chunks} == {"p-erp"}
    unscoped_products = {
        product_of[c["chunk_id"]] for _, label, d in rows if label == "unscoped"
        for c in d["data"]["chunks"]
    }
    assert unscoped_products == {"p-crm", "p-erp"}  # the scope really removed something


def test_cli_demo_runs_and_rejects_bad_input() -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["demo", "--mode", "naive", "--scope", "category_id=crm"])
    assert ok.exit_code == 0, ok.output
    assert "naive" in ok.output and "category_id" in ok.output
    bad = runner.invoke(app, ["demo", "--mode", "sideways"])
    assert bad.exit_code == 2 and "unknown mode" in bad.output


def test_ingested_demo_builds_its_graph_and_scope_holds() -> None:
    """``hexrag demo --ingest``: the demo's documents go through hexrag's ingestion (scripted
    extraction LLM), and the queries then find the extracted entities, scoped by the product
    metadata carried in LightRAG's encoded ``file_path``."""
    rows = run_demo(
        modes=("local", "mix"), scope=QueryScope(product_id="p-erp"),
        console=Console(file=None, quiet=True), ingest=True,
    )
    assert [(m, s) for m, s, _ in rows] == [
        ("local", "unscoped"), ("mix", "unscoped"), ("local", "scoped"), ("mix", "scoped")
    ]
    for mode, label, data in rows:
        assert data["status"] == "success", (mode, label)
        assert data["data"]["entities"], (mode, label)
        paths = {c["file_path"] for c in data["data"]["chunks"]}
        assert paths, (mode, label)
        if label == "scoped":
            assert all(p.startswith("product_id:p-erp:") for p in paths), paths
    unscoped = {c["file_path"].split(":")[1] for _, label, d in rows if label == "unscoped"
                for c in d["data"]["chunks"]}
    assert unscoped == {"p-crm", "p-erp"}
    out = CliRunner().invoke(app, ["demo", "--ingest", "--mode", "local"])
    assert out.exit_code == 0, out.output
    assert "ingested by hexrag" in out.output
