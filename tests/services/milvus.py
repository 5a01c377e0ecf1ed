"""A throwaway Milvus for tests: Milvus Lite on a ``.db`` file in a temp dir.

Milvus Lite 3.x runs in-process (a gRPC server on a free port, started by pymilvus when it
sees a ``*.db`` URI). One Lite database per test process, started on first use and removed at
exit; each test gets its own collection(s), dropped afterwards. Set ``HEXRAG_MILVUS_URI`` to
run the same tests against a disposable Milvus server instead (``http://host:19530``).
If Milvus cannot start the tests skip, or fail when ``HEXRAG_REQUIRE_BACKENDS=1``.

Use from a test module::

    from tests.services.milvus import milvus_client, milvus_index_factory  # noqa: F401
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.services import require_backends, unavailable

__all__ = [
    "MilvusIndexFactory",
    "StallingProxy",
    "grpc_address",
    "milvus_client",
    "milvus_collection",
    "milvus_index_factory",
    "milvus_uri",
    "require_backends",
    "shared_milvus",
    "startup_seconds",
    "unavailable",
]

HOW_TO = (
    "install the Milvus extra (`pip install pymilvus milvus-lite`, i.e. `hexrag[milvus]`), "
    "or set HEXRAG_MILVUS_URI to a disposable Milvus server"
)


_STATE: dict[str, Any] = {}


def _cleanup_lite(tmpdir: str, db_path: str) -> None:
    try:
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(db_path)
    except Exception:  # best effort at interpreter exit
        pass
    shutil.rmtree(tmpdir, ignore_errors=True)


def shared_milvus() -> tuple[str, Any]:
    """``(uri, MilvusClient)`` of this process's test Milvus (started on first call).

    Skips (or fails, see :func:`unavailable`) when it cannot start.
    """
    if "client" in _STATE:
        return _STATE["uri"], _STATE["client"]
    if "error" not in _STATE:
        started = time.perf_counter()
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:
            _STATE["error"] = f"pymilvus is not installed ({exc}): {HOW_TO}"
        else:
            external = os.environ.get("HEXRAG_MILVUS_URI")
            if external:
                uri = external
            else:
                try:
                    import milvus_lite  # noqa: F401
                except ImportError as exc:
                    _STATE["error"] = f"milvus-lite is not installed ({exc}): {HOW_TO}"
                    uri = ""
                else:
                    tmpdir = tempfile.mkdtemp(prefix="hexrag-milvus-")
                    uri = os.path.join(tmpdir, "hexrag_test.db")
                    atexit.register(_cleanup_lite, tmpdir, uri)
            if uri:
                try:
                    from hexrag.adapters.milvus.index import lite_client_options

                    client = MilvusClient(uri=uri, timeout=30, **lite_client_options(uri))
                    client.list_collections()
                except Exception as exc:
                    _STATE["error"] = f"could not start/reach Milvus at {uri}: {exc}; {HOW_TO}"
                else:
                    _STATE.update(uri=uri, client=client, startup=time.perf_counter() - started)
                    return uri, client
    unavailable(_STATE["error"])
    raise AssertionError("unreachable")  # unavailable() always raises


def startup_seconds() -> float | None:
    """How long the shared Milvus took to start (``None`` before it started)."""
    value = _STATE.get("startup")
    return float(value) if value is not None else None


def new_collection_name(prefix: str = "t") -> str:
    """A collection name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


@pytest.fixture
def milvus_uri() -> str:
    """The URI of the shared test Milvus (a Lite ``.db`` path or ``HEXRAG_MILVUS_URI``)."""
    return shared_milvus()[0]


@pytest.fixture
def milvus_client() -> Any:
    """The shared ``MilvusClient`` (do not close it)."""
    return shared_milvus()[1]


@pytest.fixture
def milvus_collection(milvus_client: Any) -> Iterator[str]:
    """A fresh collection name for one test; the collection is dropped afterwards."""
    name = new_collection_name()
    yield name
    milvus_client.drop_collection(name)


MilvusIndexFactory = Callable[..., Any]


@pytest.fixture
def milvus_index_factory(milvus_client: Any) -> Iterator[MilvusIndexFactory]:
    """``(namespace="entities", dim=16, cosine_threshold=0.2, **options) -> MilvusVectorIndex``.

    Every index gets its own collection (``FLAT`` index unless ``index_type`` is given);
    all of them are dropped when the test ends.
    """
    from hexrag.adapters.milvus import MilvusVectorIndex

    created: list[str] = []

    def make(
        namespace: str = "entities",
        dim: int = 16,
        cosine_threshold: float = 0.2,
        **options: Any,
    ) -> MilvusVectorIndex:
        options.setdefault("index_type", "FLAT")
        options.setdefault("collection", new_collection_name())
        created.append(options["collection"])
        return MilvusVectorIndex(
            milvus_client,
            namespace=namespace,  # type: ignore[arg-type]
            dim=dim,
            cosine_threshold=cosine_threshold,
            **options,
        )

    yield make
    for name in created:
        milvus_client.drop_collection(name)


def grpc_address(uri: str) -> tuple[str, int]:
    """``(host, port)`` of the gRPC endpoint behind ``uri`` (a Lite ``.db`` path or a URL)."""
    from urllib.parse import urlparse

    if uri.endswith(".db"):
        from milvus_lite.server_manager import server_manager_instance

        started = server_manager_instance.start_and_get_uri(uri)  # reuses the running server
        if started is None:
            raise RuntimeError(f"Milvus Lite is not running for {uri}")
        uri = started
    parsed = urlparse(uri)
    return parsed.hostname or "127.0.0.1", parsed.port or 19530


class StallingProxy:
    """A TCP proxy in front of Milvus that can stop forwarding (a hung server, for timeouts).

    While :attr:`stalled` is set, bytes are accepted but not passed on, so calls through the
    proxy hit their gRPC deadline deterministically.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.stalled = threading.Event()
        self._stop = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self._sockets: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def uri(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            upstream = socket.create_connection(self.upstream, timeout=5)
            self._sockets += [client, upstream]
            thread = threading.Thread(target=self._pump, args=(client, upstream), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        held: dict[socket.socket, bytes] = {a: b"", b: b""}
        while not self._stop.is_set():
            try:
                readable, _, _ = select.select([a, b], [], [], 0.05)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    held[peers[sock]] += data
                if not self.stalled.is_set():
                    for sock, data in held.items():
                        if data:
                            sock.sendall(data)
                            held[sock] = b""
            except OSError:
                return

    def close(self) -> None:
        """Stop forwarding and close every socket."""
        self._stop.set()
        for sock in [self._listener, *self._sockets]:
            try:
                sock.close()
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout=2)
