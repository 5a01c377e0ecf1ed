"""Document parsing off the event loop, in a separate process with a memory limit.

``POST /documents/upload`` hands each file to :class:`ParsePool`: a small pool (one worker by
default) of processes started lazily with the ``spawn`` context, each running
:func:`hexrag.parsers.document_text` under ``RLIMIT_AS = PARSE_MEMORY_BYTES`` and answered
within ``PARSE_TIMEOUT`` seconds (:class:`hexrag.parsers.ParseLimits`). A parse over the
timeout kills its worker; a worker that dies (out of memory, a crash) is replaced by the next
parse. Either way the file is refused with an :class:`~hexrag.core.errors.InvalidDocument`
naming the limit (422 over HTTP), and the server process neither holds the GIL nor grows
while a hostile document is parsed. A file that waits longer than ``PARSE_TIMEOUT`` for a
free worker is answered 503 (busy). One pool per set of limits is shared by the process
(:func:`shared_pool`); its workers end with the server.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import queue
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from hexrag.core.errors import BackendUnavailable, InvalidDocument
from hexrag.parsers import ParseLimits

__all__ = ["ParsePool", "close_pools", "shared_pool"]

#: How long a new worker may take to start (import Python, hexrag and pypdf).
START_TIMEOUT = 60.0


def _serve(conn: Connection, limits: ParseLimits) -> None:  # pragma: no cover - child process
    """The worker: limit the address space, then parse (name, bytes) requests until the
    pipe closes; every answer is ``("ok", text)`` or ``("invalid", message)``."""
    import resource

    try:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = limits.parse_memory_bytes
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):
        pass
    from hexrag.parsers import document_text

    conn.send(("ready", ""))
    while True:
        try:
            name = conn.recv()
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        reply: tuple[str, str]
        try:
            reply = ("ok", document_text(data, name, limits))
        except InvalidDocument as exc:
            reply = ("invalid", str(exc))
        except MemoryError:
            reply = ("invalid", f"{name[:120]} needs more memory than the parser may use "
                                f"(PARSE_MEMORY_BYTES={limits.parse_memory_bytes:,})")
        except Exception as exc:  # a parser bug must not end the worker silently
            reply = ("invalid", f"{name[:120]} could not be read ({type(exc).__name__})")
        del data
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return


class _Worker:
    """One worker process and its pipe; started on first use, replaced after a death."""

    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self.proc: BaseProcess | None = None
        self.conn: Connection | None = None

    def _start(self) -> Connection:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(child, self.limits), daemon=True,
                           name="hexrag-parser")
        proc.start()
        child.close()
        self.proc, self.conn = proc, parent
        if not parent.poll(START_TIMEOUT) or parent.recv()[0] != "ready":
            self.stop()
            raise BackendUnavailable("the document parser process did not start")
        return parent

    def stop(self) -> None:
        """Kill the process (if any) and forget it."""
        proc, conn = self.proc, self.conn
        self.proc = self.conn = None
        if conn is not None:
            conn.close()
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join(5)

    def _send(self, data: bytes, name: str) -> Connection:
        """Hand the request to a live worker (a worker found dead is replaced once)."""
        for attempt in (1, 2):
            conn = self.conn if self.proc is not None and self.proc.is_alive() else None
            if conn is None:
                self.stop()
                conn = self._start()
            try:
                conn.send(name)
                conn.send_bytes(data)
            except (OSError, ValueError):
                self.stop()
                if attempt == 2:
                    raise BackendUnavailable("the document parser process failed") from None
                continue
            return conn
        raise AssertionError("unreachable")

    def parse(self, data: bytes, name: str) -> str:
        """The text of ``data`` parsed by this worker, within ``parse_timeout``."""
        label = name if len(name) <= 120 else name[:117] + "..."
        timeout = self.limits.parse_timeout
        conn = self._send(data, name)
        deadline = time.monotonic() + timeout
        try:
            ready = conn.poll(max(0.0, deadline - time.monotonic()))
            if not ready:
                self.stop()
                raise InvalidDocument(f"{label} took longer than PARSE_TIMEOUT "
                                      f"({timeout:g} s) to parse")
            kind, payload = conn.recv()
        except (EOFError, OSError):
            self.stop()
            raise InvalidDocument(f"{label}: the parser process died while reading it "
                                  f"(over PARSE_MEMORY_BYTES="
                                  f"{self.limits.parse_memory_bytes:,}?)") from None
        if kind != "ok":
            raise InvalidDocument(str(payload))
        return str(payload)


class ParsePool:
    """``workers`` parser processes under ``limits`` (see the module docstring)."""

    def __init__(self, limits: ParseLimits, workers: int = 1) -> None:
        self.limits = limits
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._workers = [_Worker(limits) for _ in range(max(1, workers))]
        for worker in self._workers:
            self._idle.put(worker)

    async def parse(self, data: bytes, name: str) -> str:
        """The text of the document ``data`` named ``name`` (see
        :func:`hexrag.parsers.document_text`), parsed in a worker process."""
        return await asyncio.to_thread(self.parse_blocking, data, name)

    def parse_blocking(self, data: bytes, name: str) -> str:
        """:meth:`parse` for a thread that may block."""
        try:
            worker = self._idle.get(timeout=self.limits.parse_timeout)
        except queue.Empty:
            raise BackendUnavailable("the document parser is busy; retry later") from None
        try:
            return worker.parse(data, name)
        finally:
            self._idle.put(worker)

    def pids(self) -> list[int]:
        """The process ids of the running workers (for tests and diagnostics)."""
        return [w.proc.pid for w in self._workers
                if w.proc is not None and w.proc.pid is not None and w.proc.is_alive()]

    def close(self) -> None:
        """Stop the workers (the next parse starts them again)."""
        for worker in self._workers:
            worker.stop()


_POOLS: dict[ParseLimits, ParsePool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(limits: ParseLimits | None = None) -> ParsePool:
    """The process's pool for ``limits`` (default: :meth:`ParseLimits.from_env`)."""
    limits = ParseLimits.from_env() if limits is None else limits
    with _POOLS_LOCK:
        pool = _POOLS.get(limits)
        if pool is None:
            pool = _POOLS[limits] = ParsePool(limits)
        return pool


def close_pools() -> None:
    """Stop the workers of every shared pool (they start again on the next parse)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for pool in pools:
        pool.close()
