"""LLM port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class LLM(Protocol):
    """A chat model.

    ``history`` messages are ``{"role": ..., "content": ...}`` mappings inserted between the
    system prompt and the user prompt.
    """

    @property
    def model_name(self) -> str:
        """The model's name (part of the cache identity)."""
        ...

    async def complete(
        self,
        prompt: str,
        *,
        system_prompt: str | None = None,
        history: Sequence[Mapping[str, Any]] = (),
        json_mode: bool = False,
    ) -> str:
        """The whole answer to ``prompt``. ``json_mode`` asks for a JSON object response."""
        ...

    def stream(
        self,
        prompt: str,
        *,
        system_prompt: str | None = None,
        history: Sequence[Mapping[str, Any]] = (),
    ) -> AsyncIterator[str]:
        """The answer as it is generated, piece by piece."""
        ...
