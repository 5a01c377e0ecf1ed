"""LightRAG's accounts and tokens in hexrag's own terms, over real HTTP (issue 24).

The comparison with LightRAG's server is in ``test_lr_routes_ops.py``; here: the three
profiles on one stack (open, API key only, accounts), a token never substituting for the key
where anyone can mint one, the workspace router checking tokens before opening anything, the
``X-New-Token`` renewal, the open paths staying minimal, and ``--lightrag-webui`` without
``lightrag-hku`` failing with a clear message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hexrag.api import create_app
from hexrag.api.auth_tokens import DEFAULT_TOKEN_SECRET, AuthSettings, Tokens
from hexrag.api.limits import ApiLimits, ApiSettings
from hexrag.config import StackConfig
from hexrag.core.errors import ConfigurationError
from hexrag.demo import DEFAULT_QUESTION, build_demo_engine
from hexrag.serving import workspace_router
from tests.integration.live import LiveServer

KEY = "the-key"
SECRET = "the-secret"
ACCOUNTS = {"admin": "pw"}
Q = {"query": DEFAULT_QUESTION, "mode": "local", "only_need_context": True}


def _serve(settings: ApiSettings) -> LiveServer:
    demo = asyncio.run(build_demo_engine())
    return LiveServer(create_app(demo.engine, settings=settings))


@pytest.fixture
def key_only() -> Iterator[LiveServer]:
    live = _serve(ApiSettings(api_key=KEY))
    yield live
    live.stop()


@pytest.fixture
def accounts() -> Iterator[LiveServer]:
    live = _serve(ApiSettings(auth=AuthSettings(accounts=ACCOUNTS, token_secret=SECRET,
                                                expire_hours=1.0)))
    yield live
    live.stop()


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_open_profile_lets_everything_in_and_hands_out_guest_tokens() -> None:
    live = _serve(ApiSettings())
    try:
        c = live.client
        status = c.get("/auth-status").json()
        assert status["auth_configured"] is False and status["auth_mode"] == "disabled"
        assert c.post("/query", json=Q).status_code == 200
        assert c.post("/query", json=Q, headers=_bearer(status["access_token"])).status_code == 200
        assert c.get("/auth/verify").json() == {"status": "ok"}
        assert "configuration" in c.get("/health").json()  # nothing protected: all shown
    finally:
        live.stop()


def test_with_only_a_key_a_guest_token_never_replaces_it(key_only: LiveServer) -> None:
    c = key_only.client
    guest = c.get("/auth-status").json()["access_token"]  # anyone can get one
    assert c.post("/query", json=Q, headers=_bearer(guest)).json() == {
        "detail": "API Key required"}
    forged = Tokens(AuthSettings(token_secret=DEFAULT_TOKEN_SECRET)).create("admin", "user")
    r = c.post("/query", json=Q, headers=_bearer(forged))
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid token. Please login again."})
    assert c.post("/query", json=Q, headers={**_bearer(guest), "X-API-Key": KEY}
                  ).status_code == 200
    r = c.post("/query", json=Q, headers={**_bearer("x.y.z"), "X-API-Key": KEY})
    assert (r.status_code, r.json()) == (401, {"detail": "Invalid token"})  # as LightRAG
    assert c.post("/login", data={"username": "a", "password": "b"}).json()[
        "auth_mode"] == "disabled"
    health = c.get("/health").json()
    assert "configuration" not in health and health["auth_mode"] == "disabled"
    assert "configuration" in c.get("/health", headers={"X-API-Key": KEY}).json()


def test_accounts_profile(accounts: LiveServer) -> None:
    c = accounts.client
    r = c.post("/query", json=Q)
    assert (r.status_code, r.json()) == (401, {"detail": "No credentials provided. Please login."})
    token = c.post("/login", data={"username": "admin", "password": "pw"}).json()["access_token"]
    assert c.post("/query", json=Q, headers=_bearer(token)).status_code == 200
    assert c.get("/metrics", headers=_bearer(token)).status_code == 200
    assert c.get("/metrics").status_code == 401
    # a token signed with another secret, or altered, is refused
    other = Tokens(AuthSettings(accounts=ACCOUNTS, token_secret="other")).create("admin")
    head, body, sig = token.split(".")
    for bad in (other, f"{head}.{body}.{sig[:-2]}AA", f"{head}.{body}.", "a" * 9000):
        r = c.post("/query", json=Q, headers=_bearer(bad))
        assert (r.status_code, r.json()) == (401, {"detail": "Invalid token"}), bad[:40]
    # the open paths: the pages, login and status; nothing that reads data
    for path in ("/auth-status", "/ui/customization", "/health", "/", "/playground", "/docs"):
        assert c.get(path).status_code == 200, path
    for path in ("/graphs?label=Okta", "/documents", "/api/tags", "/workspaces",
                 "/scope/values", "/auth/verify"):
        assert c.get(path).status_code == 401, path


def test_a_token_past_half_its_life_is_renewed_once() -> None:
    settings = AuthSettings(accounts=ACCOUNTS, token_secret=SECRET, expire_hours=1.0)
    live = _serve(ApiSettings(auth=settings))
    try:
        old = Tokens(settings, clock=lambda: time.time() - 2400).create("admin")  # 20 min left
        r = live.client.post("/query", json=Q, headers=_bearer(old))
        assert r.status_code == 200
        fresh = r.headers["x-new-token"]
        claims = Tokens(settings).validate(fresh)
        assert claims["username"] == "admin" and claims["exp"] > time.time() + 3000
        again = live.client.post("/query", json=Q, headers=_bearer(old))
        assert "x-new-token" not in again.headers  # at most one renewal a minute per user
        young = Tokens(settings).create("admin")
        assert "x-new-token" not in live.client.post("/query", json=Q,
                                                     headers=_bearer(young)).headers
        # polled routes never renew (LightRAG's list)
        assert "x-new-token" not in live.client.get("/health", headers=_bearer(old)).headers
    finally:
        live.stop()


def test_the_workspace_router_checks_tokens_before_opening_anything() -> None:
    settings = ApiSettings(limits=ApiLimits(), auth=AuthSettings(accounts=ACCOUNTS,
                                                                 token_secret=SECRET))
    config = StackConfig(workspaces=["alpha"], workspace_pattern=r"t_[a-z0-9]+",
                         embedder="hashing:32")
    router = workspace_router(config, settings)
    live = LiveServer(router, lifespan="on")
    try:
        c = live.client
        ws = {"LIGHTRAG-WORKSPACE": "t_new"}
        r = c.post("/query/data", json={"query": "anything here"}, headers=ws)
        assert (r.status_code, r.json()) == (401, {
            "detail": "No credentials provided. Please login."})
        token = c.post("/login", data={"username": "admin", "password": "pw"},
                       headers={"LIGHTRAG-WORKSPACE": "alpha"}).json()["access_token"]
        assert "t_new" not in c.get("/workspaces", headers=_bearer(token)).json()["open"]
        r = c.post("/query/data", json={"query": "anything here"},
                   headers={**ws, **_bearer(token)})
        assert r.status_code == 200, r.text
        assert "t_new" in c.get("/workspaces", headers=_bearer(token)).json()["open"]
    finally:
        live.stop()


def test_accounts_need_their_own_secret_and_a_known_algorithm() -> None:
    with pytest.raises(ConfigurationError, match="TOKEN_SECRET"):
        AuthSettings.from_env({"AUTH_ACCOUNTS": "a:b"})
    with pytest.raises(ConfigurationError, match="TOKEN_SECRET"):
        AuthSettings.from_env({"AUTH_ACCOUNTS": "a:b", "TOKEN_SECRET": DEFAULT_TOKEN_SECRET})
    with pytest.raises(ConfigurationError, match="user:password"):
        AuthSettings.from_env({"AUTH_ACCOUNTS": "nopassword", "TOKEN_SECRET": "s"})
    with pytest.raises(ConfigurationError, match="JWT_ALGORITHM"):
        AuthSettings.from_env({"JWT_ALGORITHM": "none"})
    s = AuthSettings.from_env({"AUTH_ACCOUNTS": "a:b,c:d", "TOKEN_SECRET": "s",
                               "TOKEN_EXPIRE_HOURS": "2", "JWT_ALGORITHM": "hs512"})
    assert dict(s.accounts) == {"a": "b", "c": "d"} and s.algorithm == "HS512"
    assert s.expire_hours == 2.0
    assert ApiSettings.from_env({"AUTH_ACCOUNTS": "a:b", "TOKEN_SECRET": "s"}).auth.configured


def test_bcrypt_accounts_log_in() -> None:
    bcrypt = pytest.importorskip("bcrypt")
    hashed = "{bcrypt}" + bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode()
    live = _serve(ApiSettings(auth=AuthSettings(accounts={"b": hashed}, token_secret=SECRET)))
    try:
        ok = live.client.post("/login", data={"username": "b", "password": "secret"})
        assert ok.status_code == 200 and ok.json()["auth_mode"] == "enabled"
        assert live.client.post("/login", data={"username": "b", "password": "nope"}
                                ).status_code == 401
    finally:
        live.stop()


def test_lightrag_webui_without_lightrag_hku_is_a_clear_error(monkeypatch: Any) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "lightrag" else real(name, *a))
    demo = asyncio.run(build_demo_engine())
    with pytest.raises(ConfigurationError, match="lightrag-hku"):
        create_app(demo.engine, settings=ApiSettings(lightrag_webui=True))


def test_cors_lets_a_webui_elsewhere_read_renewed_tokens_and_delete() -> None:
    origin = "https://ui.example"
    live = _serve(ApiSettings(cors_origins=(origin,), auth=AuthSettings(
        accounts=ACCOUNTS, token_secret=SECRET, expire_hours=1.0)))
    try:
        pre = live.client.options("/documents/delete_document", headers={
            "Origin": origin, "Access-Control-Request-Method": "DELETE",
            "Access-Control-Request-Headers": "authorization,content-type"})
        assert pre.status_code == 200 and "DELETE" in pre.headers["access-control-allow-methods"]
        settings = AuthSettings(accounts=ACCOUNTS, token_secret=SECRET, expire_hours=1.0)
        old = Tokens(settings, clock=lambda: time.time() - 2400).create("admin")
        r = live.client.post("/query", json=Q, headers={**_bearer(old), "Origin": origin})
        assert "x-new-token" in r.headers
        assert "x-new-token" in r.headers["access-control-expose-headers"].lower()
    finally:
        live.stop()
