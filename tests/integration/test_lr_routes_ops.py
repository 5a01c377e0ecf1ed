"""LightRAG's non-graph, non-document routes against LightRAG 1.5.7's own server (issue 24).

LightRAG's whole server (``lightrag_server.create_app``, its own process) ingests three
documents through its ``/documents/texts`` with the offline stand-in model; ``hexrag serve
--workdir`` then serves a copy of that working directory with the same model. Each route is
asked the same of both and the answers compared, shapes and values: ``/health``,
``/auth-status``, ``/login``, ``/auth/verify``, ``/ui/customization``, the Ollama-compatible
``/api/*``, ``/query`` references with ``content`` and ``/query/stream`` progress lines.
Durations, token expiry times and the directories served are normalised; everything else
must be equal. A second pair runs with accounts, a token secret and an API key.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hexrag.api.auth_tokens import AuthSettings, Tokens
from tests.integration.lr_ops_servers import (
    EMBED_MODEL,
    LLM_MODEL,
    HexragServe,
    LightRAGFull,
    Pair,
    ndjson,
    standin_model,
    untimed,
)

pytest.importorskip("lightrag")
pytest.importorskip("jwt")  # LightRAG's server needs PyJWT (the parity extra)

DOCS = {
    "acme.txt": "Alice Smith works at Acme Corporation in Berlin. Acme Corporation builds "
                "Rockets for Mars missions. Bob Jones manages the Rockets program at Acme "
                "Corporation.",
    "globex.txt": "Globex Industries sells Widgets in Paris. Carol White leads Globex "
                  "Industries. Widgets power the Mars Rovers built by Acme Corporation.",
    "initech.txt": "Initech makes Staplers in Austin. Dave Brown founded Initech. Initech "
                   "supplies Staplers to Globex Industries.",
}
SECRET = "a-test-secret-of-this-module"
KEY = "k3y-of-this-module"
ACCOUNTS = "admin:pw-admin,reader:pw-reader"
#: LightRAG's liveness fields of /health (shown to anyone).
LIVENESS = ("status", "auth_mode", "core_version", "api_version", "webui_available",
            "workspace_available", "api_docs_available", "webui_title", "webui_description",
            "ai_content_notice_enabled", "pipeline_busy", "pipeline_active")
#: configuration values both servers must state alike (models, hosts, retrieval settings).
SAME_CONFIG = ("llm_binding", "llm_binding_host", "llm_model", "embedding_binding",
               "embedding_binding_host", "embedding_model", "summary_max_tokens",
               "summary_context_size", "enable_llm_cache", "vlm_process_enable", "workspace",
               "max_graph_nodes", "enable_rerank", "rerank_binding", "rerank_model",
               "rerank_binding_host", "summary_language", "cosine_threshold",
               "min_rerank_score", "related_chunk_number", "parser_routing", "mineru",
               "docling", "max_async", "max_parallel_insert", "embedding_timeout",
               "force_llm_summary_on_merge", "rerank_max_async", "rerank_timeout",
               "storage_workspaces", "enable_llm_cache_for_extract")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The model, and LightRAG's working directory after its server ingested :data:`DOCS`;
    then LightRAG's server started afresh on that directory (the open pair's LightRAG side:
    as hexrag, it reads the directory from disk - the ingesting process keeps a graph whose
    adjacency order is its insertion order, not the file's, so ties among a node's edges may
    come in another order until it restarts)."""
    tmp = tmp_path_factory.mktemp("lr-ops")
    model = standin_model()
    try:
        ingesting = LightRAGFull(tmp / "rag", model, tmp / "lightrag-ingest.log")
        try:
            ingesting.ingest(DOCS)
        finally:
            ingesting.stop()
        lr = LightRAGFull(tmp / "rag", model, tmp / "lightrag.log")
        try:
            yield {"tmp": tmp, "model": model, "lr": lr, "workdir": tmp / "rag"}
        finally:
            lr.stop()
    finally:
        model.stop()


