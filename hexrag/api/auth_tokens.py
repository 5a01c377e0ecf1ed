"""LightRAG's accounts and JWT tokens, beside the API key.

LightRAG's server authenticates a request by an ``X-API-Key`` (``LIGHTRAG_API_KEY``) or by a
bearer token (``Authorization: Bearer <jwt>``) that ``POST /login`` issues for an account of
``AUTH_ACCOUNTS`` (``user:password,user2:{bcrypt}$2b$...``), signed with ``TOKEN_SECRET``.
With no account configured it runs in *guest mode*: ``/auth-status`` and ``/login`` hand out a
guest token (role ``guest``) that authenticates only where nothing is protected anyway.

This module holds the same rules, with no third-party JWT library:

* :class:`AuthSettings`: ``AUTH_ACCOUNTS``, ``TOKEN_SECRET``, ``TOKEN_EXPIRE_HOURS`` (48),
  ``GUEST_TOKEN_EXPIRE_HOURS`` (24), ``JWT_ALGORITHM`` (``HS256``; ``HS384``/``HS512``
  too), ``TOKEN_AUTO_RENEW`` / ``TOKEN_RENEW_THRESHOLD`` (a token past half its life gets a
  fresh one in the ``X-New-Token`` response header), ``LOGIN_MAX_FAILED_ATTEMPTS`` (5) and
  ``LOGIN_LOCKOUT_WINDOW_SECONDS`` (300). As LightRAG, accounts need a ``TOKEN_SECRET`` of
  their own (the default secret is public), and ``{bcrypt}`` passwords need the ``bcrypt``
  package;
* :class:`Tokens`: issue and validate HS256/384/512 JWTs (header ``alg`` must be the
  configured one, ``none`` never accepted, ``sub`` at most 256 characters, ``exp`` an
  integer in the future); a token LightRAG's server issued with the same secret is valid
  here and the other way round;
* :func:`decide`: LightRAG's ``combined_auth`` decision for one request, from its headers
  alone: ``None`` (let in) or ``(status, detail)`` with LightRAG's statuses and messages.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hexrag.core.errors import ConfigurationError

__all__ = [
    "DEFAULT_TOKEN_SECRET",
    "AuthSettings",
    "LoginLimiter",
    "TokenError",
    "Tokens",
    "accepted",
    "decide",
    "verify_password",
]

#: LightRAG's public default secret, used only in guest mode (no accounts).
DEFAULT_TOKEN_SECRET = "lightrag-jwt-default-secret-key!"
#: LightRAG's bound on the ``sub`` claim (and on account names).
MAX_SUBJECT_LENGTH = 256
#: A bearer token longer than this is refused unread.
MAX_TOKEN_BYTES = 8192
BCRYPT_PREFIX = "{bcrypt}"
_HASHES = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}
#: Paths whose answers never carry a renewed token (LightRAG's list: polled often).
RENEWAL_SKIP_PATHS = ("/health", "/documents/paginated", "/documents/pipeline_status")
#: At most one renewal per user within this many seconds (LightRAG's rate).
RENEWAL_MIN_INTERVAL = 60.0


class TokenError(Exception):
    """A bearer token that does not authenticate; ``str()`` is LightRAG's 401 detail."""


def _env_float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigurationError(f"{name}={raw!r} must be a positive number")
    return value


def _env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on", "t", "y")


def _accounts(raw: str) -> dict[str, str]:
    accounts: dict[str, str] = {}
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            continue
        user, sep, password = entry.partition(":")
        if not sep or not user or not password:
            raise ConfigurationError("AUTH_ACCOUNTS must use comma-separated user:password pairs")
        if len(user) > MAX_SUBJECT_LENGTH:
            raise ConfigurationError(
                f"AUTH_ACCOUNTS usernames must be at most {MAX_SUBJECT_LENGTH} characters")
        accounts[user] = password
    return accounts


