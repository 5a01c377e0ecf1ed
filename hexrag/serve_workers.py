"""``hexrag serve --workers N``: N worker processes sharing one pre-bound listening socket.

The parent binds the port (so a port in use fails at once, before anything is loaded), then
starts N processes with the ``spawn`` start method (a fresh interpreter each: no event loop,
driver pool or thread inherited from the parent). Each worker receives the socket and the
command's options, loads the same configuration and builds its own stack, then runs uvicorn
on the shared socket; the kernel hands each new connection to one of the accepting workers.

Workers share nothing but the stores: the answer cache and the corpus version live in the
stack's cache (a PostgreSQL table or Redis keys for a server-backed stack, see
:mod:`hexrag.core.versioning`), so an answer computed by one worker is a cache hit in
another, and a document ingested through one worker bumps the version every worker reads
before answering. A workspace named by a request is opened by the worker that receives it,
from the same stores. A stack held in the worker's memory (a LightRAG working directory, the
memory stores) is *not* shared: each worker has its own copy, which is why ``--workers`` is
meant for server-backed stacks.

Each response carries ``X-Hexrag-Worker: <k>`` (1..N) so a client (or a test) can tell which
worker answered. SIGINT / SIGTERM to the parent stop every worker gracefully; a worker that
fails to start (bad configuration, empty stack, unreachable server) stops the others, and
the parent exits with the worker's status. Workers are not restarted.

Unfinished documents (left ``pending`` or ``processing`` in the shared document store) are
resumed by worker 1 only, and only once nobody has touched them for a while
(:mod:`hexrag.api.resume_policy`): a worker opening a stack or a workspace must not ingest
again a document another worker is ingesting.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["WORKER_HEADER", "WorkerJob", "run_workers"]

#: The response header naming the worker (1..N) that answered.
WORKER_HEADER = "x-hexrag-worker"
#: How long the parent waits for the workers' graceful shutdown before killing them.
STOP_SECONDS = 30.0


@dataclass(frozen=True)
class WorkerJob:
    """What each worker needs to build its stack and serve (plain, picklable values).

    ``config`` holds :func:`hexrag.config.load_config`'s keyword arguments; ``key`` and
    ``cors_origins`` the API options of the command; ``serve`` the keyword arguments of the
    CLI's ``_serve`` besides the settings, socket and API (host, port, log_level,
    allow_empty).
    """

    config: dict[str, Any]
    key: str | None = None
    cors_origins: str | None = None
    serve: dict[str, Any] = field(default_factory=dict)


def _worker_main(index: int, count: int, sock: Any, job: WorkerJob) -> None:
    """Worker ``index`` of ``count``: load the configuration, build the stack, serve on
    ``sock``. Only worker 1 resumes unfinished documents, and only those nobody is working
    on (:mod:`hexrag.api.resume_policy`)."""
    import asyncio

    import typer

    from hexrag.api import resume_policy
    from hexrag.api.limits import ApiSettings
    from hexrag.cli_common import _guarded
    from hexrag.config import load_config
    from hexrag.serve_run import serve

    resume_policy.configure(resume_policy.ResumePolicy(worker=index, workers=count))

    def run() -> None:
        settings = load_config(**job.config)
        env = dict(os.environ)
        if job.cors_origins is not None:
            env["CORS_ORIGINS"] = job.cors_origins
        api = ApiSettings.from_env(env, api_key=job.key)
        asyncio.run(serve(settings, sock=sock, api=api,
                               server_headers=[(WORKER_HEADER, str(index))], **job.serve))

    try:
        _guarded(run)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # Ctrl-C while the stack was still being built
        sys.exit(130)
    finally:
        sock.close()


def run_workers(count: int, sock: Any, job: WorkerJob) -> int:
    """Run ``count`` workers serving on ``sock`` until a signal or a worker's exit.

    Returns the exit status: 0 after a requested stop, else the status of the first worker
    that ended on its own (1 for one killed by a signal). Every worker is stopped before
    this returns.
    """
    if count < 1:
        raise ValueError("count must be at least 1")
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_worker_main, args=(k, count, sock, job),
                        name=f"hexrag-worker-{k}")
        for k in range(1, count + 1)
    ]
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for proc in workers:
            if proc.pid is not None and proc.exitcode is None:
                os.kill(proc.pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    status = 0
    try:
        for proc in workers:
            proc.start()
        alive = list(workers)
        while alive:
            ended = wait([proc.sentinel for proc in alive])
            for proc in [p for p in alive if p.sentinel in ended]:
                proc.join()
                alive.remove(proc)
                if not stopping:  # a worker ended on its own: stop the others
                    code = proc.exitcode or 0
                    status = code if code > 0 else 1
                    if code < 0:
                        print(f"hexrag: error: {proc.name} died (signal {-code})",
                              file=sys.stderr)
                    stop(signal.SIGTERM, None)
        return status
    finally:
        for proc in workers:
            if proc.pid is not None and proc.exitcode is None:
                proc.join(STOP_SECONDS)
                if proc.exitcode is None:
                    proc.kill()
                    proc.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def job_for(
    *,
    config: Path | None,
    env_file: Path | None,
    workdir: Path | None,
    workspace: str | None,
    embedder: str | None,
    llm: str | None,
    reranker: str | None,
    key: str | None,
    cors_origins: str | None,
    serve: dict[str, Any],
) -> WorkerJob:
    """The :class:`WorkerJob` for ``hexrag serve``'s options."""
    return WorkerJob(
        config={"path": config, "env_file": env_file, "workdir": workdir,
                "workspace": workspace, "embedder": embedder, "llm": llm,
                "reranker": reranker},
        key=key, cors_origins=cors_origins, serve=serve,
    )