@pytest.fixture(scope="module")
def open_pair(world: dict[str, Any]) -> Iterator[Pair]:
    """No key, no accounts (LightRAG's default): hexrag with LightRAG's WebUI on."""
    tmp: Path = world["tmp"]
    hx = HexragServe(world["workdir"], tmp / "hx-open", world["model"], tmp / "hexrag.log",
                     args=["--lightrag-webui"])
    try:
        yield Pair(world["lr"], hx)
    finally:
        hx.stop()


@pytest.fixture(scope="module")
def auth_pair(world: dict[str, Any]) -> Iterator[Pair]:
    """Accounts, a token secret and an API key, nothing whitelisted but ``/health``."""
    tmp: Path = world["tmp"]
    env = {"AUTH_ACCOUNTS": ACCOUNTS, "TOKEN_SECRET": SECRET, "LIGHTRAG_API_KEY": KEY,
           "WHITELIST_PATHS": "/health"}
    shutil.copytree(world["workdir"], tmp / "rag-auth")
    lr = LightRAGFull(tmp / "rag-auth", world["model"], tmp / "lightrag-auth.log", env=env)
    try:
        hx = HexragServe(world["workdir"], tmp / "hx-auth", world["model"],
                         tmp / "hexrag-auth.log", env=env, args=["--lightrag-webui"])
        try:
            yield Pair(lr, hx)
        finally:
            hx.stop()
    finally:
        lr.stop()


def _claims(token: str) -> dict[str, Any]:
    body = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return claims


def _same_token_shape(a: str, b: str) -> None:
    ca, cb = _claims(a), _claims(b)
    assert abs(ca.pop("exp") - cb.pop("exp")) < 300
    assert ca == cb


# ------------------------------------------------------------------------------- open mode


def test_health_has_lightrags_fields_and_values(open_pair: Pair) -> None:
    lr, hx = (r.json() for r in open_pair.both("GET", "/health"))
    assert {k: hx[k] for k in LIVENESS} == {k: lr[k] for k in LIVENESS}
    assert hx["status"] == "healthy" and hx["auth_mode"] == "disabled"
    # nothing is protected: both show the configuration to anyone
    assert Path(hx["working_directory"]).name == "hx-open"
    assert Path(lr["working_directory"]).name == "rag"
    missing = set(lr["configuration"]) - set(hx["configuration"])
    assert not missing, missing
    for key in SAME_CONFIG:
        assert hx["configuration"][key] == lr["configuration"][key], key
    assert hx["configuration"]["llm_model"] == LLM_MODEL
    assert hx["configuration"]["embedding_model"] == EMBED_MODEL
    for key in ("server_mode", "pipeline_scanning", "pipeline_destructive_busy",
                "pipeline_pending_enqueues", "input_directory", "workers"):
        assert key in hx, key
    # hexrag's own fields stay (its clients and tests read them)
    assert all(s["status"] == "ok" for s in hx["stores"].values())
    assert hx["problems"] == [] and hx["llm"] is True and "hexrag_version" in hx


def test_auth_status_and_login_in_guest_mode(open_pair: Pair) -> None:
    lr, hx = (r.json() for r in open_pair.both("GET", "/auth-status"))
    _same_token_shape(lr.pop("access_token"), hx.pop("access_token"))
    assert hx == lr
    form = {"username": "anyone", "password": "anything"}
    lr, hx = (r.json() for r in open_pair.both("POST", "/login", data=form))
    lr_token, hx_token = lr.pop("access_token"), hx.pop("access_token")
    _same_token_shape(lr_token, hx_token)
    assert hx == lr
    # the same default secret: each server accepts the other's guest token
    for token in (lr_token, hx_token):
        for r in open_pair.both("GET", "/auth/verify",
                                headers={"Authorization": f"Bearer {token}"}):
            assert (r.status_code, r.json()) == (200, {"status": "ok"})
    for r in open_pair.both("GET", "/auth/verify", headers={"Authorization": "Bearer x.y.z"}):
        assert (r.status_code, r.json()) == (401, {"detail": "Invalid token"})
    for r in open_pair.both("POST", "/login", data={"username": "x"}):
        assert r.status_code == 422  # the OAuth2 form needs both fields