@dataclass(frozen=True)
class AuthSettings:
    """Accounts and token settings (LightRAG's variables; see the module docstring).

    ``accounts`` maps a user name to its password as written in ``AUTH_ACCOUNTS`` (plain, or
    ``{bcrypt}`` followed by a bcrypt hash)."""

    accounts: Mapping[str, str] = field(default_factory=dict)
    token_secret: str = DEFAULT_TOKEN_SECRET
    algorithm: str = "HS256"
    expire_hours: float = 48.0
    guest_expire_hours: float = 24.0
    auto_renew: bool = True
    renew_threshold: float = 0.5
    login_max_failed: int = 5
    login_window_seconds: float = 300.0

    def __post_init__(self) -> None:
        if self.algorithm not in _HASHES:
            raise ConfigurationError(
                f"JWT_ALGORITHM={self.algorithm!r} is not supported; use one of "
                f"{', '.join(_HASHES)} (never 'none')")
        if self.accounts and (not self.token_secret
                              or self.token_secret == DEFAULT_TOKEN_SECRET):
            raise ConfigurationError(
                "TOKEN_SECRET must be explicitly set to a non-default value when "
                "AUTH_ACCOUNTS is configured")
        if any(p.startswith(BCRYPT_PREFIX) for p in self.accounts.values()):
            try:
                import bcrypt  # noqa: F401
            except ImportError:
                raise ConfigurationError(
                    "AUTH_ACCOUNTS holds {bcrypt} passwords: install the bcrypt package"
                ) from None

    @property
    def configured(self) -> bool:
        """Whether accounts are configured (else guest mode)."""
        return bool(self.accounts)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AuthSettings:
        """The settings of ``env`` (default: ``os.environ``)."""
        env = os.environ if env is None else env
        secret = (env.get("TOKEN_SECRET") or "").strip()
        try:
            max_failed = int(env.get("LOGIN_MAX_FAILED_ATTEMPTS") or 5)
        except ValueError:
            raise ConfigurationError("LOGIN_MAX_FAILED_ATTEMPTS must be an integer") from None
        return cls(
            accounts=_accounts(env.get("AUTH_ACCOUNTS") or ""),
            token_secret=secret or DEFAULT_TOKEN_SECRET,
            algorithm=(env.get("JWT_ALGORITHM") or "HS256").strip().upper(),
            expire_hours=_env_float(env, "TOKEN_EXPIRE_HOURS", 48.0),
            guest_expire_hours=_env_float(env, "GUEST_TOKEN_EXPIRE_HOURS", 24.0),
            auto_renew=_env_bool(env, "TOKEN_AUTO_RENEW", True),
            renew_threshold=_env_float(env, "TOKEN_RENEW_THRESHOLD", 0.5),
            login_max_failed=max(1, max_failed),
            login_window_seconds=_env_float(env, "LOGIN_LOCKOUT_WINDOW_SECONDS", 300.0),
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Tokens:
    """Issue and validate LightRAG's JWTs under ``settings``."""

    def __init__(self, settings: AuthSettings, *, clock: Any = time.time) -> None:
        self.settings = settings
        self._key = settings.token_secret.encode("utf-8")
        self._hash = _HASHES[settings.algorithm]
        self._clock = clock
        self._renewed: OrderedDict[str, float] = OrderedDict()

    def _sign(self, signing_input: bytes) -> bytes:
        return hmac.new(self._key, signing_input, self._hash).digest()

    def create(self, username: str, role: str = "user",
               metadata: Mapping[str, Any] | None = None) -> str:
        """A token for ``username`` (``role`` ``guest`` lives ``GUEST_TOKEN_EXPIRE_HOURS``,
        others ``TOKEN_EXPIRE_HOURS``), with LightRAG's claims ``sub``, ``exp``, ``role`` and
        ``metadata``."""
        hours = self.settings.guest_expire_hours if role == "guest" else self.settings.expire_hours
        payload = {"sub": username, "exp": int(self._clock() + hours * 3600), "role": role,
                   "metadata": dict(metadata or {})}
        header = {"alg": self.settings.algorithm, "typ": "JWT"}
        signing_input = ".".join(
            _b64(json.dumps(part, separators=(",", ":")).encode("utf-8"))
            for part in (header, payload)).encode("ascii")
        return signing_input.decode("ascii") + "." + _b64(self._sign(signing_input))

    def validate(self, token: str) -> dict[str, Any]:
        """The claims of a valid ``token`` (``username``, ``role``, ``metadata``, ``exp`` as
        epoch seconds); raises :class:`TokenError` (``Invalid token``) otherwise."""
        if len(token) > MAX_TOKEN_BYTES or token.count(".") != 2:
            raise TokenError("Invalid token")
        head, body, signature = token.split(".")
        try:
            header = json.loads(_unb64(head))
            given = _unb64(signature)
            payload = json.loads(_unb64(body))
        except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
            raise TokenError("Invalid token") from None
        if not isinstance(header, dict) or header.get("alg") != self.settings.algorithm:
            raise TokenError("Invalid token")
        if not hmac.compare_digest(given, self._sign(f"{head}.{body}".encode("ascii"))):
            raise TokenError("Invalid token")
        if not isinstance(payload, dict):
            raise TokenError("Invalid token")
        sub, exp = payload.get("sub"), payload.get("exp")
        if not isinstance(sub, str) or not sub or len(sub) > MAX_SUBJECT_LENGTH:
            raise TokenError("Invalid token")
        if isinstance(exp, bool) or not isinstance(exp, int) or exp <= self._clock():
            raise TokenError("Invalid token")
        role = payload.get("role", "user")
        metadata = payload.get("metadata", {})
        return {"username": sub, "role": role if isinstance(role, str) else "user",
                "metadata": metadata if isinstance(metadata, dict) else {}, "exp": exp}

    def renewal(self, path: str, claims: Mapping[str, Any]) -> str | None:
        """A fresh token for an authenticated request whose token is past
        ``TOKEN_RENEW_THRESHOLD`` of its life (LightRAG's ``X-New-Token``), at most one per
        user a minute; ``None`` otherwise."""
        s = self.settings
        if not s.auto_renew or any(path == p or path.startswith(p + "/")
                                   for p in RENEWAL_SKIP_PATHS):
            return None
        role = str(claims.get("role", "user"))
        total = (s.guest_expire_hours if role == "guest" else s.expire_hours) * 3600
        now = self._clock()
        if claims["exp"] - now >= total * s.renew_threshold:
            return None
        user = str(claims["username"])
        if now - self._renewed.get(user, -math.inf) < RENEWAL_MIN_INTERVAL:
            return None
        self._renewed.pop(user, None)
        self._renewed[user] = now
        while len(self._renewed) > 10_000:
            self._renewed.popitem(last=False)
        return self.create(user, role, claims.get("metadata") or {})


def verify_password(settings: AuthSettings, username: str, password: str) -> bool:
    """Whether ``password`` is ``username``'s (constant-time; when any account is bcrypt,
    every attempt costs one bcrypt check, so timing tells nothing about the account)."""
    stored = settings.accounts.get(username)
    uses_bcrypt = any(p.startswith(BCRYPT_PREFIX) for p in settings.accounts.values())
    if stored is not None and stored.startswith(BCRYPT_PREFIX):
        return _bcrypt_check(password, stored[len(BCRYPT_PREFIX):])
    if uses_bcrypt:  # unknown user or plain account: the same cost as a bcrypt account
        _bcrypt_check(password, _DUMMY_BCRYPT)
    reference = stored if stored is not None else "\0" * max(8, len(password))
    same = hmac.compare_digest(reference.encode("utf-8"), password.encode("utf-8"))
    return stored is not None and same


#: A bcrypt hash of a throwaway value (LightRAG's own dummy): equalises login timing.
_DUMMY_BCRYPT = "$2b$12$ilI0sY2jGfy4h0AVtn6WuutU6BFwzZq5MVvrQYY9fbyQ59NI2NBKa"


def _bcrypt_check(password: str, hashed: str) -> bool:
    import bcrypt

    if not hashed:
        return False
    try:
        return bool(bcrypt.checkpw(password.encode("utf-8"), hashed.encode("utf-8")))
    except ValueError:
        return False


class LoginLimiter:
    """LightRAG's brute-force bound on ``/login``: after ``max_failed`` wrong passwords for
    one client address and user name within ``window`` seconds, 429 until the oldest
    failure leaves the window. In memory, per process, at most 10,000 keys."""

    def __init__(self, max_failed: int, window: float, *, clock: Any = time.monotonic) -> None:
        self.max_failed = max_failed
        self.window = window
        self._clock = clock
        self._failures: OrderedDict[str, list[float]] = OrderedDict()

    def _live(self, key: str) -> list[float]:
        now = self._clock()
        kept = [t for t in self._failures.get(key, []) if now - t < self.window]
        if kept:
            self._failures[key] = kept
        else:
            self._failures.pop(key, None)
        return kept

    def retry_after(self, key: str) -> float | None:
        """Seconds to wait before ``key`` may try again, or ``None``."""
        failures = self._live(key)
        if len(failures) < self.max_failed:
            return None
        return max(0.0, self.window - (self._clock() - failures[0]))

    def failed(self, key: str) -> None:
        """Record a wrong password for ``key``."""
        self._failures.setdefault(key, []).append(self._clock())
        self._failures.move_to_end(key)
        while len(self._failures) > 10_000:
            self._failures.popitem(last=False)

    def reset(self, key: str) -> None:
        """Forget ``key``'s failures (a right password)."""
        self._failures.pop(key, None)


def bearer_token(headers: Any) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (raw ASGI header pairs),
    else ``None``."""
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


def decide(
    *,
    token: str | None,
    key_given: bytes | None,
    api_key: bytes | None,
    tokens: Tokens,
) -> tuple[int, str] | tuple[None, dict[str, Any] | None]:
    """LightRAG's ``combined_auth`` for one request (its whitelist aside).

    Returns ``(status, detail)`` for a refusal, else ``(None, claims)`` where ``claims`` are
    the token's when it authenticated the request (for the renewal), else ``None``.

    * a token that does not validate: 401 ``Invalid token``, whatever else is sent;
    * with accounts: a valid non-guest token authenticates; a guest token is 401
      ``Invalid token. Please login again.``;
    * guest mode with no key: everything is let in;
    * the right ``X-API-Key`` authenticates (a valid guest token alone never does when a key
      is set: anyone can get one);
    * otherwise: 401 ``No credentials provided. Please login.`` (accounts, no token),
      403 ``Invalid API Key`` (a wrong key), 403 ``API Key required``.
    """
    accounts = tokens.settings.configured
    claims: dict[str, Any] | None = None
    if token is not None:
        try:
            claims = tokens.validate(token)
        except TokenError as exc:
            return 401, str(exc)
        if accounts and claims["role"] != "guest":
            return None, claims
        if accounts or (claims["role"] != "guest"):
            return 401, "Invalid token. Please login again."
        if not api_key:
            return None, claims
    if not accounts and not api_key:
        return None, None
    if api_key and key_given is not None and hmac.compare_digest(key_given, api_key):
        return None, claims
    if accounts and token is None:
        return 401, "No credentials provided. Please login."
    if key_given:
        return 403, "Invalid API Key"
    if api_key:
        return 403, "API Key required"
    return 403, "API Key required or login authentication required."


def accepted(*, token: str | None, key_given: bytes | None, api_key: bytes | None,
             tokens: Tokens) -> bool:
    """Whether the credentials authenticate, as LightRAG's ``credentials_accepted`` (what
    ``/health`` asks before showing the configuration; never refuses): nothing protected,
    or the right key, or an account's valid token. Unlike :func:`decide`, a bad token
    beside the right key does not count against it."""
    accounts = tokens.settings.configured
    if not accounts and not api_key:
        return True
    if api_key and key_given and hmac.compare_digest(key_given, api_key):
        return True
    if token is not None and accounts:
        try:
            return tokens.validate(token)["role"] != "guest"
        except TokenError:
            return False
    return False
