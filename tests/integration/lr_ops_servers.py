"""LightRAG 1.5.7's whole server (``lightrag_server.create_app``) and ``hexrag serve`` side by
side on one working directory, both talking to the offline stand-in model.

* :func:`standin_model`: the scripted OpenAI-compatible server answering with
  :mod:`hexrag.devtools.standin_llm` (keywords, extraction, summaries, answers from the
  prompt) and deterministic embeddings of ``DIM`` floats;
* :class:`LightRAGFull`: LightRAG's server as ``lightrag-server`` builds it, configured by
  its environment variables only (``WORKING_DIR``, ``LLM_BINDING=openai`` ...), in its own
  process (``python -m tests.integration.lr_ops_servers``); it ingests the documents of a
  test through its own ``/documents/text``, so the working directory is LightRAG's own;
* :class:`HexragServe`: ``hexrag serve --workdir`` (the CLI, its own process) on a copy of
  that directory, with the same model (``openai:`` embedder and LLM).

Both run with a clean environment plus what the test passes (``AUTH_ACCOUNTS``...).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from hexrag.devtools.scripted_openai import ScriptedOpenAIServer
from hexrag.devtools.standin_llm import standin_responder

DIM = 32
LLM_MODEL = "standin"
EMBED_MODEL = "standin-embed"
REPO = Path(__file__).resolve().parents[2]
#: Variables that would change either server's configuration; never inherited.
_AMBIENT = ("OPENAI_", "LLM_", "EMBEDDING_", "HEXRAG_", "LIGHTRAG_", "POSTGRES_", "WORKSPACE",
            "AUTH_", "TOKEN_", "WHITELIST_PATHS", "RERANK", "WEBUI_", "OLLAMA_", "INPUT_DIR",
            "WORKING_DIR", "TOP_K", "CHUNK_TOP_K", "MAX_", "COSINE_", "KG_", "JWT_", "GUEST_")


def standin_model() -> ScriptedOpenAIServer:
    """The started stand-in model server (stop it with ``.stop()``)."""
    server = ScriptedOpenAIServer(embedding_dim=DIM)
    server.set_chat_responder(standin_responder)
    return server.start()


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _base_env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_AMBIENT)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


class _Process:
    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], cwd: Path,
                 url: str, ready: str, log: Path) -> None:
        self.name, self.url, self.log = name, url, log
        self._out = log.open("w")
        self.proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=self._out,
                                     stderr=subprocess.STDOUT)
        self.client = httpx.Client(base_url=url, timeout=60)
        deadline = time.monotonic() + 180
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited: {log.read_text()[-4000:]}")
            try:
                if self.client.get(ready).status_code < 500:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{name} did not start: {log.read_text()[-4000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop the process (its own pid: SIGINT, then kill)."""
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        self._out.close()


class LightRAGFull(_Process):
    """LightRAG's whole server on ``workdir`` (``INPUT_DIR`` beside it)."""

    def __init__(self, workdir: Path, model: ScriptedOpenAIServer, log: Path,
                 env: Mapping[str, str] | None = None) -> None:
        port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        inputs = workdir.parent / f"{workdir.name}-inputs"
        inputs.mkdir(exist_ok=True)
        full = _base_env({
            "HOST": "127.0.0.1", "PORT": str(port), "WORKING_DIR": str(workdir),
            "INPUT_DIR": str(inputs), "LLM_BINDING": "openai",
            "LLM_BINDING_HOST": model.base_url, "LLM_BINDING_API_KEY": "stub",
            "LLM_MODEL": LLM_MODEL, "EMBEDDING_BINDING": "openai",
            "EMBEDDING_BINDING_HOST": model.base_url, "EMBEDDING_BINDING_API_KEY": "stub",
            "EMBEDDING_MODEL": EMBED_MODEL, "EMBEDDING_DIM": str(DIM), "LOG_LEVEL": "WARNING",
            **(env or {}),
        })
        super().__init__("LightRAG's server", [sys.executable, "-m", "tests.integration."
                                                "lr_ops_servers"], full, log.parent,
                         f"http://127.0.0.1:{port}", "/auth-status", log)

    def ingest(self, texts: Mapping[str, str], timeout: float = 120) -> None:
        """Insert ``texts`` (file name -> text) through ``/documents/texts`` and wait until
        every document is processed."""
        r = self.client.post("/documents/texts", json={"texts": list(texts.values()),
                                                       "file_sources": list(texts)})
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + timeout
        while True:
            counts = self.client.get("/documents/status_counts").json()["status_counts"]
            busy = self.client.get("/documents/pipeline_status").json()["busy"]
            if counts.get("processed") == len(texts) and not busy:
                return
            if counts.get("failed") or time.monotonic() > deadline:
                raise AssertionError(f"LightRAG did not process the documents: {counts}")
            time.sleep(0.3)


class HexragServe(_Process):
    """``hexrag serve --workdir <copy of workdir>`` with the stand-in model."""

    def __init__(self, workdir: Path, copy_to: Path, model: ScriptedOpenAIServer, log: Path,
                 args: Sequence[str] = (), env: Mapping[str, str] | None = None) -> None:
        port = free_port()
        shutil.copytree(workdir, copy_to)
        full = _base_env({"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "stub",
                          "EMBEDDING_DIM": str(DIM), "COLUMNS": "200", **(env or {})})
        super().__init__("hexrag serve", [
            sys.executable, "-m", "hexrag.cli", "serve", "--workdir", str(copy_to),
            "--embedder", f"openai:{EMBED_MODEL}", "--llm", f"openai:{LLM_MODEL}",
            "--port", str(port), "--log-level", "warning", *args], full, log.parent,
            f"http://127.0.0.1:{port}", "/auth-status", log)


class Pair:
    """LightRAG's server and hexrag's on the same data: one request sent to each."""

    def __init__(self, lr: _Process, hx: _Process) -> None:
        self.lr, self.hx = lr, hx

    def both(self, method: str, path: str, **kwargs: Any) -> tuple[httpx.Response,
                                                                    httpx.Response]:
        """The same request to each server."""
        return (self.lr.client.request(method, path, **kwargs),
                self.hx.client.request(method, path, **kwargs))


def ndjson(r: httpx.Response) -> list[dict[str, Any]]:
    """The lines of an NDJSON answer (which must be a 200 of that type)."""
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in r.text.splitlines() if line.strip()]


def untimed(body: dict[str, Any]) -> dict[str, Any]:
    """An Ollama chat/generate answer with its durations replaced by their type."""
    out = dict(body)
    for key in ("total_duration", "prompt_eval_duration", "eval_duration"):
        if key in out:
            assert isinstance(out[key], int) and out[key] >= 0, (key, out[key])
            out[key] = "ns"
    return out


def main() -> None:
    """LightRAG's server as ``lightrag-server`` runs it, offline (tiktoken's encoding from
    hexrag's offline copy), configured by the environment only."""
    from hexrag.devtools.lightrag_data import register_offline_tiktoken

    register_offline_tiktoken()
    sys.argv = ["lightrag-server"]
    from lightrag.api.config import global_args, initialize_config

    initialize_config()
    import uvicorn
    from lightrag.api.lightrag_server import configure_logging, create_app

    configure_logging()
    uvicorn.run(create_app(global_args), host=global_args.host, port=global_args.port,
                log_config=None, log_level="warning")


if __name__ == "__main__":
    main()
