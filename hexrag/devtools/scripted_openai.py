"""A small, real OpenAI-compatible HTTP server for tests, driven by a script of replies.

No model can run in CI, so the model adapters are tested against this server instead: it
speaks the OpenAI wire format over real HTTP on loopback and plays the cases a real server
produces - plain and streaming (SSE) chat completions, ``<think>`` prefixes and DeepSeek-style
``reasoning_content``, fenced and malformed JSON, HTTP 429 with ``Retry-After``, 5xx, a broken
response body, a response slower than the client's timeout, a connection dropped mid-stream -
plus ``/v1/embeddings`` (deterministic vectors) and ``/v1/rerank`` (Cohere/Jina shape).

Usage::

    with ScriptedOpenAIServer() as server:
        server.script("chat", Reply.rate_limited(retry_after="0"), Reply.text("hello"))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        ...
        assert server.count("chat") == 2
        server.reset()  # next test: empty scripts, records and counters, same server

Each route (``"chat"``, ``"embeddings"``, ``"rerank"``) has a FIFO script; when it is empty the
route's default reply is used (chat: ``"echo: <last user message>"``; embeddings: vectors from
:func:`expected_embedding`; rerank: word-overlap scores, best first). Every request is recorded
(:attr:`ScriptedOpenAIServer.requests`) and the server tracks how many requests of each route
were in flight at once, so tests can check retries and concurrency limits by counting, never
by timing.

The server binds ``127.0.0.1`` on a free port only, runs uvicorn (the ``api`` extra) on a
daemon thread, and stops with the context manager: slow replies are cut short at stop.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import re
import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAIServer",
    "expected_embedding",
    "overlap_score",
]

ROUTES: tuple[str, ...] = ("chat", "embeddings", "rerank")

_Send = Any
_Receive = Any


@dataclass(frozen=True)
class Reply:
    """One scripted server reply.

    With no field set the route's default reply is produced. ``status != 200`` gives an
    OpenAI-style error body ``{"error": {"message", "type", "code"}}`` with ``headers``.
    ``raw_body``/``json_body`` replace the whole body. ``delay`` waits before answering
    (cut short when the server stops). ``wait_for_in_flight`` holds the reply until that many
    requests of the route are in flight at once (or ``gate_timeout`` passes), which lets a
    test observe a concurrency limit deterministically. ``abort_after`` (streaming only) drops
    the connection after that many content pieces.
    """

    content: str | None = None
    reasoning: str | None = None
    pieces: tuple[str, ...] | None = None
    status: int = 200
    error: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None
    content_type: str = "application/json"
    json_body: Any = None
    delay: float = 0.0
    wait_for_in_flight: int = 0
    gate_timeout: float = 5.0
    abort_after: int | None = None
    finish_reason: str = "stop"

    # ---- convenience constructors -------------------------------------------------------

    @classmethod
    def text(cls, content: str, *, pieces: Sequence[str] | None = None) -> Reply:
        """A normal answer; ``pieces`` sets the streamed chunks (default: word by word)."""
        return cls(content=content, pieces=tuple(pieces) if pieces is not None else None)

    @classmethod
    def think(cls, thought: str, answer: str) -> Reply:
        """An answer prefixed with a ``<think>…</think>`` block inside ``content``."""
        return cls(content=f"<think>{thought}</think>{answer}")

    @classmethod
    def reasoning_only(cls, reasoning: str, content: str = "") -> Reply:
        """DeepSeek-style: the thought in ``reasoning_content``, ``content`` possibly empty."""
        return cls(content=content, reasoning=reasoning)

    @classmethod
    def fenced_json(cls, obj: Any) -> Reply:
        """A JSON object wrapped in a Markdown code fence, as small models often answer."""
        return cls(content="```json\n" + json.dumps(obj, ensure_ascii=False) + "\n```")

    @classmethod
    def malformed_json(cls) -> Reply:
        """A well-formed HTTP response whose *content* is broken JSON."""
        return cls(content='{"high_level_keywords": ["alpha", "beta"], "low_level_keywords": [')

    @classmethod
    def broken_body(cls) -> Reply:
        """HTTP 200 whose body is not valid JSON at all."""
        return cls(raw_body=b'{"id": "chatcmpl-x", "choices": [', content_type="application/json")

    @classmethod
    def rate_limited(cls, retry_after: str | None = "0", *, code: str | None = None) -> Reply:
        """HTTP 429, with a ``Retry-After`` header when ``retry_after`` is given."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls(
            status=429,
            error="Rate limit reached",
            error_type="rate_limit_exceeded" if code is None else code,
            error_code=code,
            headers=headers,
        )

    @classmethod
    def server_error(cls, status: int = 500, message: str = "internal error") -> Reply:
        """A 5xx error."""
        return cls(status=status, error=message, error_type="server_error")

    @classmethod
    def bad_request(cls, message: str) -> Reply:
        """HTTP 400 with ``message`` (e.g. a server that does not know ``response_format``)."""
        return cls(status=400, error=message, error_type="invalid_request_error")

    @classmethod
    def unauthorized(cls) -> Reply:
        """HTTP 401, as for a wrong API key."""
        return cls(status=401, error="Incorrect API key provided", error_type="invalid_api_key")

    @classmethod
    def slow(cls, seconds: float, content: str = "too late") -> Reply:
        """An answer sent only after ``seconds`` (for client timeouts)."""
        return cls(content=content, delay=seconds)


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the server received it (``headers`` keys are lower-case)."""

    route: str
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    raw: bytes


def expected_embedding(text: str, dim: int) -> np.ndarray:
    """The vector the server's default embeddings reply gives ``text`` (unit length, float32)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    vec = np.random.default_rng(seed).standard_normal(dim)
    vec = vec / np.linalg.norm(vec)
    return vec.astype(np.float32)


