"""Reading adapter settings from an environment mapping (LightRAG's variables), shared by the
HTTP model adapters. Imports nothing of hexrag but the domain's errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hexrag.domain.errors import ConfigurationError

__all__ = ["env_bool", "env_number", "env_str"]


def env_str(env: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` set to a non-blank value."""
    for name in names:
        value = env.get(name)
        if value is not None and value.strip():
            return value.strip()
    return None


def env_number(env: Mapping[str, str], name: str, kind: type[Any], default: Any) -> Any:
    """``env[name]`` parsed as ``kind``; ``default`` when unset; ConfigurationError when bad."""
    raw = env_str(env, name)
    if raw is None:
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name}={raw!r} is not a valid {kind.__name__}") from exc


def env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    """LightRAG-style boolean: true/1/yes/t/on."""
    raw = env_str(env, name)
    if raw is None:
        return default
    return raw.lower() in ("true", "1", "yes", "t", "on")
