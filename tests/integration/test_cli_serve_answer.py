"""``hexrag serve`` (a real server process, real HTTP) and ``hexrag query``'s answer and
stream modes (an OpenAI-compatible model: the scripted server)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from hexrag.adapters.memory import MemoryCache
from hexrag.adapters.workdir import WorkdirStack, save_workdir
from hexrag.cli import app
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from hexrag.devtools.scripted_openai import Reply, ScriptedOpenAIServer

DIM = 32
KEYWORDS = {"high_level_keywords": ["single sign-on"], "low_level_keywords": ["Okta"]}
runner = CliRunner()

# Variables that would change which LLM/embedder the commands pick.
_AMBIENT = ("HEXRAG_LLM", "HEXRAG_EMBEDDER", "LLM_BINDING", "EMBEDDING_BINDING", "LLM_MODEL",
            "OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_BINDING_HOST", "RERANK_BINDING_HOST",
            "HEXRAG_WORKDIR", "HEXRAG_CACHE", "EMBEDDING_DIM", "HEXRAG_EMBEDDING_DIM")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _AMBIENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    demo = asyncio.run(build_demo_engine(dim=DIM))
    stack = WorkdirStack(entities=demo.entities, relationships=demo.relationships,
                         chunks=demo.chunks, graph=demo.graph, chunk_store=demo.chunk_store,
                         cache=MemoryCache(), embedding_dim=DIM)
    return save_workdir(stack, tmp_path_factory.mktemp("serve") / "rag_storage")


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def model(model_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    model_server.reset()
    return model_server


def _model_env(server: ScriptedOpenAIServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}


# ----------------------------------------------------------------------------- hexrag query


def test_query_answers_when_an_llm_is_configured(
    workdir: Path, model: ScriptedOpenAIServer
) -> None:
    model.script("chat", Reply.text(json.dumps(KEYWORDS)), Reply.text("Use the SSO settings."))
    result = runner.invoke(
        app, ["query", DEFAULT_QUESTION, "--workdir", str(workdir), "--llm", "openai:m1"],
        env=_model_env(model),
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "Use the SSO settings.\n"
    keyword_call, answer_call = model.requests_for("chat")
    assert "response_format" in keyword_call.body
    assert answer_call.body["model"] == "m1" and not answer_call.body.get("stream")
    assert "Okta" in answer_call.body["messages"][0]["content"]  # the context reached the model


def test_query_streams_the_answer(workdir: Path, model: ScriptedOpenAIServer) -> None:
    model.script("chat", Reply.text(json.dumps(KEYWORDS)),
                 Reply.text("Open SSO, then add Okta.", pieces=["Open SSO, ", "then add Okta."]))
    env = {**_model_env(model), "HEXRAG_LLM": "openai:m2"}  # configured by the environment
    result = runner.invoke(app, ["query", DEFAULT_QUESTION, "-w", str(workdir), "--stream"],
                           env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Open SSO, then add Okta.\n"
    assert model.requests_for("chat")[-1].body["stream"] is True


def test_context_prompt_and_json_still_work_with_an_llm(
    workdir: Path, model: ScriptedOpenAIServer
) -> None:
    base = ["query", DEFAULT_QUESTION, "-w", str(workdir), "--llm", "openai:m1",
            "--hl", "single sign-on", "--ll", "Okta"]
    env = _model_env(model)
    context = runner.invoke(app, [*base, "--context"], env=env)
    assert context.exit_code == 0 and "Knowledge Graph Data (Entity)" in context.stdout
    data = runner.invoke(app, [*base, "--json"], env=env)
    assert json.loads(data.stdout)["status"] == "success"
    assert model.count("chat") == 0  # supplied keywords, no answer asked for


def test_answer_without_an_llm_is_a_one_line_error(workdir: Path) -> None:
    result = runner.invoke(app, ["query", DEFAULT_QUESTION, "-w", str(workdir), "--answer"])
    assert result.exit_code == 2
    assert "need an LLM" in result.stderr and "Traceback" not in result.output
    result = runner.invoke(app, ["query", DEFAULT_QUESTION, "-w", str(workdir), "--stream",
                                 "--json"])
    assert result.exit_code == 2 and "choose one output" in result.stderr


def test_a_failing_model_is_a_one_line_error(workdir: Path, model: ScriptedOpenAIServer) -> None:
    model.set_default("chat", Reply.unauthorized())
    result = runner.invoke(
        app, ["query", DEFAULT_QUESTION, "-w", str(workdir), "--llm", "openai:m1",
              "--hl", "sso", "--ll", "Okta"],
        env=_model_env(model),
    )
    assert result.exit_code == 2  # a configuration problem: the key
    assert "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.output


# ----------------------------------------------------------------------------- hexrag serve


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Served:
    """``hexrag serve`` in a child process; stopped with SIGINT (uvicorn's graceful stop)."""

    def __init__(self, args: list[str], env: dict[str, str], *, health: int = 200) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hexrag.cli", "serve", *args, "--port", str(self.port),
             "--log-level", "warning"],
            env={**os.environ, **env, "COLUMNS": "200"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"hexrag serve exited: {self.proc.communicate()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == health:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError("hexrag serve did not become healthy in 60 s")
            time.sleep(0.1)

    def stop(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, out, err


def test_serve_a_working_directory(workdir: Path) -> None:
    served = _Served(["--workdir", str(workdir)], env={})
    try:
        r = httpx.post(f"{served.url}/query/data",
                       json={"query": DEFAULT_QUESTION, "scope": {"product_id": "p-crm"}})
        assert r.status_code == 200
        chunks = r.json()["data"]["chunks"]
        assert chunks and all(c["file_path"].startswith("acme-crm/") for c in chunks)
        r = httpx.post(f"{served.url}/query", json={"query": DEFAULT_QUESTION})
        assert r.status_code == 503 and "no LLM" in r.json()["detail"]
    finally:
        code, _out, err = served.stop()
    assert code == 0, err
    assert "loading LightRAG working directory" in err  # progress was shown
    assert "hexrag serving on" in err


def test_serve_a_stack_file_with_a_model(
    tmp_path: Path, workdir: Path, model: ScriptedOpenAIServer
) -> None:
    config = tmp_path / "stack.toml"
    config.write_text(
        f'workdir = "{workdir}"\nllm = "openai:scripted-model"\n'
        f'openai_base_url = "{model.base_url}"\n',
        encoding="utf-8",
    )
    model.set_default("chat", Reply.text("Served answer."))
    served = _Served(["--config", str(config)], env={"OPENAI_API_KEY": "test"})
    try:
        payload = {"query": DEFAULT_QUESTION, "hl_keywords": ["sso"], "ll_keywords": ["Okta"]}
        r = httpx.post(f"{served.url}/query", json=payload)
        assert r.status_code == 200, r.text
        assert r.json()["response"] == "Served answer."
        lines = httpx.post(f"{served.url}/query/stream",
                           json={**payload, "response_type": "Bullet Points"}).text.splitlines()
        assert json.loads(lines[-1])["status"] == "done"
        assert "".join(json.loads(x).get("response", "") for x in lines[1:-1]) == "Served answer."
        health = httpx.get(f"{served.url}/health").json()
        assert health["llm"] is True and "cache" in health["stores"]
    finally:
        code, _out, err = served.stop()
    assert code == 0, err


def test_serve_with_a_bad_configuration_exits_2_with_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["serve", "--workdir", str(tmp_path / "missing")])
    assert result.exit_code == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("hexrag: error: ") and "not found" in last
    assert "Traceback" not in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text('vector_index = "mongodb://h/db"\n', encoding="utf-8")
    result = runner.invoke(app, ["serve", "--config", str(bad)])
    assert result.exit_code == 2 and "vector_index" in result.stderr
