"""``hexrag query``'s work: opening the stack (a LightRAG working directory or a stack TOML,
through :func:`hexrag.bootstrap.open_stack` like every command: the recorded embedder, the
TOML's models, the CLI's engine settings over its ``[settings]``) and rendering the answer,
context, prompt or data JSON (:mod:`hexrag.cli` parses the options)."""

from __future__ import annotations

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
    """Run ``hexrag query`` on the stack ``workdir`` (a directory or a TOML) and return what
    to print (``output``: answer, context, prompt or json; ``models``: the ``--llm``
    configuration for answers)."""
    from pydantic import ValidationError

    from hexrag.env import engine_settings, query_param

    try:
        param = query_param(**param_fields)
        engine_settings(**settings_fields)  # invalid values fail before anything loads
    except ValidationError as exc:
        raise InvalidQuery(_validation_message(exc)) from None
    from rich.console import Console

    from hexrag.bootstrap import build_llm, open_stack

    stack: Path = workdir
    if workdir.suffix.lower() != ".toml":
        from hexrag.adapters.workdir import resolve_workdir

        stack, workspace = resolve_workdir(workdir, workspace), None  # fails before any model
    llm = build_llm(models) if output == "answer" and models is not None else None
    try:
        # progress on stderr only: stdout carries the answer / JSON
        with Console(stderr=True).status(f"loading {workdir} ..."):
            opened = await open_stack(stack, embedder=spec, workspace=workspace, llm=llm,
                                      settings=settings_fields)
        try:
            return await _run_query(opened.engine, query, param, output, stream)
        finally:
            await opened.aclose()
    finally:
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
