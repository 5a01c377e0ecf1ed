"""Each adapter package declares what it opens (:mod:`hexrag.openings`); configuration and
the builder find the declaration by scheme, so a new scheme is one declaration and one
registration: no edit of :mod:`hexrag.config` or :mod:`hexrag.builder`."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hexrag import openings
from hexrag.adapters.memory import HashingEmbedder
from hexrag.bootstrap import open_stack
from hexrag.config import StackConfig, parse_store
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import QueryParam
from hexrag.devtools.scripted_kg import ScriptedKGLLM
from hexrag.openings import Opening, OpeningContext, Section, registered

REPO = Path(__file__).resolve().parents[2]
TEXT = "Acme Portal supports single sign-on with Okta through SAML."
KINDS = ("memory", "postgres", "redis", "milvus", "qdrant", "neo4j", "workdir")


def test_every_builtin_scheme_is_declared_by_the_module_it_names() -> None:
    for scheme, module in openings.BUILTIN.items():
        opening = openings.for_scheme(scheme)
        assert opening is not None and scheme in opening.schemes, (scheme, module)
        assert module == f"hexrag.adapters.{opening.kind}.opening"
    declared = {s for o in openings.all_openings() for s in o.schemes}
    assert declared == set(openings.BUILTIN), declared ^ set(openings.BUILTIN)
    assert {o.kind for o in openings.all_openings()} >= set(KINDS)


def test_each_declaration_says_roles_sections_and_extra() -> None:
    for opening in openings.all_openings():
        if opening.kind not in KINDS:
            continue
        for role in opening.roles:
            assert role in openings.ROLE_SECTIONS and opening.examples.get(role), opening.kind
            assert opening.holds(openings.ROLE_SECTIONS[role][0]), (opening.kind, role)
        if opening.requires:
            assert opening.extra, opening.kind


def test_a_scheme_imports_only_its_own_adapter_package() -> None:
    code = (
        "import sys\n"
        "from hexrag.config import StackConfig\n"
        "StackConfig(vector_index='postgresql://h/db', chunk_store='redis://r/0').plan()\n"
        "print(sorted(m.split('.')[2] for m in sys.modules\n"
        "      if m.startswith('hexrag.adapters.') and m.count('.') >= 2))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout
    loaded = set(ast.literal_eval(out.strip()))
    assert {"postgres", "redis", "memory"} <= loaded, loaded
    assert not loaded & {"milvus", "qdrant", "neo4j", "openai", "workdir"}, loaded


@pytest.mark.parametrize("module", ["builder.py", "config.py"])
def test_no_backend_is_named_in_the_builder_or_the_configuration(module: str) -> None:
    """No branch per backend (``else: # milvus`` once took every new kind)."""
    tree = ast.parse((REPO / "hexrag" / module).read_text(encoding="utf-8"))
    named = [node.value for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and node.value in
             ("postgres", "milvus", "qdrant", "redis", "neo4j")]
    assert not named, named


# -- a toy scheme, registered by this test alone --------------------------------------------

_TOY_DATA: dict[str, dict[str, Any]] = {}


async def _open_toy(ctx: OpeningContext, section: Section, url: str | None) -> Any:
    """Memory stores kept per ``toy://<name>`` so that a second opening sees the data."""
    from hexrag.adapters.memory.opening import open_memory

    assert url is not None and url.startswith("toy-normalized:")
    held = _TOY_DATA.setdefault(url, {})
    if section not in held:
        held[section] = await open_memory(ctx, section, None)
    return held[section]


TOY = Opening(
    kind="toy",
    schemes=("toy",),
    roles=("vector_index", "graph_store", "chunk_store", "cache"),
    sections={"hexrag": ("vectors", "graph", "chunks", "documents", "kv", "manifest",
                         "llm_cache")},
    open=_open_toy,
    examples={"vector_index": "toy://name"},
    normalize=lambda role, url: "toy-normalized:" + url.split("://", 1)[1],
)


def _toml(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "toy.toml"
    path.write_text(
        "\n".join(f'{role} = "toy://{name}"'
                  for role in ("vector_index", "graph_store", "chunk_store", "cache"))
        + '\nembedder = "hashing:16"\n',
        encoding="utf-8",
    )
    return path


async def test_a_toy_scheme_registered_here_opens_through_bootstrap(tmp_path: Path) -> None:
    toml = _toml(tmp_path, "kb1")
    with pytest.raises(ConfigurationError, match="unknown or unsupported scheme toy://"):
        StackConfig(vector_index="toy://kb1")
    with registered(TOY):
        assert parse_store("graph_store", "toy://kb1").kind == "toy"
        app = await open_stack(toml)
        try:
            assert app.dim == 16
            await app.record_model()
            ingestor = app.ingestor(ScriptedKGLLM("scripted-kg"))
            await ingestor.ingest_text(TEXT, file_path="toy.md")
            await app.commit()
        finally:
            await app.aclose()
        again = await open_stack(toml)
        try:
            assert await again.stores.chunk_store.count() >= 1
            assert await again.stores.graph.count_nodes() >= 1
            assert len(await again.documents.list_docs()) == 1  # type: ignore[union-attr]
            assert again.model is not None and again.model.recorded is not None
            assert again.model.recorded.embedding_dim == 16
            result = await again.engine.query_data(
                TEXT, QueryParam(mode="naive", enable_rerank=False))
            assert result["status"] == "success", result
            assert "Okta" in result["data"]["chunks"][0]["content"]
        finally:
            await again.aclose()
    with pytest.raises(ConfigurationError, match="unknown or unsupported scheme toy://"):
        StackConfig(vector_index="toy://kb1")
    _TOY_DATA.clear()


async def test_a_missing_driver_names_the_extra(tmp_path: Path) -> None:
    missing = Opening(
        kind="toy", schemes=("toy",), roles=TOY.roles, sections=TOY.sections, open=_open_toy,
        extra="toy-extra", requires=("hexrag_no_such_driver_module",), normalize=TOY.normalize,
        examples=TOY.examples,
    )
    with registered(missing), pytest.raises(
        ConfigurationError, match=r"hexrag_no_such_driver_module.*pip install 'hexrag\[toy-extra\]'"
    ):
        await open_stack(_toml(tmp_path, "kb2"), embedder=HashingEmbedder(16))
    _TOY_DATA.clear()