def test_ui_customization(open_pair: Pair) -> None:
    for path in ("/ui/customization", "/ui/customization?locale=en",
                 "/ui/customization/assets/abc/def"):
        lr, hx = open_pair.both("GET", path)
        assert (hx.status_code, hx.json()) == (lr.status_code, lr.json()), path
    lr, hx = open_pair.both("GET", "/ui/customization")
    assert hx.headers["cache-control"] == lr.headers["cache-control"] == "no-store"


def test_ollama_model_routes(open_pair: Pair) -> None:
    for path in ("/api/version", "/api/tags", "/api/ps"):
        lr, hx = open_pair.both("GET", path)
        assert (hx.status_code, hx.json()) == (lr.status_code, lr.json()), path


CHATS = [
    "Who works at Acme Corporation?",
    "/local Who manages the Rockets program?",
    "/global How are Widgets and Rovers related?",
    "/naive What does Initech make?",
    "/hybrid[Answer in one line] Who founded Initech?",
    "/context Who leads Globex Industries?",
    "/mixcontext Where is Initech?",
    "/bypass Say hello to Alice Smith",
]


@pytest.mark.parametrize("text", CHATS)
def test_ollama_chat_answers_as_lightrag(open_pair: Pair, text: str) -> None:
    history = [{"role": "user", "content": "Hello"},
               {"role": "assistant", "content": "Hi, ask me about the companies."}]
    body = {"model": "lightrag:latest", "stream": False,
            "messages": [*history, {"role": "user", "content": text}]}
    lr, hx = open_pair.both("POST", "/api/chat", json=body)
    assert (hx.status_code, untimed(hx.json())) == (lr.status_code, untimed(lr.json()))
    assert hx.json()["message"]["content"]  # a real answer, not an empty one
    # streamed: NDJSON pieces, the same text, the same final line
    lr_lines, hx_lines = (ndjson(r) for r in open_pair.both(
        "POST", "/api/chat", json={**body, "stream": True}))
    text_of = lambda lines: "".join(x["message"]["content"] for x in lines)  # noqa: E731
    assert text_of(hx_lines) == text_of(lr_lines)
    assert [sorted(x) for x in hx_lines[-1:]] == [sorted(x) for x in lr_lines[-1:]]
    assert untimed(hx_lines[-1]) == untimed(lr_lines[-1])
    assert all(x["done"] is False for x in hx_lines[:-1]) and hx_lines[-1]["done"] is True


def test_ollama_generate_answers_as_lightrag(open_pair: Pair) -> None:
    body = {"model": "lightrag:latest", "prompt": "Name the companies: Acme and Globex.",
            "system": "You are terse."}
    lr, hx = open_pair.both("POST", "/api/generate", json=body)
    assert (hx.status_code, untimed(hx.json())) == (lr.status_code, untimed(lr.json()))
    lr_lines, hx_lines = (ndjson(r) for r in open_pair.both(
        "POST", "/api/generate", json={**body, "stream": True}))
    assert "".join(x["response"] for x in hx_lines) == "".join(x["response"]
                                                             for x in lr_lines)
    assert untimed(hx_lines[-1]) == untimed(lr_lines[-1])


@pytest.mark.parametrize("body,status", [
    ({"model": "m", "messages": []}, 400),
    ({"model": "m", "messages": [{"role": "assistant", "content": "hi there"}]}, 400),
    ({"model": "m", "messages": [{"role": "user", "content": "/local   "}]}, 400),
    ({"model": "m", "messages": [{"role": "user", "content": "ab"}]}, 400),
    ({"model": "m"}, 400),
])
def test_ollama_chat_refusals(open_pair: Pair, body: dict[str, Any], status: int) -> None:
    lr, hx = open_pair.both("POST", "/api/chat", json={**body, "stream": False})
    assert lr.status_code == hx.status_code == status, (lr.text, hx.text)
    if body.get("messages") is not None:
        assert hx.json() == lr.json()
    r = open_pair.hx.client.post("/api/chat", content=b"{not json")
    assert (r.status_code, r.json()) == (400, {"detail": "Invalid JSON in request body"})