_WORD = re.compile(r"\w+", re.UNICODE)


def overlap_score(query: str, document: str) -> float:
    """The default rerank score: the share of the query's distinct words found in ``document``."""
    q = {w.lower() for w in _WORD.findall(query)}
    if not q:
        return 0.0
    d = {w.lower() for w in _WORD.findall(document)}
    return len(q & d) / len(q)


def _split_pieces(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text) or ([text] if text else [])


class ScriptedOpenAIServer:
    """An OpenAI-compatible server on ``127.0.0.1``; see the module docstring.

    ``api_key``: when set, requests without ``Authorization: Bearer <api_key>`` get 401.
    ``embedding_dim``: the default vector length (a request's ``dimensions`` overrides it).
    ``embeddings_out_of_order``: return ``data`` items in reverse order (``index`` kept right),
    as some servers do.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        embedding_dim: int = 16,
        embeddings_out_of_order: bool = False,
        model: str = "scripted-model",
    ) -> None:
        self.api_key = api_key
        self.embedding_dim = embedding_dim
        self.embeddings_out_of_order = embeddings_out_of_order
        self.model = model
        self._initial = (api_key, embedding_dim, embeddings_out_of_order)
        self._lock = threading.Lock()
        self._scripts: dict[str, deque[Reply]] = {r: deque() for r in ROUTES}
        self._defaults: dict[str, Reply] = {r: Reply() for r in ROUTES}
        self._requests: list[RecordedRequest] = []
        self._in_flight: dict[str, int] = defaultdict(int)
        self._max_in_flight: dict[str, int] = defaultdict(int)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Set (in the server loop) to cut pending delays and gates short; replaced by reset().
        self._release = asyncio.Event()
        self._generation = 0
        self._port: int | None = None

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self, port: int = 0) -> ScriptedOpenAIServer:
        """Start serving on loopback ``port`` (0: a free one); returns once the server
        accepts requests."""
        import uvicorn

        if self._server is not None:
            raise RuntimeError("server already started")
        self._loop = None  # a new uvicorn loop; events of an earlier run must not leak into it
        self._release = asyncio.Event()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            # No dictConfig of the process's logging: uvicorn's own loggers stay as they are.
            log_config=None,
            log_level=None,
            access_log=False,
            lifespan="off",
            interface="asgi3",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name=f"scripted-openai-{self._port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise RuntimeError("scripted OpenAI server failed to start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop the server (cutting slow replies short) and wait for its thread."""
        if self._server is None:
            return
        self._release_pending(self._release)
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def reset(self) -> None:
        """Forget scripts, defaults, records and counters; release delayed replies at once.

        Lets one running server serve many tests (starting one costs little, stopping one
        about 0.2 s), each from a clean state. Settings return to the constructor's values.
        """
        with self._lock:
            for script in self._scripts.values():
                script.clear()
            self._defaults = {r: Reply() for r in ROUTES}
            self._chat_responder = None
            self._requests.clear()
            self._in_flight = defaultdict(int)
            self._max_in_flight = defaultdict(int)
            self._generation += 1
            old, self._release = self._release, asyncio.Event()
            self.api_key, self.embedding_dim, self.embeddings_out_of_order = self._initial
        self._release_pending(old)

    def _release_pending(self, event: asyncio.Event) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- addresses ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port."""
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``…/v1``)."""
        return self.url + "/v1"

    @property
    def rerank_url(self) -> str:
        """The rerank endpoint (``…/v1/rerank``)."""
        return self.url + "/v1/rerank"

    # ---- script and records -------------------------------------------------------------

    def script(self, route: str, *replies: Reply) -> None:
        """Queue ``replies`` for ``route`` (``"chat"``, ``"embeddings"``, ``"rerank"``)."""
        self._check_route(route)
        with self._lock:
            self._scripts[route].extend(replies)

    def set_chat_responder(self, responder: Any) -> None:
        """Compute default chat replies from the request's ``messages``
        (``responder(messages) -> str``; ``None``: the echo)."""
        with self._lock:
            self._chat_responder = responder

    def set_default(self, route: str, reply: Reply) -> None:
        """The reply ``route`` gives when its script is empty."""
        self._check_route(route)
        with self._lock:
            self._defaults[route] = reply

    def pending(self, route: str) -> int:
        """Scripted replies not yet used."""
        with self._lock:
            return len(self._scripts[route])

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, route: str) -> list[RecordedRequest]:
        """The requests of one route."""
        return [r for r in self.requests if r.route == route]

    def count(self, route: str) -> int:
        """How many requests ``route`` received."""
        return len(self.requests_for(route))

    def max_in_flight(self, route: str) -> int:
        """The largest number of ``route`` requests that were being served at once."""
        with self._lock:
            return self._max_in_flight[route]

    @staticmethod
    def _check_route(route: str) -> None:
        if route not in ROUTES:
            raise ValueError(f"unknown route {route!r}; one of {ROUTES}")

    # ---- ASGI application ---------------------------------------------------------------

    async def _app(self, scope: dict[str, Any], receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            return
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        path: str = scope["path"]
        method: str = scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        route = self._route_of(path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if route is None:
            if method == "GET" and path.rstrip("/").endswith("/models"):
                await self._send_json(send, 200, {
                    "object": "list",
                    "data": [{"id": self.model, "object": "model", "owned_by": "hexrag"}],
                })
            else:
                await self._send_error(send, 404, f"unknown route {path}", "not_found", None, {})
            return
        with self._lock:
            self._requests.append(RecordedRequest(route, method, path, headers, body, raw))
            script = self._scripts[route]
            reply = script.popleft() if script else self._defaults[route]
            self._in_flight[route] += 1
            self._max_in_flight[route] = max(self._max_in_flight[route], self._in_flight[route])
            generation, release = self._generation, self._release
        try:
            await self._serve(route, reply, headers, body, send, release)
        finally:
            with self._lock:
                if generation == self._generation:
                    self._in_flight[route] -= 1

    @staticmethod
    def _route_of(path: str) -> str | None:
        p = path.rstrip("/")
        if p.endswith("/chat/completions"):
            return "chat"
        if p.endswith("/embeddings"):
            return "embeddings"
        if p.endswith("/rerank"):
            return "rerank"
        return None

    async def _serve(
        self,
        route: str,
        reply: Reply,
        headers: Mapping[str, str],
        body: Any,
        send: _Send,
        release: asyncio.Event,
    ) -> None:
        if reply.wait_for_in_flight:
            deadline = time.monotonic() + reply.gate_timeout
            while time.monotonic() < deadline and not release.is_set():
                with self._lock:
                    if self._in_flight[route] >= reply.wait_for_in_flight:
                        break
                await asyncio.sleep(0.002)
        if reply.delay > 0:
            try:
                await asyncio.wait_for(release.wait(), timeout=reply.delay)
            except TimeoutError:
                pass
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            await self._send_error(
                send, 401, "Incorrect API key provided", "invalid_request_error",
                "invalid_api_key", {},
            )
            return
        if reply.status != 200:
            await self._send_error(
                send, reply.status, reply.error or f"HTTP {reply.status}",
                reply.error_type or "error", reply.error_code, reply.headers,
            )
            return
        if reply.raw_body is not None:
            await self._send_raw(send, 200, reply.raw_body, reply.content_type, reply.headers)
            return
        if reply.json_body is not None:
            await self._send_json(send, 200, reply.json_body, reply.headers)
            return
        if not isinstance(body, dict):
            await self._send_error(send, 400, "body must be a JSON object", "invalid_request_error",
                                   None, {})
            return
        if route == "chat":
            await self._chat(reply, body, send)
        elif route == "embeddings":
            await self._embeddings(reply, body, send)
        else:
            await self._rerank(reply, body, send)

    # ---- chat ---------------------------------------------------------------------------

    async def _chat(self, reply: Reply, body: dict[str, Any], send: _Send) -> None:
        content = reply.content
        responder = getattr(self, "_chat_responder", None)
        if content is None and reply.reasoning is None and responder is not None:
            content = responder(body.get("messages") or [])
        if content is None and reply.reasoning is None:
            user = ""
            for sent in body.get("messages") or []:
                if isinstance(sent, dict) and sent.get("role") == "user":
                    user = str(sent.get("content"))
            content = f"echo: {user}"
        model = str(body.get("model") or self.model)
        if body.get("stream"):
            await self._chat_stream(reply, content or "", model, send)
            return
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        await self._send_json(send, 200, {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }, reply.headers)

    async def _chat_stream(self, reply: Reply, content: str, model: str, send: _Send) -> None:
        await send({
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
                        *((k.encode(), v.encode()) for k, v in reply.headers.items())],
        })

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            payload = {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return b"data: " + json.dumps(payload).encode() + b"\n\n"

        async def emit(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})
            await asyncio.sleep(0)

        await emit(chunk({"role": "assistant", "content": ""}))
        if reply.reasoning:
            for piece in _split_pieces(reply.reasoning):
                await emit(chunk({"reasoning_content": piece}))
        pieces = list(reply.pieces) if reply.pieces is not None else _split_pieces(content)
        for i, piece in enumerate(pieces):
            if reply.abort_after is not None and i >= reply.abort_after:
                # Raising after the response started makes uvicorn drop the connection.
                raise ConnectionAbortedError("scripted abort mid-stream")
            await emit(chunk({"content": piece}))
        await emit(chunk({}, reply.finish_reason))
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    # ---- embeddings ---------------------------------------------------------------------

    async def _embeddings(self, reply: Reply, body: dict[str, Any], send: _Send) -> None:
        inp = body.get("input")
        texts = [inp] if isinstance(inp, str) else inp
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            await self._send_error(send, 400, "'input' must be a non-empty string or array of "
                                   "strings", "invalid_request_error", None, {})
            return
        dim = body.get("dimensions") or self.embedding_dim
        b64 = body.get("encoding_format") == "base64"
        data: list[dict[str, Any]] = []
        for i, text in enumerate(texts):
            vec = expected_embedding(text, int(dim))
            emb: Any = base64.b64encode(vec.tobytes()).decode("ascii") if b64 else vec.tolist()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        if self.embeddings_out_of_order:
            data.reverse()
        await self._send_json(send, 200, {
            "object": "list",
            "data": data,
            "model": str(body.get("model") or self.model),
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }, reply.headers)

    # ---- rerank -------------------------------------------------------------------------

    async def _rerank(self, reply: Reply, body: dict[str, Any], send: _Send) -> None:
        query = body.get("query")
        docs = body.get("documents")
        if not isinstance(query, str) or not isinstance(docs, list):
            await self._send_error(send, 400, "'query' and 'documents' are required",
                                   "invalid_request_error", None, {})
            return
        texts = [d if isinstance(d, str) else str((d or {}).get("text", "")) for d in docs]
        scored = sorted(
            ((overlap_score(query, t), i) for i, t in enumerate(texts)),
            key=lambda si: (-si[0], si[1]),
        )
        top_n = body.get("top_n")
        if isinstance(top_n, int) and top_n >= 0:
            scored = scored[:top_n]
        await self._send_json(send, 200, {
            "id": "rerank-scripted",
            "model": body.get("model"),
            "results": [{"index": i, "relevance_score": s} for s, i in scored],
            "usage": {"total_tokens": len(texts)},
        }, reply.headers)

    # ---- low-level senders --------------------------------------------------------------

    async def _send_raw(
        self, send: _Send, status: int, body: bytes, content_type: str, headers: Mapping[str, str]
    ) -> None:
        await send({
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                *((k.encode(), v.encode()) for k, v in headers.items()),
            ],
        })
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _send_json(
        self, send: _Send, status: int, obj: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        body = json.dumps(copy.deepcopy(obj), ensure_ascii=False).encode("utf-8")
        await self._send_raw(send, status, body, "application/json", headers or {})

    async def _send_error(
        self,
        send: _Send,
        status: int,
        message: str,
        error_type: str,
        code: str | None,
        headers: Mapping[str, str],
    ) -> None:
        await self._send_json(
            send,
            status,
            {"error": {"message": message, "type": error_type, "param": None, "code": code}},
            headers,
        )


def main(argv: list[str] | None = None) -> None:
    """``python -m hexrag.devtools.scripted_openai [--port 8765]``: an offline stand-in for
    an OpenAI-compatible server, answering LightRAG's keyword, extraction, gleaning, summary
    and answer prompts deterministically from the prompt's own text
    (:func:`hexrag.devtools.standin_llm.standin_responder`), to try ``hexrag ingest`` /
    ``hexrag query`` / ``hexrag serve`` and the playground without a model. Not a model."""
    import argparse

    from hexrag.devtools.standin_llm import standin_responder

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args(argv)
    server = ScriptedOpenAIServer()
    server.set_chat_responder(standin_responder)
    server.start(args.port)
    print(f"scripted OpenAI-compatible server on http://127.0.0.1:{server.port}/v1 "
          "(Ctrl-C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
