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


def test_each_declared_extra_is_a_pip_extra_that_brings_the_driver() -> None:
    import re
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    for opening in openings.all_openings():
        if opening.extra is None:
            continue
        assert opening.extra in extras, (opening.kind, opening.extra)
        names = {re.split(r"[<>=\[ ]", req, maxsplit=1)[0].replace("-", "_").lower()
                 for req in extras[opening.extra]}
        for module in opening.requires:
            assert module in names, (opening.kind, module, names)


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


# -- one stack: its sections, and who opens stores -------------------------------------------

_FIELD_SECTION = {"entities": "vectors", "relationships": "vectors", "chunks": "vectors",
                  "graph": "graph", "chunk_store": "chunks", "cache": "llm_cache",
                  "documents": "documents", "kv": "kv", "manifest": "manifest"}


def test_every_store_field_of_the_stack_is_a_section_some_role_opens() -> None:
    import dataclasses
    import typing

    from hexrag.ports.stack import Stack

    opened = {s for sections in openings.ROLE_SECTIONS.values() for s in sections}
    assert opened == set(typing.get_args(Section))
    stores = {f.name for f in dataclasses.fields(Stack)} - {"embedding_model", "closers",
                                                            "scan_only"}
    assert stores == set(_FIELD_SECTION), stores ^ set(_FIELD_SECTION)
    assert set(_FIELD_SECTION.values()) == opened


class _Ctx:
    layout, dim, namespace, lightrag_workspace, workdir = "hexrag", 8, "hexrag", "", None
    manifest_key, cosine_threshold, store_timeout, read_only = "stack", 0.2, 5.0, False

    def option(self, name: str) -> Any:
        return None

    def say(self, message: str) -> None:
        pass

    def close_with(self, name: str, closer: Any) -> None:
        pass

    def commit_with(self, name: str, committer: Any) -> None:
        pass

    async def shared(self, key: str, factory: Any) -> Any:
        return await factory()


async def test_the_memory_declaration_opens_every_section_it_declares() -> None:
    from hexrag.ports import Cache, ChunkStore, DocumentStore, GraphStore, VectorIndex
    from hexrag.ports.cache import KV_NAMESPACES
    from hexrag.ports.stack import ManifestStore

    memory = openings.for_kind("memory")
    ports = {"graph": GraphStore, "chunks": ChunkStore, "documents": DocumentStore,
             "llm_cache": Cache, "manifest": ManifestStore}
    for section in memory.sections["hexrag"]:
        opened = await memory.open_section(_Ctx(), section, None, what="test")
        if section == "vectors":
            assert set(opened) == {"entities", "relationships", "chunks"}
            assert all(isinstance(i, VectorIndex) and i.dim == 8 for i in opened.values())
        elif section == "kv":
            assert set(opened) == set(KV_NAMESPACES)
        else:
            assert isinstance(opened, ports[section]), section
    with pytest.raises(ConfigurationError, match="cannot hold the graph section"):
        ctx = _Ctx()
        ctx.layout = "lightrag"
        await memory.open_section(ctx, "graph", None, what="graph_store = memory")


#: Store constructors and openers that only adapters, the builder and bootstrap call.
_OPENERS = {
    "MemoryVectorIndex", "MemoryGraphStore", "MemoryChunkStore", "MemoryCache",
    "MemoryDocumentStore", "PgVectorIndex", "PgGraphStore", "PgChunkStore", "PgCache",
    "PgDocumentStore", "create_pool", "RedisChunkStore", "RedisCache", "RedisDocumentStore",
    "MilvusVectorIndex", "Neo4jGraphStore", "QdrantVectorIndex", "open_qdrant_indexes",
    "open_lightrag_milvus_indexes", "load_workdir", "empty_workdir_stack",
}
#: Where the package still builds a store itself, and why.
_ALLOWED = {
    # the answer cache of an engine over stores the caller opened itself (embed's contract)
    ("hexrag/embed.py", "MemoryCache"),
    # the parity harness: LightRAG's directory with LightRAG's own embedder wrapper
    ("hexrag/devtools/lightrag_data/hexrag_side.py", "load_workdir"),
}


def test_only_adapters_the_builder_and_bootstrap_open_stores() -> None:
    found = set()
    for path in sorted((REPO / "hexrag").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("hexrag/adapters/") or rel in ("hexrag/builder.py",
                                                        "hexrag/bootstrap.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in _OPENERS:
                    found.add((rel, name))
    assert found == _ALLOWED, found ^ _ALLOWED