QUERIES = [("mix", "Who works at Acme Corporation?"), ("local", "Who leads Globex Industries?"),
           ("global", "What do Widgets power?"), ("naive", "What does Initech supply?")]


@pytest.mark.parametrize("mode,query", QUERIES)
def test_query_references_carry_chunk_content(open_pair: Pair, mode: str, query: str) -> None:
    body = {"query": query, "mode": mode, "include_references": True,
            "include_chunk_content": True}
    lr, hx = (r.json() for r in open_pair.both("POST", "/query", json=body))
    assert hx["references"] == lr["references"]
    assert hx["response"] == lr["response"] and hx["llm_generated"] == lr["llm_generated"]
    with_content = [ref for ref in hx["references"] if ref["content"] is not None]
    assert with_content or not hx["references"], hx  # the chunk texts of each reference
    assert hx["references"] or mode != "mix"
    for ref in with_content:
        assert ref["content"] and all(isinstance(c, str) and c for c in ref["content"])
    lr, hx = (r.json() for r in open_pair.both("POST", "/query", json={
        **body, "include_chunk_content": False}))
    assert hx["references"] == lr["references"]
    assert all(ref["content"] is None for ref in hx["references"])  # LightRAG's null


@pytest.mark.parametrize("mode,query", QUERIES)
@pytest.mark.parametrize("stream", [True, False])
def test_query_stream_progress_lines(open_pair: Pair, mode: str, query: str,
                                     stream: bool) -> None:
    body = {"query": query, "mode": mode, "stream": stream, "include_progress": True,
            "include_chunk_content": True}
    lr, hx = (ndjson(r) for r in open_pair.both("POST", "/query/stream", json=body))
    progress = [x["progress"] for x in lr if "progress" in x]
    assert progress, lr  # LightRAG reports its steps
    assert [x["progress"] for x in hx if "progress" in x] == progress
    n = len(progress)
    assert all("progress" in x for x in hx[:n])  # before anything else, as LightRAG
    refs = [x["references"] for x in lr if "references" in x]
    assert [x["references"] for x in hx if "references" in x] == refs
    text = "".join(x.get("response", "") for x in lr)
    assert "".join(x.get("response", "") for x in hx) == text
    assert "response_time" in lr[-1] and "response_time" in hx[-1]
    # without include_progress: no progress line (LightRAG's original order)
    lines = ndjson(open_pair.hx.client.post("/query/stream", json={
        **body, "include_progress": False}))
    assert not any("progress" in x for x in lines)


def test_a_bad_query_is_refused_before_the_progress_stream(open_pair: Pair) -> None:
    lr, hx = open_pair.both("POST", "/query/stream", json={"query": "ab",
                                                           "include_progress": True})
    assert hx.status_code == 422 and "progress" not in hx.text
    assert lr.status_code == 422  # LightRAG's request model refuses it too


def test_lightrag_webui_files_are_served(open_pair: Pair) -> None:
    lr, hx = open_pair.both("GET", "/webui/")
    assert hx.status_code == lr.status_code == 200
    assert "window.__LIGHTRAG_CONFIG__" in hx.text and "__LIGHTRAG_RUNTIME_CONFIG__" not in hx.text
    assert hx.text == lr.text
    asset = next(p for p in hx.text.split('"') if p.startswith("./assets/index-"))
    lr, hx = open_pair.both("GET", "/webui/" + asset[2:])
    assert hx.status_code == lr.status_code == 200 and hx.content == lr.content
    assert hx.headers["cache-control"] == lr.headers["cache-control"]
    lr, hx = open_pair.both("GET", "/webui/workspace.html")
    assert hx.status_code == lr.status_code == 404
    # the playground stays reachable
    for path in ("/", "/playground"):
        r = open_pair.hx.client.get(path)
        assert r.status_code == 200 and "playground.js" in r.text


