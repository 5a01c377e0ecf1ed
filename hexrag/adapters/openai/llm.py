"""``OpenAILLM``: the LLM port over any OpenAI-compatible chat-completions server."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import openai

from hexrag.adapters.openai._common import (
    BACKEND,
    ClientVars,
    MalformedResponse,
    OwnedClient,
    RetryPolicy,
    check_positive,
    client_from_env,
    driver_errors_mapped,
    env_number,
    env_str,
    logger,
    retrying,
)
from hexrag.adapters.openai.convert import (
    StreamAssembler,
    build_messages,
    completion_text,
    delta_parts,
)
from hexrag.domain.errors import ConfigurationError

__all__ = ["OpenAILLM"]

_JSON_OBJECT = {"type": "json_object"}
#: where ``from_env`` reads the client's key and base URL
_CLIENT_VARS = ClientVars(
    api_key=("OPENAI_API_KEY", "LLM_BINDING_API_KEY"),
    base_url=("OPENAI_BASE_URL", "LLM_BINDING_HOST"),
    api_key_hint="OPENAI_API_KEY",
)


def _rejects_response_format(exc: openai.BadRequestError) -> bool:
    text = f"{exc} {getattr(exc, 'body', '')}".lower()
    return "response_format" in text or "json_object" in text or "json mode" in text


class OpenAILLM(OwnedClient):
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``client`` is a ready ``openai.AsyncOpenAI`` (constructing the adapter opens no
    connection); the adapter uses a copy of it with the SDK's own retries off and ``timeout``
    seconds per request, and retries by itself: 429 (except a spent quota), 408/409, 5xx,
    connection errors, timeouts and malformed bodies, at most ``max_retries`` times, waiting
    ``retry_backoff * 2**k`` seconds or the server's ``Retry-After``, never more than
    ``max_retry_wait``. At most ``max_concurrency`` requests (streams included, until they
    end) run at once.

    ``json_mode`` sends ``response_format={"type": "json_object"}``; a server that rejects it
    (HTTP 400 naming it) is asked again without it, once, and never asked with it again.
    Answers come back verbatim (``<think>`` blocks and code fences included, as LightRAG
    passes them on); outside JSON mode a reasoning-only answer (DeepSeek
    ``reasoning_content`` with empty content) is returned as ``<think>…</think>``.

    Errors: timeouts -> ``BackendTimeout``; unreachable server -> ``BackendUnavailable``
    (naming ``OPENAI_BASE_URL``); 401/403 -> ``ConfigurationError`` (naming
    ``OPENAI_API_KEY``); 404 -> ``ConfigurationError`` (model or base URL); 429 after the
    retries -> ``BackendUnavailable``; anything else -> ``BackendError``. All carry
    ``backend="openai"``.
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        *,
        model: str,
        max_concurrency: int = 8,
        timeout: float = 60,
        max_retries: int = 3,
        temperature: float | None = None,
        retry_backoff: float = 0.5,
        max_retry_wait: float = 20.0,
        extra_body: Mapping[str, Any] | None = None,
        owns_client: bool = False,
        base_url_var: str = "OPENAI_BASE_URL",
        api_key_var: str = "OPENAI_API_KEY",
        model_var: str = "LLM_MODEL",
    ) -> None:
        if not model or not model.strip():
            raise ConfigurationError(f"OpenAILLM needs a model name: set {model_var}")
        check_positive("max_concurrency", max_concurrency)
        check_positive("timeout", timeout, minimum=1e-6)
        check_positive("max_retries", max_retries, minimum=0)
        check_positive("retry_backoff", retry_backoff, minimum=0)
        check_positive("max_retry_wait", max_retry_wait, minimum=0)
        self._use_client(
            client, model=model, timeout=timeout, max_concurrency=max_concurrency,
            policy=RetryPolicy(max_retries, retry_backoff, max_retry_wait),
            owns_client=owns_client, env_vars=(base_url_var, api_key_var, model_var),
        )
        self._temperature = temperature
        self._extra_body = dict(extra_body) if extra_body else None
        self._json_mode_supported = True
        self.max_concurrency = max_concurrency

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any) -> OpenAILLM:
        """Build from LightRAG-style environment variables (``env`` defaults to ``os.environ``).

        ``OPENAI_API_KEY`` (else ``LLM_BINDING_API_KEY``; optional for a self-hosted server),
        ``OPENAI_BASE_URL`` (else ``LLM_BINDING_HOST``; default OpenAI), ``HEXRAG_LLM_MODEL``
        (else ``LLM_MODEL``; default ``gpt-4o-mini``), ``LLM_TIMEOUT`` (seconds, default 60),
        ``MAX_ASYNC`` (concurrency, default 8), ``OPENAI_LLM_TEMPERATURE``,
        ``HEXRAG_LLM_MAX_RETRIES`` (default 3). Keyword ``options`` override the constructor's.
        """
        env = os.environ if env is None else env
        timeout = float(env_number(env, "LLM_TIMEOUT", float, 60.0))
        settings: dict[str, Any] = {
            "model": env_str(env, "HEXRAG_LLM_MODEL", "LLM_MODEL") or "gpt-4o-mini",
            "timeout": timeout,
            "max_concurrency": env_number(env, "MAX_ASYNC", int, 8),
            "max_retries": env_number(env, "HEXRAG_LLM_MAX_RETRIES", int, 3),
            "temperature": env_number(env, "OPENAI_LLM_TEMPERATURE", float, None),
        }
        settings.update(options)
        client = client_from_env(env, float(settings["timeout"]), _CLIENT_VARS)
        return cls(client, owns_client=True, **settings)

    @property
    def json_mode_supported(self) -> bool:
        """False once the server has rejected ``response_format``."""
        return self._json_mode_supported

    def _params(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self._model, "messages": messages}
        if self._temperature is not None:
            params["temperature"] = self._temperature
        if self._extra_body:
            params["extra_body"] = self._extra_body
        return params

    async def complete(
        self,
        prompt: str,
        *,
        system_prompt: str | None = None,
        history: Sequence[Mapping[str, Any]] = (),
        json_mode: bool = False,
    ) -> str:
        """The whole answer to ``prompt``. ``json_mode`` asks for a JSON object response."""
        params = self._params(build_messages(prompt, system_prompt, history))
        what = "JSON chat completion" if json_mode else "chat completion"

        async def attempt(with_format: bool) -> str:
            call = dict(params)
            if with_format:
                call["response_format"] = _JSON_OBJECT
            try:
                response = await self._client.chat.completions.create(**call)
            except json.JSONDecodeError as exc:
                raise MalformedResponse(f"body is not JSON ({exc})") from exc
            return completion_text(response, cot=not json_mode)

        async with self._semaphore:
            use_format = json_mode and self._json_mode_supported
            with driver_errors_mapped(self._endpoint, what):
                try:
                    return await retrying(
                        lambda: attempt(use_format), policy=self._policy, what=what
                    )
                except openai.BadRequestError as exc:
                    if not (use_format and _rejects_response_format(exc)):
                        raise
                    self._json_mode_supported = False
                    logger.warning(
                        "openai: %s rejected response_format (%s); asking without it from now on",
                        self._endpoint.base_url, exc,
                    )
                    return await retrying(lambda: attempt(False), policy=self._policy, what=what)

    async def stream(
        self,
        prompt: str,
        *,
        system_prompt: str | None = None,
        history: Sequence[Mapping[str, Any]] = (),
    ) -> AsyncIterator[str]:
        """The answer as it is generated, piece by piece (empty pieces are skipped).

        Failures before the first piece are retried like :meth:`complete`; a failure
        mid-stream is raised (mapped) without retry, since pieces were already delivered.
        The concurrency slot is held until the stream ends or is closed.
        """
        params = self._params(build_messages(prompt, system_prompt, history))
        params["stream"] = True
        what = "streamed chat completion"

        async def open_stream() -> Any:
            try:
                return await self._client.chat.completions.create(**params)
            except json.JSONDecodeError as exc:
                raise MalformedResponse(f"body is not JSON ({exc})") from exc

        async with self._semaphore:
            with driver_errors_mapped(self._endpoint, what):
                response = await retrying(open_stream, policy=self._policy, what=what)
            assembler = StreamAssembler(cot=True)
            try:
                with driver_errors_mapped(self._endpoint, what):
                    async for chunk in response:
                        for piece in assembler.feed(*delta_parts(chunk)):
                            yield piece
                for piece in assembler.finish():
                    yield piece
            finally:
                close = getattr(response, "close", None)
                if close is not None:
                    try:
                        await close()
                    except Exception:  # best effort: the connection may already be gone
                        logger.debug("openai: closing the stream failed", exc_info=True)

    def __repr__(self) -> str:
        return (
            f"OpenAILLM(model={self._model!r}, base_url={self._endpoint.base_url!r}, "
            f"backend={BACKEND!r})"
        )
