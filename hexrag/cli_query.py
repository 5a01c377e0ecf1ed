"""``hexrag query``'s work: opening the stack (a LightRAG working directory, or a stack TOML
through :func:`hexrag.bootstrap.build_stack`), the recorded embedder, and rendering the
answer, context, prompt or data JSON (:mod:`hexrag.cli` parses the options)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer

from hexrag.core.errors import ConfigurationError, InvalidQuery

__all__ = ["answer_mode", "run_query_command"]


async def run_query_command(
    query: str,
    workdir: Path,
    workspace: str | None,
    spec: str | None,
    output: str,
    param_fields: dict[str, Any],
    settings_fields: dict[str, Any],
    *,
    models: Any = None,
    stream: bool = False,
) -> str:
    from pydantic import ValidationError

    from hexrag.env import engine_settings, query_param

    try:
        param = query_param(**param_fields)
        settings = engine_settings(**settings_fields)
    except ValidationError as exc:
        raise InvalidQuery(_validation_message(exc)) from None
    if workdir.suffix.lower() == ".toml":
        return await _query_toml(query, workdir, workspace, spec, output, param,
                                 settings_fields, models=models, stream=stream)
    from rich.console import Console

    from hexrag.adapters.workdir import resolve_workdir
    from hexrag.adapters.workdir.manifest import WorkdirManifestStore
    from hexrag.bootstrap import build_llm, compose_engine
    from hexrag.embedders import aresolve_embedder
    from hexrag.manifests import choose_embedder

    directory = resolve_workdir(workdir, workspace)  # fails before any model loads
    recorded = await WorkdirManifestStore(directory).read()
    threshold = settings.cosine_threshold
    # progress on stderr only: stdout carries the answer / JSON
    status = Console(stderr=True).status(f"loading {workdir} ...")
    with status:
        if spec is None and recorded is None:
            # the hashing model adapts to the directory (a demo or test directory built with it)
            stack = await asyncio.to_thread(
                _load_workdir, workdir, workspace, threshold, None
            )
            model = await aresolve_embedder(f"hashing:{stack.embedding_dim}")
        else:
            status.update("loading the embedder ...")

            async def unused() -> Any:  # pragma: no cover - a spec or a record is given
                raise AssertionError

            model, _, _ = await choose_embedder(recorded, spec, where=str(directory),
                                                default=unused)
            status.update(f"loading {workdir} ...")
            stack = await asyncio.to_thread(
                _load_workdir, workdir, workspace, threshold, model.dim
            )
    llm = build_llm(models) if output == "answer" and models is not None else None
    try:
        engine = compose_engine(stack, embedder=model, llm=llm, settings=settings)
        return await _run_query(engine, query, param, output, stream)
    finally:
        if llm is not None and hasattr(llm, "aclose"):
            await llm.aclose()


def _load_workdir(workdir: Path, workspace: str | None, threshold: float,
                  dim: int | None) -> Any:
    from hexrag.adapters.workdir import load_workdir

    return load_workdir(workdir, workspace=workspace, embedder_dim=dim,
                        cosine_threshold=threshold, require_complete=True)


async def _query_toml(query: str, path: Path, workspace: str | None, spec: str | None,
                      output: str, param: Any, settings_fields: dict[str, Any], *,
                      models: Any, stream: bool) -> str:
    """``hexrag query --stack stack.toml``: the stack as configured (the CLI's settings over
    the TOML's ``[settings]``), its recorded model unless ``--embedder`` names it."""
    from hexrag.bootstrap import build_llm, build_stack
    from hexrag.config import load_config, workspace_config

    config = workspace_config(load_config(path, embedder=spec), workspace)
    if settings_fields:
        config = config.model_copy(update={"settings": {**config.settings, **settings_fields}})
    llm = build_llm(models) if output == "answer" and models is not None else None
    stack = await build_stack(config, llm=llm)
    try:
        return await _run_query(stack.engine, query, param, output, stream)
    finally:
        await stack.aclose()
        if llm is not None and hasattr(llm, "aclose"):
            await llm.aclose()


async def _run_query(engine: Any, query: str, param: Any, output: str, stream: bool) -> str:
    """Run ``query`` on ``engine`` and render ``output``."""
    if output == "answer":
        if engine.llm is None:
            raise ConfigurationError(
                "--answer/--stream need an LLM: pass --llm openai:MODEL or set llm in the stack"
            )
        return await _answer_output(engine, query, param, stream)
    if output == "json":
        data = await engine.query_data(query, param)
        return json.dumps(data, ensure_ascii=False, indent=2)
    param = param.model_copy(
        update={
            "only_need_context": output == "context",
            "only_need_prompt": output == "prompt",
            "stream": False,
        }
    )
    result = await engine.query(query, param)
    if not isinstance(result, str):  # pragma: no cover - stream is forced off above
        raise ConfigurationError("unexpected streaming result")
    return result


def _validation_message(exc: Any) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
    return "invalid query parameters: " + "; ".join(parts)


# ----------------------------------------------------------------------------------------
# hexrag query: answer mode (an LLM configured through hexrag.config)
# ----------------------------------------------------------------------------------------


def answer_mode(output: str | None, llm_spec: str | None,
                 stack: Path | None = None) -> tuple[str, Any]:
    """The output to produce and, for answers, the model configuration.

    Without an explicit output, answers are the default when an LLM is configured
    (``--llm``, ``HEXRAG_LLM``, LightRAG's ``LLM_BINDING=openai``, a stack TOML's ``llm``),
    else the context.
    """
    if output not in (None, "answer"):
        return output, None
    from hexrag.config import StackConfig, load_config

    named = {"llm": llm_spec} if llm_spec is not None else {}
    models = (load_config(stack, **named) if stack is not None
              and stack.suffix.lower() == ".toml" else StackConfig(**named))
    configured = models.plan().llm.kind != "none"
    if output is None:
        return ("answer" if configured else "context"), (models if configured else None)
    if not configured:
        raise ConfigurationError(
            "--answer/--stream need an LLM: pass --llm openai:MODEL (any OpenAI-compatible "
            "server: set OPENAI_BASE_URL and OPENAI_API_KEY) or set HEXRAG_LLM"
        )
    return "answer", models


async def _answer_output(engine: Any, query: str, param: Any, stream: bool) -> str:
    """Answer ``query`` with the engine's LLM; with ``stream`` print the pieces as they
    arrive and return ``""``."""
    param = param.model_copy(
        update={"only_need_context": False, "only_need_prompt": False, "stream": stream}
    )
    result = await engine.query_result(query, param)
    if result.response_iterator is None:
        return result.content or ""
    async for piece in result.response_iterator:
        typer.echo(piece, nl=False)  # click.echo flushes: each piece shows at once
    return ""
