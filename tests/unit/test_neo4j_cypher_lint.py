"""Every Cypher statement of the Neo4j adapter passes Neo4j's own parser and semantic checks.

Runs ``tools/cypher-lint/lint.mjs`` (``@neo4j-cypher/language-support``, pinned) once for all
statements, as ``CYPHER 5`` and ``CYPHER 25``, declaring exactly each statement's parameters.
Nothing is installed here: ``npm ci --prefix tools/cypher-lint`` must have run (``.ci/run``
does). Without node or the package this skips, or fails when ``HEXRAG_REQUIRE_BACKENDS=1``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hexrag.adapters.neo4j import cypher
from hexrag.config import StackConfig, workspace_config
from tests.services.neo4j import require_backends

ROOT = Path(__file__).resolve().parents[2]
LINT_DIR = ROOT / "tools" / "cypher-lint"
PACKAGE = LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support" / "package.json"
HOW_TO = "install Node.js >= 20 and run `npm ci --prefix tools/cypher-lint`"
SAMPLE_WORKSPACE = "hexrag_sample-ws.1"
#: The Neo4j label of workspace ``tenant_7`` of a neo4j stack (hexrag.config.workspace_config).
WORKSPACE_LABEL = workspace_config(
    StackConfig(graph_store="neo4j://localhost:7687"), "tenant_7").namespace
#: hexrag's own statements, then the LightRAG-layout adapter's (shared ones linted once).
LINTED: tuple[cypher.Statement, ...] = tuple(
    dict.fromkeys(cypher.ALL_STATEMENTS + cypher.LIGHTRAG_STATEMENTS)
)


def _lint(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "node is not on PATH"
    elif not PACKAGE.exists():
        missing = f"{PACKAGE.relative_to(ROOT)} is missing"
    if missing:
        message = f"Cypher lint unavailable: {missing}; {HOW_TO}"
        if require_backends():
            pytest.fail(message + " (HEXRAG_REQUIRE_BACKENDS=1)", pytrace=False)
        pytest.skip(message)
    proc = subprocess.run(
        [str(node), str(LINT_DIR / "lint.mjs")],
        input=json.dumps(items),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 1), f"lint.mjs crashed ({proc.returncode}): {proc.stderr}"
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


@pytest.fixture(scope="module")
def lint_results() -> list[dict[str, Any]]:
    """One node process for every statement plus the probes below."""
    items = [
        {"query": cypher.render(s, SAMPLE_WORKSPACE), "params": list(s.params)}
        for s in LINTED
    ]
    # Probes: the linter must flag these, or a clean result would mean nothing.
    probes = [
        {"query": cypher.UPSERT_NODES.text, "params": list(cypher.UPSERT_NODES.params)},
        {"query": cypher.render(cypher.GET_NODES, SAMPLE_WORKSPACE), "params": []},
        {"query": "MATCH (n) RETURN nosuchfunction(n) AS x", "params": []},
        {"query": "MATCH (n) RETURN m", "params": []},
    ]
    items += [{**probe, "version": "CYPHER 5"} for probe in probes]
    # every statement again with the label a served workspace gets from the resolver
    items += [
        {"query": cypher.render(s, WORKSPACE_LABEL), "params": list(s.params)} for s in LINTED
    ]
    return _lint(items)


def _diagnostics(results: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    found = [d for r in results if r["index"] == index for d in r["diagnostics"]]
    return found


@pytest.mark.parametrize("statement", LINTED, ids=lambda s: s.name)
def test_statement_is_clean(
    statement: cypher.Statement, lint_results: list[dict[str, Any]]
) -> None:
    index = LINTED.index(statement)
    versions = {r["version"] for r in lint_results if r["index"] == index}
    assert versions == {"CYPHER 5", "CYPHER 25"}
    problems = _diagnostics(lint_results, index)
    text = cypher.render(statement, SAMPLE_WORKSPACE)
    assert problems == [], f"{statement.name}:\n{text}\n{json.dumps(problems, indent=1)}"
    again = len(LINTED) + 4 + index  # rendered with the workspace label
    assert {r["version"] for r in lint_results if r["index"] == again} == {"CYPHER 5",
                                                                           "CYPHER 25"}
    assert _diagnostics(lint_results, again) == [], cypher.render(statement, WORKSPACE_LABEL)
    assert WORKSPACE_LABEL == "hexrag_tenant_7"


def test_linter_catches_known_problems(lint_results: list[dict[str, Any]]) -> None:
    base = len(LINTED)
    unrendered, undeclared, bad_function, bad_variable = (
        _diagnostics(lint_results, base + i) for i in range(4)
    )
    assert unrendered, "an unrendered <LABEL> placeholder must not parse"
    assert any("Parameter $names is not defined" in d["message"] for d in undeclared)
    assert any("nosuchfunction" in d["message"] for d in bad_function)
    assert any("`m` not defined" in d["message"] for d in bad_variable)