# ------------------------------------------------------------------- accounts, secret, key


def _user_token(pair: Pair, which: str, user: str = "admin", pw: str = "pw-admin") -> str:
    client = pair.lr.client if which == "lr" else pair.hx.client
    r = client.post("/login", data={"username": user, "password": pw})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["auth_mode"] == "enabled" and body["token_type"] == "bearer"
    token: str = body["access_token"]
    return token


def test_login_with_accounts(auth_pair: Pair) -> None:
    lr, hx = (r.json() for r in auth_pair.both("GET", "/auth-status"))
    assert hx == lr and hx["auth_configured"] is True and "access_token" not in hx
    lr_token, hx_token = _user_token(auth_pair, "lr"), _user_token(auth_pair, "hx")
    _same_token_shape(lr_token, hx_token)
    assert _claims(hx_token)["sub"] == "admin" and _claims(hx_token)["role"] == "user"
    lr, hx = (r.json() for r in auth_pair.both("POST", "/login", data={
        "username": "admin", "password": "pw-admin"}))
    lr.pop("access_token"), hx.pop("access_token")
    assert hx == lr
    for form in ({"username": "admin", "password": "wrong"},
                 {"username": "nobody", "password": "pw-admin"}):
        lr, hx = auth_pair.both("POST", "/login", data=form)
        assert (hx.status_code, hx.json()) == (lr.status_code, lr.json()) == (
            401, {"detail": "Incorrect credentials"})


def test_credentials_matrix(auth_pair: Pair) -> None:
    """Every kind of credential on a protected route, /auth/verify and /health: the same
    status and message on both servers; tokens work across them (one secret)."""
    lr_token, hx_token = _user_token(auth_pair, "lr"), _user_token(auth_pair, "hx")
    tokens = Tokens(AuthSettings(accounts={"admin": "pw-admin"}, token_secret=SECRET))
    guest = tokens.create("guest", "guest", {"auth_mode": "disabled"})
    expired = Tokens(AuthSettings(accounts={"admin": "x"}, token_secret=SECRET),
                     clock=lambda: 1_000_000_000.0).create("admin")
    other_secret = Tokens(AuthSettings(accounts={"admin": "x"}, token_secret="not-it")).create(
        "admin")
    cases: dict[str, dict[str, str]] = {
        "nothing": {},
        "right key": {"X-API-Key": KEY},
        "wrong key": {"X-API-Key": "nope"},
        "LightRAG's token": {"Authorization": f"Bearer {lr_token}"},
        "hexrag's token": {"Authorization": f"Bearer {hx_token}"},
        "guest token": {"Authorization": f"Bearer {guest}"},
        "expired token": {"Authorization": f"Bearer {expired}"},
        "token of another secret": {"Authorization": f"Bearer {other_secret}"},
        "garbage token": {"Authorization": "Bearer abc.def.ghi"},
        "garbage token and key": {"Authorization": "Bearer abc", "X-API-Key": KEY},
        "guest token and key": {"Authorization": f"Bearer {guest}", "X-API-Key": KEY},
        "basic scheme": {"Authorization": "Basic YWRtaW46cHctYWRtaW4="},
    }
    allowed = {"right key", "LightRAG's token", "hexrag's token"}
    for name, headers in cases.items():
        for path in ("/auth/verify", "/graph/label/list", "/api/version"):
            lr, hx = auth_pair.both("GET", path, headers=headers)
            assert (hx.status_code, hx.json() if hx.status_code >= 400 else None) == (
                lr.status_code, lr.json() if lr.status_code >= 400 else None), (name, path)
            assert (hx.status_code == 200) == (name in allowed), (name, path, hx.text)
        lr, hx = (r.json() for r in auth_pair.both("GET", "/health", headers=headers))
        # /health never refuses: the right key counts even beside a bad token
        shown = allowed | {"garbage token and key", "guest token and key"}
        assert ("configuration" in hx) == ("configuration" in lr) == (name in shown), name
        assert {k: hx[k] for k in LIVENESS} == {k: lr[k] for k in LIVENESS}
        assert hx["auth_mode"] == "enabled"


def test_login_is_throttled_after_five_failures(auth_pair: Pair) -> None:
    form = {"username": "reader", "password": "wrong"}
    for _ in range(5):
        lr, hx = auth_pair.both("POST", "/login", data=form)
        assert lr.status_code == hx.status_code == 401
    lr, hx = auth_pair.both("POST", "/login", data=form)
    assert (hx.status_code, hx.json()) == (lr.status_code, lr.json())
    assert hx.status_code == 429 and int(hx.headers["retry-after"]) > 0
    # even the right password waits, on both
    lr, hx = auth_pair.both("POST", "/login", data={"username": "reader",
                                                    "password": "pw-reader"})
    assert lr.status_code == hx.status_code == 429


@pytest.fixture(scope="module")
def key_pair(world: dict[str, Any]) -> Iterator[Pair]:
    """An API key and no account (guest tokens handed out, worth nothing against the key)."""
    tmp: Path = world["tmp"]
    env = {"LIGHTRAG_API_KEY": KEY, "WHITELIST_PATHS": "/health"}
    shutil.copytree(world["workdir"], tmp / "rag-key")
    lr = LightRAGFull(tmp / "rag-key", world["model"], tmp / "lightrag-key.log", env=env)
    try:
        hx = HexragServe(world["workdir"], tmp / "hx-key", world["model"],
                         tmp / "hexrag-key.log", env=env, args=["--lightrag-webui"])
        try:
            yield Pair(lr, hx)
        finally:
            hx.stop()
    finally:
        lr.stop()


def test_credentials_with_only_a_key(key_pair: Pair) -> None:
    """Guest mode behind a key: the guest token of either server (anyone gets one from
    ``/auth-status``) opens nothing without the key; the same answers on both servers."""
    lr_status, hx_status = (r.json() for r in key_pair.both("GET", "/auth-status"))
    lr_guest, hx_guest = lr_status.pop("access_token"), hx_status.pop("access_token")
    assert hx_status == lr_status and hx_status["auth_configured"] is False
    user = Tokens(AuthSettings()).create("admin", "user")  # the public default secret
    cases: dict[str, dict[str, str]] = {
        "nothing": {},
        "right key": {"X-API-Key": KEY},
        "wrong key": {"X-API-Key": "nope"},
        "empty key": {"X-API-Key": ""},
        "LightRAG's guest token": {"Authorization": f"Bearer {lr_guest}"},
        "hexrag's guest token": {"Authorization": f"Bearer {hx_guest}"},
        "guest token and key": {"Authorization": f"Bearer {hx_guest}", "X-API-Key": KEY},
        "guest token and wrong key": {"Authorization": f"Bearer {lr_guest}",
                                      "X-API-Key": "nope"},
        "forged user token": {"Authorization": f"Bearer {user}"},
        "forged user token and key": {"Authorization": f"Bearer {user}", "X-API-Key": KEY},
        "garbage token and key": {"Authorization": "Bearer abc", "X-API-Key": KEY},
    }
    allowed = {"right key", "guest token and key"}
    for name, headers in cases.items():
        for path in ("/auth/verify", "/graph/label/list", "/api/version"):
            lr, hx = key_pair.both("GET", path, headers=headers)
            assert (hx.status_code, hx.json() if hx.status_code >= 400 else None) == (
                lr.status_code, lr.json() if lr.status_code >= 400 else None), (name, path)
            assert (hx.status_code == 200) == (name in allowed), (name, path, hx.text)
        lr, hx = (r.json() for r in key_pair.both("GET", "/health", headers=headers))
        assert ("configuration" in hx) == ("configuration" in lr), name
        assert {k: hx[k] for k in LIVENESS} == {k: lr[k] for k in LIVENESS}
